"""Section 2: Debian's ``redis-benchmark`` against both servers, and the runner
the latency section reuses for its custom commands.

Why redis-benchmark: it is the tool people compare Valkey-compatible servers
with, it is C (so at pipeline 1 it does not limit either server), and its
``--csv`` output carries the client-side round-trip latency percentiles the
growth section needs as well.

The keyspace each test sees is made the same on both servers before every
run (``prepare``), so a rising set size or an emptied set cannot favour the
server that happens to run second:

- SET, GET, INCR, HSET use ``-r 100000`` random keys/fields, a bounded keyspace.
- ZADD starts from an empty ``myzset`` (it adds ``element:__rand_int__`` with
  random scores under ``-r``).
- ZPOPMIN starts from a ``myzset`` pre-filled with more members than the run
  pops, so it never pops an empty set.
- ZRANGE is ``ZRANGE bench:z 0 9 WITHSCORES`` over a set of 100 members.
- LPUSH and RPUSH start from an empty ``mylist``; LPOP and RPOP from a
  ``mylist`` of requests + 1,000 elements, so they never pop an empty list.
- LRANGE is redis-benchmark's ``lrange_100`` request, ``LRANGE mylist 0 99``,
  over a ``mylist`` filled first with as many ``xxx`` elements as the run
  has requests, as redis-benchmark's own LPUSH run before it would. It is
  sent in the arbitrary-command form so that fill (done here, pipelined)
  stays out of the measured window.
- SADD starts from an empty ``myset`` (it adds ``element:__rand_int__``
  under ``-r``); SPOP from a ``myset`` of requests + 1,000 members.
- SMEMBERS is ``SMEMBERS bench:s`` over a set of 100 members (listpack on
  both servers).
- XADD (``XADD s * field value``) and XADD_MAXLEN (``XADD s MAXLEN ~ 1000 *
  field value``) start from no ``s``; XRANGE (``XRANGE s - + COUNT 10``) reads
  a stream ``s`` filled first with ``XRANGE_ENTRIES`` entries of the same
  shape.
- SETBIT (``SETBIT bench:bits 99999 1``) and BITCOUNT (``BITCOUNT
  bench:bits``) work on a ``bench:bits`` of ``BITCOUNT_BYTES`` bytes (100,000
  bits), set first. SETBIT's offset is fixed because redis-benchmark writes
  ``__rand_int__`` zero-padded to 12 digits, which is no valid bit offset.
- PFADD (``PFADD bench:hll element:__rand_int__`` under ``-r``) starts from
  no ``bench:hll``; PFCOUNT (``PFCOUNT bench:hll:full``) counts a key filled first
  with ``PFCOUNT_ELEMENTS`` elements (dense on both servers).
- GEOADD (``GEOADD bench:geo 13.361389 38.115556 member:__rand_int__``
  under ``-r``) starts from no ``bench:geo``.
- PUBLISH (``PUBLISH bench:ch message``) goes to a channel nobody listens
  to: the command's own path (channel and pattern lookup, the reply) with no
  delivery, which the pub/sub section measures with subscribers reading.
"""

from __future__ import annotations

import csv
import io
import resource
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .cpu import Window, generator_busy
from .servers import LOAD_CORE, Server, pinned, spawn

KEYSPACE = 100_000  # -r for the tests that take random keys
ZRANGE_MEMBERS = 100
SMEMBERS_MEMBERS = 100
XRANGE_ENTRIES = 1000
BITCOUNT_BYTES = KEYSPACE // 8
PFCOUNT_ELEMENTS = KEYSPACE


def _fill_zset(server: Server, key: str, n: int) -> None:
    """DEL key, then n members ``m0..`` with scores 0..n-1, 1000 per ZADD, two
    ZADDs (about 40 KB) in flight: every write stays well under 64 KB, a size
    any server must take in one read."""
    conn = server.conn
    server.execute("DEL", key)
    step = 1000
    pending = 0
    for lo in range(0, n, step):
        parts: list[bytes | str | int] = ["ZADD", key]
        for i in range(lo, min(n, lo + step)):
            parts += [i, f"m{i}"]
        conn.send(_encode(parts))
        pending += 1
        if pending == 2:
            _drain(conn, pending)
            pending = 0
    _drain(conn, pending)


def _fill(server: Server, verb: str, key: str, items: list[str]) -> None:
    """DEL key, then ``verb key item...`` 1000 items a command, two in
    flight, as ``_fill_zset`` does."""
    conn = server.conn
    server.execute("DEL", key)
    pending = 0
    for lo in range(0, len(items), 1000):
        conn.send(_encode([verb, key, *items[lo:lo + 1000]]))
        pending += 1
        if pending == 2:
            _drain(conn, pending)
            pending = 0
    _drain(conn, pending)


def _encode(parts: list[bytes | str | int]) -> bytes:
    out = [b"*%d\r\n" % len(parts)]
    for p in parts:
        b = p if isinstance(p, bytes) else str(p).encode()
        out.append(b"$%d\r\n%s\r\n" % (len(b), b))
    return b"".join(out)


def _drain(conn: Any, n: int) -> None:
    from trafikey_server.connector import ReplyError

    for _ in range(n):
        r = conn.read()
        if isinstance(r, ReplyError):
            raise r


def _prep_none(server: Server, requests: int) -> None:
    return None


def _prep_zadd(server: Server, requests: int) -> None:
    server.execute("DEL", "myzset")


def _prep_zpopmin(server: Server, requests: int) -> None:
    _fill_zset(server, "myzset", requests + 1000)


def _prep_zrange(server: Server, requests: int) -> None:
    if server.execute("ZCARD", "bench:z") != ZRANGE_MEMBERS:
        _fill_zset(server, "bench:z", ZRANGE_MEMBERS)


def _prep_del_list(server: Server, requests: int) -> None:
    server.execute("DEL", "mylist")


def _prep_pop_list(server: Server, requests: int) -> None:
    _fill(server, "RPUSH", "mylist", [f"e{i}" for i in range(requests + 1000)])


def _prep_lrange(server: Server, requests: int) -> None:
    _fill(server, "LPUSH", "mylist", ["xxx"] * requests)


def _prep_del_set(server: Server, requests: int) -> None:
    server.execute("DEL", "myset")


def _prep_spop(server: Server, requests: int) -> None:
    _fill(server, "SADD", "myset", [f"element:{i}" for i in range(requests + 1000)])


def _prep_smembers(server: Server, requests: int) -> None:
    if server.execute("SCARD", "bench:s") != SMEMBERS_MEMBERS:
        _fill(server, "SADD", "bench:s", [f"m{i}" for i in range(SMEMBERS_MEMBERS)])


def _prep_del_stream(server: Server, requests: int) -> None:
    server.execute("DEL", "s")


def _prep_xrange(server: Server, requests: int) -> None:
    """DEL s, then ``XRANGE_ENTRIES`` entries ``field value`` with ``*`` IDs,
    pipelined 1000 a batch."""
    conn = server.conn
    server.execute("DEL", "s")
    xadd = _encode(["XADD", "s", "*", "field", "value"])
    for lo in range(0, XRANGE_ENTRIES, 1000):
        n = min(1000, XRANGE_ENTRIES - lo)
        conn.send(xadd * n)
        _drain(conn, n)


def _prep_del(key: str) -> Callable[[Server, int], None]:
    def prep(server: Server, requests: int) -> None:
        server.execute("DEL", key)

    return prep


def _prep_bits(server: Server, requests: int) -> None:
    server.execute("SET", "bench:bits", b"\x5a" * BITCOUNT_BYTES)


def _prep_pfcount(server: Server, requests: int) -> None:
    if server.execute("PFCOUNT", "bench:hll:full") == 0:
        _fill(server, "PFADD", "bench:hll:full", [f"element:{i}" for i in range(PFCOUNT_ELEMENTS)])


@dataclass(frozen=True)
class Test:
    name: str
    args: list[str]  # redis-benchmark arguments that pick the test
    prepare: Callable[[Server, int], None]


TESTS: list[Test] = [
    Test("PING", ["-t", "ping_mbulk"], _prep_none),
    Test("SET", ["-r", str(KEYSPACE), "-t", "set"], _prep_none),
    Test("GET", ["-r", str(KEYSPACE), "-t", "get"], _prep_none),
    Test("INCR", ["-r", str(KEYSPACE), "-t", "incr"], _prep_none),
    Test("HSET", ["-r", str(KEYSPACE), "-t", "hset"], _prep_none),
    Test("ZADD", ["-r", str(KEYSPACE), "-t", "zadd"], _prep_zadd),
    Test("ZPOPMIN", ["-t", "zpopmin"], _prep_zpopmin),
    Test("ZRANGE", ["ZRANGE", "bench:z", "0", "9", "WITHSCORES"], _prep_zrange),
    Test("LPUSH", ["-t", "lpush"], _prep_del_list),
    Test("RPUSH", ["-t", "rpush"], _prep_del_list),
    Test("LPOP", ["-t", "lpop"], _prep_pop_list),
    Test("RPOP", ["-t", "rpop"], _prep_pop_list),
    Test("LRANGE_100", ["LRANGE", "mylist", "0", "99"], _prep_lrange),
    Test("SADD", ["-r", str(KEYSPACE), "-t", "sadd"], _prep_del_set),
    Test("SPOP", ["-t", "spop"], _prep_spop),
    Test("SMEMBERS", ["SMEMBERS", "bench:s"], _prep_smembers),
    Test("XADD", ["XADD", "s", "*", "field", "value"], _prep_del_stream),
    Test("XADD_MAXLEN", ["XADD", "s", "MAXLEN", "~", "1000", "*", "field", "value"], _prep_del_stream),
    Test("XRANGE", ["XRANGE", "s", "-", "+", "COUNT", "10"], _prep_xrange),
    Test("SETBIT", ["SETBIT", "bench:bits", str(KEYSPACE - 1), "1"], _prep_bits),
    Test("BITCOUNT", ["BITCOUNT", "bench:bits"], _prep_bits),
    Test("PFADD", ["-r", str(KEYSPACE), "PFADD", "bench:hll", "element:__rand_int__"], _prep_del("bench:hll")),
    Test("PFCOUNT", ["PFCOUNT", "bench:hll:full"], _prep_pfcount),
    Test("GEOADD", ["-r", str(KEYSPACE), "GEOADD", "bench:geo", "13.361389", "38.115556", "member:__rand_int__"],
         _prep_del("bench:geo")),
    Test("PUBLISH", ["PUBLISH", "bench:ch", "message"], _prep_none),
]


class BenchmarkError(RuntimeError):
    pass


def redis_benchmark(server: Server, args: list[str], *, clients: int, requests: int, pipeline: int = 1,
                    timeout: float = 900.0) -> dict[str, float]:
    """One redis-benchmark run pinned to the load core; returns rps, latency
    percentiles (ms, as the client measured them), the server's CPU µs per
    request, and how busy the generator and its core were."""
    argv = pinned(LOAD_CORE, ["redis-benchmark", "-h", "127.0.0.1", "-p", str(server.port), "-c", str(clients),
                              "-n", str(requests), "-P", str(pipeline), "--csv", *args])
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    win = Window({"server": server.pid}).start()
    p = spawn(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        out, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        p.kill()
        p.communicate()
        raise BenchmarkError(f"redis-benchmark timed out: {' '.join(argv)}") from None
    win.stop()
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    gen_cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    rows = list(csv.DictReader(io.StringIO(out)))
    if p.returncode != 0 or not rows or "Error" in err or "Error" in out:
        raise BenchmarkError(f"redis-benchmark failed ({p.returncode}) on {server.label}: "
                             f"{' '.join(argv)}\n{out[-500:]}\n{err[-1000:]}")
    row = rows[-1]
    rps = float(row["rps"])
    return {
        "rps": rps,
        "cpu_us": win.cpu["server"] * 1e6 / requests,
        "p50_ms": float(row["p50_latency_ms"]),
        "p99_ms": float(row["p99_latency_ms"]),
        "avg_ms": float(row["avg_latency_ms"]),
        "gen_cpu_pct": 100 * gen_cpu / win.wall if win.wall else 0.0,
        "gen_busy_pct": 100 * generator_busy(win, gen_cpu),
        "server_core_busy_pct": 100 * win.busy.get(0, 0.0),
        "wall_s": win.wall,
        "requests": requests,
    }


def run_commands(servers: list[Server], *, rounds: int, requests: int, p16_requests: int, clients: int,
                 record: Callable[[str, tuple[str, ...], dict[str, float]], None],
                 log: Callable[[str], None], only: set[str] | None = None) -> None:
    """Every test (or those named in ``only``) at pipeline 1 and 16, the
    servers alternating A B A B, ``rounds`` times."""
    for r in range(rounds):
        for test in TESTS:
            if only is not None and test.name not in only:
                continue
            for pipeline in (1, 16):
                n = requests if pipeline == 1 else p16_requests
                for server in servers:
                    test.prepare(server, n)
                    res = redis_benchmark(server, test.args, clients=clients, requests=n, pipeline=pipeline)
                    record("commands", (test.name, f"P{pipeline}", server.label), res)
                    log(f"  round {r + 1} {test.name:10} P{pipeline:<2} {server.label:9} "
                        f"{res['rps']:>12,.0f} rps {res['cpu_us']:7.2f} µs/req  gen core {res['gen_busy_pct']:.0f}%")

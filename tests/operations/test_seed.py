"""Reproducible randomness: ``--seed N`` and ``CONFIG SET seed``.

Every server here is a real process, and the two given the same seed run
with different PYTHONHASHSEED values forced in their environments: a draw
that followed Python's per-process string hash (a ``set``'s order) would
differ between them. The workload draws with every random command, in both
signs of count and with values or scores, from sets of each encoding
(including sets built by SUNIONSTORE/SINTERSTORE/SDIFFSTORE and the SPOP
path that rebuilds the set), hashes, sorted sets, RANDOMKEY, Lua's
math.random and LOLWUT's drawn constant. The replies' shapes, sizes and
errors are compared with Valkey's; which members come out cannot be.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
from helpers.resp_wire import Wire, reply_end
from helpers.servers import ROOT, Proc, start_valkey

from trafikey_server.util.procs import free_port


def start(*extra: str, hashseed: str, conf: str | None = None) -> Proc:
    """A trafikey-server whose Python hashes strings with ``hashseed``."""
    port = free_port()
    tmp = tempfile.mkdtemp(prefix="trafikey-seed-")
    first = [conf] if conf else []
    argv = [sys.executable, "-m", "trafikey_server", *first, "--port", str(port), "--save", "", "--dir", tmp,
            *extra]
    env = dict(os.environ, PYTHONHASHSEED=hashseed)
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    return Proc(argv, port, cwd=str(ROOT), env=env)


def pairs(n: int, key: str, value: str) -> list[str]:
    return [x for i in range(n) for x in (key % i, value % i)]


FILL: list[tuple] = [
    ("SADD", "big", *[f"m{i}" for i in range(300)]),  # hashtable
    ("SADD", "ints", *range(100)),  # intset
    ("SADD", "small", *"abcdefghij"),  # listpack
    ("SUNIONSTORE", "u", "big", "small"),
    ("SINTERSTORE", "n", "u", "big"),
    ("SDIFFSTORE", "d", "u", "small"),
    ("HSET", "hbig", *pairs(200, "f%d", "v%d")),
    ("HSET", "hsmall", *pairs(10, "f%d", "v%d")),
    ("ZADD", "zbig", *[x for i in range(200) for x in (i % 7, f"z{i}")]),
    ("ZADD", "zsmall", *[x for i in range(10) for x in (i, f"z{i}")]),
    ("MSET", *pairs(50, "k%d", "%d")),
]

DRAWS: list[tuple] = [
    ("SPOP", "big"), ("SPOP", "big", 3), ("SPOP", "ints"), ("SPOP", "ints", 4), ("SPOP", "small", 2),
    ("SRANDMEMBER", "big"), ("SRANDMEMBER", "big", 5), ("SRANDMEMBER", "big", -5),
    ("SRANDMEMBER", "ints", 3), ("SRANDMEMBER", "ints", -7), ("SRANDMEMBER", "small", 4),
    ("SRANDMEMBER", "small", -4), ("SRANDMEMBER", "n", 6), ("SRANDMEMBER", "d", -6),
    ("SPOP", "u", 260),  # few are left: Valkey's path that rebuilds the set
    ("SRANDMEMBER", "u", 20), ("SPOP", "u"), ("SPOP", "d", 10),
    ("HRANDFIELD", "hbig"), ("HRANDFIELD", "hbig", 5), ("HRANDFIELD", "hbig", -5),
    ("HRANDFIELD", "hbig", 4, "WITHVALUES"), ("HRANDFIELD", "hbig", -4, "WITHVALUES"),
    ("HRANDFIELD", "hsmall", 3), ("HRANDFIELD", "hsmall", -3, "WITHVALUES"),
    ("ZRANDMEMBER", "zbig"), ("ZRANDMEMBER", "zbig", 5), ("ZRANDMEMBER", "zbig", -5),
    ("ZRANDMEMBER", "zbig", 4, "WITHSCORES"), ("ZRANDMEMBER", "zbig", -4, "WITHSCORES"),
    ("ZRANDMEMBER", "zsmall", 3), ("ZRANDMEMBER", "zsmall", -3, "WITHSCORES"),
    ("RANDOMKEY",), ("RANDOMKEY",), ("RANDOMKEY",), ("RANDOMKEY",),
    ("EVAL", "return {tostring(math.random()), math.random(1000), math.random(-5, 5)}", 0),
    ("EVAL", "local t = {} for i = 1, 8 do t[i] = math.random(100) end return t", 0),
    ("LOLWUT",),
    ("SMEMBERS", "big"), ("SMEMBERS", "u"), ("SMEMBERS", "d"),
]

# The same, answered in RESP3 (sets, maps and doubles).
DRAWS3: list[tuple] = [
    ("SPOP", "big", 3), ("SRANDMEMBER", "big", -3), ("HRANDFIELD", "hbig", 3, "WITHVALUES"),
    ("HRANDFIELD", "hbig", -3, "WITHVALUES"), ("ZRANDMEMBER", "zbig", 3, "WITHSCORES"),
    ("ZRANDMEMBER", "zbig", -3, "WITHSCORES"), ("RANDOMKEY",),
]


def workload(port: int) -> list[bytes]:
    """FLUSHALL, the keys, then every draw's reply (RESP2, then RESP3)."""
    w = Wire(port)
    w3 = Wire(port)
    try:
        assert w.call("FLUSHALL") == b"+OK\r\n"
        w.pipeline(FILL)
        out = w.pipeline(DRAWS)
        w3.call("HELLO", "3")
        out += [w3.call(*cmd) for cmd in DRAWS3]
        return out
    finally:
        w.close()
        w3.close()


def run_id(port: int) -> bytes:
    w = Wire(port)
    try:
        info = w.call("INFO", "server")
    finally:
        w.close()
    return next(line.split(b":")[1] for line in info.split(b"\r\n") if line.startswith(b"run_id:"))


def call(port: int, *args: object) -> bytes:
    w = Wire(port)
    try:
        return w.call(*args)  # type: ignore[arg-type]
    finally:
        w.close()


@dataclass
class Started:
    proc: Proc
    run_id: bytes
    draws: list[bytes]  # the workload's answers, the first thing the process ran


@pytest.fixture(scope="module")
def servers() -> Iterator[dict[str, Started]]:
    """Seed 42 under two string hash seeds, seed 43, and no seed."""
    plan = {"42/h1": (("--seed", "42"), "1"), "42/h2": (("--seed", "42"), "2"),
            "43/h1": (("--seed", "43"), "1"), "none/h1": ((), "1")}
    out: dict[str, Started] = {}
    try:
        for name, (args, hashseed) in plan.items():
            p = start(*args, hashseed=hashseed)
            out[name] = Started(p, b"", [])
            out[name].run_id = run_id(p.port)
            out[name].draws = workload(p.port)
        yield out
    finally:
        for s in out.values():
            s.proc.stop()


def test_same_seed_same_draws_in_any_process(servers: dict[str, Started]) -> None:
    a, b = servers["42/h1"], servers["42/h2"]
    for cmd, x, y in zip(DRAWS + DRAWS3, a.draws, b.draws, strict=True):
        assert x == y, cmd
    assert a.run_id == b.run_id and len(a.run_id) == 40
    int(a.run_id, 16)


def test_different_seeds_draw_differently(servers: dict[str, Started]) -> None:
    a, c = servers["42/h1"], servers["43/h1"]
    differ = [cmd for cmd, x, y in zip(DRAWS + DRAWS3, a.draws, c.draws, strict=True) if x != y]
    # Small draws may agree by chance; most must not, the Lua ones included.
    assert len(differ) > len(DRAWS + DRAWS3) // 2
    assert any(cmd[0] == "EVAL" for cmd in differ)
    assert a.run_id != c.run_id
    assert servers["none/h1"].run_id not in (a.run_id, c.run_id)


def test_config_get_seed(servers: dict[str, Started]) -> None:
    assert call(servers["42/h1"].proc.port, "CONFIG", "GET", "seed") == b"*2\r\n$4\r\nseed\r\n$2\r\n42\r\n"
    assert call(servers["none/h1"].proc.port, "CONFIG", "GET", "seed") == b"*2\r\n$4\r\nseed\r\n$0\r\n\r\n"


def test_config_set_seed_restarts_every_sequence(servers: dict[str, Started]) -> None:
    """CONFIG SET seed 42, on the server started with it or on one started
    without a seed, gives the draws of a fresh start with --seed 42, the
    Lua generator's included; the run_id stays."""
    for name in ("42/h1", "none/h1"):
        s = servers[name]
        assert call(s.proc.port, "CONFIG", "SET", "seed", "42") == b"+OK\r\n"
        assert workload(s.proc.port) == servers["42/h1"].draws, name
        assert run_id(s.proc.port) == s.run_id
        assert call(s.proc.port, "CONFIG", "GET", "seed") == b"*2\r\n$4\r\nseed\r\n$2\r\n42\r\n"


def test_config_set_seed_restarts_mid_way(servers: dict[str, Started]) -> None:
    """Re-seeding with the seed already set starts its sequence again, and
    the draws made before it leave nothing behind (the sets' draw pools, the
    Lua generator): a server that drew first answers as one whose keyspace
    got the same changes without drawing."""
    warm, cold = Wire(servers["42/h1"].proc.port), Wire(servers["42/h2"].proc.port)
    try:
        for w in (warm, cold):
            w.call("FLUSHALL")
            w.pipeline(FILL)
        warm.pipeline([("SRANDMEMBER", "big"), ("SRANDMEMBER", "u", -3), ("RANDOMKEY",),
                       ("EVAL", "return math.random(1000)", 0)])
        for key in ("big", "small", "big"):
            popped = warm.call("SPOP", key).split(b"\r\n")[1]
            assert cold.call("SREM", key, popped) == b":1\r\n"
        answers = []
        for w in (warm, cold):
            assert w.call("CONFIG", "SET", "seed", "7") == b"+OK\r\n"
            answers.append(w.pipeline(DRAWS))
    finally:
        warm.close()
        cold.close()
    assert answers[0] == answers[1]


def test_negative_seed_is_its_own(servers: dict[str, Started]) -> None:
    """-42 is not 42 (Python's own seeding would take the absolute value)."""
    p = servers["43/h1"].proc.port
    assert call(p, "CONFIG", "SET", "seed", "-42") == b"+OK\r\n"
    assert call(p, "CONFIG", "GET", "seed") == b"*2\r\n$4\r\nseed\r\n$3\r\n-42\r\n"
    assert workload(p) != servers["42/h1"].draws
    assert call(p, "CONFIG", "SET", "seed", "42") == b"+OK\r\n"
    assert workload(p) == servers["42/h1"].draws


def test_empty_seed_draws_from_the_os(servers: dict[str, Started]) -> None:
    """Back to no seed: the draws are no longer seed 42's (the chance that
    300-member SPOPs and SRANDMEMBERs all agree is nil)."""
    p = servers["42/h2"].proc.port
    assert call(p, "CONFIG", "SET", "seed", "") == b"+OK\r\n"
    assert call(p, "CONFIG", "GET", "seed") == b"*2\r\n$4\r\nseed\r\n$0\r\n\r\n"
    got = workload(p)
    spops = [i for i, cmd in enumerate(DRAWS) if cmd[:2] == ("SPOP", "big")]
    assert [got[i] for i in spops] != [servers["42/h1"].draws[i] for i in spops]


def test_refused_seed_changes_nothing(servers: dict[str, Started], valkey_server: Proc) -> None:
    """A seed that is not an integer is refused as Valkey refuses an integer
    option (hz stands in: seed is this server's own), and the draws go on
    as if nothing had been sent."""
    refusal = call(valkey_server.port, "CONFIG", "SET", "hz", "abc").replace(b"'hz'", b"'seed'")
    w = Wire(servers["43/h1"].proc.port)
    try:
        assert w.call("CONFIG", "SET", "seed", "42") == b"+OK\r\n"
        w.call("FLUSHALL")
        w.pipeline(FILL)
        half = len(DRAWS) // 2
        got = w.pipeline(DRAWS[:half])
        for bad in ("abc", "1.5", "99999999999999999999", " 1", "0x10"):
            assert w.call("CONFIG", "SET", "seed", bad) == refusal, bad
        assert w.call("CONFIG", "GET", "seed") == b"*2\r\n$4\r\nseed\r\n$2\r\n42\r\n"
        got += w.pipeline(DRAWS[half:])
    finally:
        w.close()
    assert got == servers["42/h1"].draws[:len(DRAWS)]


def test_seed_on_the_command_line_and_in_a_file(servers: dict[str, Started]) -> None:
    """A bad --seed stops start-up with the config error; ``seed 42`` in a
    config file seeds as ``--seed 42`` does."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    r = subprocess.run([sys.executable, "-m", "trafikey_server", "--port", str(free_port()), "--seed", "x"],
                       capture_output=True, text=True, env=env, timeout=30)
    assert r.returncode == 1
    assert "FATAL CONFIG" in r.stderr and ">>> 'seed \"x\"'\nargument couldn't be parsed into an integer" in r.stderr
    with tempfile.NamedTemporaryFile("w", suffix=".conf", delete=False) as f:
        f.write("seed 42\n")
    try:
        p = start(hashseed="3", conf=f.name)
        try:
            assert call(p.port, "CONFIG", "GET", "seed") == b"*2\r\n$4\r\nseed\r\n$2\r\n42\r\n"
            assert run_id(p.port) == servers["42/h1"].run_id
            assert workload(p.port) == servers["42/h1"].draws
        finally:
            p.stop()
    finally:
        os.unlink(f.name)


# -- beside Valkey ---------------------------------------------------------------------


def parse(buf: bytes, pos: int = 0) -> tuple[tuple, int]:
    """One RESP2/RESP3 reply as (type byte, payload or children)."""
    t = buf[pos:pos + 1]
    eol = buf.index(b"\r\n", pos)
    head = buf[pos + 1:eol]
    nxt = eol + 2
    if t in b"$=!":
        n = int(head)
        return ((t, None), nxt) if n < 0 else ((t, buf[nxt:nxt + n]), nxt + n + 2)
    if t in b"*~>%":
        n = int(head)
        items = []
        for _ in range(n * 2 if t == b"%" else n):
            item, nxt = parse(buf, nxt)
            items.append(item)
        return (t, items), nxt
    return (t, head), nxt


def shape(node: tuple) -> object:
    """The reply with each drawn string and score blanked out: types, sizes,
    nesting and errors are left to compare."""
    t, v = node
    if isinstance(v, list):
        return (t, [shape(x) for x in v])
    if t in b"$,":
        return (t, v is None)
    return (t, v)


def members(cmd: tuple, node: tuple) -> list[bytes]:
    """The members (fields) a reply names, without values or scores."""
    t, v = node
    if t not in (b"*", b"~"):
        return [v] if t == b"$" and v is not None else []
    if len(cmd) == 4:  # WITHVALUES / WITHSCORES: pairs in RESP3, flat in RESP2
        return [x[1][0][1] for x in v] if v and v[0][0] == b"*" else [x[1] for x in v[::2]]
    return [x[1] for x in v]


UNIVERSE = {str(a).encode() for cmd in FILL for a in cmd[1:]}

REFUSED: list[tuple] = [
    ("SPOP", "big", -1), ("SPOP", "big", "x"), ("SPOP", "big", 1, 2), ("SRANDMEMBER", "big", "x"),
    ("SRANDMEMBER", "big", "-9223372036854775808"), ("SRANDMEMBER", "hbig"), ("SPOP", "hbig", 2),
    ("HRANDFIELD", "hbig", "x"), ("HRANDFIELD", "hbig", 1, "WITHVALUE"), ("HRANDFIELD", "hbig", 1, "WITHVALUES", 1),
    ("HRANDFIELD", "hbig", "9223372036854775807", "WITHVALUES"), ("HRANDFIELD", "big"),
    ("ZRANDMEMBER", "zbig", "-9223372036854775808"), ("ZRANDMEMBER", "zbig", 2, "WITHVALUES"),
    ("ZRANDMEMBER", "zbig", "-9223372036854775807", "WITHSCORES"), ("ZRANDMEMBER", "big", 1),
    ("RANDOMKEY", "x"),
]


@pytest.mark.parametrize("proto", [2, 3])
def test_draws_keep_valkeys_replies(servers: dict[str, Started], valkey_server: Proc, proto: int) -> None:
    """Seeded, every draw has Valkey's reply type, size and nesting (RESP2
    and RESP3), names only what exists, distinct members for a positive
    count, and every refusal is Valkey's, with the keyspace unchanged."""
    t_port = servers["42/h1"].proc.port
    assert call(t_port, "CONFIG", "SET", "seed", "42") == b"+OK\r\n"
    v, t = Wire(valkey_server.port), Wire(t_port)
    try:
        for w in (v, t):
            assert w.call("FLUSHALL") == b"+OK\r\n"
            if proto == 3:
                w.call("HELLO", "3")
            w.pipeline(FILL)
        for cmd in REFUSED:
            assert t.call(*cmd) == v.call(*cmd), cmd
        sizes = [("SCARD", "big"), ("SCARD", "u"), ("HLEN", "hbig"), ("ZCARD", "zbig"), ("DBSIZE",)]
        assert t.pipeline(sizes) == v.pipeline(sizes)
        for cmd in DRAWS + DRAWS3:
            if cmd[0] in ("EVAL", "LOLWUT"):
                continue
            tv, vv = t.call(*cmd), v.call(*cmd)
            assert reply_end(tv) == len(tv)
            tree = parse(tv)[0]
            assert shape(tree) == shape(parse(vv)[0]), cmd
            names = members(cmd, tree)
            assert set(names) <= UNIVERSE, cmd
            if len(cmd) > 2 and int(cmd[2]) > 0:
                assert len(set(names)) == len(names), cmd
        assert t.pipeline(sizes) == v.pipeline(sizes)
    finally:
        v.close()
        t.close()


def test_lua_without_a_seed_starts_as_valkeys(servers: dict[str, Started]) -> None:
    """No seed: math.random starts from Valkey's fixed state, so the first
    scripts of a fresh server answer what a fresh Valkey answers."""
    v = start_valkey()
    try:
        evals = [(i, cmd) for i, cmd in enumerate(DRAWS) if cmd[0] == "EVAL"]
        for i, cmd in evals:
            assert servers["none/h1"].draws[i] == call(v.port, *cmd), cmd
    finally:
        v.stop()
    # A seed moves the start.
    assert [servers["42/h1"].draws[i] for i, _ in evals] != [servers["none/h1"].draws[i] for i, _ in evals]


# -- eviction ---------------------------------------------------------------------------

LIMIT = 1_100_000  # room for about 500 of the keys below over an empty server's figure


def evictions(port: int, policy: str, seed: str) -> tuple[bytes, bytes]:
    """Writes past maxmemory under ``policy`` (reads between them raise LFU
    counters, drawn too), on a frozen clock: the keys left, in order, and
    how many were evicted."""
    w = Wire(port)
    try:
        for cmd in (("CONFIG", "SET", "maxmemory", "0"), ("FLUSHALL",), ("CONFIG", "RESETSTAT"),
                    ("TRAFIKEY.CLOCK", "FREEZE", "1700000000000"),
                    ("CONFIG", "SET", "maxmemory-policy", policy), ("CONFIG", "SET", "seed", seed),
                    ("CONFIG", "SET", "maxmemory", str(LIMIT))):
            assert w.call(*cmd)[:1] in (b"+", b":"), cmd
        steps: list[tuple] = []
        for i in range(1500):
            steps.append(("SET", f"k{i}", "x" * 100))
            if i % 3 == 0:
                steps.append(("GET", f"k{i // 2}"))
        w.pipeline(steps)
        keys = w.call("KEYS", "*")
        stats = w.call("INFO", "stats")
        evicted = next(x for x in stats.split(b"\r\n") if x.startswith(b"evicted_keys:"))
        assert w.call("CONFIG", "SET", "maxmemory", "0") == b"+OK\r\n"
        return keys, evicted
    finally:
        w.close()


@pytest.mark.slow
@pytest.mark.parametrize("policy", ["allkeys-random", "allkeys-lfu"])
def test_eviction_picks_repeat(policy: str) -> None:
    """The same seed evicts the same keys in two processes hashing strings
    differently, a CONFIG SET seed on a server that evicted before repeats
    them too, and another seed evicts others."""
    procs = [start("--seed", "42", "--enable-clock-command", "yes", hashseed=h) for h in ("1", "2")]
    try:
        first = evictions(procs[0].port, policy, "42")
        assert 0 < int(first[1].split(b":")[1]) < 1500
        assert evictions(procs[1].port, policy, "42") == first
        other = evictions(procs[1].port, policy, "43")
        assert other[0] != first[0]
        assert evictions(procs[1].port, policy, "42") == first
    finally:
        for p in procs:
            p.stop()

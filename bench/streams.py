"""Stream consumer groups: a producer XADDs, N consumers of one group read and acknowledge.

What it measures: the cost per entry of the whole consumer-group cycle a
stream exists for -- ``XADD s * field value`` by a producer, then
``XREADGROUP GROUP g cK COUNT 10 STREAMS s >`` by each of N consumers of
one group, then ``XACK s g <the IDs read>`` -- the path every entry takes
through a stream used as a work queue.

How it drives the servers: the harness (pinned to the load core) holds one
producer connection and N consumer connections and runs them in lock step,
as the lifecycle workers do: the producer pipelines ``10 * N`` XADDs and
reads their IDs; every consumer sends its XREADGROUP, then each reply is
read (exactly 10 new entries each, since exactly ``10 * N`` were added);
every consumer sends the XACK of the IDs it read, then each reply is read
(it must acknowledge all of them). Every reply is checked, and at the end
every ID the producer got must have been read exactly once and ``XPENDING``
must be empty, so no step counts as work without being done.

Reported: entries/s (produced, read and acknowledged), the server's CPU
(utime+stime) µs per entry, and the trafikey / Valkey ratio of each. No
target: the section reports.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from trafikey_server.connector import Connection

from .cpu import Window, generator_busy
from .servers import Server

CONSUMERS = (1, 10)
KEY = b"bench:xs"
GROUP = b"g"
COUNT = 10


def _encode(parts: list[bytes]) -> bytes:
    return b"*%d\r\n" % len(parts) + b"".join(b"$%d\r\n%s\r\n" % (len(p), p) for p in parts)


def run_cycle(server: Server, consumers: int, entries: int) -> dict[str, float]:
    """One run: ``entries`` (rounded up to a multiple of ``10 * consumers``)
    through XADD, XREADGROUP and XACK with ``consumers`` consumers."""
    producer = Connection("127.0.0.1", server.port)
    conns = [Connection("127.0.0.1", server.port) for _ in range(consumers)]
    try:
        producer.execute("DEL", KEY)
        producer.execute("XGROUP", "CREATE", KEY, GROUP, "$", "MKSTREAM")
        step = COUNT * consumers
        steps = -(-entries // step)
        xadd = _encode([b"XADD", KEY, b"*", b"field", b"value"]) * step
        reads = [_encode([b"XREADGROUP", b"GROUP", GROUP, b"c%d" % k, b"COUNT", b"%d" % COUNT,
                          b"STREAMS", KEY, b">"]) for k in range(consumers)]
        added: list[bytes] = []
        read: list[bytes] = []
        win = Window({"server": server.pid}).start()
        gen0 = time.process_time()
        for _ in range(steps):
            producer.send(xadd)
            for _ in range(step):
                added.append(producer.read())
            for c, req in zip(conns, reads, strict=True):
                c.send(req)
            acks: list[bytes] = []
            for c in conns:
                reply: Any = c.read()
                ids = [e[0] for e in reply[0][1]]
                if len(ids) != COUNT:
                    raise RuntimeError(f"XREADGROUP on {server.label} returned {len(ids)} entries, not {COUNT}")
                read += ids
                acks.append(_encode([b"XACK", KEY, GROUP, *ids]))
            for c, ack in zip(conns, acks, strict=True):
                c.send(ack)
            for c in conns:
                if c.read() != COUNT:
                    raise RuntimeError(f"XACK on {server.label} did not acknowledge {COUNT} entries")
        win.stop()
        gen_cpu = time.process_time() - gen0
        if sorted(read) != sorted(added) or len(set(read)) != len(read):
            raise RuntimeError(f"{server.label}: the entries read are not the entries added")
        if producer.execute("XPENDING", KEY, GROUP)[0] != 0:
            raise RuntimeError(f"{server.label}: entries left pending")
        producer.execute("DEL", KEY)
    finally:
        for c in (producer, *conns):
            c.close()
    n = steps * step
    return {
        "entries": float(n),
        "entries_per_s": n / win.wall if win.wall else 0.0,
        "cpu_us": win.cpu["server"] * 1e6 / n,
        "gen_busy_pct": 100 * generator_busy(win, gen_cpu),
    }


def run_streams(started: list[Server], *, rounds: int, entries: int,
                record: Callable[[str, tuple[str, ...], dict[str, float]], None],
                log: Callable[[str], None]) -> None:
    for r in range(rounds):
        for n in CONSUMERS:
            for s in started:
                out = run_cycle(s, n, entries)
                record("stream_cycle", (str(n), s.label), out)
                log(f"  round {r + 1} {n:>3} consumers {s.label:10} {out['entries_per_s']:>9,.0f} entries/s"
                    f" {out['cpu_us']:8.2f} µs/entry  gen core {out['gen_busy_pct']:.0f}%")

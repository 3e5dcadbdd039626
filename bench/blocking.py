"""Blocked-client wake-up: how long a client waiting in BZPOPMIN or BLPOP takes to hear of a push.

Three shapes, each on every server in turn within a round:

- **one waiter**: one client blocks in ``BZPOPMIN bench:bq 0``; once the
  server reports it blocked, a second client sends ``ZADD bench:bq 1 m``
  and the time is taken from that send to the waiter's reply;
- **fan-out**: ``WAITERS`` clients block on the same key; one ZADD of that
  many members serves them all, and the time runs to the last reply;
- **BLPOP one waiter**: as the first, with ``BLPOP bench:bl 0`` woken by
  ``LPUSH bench:bl e``.

Waiting for ``blocked_clients`` (INFO) happens outside the timed span, so
the span is the push, the serving and the reply. The server's own CPU
(utime+stime) over all the wake-ups of a run, divided by them, is the cost
per wake-up (it includes the INFO polls and the BZPOPMIN requests on both
servers alike). Nothing here asserts a timing.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable

from trafikey_server.connector import Connection

from .cpu import proc_cpu_seconds
from .servers import Server

KEY = "bench:bq"
LIST_KEY = "bench:bl"
WAITERS = 20


def _wait_blocked(ctl: Connection, n: int) -> None:
    want = b"blocked_clients:%d\r\n" % n
    deadline = time.monotonic() + 30
    while want not in ctl.execute("INFO", "clients"):
        if time.monotonic() > deadline:
            raise RuntimeError(f"{n} clients never blocked")


def _bzpopmin() -> bytes:
    return b"*3\r\n$8\r\nBZPOPMIN\r\n$%d\r\n%s\r\n$1\r\n0\r\n" % (len(KEY), KEY.encode())


def _zadd(members: int) -> bytes:
    parts = [b"ZADD", KEY.encode()]
    for i in range(members):
        parts += [b"1", b"m%d" % i]
    return _encode(parts)


def _encode(parts: list[bytes]) -> bytes:
    return b"*%d\r\n" % len(parts) + b"".join(b"$%d\r\n%s\r\n" % (len(p), p) for p in parts)


def _run(server: Server, waiters: int, wakeups: int, blpop: bool = False) -> dict[str, float]:
    """``blpop``: one waiter in BLPOP woken by an LPUSH of one element
    (``waiters`` must be 1); otherwise BZPOPMIN woken by a ZADD."""
    ctl = Connection("127.0.0.1", server.port)
    pusher = Connection("127.0.0.1", server.port)
    clients = [Connection("127.0.0.1", server.port) for _ in range(waiters)]
    key = LIST_KEY if blpop else KEY
    if blpop:
        block, push = _encode([b"BLPOP", key.encode(), b"0"]), _encode([b"LPUSH", key.encode(), b"e"])
    else:
        block, push = _bzpopmin(), _zadd(waiters)
    ctl.execute("DEL", key)
    spans: list[float] = []
    cpu0 = proc_cpu_seconds(server.pid)
    try:
        for _ in range(wakeups):
            for c in clients:
                c.send(block)
            _wait_blocked(ctl, waiters)
            t0 = time.perf_counter()
            pusher.send(push)
            for c in clients:
                reply = c.read()
                if not isinstance(reply, list) or reply[0] != key.encode():
                    raise RuntimeError(f"unexpected wake-up reply {reply!r}")
            spans.append(time.perf_counter() - t0)
            if pusher.read() != (1 if blpop else waiters):
                raise RuntimeError("the push did not add every element")
    finally:
        cpu = proc_cpu_seconds(server.pid) - cpu0
        for c in (ctl, pusher, *clients):
            c.close()
    spans.sort()
    return {
        "p50_us": statistics.median(spans) * 1e6,
        "p99_us": spans[min(len(spans) - 1, int(len(spans) * 0.99))] * 1e6,
        "cpu_us": cpu * 1e6 / (wakeups * waiters),
    }


def run_blocking(servers: list[Server], *, rounds: int, wakeups: int,
                 record: Callable[[str, tuple[str, ...], dict[str, float]], None],
                 log: Callable[[str], None]) -> None:
    for r in range(rounds):
        for shape, waiters, n, blpop in (("one waiter", 1, wakeups, False),
                                         (f"fan-out {WAITERS}", WAITERS, max(wakeups // 10, 5), False),
                                         ("BLPOP one waiter", 1, wakeups, True)):
            for s in servers:
                out = _run(s, waiters, n, blpop)
                record("blocking", (shape, s.label), out)
                log(f"  round {r + 1} {shape:12} {s.label:10} p50 {out['p50_us']:8.1f} µs"
                    f"  p99 {out['p99_us']:8.1f} µs  {out['cpu_us']:7.1f} µs CPU/wake-up")

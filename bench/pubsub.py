"""Section: PUBLISH fan-out to 1, 10 and 100 subscribers.

What it measures: the cost of one PUBLISH that the server turns into one
frame per subscriber, the path every pushed message takes (pub/sub, and
later keyspace notifications and client tracking). One publisher pipelines
batches of PUBLISH on one connection; N subscribers, each on a connection of
its own, read everything they are sent. The harness (on the load core) does
both in one loop with ``selectors``: write a batch, then read until the
publisher has every reply and every subscriber every message of the batch,
so no output buffer grows between batches and the pubsub output-buffer
limit is never near. Every reply is checked (the receiver count must be N)
and every subscriber must receive exactly the bytes of its frames.

Reported: PUBLISH/s, messages delivered/s (PUBLISH/s times N) and server CPU µs
per PUBLISH, with the trafikey / Valkey ratio of each. No target: the
section reports.
"""

from __future__ import annotations

import selectors
import socket
from collections.abc import Callable
from typing import Any

from .cpu import Window, generator_busy
from .servers import Server

FANOUTS = (1, 10, 100)
CHANNEL = b"bench:ps"
PAYLOAD = b"x" * 100


def _publish(message: bytes) -> bytes:
    return b"*3\r\n$7\r\nPUBLISH\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n" % (len(CHANNEL), CHANNEL, len(message), message)


def _frame() -> bytes:
    """The RESP2 frame a subscriber receives for one message."""
    return b"*3\r\n$7\r\nmessage\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n" % (len(CHANNEL), CHANNEL, len(PAYLOAD), PAYLOAD)


def _connect(port: int) -> socket.socket:
    s = socket.create_connection(("127.0.0.1", port), timeout=60)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return s


def _read_exact(s: socket.socket, n: int) -> bytes:
    buf = b""
    while len(buf) < n:
        chunk = s.recv(n - len(buf))
        if not chunk:
            raise ConnectionError("closed")
        buf += chunk
    return buf


def run_fanout(server: Server, subscribers: int, messages: int, batch: int) -> dict[str, float]:
    subs = [_connect(server.port) for _ in range(subscribers)]
    pub = _connect(server.port)
    sel = selectors.DefaultSelector()
    try:
        confirm = b"*3\r\n$9\r\nsubscribe\r\n$%d\r\n%s\r\n:1\r\n" % (len(CHANNEL), CHANNEL)
        for s in subs:
            s.sendall(b"*2\r\n$9\r\nSUBSCRIBE\r\n$%d\r\n%s\r\n" % (len(CHANNEL), CHANNEL))
            got = _read_exact(s, len(confirm))
            assert got == confirm, got
        reply = b":%d\r\n" % subscribers
        request = _publish(PAYLOAD) * batch
        frame = _frame()
        expect_sub = len(frame) * batch
        expect_pub = len(reply) * batch
        for s in subs:
            s.setblocking(False)
            sel.register(s, selectors.EVENT_READ)
        pub.setblocking(False)
        sel.register(pub, selectors.EVENT_READ)
        win = Window({"server": server.pid}).start()
        sent = 0
        while sent < messages:
            pub.setblocking(True)
            pub.sendall(request)
            pub.setblocking(False)
            sent += batch
            want: dict[Any, int] = {s: expect_sub for s in subs}
            want[pub] = expect_pub
            got_bytes: dict[Any, list[bytes]] = {s: [] for s in want}
            while want:
                for key, _ in sel.select(timeout=60):
                    s = key.fileobj
                    if s not in want:
                        continue
                    data = s.recv(1 << 20)  # type: ignore[union-attr]
                    if not data:
                        raise ConnectionError("closed during the run")
                    got_bytes[s].append(data)
                    want[s] -= len(data)
                    if want[s] <= 0:
                        del want[s]
            # Checked once per batch, outside the reads: every byte as expected.
            assert b"".join(got_bytes[pub]) == reply * batch
            for s in subs:
                assert b"".join(got_bytes[s]) == frame * batch
        win.stop()
    finally:
        sel.close()
        for s in (*subs, pub):
            s.close()
    cpu = win.cpu["server"]
    return {
        "publish_per_s": sent / win.wall if win.wall else 0.0,
        "delivered_per_s": sent * subscribers / win.wall if win.wall else 0.0,
        "cpu_us": cpu / sent * 1e6,
        "gen_busy_pct": generator_busy(win, 0.0) * 100,
    }


def run_pubsub(started: list[Server], rounds: int, messages: int, batch: int,
               record: Callable[[str, tuple[str, ...], dict[str, float]], None],
               log: Callable[[str], None]) -> None:
    for r in range(rounds):
        for n in FANOUTS:
            # Fewer publishes to many subscribers: the delivered count stays comparable.
            count = max(batch, messages // n // batch * batch)
            for s in started:
                out = run_fanout(s, n, count, batch)
                record("pubsub", (str(n), s.label), out)
                log(f"  round {r + 1} {n:>3} subscribers {s.label:14} {out['publish_per_s']:>9,.0f} PUBLISH/s"
                    f" {out['delivered_per_s']:>10,.0f} msg/s {out['cpu_us']:8.1f} µs/PUBLISH")

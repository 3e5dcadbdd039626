"""A writer and a keyspace-event subscriber on one server, and what the
subscriber receives for each request the writer sends.

The subscriber holds ``PSUBSCRIBE __key*__:*``. After each request the
writer has its reply, and a server delivers a write's events before it
answers the write, so the subscriber's events for that request are exactly
what it receives before the answer to a PING (carrying a unique token) it
sends afterwards: no timers, no guessing. The same requests on Valkey and
on trafikey-server must give the same replies and the same event frames,
byte for byte, in RESP2 and RESP3.
"""

from __future__ import annotations

import itertools
import time
from typing import Any

import redis

from .emq_model import server_keyspace
from .resp_wire import Wire, encode

PATTERN = b"__key*__:*"
_tokens = itertools.count()


class Watched:
    def __init__(self, port: int, proto: int = 2, pattern: bytes = PATTERN) -> None:
        self.port = port
        self.writer = Wire(port)
        self.sub = Wire(port)
        if proto == 3:
            for w in (self.writer, self.sub):
                assert w.call("HELLO", "3").startswith(b"%")
        assert self.sub.call("PSUBSCRIBE", pattern).endswith(b":1\r\n")

    def close(self) -> None:
        self.writer.close()
        self.sub.close()

    def events(self) -> list[bytes]:
        """Every frame the subscriber received since the last call."""
        token = b"sync-%d" % next(_tokens)
        self.sub.send_raw(encode("PING", token))
        ends = (b"$%d\r\n%s\r\n" % (len(token), token),
                b"*2\r\n$4\r\npong\r\n$%d\r\n%s\r\n" % (len(token), token))
        got = []
        while True:
            frame = self.sub.read_reply()
            if frame in ends:
                return got
            got.append(frame)

    def call(self, *request: Any) -> tuple[bytes, list[bytes]]:
        reply = self.writer.call(*request)
        return reply, self.events()

    def wait_event(self, timeout: float = 5.0) -> bytes:
        """The next frame, however long the server takes to send it (active
        expiry runs on the server's own schedule)."""
        self.sub.sock.settimeout(timeout)
        try:
            return self.sub.read_reply()
        finally:
            self.sub.sock.settimeout(10.0)


def frame_parts(frame: bytes) -> tuple[bytes, ...]:
    """A pmessage frame as (channel, message), for readable failures."""
    parts = frame.split(b"\r\n")
    return parts[6], parts[8]


def readable(events: list[bytes]) -> list[tuple[bytes, ...]]:
    return [frame_parts(f) for f in events]


WAIT = ("WAIT",)  # a step that lets a 1 ms expiry pass (a short pause, no assertion on time)


def run(port: int, steps: list[tuple], proto: int) -> list[tuple[tuple, bytes, list[bytes]]]:
    """Each step with its reply and its events, on one server."""
    w = Watched(port, proto)
    out = []
    try:
        for step in steps:
            if step == WAIT:
                time.sleep(0.005)
                continue
            reply, events = w.call(*step)
            out.append((step, reply, events))
    finally:
        w.close()
    return out


def assert_same_events(valkey: list, trafikey: list) -> None:
    assert len(valkey) == len(trafikey)
    for (step, vr, ve), (_, tr, te) in zip(valkey, trafikey, strict=True):
        assert tr == vr, f"{step!r}\n valkey:   {vr!r}\n trafikey: {tr!r}"
        assert te == ve, f"{step!r}\n valkey:   {readable(ve)}\n trafikey: {readable(te)}"


def keyspace(port: int, dbs: tuple[int, ...] = (0, 1)) -> dict[int, Any]:
    """Every key of the given databases, its value, and whether it has a TTL."""
    out = {}
    for n in dbs:
        r = redis.Redis(port=port, db=n)
        try:
            data = server_keyspace(r)
            ttls = sorted(k for k in data if r.pttl(k) > 0)
        finally:
            r.close()
        out[n] = (data, ttls)
    return out


def streams_with_flags(ports: tuple[int, ...], flags: str, steps: list[tuple], proto: int) -> list[list]:
    """Each server flushed, ``notify-keyspace-events`` set to ``flags``, then
    ``steps`` run with a subscriber listening: one event stream per port,
    ready for ``assert_same_events``."""
    out = []
    for port in ports:
        w = Wire(port)
        assert w.call("FLUSHALL") == b"+OK\r\n"
        assert w.call("CONFIG", "SET", "notify-keyspace-events", flags) == b"+OK\r\n"
        w.close()
        out.append(run(port, steps, proto))
    return out

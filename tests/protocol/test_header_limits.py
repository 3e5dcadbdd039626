"""Header lines that never end, against Valkey 9.1.2: a '*' count, a '$'
length or an inline request that grows past 64 KiB without its CR gets
Valkey's protocol error and the connection closes (a reader that waits
for the CR would buffer without end). Values of that size that start with
'*' or '$' are ordinary data and are stored as sent.
"""

from __future__ import annotations

import socket

import pytest
from helpers.resp_wire import Wire, encode


def _flood(port: int, first: bytes, chunk: bytes, limit: int = 1 << 20) -> bytes:
    """Send first, then chunk after chunk (reading what comes back in
    between, as Valkey's own test does) until the server closes; what it
    answered."""
    s = socket.create_connection(("127.0.0.1", port), timeout=5)
    got = b""
    try:
        s.sendall(first)
        sent = 0
        while sent < limit:
            try:
                s.sendall(chunk)
            except OSError:
                break
            sent += len(chunk)
            s.setblocking(False)
            try:
                data = s.recv(1 << 16)
                if not data:
                    return got
                got += data
            except BlockingIOError:
                pass
            except OSError:
                return got
            finally:
                s.setblocking(True)
        s.settimeout(5)
        while True:
            try:
                data = s.recv(1 << 16)
            except OSError:
                return got
            if not data:
                return got
            got += data
    finally:
        s.close()


@pytest.mark.parametrize(("first", "chunk"), [
    (b"*\x00", b"payload"),
    (b"*", b"1" * 997),
    (b"*\x00", b"AB\nC" * 100),
    (b"$\x00", b"payload"),
    (b"\x00", b"payload"),
    (b"PING", b"x" * 1000),
    (b"*1\r\n$", b"A" * 1000),
    (b"*1\r\n$\x00", b"AAAA\n" * 100),
    (b"*2\r\n$4\r\nECHO\r\n$", b"9" * 1000),
    (b"PING\r\n*1\r\n$4\r\nPING\r\n*1\r\n$", b"A" * 1000),
])
def test_endless_header_line(valkey_server, trafikey_server, first: bytes, chunk: bytes) -> None:
    v = _flood(valkey_server.port, first, chunk)
    t = _flood(trafikey_server.port, first, chunk)
    assert t == v
    assert b"Protocol error" in v


@pytest.mark.parametrize(("size", "fill"), [(70_000, b"*"), (200_000, b"$"), (300_000, b"A"), (5_000_000, b"*")])
def test_large_values_starting_like_headers(pair, size: int, fill: bytes) -> None:
    """A bulk of any size is data, whatever its first byte."""
    value = fill * size
    for w in (pair.v, pair.t):
        req = encode("SET", "k", value) + encode("STRLEN", "k") + encode("GET", "k")
        for i in range(0, len(req), 7000):  # in many reads, as a client streams it
            w.send_raw(req[i:i + 7000])
    replies = [[w.read_reply() for _ in range(3)] for w in (pair.v, pair.t)]
    assert replies[1] == replies[0]
    assert replies[0][2] == b"$%d\r\n" % size + value + b"\r\n"
    pair.check("PING")


def test_connection_after_refusal_is_closed(valkey_server, trafikey_server) -> None:
    """The refusal ends the connection; a new one is served."""
    for port in (valkey_server.port, trafikey_server.port):
        assert b"too big mbulk count string" in _flood(port, b"*\x00", b"payload")
        w = Wire(port)
        assert w.call("PING") == b"+PONG\r\n"
        w.close()

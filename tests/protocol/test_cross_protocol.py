"""Valkey's guard against cross-protocol scripting, over raw sockets.

A browser tricked into posting to the server sends an HTTP request: its
``POST`` line and ``Host:`` header reach the server as commands. Valkey
closes such a connection without a reply (the replies to the requests
before it in the same read are not sent either, though those requests ran)
and logs a warning at most once a minute.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator

import pytest
from helpers.resp_wire import Wire, encode
from helpers.servers import Proc, own_pair


@pytest.fixture(scope="module")
def servers() -> Iterator[tuple[Proc, Proc]]:
    with own_pair() as (v, t):
        yield v, t


def until_closed(port: int, *reads: bytes) -> bytes:
    """Send each read on its own (after the replies to the one before), then
    collect everything until the server closes the connection."""
    w = Wire(port)
    try:
        got = b""
        for i, data in enumerate(reads):
            w.send_raw(data)
            if i < len(reads) - 1:
                got += w.read_reply()
        return got + w.read_until_closed()
    finally:
        w.close()


def call(port: int, *args: str) -> bytes:
    w = Wire(port)
    try:
        return w.call(*args)
    finally:
        w.close()


HTTP = b"POST / HTTP/1.1\r\nHost: localhost:6379\r\nContent-Length: 11\r\n\r\nFLUSHALL\r\n\r\n"
ATTACKS = [
    HTTP,
    b"Host: localhost\r\n",
    b"post\r\n",
    b"HOST: a b c\r\n",
    encode("POST", "/"),
    encode("host:"),
    encode("SET", "xp", "v") + b"POST / HTTP/1.1\r\n",
    encode("SET", "xp", "v") + b"Host: localhost\r\n" + encode("SET", "xp", "w"),
    b"SET xp v\r\nPOST /\r\n",
    encode("SET", "xp", "v") + encode("Host:", "x"),
    b"MULTI\r\nSET xp v\r\nPOST\r\nEXEC\r\n",
    encode("ECHO", "a") + encode("ECHO", "b") + b"post / HTTP/1.0\r\n",
]


@pytest.mark.parametrize("data", ATTACKS, ids=[repr(a)[:40] for a in ATTACKS])
def test_closed_without_a_reply(servers: tuple[Proc, Proc], data: bytes) -> None:
    v, t = servers
    for p in servers:
        call(p.port, "DEL", "xp")
    got_v = until_closed(v.port, data)
    got_t = until_closed(t.port, data)
    assert got_t == got_v == b""
    assert call(t.port, "GET", "xp") == call(v.port, "GET", "xp")


@pytest.mark.parametrize("first", [encode("SET", "xp", "v"), b"PING\r\n", encode("ECHO", "x")])
@pytest.mark.parametrize("attack", [b"POST / HTTP/1.1\r\n", b"Host: x\r\n", encode("POST")])
def test_after_a_command_in_an_earlier_read(servers: tuple[Proc, Proc], first: bytes, attack: bytes) -> None:
    """The reply to a request in an earlier read has gone out already."""
    v, t = servers
    got_v = until_closed(v.port, first, attack)
    got_t = until_closed(t.port, first, attack)
    assert got_t == got_v
    assert got_v  # the first request's reply


def test_before_auth(servers: tuple[Proc, Proc]) -> None:
    """The guard comes before the authentication check."""
    for p in servers:
        assert call(p.port, "CONFIG", "SET", "requirepass", "pw") == b"+OK\r\n"
    try:
        got = [until_closed(p.port, b"PING\r\n", b"POST / HTTP/1.1\r\n") for p in servers]
        assert got[1] == got[0]
        assert got[0].startswith(b"-NOAUTH")
    finally:
        for p in servers:
            w = Wire(p.port)
            assert w.call("AUTH", "pw") == b"+OK\r\n"
            assert w.call("CONFIG", "SET", "requirepass", "") == b"+OK\r\n"
            w.close()


def test_the_server_goes_on_serving(servers: tuple[Proc, Proc]) -> None:
    for p in servers:
        bystander = Wire(p.port)
        assert until_closed(p.port, HTTP) == b""
        assert bystander.call("PING") == b"+PONG\r\n"
        bystander.close()


def warnings(proc: Proc) -> list[str]:
    lines = [re.sub(r"^\d+:M [^#]*# ", "", line) for line in proc.output().splitlines() if "SECURITY" in line]
    return [re.sub(r"127\.0\.0\.1:\d+", "127.0.0.1:PORT", line) for line in lines]


def test_the_warning_is_logged_once_a_minute() -> None:
    """Valkey's words at warning level, the peer's address in them; the
    attacks that follow within the minute are not logged again."""
    with own_pair() as (v, t):
        for p in (v, t):
            for _ in range(3):
                assert until_closed(p.port, HTTP) == b""
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and not (warnings(v) and warnings(t)):
            time.sleep(0.02)
        assert len(warnings(v)) == 1
        assert warnings(t) == warnings(v)
        line = next(x for x in t.output().splitlines() if "SECURITY" in x)
        assert re.match(r"\d+:M \d\d \w{3} \d{4} [\d:.]+ # Possible SECURITY ATTACK detected", line)

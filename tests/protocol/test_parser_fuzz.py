"""The request parser cannot be crashed: random and mutated RESP, cut at
random read boundaries, sent to a live server over real sockets.

Each example opens a connection, sends its bytes in pieces, half-closes and
reads everything until the server closes. Whatever was sent, the replies
must form valid RESP, a protocol error must be the last thing said, and a
connection opened before the campaign must still be served after every
example. Bounded: a few hundred examples, a few seconds in all.
"""

from __future__ import annotations

import itertools
import socket
import time
from collections.abc import Iterator

import hiredis
import pytest
from helpers.resp_wire import Wire, encode
from helpers.servers import Proc, start_trafikey
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st


@pytest.fixture(scope="module")
def target() -> Iterator[tuple[Proc, Wire]]:
    p = start_trafikey()
    bystander = Wire(p.port)
    yield p, bystander
    bystander.close()
    p.stop()


WORDS = [b"PING", b"ECHO", b"SET", b"GET", b"INCR", b"DEL", b"HSET", b"HGET", b"ZADD", b"ZRANGE", b"MULTI",
         b"EXEC", b"DISCARD", b"EXISTS", b"APPEND", b"HELLO", b"CLIENT", b"SETNAME", b"fz:k", b"fz:h", b"3", b"2",
         b"-1", b"0", b"1e400", b"nan", b"", b"\x00", b"\r\n", b"WITHSCORES"]
# Bytes that mean something to a RESP reader.
SPECIAL = [b"*", b"$", b"+", b"-", b":", b"~", b"%", b"|", b">", b"=", b"(", b"#", b",", b"_", b"!", b"\r", b"\n",
           b"\r\n", b"\x00", b"\"", b"'", b"\\x", b"9" * 10, b"-1", b"2147483648", b"536870913", b" "]

requests = st.lists(st.sampled_from(WORDS), min_size=1, max_size=6).map(lambda argv: encode(*argv))
inline = st.lists(st.sampled_from(WORDS + SPECIAL), min_size=1, max_size=8).map(lambda w: b" ".join(w) + b"\r\n")


@st.composite
def mutated(draw: st.DrawFn) -> bytes:
    """Well-formed requests with a few bytes flipped, inserted, removed or repeated."""
    data = bytearray(b"".join(draw(st.lists(st.one_of(requests, inline), min_size=1, max_size=5))))
    for _ in range(draw(st.integers(0, 4))):
        pos = draw(st.integers(0, len(data)))
        kind = draw(st.sampled_from(["flip", "insert", "delete", "repeat"]))
        if kind == "flip" and pos < len(data):
            data[pos] = draw(st.integers(0, 255))
        elif kind == "insert":
            data[pos:pos] = draw(st.sampled_from(SPECIAL))
        elif kind == "delete":
            del data[pos : pos + draw(st.integers(1, 8))]
        elif kind == "repeat":
            data[pos:pos] = data[pos : pos + draw(st.integers(1, 16))]
    return bytes(data)


inputs = st.one_of(mutated(), st.binary(min_size=1, max_size=200),
                   st.lists(st.sampled_from(SPECIAL + WORDS), min_size=1, max_size=20).map(b"".join))


@st.composite
def pieces(draw: st.DrawFn) -> list[bytes]:
    data = draw(inputs)
    cuts = sorted(set(draw(st.lists(st.integers(1, max(1, len(data) - 1)), max_size=4))))
    edges = [0, *[c for c in cuts if c < len(data)], len(data)]
    return [data[a:b] for a, b in itertools.pairwise(edges) if b > a]


def exchange(port: int, chunks: list[bytes]) -> bytes:
    s = socket.create_connection(("127.0.0.1", port))
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    s.settimeout(10)
    try:
        for i, chunk in enumerate(chunks):
            if i:
                time.sleep(0.001)  # most pieces arrive as reads of their own
            try:
                s.sendall(chunk)
            except (BrokenPipeError, ConnectionResetError):
                break  # closed after a protocol error: nothing more to send
        try:
            s.shutdown(socket.SHUT_WR)
        except OSError:
            pass
        out = b""
        while True:
            try:
                got = s.recv(1 << 16)
            except ConnectionResetError:
                break
            if not got:
                break
            out += got
        return out
    finally:
        s.close()


def replies(stream: bytes) -> list[object]:
    """The stream read as RESP; raises if any of it is not."""
    reader = hiredis.Reader()
    reader.feed(stream)
    out: list[object] = []
    while True:
        item = reader.gets()
        if item is False:
            break
        out.append(item)
    assert not reader.has_data(), f"reply cut short: {stream[-80:]!r}"
    return out


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(chunks=pieces())
def test_any_input_gets_valid_replies_and_the_server_stays_up(target: tuple[Proc, Wire],
                                                               chunks: list[bytes]) -> None:
    proc, bystander = target
    stream = exchange(proc.port, chunks)
    got = replies(stream)
    for i, r in enumerate(got):
        if isinstance(r, hiredis.ReplyError) and str(r).startswith("ERR Protocol error"):
            assert i == len(got) - 1, f"replies after a protocol error: {got!r}"
    assert proc.proc.poll() is None
    assert bystander.call("PING") == b"+PONG\r\n"


def test_the_server_log_has_no_traceback(target: tuple[Proc, Wire]) -> None:
    """Runs after the campaign above: nothing escaped a handler or the parser."""
    proc, _ = target
    out = proc.output()
    assert "Traceback" not in out
    assert "internal error" not in out

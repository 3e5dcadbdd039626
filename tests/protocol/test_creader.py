"""The compiled request reader against the pure fast path, in process.

The same pipelines, valid and malformed, cut into the same random reads, go
to a connection on the compiled reader (protocol/creader.pyx) and to one on
hiredis with its framing checks, each on a server of its own with the same
keyspace: the replies, whether the connection was closed, the requests run
(every command's calls, failed and rejected calls) and the keyspace
afterwards must agree exactly. The malformations are the ones the reader
must hand to the exact parser: numbers that are not canonical or too long,
a count of zero or below, lines and bulks without CRLF, items that are not
bulks, inline requests and cross-protocol words, lengths past
proto-max-bulk-len (set to its 1 MB floor here).
"""

from __future__ import annotations

import importlib
import itertools
import tempfile
from collections.abc import Callable
from functools import partial
from typing import Any

import pytest
from helpers.fake_transport import FakeTransport
from helpers.resp_wire import encode
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from trafikey_server.network.connection import HIREDIS, KERNEL, Connection
from trafikey_server.server import Server
from trafikey_server.services.config import Config
from trafikey_server.util import native

CREADER = (importlib.import_module("trafikey_server.protocol.creader")
           if "protocol.creader" in native.built() else None)
pytestmark = pytest.mark.skipif(
    CREADER is None, reason="the compiled reader is not built (python3 setup.py build_ext --inplace)")

MAX_BULK = 1 << 20


KernelConnection = partial(Connection, mode=KERNEL, new_reader=CREADER.Reader if CREADER is not None else None)
HiredisConnection = partial(Connection, mode=HIREDIS)


def _server() -> Server:
    config = Config()
    config.values["dir"] = tempfile.mkdtemp(prefix="trafikey-creader-")
    config.values["proto-max-bulk-len"] = MAX_BULK
    return Server(config)


SERVERS: list[Server] = []


def servers() -> list[Server]:
    if not SERVERS:
        SERVERS.extend((_server(), _server()))
    return SERVERS


def stats(server: Server) -> dict[bytes, tuple[int, int, int]]:
    return {cmd.name: (cmd.calls, cmd.failed_calls, cmd.rejected_calls) for cmd in server.table.everything()}


def run(server: Server, kind: Callable[[Server], Connection], reads: list[bytes]) -> tuple[bytes, bool, dict[Any, Any]]:
    before = stats(server)
    conn = kind(server)
    t = FakeTransport()
    conn.connection_made(t)
    for data in reads:
        if t.closed:
            break
        conn.data_received(data)
    conn.connection_lost(None)
    after = stats(server)
    ran = {name: tuple(a - b for a, b in zip(after[name], before[name], strict=True))
           for name in after if after[name] != before[name]}
    return t.written, t.closed, ran


STATE = [encode("GET", k) for k in ("k1", "k2", "n")] + [encode("HGETALL", "h"), encode("LRANGE", "l", "0", "-1")]

ARGVS = [
    (b"SET", b"k1", b"v"), (b"SET", b"k2", b"a\r\nb"), (b"APPEND", b"k1", b"x"), (b"INCR", b"n"), (b"GET", b"k1"),
    (b"PING",), (b"ECHO", b"\r"), (b"ECHO", b""), (b"HSET", b"h", b"f", b"\n"), (b"DEL", b"k2"),
    (b"LPUSH", b"l", b"*1\r\n$4\r\nPING\r\n"), (b"MSET", b"k1", b"1", b"k2", b"$3\r\n"), (b"ECHO", b"x" * 300),
]

# Frames the reader must not take itself.
BAD = [
    b"*01\r\n$4\r\nPING\r\n", b"*+1\r\n$4\r\nPING\r\n", b"*0\r\n", b"*-1\r\n", b"*-2\r\n", b"* 1\r\n", b"*\r\n",
    b"*1\n$4\r\nPING\r\n", b"*1\r\r\n$4\r\nPING\r\n", b"*1\rX$4\r\nPING\r\n", b"*2147483648\r\n$4\r\nPING\r\n",
    b"*99999999999999999999\r\n", b"*1\r\n$04\r\nPING\r\n", b"*1\r\n$-1\r\n", b"*1\r\n$+4\r\nPING\r\n",
    b"*1\r\n$4\rPING\r\n", b"*1\r\n$4\nPING\r\n", b"*1\r\n$4\r\nPINGX\r\n", b"*1\r\n$4\r\nPING\r\r",
    b"*1\r\n$4\r\nPING\n\n", b"*1\r\n$4\r\nPIN\r\n\r\n", b"*1\r\n$00\r\n\r\n",
    b"*2\r\n$3\r\nGET\r\n$1048577\r\nab\r\n", b"*2\r\n$4\r\nECHO\r\n$99999999999999999999\r\n",
    b"*2\r\n$4\r\nECHO\r\n$9223372036854775808\r\n", b"*1\r\n+PING\r\n", b"*2\r\n$4\r\nECHO\r\n:1\r\n",
    b"*1\r\n*1\r\n$4\r\nPING\r\n", b"~1\r\n$4\r\nPING\r\n", b"$4\r\nPING\r\n", b">1\r\n$4\r\nPING\r\n",
    b"PING\r\n", b"SET k1 inline\r\n", b"\r\n", b"\n", b'ECHO "a\r\n', encode("POST", "/"), b"Host: x\r\n",
    encode("host:", "x"),
]


@st.composite
def pipelines(draw: st.DrawFn) -> bytes:
    parts = [encode(*draw(st.sampled_from(ARGVS))) for _ in range(draw(st.integers(1, 8)))]
    for _ in range(draw(st.integers(0, 2))):
        parts.insert(draw(st.integers(0, len(parts))), draw(st.sampled_from(BAD)))
    return b"".join(parts)


@st.composite
def cut(draw: st.DrawFn, body: bytes) -> list[bytes]:
    if draw(st.booleans()):
        points = draw(st.lists(st.integers(1, max(1, len(body) - 1)), max_size=8))
    else:  # down to a byte a read over a stretch
        a = draw(st.integers(0, len(body)))
        points = list(range(a, min(len(body), a + 40)))
    edges = sorted({0, len(body), *[c for c in points if 0 < c < len(body)]})
    return [body[a:b] for a, b in itertools.pairwise(edges)]


@st.composite
def reads(draw: st.DrawFn) -> list[bytes]:
    return draw(cut(draw(pipelines())))


def assert_paths_agree(reads: list[bytes]) -> None:
    kernel, pure = servers()
    for s in (kernel, pure):
        for db in s.dbs:
            db.clear()
    assert run(kernel, KernelConnection, reads) == run(pure, HiredisConnection, reads)
    assert run(kernel, KernelConnection, STATE) == run(pure, HiredisConnection, STATE)


@settings(max_examples=800, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(reads=reads())
@example(reads=[encode("SET", "k1", "v") + b"*1\r\n$4\r\nPI", b"NGX\r\n" + encode("GET", "k1")])
@example(reads=[encode("SET", "k1", "v") + b"*2\r\n$4\r\nECHO\r\n$1048", b"577\r\n" + encode("GET", "k1")])
@example(reads=[b"*1\r", b"\n$4\r", b"\nPING\r", b"X"])
def test_the_compiled_reader_answers_as_the_pure_path(reads: list[bytes]) -> None:
    assert_paths_agree(reads)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(argvs=st.lists(st.lists(st.binary(max_size=40), min_size=1, max_size=6), min_size=1, max_size=10),
       data=st.data())
def test_the_reader_returns_every_request_as_sent(argvs: list[list[bytes]], data: st.DataObject) -> None:
    """Whatever the cuts, a valid pipeline comes back whole, request by
    request, with nothing handed over and nothing left buffered."""
    assert CREADER is not None
    reader = CREADER.Reader()
    got: list[list[bytes]] = []
    for piece in data.draw(cut(b"".join(encode(*argv) for argv in argvs))):
        assert reader.feed(piece, MAX_BULK, got) is None
    assert got == argvs
    assert reader.idle and reader.len() == 0


def test_a_large_request_in_many_reads() -> None:
    """A bulk of several MiB in 64 KiB reads: kept from its request's start,
    counted as the query buffer while it is open, handed back whole."""
    assert CREADER is not None
    value = bytes(range(256)) * (24 << 10)
    wire = encode("SET", "k", value) + encode("GET", "k")
    reader = CREADER.Reader()
    got: list[list[bytes]] = []
    for i in range(0, len(wire), 1 << 16):
        assert reader.feed(wire[i:i + (1 << 16)], 8 << 20, got) is None
        if not got:
            assert not reader.idle
            assert 0 < reader.len() <= min(i + (1 << 16), len(value))
    assert got == [[b"SET", b"k", value], [b"GET", b"k"]]
    assert reader.idle and reader.len() == 0
    # Past the limit given, the same request is handed over from its start.
    reader = CREADER.Reader()
    head = encode("PING")
    assert reader.feed(head + wire[:100], len(value) - 1, got) == wire[:100]

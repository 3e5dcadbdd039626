"""The fast path answers as the exact parser does, whatever the reads.

In process, many examples a second: the same bytes, cut into the same reads,
go to a connection as the server runs it (hiredis, its framing checks, the
replay through the exact parser when they fail; or, when it is built, the
compiled reader handing what it does not take to the exact parser) and to
one whose every read goes to the exact parser (``protocol/parser.py``, Valkey's rules, compared
with Valkey itself in test_framing.py). Each has a server of its own, with
the same keyspace before each example; the replies, whether the connection
was closed, and the keyspace afterwards must agree.
"""

from __future__ import annotations

import importlib
import itertools
import tempfile
from collections.abc import Callable
from functools import partial

import pytest
from helpers.fake_transport import FakeTransport
from helpers.resp_wire import encode
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from trafikey_server.network.connection import EXACT, HIREDIS, KERNEL, Connection
from trafikey_server.server import Server
from trafikey_server.services.config import Config
from trafikey_server.util import native

ExactConnection = partial(Connection, mode=EXACT)  # every read through the exact parser


HiredisConnection = partial(Connection, mode=HIREDIS)  # the pure fast path, whichever the server runs


# The compiled reader when it is built, even with the pure path forced: the
# comparison runs in process, beside the pure path.
CREADER = (importlib.import_module("trafikey_server.protocol.creader")
           if "protocol.creader" in native.built() else None)


# The compiled reader's fast path, whichever the server runs.
KernelConnection = partial(Connection, mode=KERNEL, new_reader=CREADER.Reader if CREADER is not None else None)


FAST = [
    pytest.param(HiredisConnection, id="hiredis"),
    pytest.param(KernelConnection, id="creader", marks=pytest.mark.skipif(
        CREADER is None, reason="the compiled reader is not built (python3 setup.py build_ext --inplace)")),
]


def _server() -> Server:
    config = Config()
    config.values["dir"] = tempfile.mkdtemp(prefix="trafikey-fastpath-")
    return Server(config)


SERVERS: list[Server] = []


def servers() -> list[Server]:
    if not SERVERS:
        SERVERS.extend((_server(), _server()))
    return SERVERS


def run(server: Server, kind: Callable[[Server], Connection], reads: list[bytes]) -> tuple[bytes, bool]:
    conn = kind(server)
    t = FakeTransport()
    conn.connection_made(t)
    for data in reads:
        if t.closed:
            break
        conn.data_received(data)
    conn.connection_lost(None)
    return t.written, t.closed


STATE = [encode("GET", k) for k in ("k1", "k2", "n")] + [encode("HGETALL", "h"), encode("LRANGE", "l", "0", "-1")]
WORDS = [b"SET", b"GET", b"APPEND", b"INCR", b"DEL", b"HSET", b"LPUSH", b"ECHO", b"PING", b"STRLEN", b"MSET",
         b"k1", b"k2", b"n", b"h", b"l", b"v", b"", b"1", b"\r\n", b"\r", b"\n", b"*1", b"$1"]
SPECIAL = [b"*", b"$", b"+", b":", b"~", b"|", b"%", b">", b"=", b"(", b"\r", b"\n", b"\r\n", b"\n\r", b"X",
           b'"', b"'", b"\\", b" ", b"-1", b"0", b"12", b"POST", b"Host:"]

requests = st.lists(st.sampled_from(WORDS), min_size=1, max_size=5).map(lambda argv: encode(*argv))
inline = st.lists(st.sampled_from(WORDS[:17] + SPECIAL), min_size=1, max_size=5).map(lambda w: b" ".join(w) + b"\r\n")


@st.composite
def inputs(draw: st.DrawFn) -> list[bytes]:
    """A pipeline, a few bytes changed, cut into reads."""
    data = bytearray(b"".join(draw(st.lists(st.one_of(requests, requests, inline), min_size=1, max_size=8))))
    for _ in range(draw(st.integers(0, 3))):
        pos = draw(st.integers(0, len(data)))
        kind = draw(st.sampled_from(["replace", "insert", "delete", "crlf"]))
        crlfs = [i for i in range(len(data) - 1) if data[i : i + 2] == b"\r\n"]
        if kind == "crlf" and crlfs:
            # A line or a bulk not ended by CRLF, the commonest framing fault.
            i = draw(st.sampled_from(crlfs))
            data[i : i + 2] = draw(st.sampled_from([b"X\r", b"\n\r", b"XY", b"\nX", b"X\n", b"\r\r", b"\n\n"]))
        elif kind == "replace":
            data[pos : pos + 1] = draw(st.sampled_from(SPECIAL))
        elif kind == "insert":
            data[pos:pos] = draw(st.sampled_from(SPECIAL))
        else:
            del data[pos : pos + draw(st.integers(1, 4))]
    body = bytes(data)
    if not body:
        return []
    cuts = draw(st.lists(st.integers(1, max(1, len(body) - 1)), max_size=6))
    edges = sorted({0, len(body), *[c for c in cuts if c < len(body)]})
    return [body[a:b] for a, b in itertools.pairwise(edges)]


@pytest.mark.slow
@pytest.mark.parametrize("kind", FAST)
@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(reads=inputs())
def test_fast_path_answers_as_the_exact_parser(kind: Callable[[Server], Connection], reads: list[bytes]) -> None:
    fast, exact = servers()
    for s in (fast, exact):
        for db in s.dbs:
            db.clear()
    got_fast = run(fast, kind, reads)
    got_exact = run(exact, ExactConnection, reads)
    assert got_fast == got_exact
    assert run(fast, kind, STATE) == run(exact, ExactConnection, STATE)

"""Protocol edges over raw sockets, compared with Valkey's bytes.

Malformed input must get Valkey's protocol error and a closed connection;
everything before the malformed request in the same write is still answered.
"""

from __future__ import annotations

import socket
import time

import pytest
from helpers.resp_wire import Wire, encode


def both_until_closed(pair, data: bytes) -> tuple[bytes, bytes]:  # type: ignore[no-untyped-def]
    pair.v.send_raw(data)
    pair.t.send_raw(data)
    return pair.v.read_until_closed(), pair.t.read_until_closed()


def exchange(w: Wire, data: bytes, settle: float = 0.2) -> bytes:
    """Send raw bytes and collect what arrives until the line goes quiet."""
    w.send_raw(data)
    out = b""
    w.sock.settimeout(settle)
    while True:
        try:
            chunk = w.sock.recv(1 << 20)
        except TimeoutError:
            return out
        if not chunk:
            return out
        out += chunk


MALFORMED = [
    b"*abc\r\n",
    b"*1\r\n$abc\r\n",
    b"*1\r\n$-1\r\n",
    b"*1\r\n:1\r\n",
    b"*1\r\n*1\r\n$4\r\nPING\r\n",
    b"*3000000000\r\n",
    b"*1\r\n$600000000\r\n",
    b"*1\r\n$4\r\nPING\r\n*x\r\n",
    b'SET "a b\r\n',
    b"SET 'a b\r\n",
    b"*1\r\n$4\r\nPING\r\nPING\r\n*1\r\n:5\r\n",
    b"*2\r\n$4\r\nECHO\r\n$1\r\nx\r\n*1\r\n$2\r\n01\r\n*1\r\n$01\r\nx\r\n",
]


@pytest.mark.parametrize("data", MALFORMED, ids=[repr(m)[:40] for m in MALFORMED])
def test_malformed_requests_close_with_valkeys_error(pair, data: bytes) -> None:  # type: ignore[no-untyped-def]
    v, t = both_until_closed(pair, data)
    assert t == v


def test_too_big_inline_request(pair) -> None:  # type: ignore[no-untyped-def]
    v, t = both_until_closed(pair, b"A" * (70 * 1024))
    assert v == t == b"-ERR Protocol error: too big inline request\r\n"


def test_too_big_mbulk_count_string(pair) -> None:  # type: ignore[no-untyped-def]
    v, t = both_until_closed(pair, b"*" + b"1" * (70 * 1024))
    assert t == v


def test_ignored_empty_requests(pair) -> None:  # type: ignore[no-untyped-def]
    data = b"*-1\r\n*0\r\n\r\n   \r\n*1\r\n$4\r\nPING\r\n"
    assert exchange(pair.t, data) == exchange(pair.v, data) == b"+PONG\r\n"


@pytest.mark.parametrize("data", [
    b"PING\r\n", b"PING\n", b"PING hello\r\n", b'ECHO "a\\x41\\n b"\r\n', b"ECHO 'it\\'s'\r\n",
    b"PING\r\nPING\r\nECHO x\r\n", b"*1\r\n$4\r\nPING\r\nPING\r\n", b"PING\r\n*2\r\n$4\r\nECHO\r\n$1\r\nz\r\n",
    b"ECHO \"\"\r\n", b"  ECHO   spaced   \r\n", b'ECHO "abc"def\r\n', b"ECHO 'a'b\r\n",
])
def test_inline_and_mixed(pair, data: bytes) -> None:  # type: ignore[no-untyped-def]
    assert exchange(pair.t, data) == exchange(pair.v, data)


def test_request_split_byte_by_byte(pair) -> None:  # type: ignore[no-untyped-def]
    data = encode("ECHO", "split\r\nacross") + b"PING\r\n" + encode("PING", "x")
    out = {}
    for name, w in (("v", pair.v), ("t", pair.t)):
        for i in range(len(data)):
            w.send_raw(data[i : i + 1])
            time.sleep(0.001)
        out[name] = [w.read_reply() for _ in range(3)]
    assert out["t"] == out["v"]


def test_ten_thousand_pipelined(pair) -> None:  # type: ignore[no-untyped-def]
    cmds = [("ECHO", str(i)) for i in range(10_000)]
    t = pair.t.pipeline(cmds)
    assert t == pair.v.pipeline(cmds)
    assert t[-1] == b"$4\r\n9999\r\n"


def test_binary_safe_arguments(pair23) -> None:  # type: ignore[no-untyped-def]
    pair23.check("ECHO", b"\r\n\x00\xff*1\r\n$3\r\n")


def test_disconnect_mid_request_leaves_server_serving(trafikey_server) -> None:  # type: ignore[no-untyped-def]
    for partial in (b"*3\r\n$3\r\nSET\r\n$1\r\n", b"PIN", b"*2\r\n$4\r\nECHO\r\n$100\r\nabc"):
        s = socket.create_connection(("127.0.0.1", trafikey_server.port))
        s.sendall(partial)
        s.close()
    w = Wire(trafikey_server.port)
    assert w.call("PING") == b"+PONG\r\n"
    w.close()


def test_other_connections_unaffected_by_protocol_error(trafikey_server) -> None:  # type: ignore[no-untyped-def]
    good = Wire(trafikey_server.port)
    bad = Wire(trafikey_server.port)
    bad.send_raw(b"*1\r\n$x\r\n")
    assert bad.read_until_closed().startswith(b"-ERR Protocol error")
    assert good.call("ECHO", "still here") == b"$10\r\nstill here\r\n"
    good.close()


# hiredis reads these items as plain bytes, like a bulk string; Valkey takes
# only '$' inside a request. The requests before the bad one are answered.
TYPED_ITEMS = [
    b"*1\r\n+PING\r\n",
    b"*2\r\n$4\r\nECHO\r\n=8\r\ntxt:PING\r\n",
    b"*2\r\n$4\r\nECHO\r\n(12345678901234567890\r\n",
    b"*1\r\n$4\r\nPING\r\n*2\r\n$4\r\nECHO\r\n+x\r\n*1\r\n$4\r\nPING\r\n",
]


@pytest.mark.parametrize("data", TYPED_ITEMS, ids=[repr(m)[:40] for m in TYPED_ITEMS])
def test_non_bulk_item_inside_request(pair, data: bytes) -> None:  # type: ignore[no-untyped-def]
    v, t = both_until_closed(pair, data)
    assert t == v
    assert b"expected '$', got" in v


def test_simple_string_after_a_read_boundary(pair) -> None:  # type: ignore[no-untyped-def]
    """The item's first byte arrives in a read of its own, right after a
    read that ended with the line before it."""
    for w in (pair.v, pair.t):
        w.send_raw(b"*2\r\n$4\r\nECHO\r\n")
    time.sleep(0.05)
    v, t = both_until_closed(pair, b"+abc\r\n")
    assert t == v == b"-ERR Protocol error: expected '$', got '+'\r\n"


@pytest.mark.parametrize("parts", [
    [b"*30000", b"00000\r\n"], [b"*1\r\n$6000", b"00000\r\n"], [b"*1\r\n$", b"600000000\r\n"],
    [b"*2\r\n$4\r\nECHO\r\n$1234", b"5678901234567\r\n"], [b"*", b"3000000000\r\n"],
], ids=["count", "bulk", "bulk-after-dollar", "long-bulk", "count-after-star"])
def test_too_long_length_split_across_reads(pair, parts: list[bytes]) -> None:  # type: ignore[no-untyped-def]
    """Refused as soon as its line is complete, as Valkey does, though no
    read holds the whole number."""
    for w in (pair.v, pair.t):
        w.send_raw(parts[0])
    time.sleep(0.05)
    v, t = both_until_closed(pair, parts[1])
    assert t == v
    assert v.startswith(b"-ERR Protocol error: invalid")


# Payloads holding those bytes after a newline are ordinary arguments; some
# reads end right after such a newline. (chunks, number of replies)
PAYLOAD_CHUNKS = [
    ([encode("ECHO", "a\n+b\n=c\n(d") + encode("PING")], 2),
    ([encode("SET", "k", "x\n") + b"*2\r\n$4\r\nECHO\r\n$3\r\nz\n", b"+\r\n" + encode("GET", "k")], 3),
    ([b"*2\r\n$4\r\nECHO\r\n$5\r\nab\r\n", b"=\r\n" + encode("PING")], 2),
    ([b"*2\r\n$4\r\nECHO\r\n$2\r\n(\n", b"\r\n" + encode("PING")], 2),
]


@pytest.mark.parametrize(("chunks", "replies"), PAYLOAD_CHUNKS, ids=["one-read", "split-plus", "split-equals", "paren"])
def test_payloads_that_look_like_items(pair, chunks: list[bytes], replies: int) -> None:  # type: ignore[no-untyped-def]
    out = {}
    for name, w in (("v", pair.v), ("t", pair.t)):
        for chunk in chunks:
            w.send_raw(chunk)
            time.sleep(0.02)
        out[name] = [w.read_reply() for _ in range(replies)]
        assert w.call("PING") == b"+PONG\r\n"
    assert out["t"] == out["v"]

"""Valkey's limits, byte for byte: framing checks, request sizes before AUTH,
the query and output buffer limits, idle timeout, maxclients, maxmemory and
protected mode. Each test runs the same bytes against Valkey 9.1.2 and
trafikey-server and compares what comes back; where Valkey's reply is not
observable (a close without a reply) the close and the INFO counter are
compared instead.
"""

from __future__ import annotations

import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import AbstractContextManager

import pytest
from helpers.emq_model import Queue
from helpers.resp_wire import Wire, encode
from helpers.servers import Proc, own_pair

from trafikey_server.services.limits import OOM, PROTECTED


def both_servers(*args: str) -> AbstractContextManager[tuple[Proc, Proc]]:
    """A Valkey and a trafikey-server of the test's own, both started with args."""
    return own_pair(args, args)


@pytest.fixture(scope="module")
def spare() -> Iterator[tuple[Proc, Proc]]:
    """A pair of servers whose configuration the tests change and restore."""
    with both_servers() as pair:
        yield pair


def until_closed(port: int, data: bytes, host: str = "127.0.0.1") -> bytes:
    w = Wire(port, host)
    try:
        return w.send_until_closed(data)
    finally:
        w.close()


def quiet(w: Wire, data: bytes, settle: float = 0.3) -> bytes:
    """What arrives after data until the line goes quiet (the connection stays open)."""
    w.send_raw(data)
    out = b""
    w.sock.settimeout(settle)
    while True:
        try:
            chunk = w.sock.recv(1 << 20)
        except TimeoutError:
            return out
        assert chunk, f"closed after {out!r}"
        out += chunk


def until_closed_or_quiet(w: Wire, data: bytes, closes: bool) -> bytes:
    if closes:
        return w.send_until_closed(data)
    return quiet(w, data)


def info_field(port: int, name: str) -> str:
    w = Wire(port)
    try:
        text = w.call("INFO", "everything").decode()
    finally:
        w.close()
    for line in text.split("\r\n"):
        if line.startswith(name + ":"):
            return line.split(":", 1)[1]
    raise AssertionError(f"no {name} in INFO")


def config_set(pair: tuple[Proc, Proc], name: str, value: str) -> None:
    for p in pair:
        w = Wire(p.port)
        try:
            assert w.call("CONFIG", "SET", name, value) == b"+OK\r\n"
        finally:
            w.close()


# -- framing: what Valkey 9.1 refuses, and what it waits for --------------------------

CLOSING = [
    b"*1\r\n$4\r\nPING\r\r*1\r\n$4\r\nPING\r\n",  # a bulk's CR not followed by LF
    b"*1\rx$4\r\nPING\r\n",  # a count line's CR not followed by LF
    b"*1\r\n$4\rxPING\r\n",  # a length line's CR not followed by LF
    b"*x\rx",
    b"*0\rx",
    b"*1\r\n$-1\rx",
    b"*1\r\n$99999999999\rx",
    b"PING\r\n*1\r\n$4\r\nPING\r\r",  # answered up to the bad request
    b"*1\r\nx4\rx",
    b"*2\r\n\r\r\n",  # the byte quoted in the error: a CR shows as a space
    b"*1\r\n\n$1\r\n",
    b"*2\r\n\x00\r\n",
    b"*2\r\n\x80\r\n",
    b"*1\r\n%1\r\n*1\r\n:1\r\n:2\r\n",  # a RESP3 map keyed by an array
    # Found by the fuzzer: an inline request, then a RESP3 map keyed by an array.
    b"\x01\r\n#YNG\x0c\n*1\r\n%2\r\n*2\r\n$\xc1\rH\r\x00\x00\x00\x00\x00$2\r\n*2\r",
    # Found by the fuzzer: a bulk's header CR before garbage.
    b"*3\r1\r*\x00\n\n$-5\r\x1aPI*3\r\n\x00*1\r\n$",
]


@pytest.mark.parametrize("data", CLOSING, ids=[repr(d)[:40] for d in CLOSING])
def test_malformed_framing_closes_as_valkey(pair, data: bytes) -> None:  # type: ignore[no-untyped-def]
    pair.v.send_raw(data)
    pair.t.send_raw(data)
    v, t = pair.v.read_until_closed(), pair.t.read_until_closed()
    assert v.startswith(b"-ERR Protocol error") or b"\r\n-ERR Protocol error" in v
    assert t == v


INLINE = [
    b"ECHO a\x0cb\r\n",  # a form feed does not end a word
    b"ECHO a\x0bb\r\n",
    b"\x0cECHO x\r\n",  # but is skipped between words
    b"ECHO \"a\"\x0c\r\n",
    b"ECHO a\tb\r\n",
]


@pytest.mark.parametrize("data", INLINE, ids=[repr(d)[:30] for d in INLINE])
def test_inline_words_split_as_valkey(pair, data: bytes) -> None:  # type: ignore[no-untyped-def]
    assert quiet(pair.t, data) == quiet(pair.v, data)


def test_nul_hides_an_inline_newline(pair) -> None:  # type: ignore[no-untyped-def]
    """Valkey finds an inline request's end with strchr: after a NUL the
    request is incomplete, however many lines follow, until it is too big."""
    data = b"ECHO a\x00b\r\nPING\r\n"
    assert quiet(pair.v, data) == b""
    assert quiet(pair.t, data) == b""
    rest = b"x" * (64 * 1024)
    pair.v.send_raw(rest)
    pair.t.send_raw(rest)
    v, t = pair.v.read_until_closed(), pair.t.read_until_closed()
    assert v == b"-ERR Protocol error: too big inline request\r\n"
    assert t == v


# -- proto-max-bulk-len -----------------------------------------------------------------

def test_proto_max_bulk_len_default(pair) -> None:  # type: ignore[no-untyped-def]
    data = b"*2\r\n$4\r\nECHO\r\n$536870913\r\n"
    pair.v.send_raw(data)
    pair.t.send_raw(data)
    v, t = pair.v.read_until_closed(), pair.t.read_until_closed()
    assert v == b"-ERR Protocol error: invalid bulk length\r\n"
    assert t == v
    # The limit itself is accepted: the server waits for the bytes.
    fresh_v, fresh_t = Wire(pair.v.sock.getpeername()[1]), Wire(pair.t.sock.getpeername()[1])
    try:
        assert quiet(fresh_v, b"*2\r\n$4\r\nECHO\r\n$536870912\r\n") == b""
        assert quiet(fresh_t, b"*2\r\n$4\r\nECHO\r\n$536870912\r\n") == b""
    finally:
        fresh_v.close()
        fresh_t.close()


def test_proto_max_bulk_len_set(spare: tuple[Proc, Proc]) -> None:
    config_set(spare, "proto-max-bulk-len", "1mb")
    try:
        over = b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1048577\r\n"
        v, t = (until_closed(p.port, over) for p in spare)
        assert v == b"-ERR Protocol error: invalid bulk length\r\n"
        assert t == v
        at = encode("SET", "k", b"x" * 1048576) + encode("STRLEN", "k")
        replies = []
        for p in spare:
            w = Wire(p.port)
            w.send_raw(at)
            replies.append((w.read_reply(), w.read_reply()))
            w.close()
        assert replies[0] == (b"+OK\r\n", b":1048576\r\n")
        assert replies[1] == replies[0]
    finally:
        config_set(spare, "proto-max-bulk-len", "512mb")


# -- before AUTH ----------------------------------------------------------------------

UNAUTH = [
    (b"*11\r\n" + b"$1\r\na\r\n" * 11, True),
    (b"*2\r\n$4\r\nECHO\r\n$16385\r\n" + b"a" * 16385 + b"\r\n", True),
    (b"*2\r\n$4\r\nECHO\r\n$16384\r\n" + b"a" * 16384 + b"\r\n", False),
    (b"*10\r\n" + b"$1\r\na\r\n" * 10, False),
    (b"PING " + b"a " * 100 + b"\r\n", False),
]


@pytest.fixture(scope="module")
def locked() -> Iterator[tuple[Proc, Proc]]:
    with both_servers("--requirepass", "s3cret") as pair:
        yield pair


@pytest.mark.parametrize(("data", "closes"), UNAUTH, ids=["count11", "bulk16385", "bulk16384", "count10", "inline"])
def test_unauthenticated_requests_are_small(locked: tuple[Proc, Proc], data: bytes, closes: bool) -> None:
    out = []
    for p in locked:
        w = Wire(p.port)
        try:
            out.append(until_closed_or_quiet(w, data, closes))
        finally:
            w.close()
    if closes:
        assert out[0].startswith(b"-ERR Protocol error: unauthenticated")
    else:
        assert out[0] == b"-NOAUTH Authentication required.\r\n"
    assert out[1] == out[0]


def test_after_auth_requests_may_be_long(locked: tuple[Proc, Proc]) -> None:
    data = encode("AUTH", "s3cret") + b"*2\r\n$4\r\nECHO\r\n$20000\r\n" + b"a" * 20000 + b"\r\n" + encode(
        "MSET", *[f"k{i}" for i in range(12)])
    out = []
    for p in locked:
        w = Wire(p.port)
        w.send_raw(data)
        out.append((w.read_reply(), w.read_reply(), w.read_reply()))
        w.close()
    assert out[0][0] == b"+OK\r\n" and out[0][1].startswith(b"$20000\r\n")
    assert out[1] == out[0]


# -- client-query-buffer-limit ----------------------------------------------------------

def test_query_buffer_limit_closes_without_reply(spare: tuple[Proc, Proc]) -> None:
    config_set(spare, "client-query-buffer-limit", "1mb")
    try:
        before = [int(info_field(p.port, "client_query_buffer_limit_disconnections")) for p in spare]
        partial = b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$3000000\r\n" + b"a" * 1200000
        v, t = (until_closed(p.port, partial) for p in spare)
        assert v == b""
        assert t == v
        after = [int(info_field(p.port, "client_query_buffer_limit_disconnections")) for p in spare]
        assert after[0] == before[0] + 1
        assert after[1] == before[1] + 1
        # Under the limit nothing happens.
        for p in spare:
            w = Wire(p.port)
            assert w.call("SET", "k", b"a" * 900000) == b"+OK\r\n"
            w.close()
    finally:
        config_set(spare, "client-query-buffer-limit", "1gb")


# -- client-output-buffer-limit -----------------------------------------------------------

def _flood_without_reading(port: int, deadline: float = 20.0) -> bool:
    """A client that asks for 100 KB replies and never reads them; True once
    the server has closed it."""
    w = Wire(port)
    assert w.call("SET", "big", b"v" * 100_000) == b"+OK\r\n"
    w.close()
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    s.connect(("127.0.0.1", port))
    s.settimeout(2)
    batch = encode("GET", "big") * 50
    end = time.monotonic() + deadline
    try:
        while time.monotonic() < end:
            s.sendall(batch)
            if info_disconnected(port):
                return True
            time.sleep(0.05)
        return False
    except OSError:
        return True  # reset: the server closed us
    finally:
        s.close()


def info_disconnected(port: int) -> bool:
    return int(info_field(port, "client_output_buffer_limit_disconnections")) > 0


def test_output_buffer_hard_limit_disconnects(spare: tuple[Proc, Proc]) -> None:
    config_set(spare, "client-output-buffer-limit", "normal 2mb 0 0")
    try:
        for p in spare:
            assert _flood_without_reading(p.port), p.argv[0]
            assert info_disconnected(p.port)
        w = Wire(spare[1].port)
        assert w.call("PING") == b"+PONG\r\n"  # everyone else is still served
        w.close()
    finally:
        config_set(spare, "client-output-buffer-limit", "normal 0 0 0")


def _no_reply(port: int, data: bytes) -> bytes:
    """What a client gets back for data before the server closes it."""
    w = Wire(port)
    try:
        return w.send_until_closed(data)
    finally:
        w.close()


@pytest.mark.parametrize("withvalues", [(), ("WITHVALUES",)])
def test_replies_past_the_hard_limit_are_never_sent(spare: tuple[Proc, Proc], withvalues: tuple[str, ...]) -> None:
    """A reply, a pipeline's replies, a transaction's reply or an unbounded
    random pick that passes the normal class's hard limit: the client is
    closed with nothing sent (the transaction ran whole), counted once
    each, and the server goes on."""
    config_set(spare, "client-output-buffer-limit", "normal 100000 0 0")
    try:
        seen = []
        for p in spare:
            ctl = Wire(p.port)
            ctl.call("CONFIG", "RESETSTAT")
            ctl.call("DEL", "big", "bigkey", "h", "s", "z", "k1", "k2")
            for _ in range(150):
                ctl.call("LPUSH", "big", "x" * 1000)
            ctl.call("SET", "bigkey", "x" * 10000)
            ctl.call("HSET", "h", "a", "b")
            ctl.call("SADD", "s", "a")
            ctl.call("ZADD", "z", "1", "a")
            got = [
                _no_reply(p.port, encode("LRANGE", "big", 0, -1)),
                _no_reply(p.port, b"".join(encode("SET", "k", i) + encode("GET", "bigkey") for i in range(15))),
                _no_reply(p.port, encode("MULTI") + encode("SET", "k1", "v1") + encode("LRANGE", "big", 0, -1)
                          + encode("SET", "k2", "v2") + encode("EXEC")),
                _no_reply(p.port, encode("HRANDFIELD", "h", -999999999, *withvalues)),
                _no_reply(p.port, encode("SRANDMEMBER", "s", -999999999)),
                _no_reply(p.port, encode("ZRANDMEMBER", "z", -999999999, *(("WITHSCORES",) if withvalues else ()))),
            ]
            seen.append((got, info_field(p.port, "client_output_buffer_limit_disconnections"),
                         ctl.call("MGET", "k1", "k2"), ctl.call("HRANDFIELD", "h", -3)))
            ctl.close()
        assert seen[0] == seen[1]
        assert seen[1][0] == [b""] * 6 and seen[1][1] == "6", seen[1]
        assert seen[1][2] == b"*2\r\n$2\r\nv1\r\n$2\r\nv2\r\n"
    finally:
        config_set(spare, "client-output-buffer-limit", "normal 0 0 0")


@pytest.mark.slow
def test_output_buffer_soft_limit_disconnects_after_its_seconds() -> None:
    with both_servers("--client-output-buffer-limit", "normal 0 1mb 1") as pair:
        for p in pair:
            assert _flood_without_reading(p.port), p.argv[0]


# -- timeout --------------------------------------------------------------------------------

def test_idle_clients_are_closed_after_timeout(spare: tuple[Proc, Proc]) -> None:
    config_set(spare, "timeout", "1")
    try:
        out = []
        for p in spare:
            w = Wire(p.port)
            assert w.call("PING") == b"+PONG\r\n"
            out.append(w.read_until_closed(timeout=8.0))
            w.close()
        assert out == [b"", b""]
    finally:
        config_set(spare, "timeout", "0")


# -- maxclients -------------------------------------------------------------------------------

def test_maxclients_reply_then_close(spare: tuple[Proc, Proc]) -> None:
    for p in spare:
        admin = Wire(p.port)
        assert admin.call("CONFIG", "SET", "maxclients", "2") == b"+OK\r\n"
        second = Wire(p.port)
        assert second.call("PING") == b"+PONG\r\n"
        third = Wire(p.port)
        assert third.read_until_closed() == b"-ERR max number of clients reached\r\n"
        third.close()
        second.close()
        assert admin.call("PING") == b"+PONG\r\n"
        assert admin.call("CONFIG", "SET", "maxclients", "10000") == b"+OK\r\n"
        admin.close()
    rejected = [int(info_field(p.port, "rejected_connections")) for p in spare]
    assert rejected[0] >= 1
    assert rejected[1] == rejected[0]


# -- maxmemory --------------------------------------------------------------------------------

def test_maxmemory_refuses_deny_oom_commands(spare: tuple[Proc, Proc]) -> None:
    script = [
        ("SET", "k", "v"),
        ("GET", "k"),
        ("DEL", "k"),
        ("INCR", "n"),
        ("HSET", "h", "f", "v"),
        ("ZADD", "z", "1", "m"),
        ("MULTI",),
        ("GET", "k"),
        ("EXEC",),
        ("MULTI",),
        ("PING",),
        ("DISCARD",),
        ("MULTI",),
        ("GET", "k"),
        ("SET", "k", "v"),
        ("EXEC",),
    ]
    out = []
    for p in spare:
        w = Wire(p.port)
        assert w.call("SET", "k", "before") == b"+OK\r\n"
        assert w.call("CONFIG", "SET", "maxmemory", "1") == b"+OK\r\n"
        try:
            out.append([w.call(*cmd) for cmd in script])
        finally:
            assert w.call("CONFIG", "SET", "maxmemory", "0") == b"+OK\r\n"
            assert w.call("SET", "k", "after") == b"+OK\r\n"
            w.close()
    assert out[0][0] == b"-" + OOM + b"\r\n"
    assert out[1] == out[0]


def test_maxmemory_aborts_exec_holding_a_deny_oom_command(spare: tuple[Proc, Proc]) -> None:
    """Queued while under the limit, refused at EXEC once over it."""
    out = []
    for p in spare:
        w, admin = Wire(p.port), Wire(p.port)
        try:
            replies = [w.call("MULTI"), w.call("SET", "k", "v"), w.call("GET", "k")]
            assert admin.call("CONFIG", "SET", "maxmemory", "1") == b"+OK\r\n"
            replies += [w.call("EXEC"), w.call("MULTI"), w.call("GET", "k"), w.call("EXEC")]
            out.append(replies)
        finally:
            assert admin.call("CONFIG", "SET", "maxmemory", "0") == b"+OK\r\n"
            w.close()
            admin.close()
    assert out[0][3].startswith(b"-EXECABORT")
    assert out[1] == out[0]


def test_maxmemory_refuses_job_enqueue_and_schedule(spare: tuple[Proc, Proc]) -> None:
    q = Queue(b"emq:{oom}:")
    enqueue = q.request("EMQ.ENQUEUE", b"j1", b"payload")
    schedule = q.request("EMQ.SCHEDULE", b"j2", b"payload", 1000)
    w = Wire(spare[1].port)
    try:
        assert w.call("CONFIG", "SET", "maxmemory", "1") == b"+OK\r\n"
        refused = b"-" + OOM + b"\r\n"
        assert w.call(*enqueue) == refused
        assert w.call(*schedule) == refused
        assert w.call("EXISTS", q.row(b"j1"), q.row(b"j2")) == b":0\r\n"
        assert w.call("CONFIG", "SET", "maxmemory", "0") == b"+OK\r\n"
        # Without the limit the same requests are taken.
        assert w.call(*enqueue) == b"$2\r\nj1\r\n"
        assert w.call(*schedule) == b"$2\r\nj2\r\n"
    finally:
        w.call("CONFIG", "SET", "maxmemory", "0")
        w.close()


def test_deny_oom_rows_include_the_job_core() -> None:
    from trafikey_server.protocol.table import default_table

    table = default_table()
    for name in (b"emq.enqueue", b"emq.schedule", b"set", b"incr", b"hset", b"zadd"):
        assert table.commands[name].denyoom, name
    for name in (b"get", b"del", b"emq.complete", b"emq.claim"):
        assert not table.commands[name].denyoom, name


# -- protected mode ----------------------------------------------------------------------------

def _outside_address() -> str | None:
    """An address of this machine that is not loopback."""
    try:
        words = subprocess.run(["hostname", "-I"], capture_output=True, text=True, timeout=5).stdout.split()
    except (OSError, subprocess.SubprocessError):
        words = []
    for w in words:
        if "." in w and not w.startswith("127."):
            return w
    return None


OUTSIDE = _outside_address()
needs_outside = pytest.mark.skipif(OUTSIDE is None, reason="no non-loopback IPv4 address on this machine")


@needs_outside
def test_protected_mode_refuses_non_loopback_clients() -> None:
    assert OUTSIDE is not None
    with both_servers("--bind", f"127.0.0.1 {OUTSIDE}") as pair:
        out = []
        for p in pair:
            s = socket.create_connection((OUTSIDE, p.port), source_address=(OUTSIDE, 0))
            assert s.getsockname()[0] == OUTSIDE
            s.settimeout(5)
            s.sendall(encode("PING"))
            got = b""
            while True:
                try:
                    chunk = s.recv(65536)
                except ConnectionResetError:
                    break
                if not chunk:
                    break
                got += chunk
            s.close()
            out.append(got)
            w = Wire(p.port)  # loopback is still served
            assert w.call("PING") == b"+PONG\r\n"
            w.close()
        assert out[0] == PROTECTED
        assert out[1] == out[0]


@needs_outside
@pytest.mark.parametrize("args", [("--requirepass", "pw"), ("--protected-mode", "no")], ids=["password", "off"])
def test_protected_mode_lets_non_loopback_in_with_password_or_off(args: tuple[str, str]) -> None:
    assert OUTSIDE is not None
    with both_servers("--bind", f"127.0.0.1 {OUTSIDE}", *args) as pair:
        out = []
        for p in pair:
            w = Wire(p.port, OUTSIDE)
            out.append(w.call("PING"))
            w.close()
        assert out[0] in (b"+PONG\r\n", b"-NOAUTH Authentication required.\r\n")
        assert out[1] == out[0]


# -- found by the fuzzer: lengths cut into many short reads ------------------------------------

SPLIT = [
    [b"*", b"2", b"1474", b"83648", b"\r\n"],  # over INT_MAX: refused, never allocated
    [b"*1\r\n$", b"5368", b"70913", b"\r\n"],  # over proto-max-bulk-len
    [b"*2\r\n$1\r\na\r\n~", b"2147", b"483647\r\n"],  # a RESP3 set header inside a request
    [b"*2\r\n$1\r\na\r\n|", b"2147", b"483647\r\n"],  # an attribute header inside a request
]


@pytest.mark.parametrize("reads", SPLIT, ids=["count", "bulk", "set", "attribute"])
def test_lengths_split_across_reads(pair, reads: list[bytes]) -> None:  # type: ignore[no-untyped-def]
    for w in (pair.v, pair.t):
        w.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    for chunk in reads:
        pair.v.send_raw(chunk)
        pair.t.send_raw(chunk)
        time.sleep(0.02)  # separate segments, so that the server sees separate reads
    v, t = pair.v.read_until_closed(), pair.t.read_until_closed()
    assert v.startswith(b"-ERR Protocol error")
    assert t == v

"""The connection-level conversations of the suite over each transport.

Each test runs over tcp, unix and tls (the ``transport`` parameter) against
one trafikey-server listening all three ways, and compares every reply with
Valkey 9.1.2's: over the same transport for tcp and unix (Valkey listens on
a unix socket of its own), over TCP for tls (the oracle is built without
TLS; TLS changes how bytes travel, never which bytes a reply has).
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Iterator

import pytest
import redis
import redis.asyncio
from helpers.resp_wire import Wire, encode, wait_blocked
from helpers.transports import Endpoints, dial, redis_kwargs


class Both:
    """A connection to each server over the test's transport."""

    def __init__(self, net: Endpoints, oracle: Endpoints, transport: str) -> None:
        self.net, self.oracle, self.transport = net, oracle, transport
        self.opened: list[Wire] = []

    def open(self) -> tuple[Wire, Wire]:
        t = dial(self.net, self.transport)
        v = dial(self.oracle, "tcp" if self.transport == "tls" else self.transport)
        self.opened += [t, v]
        return t, v

    def close(self) -> None:
        for w in self.opened:
            try:
                w.close()
            except OSError:
                pass


@pytest.fixture
def both(net: Endpoints, oracle: Endpoints, transport: str) -> Iterator[Both]:
    b = Both(net, oracle, transport)
    t, v = b.open()
    assert t.call("FLUSHALL") == v.call("FLUSHALL") == b"+OK\r\n"
    yield b
    b.close()


def assert_same(t: Wire, v: Wire, *cmd: object) -> bytes:
    want = v.call(*cmd)  # type: ignore[arg-type]
    got = t.call(*cmd)  # type: ignore[arg-type]
    assert got == want, cmd
    return got


def test_ping_echo(both: Both) -> None:
    t, v = both.open()
    assert assert_same(t, v, "PING") == b"+PONG\r\n"
    assert_same(t, v, "PING", "hello")
    assert_same(t, v, "ECHO", b"bin\r\n\x00\xff")
    for w in (t, v):
        w.send_raw(b"PING\r\necho inline\r\n")
    assert [t.read_reply(), t.read_reply()] == [v.read_reply(), v.read_reply()]


def _mask_id(reply: bytes) -> bytes:
    return re.sub(rb"\$2\r\nid\r\n:\d+", b"$2\r\nid\r\n:N", reply)


def test_hello3_and_resp3_replies(both: Both) -> None:
    t, v = both.open()
    ht, hv = t.call("HELLO", "3"), v.call("HELLO", "3")
    assert ht.startswith(b"%7\r\n")
    assert _mask_id(ht) == _mask_id(hv)
    assert_same(t, v, "HSET", "h", "a", "1", "b", "2")
    assert assert_same(t, v, "HGETALL", "h").startswith(b"%2\r\n")
    assert_same(t, v, "ZADD", "z", "1.5", "m")
    assert assert_same(t, v, "ZSCORE", "z", "m") == b",1.5\r\n"
    assert_same(t, v, "SADD", "s", "x")
    assert assert_same(t, v, "SMEMBERS", "s") == b"~1\r\n$1\r\nx\r\n"
    assert_same(t, v, "GET", "missing")


def test_auth_with_requirepass(both: Both) -> None:
    admin_t, admin_v = both.open()
    try:
        assert_same(admin_t, admin_v, "CONFIG", "SET", "requirepass", "s3cret")
        t, v = both.open()
        assert assert_same(t, v, "PING").startswith(b"-NOAUTH")
        assert assert_same(t, v, "AUTH", "wrong").startswith(b"-WRONGPASS")
        assert_same(t, v, "AUTH", "s3cret")
        assert_same(t, v, "PING")
        t2, v2 = both.open()
        assert_same(t2, v2, "HELLO", "3", "AUTH", "default", "nope")
        assert _mask_id(t2.call("HELLO", "3", "AUTH", "default", "s3cret")) == _mask_id(
            v2.call("HELLO", "3", "AUTH", "default", "s3cret"))
    finally:
        assert_same(admin_t, admin_v, "CONFIG", "SET", "requirepass", "")


def test_pipeline_of_1000_and_a_1mb_value(both: Both) -> None:
    t, v = both.open()
    cmds: list[tuple] = []
    for i in range(1000):
        cmds.append(("SET", f"k{i}", f"v{i}") if i % 3 == 0 else ("INCR", f"n{i % 7}") if i % 3 == 1
                    else ("GET", f"k{i - 2}"))
    assert t.pipeline(cmds) == v.pipeline(cmds)
    big = bytes(range(256)) * 4096  # 1 MiB: many TLS records each way
    assert_same(t, v, "SET", "big", big)
    got = assert_same(t, v, "GET", "big")
    assert got == b"$%d\r\n%s\r\n" % (len(big), big)
    assert_same(t, v, "STRLEN", "big")
    # Requests and the big reply interleaved in one write.
    raw = encode("GET", "big") * 3 + encode("PING")
    for w in (t, v):
        w.send_raw(raw)
    assert [t.read_reply() for _ in range(4)] == [v.read_reply() for _ in range(4)]


@pytest.mark.parametrize("proto", [2, 3])
def test_pubsub_push_frames(both: Both, proto: int) -> None:
    sub_t, sub_v = both.open()
    pub_t, pub_v = both.open()
    if proto == 3:
        sub_t.call("HELLO", "3")
        sub_v.call("HELLO", "3")
    assert_same(sub_t, sub_v, "SUBSCRIBE", "ch", "other")
    assert sub_t.read_reply() == sub_v.read_reply()  # the second confirmation
    assert_same(sub_t, sub_v, "PSUBSCRIBE", "c*")
    assert assert_same(pub_t, pub_v, "PUBLISH", "ch", "hello") == b":2\r\n"
    for _ in range(2):  # message, then pmessage
        assert sub_t.read_reply() == sub_v.read_reply()
    assert_same(sub_t, sub_v, "PING")


def test_blpop_woken_by_another_client(both: Both) -> None:
    waiter_t, waiter_v = both.open()
    pusher_t, pusher_v = both.open()
    for w in (waiter_t, waiter_v):
        w.send_raw(encode("BLPOP", "q", "5"))
    wait_blocked(pusher_t)
    wait_blocked(pusher_v)
    assert_same(pusher_t, pusher_v, "RPUSH", "q", "a", "b")
    assert waiter_t.read_reply() == waiter_v.read_reply() == b"*2\r\n$1\r\nq\r\n$1\r\na\r\n"
    assert_same(pusher_t, pusher_v, "LRANGE", "q", "0", "-1")


def test_multi_exec(both: Both) -> None:
    t, v = both.open()
    assert_same(t, v, "MULTI")
    assert_same(t, v, "SET", "a", "1")
    assert_same(t, v, "INCR", "a")
    assert_same(t, v, "LPUSH", "a", "x")
    assert assert_same(t, v, "EXEC").startswith(b"*3\r\n+OK\r\n:2\r\n-WRONGTYPE")
    assert_same(t, v, "WATCH", "w")
    other_t, other_v = both.open()
    assert_same(other_t, other_v, "SET", "w", "1")
    assert_same(t, v, "MULTI")
    assert_same(t, v, "GET", "w")
    assert assert_same(t, v, "EXEC") == b"*-1\r\n"


def _fields(line: bytes) -> dict[str, str]:
    return dict(f.split("=", 1) for f in line.decode().strip().split(" "))


def _expected_addrs(ep: Endpoints, transport: str, w: Wire) -> tuple[str, str]:
    if transport == "unix":
        # Valkey 9.1.2's shape: the path with ":0", taken for a host, then port 0.
        return f"[{ep.unix}:0]:0", f"[{ep.unix}:0]:0"
    here, there = w.sock.getsockname(), w.sock.getpeername()
    return f"{here[0]}:{here[1]}", f"{there[0]}:{there[1]}"


def test_client_list_and_info_addr_fields(both: Both, transport: str) -> None:
    t, v = both.open()
    for w, ep in ((t, both.net), (v, both.oracle)):
        info = w.call("CLIENT", "INFO")
        fields = _fields(info[info.index(b"\r\n") + 2:-2])
        kind = "tcp" if ep is both.oracle and transport == "tls" else transport
        assert (fields["addr"], fields["laddr"]) == _expected_addrs(ep, kind, w)
        listed = w.call("CLIENT", "LIST", "ID", fields["id"])
        listed_fields = _fields(listed[listed.index(b"\r\n") + 2:-2])
        assert (listed_fields["addr"], listed_fields["laddr"]) == (fields["addr"], fields["laddr"])
        assert list(listed_fields) == list(fields)
    ti, vi = (_fields(w.call("CLIENT", "INFO").split(b"\r\n", 1)[1]) for w in (t, v))
    assert list(ti) == list(vi)  # the same fields, in the same order
    assert ti["flags"] == vi["flags"]  # "U" for a unix socket's client, as Valkey sets it
    if transport == "unix":
        assert ti["flags"] == "U"
        # CLIENT LIST filters by the address Valkey writes for a unix client.
        mine = f"[{both.net.unix}:0]:0"
        theirs = f"[{both.oracle.unix}:0]:0"
        got = t.call("CLIENT", "LIST", "ADDR", mine)
        want = v.call("CLIENT", "LIST", "ADDR", theirs)
        for reply, addr in ((got, mine), (want, theirs)):
            lines = [line for line in reply.split(b"\r\n", 1)[1].split(b"\n") if line.strip()]
            assert lines and all(f" addr={addr} ".encode() in line for line in lines)


def test_client_kill(both: Both) -> None:
    victim_t, victim_v = both.open()
    killer_t, killer_v = both.open()
    ids = [int(w.call("CLIENT", "ID")[1:-2]) for w in (victim_t, victim_v)]
    assert killer_t.call("CLIENT", "KILL", "ID", ids[0]) == killer_v.call("CLIENT", "KILL", "ID", ids[1]) == b":1\r\n"
    assert victim_t.read_until_closed() == victim_v.read_until_closed() == b""
    assert_same(killer_t, killer_v, "PING")


def test_quit(both: Both) -> None:
    t, v = both.open()
    for w in (t, v):
        w.send_raw(encode("QUIT") + encode("PING"))
    assert t.read_until_closed() == v.read_until_closed() == b"+OK\r\n"


def test_client_closing_mid_request(both: Both) -> None:
    t, v = both.open()
    for w in (t, v):
        w.send_raw(b"*3\r\n$3\r\nSET\r\n$4\r\nhalf\r\n$10\r\nabc")
        w.close()
    t, v = both.open()
    assert assert_same(t, v, "EXISTS", "half") == b":0\r\n"
    assert_same(t, v, "PING")


def test_protocol_error_closes_the_connection(both: Both) -> None:
    t, v = both.open()
    for w in (t, v):
        w.send_raw(encode("SET", "before", "1") + b"*1\r\n$x\r\n" + encode("SET", "after", "1"))
    got, want = t.read_until_closed(), v.read_until_closed()
    assert got == want == b"+OK\r\n-ERR Protocol error: invalid bulk length\r\n"
    t, v = both.open()
    assert assert_same(t, v, "EXISTS", "before", "after") == b":1\r\n"


def test_redis_py_sync(net: Endpoints, transport: str) -> None:
    for proto in (2, 3):
        r = redis.Redis(**redis_kwargs(net, transport), protocol=proto)
        try:
            assert r.ping() is True
            r.set("py", "v")
            assert r.get("py") == b"v"
            with r.pipeline() as p:
                p.incr("pyn").incr("pyn").get("pyn")
                assert p.execute()[-1] == b"2"
            r.delete("pyn")
            ps = r.pubsub()
            ps.subscribe("pych")
            assert ps.get_message(timeout=5)["type"] == "subscribe"
            r.publish("pych", "m")
            msg = ps.get_message(timeout=5)
            assert msg is not None and msg["data"] == b"m"
            ps.close()
        finally:
            r.close()


def test_redis_py_asyncio(net: Endpoints, transport: str) -> None:
    async def go() -> None:
        r = redis.asyncio.Redis(**redis_kwargs(net, transport), protocol=3)
        try:
            assert await r.ping() is True
            await r.set("apy", "v")
            assert await r.get("apy") == b"v"
            results = await asyncio.gather(*(r.incr("acount") for _ in range(50)))
            assert sorted(results) == list(range(1, 51))
            await r.delete("acount")
        finally:
            await r.aclose()

    asyncio.run(go())

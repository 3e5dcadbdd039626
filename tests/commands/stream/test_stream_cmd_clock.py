"""The stream commands read the server's clock (TRAFIKEY.CLOCK): with it
frozen, XADD's generated IDs, delivery times, idle and inactive times and
BLOCK deadlines are exact and repeatable, as Valkey's command time
snapshot makes them within one command."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from helpers.resp_wire import Wire, encode, wait_blocked
from helpers.servers import Proc

T = 1_700_000_000_000


@pytest.fixture
def w(emq_server: Proc) -> Iterator[Wire]:
    wire = Wire(emq_server.port)
    wire.call("FLUSHALL")
    assert wire.call("TRAFIKEY.CLOCK", "FREEZE", str(T)) == b":%d\r\n" % T
    yield wire
    wire.call("TRAFIKEY.CLOCK", "RELEASE")
    wire.close()


def _id(ms: int, seq: int) -> bytes:
    text = b"%d-%d" % (ms, seq)
    return b"$%d\r\n%s\r\n" % (len(text), text)


def test_generated_ids_follow_the_frozen_clock(w: Wire) -> None:
    assert w.call("XADD", "s", "*", "f", "v") == _id(T, 0)
    assert w.call("XADD", "s", "*", "f", "v") == _id(T, 1)
    assert w.call("XADD", "s", "%d-*" % T, "f", "v") == _id(T, 2)
    w.call("TRAFIKEY.CLOCK", "ADVANCE", "5")
    assert w.call("XADD", "s", "*", "f", "v") == _id(T + 5, 0)
    # A clock behind the last ID keeps counting on from it.
    assert w.call("XADD", "s", "%d-0" % (T + 100), "f", "v") == _id(T + 100, 0)
    assert w.call("XADD", "s", "*", "f", "v") == _id(T + 100, 1)


def test_delivery_idle_and_consumer_times(w: Wire) -> None:
    w.call("XADD", "s", "1-0", "f", "v")
    w.call("XADD", "s", "2-0", "f", "v")
    w.call("XGROUP", "CREATE", "s", "g", "0")
    w.call("XGROUP", "CREATECONSUMER", "s", "g", "idler")
    w.call("XREADGROUP", "GROUP", "g", "alice", "STREAMS", "s", ">")
    w.call("TRAFIKEY.CLOCK", "ADVANCE", "250")
    assert w.call("XPENDING", "s", "g", "-", "+", "10") == (
        b"*2\r\n*4\r\n$3\r\n1-0\r\n$5\r\nalice\r\n:250\r\n:1\r\n*4\r\n$3\r\n2-0\r\n$5\r\nalice\r\n:250\r\n:1\r\n")
    assert w.call("XINFO", "CONSUMERS", "s", "g") == (
        b"*2\r\n*8\r\n$4\r\nname\r\n$5\r\nalice\r\n$7\r\npending\r\n:2\r\n$4\r\nidle\r\n:250\r\n"
        b"$8\r\ninactive\r\n:250\r\n"
        b"*8\r\n$4\r\nname\r\n$5\r\nidler\r\n$7\r\npending\r\n:0\r\n$4\r\nidle\r\n:250\r\n$8\r\ninactive\r\n:-1\r\n")
    # IDLE sets the delivery time that far back, TIME sets it outright.
    w.call("XCLAIM", "s", "g", "bob", "0", "1-0", "IDLE", "100")
    w.call("XCLAIM", "s", "g", "bob", "0", "2-0", "TIME", str(T + 10))
    assert w.call("XPENDING", "s", "g", "IDLE", "200", "-", "+", "10") == (
        b"*1\r\n*4\r\n$3\r\n2-0\r\n$3\r\nbob\r\n:240\r\n:2\r\n")
    full = w.call("XINFO", "STREAM", "s", "FULL")
    assert b"$3\r\n1-0\r\n$3\r\nbob\r\n:%d\r\n:2\r\n" % (T + 150) in full
    assert b"$9\r\nseen-time\r\n:%d\r\n$11\r\nactive-time\r\n:%d\r\n" % (T + 250, T + 250) in full
    assert b"$9\r\nseen-time\r\n:%d\r\n$11\r\nactive-time\r\n:-1\r\n" % T in full
    # A history read renews the delivery time and counts a delivery.
    w.call("TRAFIKEY.CLOCK", "ADVANCE", "50")
    w.call("XREADGROUP", "GROUP", "g", "bob", "STREAMS", "s", "0")
    assert w.call("XPENDING", "s", "g", "-", "+", "10", "bob") == (
        b"*2\r\n*4\r\n$3\r\n1-0\r\n$3\r\nbob\r\n:0\r\n:3\r\n*4\r\n$3\r\n2-0\r\n$3\r\nbob\r\n:0\r\n:3\r\n")


def test_block_deadline_on_the_frozen_clock(emq_server: Proc, w: Wire) -> None:
    waiter = Wire(emq_server.port)
    try:
        w.call("XGROUP", "CREATE", "s", "g", "$", "MKSTREAM")
        waiter.send_raw(encode("XREADGROUP", "GROUP", "g", "c", "BLOCK", "1000", "STREAMS", "s", ">"))
        wait_blocked(w, 1)
        w.call("TRAFIKEY.CLOCK", "ADVANCE", "1000")
        assert w.call("PING") == b"+PONG\r\n"
        wait_blocked(w, 1)  # the deadline's own millisecond still waits
        w.call("TRAFIKEY.CLOCK", "ADVANCE", "1")
        assert waiter.read_reply() == b"*-1\r\n"
        wait_blocked(w, 0)
    finally:
        waiter.close()

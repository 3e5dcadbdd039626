"""Blocked XREAD and XREADGROUP against Valkey: served by an XADD to a key
that already holds entries (not only by its creation), ``$`` read when the
client blocked, the timeout's null in RESP2 and RESP3, an immediate answer
inside MULTI and scripts, and a blocked XREADGROUP answering with Valkey's
error when its key is deleted, replaced or renamed over, the database
flushed or its group destroyed. Each scenario runs on both servers with a
waiting client and a writer; replies must match byte for byte."""

from __future__ import annotations

import pytest
from helpers.resp_wire import Wire, encode, wait_blocked
from helpers.servers import Proc


def _scenario(port: int, proto: int, setup: list[tuple], block: tuple, then: list[tuple]) -> list[bytes]:
    ctl, waiter = Wire(port), Wire(port)
    if proto == 3:
        waiter.call("HELLO", "3")
    out = [ctl.call("FLUSHALL")]
    out += [ctl.call(*req) for req in setup]
    waiter.send_raw(encode(*block))
    wait_blocked(ctl, 1)
    out += [ctl.call(*req) for req in then]
    out.append(waiter.read_reply())
    out.append(waiter.call("PING"))  # the waiter's pipeline goes on
    wait_blocked(ctl, 0)
    ctl.close()
    waiter.close()
    return out


SCENARIOS = {
    "xread-served-by-xadd-to-existing-stream": (
        [("XADD", "s", "1-0", "a", "1")], ("XREAD", "BLOCK", "0", "STREAMS", "s", "$"),
        [("XADD", "s", "2-0", "b", "2")]),
    "xread-dollar-is-the-last-id-when-blocking": (
        [("XADD", "s", "1-0", "a", "1")], ("XREAD", "BLOCK", "0", "STREAMS", "s", "$"),
        [("MULTI",), ("XADD", "s", "2-0", "b", "2"), ("XADD", "s", "3-0", "c", "3"), ("EXEC",)]),
    "xread-missing-key-created": (
        [], ("XREAD", "BLOCK", "0", "COUNT", "1", "STREAMS", "nokey", "other", "$", "$"),
        [("XADD", "other", "5-0", "x", "y"), ("XADD", "other", "6-0", "x", "y")]),
    "xread-not-woken-by-a-list": (
        [], ("XREAD", "BLOCK", "0", "STREAMS", "s", "0"),
        [("LPUSH", "s", "x"), ("DEL", "s"), ("XADD", "s", "7-0", "k", "v")]),
    "xread-woken-by-xadd-in-a-script": (
        [("XADD", "s", "1-0", "a", "1")], ("XREAD", "BLOCK", "0", "STREAMS", "s", "$"),
        [("EVAL", "return redis.call('xadd', KEYS[1], '9-0', 'f', 'v')", "1", "s")]),
    "xreadgroup-served-by-xadd": (
        [("XGROUP", "CREATE", "s", "g", "$", "MKSTREAM")], ("XREADGROUP", "GROUP", "g", "c", "BLOCK", "0",
                                                            "STREAMS", "s", ">"),
        [("XADD", "s", "1-0", "a", "1"), ("XPENDING", "s", "g"), ("XINFO", "GROUPS", "s")]),
    "xreadgroup-noack-served-by-xadd": (
        [("XGROUP", "CREATE", "s", "g", "$", "MKSTREAM")], ("XREADGROUP", "GROUP", "g", "c", "NOACK", "BLOCK",
                                                            "0", "STREAMS", "s", ">"),
        [("XADD", "s", "1-0", "a", "1"), ("XPENDING", "s", "g")]),
    "xreadgroup-key-deleted": (
        [("XGROUP", "CREATE", "s", "g", "$", "MKSTREAM")], ("XREADGROUP", "GROUP", "g", "c", "BLOCK", "0",
                                                            "STREAMS", "s", ">"),
        [("DEL", "s")]),
    "xreadgroup-group-destroyed": (
        [("XGROUP", "CREATE", "s", "g", "$", "MKSTREAM")], ("XREADGROUP", "GROUP", "g", "c", "BLOCK", "0",
                                                            "STREAMS", "s", ">"),
        [("XGROUP", "DESTROY", "s", "g")]),
    "xreadgroup-key-overwritten": (
        [("XGROUP", "CREATE", "s", "g", "$", "MKSTREAM")], ("XREADGROUP", "GROUP", "g", "c", "BLOCK", "0",
                                                            "STREAMS", "s", ">"),
        [("SET", "s", "x")]),
    "xreadgroup-renamed-over": (
        [("XGROUP", "CREATE", "s", "g", "$", "MKSTREAM"), ("XADD", "t", "1-0", "a", "b")],
        ("XREADGROUP", "GROUP", "g", "c", "BLOCK", "0", "STREAMS", "s", ">"), [("RENAME", "t", "s")]),
    "xreadgroup-database-flushed": (
        [("XGROUP", "CREATE", "s", "g", "$", "MKSTREAM")], ("XREADGROUP", "GROUP", "g", "c", "BLOCK", "0",
                                                            "STREAMS", "s", ">"),
        [("FLUSHDB",)]),
    "xreadgroup-group-recreated-in-a-transaction": (
        [("XGROUP", "CREATE", "s", "g", "$", "MKSTREAM")], ("XREADGROUP", "GROUP", "g", "c", "BLOCK", "0",
                                                            "STREAMS", "s", ">"),
        [("MULTI",), ("DEL", "s"), ("XGROUP", "CREATE", "s", "g", "$", "MKSTREAM"), ("XADD", "s", "3-0", "k", "v"),
         ("EXEC",)]),
    "xread-short-timeout": (
        [("XADD", "s", "1-0", "a", "1")], ("XREAD", "BLOCK", "1", "STREAMS", "s", "$"), []),
    "xreadgroup-short-timeout": (
        [("XGROUP", "CREATE", "s", "g", "$", "MKSTREAM")], ("XREADGROUP", "GROUP", "g", "c", "BLOCK", "1",
                                                            "STREAMS", "s", ">"), []),
}


@pytest.mark.parametrize("proto", [2, 3], ids=["resp2", "resp3"])
@pytest.mark.parametrize("name", list(SCENARIOS))
def test_blocked_stream_reads_match_valkey(valkey_server: Proc, trafikey_server: Proc, name: str, proto: int) -> None:
    setup, block, then = SCENARIOS[name]
    if name.endswith("short-timeout"):
        # Nothing comes: the timeout answers (the client may still be
        # blocked or already answered when counted, so do not count it).
        got = []
        for port in (valkey_server.port, trafikey_server.port):
            w = Wire(port)
            if proto == 3:
                w.call("HELLO", "3")
            w.call("FLUSHALL")
            for req in setup:
                w.call(*req)
            got.append((w.call(*block), w.call("PING")))
            w.close()
        assert got[1] == got[0]
        assert got[0][0] == (b"*-1\r\n" if proto == 2 else b"_\r\n")
        return
    want = _scenario(valkey_server.port, proto, setup, block, then)
    assert _scenario(trafikey_server.port, proto, setup, block, then) == want


@pytest.mark.parametrize("proto", [2, 3], ids=["resp2", "resp3"])
def test_block_answers_at_once_in_multi_and_scripts(valkey_server: Proc, trafikey_server: Proc, proto: int) -> None:
    steps = [
        ("XGROUP", "CREATE", "s", "g", "$", "MKSTREAM"), ("MULTI",), ("XREAD", "BLOCK", "0", "STREAMS", "s", "$"),
        ("XREADGROUP", "GROUP", "g", "c", "BLOCK", "0", "STREAMS", "s", ">"), ("EXEC",),
        ("EVAL", "return redis.call('xreadgroup', 'GROUP', 'g', 'c', 'BLOCK', '0', 'STREAMS', KEYS[1], '>')", "1", "s"),
        ("EVAL", "return redis.call('xread', 'BLOCK', '0', 'STREAMS', KEYS[1], '$')", "1", "s"),
        ("XINFO", "GROUPS", "s"),
    ]
    got = []
    for port in (valkey_server.port, trafikey_server.port):
        w = Wire(port)
        if proto == 3:
            w.call("HELLO", "3")
        w.call("FLUSHALL")
        got.append([w.call(*s) for s in steps])
        w.close()
    assert got[1] == got[0]


def test_xadd_serves_waiters_in_the_order_they_blocked(valkey_server: Proc, trafikey_server: Proc) -> None:
    got = []
    for port in (valkey_server.port, trafikey_server.port):
        ctl = Wire(port)
        ctl.call("FLUSHALL")
        ctl.call("XGROUP", "CREATE", "s", "g", "$", "MKSTREAM")
        waiters = [Wire(port) for _ in range(3)]
        waiters[0].send_raw(encode("XREADGROUP", "GROUP", "g", "a", "COUNT", "1", "BLOCK", "0", "STREAMS", "s", ">"))
        wait_blocked(ctl, 1)
        waiters[1].send_raw(encode("XREAD", "BLOCK", "0", "STREAMS", "s", "$"))
        wait_blocked(ctl, 2)
        waiters[2].send_raw(encode("XREADGROUP", "GROUP", "g", "b", "BLOCK", "0", "STREAMS", "s", ">"))
        wait_blocked(ctl, 3)
        out = [ctl.call("XADD", "s", "1-0", "a", "1")]
        out += [w.read_reply() for w in waiters[:2]]
        out.append(ctl.call("XADD", "s", "2-0", "b", "2"))
        out.append(waiters[2].read_reply())
        out.append(ctl.call("XPENDING", "s", "g"))
        for w in [ctl, *waiters]:
            w.close()
        got.append(out)
    assert got[1] == got[0]

"""Which stream writes touch a WATCHed key and invalidate a tracked one,
against Valkey: XADD, XDEL, XTRIM and XGROUP CREATE MKSTREAM signal the key
modified; the group commands, XSETID and reads do not (Valkey's t_stream.c
signals only those). Each case: client A watches (or tracks, after a read)
the key, client B runs the command, A's transaction runs or fails and its
invalidation pushes are compared."""

from __future__ import annotations

import pytest
from helpers.resp_wire import Wire
from helpers.servers import Proc

SETUP = [("XADD", "s", "1-0", "a", "1"), ("XADD", "s", "2-0", "b", "2"), ("XGROUP", "CREATE", "s", "g", "0"),
         ("XREADGROUP", "GROUP", "g", "c", "COUNT", "1", "STREAMS", "s", ">")]

CASES = [
    ("XADD", "s", "3-0", "c", "3"), ("XADD", "s", "1-0", "c", "3"), ("XDEL", "s", "1-0"), ("XDEL", "s", "9-0"),
    ("XTRIM", "s", "MAXLEN", "1"), ("XTRIM", "s", "MAXLEN", "5"), ("XSETID", "s", "9-0"),
    ("XGROUP", "CREATE", "s", "g2", "$"), ("XGROUP", "CREATE", "n", "g", "$", "MKSTREAM"),
    ("XGROUP", "SETID", "s", "g", "0"), ("XGROUP", "CREATECONSUMER", "s", "g", "d"),
    ("XGROUP", "DELCONSUMER", "s", "g", "c"), ("XGROUP", "DESTROY", "s", "g"),
    ("XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", ">"), ("XACK", "s", "g", "1-0"),
    ("XCLAIM", "s", "g", "d", "0", "1-0"), ("XAUTOCLAIM", "s", "g", "d", "0", "0"),
    ("XRANGE", "s", "-", "+"), ("XREAD", "STREAMS", "s", "0"), ("XINFO", "STREAM", "s"),
]


def _watched(port: int, key: str, cmd: tuple) -> bytes:
    a, b = Wire(port), Wire(port)
    try:
        b.call("FLUSHALL")
        for req in SETUP:
            b.call(*req)
        a.call("WATCH", key)
        b.call(*cmd)
        a.call("MULTI")
        a.call("PING")
        return a.call("EXEC")
    finally:
        a.close()
        b.close()


def _tracked(port: int, key: str, cmd: tuple) -> list[bytes]:
    a, b = Wire(port), Wire(port)
    try:
        b.call("FLUSHALL")
        for req in SETUP:
            b.call(*req)
        a.call("HELLO", "3")
        a.call("CLIENT", "TRACKING", "ON")
        a.call("XLEN", key)
        b.call(*cmd)
        out = [a.call("PING")]
        while out[-1] != b"+PONG\r\n":  # pushes arrive before PING's reply
            out.append(a.read_reply())
        return out
    finally:
        a.close()
        b.close()


@pytest.mark.parametrize("cmd", CASES, ids=[" ".join(c[:2]) + f"-{i}" for i, c in enumerate(CASES)])
def test_watch_and_tracking_match_valkey(valkey_server: Proc, trafikey_server: Proc, cmd: tuple) -> None:
    key = "n" if cmd[1:4] == ("CREATE", "n", "g") else "s"
    assert _watched(trafikey_server.port, key, cmd) == _watched(valkey_server.port, key, cmd)
    assert _tracked(trafikey_server.port, key, cmd) == _tracked(valkey_server.port, key, cmd)

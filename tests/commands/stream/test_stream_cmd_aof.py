"""What stream writes leave in the append-only file, against Valkey's own
log: XADD with the ID it generated and an approximate trim as the exact one
it did, XTRIM likewise, XREADGROUP as XCLAIM ... FORCE JUSTID LASTID plus
XGROUP SETID (and XGROUP CREATECONSUMER under NOACK), XCLAIM and XAUTOCLAIM
as XCLAIMs, no-ops and reads as nothing; served at once or after blocking.
Delivery times differ between the two servers, so the TIME argument of a
logged XCLAIM is compared masked. Each server then replays its log on a
restart and both read back the same streams and groups (consumers that
never got an entry are not logged, by Valkey either)."""

from __future__ import annotations

from helpers.aof_util import aof_server, logged_runs, valkey_on, without_select
from helpers.resp_wire import Wire, encode, wait_blocked

WRITES = [
    ("XADD", "s", "1-*", "a", "1"), ("XADD", "s", "1-*", "b", "2"), ("XADD", "s", "5", "c", "3"),
    ("XADD", "s", "5-0", "c", "3"), ("XADD", "n", "NOMKSTREAM", "1-0", "a", "b"),
] + [("XADD", "big", f"{i}-0", "f", "v") for i in range(1, 251)] + [
    ("XADD", "big", "MAXLEN", "~", "120", "300-0", "f", "v"), ("XTRIM", "big", "MINID", "~", "150"),
    ("XTRIM", "big", "MAXLEN", "~", "10", "LIMIT", "30"), ("XTRIM", "big", "MAXLEN", "100"),
    ("XTRIM", "big", "MAXLEN", "100"), ("XADD", "big", "MINID", "~", "999", "301-0", "f", "v"),
    ("XDEL", "s", "1-0", "9-9"), ("XDEL", "s", "9-9"), ("XSETID", "s", "10-0"), ("XSETID", "s", "1-0"),
    ("XRANGE", "s", "-", "+"), ("XREAD", "STREAMS", "s", "0"), ("XINFO", "STREAM", "s"), ("XLEN", "s"),
    ("XGROUP", "CREATE", "s", "g", "0"), ("XGROUP", "CREATE", "s", "g", "0"),
    ("XGROUP", "CREATE", "m", "g", "$", "MKSTREAM", "ENTRIESREAD", "0"),
    ("XADD", "s", "11-0", "d", "4"), ("XADD", "s", "12-0", "e", "5"),
    ("XREADGROUP", "GROUP", "g", "alice", "COUNT", "2", "STREAMS", "s", ">"),
    ("XREADGROUP", "GROUP", "g", "bob", "NOACK", "STREAMS", "s", ">"),
    ("XREADGROUP", "GROUP", "g", "bob", "STREAMS", "s", ">"),
    ("XREADGROUP", "GROUP", "g", "alice", "STREAMS", "s", "0"),
    ("XACK", "s", "g", "1-1"), ("XACK", "s", "g", "1-1"),
    ("XCLAIM", "s", "g", "carol", "0", "5-0", "1-1", "RETRYCOUNT", "3"),
    ("XCLAIM", "s", "g", "carol", "0", "1-1", "LASTID", "50-0"), ("XCLAIM", "s", "g", "carol", "999999", "5-0"),
    ("XDEL", "s", "5-0"), ("XAUTOCLAIM", "s", "g", "dave", "0", "0", "COUNT", "5"),
    ("XGROUP", "CREATECONSUMER", "s", "g", "erin"), ("XGROUP", "CREATECONSUMER", "s", "g", "erin"),
    ("XGROUP", "DELCONSUMER", "s", "g", "erin"), ("XGROUP", "DELCONSUMER", "s", "g", "erin"),
    ("XGROUP", "SETID", "s", "g", "0", "ENTRIESREAD", "0"), ("XGROUP", "CREATE", "s", "g2", "$"),
    ("XGROUP", "DESTROY", "s", "g2"), ("XGROUP", "DESTROY", "s", "g2"),
    ("MULTI",), ("XADD", "t", "1-0", "a", "b"), ("XREADGROUP", "GROUP", "g", "c", "BLOCK", "0", "STREAMS", "s", ">"),
    ("EXEC",),
]


def _workload(port: int) -> list[bytes]:
    ctl, waiter = Wire(port), Wire(port)
    replies = [ctl.call(*req) for req in WRITES]
    for setup, block, write in [
        (("PING",), ("XREADGROUP", "GROUP", "g", "w", "BLOCK", "0", "STREAMS", "s", ">"),
         ("XADD", "s", "60-*", "k", "v")),
        (("PING",), ("XREAD", "BLOCK", "0", "STREAMS", "s", "$"), ("XADD", "s", "61-0", "k", "v")),
        # A consumer created before blocking is logged then (NOACK logs no XCLAIM that would create it).
        (("XGROUP", "CREATE", "s", "g3", "$"), ("XREADGROUP", "GROUP", "g3", "new", "NOACK", "BLOCK", "0",
                                                  "STREAMS", "s", ">"), ("XADD", "s", "62-0", "k", "v")),
    ]:
        replies.append(ctl.call(*setup))
        waiter.send_raw(encode(*block))
        wait_blocked(ctl, 1)
        replies.append(ctl.call(*write))
        replies.append(waiter.read_reply())
    ctl.close()
    waiter.close()
    return replies


def _masked(log: list[list[bytes]]) -> list[list[bytes]]:
    out = []
    for cmd in log:
        if cmd[0].upper() == b"XCLAIM" and len(cmd) > 7 and cmd[6].upper() == b"TIME":
            cmd = [*cmd[:7], b"T", *cmd[8:]]
        out.append(cmd)
    return out


def _read_back(port: int) -> list[bytes]:
    w = Wire(port)
    try:
        out = []
        for key in ("s", "big", "m", "t"):
            out += [w.call("XRANGE", key, "-", "+"), w.call("XINFO", "STREAM", key), w.call("XINFO", "GROUPS", key)]
        out.append(w.call("XPENDING", "s", "g"))
        return out
    finally:
        w.close()


def test_stream_writes_are_logged_as_valkey_propagates_them() -> None:
    v, t = logged_runs(_workload)
    assert t.replies == v.replies
    assert _masked(without_select(t.log)) == _masked(without_select(v.log))
    srv = aof_server(t.dir)
    try:
        replayed = _read_back(srv.port)
    finally:
        srv.stop()
    valkey = valkey_on(v.dir, "--appendonly", "yes")
    try:
        assert replayed == _read_back(valkey.port)
    finally:
        valkey.stop()

"""What a served blocking pop leaves in the append-only file, against
Valkey's: the ZPOPMIN / ZPOPMAX it did (with the count taken for BZMPOP and
ZMPOP), nothing for a pop that timed out or found nothing; and WAITAOF's
replies with the log on."""

from __future__ import annotations

import tempfile

from helpers.aof_util import aof_dir, aof_server, logged_runs, without_select
from helpers.resp_wire import Wire, encode, wait_blocked


def _workload(port: int) -> list[bytes]:
    ctl, waiter = Wire(port), Wire(port)
    replies = []
    waiter.send_raw(encode("BZPOPMIN", "z", "0"))
    wait_blocked(ctl, 1)
    replies.append(ctl.call("ZADD", "z", "1", "a", "2", "b"))
    replies.append(waiter.read_reply())
    waiter.send_raw(encode("BZMPOP", "0", "1", "y", "MAX", "COUNT", "5"))
    wait_blocked(ctl, 1)
    replies.append(ctl.call("ZADD", "y", "1", "a", "2", "b", "3", "c"))
    replies.append(waiter.read_reply())
    waiter.send_raw(encode("BZPOPMAX", "x", "0"))
    wait_blocked(ctl, 1)
    replies.append(ctl.call("MULTI"))
    replies.append(ctl.call("ZADD", "x", "1", "a"))
    replies.append(ctl.call("ZADD", "w", "1", "a"))
    replies.append(ctl.call("EXEC"))
    replies.append(waiter.read_reply())
    replies.append(waiter.call("BZPOPMIN", "none", "0.01"))
    replies.append(waiter.call("ZMPOP", "2", "none", "z", "MIN", "COUNT", "9"))
    replies.append(waiter.call("ZMPOP", "1", "none", "MIN"))
    replies.append(waiter.call("MULTI"))
    replies.append(waiter.call("BZPOPMIN", "w", "0"))
    replies.append(waiter.call("BZPOPMIN", "w", "0"))
    replies.append(waiter.call("EXEC"))
    # With the log on, the local fsync counts as done; no replica ever acknowledges.
    for req in (("WAITAOF", "1", "0", "0"), ("WAITAOF", "0", "0", "0"), ("WAITAOF", "1", "1", "10"),
                ("WAITAOF", "1", "1", "x"), ("WAIT", "0", "0")):
        replies.append(waiter.call(*req))
    ctl.close()
    waiter.close()
    return replies


def test_served_pops_are_logged_as_valkey_propagates_them() -> None:
    v, t = logged_runs(_workload)
    assert t.replies == v.replies
    assert without_select(t.log) == without_select(v.log)

def test_a_logged_blocking_command_replays_without_waiting() -> None:
    # A log written elsewhere may hold a blocking command on an empty key:
    # replayed, it answers at once (Valkey's AOF client may not block).
    d = tempfile.mkdtemp(prefix="aof-blk-replay-")
    srv = aof_server(d)
    srv.stop()
    incr = next(aof_dir(d).glob("*.incr.aof"))
    with open(incr, "ab") as f:
        f.write(encode("BZPOPMIN", "empty", "0") + encode("BZMPOP", "0", "1", "empty", "MIN")
                + encode("ZADD", "z", "1", "a") + encode("BZPOPMAX", "z", "0"))
    again = aof_server(d)
    try:
        w = Wire(again.port)
        assert w.call("EXISTS", "z") == b":0\r\n"
        assert b"blocked_clients:0\r\n" in w.call("INFO", "clients")
        w.close()
    finally:
        again.stop()

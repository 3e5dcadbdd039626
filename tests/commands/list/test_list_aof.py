"""What list writes leave in the append-only file, against Valkey's own
log: each write as Valkey propagates it (a no-op or refused write leaves
nothing), the blocking forms as the non-blocking pops and moves they did,
whether served at once or after waiting. (An LTRIM that removes nothing
is logged here, not by Valkey: see docs/compatibility.md.)"""

from __future__ import annotations

from helpers.aof_util import logged_runs, without_select
from helpers.resp_wire import Wire, encode, wait_blocked

WRITES = [
    ("RPUSH", "l", "a", "b", "c", "d", "e", "f"), ("LPUSH", "l", "x"), ("LPUSHX", "l", "y"), ("RPUSHX", "nol", "y"),
    ("LPOP", "l"), ("RPOP", "l", "2"), ("LPOP", "l", "0"), ("LPOP", "nol"), ("RPOP", "nol", "3"),
    ("LSET", "l", "0", "S"), ("LSET", "l", "99", "S"), ("LINSERT", "l", "BEFORE", "S", "I"),
    ("LINSERT", "l", "AFTER", "zz", "I"), ("LINSERT", "nol", "AFTER", "zz", "I"),
    ("LREM", "l", "0", "zz"), ("LREM", "l", "1", "S"), ("LTRIM", "l", "0", "1"),
    ("LMOVE", "l", "m", "LEFT", "RIGHT"), ("RPOPLPUSH", "l", "m"),
    ("LMOVE", "nol", "m", "LEFT", "RIGHT"), ("RPOPLPUSH", "nol", "m"),
    ("LMPOP", "2", "nol", "m", "LEFT", "COUNT", "9"), ("LMPOP", "1", "nol", "LEFT"),
    ("RPUSH", "b", "1", "2", "3", "4", "5", "6", "7"), ("BLPOP", "nol", "b", "0"), ("BRPOP", "b", "0"),
    ("BLMOVE", "b", "c", "LEFT", "RIGHT", "0"), ("BRPOPLPUSH", "b", "c", "0"),
    ("BLMPOP", "0", "1", "b", "RIGHT", "COUNT", "2"), ("BLPOP", "nol", "0.01"),
    ("MULTI",), ("BLPOP", "nol", "0"), ("BLMOVE", "nol", "c", "LEFT", "LEFT", "0"), ("EXEC",),
]


def _workload(port: int) -> list[bytes]:
    ctl, waiter = Wire(port), Wire(port)
    replies = [ctl.call(*req) for req in WRITES]
    for block, push in [
        (("BLPOP", "w1", "0"), ("RPUSH", "w1", "a", "b")),
        (("BRPOP", "w2", "0"), ("RPUSH", "w2", "a", "b")),
        (("BLMOVE", "w3", "d", "RIGHT", "LEFT", "0"), ("RPUSH", "w3", "a", "b")),
        (("BRPOPLPUSH", "w4", "d", "0"), ("RPUSH", "w4", "a", "b")),
        (("BLMPOP", "0", "2", "w5", "w6", "LEFT", "COUNT", "5"), ("RPUSH", "w6", "a", "b")),
    ]:
        waiter.send_raw(encode(*block))
        wait_blocked(ctl, 1)
        replies.append(ctl.call(*push))
        replies.append(waiter.read_reply())
    ctl.close()
    waiter.close()
    return replies


def test_list_writes_are_logged_as_valkey_propagates_them() -> None:
    v, t = logged_runs(_workload)
    assert t.replies == v.replies
    assert without_select(t.log) == without_select(v.log)

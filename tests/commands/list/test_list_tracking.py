"""Client-side caching of lists against Valkey: a list read is remembered,
each list write that changes the key invalidates it (the change signal),
and a write that changes nothing does not. The scenario runner is the
tracking tests' own (tests/helpers/tracking.py)."""

from __future__ import annotations

from helpers import tracking as shared
from helpers.tracking import Env, assert_same_transcripts

servers = shared.servers  # the module's Valkey and trafikey-server

WRITES = [
    ("LPUSH", "l", "z"), ("RPUSHX", "l", "z"), ("LPUSHX", "nol", "z"), ("LPOP", "l"), ("RPOP", "l", "2"),
    ("LPOP", "l", "0"), ("LSET", "l", "0", "S"), ("LSET", "l", "99", "S"), ("LINSERT", "l", "BEFORE", "b", "I"),
    ("LINSERT", "l", "AFTER", "zz", "I"), ("LREM", "l", "0", "zz"), ("LREM", "l", "1", "b"), ("LTRIM", "l", "0", "-1"),
    ("LTRIM", "l", "0", "2"), ("LMOVE", "l", "m", "LEFT", "RIGHT"), ("RPOPLPUSH", "m", "l"),
    ("LMPOP", "2", "nol", "l", "LEFT", "COUNT", "2"), ("BLPOP", "l", "0"), ("DEL", "l"),
]


def test_list_reads_are_invalidated_by_list_writes(servers) -> None:  # type: ignore[no-untyped-def]
    def sc(e: Env) -> None:
        a, w = e.client("a", 3), e.client("w")
        e.call(a, "CLIENT", "TRACKING", "on")
        e.call(w, "RPUSH", "l", "a", "b", "c", "d", "e", "f", "g", "h")
        e.call(w, "RPUSH", "m", "x")
        for write in WRITES:
            e.call(a, "LRANGE", "l", "0", "-1")
            e.call(a, "LLEN", "m")
            e.call(w, *write)
            e.drain(a)

    assert_same_transcripts(servers, sc)

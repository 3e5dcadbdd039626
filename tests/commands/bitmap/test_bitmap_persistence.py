"""Bitmap writes in the append-only log, against what Valkey 9.1.2 writes.

Valkey logs SETBIT, BITFIELD and BITOP as they were sent, and only when
the call made the dataset dirty: a SETBIT of the bit already there, a
BITFIELD that only read, whose writes stored the old values or all failed
on an existing key, a BITOP with nothing to store and no destination to
delete, and every refusal log nothing; a BITFIELD whose only write failed
on a missing key creates the key yet logs nothing. Inside MULTI and
scripts the call is logged with the transaction's other writes. Our log
replays, in our server and in Valkey, to what the servers held.
"""

from __future__ import annotations

import shutil
from typing import Any

from helpers.aof_util import assert_replays, logged_beside_valkey

WORKLOAD: list[tuple[Any, ...]] = [
    ("SETBIT", "b", "7", "1"), ("SETBIT", "b", "7", "1"), ("SETBIT", "b", "7", "0"), ("SETBIT", "b", "40", "0"),
    ("GETBIT", "b", "7"), ("BITCOUNT", "b"), ("BITPOS", "b", "1"), ("SETBIT", "b", "-1", "1"),
    ("BITFIELD", "f", "SET", "u8", "0", "1"), ("BITFIELD", "f", "SET", "u8", "0", "1"),
    ("BITFIELD", "f", "GET", "u8", "0"), ("BITFIELD", "f"), ("BITFIELD_RO", "f", "GET", "u8", "0"),
    ("BITFIELD", "f", "OVERFLOW", "FAIL", "INCRBY", "u2", "0", "100"),
    ("BITFIELD", "f", "OVERFLOW", "FAIL", "INCRBY", "u2", "0", "100", "INCRBY", "u8", "8", "3"),
    ("BITFIELD", "nf", "OVERFLOW", "FAIL", "INCRBY", "u2", "0", "100"),
    ("BITFIELD", "f", "SET", "i64", "#2", "-1", "INCRBY", "i8", "0", "-1"), ("BITFIELD", "f", "SET", "u64", "0", "1"),
    ("BITOP", "OR", "d", "b", "f"), ("BITOP", "AND", "none", "nokey"), ("BITOP", "AND", "d", "nokey"),
    ("BITOP", "NOT", "d2", "b"), ("BITOP", "NAND", "d2", "b"),
    ("SET", "t", "abc", "PXAT", "4102444800000"), ("SETBIT", "t", "1", "0"), ("BITOP", "OR", "t", "t", "b"),
    ("MULTI",), ("SETBIT", "m", "3", "1"), ("SETBIT", "m", "3", "1"), ("BITFIELD", "m", "GET", "u8", "0"), ("EXEC",),
    ("EVAL", "redis.call('setbit', KEYS[1], 1, 1); redis.call('setbit', KEYS[1], 1, 1); "
             "return redis.call('bitfield', KEYS[1], 'incrby', 'u4', 0, 1)", "1", "s"),
    ("SELECT", "3"), ("SETBIT", "b3", "9", "1"), ("BITOP", "XOR", "d3", "b3", "b3"),
]


def test_bitmap_writes_are_logged_as_valkey_logs_them() -> None:
    v, t = logged_beside_valkey(WORKLOAD)
    assert t.replies == v.replies
    assert t.keyspace == v.keyspace
    assert t.log == v.log
    assert sum(c[0].lower() in (b"setbit", b"bitfield", b"bitop") for c in v.log) >= 10
    # The key created by a BITFIELD whose only write failed is not in
    # Valkey's log either: a replay (Valkey's or ours) never holds it.
    replayed = {k: x for k, x in v.keyspace.items() if k != (0, b"nf")}
    assert len(replayed) == len(v.keyspace) - 1
    assert_replays(t.dir, replayed)
    shutil.rmtree(v.dir, ignore_errors=True)
    shutil.rmtree(t.dir, ignore_errors=True)

"""SORT in the append-only log, against what Valkey 9.1.2 writes.

Valkey logs SORT ... STORE as it was sent, and only when the call changed
the keyspace (the destination written, or an empty result deleting one);
SORT without STORE, SORT_RO, a STORE of nothing over no key and every
refusal write nothing. Inside MULTI and scripts the command is logged with
the transaction's other writes. Our log replays to the same keyspace.
"""

from __future__ import annotations

import shutil
from typing import Any

from helpers.aof_util import assert_replays, logged_beside_valkey

WORKLOAD: list[tuple[Any, ...]] = [
    ("RPUSH", "l", "3", "1", "2"), ("SORT", "l"), ("SORT_RO", "l", "BY", "nosort"),
    ("SORT", "l", "STORE", "dst"), ("sort", "l", "desc", "store", "dst"),
    ("SORT", "l", "LIMIT", "5", "5", "STORE", "dst"), ("SORT", "l", "LIMIT", "5", "5", "STORE", "dst"),
    ("SORT", "nokey", "STORE", "none"), ("SORT", "l", "foo", "STORE", "dst"), ("SORT", "l", "STORE"),
    ("SET", "str", "x"), ("SORT", "str", "STORE", "dst"),
    ("SADD", "s", "c", "a", "b"), ("SORT", "s", "BY", "nosort", "STORE", "ds"),
    ("MSET", "w_a", "2", "w_b", "3", "w_c", "1"), ("SORT", "s", "BY", "w_*", "GET", "#", "GET", "w_*", "STORE", "ds"),
    ("MULTI",), ("SORT", "l", "STORE", "d2"), ("SORT", "l"), ("EXEC",),
    ("MULTI",), ("SORT", "l"), ("SORT_RO", "l"), ("EXEC",),
    ("MULTI",), ("SORT", "l", "ALPHA", "STORE", "d3"), ("SORT", "nokey", "STORE", "d3"), ("EXEC",),
    ("EVAL", "redis.call('sort', KEYS[1], 'by', 'nosort', 'store', KEYS[2]); return redis.call('sort', KEYS[1])",
     "2", "s", "d4"),
    ("EVAL", "return redis.call('sort', KEYS[1])", "1", "l"),
    ("SELECT", "3"), ("RPUSH", "l3", "b", "a"), ("SORT", "l3", "ALPHA", "STORE", "d"),
]


def test_sort_store_is_logged_as_valkey_logs_it() -> None:
    v, t = logged_beside_valkey(WORKLOAD)
    assert t.replies == v.replies
    assert t.keyspace == v.keyspace
    assert t.log == v.log
    sorts = [c for c in v.log if c[0].lower() == b"sort"]
    assert len(sorts) == 10
    # Our log replays, in our server and in Valkey, to what the servers held.
    assert_replays(t.dir, v.keyspace)
    shutil.rmtree(v.dir, ignore_errors=True)
    shutil.rmtree(t.dir, ignore_errors=True)

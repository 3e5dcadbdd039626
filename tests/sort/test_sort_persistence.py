"""SORT in the append-only log, against what Valkey 9.1.2 writes.

Valkey logs SORT ... STORE as it was sent, and only when the call changed
the keyspace (the destination written, or an empty result deleting one);
SORT without STORE, SORT_RO, a STORE of nothing over no key and every
refusal write nothing. Inside MULTI and scripts the command is logged with
the transaction's other writes. Our log replays to the same keyspace.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import Any

import hiredis
from helpers.aof_util import aof_dir, aof_server, keyspace, valkey_on
from helpers.resp_wire import Wire

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


def logged(d: str) -> list[list[bytes]]:
    """Every command in the incremental log files, in order."""
    out = []
    for f in sorted(aof_dir(d).glob("*.incr.aof")):
        reader = hiredis.Reader()
        reader.feed(f.read_bytes())
        while (cmd := reader.gets()) is not False:
            out.append(cmd)
    return out


def _run(port: int) -> list[bytes]:
    w = Wire(port)
    try:
        return [w.call(*cmd) for cmd in WORKLOAD]
    finally:
        w.close()


def test_sort_store_is_logged_as_valkey_logs_it() -> None:
    dv = tempfile.mkdtemp(prefix="aof-sort-v-")
    dt = tempfile.mkdtemp(prefix="aof-sort-t-")
    v = valkey_on(dv, "--appendonly", "yes", "--appendfsync", "always")
    t = aof_server(dt, "--appendfsync", "always", "--emq-brand", "none", "--save", "")
    try:
        replies_v = _run(v.port)
        replies_t = _run(t.port)
        assert replies_t == replies_v
        expected = keyspace(v.port)
        assert keyspace(t.port) == expected
    finally:
        v.stop()
        t.stop()
    log_v, log_t = logged(dv), logged(dt)
    assert log_t == log_v
    sorts = [c for c in log_v if c[0].lower() == b"sort"]
    assert len(sorts) == 10
    # Our log replays, in our server and in Valkey, to what the servers held.
    for start in (lambda d: aof_server(d, "--emq-brand", "none", "--save", ""),
                  lambda d: valkey_on(d, "--appendonly", "yes")):
        copy = tempfile.mkdtemp(prefix="aof-sort-replay-")
        shutil.copytree(aof_dir(dt), Path(copy) / "appendonlydir")
        again = start(copy)
        try:
            assert keyspace(again.port) == expected
        finally:
            again.stop()
        shutil.rmtree(copy, ignore_errors=True)
    shutil.rmtree(dv, ignore_errors=True)
    shutil.rmtree(dt, ignore_errors=True)

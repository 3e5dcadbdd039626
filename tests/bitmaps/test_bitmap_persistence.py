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
import tempfile
from pathlib import Path
from typing import Any

import hiredis
from helpers.aof_util import aof_dir, aof_server, keyspace, valkey_on
from helpers.resp_wire import Wire

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


def test_bitmap_writes_are_logged_as_valkey_logs_them() -> None:
    dv = tempfile.mkdtemp(prefix="aof-bits-v-")
    dt = tempfile.mkdtemp(prefix="aof-bits-t-")
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
    assert sum(c[0].lower() in (b"setbit", b"bitfield", b"bitop") for c in log_v) >= 10
    # The key created by a BITFIELD whose only write failed is not in
    # Valkey's log either: a replay (Valkey's or ours) never holds it.
    replayed = {k: x for k, x in expected.items() if k != (0, b"nf")}
    assert len(replayed) == len(expected) - 1
    for start in (lambda d: aof_server(d, "--emq-brand", "none", "--save", ""),
                  lambda d: valkey_on(d, "--appendonly", "yes")):
        copy = tempfile.mkdtemp(prefix="aof-bits-replay-")
        shutil.copytree(aof_dir(dt), Path(copy) / "appendonlydir")
        again = start(copy)
        try:
            assert keyspace(again.port) == replayed
        finally:
            again.stop()
        shutil.rmtree(copy, ignore_errors=True)
    shutil.rmtree(dv, ignore_errors=True)
    shutil.rmtree(dt, ignore_errors=True)

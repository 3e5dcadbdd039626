"""Sets through the RDB file and the append-only log, against Valkey 9.1.2.

RDB: a file of every set encoding written by one server is loaded by the
other; members and OBJECT ENCODING must be the same on both sides, and the
listpack and intset orders (which the encodings define) too. AOF: a set
workload, SPOP included, is logged as effects (never SPOP itself), replays
in our server and in Valkey to the keyspace the live server held, and a
rewrite (SADD batches) does the same.
"""

from __future__ import annotations

import shutil
import tempfile
import time
from collections.abc import Iterator
from typing import Any

import hiredis
import pytest
import redis
from helpers.aof_util import (
    aof_dir,
    aof_server,
    keyspace,
    legacy_copy,
    logged,
    manifest_copy,
    valkey_on,
    without_select,
)
from helpers.replies import bulk_items
from helpers.resp_wire import Wire
from helpers.servers import start_trafikey, start_valkey


def tk(*extra: str) -> Any:
    """Our server without the job core's brand key, so only sets are stored."""
    return start_trafikey("--emq-brand", "none", *extra)


def populate(r: redis.Redis) -> None:
    """Every set encoding and the members each one handles specially."""
    r.sadd("int16", 1, -5, 300, 32767)
    r.sadd("int32", 70000, -3)
    r.sadd("int64", 2**40, -(2**63), 2**63 - 1)
    r.sadd("lp", "b", "a", 3, "c", -7)
    r.srem("lp", "a")
    r.sadd("lp_from_int", 9, 1, 5)
    r.sadd("lp_from_int", "x")
    r.sadd("lp_long", "v" * 64, "w" * 63, "")
    r.sadd("ht_count", *["m%d" % i for i in range(200)])
    r.sadd("ht_value", "short", "z" * 65)
    r.sadd("ht_ints", *range(600))
    r.sadd("ht_shrunk", *["n%d" % i for i in range(130)])
    r.srem("ht_shrunk", *["n%d" % i for i in range(125)])
    r.sadd("bigint", "9223372036854775808", "007")
    r.sadd("ttl", 1, 2)
    r.pexpire("ttl", 500_000)


# A hashtable that shrank is written as the plain set type (by Valkey too)
# and comes back as a listpack in its hash table's order.
SHRUNK = b"ht_shrunk"


def state(port: int) -> dict[Any, Any]:
    """Each set's type, encoding, TTL, and members: exact order where the
    encoding defines it, sorted for a hashtable."""
    r = redis.Redis(port=port)
    w = Wire(port)
    out = {}
    for k in sorted(r.keys("*")):
        enc = r.object("encoding", k)
        members = bulk_items(w.call("SMEMBERS", k))
        if enc == b"hashtable" or k == SHRUNK:
            members = sorted(members)
        if k == SHRUNK:
            enc = None
        out[k] = (r.type(k), enc, members, r.pttl(k) > 0)
    r.close()
    w.close()
    return out


@pytest.fixture
def d() -> Iterator[str]:
    path = tempfile.mkdtemp(prefix="rdb-sets-")
    yield path
    shutil.rmtree(path, ignore_errors=True)


def _saved_by(start: Any, d: str) -> dict[Any, Any]:
    p = start("--dir", d)
    try:
        r = redis.Redis(port=p.port)
        populate(r)
        live = state(p.port)
        r.save()
    finally:
        p.stop()
    return live


def test_our_rdb_loads_into_valkey_with_the_same_encodings(d: str) -> None:
    live = _saved_by(tk, d)
    v = start_valkey("--dir", d)
    try:
        assert "Done loading RDB" in v.wait_output("Done loading RDB")
        theirs = state(v.port)
    finally:
        v.stop()
    p = tk("--dir", d)
    try:
        ours = state(p.port)
    finally:
        p.stop()
    assert len(theirs) == 12
    assert theirs == live
    assert ours == live


def test_valkey_rdb_loads_into_ours_with_the_same_encodings(d: str) -> None:
    live = _saved_by(start_valkey, d)
    p = tk("--dir", d)
    try:
        ours = state(p.port)
    finally:
        p.stop()
    assert len(live) == 12
    assert ours == live


@pytest.mark.parametrize("limits", [("4", "3", "4"), ("0", "0", "0")])
def test_load_applies_the_loading_servers_limits(d: str, limits: tuple[str, str, str]) -> None:
    """A set saved under the defaults, loaded where the limits are smaller,
    is converted as Valkey's loader converts it."""
    _saved_by(start_valkey, d)
    opts = ("--set-max-intset-entries", limits[0], "--set-max-listpack-entries", limits[1],
            "--set-max-listpack-value", limits[2])
    v = start_valkey("--dir", d, *opts)
    try:
        theirs = state(v.port)
    finally:
        v.stop()
    p = tk("--dir", d, *opts)
    try:
        ours = state(p.port)
    finally:
        p.stop()
    assert ours == theirs


def test_plain_set_type_from_valkey(d: str) -> None:
    """Valkey writes a hashtable as the plain set type; loaded where the
    limits are larger it becomes an intset or a listpack, as in Valkey."""
    v = start_valkey("--dir", d, "--set-max-intset-entries", "1", "--set-max-listpack-entries", "1")
    try:
        r = redis.Redis(port=v.port)
        r.sadd("ints", 3, 1, 2)
        r.sadd("mixed", 3, "a", "b")
        r.sadd("dup_like", "1", "01")
        r.save()
    finally:
        v.stop()
    v = start_valkey("--dir", d)
    try:
        theirs = state(v.port)
    finally:
        v.stop()
    p = tk("--dir", d)
    try:
        ours = state(p.port)
    finally:
        p.stop()
    assert theirs[b"ints"][1] == b"intset"
    assert {k: (t, e, sorted(m), x) for k, (t, e, m, x) in ours.items()} == \
        {k: (t, e, sorted(m), x) for k, (t, e, m, x) in theirs.items()}
    assert ours[b"ints"] == theirs[b"ints"]


# -- AOF ------------------------------------------------------------------------------------


def workload(r: redis.Redis) -> None:
    r.sadd("a", 1, 2, 3, "x")
    r.sadd("a", 1)
    r.srem("a", 2, "nope")
    r.srem("none", "x")
    r.sadd("big", *["m%d" % i for i in range(300)])
    r.spop("big")
    r.spop("big", 5)
    r.spop("big", 0)
    r.sadd("whole", 1, 2, 3)
    r.spop("whole", 10)
    r.sadd("one", "z")
    r.spop("one")
    r.sadd("p", *range(2000))
    r.spop("p", 1500)
    r.smove("a", "b", 1)
    r.smove("a", "b", "nope")
    r.sunionstore("u", "a", "b", "big")
    r.sinterstore("i", "a", "b")
    r.sdiffstore("df", "big", "a")
    r.sadd("t", 5)
    r.pexpire("t", 900_000)
    # Popped from a script, in a transaction and by a RESP3 client: still SREMs.
    r.eval("return redis.call('spop', KEYS[1], 2)", 1, "big")
    r.eval("redis.setresp(3); return redis.call('spop', KEYS[1], 2)", 1, "big")
    with r.pipeline(transaction=True) as p:
        p.spop("big")
        p.spop("big", 2)
        p.execute()
    r3 = redis.Redis(port=r.connection_pool.connection_kwargs["port"], protocol=3)
    r3.spop("big", 4)
    r3.spop("big")
    r3.close()


def assert_replays(d: str, expected: dict[Any, Any]) -> None:
    again = aof_server(d)
    try:
        assert keyspace(again.port) == expected
    finally:
        again.stop()
    for where in (legacy_copy(d), manifest_copy(d)):
        v = valkey_on(where, "--appendonly", "yes")
        try:
            assert keyspace(v.port) == expected, where
        finally:
            v.stop()


def test_aof_round_trip_logs_effects() -> None:
    d = tempfile.mkdtemp(prefix="aof-sets-")
    srv = aof_server(d, "--appendfsync", "always")
    try:
        r = redis.Redis(port=srv.port)
        workload(r)
        expected = keyspace(srv.port)
        r.close()
    finally:
        srv.stop()
    cmds = without_select(logged(d, "*.aof"))
    names = [c[0].upper() for c in cmds]
    assert b"SPOP" not in names
    # SADD of nothing new, SREM of nothing and SMOVE of a non-member are not logged.
    assert names.count(b"SADD") == 6
    assert [b"UNLINK", b"whole"] in cmds
    # SPOP 1500 is logged as SREMs of at most 1024 members each.
    p_srems = [c for c in cmds if c[:2] == [b"SREM", b"p"]]
    assert [len(c) - 2 for c in p_srems] == [1024, 476]
    assert expected[(0, b"p")][1] and len(expected[(0, b"p")][1]) == 500
    assert_replays(d, expected)
    shutil.rmtree(d, ignore_errors=True)


def test_aof_rewrite_writes_sadd_batches() -> None:
    d = tempfile.mkdtemp(prefix="aof-sets-rw-")
    srv = aof_server(d, "--aof-use-rdb-preamble", "no")  # a base of commands
    try:
        r = redis.Redis(port=srv.port)
        workload(r)
        expected = keyspace(srv.port)
        r.bgrewriteaof()
        for _ in range(400):
            if r.info("persistence")["aof_rewrite_in_progress"] == 0 and \
                    r.info("persistence")["aof_rewrite_scheduled"] == 0:
                break
            time.sleep(0.05)
        r.close()
    finally:
        srv.stop()
    base = [f for f in aof_dir(d).iterdir() if ".base." in f.name]
    assert base
    reader = hiredis.Reader()
    reader.feed(base[0].read_bytes())
    cmds = []
    while (cmd := reader.gets()) is not False:
        cmds.append(cmd)
    sadds = [c for c in cmds if c[0].upper() == b"SADD"]
    assert sadds and max(len(c) - 2 for c in sadds) == 64
    assert not [c for c in cmds if c[0].upper() in (b"SREM", b"SPOP", b"UNLINK")]
    assert_replays(d, expected)
    shutil.rmtree(d, ignore_errors=True)


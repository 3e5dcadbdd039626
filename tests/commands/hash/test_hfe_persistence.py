"""Hash-field expiry in the append-only log, the RDB file and DUMP/RESTORE,
against Valkey 9.1.2: the same writes log the same commands (relative
times as absolute, times already past as HDEL), each server's file and
payload loads into the other with the fields' TTLs."""

from __future__ import annotations

import os
import shutil
import tempfile
import time

import redis
from helpers.aof_util import assert_replays, logged, logged_beside_valkey, logged_runs, without_select
from helpers.servers import own_pair, start_trafikey, start_valkey

FAR = 4102444800000

WORKLOAD = [
    ("HSET", "h", "a", "1", "b", "2", "c", "3", "n", "4"),
    ("HPEXPIREAT", "h", str(FAR), "FIELDS", "2", "a", "zz"),
    ("HEXPIREAT", "h", str(FAR // 1000), "NX", "FIELDS", "1", "b"),
    ("HPERSIST", "h", "FIELDS", "2", "b", "zz"),
    ("HPEXPIREAT", "h", "1", "FIELDS", "1", "c"),
    ("HSETEX", "h", "PXAT", str(FAR), "FIELDS", "1", "d", "4"),
    ("HSETEX", "h", "FNX", "EXAT", str(FAR // 1000), "FIELDS", "1", "e", "5"),
    ("HSETEX", "h", "FXX", "KEEPTTL", "FIELDS", "1", "e", "6"),
    ("HSETEX", "h", "PXAT", "1", "FIELDS", "2", "e", "zz", "1", "2"),
    ("HINCRBY", "h", "n", "5"),
    ("HPEXPIREAT", "h", str(FAR), "FIELDS", "1", "n"),
    ("HINCRBY", "h", "n", "5"),
    ("HINCRBYFLOAT", "h", "n", "1.5"),
    ("HSETNX", "h", "f", "1"),
    ("HGETEX", "h", "PXAT", str(FAR + 1), "FIELDS", "2", "f", "zz"),
    ("HGETEX", "h", "PERSIST", "FIELDS", "1", "f"),
    ("HGETEX", "h", "EXAT", "1", "FIELDS", "1", "f"),
    ("HGETDEL", "h", "FIELDS", "2", "b", "zz"),
    ("HSET", "g", "a", "1"),
    ("HGETDEL", "g", "FIELDS", "1", "a"),
    ("HSET", "s", "a", "1", "b", "2"),
    ("EVAL", "redis.call('HPEXPIREAT', KEYS[1], ARGV[1], 'FIELDS', 1, 'a') "
             "return redis.call('HEXPIRE', KEYS[1], 0, 'FIELDS', 1, 'b')", "1", "s", str(FAR)),
]


def test_logged_as_valkey_logs_it() -> None:
    v, t = logged_beside_valkey(WORKLOAD)
    assert t.replies == v.replies
    assert without_select(t.log) == without_select(v.log)
    assert t.keyspace == v.keyspace
    assert_replays(t.dir, v.keyspace)


def _ttl_state(r: redis.Redis) -> dict[bytes, object]:
    out: dict[bytes, object] = {}
    for k in sorted(r.keys()):
        h = r.hgetall(k)
        fields = sorted(h)
        out[k] = (sorted(h.items()), r.execute_command("HPEXPIRETIME", k, "FIELDS", len(fields), *fields),
                  r.object("encoding", k))
    return out


def _fill(r: redis.Redis) -> None:
    r.hset("h", mapping={"a": "1", "b": "2", "c": "3"})
    r.execute_command("HPEXPIREAT", "h", FAR, "FIELDS", 2, "a", "b")
    r.hset("all", mapping={"x": "1"})
    r.execute_command("HPEXPIREAT", "all", FAR + 7, "FIELDS", 1, "x")
    r.hset("plain", mapping={"p": "1"})


def test_dump_restore_both_ways() -> None:
    with own_pair(trafikey_args=("--emq-brand", "none")) as (v, t):
        rv, rt = redis.Redis(port=v.port), redis.Redis(port=t.port)
        _fill(rv)
        _fill(rt)
        for k in ("h", "all", "plain"):
            dv, dt = rv.dump(k), rt.dump(k)
            assert dt == dv
            rv.restore(k + "2", 0, dt)
            rt.restore(k + "2", 0, dv)
        assert _ttl_state(rt) == _ttl_state(rv)


def test_rdb_files_load_both_ways() -> None:
    dv, dt = tempfile.mkdtemp(prefix="hfe-v-"), tempfile.mkdtemp(prefix="hfe-t-")
    try:
        v = start_valkey("--dir", dv)
        t = start_trafikey("--dir", dt, "--emq-brand", "none")
        try:
            for p in (v, t):
                r = redis.Redis(port=p.port)
                _fill(r)
                r.save()
            want = _ttl_state(redis.Redis(port=v.port))
            assert _ttl_state(redis.Redis(port=t.port)) == want
        finally:
            v.stop()
            t.stop()
        # Swap the files: each server starts on the other's.
        vf, tf = os.path.join(dv, "dump.rdb"), os.path.join(dt, "dump.rdb")
        shutil.copy(vf, os.path.join(dt, "valkey.rdb"))
        shutil.copy(tf, os.path.join(dv, "trafikey.rdb"))
        v = start_valkey("--dir", dv, "--dbfilename", "trafikey.rdb")
        t = start_trafikey("--dir", dt, "--emq-brand", "none", "--dbfilename", "valkey.rdb")
        try:
            assert _ttl_state(redis.Redis(port=v.port)) == want
            assert _ttl_state(redis.Redis(port=t.port)) == want
        finally:
            v.stop()
            t.stop()
    finally:
        shutil.rmtree(dv, ignore_errors=True)
        shutil.rmtree(dt, ignore_errors=True)


def test_aof_rewrite_rebuilds_field_ttls() -> None:
    def run(port: int) -> None:
        r = redis.Redis(port=port)
        _fill(r)
        r.config_set("aof-use-rdb-preamble", "no")
        r.bgrewriteaof()
        for _ in range(500):
            if not r.info("persistence")["aof_rewrite_in_progress"]:
                break
            time.sleep(0.02)

    v, t = logged_runs(run)
    assert t.keyspace == v.keyspace
    # The fields without TTL are one batch (Valkey names it HMSET, this
    # server HSET: the same write); each field with one its own HSETEX.
    assert _base(t.dir) == _base(v.dir)
    assert any(c[0] == b"HSETEX" for c in _base(v.dir))


def _base(d: str) -> list[tuple[bytes, ...]]:
    cmds = without_select(logged(d, "*.base.aof"))
    return sorted((b"HSET" if c[0] == b"HMSET" else c[0], *c[1:]) for c in cmds)


def test_active_expiry_logged_as_valkey_logs_it() -> None:
    def run(port: int) -> None:
        r = redis.Redis(port=port)
        r.hset("h", mapping={"a": "1", "b": "2", "c": "3"})
        r.hset("k", mapping={"a": "1"})
        r.execute_command("HPEXPIRE", "h", 10, "FIELDS", 2, "a", "b")
        r.execute_command("HPEXPIRE", "k", 10, "FIELDS", 1, "a")
        for _ in range(500):  # until the sweep took them (a poll, not a timing)
            if r.hlen("h") == 1 and not r.exists("k"):
                break
            time.sleep(0.01)

    v, t = logged_runs(run)
    assert t.keyspace == v.keyspace

    def tail(log: list[list[bytes]]) -> list[tuple[bytes, ...]]:
        # The fields of one HDEL come in the order each server's volatile
        # set yields them: compared as sets.
        return [(*c[:2], *sorted(c[2:])) for c in without_select(log) if c[0] in (b"HDEL", b"DEL", b"UNLINK")]

    assert sorted(tail(t.log)) == sorted(tail(v.log))

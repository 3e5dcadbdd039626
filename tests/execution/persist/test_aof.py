"""The append-only file round trip: writes through every command family are
logged as their effects, survive a restart from the log, and replay in
Valkey 9.1.2 (as a legacy single file and as a manifest directory) to the
same keyspace.

The expected keyspace is the one the live server held before it stopped,
read through ordinary commands (types, values, absolute expiry times), so
a lost, doubled or clock-dependent record shows as a difference.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import redis
from helpers.aof_util import (
    aof_server,
    functions,
    keyspace,
    legacy_copy,
    logged,
    logged_beside_valkey,
    manifest_copy,
    valkey_on,
    without_select,
)
from helpers.resp_wire import Wire, encode
from helpers.servers import own_pair

FUTURE = int(time.time() * 1000) + 3_600_000


def strings(r: redis.Redis) -> None:
    r.set("s1", "v")
    r.set("s-ex", "v", ex=1000)
    r.set("s-px", "v", px=900_000)
    r.set("s-exat", "v", exat=FUTURE // 1000)
    r.set("s-pxat", "v", pxat=FUTURE)
    r.set("s-px", "w", keepttl=True)
    assert r.set("s1", "x", nx=True) is None
    r.set("s1", "y", xx=True, get=True)
    r.setnx("s-nx", "1")
    r.setnx("s-nx", "2")
    r.setex("s-setex", 500, "v")
    r.psetex("s-psetex", 500_000, "v")
    r.mset({"m1": "1", "m2": "2"})
    r.msetnx({"m3": "3", "m4": "4"})
    r.msetnx({"m3": "x", "m5": "5"})
    r.getset("m1", "g")
    r.getdel("m2")
    r.getdel("absent")
    r.set("gx", "v")
    r.getex("gx", ex=700)
    r.set("gp", "v", ex=700)
    r.getex("gp", persist=True)
    r.getex("gx")
    r.append("ap", "abc")
    r.append("ap", "def")
    r.setrange("sr", 5, "xyz")
    r.incr("n")
    r.incrby("n", 41)
    r.decr("n")
    r.decrby("n", 2)
    r.set("f", "1.5", ex=900)
    r.incrbyfloat("f", 0.1)
    r.incrbyfloat("f2", 3.0e10)
    r.set("gone", "v", ex=100)
    r.getex("gone", pxat=1)  # an expiry in the past deletes


def hashes(r: redis.Redis) -> None:
    r.hset("h", mapping={"a": "1", "b": "2", "c": "3"})
    r.hsetnx("h", "a", "x")
    r.hsetnx("h", "d", "4")
    r.hmset("h2", {"x": "1"})
    r.hdel("h", "b", "zz")
    r.hdel("h", "nope")
    r.hincrby("h", "a", 10)
    r.hincrbyfloat("h", "fl", 2.5)
    r.hincrbyfloat("h", "fl", 0.25)
    r.hset("hbig", mapping={f"f{i}": "x" * (i % 70) for i in range(200)})


def zsets(r: redis.Redis) -> None:
    r.zadd("z", {"a": 1, "b": 2.5, "c": -3, "d": 1e-7})
    r.zadd("z", {"a": 5}, xx=True)
    r.zadd("z", {"e": 7}, nx=True)
    r.zadd("z", {"b": 1}, gt=True)
    r.zadd("z", {"inf": float("inf"), "ninf": float("-inf")})
    r.zadd("z", {"a": 2}, incr=True)
    r.zincrby("z", 0.5, "b")
    r.zrem("z", "c", "nope")
    r.zadd("z2", {f"m{i}": i for i in range(20)})
    r.zremrangebyrank("z2", 0, 2)
    r.zremrangebyscore("z2", 10, 12)
    r.zadd("zl", {"a": 0, "b": 0, "c": 0, "d": 0})
    r.zremrangebylex("zl", "[b", "[c")
    r.zpopmin("z2", 2)
    r.zpopmax("z2")
    r.zpopmin("absent-z")
    r.zrangestore("z3", "z2", 0, 4)
    r.zunionstore("zu", {"z": 2, "z2": 1}, aggregate="MAX")
    r.zinterstore("zi", ["z", "z2"])
    r.zdiffstore("zd", ["z2", "z3"])


def lists(r: redis.Redis) -> None:
    r.rpush("l", "a", "b", "c", "d", "e", "f", "g", "h")
    r.lpush("l", "x", "y")
    r.lpushx("l", "z")
    r.rpushx("absent-l", "z")
    r.lpop("l")
    r.rpop("l", 2)
    r.lpop("absent-l")
    r.lset("l", 1, "S")
    r.linsert("l", "BEFORE", "S", "I")
    r.linsert("l", "AFTER", "nothere", "I")
    r.lrem("l", 0, "b")
    r.lrem("l", 0, "nothere")
    r.ltrim("l", 0, -2)
    r.lmove("l", "l2", "LEFT", "RIGHT")
    r.rpoplpush("l", "l2")
    r.lmove("absent-l", "l2", "LEFT", "RIGHT")
    r.execute_command("LMPOP", 2, "absent-l", "l2", "RIGHT", "COUNT", 1)
    r.rpush("b", *[str(i) for i in range(300)])
    r.blpop(["absent-l", "b"], 0)
    r.brpop(["b"], 0)
    r.blmove("b", "b2", 0, "RIGHT", "LEFT")
    r.brpoplpush("b", "b2", 0)
    r.execute_command("BLMPOP", 0, 1, "b", "LEFT", "COUNT", 7)
    r.rpush("gone", "a")
    r.lpop("gone")


def keys(r: redis.Redis) -> None:
    r.set("k1", "v")
    r.set("k2", "v")
    r.set("k3", "v")
    r.delete("k1", "absent")
    r.unlink("k2")
    r.rename("k3", "k4")
    r.set("k5", "v")
    r.renamenx("k5", "k4")
    r.renamenx("k5", "k6")
    r.copy("k4", "k7")
    r.copy("k4", "k8", destination_db=2)
    r.set("mv", "v")
    r.move("mv", 3)
    r.set("e1", "v")
    r.expire("e1", 800)
    r.set("e2", "v")
    r.pexpire("e2", 800_000)
    r.set("e3", "v")
    r.expireat("e3", FUTURE // 1000)
    r.set("e4", "v")
    r.pexpireat("e4", FUTURE)
    r.set("e5", "v", ex=100)
    r.persist("e5")
    r.set("e6", "v")
    r.expire("e6", -1)  # in the past: deleted
    r.set("lazy", "v", px=30)
    time.sleep(0.1)
    assert r.get("lazy") is None  # lazy expiry: logged as a DEL
    r6 = redis.Redis(port=r.connection_pool.connection_kwargs["port"], db=6)
    r6.set("in6", "v")
    r6.hset("h6", "f", "v")
    r7 = redis.Redis(port=r.connection_pool.connection_kwargs["port"], db=7)
    r7.set("in7", "v")
    r7.set("gone7", "v")
    r7.flushdb()
    r7.set("after-flush7", "v")
    r.swapdb(6, 9)
    r6.close()
    r7.close()


def scripts(r: redis.Redis) -> None:
    r.eval("redis.call('set', KEYS[1], 'a'); redis.call('incr', KEYS[2]); "
           "redis.call('hset', KEYS[3], 'f', ARGV[1]); return 1", 3, "sc1", "sc2", "sc3", "val")
    r.eval("redis.call('select', 4); redis.call('set', 'in4', 'x'); redis.call('expire', 'in4', 600); "
           "redis.call('select', 0); return redis.call('set', 'sc4', 'y')", 0)
    r.eval("return redis.call('get', 'sc1')", 0)  # no writes: nothing logged
    with pytest.raises(redis.ResponseError):
        r.eval("redis.call('set', 'half', '1'); return redis.call('incr', 'sc1')", 0)
    r.function_load("#!lua name=aoflib\nserver.register_function('bump', function(keys, args) "
                    "redis.call('incrby', keys[1], args[1]); return redis.call('zadd', keys[2], args[1], 'm') end)")
    r.fcall("bump", 2, "fc", "fz", 5)
    r.fcall("bump", 2, "fc", "fz", 7)
    r.function_load("#!lua name=gone\nserver.register_function('g', function() return 1 end)")
    r.function_delete("gone")


def transactions(r: redis.Redis) -> None:
    p = r.pipeline(transaction=True)
    p.set("t1", "a").incr("t2").hset("t3", "f", "v").zadd("t4", {"m": 1}).expire("t1", 900)
    p.execute()
    p = r.pipeline(transaction=True)
    p.set("t5", "x")
    p.execute()
    p = r.pipeline(transaction=True)
    p.get("t5")
    p.execute()  # read-only: nothing logged
    with pytest.raises(redis.ResponseError):
        p = r.pipeline(transaction=True)
        p.set("t6", "x").incr("t1").set("t7", "y")  # INCR fails inside, the rest stands
        p.execute()


def emq_verbs(r: redis.Redis) -> None:
    P = "emq:{q}:"
    pend, act, sched, dead = P + "pending", P + "active", P + "schedule", P + "dead"
    for i in range(6):
        r.execute_command("EMQ.ENQUEUE", 2, pend, P, "*", f"payload-{i}")
    r.execute_command("EMQ.ENQUEUE", 2, pend, P, "named", "p")
    assert r.execute_command("EMQ.ENQUEUE", 2, pend, P, "named", "p") is None
    r.execute_command("EMQ.SCHEDULE", 2, sched, P, "*", "later", 1)
    r.execute_command("EMQ.SCHEDULE", 2, sched, P, "far", "later", FUTURE)
    r.execute_command("EMQ.PROMOTE", 3, sched, pend, P)
    claimed = [r.execute_command("EMQ.CLAIM", 3, pend, act, P, 600_000) for _ in range(5)]
    (j1, _, a1), (j2, _, a2), (j3, _, a3), (j4, _, a4), (j5, _, a5) = claimed
    r.execute_command("EMQ.COMPLETE", 2, act, P, j1, a1)
    r.execute_command("EMQ.FAIL", 5, act, pend, sched, dead, P, j2, a2, 1, 0, "boom")
    r.execute_command("EMQ.FAIL", 5, act, pend, sched, dead, P, j3, a3, 5, 60_000)
    r.execute_command("EMQ.EXTEND", 2, act, P, j4, a4, 900_000)
    r.execute_command("EMQ.DELAY", 3, act, sched, P, j5, a5, 1000)
    r.execute_command("EMQ.REPROCESS", 3, dead, pend, P, j2)
    r.execute_command("EMQ.RESCHEDULE", 2, sched, P, "far", FUTURE + 5)
    j6, _, a6 = r.execute_command("EMQ.CLAIM", 3, pend, act, P, 1)
    r.execute_command("EMQ.REQUEUE", 3, act, pend, P, j6, a6)
    r.execute_command("EMQ.CLAIM", 3, pend, act, P, 1)
    time.sleep(0.01)
    r.execute_command("EMQ.STALLED.CHECK", 4, act, pend, dead, P, 5)
    with pytest.raises(redis.ResponseError):
        r.execute_command("EMQ.COMPLETE", 2, act, P, "nojob", 1)


FAMILIES: dict[str, Callable[[redis.Redis], None]] = {
    "strings": strings, "hashes": hashes, "zsets": zsets, "lists": lists, "keys": keys, "scripts": scripts,
    "transactions": transactions, "emq": emq_verbs,
}

# What a log of effects may hold: never a script, a job-core verb, a
# relative expiry or a command whose replay reads the clock.
ALLOWED = {
    b"SELECT", b"MULTI", b"EXEC", b"SET", b"DEL", b"UNLINK", b"RENAME", b"RENAMENX", b"COPY", b"MOVE",
    b"PEXPIREAT", b"PERSIST", b"MSET", b"MSETNX", b"APPEND", b"SETRANGE", b"INCR", b"DECR", b"INCRBY",
    b"DECRBY", b"HSET", b"HSETNX", b"HMSET", b"HDEL", b"HINCRBY", b"ZADD", b"ZINCRBY", b"ZREM",
    b"ZREMRANGEBYRANK", b"ZREMRANGEBYSCORE", b"ZREMRANGEBYLEX", b"ZPOPMIN", b"ZPOPMAX", b"ZRANGESTORE",
    b"ZUNIONSTORE", b"ZINTERSTORE", b"ZDIFFSTORE", b"RPUSH", b"LPUSH", b"LPUSHX", b"RPUSHX", b"LPOP",
    b"RPOP", b"LSET", b"LINSERT", b"LREM", b"LTRIM", b"LMOVE", b"RPOPLPUSH", b"FLUSHDB", b"FLUSHALL", b"SWAPDB",
    b"FUNCTION",
}


@pytest.mark.parametrize("family", list(FAMILIES))
def test_round_trip(family: str) -> None:
    d = tempfile.mkdtemp(prefix="aof-rt-")
    srv = aof_server(d, "--appendfsync", "always")
    try:
        r = redis.Redis(port=srv.port)
        FAMILIES[family](r)
        expected = keyspace(srv.port)
        expected_fn = functions(srv.port)
        r.close()
    finally:
        srv.stop()
    assert expected, "the workload left keys"
    cmds = logged(d, "*.aof")
    names = {c[0].upper() for c in cmds}
    assert names <= ALLOWED, names - ALLOWED
    for c in cmds:
        if c[0].upper() == b"SET":
            assert not {a.upper() for a in c[3:]} & {b"EX", b"PX", b"EXAT", b"GET"}, c

    again = aof_server(d)
    try:
        assert keyspace(again.port) == expected
        assert functions(again.port) == expected_fn
    finally:
        again.stop()

    for where in (legacy_copy(d), manifest_copy(d)):
        v = valkey_on(where, "--appendonly", "yes")
        try:
            assert keyspace(v.port) == expected, where
            assert functions(v.port) == expected_fn
        finally:
            v.stop()


def test_effects_not_requests() -> None:
    """The log holds what a write did, not what was asked: a refused or
    no-op write leaves no record, a verb leaves its plain commands."""
    d = tempfile.mkdtemp(prefix="aof-fx-")
    srv = aof_server(d)
    try:
        r = redis.Redis(port=srv.port)
        r.delete("nothing")
        r.set("x", "1", nx=True)
        r.set("x", "2", nx=True)
        r.set("nope-not-int", "a")
        with pytest.raises(redis.ResponseError):
            r.incr("nope-not-int")
        with pytest.raises(redis.ResponseError):
            r.execute_command("SET")
        r.hdel("nohash", "f")
        r.expire("absent", 10)
        r.set("e", "v", ex=50)
        r.execute_command("EMQ.ENQUEUE", 2, "q:pending", "q:", "7", "pl")
        r.set("lz", "v", px=20)
        time.sleep(0.05)
        assert r.get("lz") is None  # removed by lazy expiry: logged as DEL
        r.close()
    finally:
        srv.stop()
    cmds = without_select(logged(d, "*.aof"))
    body = [c for c in cmds if c[1:2] != [b"{emq}:version"]]
    assert [c[0].upper() for c in body] == [b"SET", b"SET", b"SET", b"MULTI", b"INCRBY", b"HSET", b"ZADD", b"EXEC",
                                            b"SET", b"DEL"]
    assert body[0] == [b"SET", b"x", b"1"]
    assert body[1] == [b"SET", b"nope-not-int", b"a"]
    assert body[2][:3] == [b"SET", b"e", b"v"] and body[2][3] == b"PXAT"
    assert body[4] == [b"INCRBY", b"q:seq", b"1"]
    assert body[5] == [b"HSET", b"q:job:7", b"state", b"pending", b"attempts", b"0", b"payload", b"pl"]
    assert body[6] == [b"ZADD", b"q:pending", b"1", b"7"]
    assert body[9] == [b"DEL", b"lz"]


def test_debug_loadaof_against_valkey() -> None:
    """DEBUG LOADAOF empties the keyspace and loads it back from the AOF on
    disk, logging nothing of the replay; with appendonly off there is no
    file, and the keyspace is left empty with Valkey's error."""
    dv, dt = tempfile.mkdtemp(), tempfile.mkdtemp()
    v = valkey_on(dv, "--appendonly", "yes", "--enable-debug-command", "yes")
    t = aof_server(dt, "--enable-debug-command", "yes", "--save", "")
    try:
        wv, wt = redis.Redis(port=v.port), redis.Redis(port=t.port)
        for w in (wv, wt):
            w.set("a", "1")
            w.set("b", "2", ex=1000)
            w.incr("n", 5)
            w.rpush("l", "x", "y")
            assert w.execute_command("DEBUG", "LOADAOF") == b"OK"
            w.set("c", "3")
            assert w.execute_command("DEBUG", "LOADAOF") == b"OK"
        def loaded(port: int) -> dict[tuple[int, bytes], tuple[Any, Any, bool]]:
            return {k: (kind, value, at > 0) for k, (kind, value, at) in keyspace(port, (b"{emq}:version",)).items()}

        assert loaded(t.port) == loaded(v.port)
        assert loaded(t.port)[(0, b"b")] == (b"string", b"2", True)
        # The replays were not logged again: the same records, command and key.
        def records(d: str) -> list[tuple[bytes, bytes]]:
            return [(r[0].upper(), r[1]) for r in without_select(logged(d)) if r[1] != b"{emq}:version"]

        assert records(dt) == records(dv)
        for w in (wv, wt):  # the log turned off, its files are still there to load
            assert w.config_set("appendonly", "no")
            assert w.execute_command("DEBUG", "LOADAOF") == b"OK"
        assert loaded(t.port) == loaded(v.port)
    finally:
        v.stop()
        t.stop()
    with own_pair(("--enable-debug-command", "yes"), ("--enable-debug-command", "yes")) as (v, t):
        errors = []
        for p in (v, t):
            w = redis.Redis(port=p.port)
            w.set("a", "1")
            with pytest.raises(redis.ResponseError) as e:
                w.execute_command("DEBUG", "LOADAOF")
            errors.append((str(e.value), w.dbsize()))
        assert errors[0] == errors[1] == ("Error trying to load the AOF files, check server logs.", 0)


def test_transaction_selects_inside_multi() -> None:
    """MULTI belongs to no database: a transaction in another database is
    logged MULTI, SELECT, ..., EXEC, as Valkey logs it."""
    v, t = logged_beside_valkey([("SELECT", 3), ("MULTI",), ("SET", "a", "1"), ("INCR", "n"), ("EXEC",),
                                 ("SELECT", 0), ("MULTI",), ("SET", "b", "2"), ("SELECT", 5), ("SET", "c", "3"),
                                 ("EXEC",)])
    assert t.replies == v.replies
    assert t.log == v.log
    assert v.log[:2] == [[b"MULTI"], [b"SELECT", b"3"]]


def test_loading_refused_while_a_logged_script_runs_long() -> None:
    """DEBUG LOADAOF replaying a script that runs past busy-reply-threshold:
    other clients are answered LOADING, not BUSY (Valkey checks loading
    first), and the load completes."""
    slow = "redis.call('set', KEYS[1], 'y'); for i = 1, 300000 do redis.call('ping') end return 'ok'"
    seen = []
    for start in (lambda d: valkey_on(d, "--appendonly", "yes", "--enable-debug-command", "yes"),
                  lambda d: aof_server(d, "--enable-debug-command", "yes")):
        d = tempfile.mkdtemp(prefix="aof-slow-")
        srv = start(d)
        try:
            r = redis.Redis(port=srv.port)
            r.config_set("busy-reply-threshold", 1)
            incr = sorted(Path(d, "appendonlydir").glob("*.incr.aof"))[-1]
            incr.write_bytes(encode("SELECT", "9") + encode("EVAL", slow, "1", "x"))
            loader = Wire(srv.port)
            loader.send_raw(encode("DEBUG", "LOADAOF"))
            pinger = Wire(srv.port)
            deadline = time.monotonic() + 10
            reply = pinger.call("PING")
            while reply == b"+PONG\r\n" and time.monotonic() < deadline:
                reply = pinger.call("PING")
            done = loader.read_reply()
            pinger.call("SELECT", "9")
            seen.append((reply, done, pinger.call("GET", "x")))
            loader.close()
            pinger.close()
            r.close()
        finally:
            srv.stop()
    assert seen[0] == seen[1] == (b"-LOADING Valkey is loading the dataset in memory\r\n", b"+OK\r\n", b"$1\r\ny\r\n")

"""Keyspace notifications against Valkey 9.1: the same requests on both
servers give the same replies, the same event frames in the same order (on
``__keyspace@<db>__:<key>`` and ``__keyevent@<db>__:<event>``), and the
same keyspace, in RESP2 and RESP3."""

from __future__ import annotations

import pytest
from helpers.keyevents import WAIT, Watched, assert_same_events, keyspace, readable, run
from helpers.resp_wire import Wire, encode
from helpers.servers import Proc

STRINGS = [
    ("SET", "s", "1"), ("SET", "s", "2", "GET"), ("SET", "s2", "x", "EX", "100"), ("SET", "s2", "y", "KEEPTTL"),
    ("SET", "s3", "1", "NX"), ("SET", "s3", "1", "NX"), ("SET", "s3", "1", "XX", "GET"),
    ("SET", "s3", "2", "PXAT", "1"), ("SET", "s3", "2", "PXAT", "1"), ("SET", "s3", "v", "IFEQ", "nope"),
    ("SETNX", "s4", "1"), ("SETNX", "s4", "1"), ("SETEX", "s5", "10", "v"), ("PSETEX", "s6", "10000", "v"),
    ("APPEND", "s", "xx"), ("APPEND", "s7", "new"), ("SETRANGE", "s", "1", "zz"), ("SETRANGE", "s8", "2", "zz"),
    ("SETRANGE", "s9", "0", ""), ("SETRANGE", "s", "0", ""), ("INCR", "n"), ("INCRBY", "n", "5"), ("DECR", "n"),
    ("DECRBY", "n", "2"), ("INCRBYFLOAT", "n", "1.5"), ("GETSET", "n", "9"), ("GETDEL", "n"), ("GETDEL", "n"),
    ("GETEX", "s", "EX", "100"), ("GETEX", "s", "PERSIST"), ("GETEX", "s", "PERSIST"), ("GETEX", "s"),
    ("GETEX", "s4", "PXAT", "1"), ("MSET", "m1", "1", "m2", "2", "m1", "3"), ("MSETNX", "m3", "1", "m4", "2"),
    ("MSETNX", "m3", "1", "m5", "2"), ("INCR", "s5"), ("SET", "big", "x" * 200), ("APPEND", "big", "y"),
]
HASHES = [
    ("HSET", "h", "f", "1", "g", "2"), ("HSET", "h", "f", "1"), ("HSETNX", "h", "f", "1"), ("HSETNX", "h", "z", "1"),
    ("HMSET", "h", "q", "1"), ("HINCRBY", "h", "n", "1"), ("HINCRBYFLOAT", "h", "n", "1.5"), ("HDEL", "h", "nope"),
    ("HDEL", "h", "f", "g"), ("HDEL", "h", "z", "q", "n"), ("HINCRBY", "h2", "x", "1"),
    ("HINCRBYFLOAT", "h3", "x", "1"), ("HSETNX", "h4", "a", "b"), ("HINCRBY", "h4", "a", "1"),
    ("HSET", "s5", "f", "v"), ("HDEL", "nohash", "f"),
]
ZSETS = [
    ("ZADD", "z", "1", "a", "2", "b"), ("ZADD", "z", "1", "a"), ("ZADD", "z", "NX", "1", "a"),
    ("ZADD", "z", "XX", "CH", "5", "a"), ("ZADD", "z", "INCR", "1", "a"), ("ZADD", "z", "GT", "1", "a"),
    ("ZADD", "nz", "XX", "1", "a"), ("ZINCRBY", "z", "2", "b"), ("ZINCRBY", "z2", "2", "b"), ("ZREM", "z", "nope"),
    ("ZREM", "z", "a"), ("ZADD", "z", "1", "a", "2", "c", "3", "d"), ("ZREMRANGEBYSCORE", "z", "0", "1"),
    ("ZREMRANGEBYRANK", "z", "0", "0"), ("ZREMRANGEBYLEX", "z", "-", "+"), ("ZREMRANGEBYLEX", "z", "-", "+"),
    ("ZADD", "z", "1", "a", "2", "b", "3", "c", "4", "d"), ("ZPOPMIN", "z"), ("ZPOPMAX", "z", "5"), ("ZPOPMIN", "z"),
    ("ZADD", "z1", "1", "a", "2", "b"), ("ZADD", "z2", "1", "b", "2", "c"), ("ZUNIONSTORE", "u", "2", "z1", "z2"),
    ("ZINTERSTORE", "i", "2", "z1", "z2"), ("ZDIFFSTORE", "d", "2", "z1", "z2"), ("ZRANGESTORE", "r", "z1", "0", "-1"),
    ("ZUNIONSTORE", "u", "2", "z1", "z2"), ("ZINTERSTORE", "i", "2", "z1", "nokey"),
    ("ZUNIONSTORE", "u", "2", "nokey", "nokey2"), ("ZDIFFSTORE", "d", "2", "nokey", "z1"),
    ("ZRANGESTORE", "r", "z1", "5", "10"), ("ZRANGESTORE", "r2", "z1", "5", "10"),
    ("ZRANGESTORE", "s5", "z1", "0", "-1"), ("ZADD", "z", "x", "a"), ("ZREM", "z1", "a", "b"),
    ("ZADD", "z3", "1", "a", "2", "b", "3", "c"), ("ZREMRANGEBYRANK", "z3", "0", "-1"),
    ("ZADD", "z3", "1", "a"), ("ZREMRANGEBYSCORE", "z3", "-inf", "+inf"), ("ZADD", "z3", "1", "a"),
    ("ZPOPMAX", "z3"),
]
GENERIC = [
    ("SET", "a", "1"), ("SET", "b", "2"), ("DEL", "a", "b", "nokey"), ("UNLINK", "nokey"), ("SET", "a", "1"),
    ("UNLINK", "a", "a"), ("SET", "a", "1"), ("EXPIRE", "a", "100"), ("EXPIRE", "a", "100", "NX"),
    ("PEXPIRE", "a", "100000", "XX"), ("EXPIREAT", "a", "99999999999"), ("PEXPIREAT", "a", "99999999999999"),
    ("EXPIRE", "a", "5", "GT"), ("PERSIST", "a"), ("PERSIST", "a"), ("PERSIST", "nokey"), ("EXPIRE", "nokey", "5"),
    ("EXPIRE", "a", "0"), ("SET", "a", "1"), ("PEXPIRE", "a", "-5"), ("SET", "a", "1"), ("EXPIREAT", "a", "1"),
    ("SET", "a", "1", "EX", "100"), ("RENAME", "a", "b"), ("RENAME", "b", "b"), ("SET", "c", "1"),
    ("RENAMENX", "b", "c"), ("RENAMENX", "b", "d"), ("RENAME", "nokey", "x"), ("RENAME", "d", "c"),
    ("MOVE", "c", "1"), ("SET", "x", "1"), ("MOVE", "x", "1"), ("SET", "x", "2"), ("MOVE", "x", "1"),
    ("HSET", "cp", "f", "v"), ("COPY", "cp", "e"), ("COPY", "cp", "e"), ("COPY", "cp", "e", "REPLACE"),
    ("COPY", "cp", "e", "DB", "1"), ("COPY", "cp", "e", "DB", "1", "REPLACE"), ("COPY", "nokey", "e"),
    ("SELECT", "1"), ("SET", "one", "1"), ("ZADD", "zone", "1", "m"), ("DEL", "x"), ("SELECT", "0"),
    ("SWAPDB", "0", "1"), ("SET", "after-swap", "1"), ("SWAPDB", "0", "1"), ("TOUCH", "cp", "nokey"),
    ("MULTI",), ("SET", "t", "1"), ("INCR", "t"), ("HSET", "th", "a", "b"), ("DEL", "t", "th"), ("EXEC",),
    ("EVAL", "redis.call('set', KEYS[1], '1'); redis.call('zadd', KEYS[2], 1, 'm');"
             " return redis.call('del', KEYS[1], KEYS[2])", "2", "ev1", "ev2"),
    ("SELECT", "1"), ("FLUSHDB",), ("SELECT", "0"),
]
# Lazy expiry: a key kept past its time (active expiry is off) is removed,
# with an ``expired`` event, by whatever looks it up next, reader or writer.
LAZY = [
    ("SET", "e1", "v", "PX", "1"), WAIT, ("GET", "e1"),
    ("SET", "e2", "v", "PX", "1"), WAIT, ("SET", "e2", "w"),
    ("SET", "e3", "v", "PX", "1"), WAIT, ("ZADD", "e3", "1", "a"),
    ("HSET", "e4", "f", "v"), ("PEXPIRE", "e4", "1"), WAIT, ("EXISTS", "e4"),
    ("SET", "e5", "v", "PX", "1"), WAIT, ("DEL", "e5"),
    ("SET", "e6", "v", "PX", "1"), WAIT, ("RENAME", "e6", "q"),
    ("SET", "e7", "v", "PX", "1"), ("SET", "e8", "v"), WAIT, ("RENAME", "e8", "e7"),
    ("SET", "e9", "v", "PX", "1"), WAIT, ("MSET", "e9", "1", "e10", "2"),
    ("SET", "e11", "v", "PX", "1"), WAIT, ("INCR", "e11"),
    ("SET", "e12", "v", "PX", "1"), WAIT, ("APPEND", "e12", "x"),
    ("ZADD", "e13", "1", "a"), ("PEXPIRE", "e13", "1"), WAIT, ("ZUNIONSTORE", "e13", "1", "z2"),
    ("SET", "e14", "v", "PX", "1"), WAIT, ("SET", "e14", "w", "NX"),
    ("SET", "e15", "v", "PX", "1"), WAIT, ("TTL", "e15"),
]
# Reads of missing keys raise ``keymiss`` (class m) where Valkey's lookup is
# a read; writes that find no key raise none.
READS = [
    ("GET", "m"), ("MGET", "m1", "s", "m2", "h2"), ("GETRANGE", "m", "0", "1"), ("STRLEN", "m"), ("GETDEL", "m"),
    ("GETEX", "m"), ("GETEX", "m", "EX", "10"), ("GETSET", "m", "v"), ("DEL", "m"), ("SET", "m2", "v", "GET"),
    ("SET", "m3", "v", "NX", "GET"), ("SET", "m4", "v", "XX"), ("SETRANGE", "m5", "0", ""), ("APPEND", "m6", "x"),
    ("INCR", "m7"), ("HGET", "m", "f"), ("HMGET", "m", "f", "g"), ("HEXISTS", "m", "f"), ("HLEN", "m"),
    ("HSTRLEN", "m", "f"), ("HGETALL", "m"), ("HKEYS", "m"), ("HVALS", "m"), ("HRANDFIELD", "m"),
    ("HRANDFIELD", "m", "2"), ("HRANDFIELD", "m", "x"), ("HSCAN", "m", "0"), ("HDEL", "m", "f"),
    ("HSETNX", "m9", "f", "v"), ("ZCARD", "m"), ("ZSCORE", "m", "a"), ("ZMSCORE", "m", "a"), ("ZRANK", "m", "a"),
    ("ZREVRANK", "m", "a", "WITHSCORE"), ("ZCOUNT", "m", "0", "1"), ("ZCOUNT", "m", "x", "1"),
    ("ZLEXCOUNT", "m", "-", "+"), ("ZRANGE", "m", "0", "1"), ("ZRANGE", "m", "0", "1", "BYSCORE", "REV"),
    ("ZRANGEBYSCORE", "m", "0", "1"), ("ZRANGEBYLEX", "m", "-", "+"), ("ZREVRANGE", "m", "0", "1"),
    ("ZREVRANGEBYSCORE", "m", "1", "0"), ("ZREVRANGEBYLEX", "m", "+", "-"), ("ZRANDMEMBER", "m"),
    ("ZRANDMEMBER", "m", "3", "WITHSCORES"), ("ZSCAN", "m", "0"), ("ZUNION", "2", "m1", "z2"),
    ("ZINTER", "2", "z2", "m2"), ("ZDIFF", "2", "m1", "m2"), ("ZINTERCARD", "2", "m1", "m2"),
    ("ZUNIONSTORE", "d", "2", "m1", "m2"), ("ZRANGESTORE", "d", "m", "0", "1"), ("ZREM", "m", "a"),
    ("ZREMRANGEBYRANK", "m", "0", "1"), ("ZPOPMIN", "m"), ("ZADD", "m", "XX", "1", "a"), ("ZINCRBY", "m10", "1", "a"),
    ("EXISTS", "m", "s", "m"), ("TOUCH", "m", "z2"), ("TYPE", "m"), ("TTL", "m"), ("PTTL", "m"), ("EXPIRETIME", "m"),
    ("PEXPIRETIME", "m"), ("OBJECT", "ENCODING", "m"), ("COPY", "m", "d"), ("MOVE", "m", "1"), ("RENAME", "m", "d"),
    ("EXPIRE", "m", "10"), ("PERSIST", "m"), ("SET", "e16", "v", "PX", "1"), WAIT, ("STRLEN", "e16"),
    ("SET", "e17", "v", "PX", "1"), WAIT, ("SET", "e17", "w", "GET"),
]
SEQUENCE = STRINGS + HASHES + ZSETS + GENERIC + LAZY + READS


def _prepare(port: int, flags: str) -> None:
    w = Wire(port)
    assert w.call("FLUSHALL") == b"+OK\r\n"
    assert w.call("DEBUG", "SET-ACTIVE-EXPIRE", "0") == b"+OK\r\n"
    assert w.call("CONFIG", "SET", "notify-keyspace-events", flags) == b"+OK\r\n"
    w.close()


@pytest.mark.parametrize("proto", [2, 3], ids=["resp2", "resp3"])
def test_every_family_matches_valkey(nvalkey: Proc, ntrafikey: Proc, proto: int) -> None:
    streams = []
    for p in (nvalkey, ntrafikey):
        _prepare(p.port, "AKEnm")
        streams.append(run(p.port, SEQUENCE, proto))
    assert_same_events(*streams)
    # The sequence is worth something only if it produced events at all.
    assert sum(len(e) for _, _, e in streams[0]) > 300
    assert keyspace(nvalkey.port) == keyspace(ntrafikey.port)


FLAG_SEQUENCE = [
    ("SET", "a", "1"), ("SET", "a", "2", "EX", "10"), ("APPEND", "a", "x"), ("HSET", "h", "f", "v"),
    ("HDEL", "h", "f"), ("ZADD", "z", "1", "m"), ("ZPOPMIN", "z"), ("SET", "b", "1"), ("RENAME", "b", "c"),
    ("PERSIST", "a"), ("DEL", "a", "c"), ("SET", "e", "v", "PX", "1"), WAIT, ("GET", "e"),
]


@pytest.mark.parametrize("flags", ["KEA", "AKEn", "K$", "Eg", "Kx", "En", "Ehz", "g", "KE", "gKn", "KEAm", "Em",
                                   "E$gx"])
def test_flag_combinations_match_valkey(nvalkey: Proc, ntrafikey: Proc, flags: str) -> None:
    streams = []
    for p in (nvalkey, ntrafikey):
        _prepare(p.port, flags)
        streams.append(run(p.port, FLAG_SEQUENCE, 2))
    assert_same_events(*streams)


def test_channel_forms(ntrafikey: Proc) -> None:
    """The two frames of one event, spelled out (Valkey's own test,
    pubsub.tcl "Keyspace notifications: we receive keyspace notifications")."""
    _prepare(ntrafikey.port, "KEA")
    w = Watched(ntrafikey.port)
    try:
        w.writer.call("SELECT", "9")
        _, events = w.call("SET", "foo", "bar")
        assert readable(events) == [(b"__keyspace@9__:foo", b"set"), (b"__keyevent@9__:set", b"foo")]
        assert events[0] == (b"*4\r\n$8\r\npmessage\r\n$10\r\n__key*__:*\r\n"
                             b"$18\r\n__keyspace@9__:foo\r\n$3\r\nset\r\n")
    finally:
        w.close()
        _prepare(ntrafikey.port, "")


def test_nothing_is_published_when_off(nvalkey: Proc, ntrafikey: Proc) -> None:
    for p in (nvalkey, ntrafikey):
        _prepare(p.port, "")
        for _, _, events in run(p.port, FLAG_SEQUENCE, 2):
            assert events == []


def test_reload_announces_nothing(nvalkey: Proc, ntrafikey: Proc) -> None:
    """Keys loaded back from a snapshot are not new keys (DEBUG RELOAD, also
    merged into what the databases hold)."""
    steps = [("SET", "a", "1"), ("HSET", "h", "f", "v"), ("DEBUG", "RELOAD"), ("SAVE",), ("SET", "b", "2"),
             ("DEBUG", "RELOAD", "NOSAVE", "NOFLUSH", "MERGE"), ("GET", "a")]
    streams = []
    for p in (nvalkey, ntrafikey):
        _prepare(p.port, "KEAnm")
        streams.append(run(p.port, steps, 2))
    assert_same_events(*streams)
    assert [len(e) for _, _, e in streams[0]] == [4, 4, 0, 0, 4, 0, 0]


def _own_events(port: int) -> list[bytes]:
    """A RESP3 client subscribed to the events of its own writes: what it
    receives for a SET, a MULTI/EXEC and a script, up to a PING."""
    w = Wire(port)
    assert w.call("HELLO", "3").startswith(b"%")
    assert w.call("PSUBSCRIBE", "__key*__:*").startswith(b">3\r\n")
    w.send_raw(b"".join(encode(*c) for c in [
        ("SET", "own", "1"), ("MULTI",), ("INCR", "own"), ("DEL", "own"), ("EXEC",),
        ("EVAL", "return redis.call('set', KEYS[1], 'x')", "1", "own"), ("PING", "end")]))
    got = []
    while True:
        frame = w.read_reply()
        got.append(frame)
        if frame == b"$3\r\nend\r\n":
            w.close()
            return got


def test_a_client_sees_its_own_events_after_its_reply(nvalkey: Proc, ntrafikey: Proc) -> None:
    streams = []
    for p in (nvalkey, ntrafikey):
        _prepare(p.port, "KEA")
        streams.append(_own_events(p.port))
    assert streams[1] == streams[0]
    assert streams[0][0] == b"+OK\r\n"  # the reply first, then the events of that command

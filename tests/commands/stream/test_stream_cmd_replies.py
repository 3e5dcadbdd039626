"""Replies of the stream commands against Valkey, byte for byte in RESP2
and RESP3: every form of XADD's ID and trimming options, ranges, XREAD,
XSETID, the consumer-group commands and XINFO, and each refusal with its
exact text and an unchanged keyspace.

IDs are given explicitly (or as ``ms-*``) so that both servers generate
the same ones; replies that carry times (idle, delivery times) are compared
with those numbers masked."""

from __future__ import annotations

import re

import pytest
from helpers.pair import Pair

KEYS = ("s", "t", "str", "nokey")


def state(w) -> list[bytes]:  # type: ignore[no-untyped-def]
    """What the stream keys hold, read with commands whose replies carry
    no times."""
    out = []
    for key in KEYS:
        out.append(w.call("EXISTS", key))
        if w.call("EXISTS", key) == b":1\r\n" and key != "str":
            out += [w.call("XRANGE", key, "-", "+"), w.call("XINFO", "STREAM", key),
                    w.call("XINFO", "GROUPS", key)]
            for g in (b"g", b"g2"):
                out.append(w.call("XPENDING", key, g))
    out.append(w.call("GET", "str"))
    return out


_TIMES = [
    re.compile(rb"(\$4\r\nidle\r\n|\$8\r\ninactive\r\n|\$9\r\nseen-time\r\n|\$11\r\nactive-time\r\n):-?\d+"),
    # XPENDING's extended rows: ID, consumer, idle, count.
    re.compile(rb"(\*4\r\n\$\d+\r\n\d+-\d+\r\n\$\d+\r\n[^\r]*\r\n):\d+"),
]


def masked(reply: bytes) -> bytes:
    for pat in _TIMES:
        reply = pat.sub(rb"\1:T", reply)
    return re.sub(rb":1[6-9]\d{11}\r\n", b":T\r\n", reply)  # delivery times (ms since the epoch)


def assert_steps(p: Pair, steps: list[tuple]) -> None:
    for step in steps:
        v, t = p.both(*step)
        if v.startswith(b"-"):
            assert t == v, f"{step!r}\n valkey:   {v!r}\n trafikey: {t!r}"
        else:
            assert masked(t) == masked(v), f"{step!r}\n valkey:   {v!r}\n trafikey: {t!r}"


def assert_refused(p: Pair, steps: list[tuple]) -> None:
    """Each step is refused with Valkey's error and changes nothing."""
    before = state(p.t)
    assert before == state(p.v)
    for step in steps:
        v, t = p.both(*step)
        assert v.startswith(b"-"), (step, v)
        assert t == v, f"{step!r}\n valkey:   {v!r}\n trafikey: {t!r}"
        assert state(p.t) == before, step
    assert state(p.v) == before


SETUP = [
    ("XADD", "s", "1-1", "a", "1"), ("XADD", "s", "1-*", "b", "2"), ("XADD", "s", "2-*", "c", "3"),
    ("XADD", "s", "2", "d", "4"), ("XADD", "s", "3-5", "e", "5", "f", "6"), ("SET", "str", "x"),
]


def test_xadd_ids_and_trimming(pair23: Pair) -> None:
    assert_steps(pair23, SETUP)
    assert_steps(pair23, [
        ("XADD", "s", "NOMKSTREAM", "4-0", "x", "y"), ("XADD", "nokey", "NOMKSTREAM", "4-0", "x", "y"),
        ("XADD", "s", "MAXLEN", "=", "4", "5-0", "a", "b"), ("XADD", "s", "MINID", "3", "6-0", "a", "b"),
        ("XADD", "s", "MAXLEN", "10", "7-0", "a", "b"), ("XADD", "s", "MAXLEN", "~", "2", "8-0", "a", "b"),
        ("XADD", "s", "MAXLEN", "~", "2", "LIMIT", "0", "9-0", "a", "b"),
        ("XADD", "s", "maxlen", "3", "nomkstream", "10-*", "a", "b"),
        ("XADD", "t", "18446744073709551615-18446744073709551615", "a", "b"),
        ("XADD", "s", "18446744073709551615-*", "a", "b"), ("XLEN", "s"), ("XRANGE", "s", "-", "+"),
    ])


def test_xadd_refusals(pair23: Pair) -> None:
    assert_steps(pair23, SETUP)
    assert_refused(pair23, [
        ("XADD", "s", "1-1", "a", "1"), ("XADD", "s", "3-5", "a", "1"), ("XADD", "s", "0-0", "a", "1"),
        ("XADD", "nokey", "0-0", "a", "1"), ("XADD", "nokey", "0", "a", "1"), ("XADD", "s", "3-5", "a"),
        ("XADD", "s", "3-6", "a", "b", "c"), ("XADD", "s", "*"), ("XADD", "nokey", "+", "a", "b"),
        ("XADD", "nokey", "-", "a", "b"), ("XADD", "nokey", "abc", "a", "b"), ("XADD", "nokey", "1-x", "a", "b"),
        ("XADD", "nokey", "1-2-3", "a", "b"), ("XADD", "nokey", "99999999999999999999-1", "a", "b"),
        ("XADD", "nokey", "1-*-", "a", "b"), ("XADD", "nokey", "*-1", "a", "b"),
        ("XADD", "nokey", "x" * 200, "a", "b"),
        ("XADD", "s", "MAXLEN", "-1", "4-0", "a", "b"), ("XADD", "s", "MAXLEN", "x", "4-0", "a", "b"),
        ("XADD", "s", "MAXLEN", "~", "x", "4-0", "a", "b"), ("XADD", "s", "MINID", "+", "4-0", "a", "b"),
        ("XADD", "s", "MINID", "=", "abc", "4-0", "a", "b"),
        ("XADD", "s", "MAXLEN", "1", "MINID", "1", "4-0", "a", "b"),
        ("XADD", "s", "MINID", "1", "MAXLEN", "1", "4-0", "a", "b"),
        ("XADD", "s", "LIMIT", "10", "4-0", "a", "b"), ("XADD", "s", "LIMIT", "-1", "4-0", "a", "b"),
        ("XADD", "s", "LIMIT", "x", "4-0", "a", "b"), ("XADD", "s", "MAXLEN", "1", "LIMIT", "10", "4-0", "a", "b"),
        ("XADD", "s", "MAXLEN", "=", "1", "LIMIT", "0", "4-0", "a", "b"),
        ("XADD", "str", "4-0", "a", "b"), ("XADD", "str", "NOMKSTREAM", "4-0", "a", "b"),
        ("XADD", "t", "NOMKSTREAM", "MAXLEN", "-5", "*", "a", "b"),
    ])
    assert_steps(pair23, [("XADD", "t", "18446744073709551615-18446744073709551615", "a", "b")])
    assert_refused(pair23, [("XADD", "t", "*", "a", "b"), ("XADD", "t", "5-*", "a", "b")])


def test_ranges_length_and_deletes(pair23: Pair) -> None:
    assert_steps(pair23, SETUP)
    assert_steps(pair23, [
        ("XRANGE", "s", "-", "+"), ("XRANGE", "s", "-", "+", "COUNT", "0"), ("XRANGE", "s", "-", "+", "COUNT", "-3"),
        ("XRANGE", "s", "-", "+", "COUNT", "2"), ("XRANGE", "s", "-", "+", "count", "1", "COUNT", "3"),
        ("XRANGE", "s", "(1-1", "+"), ("XRANGE", "s", "(1-1", "(3-5"), ("XRANGE", "s", "2", "2"),
        ("XRANGE", "s", "3", "1"), ("XREVRANGE", "s", "+", "-"), ("XREVRANGE", "s", "+", "-", "COUNT", "1"),
        ("XREVRANGE", "s", "(3-5", "-"), ("XREVRANGE", "s", "-", "+"), ("XRANGE", "nokey", "-", "+"),
        ("XRANGE", "nokey", "-", "+", "COUNT", "0"), ("XLEN", "s"), ("XLEN", "nokey"),
        ("XRANGE", "s", "-", "(0"), ("XRANGE", "s", "(18446744073709551615-18446744073709551614", "+"),
        ("XDEL", "s", "2-0", "99-0", "2-0"), ("XDEL", "nokey", "1-1"), ("XDEL", "nokey", "junk"),
        ("XDEL", "s", "1-1"), ("XLEN", "s"), ("XINFO", "STREAM", "s"),
    ])
    assert_refused(pair23, [
        ("XRANGE", "s", "-", "+", "COUNT"), ("XRANGE", "s", "-", "+", "FOO", "1"),
        ("XRANGE", "s", "-", "+", "COUNT", "x"),
        ("XRANGE", "s", "(", "+"), ("XRANGE", "s", "(-", "+"), ("XRANGE", "s", "-", "(+"), ("XRANGE", "s", "x", "+"),
        ("XRANGE", "s", "-", "(0-0"), ("XRANGE", "s", "(18446744073709551615-18446744073709551615", "+"),
        ("XREVRANGE", "s", "(0-0", "-"), ("XRANGE", "str", "-", "+"), ("XREVRANGE", "str", "+", "-"),
        ("XLEN", "str"), ("XDEL", "s", "1-1", "junk"), ("XDEL", "s", "+"), ("XDEL", "str", "1-1"),
    ])


def test_xtrim_and_xsetid(pair23: Pair) -> None:
    assert_steps(pair23, SETUP + [("XADD", "s", f"{i}-0", "k", "v") for i in range(10, 40)])
    assert_steps(pair23, [
        ("XTRIM", "s", "MAXLEN", "30"), ("XTRIM", "s", "MAXLEN", "=", "28"), ("XTRIM", "s", "MINID", "12"),
        ("XTRIM", "s", "MINID", "~", "0"), ("XTRIM", "s", "MAXLEN", "~", "100"),
        ("XTRIM", "s", "MAXLEN", "~", "5", "LIMIT", "0"), ("XTRIM", "nokey", "MAXLEN", "0"), ("XLEN", "s"),
        ("XSETID", "s", "100-0"), ("XSETID", "s", "100-0", "ENTRIESADDED", "500", "MAXDELETEDID", "50-0"),
        ("XINFO", "STREAM", "s"), ("XTRIM", "s", "MAXLEN", "0"), ("XSETID", "s", "1-0"), ("XINFO", "STREAM", "s"),
        ("XADD", "s", "MINID", "500", "200-0", "a", "b"), ("XINFO", "STREAM", "s"),
    ])
    assert_steps(pair23, [("XADD", "t", "5-0", "a", "b"), ("XADD", "t", "6-0", "a", "b")])
    assert_refused(pair23, [
        ("XTRIM", "s"), ("XTRIM", "s", "LIMIT", "5"), ("XTRIM", "s", "FOO"), ("XTRIM", "s", "MAXLEN", "-1"),
        ("XTRIM", "s", "MAXLEN", "1", "LIMIT", "5"), ("XTRIM", "s", "MAXLEN", "1", "MINID", "1"),
        ("XTRIM", "s", "MINID", "-"), ("XTRIM", "str", "MAXLEN", "1"),
        ("XTRIM", "s", "MAXLEN", "~", "1", "LIMIT", "-1"),
        ("XSETID", "t", "5-0"), ("XSETID", "t", "junk"), ("XSETID", "t", "+"), ("XSETID", "nokey", "1-0"),
        ("XSETID", "str", "1-0"), ("XSETID", "t", "10-0", "ENTRIESADDED", "-1"),
        ("XSETID", "t", "10-0", "ENTRIESADDED", "x"), ("XSETID", "t", "10-0", "ENTRIESADDED", "1"),
        ("XSETID", "t", "10-0", "MAXDELETEDID", "11-0"), ("XSETID", "t", "10-0", "MAXDELETEDID", "x"),
        ("XSETID", "t", "10-0", "FOO"), ("XSETID", "t", "10-0", "ENTRIESADDED"),
        ("XSETID", "s", "49-0"),
    ])


def test_xread(pair23: Pair) -> None:
    assert_steps(pair23, [*SETUP, ("XADD", "t", "9-0", "z", "z")])
    assert_steps(pair23, [
        ("XREAD", "STREAMS", "s", "0"), ("XREAD", "COUNT", "1", "STREAMS", "s", "t", "0", "0"),
        ("XREAD", "COUNT", "0", "STREAMS", "s", "1-1"), ("XREAD", "COUNT", "-1", "STREAMS", "s", "2"),
        ("XREAD", "STREAMS", "s", "$"), ("XREAD", "STREAMS", "s", "+"),
        ("XREAD", "STREAMS", "s", "nokey", "t", "+", "+", "+"),
        ("XREAD", "STREAMS", "nokey", "0"), ("XREAD", "STREAMS", "s", "3-5"), ("XREAD", "STREAMS", "s", "s", "0", "2"),
        ("XREAD", "BLOCK", "0", "STREAMS", "s", "0"), ("XREAD", "streams", "s", "0-0"),
        ("MULTI",), ("XREAD", "BLOCK", "0", "STREAMS", "s", "$"), ("XREAD", "BLOCK", "0", "STREAMS", "nokey", "$"),
        ("EXEC",),
        ("EVAL", "return redis.call('xread', 'BLOCK', '0', 'STREAMS', KEYS[1], '$')", "1", "s"),
        ("XGROUP", "CREATE", "e", "g", "$", "MKSTREAM"), ("XREAD", "STREAMS", "e", "+"),
        ("XREAD", "COUNT", "3", "STREAMS", "e", "s", "+", "+"),
    ])
    assert_refused(pair23, [
        ("XREAD", "STREAMS", "s"), ("XREAD", "COUNT", "1", "STREAMS", "s", "t", "0"), ("XREAD", "s", "0"),
        ("XREAD", "GROUP", "g", "c", "STREAMS", "s", "0"), ("XREAD", "NOACK", "STREAMS", "s", "0"),
        ("XREAD", "STREAMS", "s", ">"), ("XREAD", "BLOCK", "-1", "STREAMS", "s", "0"),
        ("XREAD", "BLOCK", "x", "STREAMS", "s", "0"), ("XREAD", "BLOCK", "1.5", "STREAMS", "s", "0"),
        ("XREAD", "BLOCK", "9223372036854775807", "STREAMS", "s", "0"), ("XREAD", "COUNT", "x", "STREAMS", "s", "0"),
        ("XREAD", "FOO", "STREAMS", "s", "0"), ("XREAD", "STREAMS", "str", "0"),
        ("XREAD", "STREAMS", "s", "str", "0", "0"),
        ("XREAD", "STREAMS", "s", "junk"), ("XREAD", "STREAMS", "s", "-"), ("XREAD", "COUNT"),
    ])


def test_consumer_groups(pair23: Pair) -> None:
    assert_steps(pair23, SETUP)
    assert_steps(pair23, [
        ("XGROUP", "CREATE", "s", "g", "0"), ("XGROUP", "CREATE", "s", "g2", "$", "ENTRIESREAD", "5"),
        ("XGROUP", "CREATE", "t", "g", "$", "MKSTREAM"), ("XGROUP", "CREATE", "t", "g2", "0-1", "MKSTREAM"),
        ("XINFO", "GROUPS", "s"), ("XINFO", "GROUPS", "t"),
        ("XREADGROUP", "GROUP", "g", "alice", "COUNT", "2", "STREAMS", "s", ">"),
        ("XREADGROUP", "GROUP", "g", "bob", "STREAMS", "s", ">"),
        ("XREADGROUP", "GROUP", "g", "bob", "STREAMS", "s", ">"),
        ("XREADGROUP", "GROUP", "g", "alice", "STREAMS", "s", "0"),
        ("XREADGROUP", "GROUP", "g", "alice", "COUNT", "1", "STREAMS", "s", "1-1"),
        ("XREADGROUP", "GROUP", "g", "carol", "STREAMS", "s", "t", ">", ">"),
        ("XREADGROUP", "GROUP", "g2", "dave", "NOACK", "STREAMS", "s", "0"),
        ("XINFO", "GROUPS", "s"), ("XPENDING", "s", "g"), ("XPENDING", "s", "g", "-", "+", "10"),
        ("XPENDING", "s", "g", "IDLE", "0", "-", "+", "2"), ("XPENDING", "s", "g", "IDLE", "999999", "-", "+", "10"),
        ("XPENDING", "s", "g", "(1-1", "+", "10", "bob"), ("XPENDING", "s", "g", "-", "+", "-1"),
        ("XPENDING", "s", "g", "-", "+", "10", "nobody"), ("XPENDING", "s", "g2"),
        ("XACK", "s", "g", "1-1", "9-9"), ("XACK", "s", "nog", "1-1"), ("XACK", "nokey", "g", "junk"),
        ("XDEL", "s", "2-0"), ("XREADGROUP", "GROUP", "g", "bob", "STREAMS", "s", "0"), ("XINFO", "GROUPS", "s"),
        ("XINFO", "CONSUMERS", "s", "g"), ("XINFO", "STREAM", "s", "FULL"),
        ("XINFO", "STREAM", "s", "FULL", "COUNT", "1"), ("XINFO", "STREAM", "s", "FULL", "COUNT", "-1"),
        ("XCLAIM", "s", "g", "erin", "0", "1-2", "2-0", "3-5", "JUSTID"), ("XCLAIM", "s", "g", "erin", "0", "2-1"),
        ("XCLAIM", "s", "g", "frank", "0", "1-1", "FORCE", "RETRYCOUNT", "7", "IDLE", "-5", "LASTID", "9-0"),
        ("XCLAIM", "s", "g", "frank", "999999", "3-5"), ("XCLAIM", "s", "g", "frank", "0", "3-5", "TIME", "1"),
        ("XPENDING", "s", "g", "-", "+", "10"), ("XINFO", "GROUPS", "s"),
        ("XAUTOCLAIM", "s", "g", "gina", "0", "0", "COUNT", "1"), ("XAUTOCLAIM", "s", "g", "gina", "0", "(1-1"),
        ("XAUTOCLAIM", "s", "g", "gina", "0", "0", "JUSTID"), ("XAUTOCLAIM", "s", "g", "gina", "999999", "0"),
        ("XADD", "s", "5-0", "x", "y"), ("XREADGROUP", "GROUP", "g", "hal", "STREAMS", "s", ">"),
        ("XDEL", "s", "5-0", "1-2"), ("XAUTOCLAIM", "s", "g", "gina", "0", "0"), ("XPENDING", "s", "g"),
        ("XGROUP", "CREATECONSUMER", "s", "g", "zed"), ("XGROUP", "CREATECONSUMER", "s", "g", "zed"),
        ("XGROUP", "DELCONSUMER", "s", "g", "gina"), ("XGROUP", "DELCONSUMER", "s", "g", "gina"),
        ("XGROUP", "SETID", "s", "g", "1-0", "ENTRIESREAD", "1"), ("XINFO", "GROUPS", "s"),
        ("XGROUP", "SETID", "s", "g", "$"), ("XGROUP", "SETID", "s", "g", "-"), ("XINFO", "GROUPS", "s"),
        ("XGROUP", "DESTROY", "s", "g"), ("XGROUP", "DESTROY", "s", "g"), ("XINFO", "GROUPS", "s"),
        ("XGROUP", "HELP"), ("XINFO", "HELP"), ("xinfo", "help"),
    ])


def test_consumer_group_refusals(pair23: Pair) -> None:
    assert_steps(pair23, [*SETUP, ("XGROUP", "CREATE", "s", "g", "0"),
                          ("XREADGROUP", "GROUP", "g", "a", "STREAMS", "s", ">")])
    assert_refused(pair23, [
        ("XGROUP", "CREATE", "s", "g", "$"), ("XGROUP", "CREATE", "nokey", "g", "$"),
        ("XGROUP", "CREATE", "s", "g2", "0", "ENTRIESREAD", "-3"),
        ("XGROUP", "CREATE", "s", "g2", "0", "ENTRIESREAD", "x"),
        ("XGROUP", "CREATE", "s", "g2", "0", "ENTRIESREAD"), ("XGROUP", "CREATE", "s", "g2", "0", "FOO"),
        ("XGROUP", "CREATE", "nokey", "g", "abc", "MKSTREAM"), ("XGROUP", "CREATE", "nokey", "g", "+", "MKSTREAM"),
        ("XGROUP", "CREATE", "s", "g2", "0", "MKSTREAM", "MKSTREAM", "MKSTREAM", "MKSTREAM"),
        ("XGROUP", "CREATE", "str", "g", "0"), ("XGROUP", "CREATE", "str", "g", "0", "MKSTREAM"),
        ("XGROUP", "SETID", "s", "nog", "0"), ("XGROUP", "SETID", "s", "g", "0", "MKSTREAM"),
        ("XGROUP", "SETID", "s", "g", "x"), ("XGROUP", "SETID", "nokey", "g", "0"),
        ("XGROUP", "SETID", "s", "g", "0", "ENTRIESREAD", "-2"),
        ("XGROUP", "CREATECONSUMER", "s", "nog", "c"), ("XGROUP", "DELCONSUMER", "s", "nog", "c"),
        ("XGROUP", "DESTROY", "nokey", "g"), ("XGROUP", "FOO"), ("XGROUP", "FOO", "s", "g", "x"),
        ("XGROUP", "HELP", "x"), ("XGROUP", "CREATE", "s"), ("XGROUP", "DESTROY", "s", "g", "x"),
        ("XREADGROUP", "GROUP", "nog", "c", "STREAMS", "s", ">"),
        ("XREADGROUP", "GROUP", "g", "c", "STREAMS", "nokey", ">"),
        ("XREADGROUP", "GROUP", "g", "c", "STREAMS", "str", ">"), ("XREADGROUP", "STREAMS", "s", ">"),
        ("XREADGROUP", "GROUP", "g", "c", "STREAMS", "s"), ("XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", "$"),
        ("XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", "+"), ("XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", "x"),
        ("XREADGROUP", "GROUP", "g", "STREAMS", "s", ">"),
        ("XREADGROUP", "GROUP", "g", "c", "FOO", "STREAMS", "s", ">"),
        ("XACK", "s", "g", "1-1", "x"), ("XACK", "str", "g", "1-1"),
        ("XPENDING", "s", "nog"), ("XPENDING", "nokey", "g"), ("XPENDING", "str", "g"), ("XPENDING", "s", "g", "-"),
        ("XPENDING", "s", "g", "-", "+"), ("XPENDING", "s", "g", "-", "+", "x"), ("XPENDING", "s", "g", "x", "+", "1"),
        ("XPENDING", "s", "g", "IDLE", "x", "-", "+", "1"), ("XPENDING", "s", "g", "IDLE", "5", "-", "+"),
        ("XPENDING", "s", "g", "(+", "+", "1"), ("XPENDING", "s", "g", "-", "(-", "1"),
        ("XCLAIM", "s", "nog", "c", "0", "1-1"), ("XCLAIM", "nokey", "g", "c", "0", "1-1"),
        ("XCLAIM", "str", "g", "c", "0", "1-1"), ("XCLAIM", "s", "g", "c", "x", "1-1"),
        ("XCLAIM", "s", "g", "c", "0", "1-1", "FOO"), ("XCLAIM", "s", "g", "c", "0", "1-1", "IDLE", "x"),
        ("XCLAIM", "s", "g", "c", "0", "1-1", "TIME", "x"), ("XCLAIM", "s", "g", "c", "0", "1-1", "RETRYCOUNT", "x"),
        ("XCLAIM", "s", "g", "c", "0", "1-1", "LASTID", "x"), ("XCLAIM", "s", "g", "c", "0", "1-1", "IDLE"),
        ("XAUTOCLAIM", "s", "nog", "c", "0", "0"), ("XAUTOCLAIM", "nokey", "g", "c", "0", "0"),
        ("XAUTOCLAIM", "str", "g", "c", "0", "0"), ("XAUTOCLAIM", "s", "g", "c", "x", "0"),
        ("XAUTOCLAIM", "s", "g", "c", "0", "x"), ("XAUTOCLAIM", "s", "g", "c", "0", "(+"),
        ("XAUTOCLAIM", "s", "g", "c", "0", "0", "COUNT", "0"), ("XAUTOCLAIM", "s", "g", "c", "0", "0", "COUNT", "x"),
        ("XAUTOCLAIM", "s", "g", "c", "0", "0", "COUNT", "8070450532247928833"),
        ("XAUTOCLAIM", "s", "g", "c", "0", "0", "COUNT", "1000000000000"),
        ("XAUTOCLAIM", "s", "g", "c", "0", "0", "FOO"), ("XAUTOCLAIM", "s", "g", "c", "0", "0", "COUNT"),
        ("XINFO", "STREAM", "nokey"), ("XINFO", "STREAM", "str"), ("XINFO", "STREAM", "s", "FOO"),
        ("XINFO", "STREAM", "s", "FULL", "COUNT"), ("XINFO", "STREAM", "s", "FULL", "COUNT", "x"),
        ("XINFO", "STREAM", "s", "FULL", "FOO", "1"), ("XINFO", "GROUPS", "nokey"), ("XINFO", "GROUPS", "str"),
        ("XINFO", "CONSUMERS", "s", "nog"), ("XINFO", "CONSUMERS", "nokey", "g"), ("XINFO", "FOO", "s"),
        ("XINFO", "GROUPS", "s", "x"), ("XINFO", "CONSUMERS", "s"), ("XINFO", "HELP", "x"),
    ])


@pytest.mark.parametrize("cmd", [
    ("LPUSH", "s", "x"), ("SADD", "s", "x"), ("HSET", "s", "f", "v"), ("ZADD", "s", "1", "x"), ("GET", "s"),
    ("INCR", "s"), ("APPEND", "s", "x"), ("LRANGE", "s", "0", "-1"), ("SMEMBERS", "s"),
])
def test_other_commands_on_a_stream(pair23: Pair, cmd: tuple) -> None:
    assert_steps(pair23, SETUP)
    assert_refused(pair23, [cmd])

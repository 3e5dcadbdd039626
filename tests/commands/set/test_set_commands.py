"""Set commands against Valkey, byte for byte, in RESP2 and RESP3.

Scripts run line by line on both servers (``run``); every reply must be the
same bytes. An intset answers in numeric order and a listpack in insertion
order, so those replies are compared exactly. Where Valkey's order comes from
its hash table (a hashtable-encoded set's SMEMBERS, SPOP, SRANDMEMBER, SSCAN)
or from its random generator, the tests compare the members as sets and say
so. Each refusal is checked with the keyspace unchanged on both sides.
"""

from __future__ import annotations

from typing import Any

import pytest
from helpers.aof_util import keyspace
from helpers.replies import bulk_items
from helpers.resp_wire import Wire
from helpers.script import run, words


def assert_same_keyspace(valkey_server: Any, trafikey_server: Any) -> None:
    assert keyspace(trafikey_server.port) == keyspace(valkey_server.port)


def assert_refused(pair: Any, valkey_server: Any, trafikey_server: Any, script: str) -> None:
    """Each line is an error on both servers, with the same text, and the
    keyspace stays as it was."""
    before = keyspace(valkey_server.port)
    for line in script.strip().splitlines():
        line = line.strip()
        if line:
            r = pair.check(*words(line))
            assert r.startswith(b"-"), line
    assert keyspace(valkey_server.port) == before
    assert keyspace(trafikey_server.port) == before


# -- the small encodings: exact order ----------------------------------------------------


def test_sadd_srem_scard_members_intset_and_listpack(pair23) -> None:
    run(pair23, """
        SADD s 5 3 -1 9223372036854775807 -9223372036854775808 3
        SMEMBERS s
        OBJECT ENCODING s
        SCARD s
        SISMEMBER s 3
        SISMEMBER s 03
        SISMEMBER s nope
        SMISMEMBER s 3 4 5 -1
        SMISMEMBER nokey a b
        SREM s 3 03 nope
        SMEMBERS s
        SADD s 01
        OBJECT ENCODING s
        SMEMBERS s
        SADD s 7 b a
        SMEMBERS s
        SREM s 5
        SADD s 5
        SMEMBERS s
        SCARD s
        SCARD nokey
        SMEMBERS nokey
        SISMEMBER nokey a
        SREM nokey a
        SREM s 5 7 b a 01 -1 9223372036854775807 -9223372036854775808
        EXISTS s
        SADD l a 1 2
        OBJECT ENCODING l
        SMEMBERS l
        SADD big 9223372036854775808
        OBJECT ENCODING big
        SADD e ""
        SMEMBERS e
        TYPE l
    """)


def test_encoding_thresholds(pair23) -> None:
    """t_set.c's moves: the size hint of a whole SADD, the intset bound, the
    listpack's entry and value bounds, one way."""
    ints = " ".join(str(i) for i in range(512))
    run(pair23, f"""
        SADD a {ints}
        OBJECT ENCODING a
        SADD a 512
        OBJECT ENCODING a
        SREM a 512 511 510
        OBJECT ENCODING a
        SADD b {" ".join(str(i) for i in range(127))}
        SADD b x
        OBJECT ENCODING b
        SADD b y
        OBJECT ENCODING b
        SADD c {" ".join(str(i) for i in range(128))}
        SADD c x
        OBJECT ENCODING c
        SADD d 1 {"v" * 64}
        OBJECT ENCODING d
        SMEMBERS d
        SADD d {"w" * 65}
        OBJECT ENCODING d
        SADD f {" ".join("m%d" % i for i in range(128))}
        OBJECT ENCODING f
        SADD f2 {" ".join("m%d" % i for i in range(129))}
        OBJECT ENCODING f2
        SADD g x
        SADD g {" ".join(str(i) for i in range(128))}
        OBJECT ENCODING g
        SADD h 1 2 3
        SADD h {" ".join(str(i) for i in range(600))}
        OBJECT ENCODING h
        SADD i 1 {"z" * 65}
        OBJECT ENCODING i
    """)


def test_config_thresholds(pair) -> None:
    try:
        run(pair, """
            CONFIG SET set-max-intset-entries 4
            CONFIG SET set-max-listpack-entries 3
            CONFIG SET set-max-listpack-value 4
            SADD a 1 2 3 4
            OBJECT ENCODING a
            SADD a 5
            OBJECT ENCODING a
            SADD b 1 2
            SADD b abcd
            OBJECT ENCODING b
            SMEMBERS b
            SADD b x
            OBJECT ENCODING b
            SADD c 10000 2
            SADD c a
            OBJECT ENCODING c
            SADD d abcde
            OBJECT ENCODING d
        """)
    finally:
        run(pair, """
            CONFIG SET set-max-intset-entries 512
            CONFIG SET set-max-listpack-entries 128
            CONFIG SET set-max-listpack-value 64
        """)


def test_wrongtype_and_arity(pair23, valkey_server, trafikey_server) -> None:
    run(pair23, """
        SET str x
        SADD s a b
    """)
    assert_refused(pair23, valkey_server, trafikey_server, """
        SADD str a
        SREM str a
        SCARD str
        SISMEMBER str a
        SMISMEMBER str a
        SMEMBERS str
        SPOP str
        SPOP str 2
        SRANDMEMBER str
        SRANDMEMBER str 2
        SMOVE str s a
        SMOVE s str a
        SINTER s str
        SINTER str nokey
        SINTERSTORE d s str
        SINTERCARD 2 s str
        SUNION s str
        SUNIONSTORE d s str
        SDIFF s str
        SDIFF nokey str
        SDIFFSTORE d s str
        SSCAN str 0
        SADD s
        SREM s
        SCARD
        SISMEMBER s
        SMISMEMBER s
        SMEMBERS
        SPOP
        SPOP s 1 2
        SRANDMEMBER s 1 2
        SMOVE s d
        SINTER
        SINTERSTORE d
        SINTERCARD 1
        SSCAN s
    """)


def test_count_and_numkeys_errors(pair23, valkey_server, trafikey_server) -> None:
    run(pair23, "SADD s a b c")
    assert_refused(pair23, valkey_server, trafikey_server, """
        SPOP s -1
        SPOP s x
        SPOP s 9223372036854775808
        SPOP str -1
        SRANDMEMBER s x
        SRANDMEMBER s -9223372036854775808
        SRANDMEMBER s 9223372036854775808
        SINTERCARD 0 s
        SINTERCARD -1 s
        SINTERCARD x s
        SINTERCARD 2 s
        SINTERCARD 1 s LIMIT
        SINTERCARD 1 s LIMIT -1
        SINTERCARD 1 s LIMIT x
        SINTERCARD 1 s FOO 1
        SSCAN s x
        SSCAN s 0 COUNT 0
        SSCAN s 0 COUNT x
        SSCAN s 0 NOVALUES
        SSCAN s 0 NOSCORES
        SSCAN s 0 MATCH
    """)


def test_smove(pair23) -> None:
    run(pair23, """
        SADD a 1 2 x
        SMOVE a b 1
        SMEMBERS a
        SMEMBERS b
        OBJECT ENCODING b
        SMOVE a b nope
        SMOVE nokey b 1
        SMOVE a a 2
        SMOVE a a nope
        SMOVE a b x
        SMEMBERS b
        OBJECT ENCODING b
        SMOVE a b 2
        EXISTS a
        SADD c 1
        SADD b 1
        SMOVE c b 1
        EXISTS c
        SMEMBERS b
        SET str v
        SMOVE nokey str 1
    """)


def test_algebra_small(pair23) -> None:
    """Intset-only inputs and stored results have a defined order: exact."""
    run(pair23, """
        SADD a 3 1 2 5
        SADD b 2 3 4 5
        SADD c z y 5 3
        SADD d 9
        SINTER a b
        SINTER a b c
        SINTER c a
        SINTER a nokey
        SINTER nokey a
        SUNION a b
        SUNION a b d nokey
        SUNION nokey
        SDIFF a b
        SDIFF a nokey
        SDIFF nokey a
        SDIFF a b d
        SDIFF a a
        SDIFF a b a
        SINTERCARD 2 a b
        SINTERCARD 2 a b LIMIT 1
        SINTERCARD 2 a b LIMIT 0
        SINTERCARD 2 a b limit 1 LIMIT 5
        SINTERCARD 2 a nokey
        SINTERCARD 2 a a
        SINTERSTORE dst a b
        SMEMBERS dst
        OBJECT ENCODING dst
        SINTERSTORE dst c a
        SMEMBERS dst
        OBJECT ENCODING dst
        SUNIONSTORE dst a c
        SMEMBERS dst
        OBJECT ENCODING dst
        SDIFFSTORE dst c a
        SMEMBERS dst
        OBJECT ENCODING dst
        SINTERSTORE dst a d
        EXISTS dst
        SUNIONSTORE dst a
        SINTERSTORE dst a nokey
        EXISTS dst
        SET str v
        SUNIONSTORE str a b
        TYPE str
        SDIFFSTORE str nokey
        EXISTS str
        SDIFFSTORE a a b
        SMEMBERS a
    """)


def test_algebra_with_listpacks_compared_as_sets(pair23) -> None:
    """SUNION and SDIFF of an input that is not an intset build a hashtable
    in Valkey, whose order is its hash table's: compared as sets."""
    run(pair23, """
        SADD a 3 1 2 5
        SADD c z y 5 3
    """)
    for cmd in (("SUNION", "c", "a"), ("SUNION", "a", "c"), ("SDIFF", "c", "a"), ("SDIFF", "a", "c"),
                ("SUNION", "c")):
        v, t = pair23.both(*cmd)
        assert v[:1] == t[:1] and sorted(bulk_items(v)) == sorted(bulk_items(t)), cmd


def test_store_result_encodings(pair23) -> None:
    """The encoding each STORE result ends in, as Valkey builds it."""
    ints = " ".join(str(i) for i in range(600))
    strs = " ".join("m%d" % i for i in range(200))
    run(pair23, f"""
        SADD hi {ints}
        SADD hi2 1 2 3 x {" ".join(str(i) for i in range(200))}
        SADD hs {strs}
        SADD lp a b 1 2
        SADD is 1 2 3 4
        SINTERSTORE d hi hi2
        OBJECT ENCODING d
        SINTERSTORE d hs hs
        OBJECT ENCODING d
        SINTERSTORE d lp is
        OBJECT ENCODING d
        SMEMBERS d
        SINTERSTORE d is lp
        OBJECT ENCODING d
        SINTERSTORE d lp lp
        OBJECT ENCODING d
        SMEMBERS d
        SUNIONSTORE d lp is
        OBJECT ENCODING d
        SMEMBERS d
        SUNIONSTORE d is lp
        OBJECT ENCODING d
        SMEMBERS d
        SDIFFSTORE d hi is
        OBJECT ENCODING d
        SDIFFSTORE d hi hi2
        OBJECT ENCODING d
        SCARD d
        SDIFFSTORE d hs lp is
        OBJECT ENCODING d
        SDIFFSTORE d hi2 hi
        OBJECT ENCODING d
        SMEMBERS d
        SDIFFSTORE d lp is
        OBJECT ENCODING d
        SMEMBERS d
        SDIFFSTORE d is hi hi2 lp
        EXISTS d
    """)


def test_sscan_small(pair23) -> None:
    run(pair23, """
        SADD s 10 2 33 4
        SSCAN s 0
        SSCAN s 0 MATCH 3*
        SSCAN s 0 COUNT 1
        SADD l b a c
        SSCAN l 0 MATCH [ab]
        SSCAN nokey 0
        SSCAN s 18446744073709551615
    """)


# -- random and hashtable-ordered replies: compared as sets -----------------------------


def test_spop_srandmember_properties(pair23) -> None:
    """Which members come out is random on both servers: sizes, shapes and
    membership are compared; the exact replies where nothing is random."""
    run(pair23, """
        SPOP nokey
        SPOP nokey 3
        SRANDMEMBER nokey
        SRANDMEMBER nokey 3
        SRANDMEMBER nokey -3
        SADD s 1
        SPOP s 0
        SRANDMEMBER s 0
        SRANDMEMBER s 1
        SRANDMEMBER s -3
        SPOP s
        EXISTS s
    """)
    for enc_members in (["1", "2", "3", "4", "5"], ["a", "b", "c", "d", "e"],
                        ["m%d" % i for i in range(300)]):
        for w in (pair23.v, pair23.t):
            w.call("DEL", "s")
            w.call("SADD", "s", *enc_members)
        assert pair23.check("OBJECT", "ENCODING", "s")
        full = set(m.encode() for m in enc_members)
        for n in (1, 2, len(full) - 1, len(full), len(full) + 5):
            v, t = pair23.both("SRANDMEMBER", "s", n)
            assert t[:1] == v[:1] == b"*"
            tv, vv = bulk_items(t), bulk_items(v)
            assert len(tv) == len(vv) == min(n, len(full))
            assert len(set(tv)) == len(tv) and set(tv) <= full
        v, t = pair23.both("SRANDMEMBER", "s", -20)
        assert len(bulk_items(t)) == len(bulk_items(v)) == 20 and set(bulk_items(t)) <= full
        v, t = pair23.both("SPOP", "s", 2)
        assert v[:1] == t[:1] and len(bulk_items(t)) == 2 and set(bulk_items(t)) <= full
        assert pair23.check("SCARD", "s")
        v, t = pair23.both("SPOP", "s")
        assert bulk_items(b"*1\r\n" + t) and bulk_items(b"*1\r\n" + t)[0] in full
        v, t = pair23.both("SPOP", "s", 1000)
        assert len(bulk_items(v)) == len(bulk_items(t)) == len(full) - 3
        assert pair23.check("EXISTS", "s") == b":0\r\n"


@pytest.mark.parametrize("members", [[str(i) for i in range(40)], ["m%d" % i for i in range(300)]])
def test_single_spop_and_srandmember_amid_writes(pair, members: list[str]) -> None:
    """One-member SPOP and SRANDMEMBER interleaved with SADD, SREM and SMOVE:
    each answer is a member of the set as it stands (never one removed
    meanwhile, and members added meanwhile can come out), and popping to
    the end yields exactly what is left, each member once: on both servers."""
    for w in (pair.v, pair.t):
        w.call("SADD", "s", *members)
    for side, w in (("v", pair.v), ("t", pair.t)):
        have = {m.encode() for m in members}
        for step in range(len(members) // 2):
            if step % 3 == 0:
                m = w.call("SRANDMEMBER", "s")
                assert bulk_items(b"*1\r\n" + m)[0] in have
            m = bulk_items(b"*1\r\n" + w.call("SPOP", "s"))[0]
            assert m in have, (side, step, m)
            have.discard(m)
            if step % 4 == 0:
                gone = sorted(have)[step % len(have)]
                assert w.call("SREM", "s", gone) == b":1\r\n"
                have.discard(gone)
            if step % 5 == 0:
                new = b"n%d" % step
                assert w.call("SADD", "s", new) == b":1\r\n"
                have.add(new)
            if step % 7 == 0:
                moved = sorted(have)[0]
                assert w.call("SMOVE", "s", "d", moved) == b":1\r\n"
                have.discard(moved)
        popped = []
        while True:
            r = w.call("SPOP", "s")
            if r in (b"$-1\r\n", b"_\r\n"):
                break
            popped.append(bulk_items(b"*1\r\n" + r)[0])
        assert len(popped) == len(set(popped)) and set(popped) == have, side
    assert pair.check("EXISTS", "s") == b":0\r\n"


def test_hashtable_replies_as_sets(pair23) -> None:
    """A hashtable's order is Valkey's hash table's: compared as sets."""
    members = ["m%d" % i for i in range(200)]
    for w in (pair23.v, pair23.t):
        w.call("SADD", "h", *members)
        w.call("SADD", "h2", *members[100:], "extra")
    for cmd in (("SMEMBERS", "h"), ("SINTER", "h", "h2"), ("SUNION", "h", "h2"), ("SDIFF", "h", "h2"),
                ("SDIFF", "h2", "h")):
        v, t = pair23.both(*cmd)
        assert v[:1] == t[:1], cmd
        assert sorted(bulk_items(t)) == sorted(bulk_items(v)), cmd
    for cmd in (("SINTERSTORE", "d", "h", "h2"), ("SUNIONSTORE", "d", "h", "h2"), ("SDIFFSTORE", "d", "h", "h2"),
                ("SINTERCARD", 2, "h", "h2"), ("SINTERCARD", 2, "h", "h2", "LIMIT", 7)):
        pair23.check(*cmd)
        pair23.check("OBJECT", "ENCODING", "d")
    seen: set[bytes] = set()
    cursor = b"0"
    while True:
        t = pair23.t.call("SSCAN", "h", cursor, "COUNT", 17)
        parts = bulk_items(t)
        cursor, items = parts[0], parts[1:]
        seen.update(items)
        if cursor == b"0":
            break
    assert seen == {m.encode() for m in members}


@pytest.mark.parametrize("n", [0, 1])
def test_spop_count_on_intset_keeps_encoding(pair, n: int) -> None:
    """The members popped are random: only the count and what is left's
    encoding are compared."""
    run(pair, "SADD s 1 2 3 4 5 6 7 8 9 10")
    v, t = pair.both("SPOP", "s", n)
    assert len(bulk_items(v)) == len(bulk_items(t)) == n
    run(pair, """
        SCARD s
        OBJECT ENCODING s
    """)


@pytest.mark.parametrize("members, n", [
    (["m%d" % i for i in range(200)], 190),
    ([str(i) for i in range(200)], 190),
    ([str(i) for i in range(1000)], 900),
    ([str(i) for i in range(200)] + ["x"], 190),
    (["m%d" % i for i in range(200)], 100),
])
def test_spop_large_count_rebuilds_what_is_left(pair, members: list[str], n: int) -> None:
    """A count that leaves few members makes Valkey keep them in a new set
    (a hashtable can come out a listpack); which ones is random, so the
    count and the encoding are compared."""
    for w in (pair.v, pair.t):
        w.call("SADD", "s", *members)
    pair.check("OBJECT", "ENCODING", "s")
    v, t = pair.both("SPOP", "s", n)
    assert len(bulk_items(v)) == len(bulk_items(t)) == n
    run(pair, """
        SCARD s
        OBJECT ENCODING s
    """)


def test_generic_commands_see_sets(pair23) -> None:
    """TYPE, SCAN TYPE, COPY (encoding kept), RENAME, OBJECT ENCODING."""
    run(pair23, """
        SADD s 3 1 x
        SADD i 5 4
        SADD h """ + " ".join("m%d" % i for i in range(130)) + """
        TYPE s
        SCAN 0 TYPE set COUNT 100
        SCAN 0 TYPE zset
        COPY s d
        SMEMBERS d
        OBJECT ENCODING d
        COPY i d2
        OBJECT ENCODING d2
        COPY h d3
        OBJECT ENCODING d3
        SCARD d3
        SADD d x y
        SMEMBERS s
        SMEMBERS d
        RENAME d e
        SMEMBERS e
        GET s
        HSET s f v
        ZADD s 1 a
    """)


def test_watch_sees_set_writes(pair) -> None:
    """A write that changes a set aborts a transaction watching it; one that
    changes nothing (SADD of a member, SREM of a non-member) does not."""
    others = (Wire(pair.v.port), Wire(pair.t.port))
    try:
        run(pair, "SADD s a b")
        for write, aborted in ((("SADD", "s", "a"), False), (("SREM", "s", "zz"), False),
                               (("SADD", "s", "c"), True), (("SREM", "s", "c"), True),
                               (("SPOP", "s", "0"), False), (("SMOVE", "s", "t", "a"), True),
                               (("SINTERSTORE", "s", "s", "t"), True)):
            run(pair, """
                WATCH s
                MULTI
                SCARD s
            """)
            for w in others:
                w.call(*write)
            r = pair.check("EXEC")
            assert (r == b"*-1\r\n") == aborted, (write, r)
    finally:
        for w in others:
            w.close()


def _tracked(port: int) -> list[bytes]:
    """What a RESP3 client tracking a set it read receives while another
    client writes it (no-op writes included), up to its PING's answer."""
    a, b = Wire(port), Wire(port)
    try:
        a.call("HELLO", "3")
        a.call("CLIENT", "TRACKING", "ON")
        frames = []
        for write in (("SADD", "s", "1"), ("SREM", "s", "zz"), ("SADD", "s", "2"), ("SMEMBERS", "s"),
                      ("SPOP", "s", "0"), ("SMOVE", "s", "t", "1"), ("SMEMBERS", "s"),
                      ("SUNIONSTORE", "s", "s", "t")):
            a.call("SMEMBERS", "s")
            b.call(*write)
            a.send_raw(b"*1\r\n$4\r\nPING\r\n")
            while (f := a.read_reply()) != b"+PONG\r\n":
                frames.append(f)
        return frames
    finally:
        a.close()
        b.close()


def test_tracking_invalidates_on_set_writes(pair) -> None:
    run(pair, "SADD s 1")
    v = _tracked(pair.v.port)
    assert _tracked(pair.t.port) == v
    assert len(v) >= 3


def test_srandmember_whole_set_in_encoding_order(pair23) -> None:
    """A count at least the size returns the whole set in its iteration
    order, which an intset and a listpack define; SPOP of a whole intset
    answers in numeric order (of a listpack, in hash-table order: not here)."""
    run(pair23, """
        SADD i 30 -2 7
        SRANDMEMBER i 3
        SRANDMEMBER i 100
        SADD l c a 5 b
        SREM l a
        SRANDMEMBER l 3
        SRANDMEMBER l 9223372036854775807
        SPOP i 5
        EXISTS i
    """)

"""Sorted set commands against Valkey, byte for byte, in RESP2 and RESP3.

Scripts are run line by line on both servers (``run``); every reply must be
identical. Where Valkey's answer is random (ZRANDMEMBER) or follows its hash
table (ZSCAN of a big set), properties are compared instead. Scores are kept
to short decimals except in the tests named for float formatting.
"""

from __future__ import annotations

import math
import random
import sys
from pathlib import Path

import pytest
from helpers.script import run, words
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))

from helpers.pair import string_key
from helpers.replies import bulk_items

from trafikey_server.values.zset import LEX_MAX, LEX_MIN, LEX_STR, ZSet, lex_gte_min, lex_lte_max

ENTRIES = 128  # zset-max-listpack-entries
VALUE = 64  # zset-max-listpack-value


def fill(pair, key: str, n: int, score=lambda i: i, member=lambda i: "m%03d" % i) -> None:
    args: list = []
    for i in range(n):
        args += [score(i), member(i)]
    pair.check("ZADD", key, *args)


# -- ZADD / ZINCRBY ------------------------------------------------------------------


def test_zadd_options(pair23) -> None:
    run(pair23, """
        ZADD z NX XX 1 a
        ZADD z NX XX 1
        ZADD z GT LT 1 a
        ZADD z GT NX 1 a
        ZADD z LT NX 1 a
        ZADD z XX GT 1 a
        ZADD z INCR 1 a 2 b
        ZADD z INCR NX XX 1 a 2 b
        ZADD z INCR GT LT 1 a 2 b
        ZADD z INCR 1
        ZADD z INCR x a
        ZADD z x a
        ZADD z 1 a x b
        ZADD z 1 a 2
        ZADD z NX 1
        ZADD z nx Ch 1 a
        ZADD z ch ch nx 1 a
        ZADD z INCR 5 a
        ZADD z INCR NX 5 a
        ZADD z INCR XX 5 nosuch
        ZADD z INCR GT 1 a
        ZADD z INCR GT 0 a
        ZADD z INCR 0 a
        ZADD z INCR LT 1 a
        ZADD z INCR LT -1 a
        ZADD z 1 a 1 a 2 a
        ZADD z CH 3 a 3 a 4 b
        ZADD z GT CH 1 a 10 b 1 c
        ZADD z LT CH 1 a 10 b 1 c
        ZADD z XX CH 0 a 0 q
        ZADD z XX 5 a 5 new
        ZADD z NX 50 a 6 new
        ZADD z GT 2 new 100 a
        ZADD z LT 1 new 100 a
        ZRANGE z 0 -1 WITHSCORES
        ZADD nokey XX 1 a
        ZADD nokey XX INCR 1 a
        ZADD nokey GT INCR 1 a
        ZADD nokey LT CH 1 a 2 b
        ZRANGE nokey 0 -1 WITHSCORES
        ZADD z inf a
        ZADD z INCR -inf a
        ZADD z -inf a
        ZADD z INCR +inf a
        ZINCRBY z +inf a
        ZINCRBY z -inf a
        ZINCRBY z x a
        ZINCRBY z 1.5 new2
        ZINCRBY z nan new2
        ZINCRBY z nx a
        ZINCRBY z incr a
        ZINCRBY z 1 nx
        ZINCRBY nokey2 -2.5 m
        ZRANGE z 0 -1 WITHSCORES
        ZRANGE nokey2 0 -1 WITHSCORES
    """)


def test_score_parsing(pair23) -> None:
    """Score arguments (string2d: whole string, no overflow, no NaN) and
    range bounds (strtod on the C string: may be empty, may overflow)."""
    literals = ["+inf", "-inf", "inf", "infinity", "-Infinity", "+INF", "1e400", "-1e400", "1e-400", "0e-400",
                "4e-320", "2e-324", "3e-324", " 1", "1 ", "\t1", "0x1p3", "0X10", "nan", "-nan", "NaN", "1_0",
                ".5", "5.", "+5", "+.5", "-.5e-2", "1.e5", ".e5", "-", "+", ".", "", "  ", "1\x00", "1e", "1e+",
                "e1", "-0", "00012", "1.5E3", "1.5.", "0." + "0" * 400 + "1", "1" + "0" * 400, "0" * 6000 + "1",
                "1." + "0" * 6000, "\xd9\xa3", "\x1c1"]
    pair23.check("ZADD", "r", 1, "a", 2, "b", 8, "c", "inf", "d", "-inf", "e", 0.25, "f")
    for s in literals:
        b = s.encode("latin-1")
        pair23.check("ZADD", "z", b, "m")
        pair23.check("ZINCRBY", "z", b, "m")
        pair23.check("ZCOUNT", "r", b, "+inf")
        pair23.check("ZCOUNT", "r", "-inf", b)
        pair23.check("ZCOUNT", "r", b"(" + b, "+inf")
        pair23.check("ZCOUNT", "r", "-inf", b"(" + b)
        if s != "-0":  # -0 weights make -0 scores: see test_negative_zero_scores
            pair23.check("ZUNION", 1, "r", "WEIGHTS", b, "WITHSCORES")
    for s in ["(", "1\x00x", "(1\x00x", "\x00junk", " (1", "( 1", "((1", "(+inf", "(-inf", "(inf"]:
        b = s.encode("latin-1")
        pair23.check("ZCOUNT", "r", b, "+inf")
        pair23.check("ZCOUNT", "r", "-inf", b)
        pair23.check("ZRANGEBYSCORE", "r", b, "+inf")
        pair23.check("ZREMRANGEBYSCORE", "nokey", b, "+inf")
    pair23.check("ZRANGE", "z", 0, -1, "WITHSCORES")


# -- reads ---------------------------------------------------------------------------


def test_single_member_reads(pair23) -> None:
    run(pair23, """
        ZADD z 1 a 2 b 3 c 2 bb
        ZCARD z
        ZCARD nokey
        ZSCORE z a
        ZSCORE z nosuch
        ZSCORE nokey a
        ZMSCORE z a nosuch c bb
        ZMSCORE nokey a b
        ZRANK z b
        ZRANK z bb
        ZRANK z b WITHSCORE
        ZRANK z b withscore
        ZRANK z b withscores
        ZRANK z b WITHSCORE x
        ZRANK z nosuch
        ZRANK z nosuch WITHSCORE
        ZRANK nokey a
        ZRANK nokey a WITHSCORE
        ZRANK nokey a foo
        ZREVRANK z a WITHSCORE
        ZREVRANK z a
        ZREVRANK z c
        ZREVRANK z nosuch WITHSCORE
        ZREVRANK z a WITHSCORE x
        ZCOUNT z 1 2
        ZCOUNT z (1 +inf
        ZCOUNT z (1 (2
        ZCOUNT z (1 (1
        ZCOUNT z 2 2
        ZCOUNT z 3 1
        ZCOUNT nokey 1 2
        ZCOUNT nokey x 2
        ZCOUNT z 1 x
        ZLEXCOUNT z - +
        ZLEXCOUNT nokey - +
        ZLEXCOUNT nokey x +
    """)


def test_wrongtype(pair23) -> None:
    pair23.check("HSET", "h", "f", "v")
    keys = ["h"] + (["str"] if string_key(pair23) else [])
    for k in keys:
        run(pair23, f"""
            ZADD {k} 1 a
            ZADD {k} x a
            ZADD {k} XX 1 a
            ZINCRBY {k} 1 a
            ZCARD {k}
            ZSCORE {k} a
            ZMSCORE {k} a
            ZRANK {k} a
            ZRANK {k} a WITHSCORE
            ZRANK {k} a foo
            ZREVRANK {k} a
            ZCOUNT {k} 1 2
            ZCOUNT {k} x 2
            ZLEXCOUNT {k} - +
            ZLEXCOUNT {k} x +
            ZRANGE {k} 0 -1
            ZRANGE {k} x y
            ZRANGE {k} 0 1 BYSCORE
            ZRANGE {k} - + BYLEX
            ZRANGESTORE dst {k} 0 -1
            ZRANGEBYSCORE {k} 0 1
            ZREVRANGEBYSCORE {k} 1 0
            ZRANGEBYLEX {k} - +
            ZREVRANGEBYLEX {k} + -
            ZREVRANGE {k} 0 -1
            ZREM {k} a
            ZREMRANGEBYRANK {k} 0 1
            ZREMRANGEBYRANK {k} x 1
            ZREMRANGEBYSCORE {k} 0 1
            ZREMRANGEBYLEX {k} - +
            ZPOPMIN {k}
            ZPOPMIN {k} 0
            ZPOPMAX {k} -1
            ZRANDMEMBER {k}
            ZRANDMEMBER {k} 0
            ZRANDMEMBER {k} x
            ZSCAN {k} 0
            ZSCAN {k} x
            ZSCAN {k} 0 COUNT 0
            ZUNION 1 {k}
            ZUNION 2 nokey {k} WEIGHTS x y
            ZINTER 1 {k}
            ZDIFF 2 nokey {k}
            ZUNIONSTORE dst 1 {k}
            ZINTERSTORE dst 1 {k}
            ZDIFFSTORE dst 1 {k}
            ZINTERCARD 1 {k}
        """)
    run(pair23, "ZRANGE h 0 -1\nHGETALL h")


# -- ZRANGE and friends -----------------------------------------------------------------------


def test_zrange_arguments(pair23) -> None:
    run(pair23, """
        ZADD z 1 a 2 b 3 c 3 d
        ZRANGE z 0 -1 LIMIT 0 1
        ZRANGE z 0 -1 LIMIT 0 -1
        ZRANGE z 0 -1 LIMIT 5 -1 WITHSCORES
        ZRANGE z 0 -1 BYLEX WITHSCORES
        ZRANGE z 0 -1 WITHSCORES BYLEX
        ZRANGE z 0 -1 BYSCORE BYLEX
        ZRANGE z 0 -1 BYLEX BYSCORE
        ZRANGE z 0 -1 BYSCORE BYSCORE
        ZRANGE z 0 -1 REV REV
        ZRANGE z 0 -1 WITHSCORES WITHSCORES
        ZRANGE z 0 -1 LIMIT 0
        ZRANGE z 0 -1 LIMIT
        ZRANGE z 0 -1 LIMIT x 1 BYSCORE
        ZRANGE z 0 -1 BYSCORE LIMIT 0 x
        ZRANGE z 0 -1 BYSCORE LIMIT 0 1.5
        ZRANGE z x 1
        ZRANGE z 0 x
        ZRANGE z x 1 BYSCORE
        ZRANGE z 1 x BYSCORE REV
        ZRANGE z x 1 BYLEX
        ZRANGE z [a x BYLEX
        ZRANGE z 0 -1 FOO
        ZRANGE nokey x y
        ZRANGE nokey x y BYSCORE
        ZRANGE nokey 0 -1 FOO
        ZRANGE nokey 0 -1 WITHSCORES
        ZRANGE z 0 9223372036854775808
        ZRANGE z 9223372036854775807 -9223372036854775808
        ZRANGE z -9223372036854775808 9223372036854775807
        ZREVRANGE z 0 -1 BYSCORE
        ZREVRANGE z 0 -1 REV
        ZREVRANGE z 0 -1 LIMIT 0 1
        ZREVRANGE z 0 -1 withscores
        ZRANGEBYSCORE z 1 3 BYSCORE
        ZRANGEBYSCORE z 1 3 BYLEX
        ZRANGEBYSCORE z 1 3 REV
        ZRANGEBYSCORE z 1 3 LIMIT 1
        ZRANGEBYSCORE z 1 x
        ZREVRANGEBYSCORE z 1 3 REV
        ZRANGEBYLEX z - + WITHSCORES
        ZRANGEBYLEX z a b
        ZRANGEBYLEX z - + BYSCORE
        ZREVRANGEBYLEX z + - BYLEX
        ZREVRANGEBYLEX z + - REV
        ZRANGESTORE dst z 0 -1 WITHSCORES
        ZRANGESTORE dst z 0 -1 BYLEX WITHSCORES
        ZRANGESTORE dst z 0 -1 LIMIT 0 1
    """)


def test_zrange_by_rank(pair23) -> None:
    fill(pair23, "small", 10)
    fill(pair23, "big", 200)
    for key in ("small", "big"):
        for a, b in [(0, -1), (2, 5), (-3, -1), (-100, 100), (5, 2), (-1, -2), (9, 9), (10, 20), (199, 300),
                     (-500, -150), (0, 0), (-1, 0)]:
            pair23.check("ZRANGE", key, a, b)
            pair23.check("ZRANGE", key, a, b, "WITHSCORES")
            pair23.check("ZRANGE", key, a, b, "REV", "WITHSCORES")
            pair23.check("ZREVRANGE", key, a, b)
            pair23.check("ZREVRANGE", key, a, b, "WITHSCORES")


_SCORE_RANGES = [("-inf", "+inf"), ("(5", "8"), ("5", "(8"), ("(5", "(6"), ("(5", "(5"), ("5", "5"), ("8", "5"),
                 ("-inf", "(-inf"), ("+inf", "+inf"), ("(-inf", "3"), ("150", "+inf"), ("3.5", "7.5"),
                 ("-1e400", "1e400"), ("", "(")]
_LIMITS = [(), (0, -1), (0, 1), (1, 2), (3, 0), (-1, 5), (-3, 5), (-2, 1), (-20, 1), (-300, 2), (150, -1),
           (199, -1), (200, -1), (5, -5), (2, 9223372036854775807)]


def test_zrange_by_score(pair23) -> None:
    """Every bound shape and LIMIT, on a listpack and on a skiplist. A
    negative offset is where the two encodings answer differently."""
    fill(pair23, "small", 10)
    fill(pair23, "big", 200, score=lambda i: i // 2)
    for key in ("small", "big"):
        for lo, hi in _SCORE_RANGES:
            for lim in _LIMITS:
                limit = ("LIMIT", *lim) if lim else ()
                pair23.check("ZRANGEBYSCORE", key, lo, hi, *limit)
                pair23.check("ZRANGEBYSCORE", key, lo, hi, "WITHSCORES", *limit)
                pair23.check("ZREVRANGEBYSCORE", key, hi, lo, *limit)
                pair23.check("ZRANGE", key, hi, lo, "BYSCORE", "REV", *limit, "WITHSCORES")
            pair23.check("ZCOUNT", key, lo, hi)


_LEX_RANGES = [("-", "+"), ("[m005", "+"), ("(m005", "+"), ("[m005", "(m009"), ("(m005", "[m009"), ("-", "(m003"),
               ("[m003", "[m003"), ("(m003", "[m003"), ("[m009", "[m003"), ("+", "-"), ("-", "-"), ("+", "+"),
               ("[", "+"), ("(", "+"), ("-", "["), ("[m1", "[m2"), ("[zzz", "+"), ("-", "[a"),
               ("-\x00x", "+\x00y")]


def test_zrange_by_lex(pair23) -> None:
    fill(pair23, "small", 10, score=lambda i: 0)
    fill(pair23, "big", 200, score=lambda i: 7)
    pair23.check("ZADD", "small", 0, "", 0, "m005\x00", 0, "\xff")
    for key in ("small", "big"):
        for lo, hi in _LEX_RANGES:
            for lim in _LIMITS:
                limit = ("LIMIT", *lim) if lim else ()
                pair23.check("ZRANGEBYLEX", key, lo, hi, *limit)
                pair23.check("ZREVRANGEBYLEX", key, hi, lo, *limit)
                pair23.check("ZRANGE", key, hi, lo, "BYLEX", "REV", *limit)
            pair23.check("ZLEXCOUNT", key, lo, hi)
    for bad in ["x", "", "1", "-x", "+x", "a[", "\x00"]:
        pair23.check("ZRANGEBYLEX", "small", bad, "+")
        pair23.check("ZLEXCOUNT", "small", "-", bad)
        pair23.check("ZREMRANGEBYLEX", "small", bad, "+")


def test_lex_on_mixed_scores(pair23) -> None:
    """Lex ranges over unequal scores are unspecified, but a listpack walks
    them deterministically, and so must we."""
    pair23.check("ZADD", "z", 3, "a", 1, "b", 2, "c", 1, "d", 5, "e", 0, "f", 2, "g")
    for lo, hi in [("-", "+"), ("[b", "[e"), ("(a", "(g"), ("[c", "+"), ("-", "[c"), ("[d", "[d"), ("[f", "[f"),
                   ("[e", "[z"), ("(b", "[c")]:
        for lim in [(), (1, 2), (0, 1)]:
            limit = ("LIMIT", *lim) if lim else ()
            pair23.check("ZRANGEBYLEX", "z", lo, hi, *limit)
            pair23.check("ZREVRANGEBYLEX", "z", hi, lo, *limit)
        pair23.check("ZLEXCOUNT", "z", lo, hi)
    pair23.check("ZREMRANGEBYLEX", "z", "[c", "[e")
    pair23.check("ZRANGE", "z", 0, -1, "WITHSCORES")


def test_zrangestore(pair23) -> None:
    fill(pair23, "z", 10)
    run(pair23, """
        ZRANGESTORE dst z 0 -1
        ZRANGE dst 0 -1 WITHSCORES
        ZRANGESTORE dst z 2 4 REV
        ZRANGE dst 0 -1 WITHSCORES
        ZRANGESTORE dst z (2 7 BYSCORE LIMIT 1 3
        ZRANGE dst 0 -1 WITHSCORES
        ZRANGESTORE dst z 7 (2 BYSCORE REV LIMIT 1 3
        ZRANGE dst 0 -1 WITHSCORES
        ZRANGESTORE dst z [m003 [m006 BYLEX
        ZRANGE dst 0 -1 WITHSCORES
        ZRANGESTORE dst z + - BYLEX REV LIMIT 2 2
        ZRANGE dst 0 -1 WITHSCORES
        ZRANGESTORE z z 0 2
        ZRANGE z 0 -1 WITHSCORES
        ZRANGESTORE dst z 5 6
        HSET dst f v
        ZRANGESTORE dst nokey 0 -1
        HSET dst f v
        ZRANGESTORE dst z 0 0
        ZRANGE dst 0 -1
        ZRANGESTORE dst2 z x y
        ZRANGESTORE dst2 z 0 -1 BYSCORE x
    """)


# -- removals ------------------------------------------------------------------------------------


def test_zrem_and_remrange(pair23) -> None:
    run(pair23, """
        ZADD z 0 "" 0 a 0 b 0 c 0 d 1 e 2 f
        ZREM z a nosuch a
        ZREM nokey a
        ZREMRANGEBYRANK z x 1
        ZREMRANGEBYRANK z 1 x
        ZREMRANGEBYRANK nokey x 1
        ZREMRANGEBYRANK nokey 0 1
        ZREMRANGEBYRANK z 3 1
        ZREMRANGEBYRANK z -1 -1
        ZREMRANGEBYRANK z 100 200
        ZREMRANGEBYRANK z -100 -50
        ZRANGE z 0 -1 WITHSCORES
        ZREMRANGEBYSCORE z x 1
        ZREMRANGEBYSCORE z 1 x
        ZREMRANGEBYSCORE nokey x 1
        ZREMRANGEBYSCORE nokey 0 1
        ZREMRANGEBYSCORE z (0 (1
        ZREMRANGEBYSCORE z 1 1
        ZRANGE z 0 -1 WITHSCORES
        ZREMRANGEBYLEX z x +
        ZREMRANGEBYLEX nokey - +
        ZREMRANGEBYLEX z (a [c
        ZRANGE z 0 -1
        ZREMRANGEBYLEX z - +
        # The emptied key must be gone, so another type may take its name.
        HSET z f v
        ZADD y 1 a 2 b
        ZREMRANGEBYSCORE y -inf +inf
        HSET y f v
        ZADD x 1 a 2 b
        ZREMRANGEBYRANK x 0 -1
        HSET x f v
        ZADD w 1 a 2 b
        ZREM w a b c
        HSET w f v
    """)


def test_remrange_big(pair23) -> None:
    fill(pair23, "big", 300, score=lambda i: i % 50)
    run(pair23, """
        ZREMRANGEBYRANK big 10 19
        ZREMRANGEBYRANK big -10 -1
        ZREMRANGEBYSCORE big (10 20
        ZCARD big
        ZRANGE big 0 -1 WITHSCORES
        ZRANGEBYSCORE big -inf +inf LIMIT -3 2
    """)
    # Lex ranges on a skiplist only have a defined answer when all scores
    # are equal.
    fill(pair23, "lex", 300, score=lambda i: 1)
    run(pair23, """
        ZREMRANGEBYLEX lex [m200 (m250
        ZREMRANGEBYLEX lex - (m010
        ZREMRANGEBYLEX lex (m290 +
        ZREMRANGEBYLEX lex [m100 [m100
        ZCARD lex
        ZRANGE lex 0 -1
        ZRANGEBYLEX lex - + LIMIT -3 2
    """)


# -- pops ------------------------------------------------------------------------------------------


def test_zpop(pair23) -> None:
    run(pair23, """
        ZADD z 1 a 2 b 3 c 4 d 5 e 6 f
        ZPOPMIN z
        ZPOPMAX z
        ZPOPMIN z 2
        ZPOPMAX z 1
        ZPOPMAX z 0
        ZPOPMIN z -1
        ZPOPMIN z x
        ZPOPMIN z 1.0
        ZPOPMIN z 1 2
        ZPOPMIN nokey
        ZPOPMIN nokey 2
        ZPOPMIN nokey 0
        ZPOPMIN nokey -1
        ZADD z 1 a 2 b 3 c 4 d 5 e 6 f
        ZPOPMAX z 100
        HSET z f v
        ZADD y 1 a
        ZPOPMIN y
        HSET y f v
        ZADD x 1 a 1 b 1 c
        ZPOPMAX x 9223372036854775807
    """)
    fill(pair23, "big", 200, score=lambda i: i // 3)
    for _ in range(5):
        pair23.check("ZPOPMIN", "big", 7)
        pair23.check("ZPOPMAX", "big")
        pair23.check("ZPOPMAX", "big", 9)
    pair23.check("ZRANGE", "big", 0, -1, "WITHSCORES")


# -- ZRANDMEMBER ------------------------------------------------------------------------------------


def test_zrandmember_arguments(pair23) -> None:
    run(pair23, """
        ZRANDMEMBER nokey
        ZRANDMEMBER nokey 5
        ZRANDMEMBER nokey 5 WITHSCORES
        ZRANDMEMBER nokey x
        ZRANDMEMBER nokey 5 x
        ZRANDMEMBER nokey 5 WITHSCORES x
        ZRANDMEMBER nokey -9223372036854775808
        ZRANDMEMBER nokey 4611686018427387904 WITHSCORES
        ZADD z 1 a
        ZRANDMEMBER z
        ZRANDMEMBER z 0
        ZRANDMEMBER z 0 WITHSCORES
        ZRANDMEMBER z 1
        ZRANDMEMBER z 3 WITHSCORES
        ZRANDMEMBER z -3 WITHSCORES
        ZRANDMEMBER z -3
        ZRANDMEMBER z -9223372036854775808
        ZRANDMEMBER z 4611686018427387904 WITHSCORES
        ZRANDMEMBER z -4611686018427387904 WITHSCORES
        ZRANDMEMBER z 4611686018427387903 WITHSCORES
        ZRANDMEMBER z 9223372036854775807
        ZRANDMEMBER z 9223372036854775808
        ZRANDMEMBER z 2 withscores
        ZADD z 2 b 3 c 0 d
        ZRANDMEMBER z 4 WITHSCORES
        ZRANDMEMBER z 100
    """)
    fill(pair23, "big", 200)
    # A count covering the set returns all of it, from the tail, in both
    # encodings: deterministic.
    pair23.check("ZRANDMEMBER", "big", 200, "WITHSCORES")
    pair23.check("ZRANDMEMBER", "big", 1000)


@pytest.mark.parametrize("size", [10, 200])
def test_zrandmember_picks(pair, size: int) -> None:
    """Random picks: compare what can be compared (length, membership,
    distinctness, order) on both servers' replies."""
    fill(pair, "z", size)
    members = [b"m%03d" % i for i in range(size)]
    for count in [1, 2, 5, size - 1, -1, -5, -3 * size]:
        for w in (pair.v, pair.t):
            got = bulk_items(w.call("ZRANDMEMBER", "z", count))
            assert len(got) == abs(count)
            assert set(got) <= set(members)
            if count > 0:
                assert len(set(got)) == count
                if size <= ENTRIES:
                    # A listpack yields distinct picks in its own order.
                    assert got == sorted(got)
            flat = bulk_items(w.call("ZRANDMEMBER", "z", count, "WITHSCORES"))
            assert len(flat) == 2 * abs(count)
            for m, s in zip(flat[::2], flat[1::2], strict=True):
                assert int(s) == int(m[1:])
    for w in (pair.v, pair.t):
        one = w.call("ZRANDMEMBER", "z")
        assert one.split(b"\r\n")[1] in members


# -- ZSCAN -------------------------------------------------------------------------------------------


def test_zscan_small(pair23) -> None:
    run(pair23, """
        ZADD z 1 a 2 b 3 c 1.5 ab
        ZSCAN z 0
        ZSCAN z 0 NOSCORES
        ZSCAN z 0 noscores COUNT 1
        ZSCAN z 0 NOVALUES
        ZSCAN z 0 COUNT 0
        ZSCAN z 0 COUNT -1
        ZSCAN z 0 COUNT x
        ZSCAN z 0 COUNT 1
        ZSCAN z 0 COUNT
        ZSCAN z 0 MATCH
        ZSCAN z 0 TYPE string
        ZSCAN z 0 FOO
        ZSCAN z x
        ZSCAN z -1
        ZSCAN z 18446744073709551615
        ZSCAN z 18446744073709551616
        ZSCAN z -18446744073709551615
        ZSCAN z " 5"
        ZSCAN z "+5"
        ZSCAN z 007
        ZSCAN z -0
        ZSCAN z ""
        ZSCAN z " "
        ZSCAN z 5
        ZSCAN z 5\\x00x
        ZSCAN nokey 0
        ZSCAN nokey x
        ZSCAN nokey 0 COUNT 0
        ZSCAN nokey 0 NOVALUES
    """)


def _full_scan(w, cmd: str, key: str, *opts) -> tuple[list[bytes], int]:
    cursor = b"0"
    seen: list[bytes] = []
    calls = 0
    while True:
        reply = w.call(cmd, key, cursor, *opts)
        head, _, rest = reply.partition(b"\r\n")
        assert head == b"*2"
        _, _, rest = rest.partition(b"\r\n")
        cursor, _, rest = rest.partition(b"\r\n")
        seen += bulk_items(b"x\r\n" + rest)
        calls += 1
        if cursor == b"0":
            return seen, calls
        assert calls < 10000


def test_zscan_big(pair) -> None:
    """A skiplist is scanned by cursor: both servers must return every
    member exactly as often as a full iteration needs, with Valkey's
    "%.17g" score spelling."""
    fill(pair, "z", 300, score=lambda i: i / 4)
    for opts in [(), ("COUNT", 7), ("NOSCORES",), ("COUNT", 1000)]:
        (vs, _), (ts, _) = _full_scan(pair.v, "ZSCAN", "z", *opts), _full_scan(pair.t, "ZSCAN", "z", *opts)
        if "NOSCORES" in opts:
            assert set(vs) == set(ts) and len(set(ts)) == 300
        else:
            vpairs = set(zip(vs[::2], vs[1::2], strict=True))
            tpairs = set(zip(ts[::2], ts[1::2], strict=True))
            assert vpairs == tpairs and len(tpairs) == 300
    # The first call of a skiplist scan does not return everything.
    for w in (pair.v, pair.t):
        assert not w.call("ZSCAN", "z", 0, "COUNT", 5).startswith(b"*2\r\n$1\r\n0\r\n")


def test_scan_match(pair23) -> None:
    """MATCH filters what a scan step looked at (glob rules, not ours to test)."""
    pair23.check("ZADD", "z", 1, "a", 2, "b", 3, "c", 1.5, "ab", 4, "A*")
    for pat in ["a*", "*", "?", "[a-b]*", "A\\*", "*b", "x*", ""]:
        pair23.check("ZSCAN", "z", 0, "MATCH", pat)
        pair23.check("ZSCAN", "z", 0, "MATCH", pat, "NOSCORES", "COUNT", 1)
    pair23.check("ZSCAN", "z", 0, "match", "[a", "COUNT", 5, "MATCH", "b")
    fill(pair23, "big", 300)
    for pat in ["m1*", "*7", "m0[0-4]?"]:
        vs, _ = _full_scan(pair23.v, "ZSCAN", "big", "MATCH", pat, "NOSCORES")
        ts, _ = _full_scan(pair23.t, "ZSCAN", "big", "MATCH", pat, "NOSCORES")
        assert sorted(vs) == sorted(ts)


# -- set algebra ----------------------------------------------------------------------------------------


def test_setop_arguments(pair23) -> None:
    run(pair23, """
        ZADD z 1 a 2 b 3 c
        ZADD y 10 b 20 c 30 d
        HSET h f v
        ZUNION 0 z
        ZUNION -1 z
        ZUNION x z
        ZUNION 3 z y
        ZUNION 9999999999 z
        ZUNION 1 z WEIGHTS
        ZUNION 2 z y WEIGHTS 1
        ZUNION 2 z y WEIGHTS 1 x
        ZUNION 2 z y WEIGHTS nan 1
        ZUNION 2 z y WEIGHTS 1 2 3
        ZUNION 2 z y AGGREGATE
        ZUNION 2 z y AGGREGATE foo
        ZUNION 2 z y AGGREGATE sum AGGREGATE
        ZUNION 2 z y LIMIT 1
        ZUNION 2 z h
        ZUNION 2 h nokey
        ZUNION 2 z h WEIGHTS x y
        ZINTER 0 z
        ZINTER 2 z y WEIGHTS 1
        ZINTER 2 z h
        ZDIFF 0 z
        ZDIFF 2 z y WEIGHTS 1 1
        ZDIFF 2 z y AGGREGATE SUM
        ZDIFF 2 z h
        ZDIFF 2 h z
        ZDIFF 2 nokey h
        ZUNIONSTORE dst 0 z
        ZUNIONSTORE dst x z
        ZUNIONSTORE dst 2 z y WITHSCORES
        ZINTERSTORE dst 2 z
        ZDIFFSTORE dst 0 z
        ZDIFFSTORE dst 2 z y WITHSCORES
        ZDIFFSTORE dst 1 z WEIGHTS 1
        ZINTERCARD 0 z
        ZINTERCARD -1 z
        ZINTERCARD x z
        ZINTERCARD 3 z y
        ZINTERCARD 2 z y WITHSCORES
        ZINTERCARD 2 z y WEIGHTS 1 1
        ZINTERCARD 2 z y AGGREGATE MAX
        ZINTERCARD 2 z y LIMIT
        ZINTERCARD 2 z y LIMIT -1
        ZINTERCARD 2 z y LIMIT x
        ZINTERCARD 2 z h
    """)


def test_setop_results(pair23) -> None:
    run(pair23, """
        ZADD z 1 a 2 b 3 c
        ZADD y 10 b 20 c 30 d
        ZADD w 5 c 5 d 5 e 5 f
        ZUNION 2 z y
        ZUNION 2 z y WITHSCORES
        ZUNION 2 z y WEIGHTS 2 0.5 WITHSCORES
        ZUNION 2 z y AGGREGATE MAX WITHSCORES
        ZUNION 2 z y AGGREGATE min WITHSCORES
        ZUNION 2 z y WITHSCORES WITHSCORES
        ZUNION 3 z y w WEIGHTS 1 -1 2 AGGREGATE SUM WITHSCORES
        ZUNION 2 nokey nokey2
        ZUNION 2 nokey nokey2 WITHSCORES
        ZUNION 2 z z WITHSCORES
        ZUNION 2 z y WEIGHTS inf -inf WITHSCORES
        ZUNION 2 z y WEIGHTS 0 inf WITHSCORES
        ZUNION 3 nokey z y WEIGHTS 5 1 1 WITHSCORES AGGREGATE MAX
        ZINTER 2 z y
        ZINTER 2 z y WITHSCORES
        ZINTER 3 z y w WITHSCORES
        ZINTER 2 z y WEIGHTS inf -inf WITHSCORES
        ZINTER 2 z y WEIGHTS 0 inf WITHSCORES AGGREGATE MAX
        ZINTER 2 z y WEIGHTS 0 inf WITHSCORES AGGREGATE MIN
        ZINTER 2 z y AGGREGATE MIN WITHSCORES
        ZINTER 2 z nokey WITHSCORES
        ZINTER 2 z z WITHSCORES
        ZINTER 2 z z WEIGHTS 1 3 WITHSCORES
        ZDIFF 2 z y
        ZDIFF 2 z y WITHSCORES
        ZDIFF 3 w z y WITHSCORES
        ZDIFF 1 nokey
        ZDIFF 2 z nokey WITHSCORES
        ZDIFF 2 z z
        ZUNIONSTORE dst 2 z y WEIGHTS 1 2 AGGREGATE MAX
        ZRANGE dst 0 -1 WITHSCORES
        ZINTERSTORE dst 2 z y
        ZRANGE dst 0 -1 WITHSCORES
        ZINTERSTORE dst 2 z nokey
        HSET dst f v
        ZDIFFSTORE dst2 1 z
        ZRANGE dst2 0 -1 WITHSCORES
        ZDIFFSTORE dst2 2 z z
        HSET dst2 f v
        ZUNIONSTORE z 2 z y
        ZRANGE z 0 -1 WITHSCORES
        ZINTERCARD 2 z y
        ZINTERCARD 2 z y LIMIT 1
        ZINTERCARD 2 z y LIMIT 0
        ZINTERCARD 2 z y LIMIT 100
        ZINTERCARD 2 z y LIMIT 1 LIMIT 5
        ZINTERCARD 3 z y w
        ZINTERCARD 2 z nokey
        ZINTERCARD 1 nokey
    """)


def test_setop_big(pair23) -> None:
    fill(pair23, "a", 200, score=lambda i: i % 17)
    fill(pair23, "b", 150, score=lambda i: i % 5, member=lambda i: "m%03d" % (2 * i))
    for cmd in ["ZUNION 2 a b WITHSCORES", "ZINTER 2 a b WITHSCORES AGGREGATE MAX", "ZDIFF 2 a b WITHSCORES",
                "ZINTERCARD 2 a b LIMIT 30", "ZUNIONSTORE d 2 a b WEIGHTS 2 3", "ZRANGE d 0 -1 WITHSCORES",
                "ZRANGEBYSCORE d -inf +inf LIMIT -2 5", "ZINTERSTORE d 2 a b", "ZRANGEBYSCORE d -inf +inf LIMIT -2 5",
                "ZDIFFSTORE d 2 a b", "ZRANGE d 0 -1"]:
        pair23.check(*words(cmd))


# -- encodings -------------------------------------------------------------------------------------------


def encoding(pair, key: str) -> bytes:
    """OBJECT ENCODING where trafikey serves it; otherwise what shows the
    encoding on the wire: a negative LIMIT offset finds nothing in a
    listpack but the last member of a skiplist."""
    t = pair.t.call("OBJECT", "ENCODING", key)
    if not t.startswith(b"-"):
        return pair.check("OBJECT", "ENCODING", key).split(b"\r\n")[1]
    probe = pair.check("ZRANGEBYSCORE", key, "-inf", "+inf", "LIMIT", -1, 1)
    return b"listpack" if probe == b"*0\r\n" else b"skiplist"


def test_encoding_switch(pair) -> None:
    long_member = "x" * (VALUE + 1)
    fill(pair, "a", ENTRIES)
    assert encoding(pair, "a") == b"listpack"
    pair.check("ZADD", "a", 1, "m000")
    assert encoding(pair, "a") == b"listpack"
    pair.check("ZADD", "a", 1, "new")
    assert encoding(pair, "a") == b"skiplist"
    pair.check("ZREMRANGEBYRANK", "a", 0, -3)
    assert encoding(pair, "a") == b"skiplist"  # never back
    # The request's size decides, duplicates included.
    pair.check("ZADD", "b", *[x for _ in range(ENTRIES + 1) for x in (1, "same")])
    assert encoding(pair, "b") == b"skiplist"
    pair.check("ZADD", "c", *[x for i in range(ENTRIES) for x in (1, "m%d" % i)])
    assert encoding(pair, "c") == b"listpack"
    for setup, want in [("ZADD d 1 " + "x" * VALUE, b"listpack"), ("ZADD e 1 " + long_member, b"skiplist"),
                        ("ZADD f 1 a\nZADD f XX 1 " + long_member, b"skiplist"),
                        ("ZADD g 1 a\nZINCRBY g 1 " + long_member, b"skiplist"),
                        ("ZADD h 1 a\nZADD h NX 1 a 1 " + long_member, b"skiplist"),
                        ("ZADD i 1 a\nZADD i GT 0 a", b"listpack")]:
        key = setup.split()[1]
        run(pair, setup + f"\nZADD {key} 2 z2")
        assert encoding(pair, key) == want, setup
    # ZRANGESTORE adds one by one; ZUNIONSTORE shrinks a small result back.
    fill(pair, "src", 200)
    pair.check("ZRANGESTORE", "r1", "src", 0, ENTRIES - 1)
    assert encoding(pair, "r1") == b"listpack"
    pair.check("ZRANGESTORE", "r2", "src", 0, ENTRIES)
    assert encoding(pair, "r2") == b"skiplist"
    pair.check("ZRANGESTORE", "r3", "src", "-inf", "+inf", "BYSCORE", "LIMIT", 0, ENTRIES)
    assert encoding(pair, "r3") == b"listpack"
    pair.check("ZUNIONSTORE", "u1", 1, "src")
    assert encoding(pair, "u1") == b"skiplist"
    pair.check("ZINTERSTORE", "u2", 2, "src", "r1")
    assert encoding(pair, "u2") == b"listpack"
    pair.check("ZADD", "lm", 1, long_member)
    pair.check("ZUNIONSTORE", "u3", 1, "lm")
    assert encoding(pair, "u3") == b"skiplist"


# -- float formatting (depends on floats.format_double being Valkey's) -----------------------------------------


def test_negative_zero_scores(pair23) -> None:
    """A listpack stores an integral score as an integer, so -0 reads back
    as 0 there; a skiplist keeps the sign; and fresh results carry it."""
    fill(pair23, "big", ENTRIES + 2, score=lambda i: i + 1)
    run(pair23, """
        ZADD big -0 neg
        ZSCORE big neg
        ZINCRBY big -0 neg
        ZRANGE big 0 0 WITHSCORES
        ZADD small -0 neg
        ZSCORE small neg
        ZINCRBY small -0 neg
        ZINCRBY small -0 neg2
        ZSCORE small neg2
        ZADD small2 INCR -0 neg
        ZADD small2 INCR -0 neg
        ZUNION 1 small WEIGHTS -1 WITHSCORES
        ZUNION 1 big WEIGHTS -0 WITHSCORES AGGREGATE MIN
        ZUNIONSTORE dst 2 big big WEIGHTS 1 -1
        ZRANGE dst 0 2 WITHSCORES
        ZUNIONSTORE dst 1 small WEIGHTS -1
        ZRANGE dst 0 2 WITHSCORES
        ZRANGESTORE dst big 0 -1
        ZRANGE dst 0 2 WITHSCORES
        ZRANGESTORE dst big -inf +inf BYSCORE REV
        ZRANGE dst 0 2 WITHSCORES
        ZMSCORE big neg m000
    """)
    # A skiplist's ZSCAN spells the sign too ("%.17g").
    vs, _ = _full_scan(pair23.v, "ZSCAN", "big", "COUNT", 1000)
    ts, _ = _full_scan(pair23.t, "ZSCAN", "big", "COUNT", 1000)
    assert set(zip(vs[::2], vs[1::2], strict=True)) == set(zip(ts[::2], ts[1::2], strict=True))
    assert (b"neg", b"-0") in set(zip(vs[::2], vs[1::2], strict=True))
    pair23.check("ZPOPMIN", "big", 2)


def test_random_doubles(pair23) -> None:
    """Arbitrary doubles through every score reply: this checks
    floats.format_double against Valkey's grisu output."""
    rnd = random.Random(20240915)
    vals = [rnd.uniform(-1e6, 1e6) for _ in range(40)] + [rnd.random() * 10 ** rnd.randint(-30, 30) for _ in range(40)]
    vals += [0.1, 1 / 3, 1e-7, 1.5e20, 123456789012345678.0, 3.0000000000000004, 1e300, 2.5e-320, 4611686018427387904.0,
             -4611686018427387904.0, 1e21, 1e-5, 5e-324, 1.7976931348623157e308]
    args: list = []
    for i, v in enumerate(vals):
        args += [repr(v), "r%03d" % i]
    pair23.check("ZADD", "z", *args)
    pair23.check("ZRANGE", "z", 0, -1, "WITHSCORES")
    pair23.check("ZSCAN", "z", 0)
    pair23.check("ZINCRBY", "z", "0.1", "r000")
    pair23.check("ZUNION", 1, "z", "WEIGHTS", "0.7", "WITHSCORES")
    fill(pair23, "z", 100, score=lambda i: repr(rnd.uniform(-1, 1)), member=lambda i: "p%03d" % i)
    # Now a skiplist: ZSCAN prints "%.17g"; compare as a set.
    vs, _ = _full_scan(pair23.v, "ZSCAN", "z")
    ts, _ = _full_scan(pair23.t, "ZSCAN", "z")
    assert set(zip(vs[::2], vs[1::2], strict=True)) == set(zip(ts[::2], ts[1::2], strict=True))
    pair23.check("ZRANGE", "z", 0, -1, "WITHSCORES")


# -- random operation sequences -------------------------------------------------------------------------------

_MEMBERS = st.sampled_from(["a", "b", "c", "d", "e", "f", "g", "h", ""])
_SCORES = st.sampled_from(["0", "1", "-1", "2.5", "-2.5", "3", "10", "inf", "-inf", "0.5", "7"])
_BOUNDS = st.sampled_from(["-inf", "+inf", "0", "(0", "1", "(1", "2.5", "(3", "10", "(-1", "x"])
_LEX = st.sampled_from(["-", "+", "[a", "(a", "[c", "(d", "[h", "[", "(", "[zz", "x"])
_OPTS = st.lists(st.sampled_from(["NX", "XX", "GT", "LT", "CH", "INCR"]), max_size=2, unique=True)


@st.composite
def _command(draw) -> list:
    kind = draw(st.integers(0, 13))
    m, s = draw(_MEMBERS), draw(_SCORES)
    if kind <= 3:
        pairs = draw(st.lists(st.tuples(_SCORES, _MEMBERS), min_size=1, max_size=3))
        return ["ZADD", "z", *draw(_OPTS), *[x for p in pairs for x in p]]
    if kind == 4:
        return ["ZINCRBY", "z", s, m]
    if kind == 5:
        return ["ZREM", "z", m, draw(_MEMBERS)]
    if kind == 6:
        lim = ["LIMIT", draw(st.integers(-3, 4)), draw(st.integers(-1, 4))] if draw(st.booleans()) else []
        rev = ["REV"] if draw(st.booleans()) else []
        return ["ZRANGE", "z", draw(_BOUNDS), draw(_BOUNDS), "BYSCORE", *rev, *lim, "WITHSCORES"]
    if kind == 7:
        return ["ZRANGE", "z", draw(st.integers(-6, 6)), draw(st.integers(-6, 6)),
                *(["REV"] if draw(st.booleans()) else []), "WITHSCORES"]
    if kind == 8:
        lim = ["LIMIT", draw(st.integers(-2, 3)), draw(st.integers(-1, 3))] if draw(st.booleans()) else []
        return [draw(st.sampled_from(["ZRANGEBYLEX", "ZREVRANGEBYLEX"])), "z", draw(_LEX), draw(_LEX), *lim]
    if kind == 9:
        return [draw(st.sampled_from(["ZPOPMIN", "ZPOPMAX"])), "z", *([draw(st.integers(0, 3))] if draw(st.booleans())
                                                                     else [])]
    if kind == 10:
        return [draw(st.sampled_from(["ZRANK", "ZREVRANK"])), "z", m, *(["WITHSCORE"] if draw(st.booleans()) else [])]
    if kind == 11:
        return [draw(st.sampled_from(["ZCOUNT", "ZREMRANGEBYSCORE"])), "z", draw(_BOUNDS), draw(_BOUNDS)]
    if kind == 12:
        return [draw(st.sampled_from(["ZLEXCOUNT", "ZREMRANGEBYLEX"])), "z", draw(_LEX), draw(_LEX)]
    return ["ZREMRANGEBYRANK", "z", draw(st.integers(-4, 4)), draw(st.integers(-4, 4))]


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(commands=st.lists(_command(), min_size=1, max_size=25))
def test_random_sequences(pair23, commands) -> None:
    """Random writes and reads over a small member pool: every reply equal.
    (Lex ranges over mixed scores included: a listpack answers them
    deterministically.)"""
    pair23.check("FLUSHALL")
    for cmd in commands:
        pair23.check(*cmd)
    pair23.check("ZRANGE", "z", 0, -1, "WITHSCORES")


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(commands=st.lists(_command(), min_size=1, max_size=20), seed=st.integers(0, 1000))
def test_random_sequences_big(pair, commands, seed) -> None:
    """The same over a skiplist (the lex reads keep all scores equal there,
    where Valkey's answer would otherwise depend on its random levels)."""
    pair.check("FLUSHALL")
    fill(pair, "z", ENTRIES + 5, score=lambda i: (i * 7 + seed) % 11 - 5)
    fill(pair, "lexz", ENTRIES + 5, score=lambda i: 4, member=lambda i: "abcdefgh"[i % 8] * (1 + i // 8))
    for cmd in commands:
        if cmd[0] in ("ZRANGEBYLEX", "ZREVRANGEBYLEX", "ZLEXCOUNT", "ZREMRANGEBYLEX"):
            cmd = [cmd[0], "lexz", *cmd[2:]]
        pair.check(*cmd)
    pair.check("ZRANGE", "z", 0, -1, "WITHSCORES")
    pair.check("ZRANGE", "lexz", 0, -1, "WITHSCORES")


# -- the ZSet spans against a plain sorted list (no servers) ------------------------------------------------------


def _ref_in(s: float, lo: float, lo_ex: bool, hi: float, hi_ex: bool) -> bool:
    return (s > lo if lo_ex else s >= lo) and (s < hi if hi_ex else s <= hi)


_F = st.sampled_from([-math.inf, -3.0, -1.5, -0.0, 0.0, 0.5, 1.0, 2.0, 2.5, 7.0, math.inf])


@settings(max_examples=300, deadline=None)
@given(entries=st.dictionaries(st.binary(max_size=3), _F, max_size=40), lo=_F, hi=_F,
       lo_ex=st.booleans(), hi_ex=st.booleans(), offset=st.integers(-5, 5), count=st.integers(-1, 5),
       reverse=st.booleans(), big=st.booleans())
def test_zset_spans_unit(entries, lo, hi, lo_ex, hi_ex, offset, count, reverse, big) -> None:
    zs = ZSet()
    zs.big = big
    for m, s in entries.items():
        zs.add(m, s)
    ref = sorted((0.0 if s == 0.0 and not big else s, m) for m, s in entries.items())
    assert list(zs.index) == ref
    for i, (_, m) in enumerate(ref):
        assert zs.rank(m) == i
    a, b = zs.score_span(lo, lo_ex, hi, hi_ex)
    assert [p for p in ref if _ref_in(p[0], lo, lo_ex, hi, hi_ex)] == ref[a:b]
    # LIMIT: positive offsets skip from the start of the reading direction.
    w0, w1 = zs.window(a, b, reverse, offset, count)
    got = list(zs.items(w0, w1, reverse))
    span = ref[a:b][::-1] if reverse else ref[a:b]
    if offset >= 0:
        want = span[offset:] if count < 0 else span[offset:offset + count]
        assert got == want
    elif not big:
        assert got == []
    # Lex spans over equal scores are plain byte ranges.
    same = ZSet()
    for m in entries:
        same.add(m, 1.0)
    members = sorted(entries)
    for lb in [(LEX_MIN, b"", True), (LEX_MAX, b"", True), (LEX_STR, b"a", False), (LEX_STR, b"a", True)]:
        for hb in [(LEX_MAX, b"", True), (LEX_STR, b"b", False), (LEX_STR, b"\x00", True)]:
            x, y = same.lex_span(lb, hb)
            assert members[x:y] == [m for m in members if lex_gte_min(m, lb) and lex_lte_max(m, hb)]
    # Removing a span leaves the rest, in order.
    n = zs.remove_span(a, b)
    assert n == b - a and list(zs.index) == ref[:a] + ref[b:]
    assert set(zs.scores) == {m for _, m in ref[:a] + ref[b:]}

"""Consumer groups against Valkey 9.1, byte for byte in RESP2 and RESP3:
XGROUP (every subcommand, option and error), XREADGROUP (new entries,
history, NOACK, deleted entries), XACK, XPENDING (summary and extended,
IDLE, per consumer), XCLAIM (every option), XAUTOCLAIM (cursor, COUNT,
JUSTID, deleted entries), XINFO GROUPS and CONSUMERS (entries-read and
lag after deletes, trims and SETIDs), XREAD's non-blocking forms; each
refusal with its exact error and an unchanged keyspace.

Delivery, seen and active times and idle durations are the servers'
clocks and compare within a tolerance (helpers.stream_diff); claims use a
min-idle-time of 0 or one no entry can reach, so who gets what is exact.
"""

from __future__ import annotations

import pytest
from helpers.stream_diff import assert_alike, assert_same_state, attempt, script

HOUR = "3600000"


def _fill(p, key: str, n: int, start: int = 1) -> None:  # type: ignore[no-untyped-def]
    for w in (p.v, p.t):
        w.pipeline([("XADD", key, f"{i}-0", "f", str(i)) for i in range(start, start + n)])


# -- XGROUP ---------------------------------------------------------------------------------


def test_xgroup_create_and_setid(pair23) -> None:  # type: ignore[no-untyped-def]
    _fill(pair23, "s", 5)
    script(pair23, """
        XGROUP CREATE s g1 0
        XGROUP CREATE s g2 $
        XGROUP CREATE s g3 3-0
        XGROUP CREATE s g4 3
        XGROUP CREATE s g5 0 ENTRIESREAD 2
        XGROUP CREATE s g6 2-0 ENTRIESREAD -1
        XGROUP CREATE s g7 $ ENTRIESREAD 5
        XGROUP CREATE s g8 $ ENTRIESREAD 100
        XGROUP CREATE s g9 99-0
        XGROUP create s g10 0 mkstream
        XGROUP CREATE s "" 0
        XGROUP CREATE s "g\\x00x" 0
        XINFO GROUPS s
        XGROUP SETID s g1 4-0
        XGROUP SETID s g2 0
        XGROUP SETID s g3 $ ENTRIESREAD 1
        XGROUP SETID s g4 2 ENTRIESREAD 2
        XGROUP SETID s g5 99-99
        XGROUP setid s g6 $ entriesread -1
        XINFO GROUPS s
        XGROUP CREATE new g 0 MKSTREAM
        XGROUP CREATE new2 g $ MKSTREAM ENTRIESREAD 3
        XGROUP CREATE new3 g 7-7 MKSTREAM
        XINFO STREAM new
        XINFO GROUPS new2
        XINFO STREAM new3 FULL
        XADD new3 5-* f v
    """)
    assert_same_state(pair23.v.port, pair23.t.port)


@pytest.mark.parametrize("cmd", [
    ("XGROUP", "CREATE", "s", "g1", "0"), ("XGROUP", "CREATE", "nokey", "g", "0"),
    ("XGROUP", "CREATE", "nokey", "g", "$"), ("XGROUP", "CREATE", "s", "g", "x"),
    ("XGROUP", "CREATE", "s", "g", "0", "FOO"), ("XGROUP", "CREATE", "s", "g", "0", "ENTRIESREAD"),
    ("XGROUP", "CREATE", "s", "g", "0", "ENTRIESREAD", "x"), ("XGROUP", "CREATE", "s", "g", "0", "ENTRIESREAD", "-2"),
    ("XGROUP", "CREATE", "s", "g", "0", "MKSTREAM", "FOO"), ("XGROUP", "CREATE", "s", "g"),
    ("XGROUP", "CREATE", "s"), ("XGROUP", "CREATE", "nokey", "g", "x", "MKSTREAM"),
    ("XGROUP", "CREATE", "nokey", "g", "0", "ENTRIESREAD", "-5", "MKSTREAM"),
    ("XGROUP", "CREATE", "s", "g", "*"), ("XGROUP", "CREATE", "s", "g", ">"), ("XGROUP", "CREATE", "s", "g", "+"),
    ("XGROUP", "CREATE", "s", "g", "-"), ("XGROUP", "CREATE", "s", "g1", "x"),
    ("XGROUP", "SETID", "s", "nog", "0"), ("XGROUP", "SETID", "nokey", "g", "0"), ("XGROUP", "SETID", "s", "g1", "x"),
    ("XGROUP", "SETID", "s", "g1", "0", "ENTRIESREAD"), ("XGROUP", "SETID", "s", "g1", "0", "ENTRIESREAD", "-3"),
    ("XGROUP", "SETID", "s", "g1", "0", "FOO", "1"), ("XGROUP", "SETID", "s", "g1", "0", "MKSTREAM"),
    ("XGROUP", "SETID", "s", "g1"), ("XGROUP", "SETID", "s", "g1", "0", "ENTRIESREAD", "1", "X"),
    ("XGROUP", "DESTROY", "nokey", "g"), ("XGROUP", "DESTROY", "s"), ("XGROUP", "DESTROY", "s", "g1", "x"),
    ("XGROUP", "CREATECONSUMER", "s", "nog", "c"), ("XGROUP", "CREATECONSUMER", "nokey", "g", "c"),
    ("XGROUP", "CREATECONSUMER", "s", "g1"), ("XGROUP", "DELCONSUMER", "s", "nog", "c"),
    ("XGROUP", "DELCONSUMER", "nokey", "g", "c"), ("XGROUP", "DELCONSUMER", "s", "g1"),
    ("XGROUP", "FOO"), ("XGROUP", "FOO", "s"), ("XGROUP",), ("XGROUP", "HELP", "x"), ("XGROUP", "CREATE"),
    ("XGROUP", "DESTROY"),
])
def test_xgroup_errors(pair23, cmd: tuple) -> None:  # type: ignore[no-untyped-def]
    _fill(pair23, "s", 3)
    pair23.check("XGROUP", "CREATE", "s", "g1", "0")
    attempt(pair23, *cmd)


def test_xgroup_consumers_and_destroy(pair23) -> None:  # type: ignore[no-untyped-def]
    _fill(pair23, "s", 6)
    script(pair23, """
        XGROUP CREATE s g 0
        XGROUP CREATECONSUMER s g alice
        XGROUP CREATECONSUMER s g alice
        XGROUP CREATECONSUMER s g bob
        XGROUP CREATECONSUMER s g ""
        XINFO CONSUMERS s g
        XREADGROUP GROUP g alice COUNT 2 STREAMS s >
        XREADGROUP GROUP g bob COUNT 1 STREAMS s >
        XGROUP DELCONSUMER s g alice
        XGROUP DELCONSUMER s g alice
        XGROUP DELCONSUMER s g nobody
        XINFO CONSUMERS s g
        XPENDING s g
        XGROUP DESTROY s g
        XGROUP DESTROY s g
        XINFO GROUPS s
        XGROUP HELP
        XGROUP help
    """)


# -- XREADGROUP -----------------------------------------------------------------------------


def test_xreadgroup_new_history_and_noack(pair23) -> None:  # type: ignore[no-untyped-def]
    _fill(pair23, "s", 8)
    _fill(pair23, "t", 3)
    script(pair23, """
        XGROUP CREATE s g 0
        XGROUP CREATE t g $
        XREADGROUP GROUP g alice COUNT 2 STREAMS s >
        XREADGROUP GROUP g alice STREAMS s 0
        XREADGROUP GROUP g alice STREAMS s 1-0
        XREADGROUP GROUP g alice STREAMS s 1
        XREADGROUP GROUP g alice COUNT 1 STREAMS s 0-0
        XREADGROUP GROUP g bob COUNT 1 STREAMS s t > >
        XREADGROUP GROUP g bob STREAMS s t 0 0
        XREADGROUP GROUP g bob COUNT 0 STREAMS s >
        XREADGROUP GROUP g carol NOACK COUNT 2 STREAMS s >
        XREADGROUP GROUP g carol STREAMS s 0
        XREADGROUP GROUP g carol STREAMS s >
        XREADGROUP GROUP g carol STREAMS s >
        XREADGROUP GROUP g dave STREAMS s 0
        XREADGROUP GROUP g alice COUNT -5 STREAMS s 0
        XPENDING s g
        XINFO GROUPS s
        XDEL s 1-0 3-0
        XREADGROUP GROUP g alice STREAMS s 0
        XREADGROUP GROUP g bob STREAMS s 0
        XPENDING s g - + 10
        XADD t 9-0 f v
        XREADGROUP GROUP g bob STREAMS t t > >
        XREADGROUP group g bob noack count 1 streams t 0
    """)
    assert_same_state(pair23.v.port, pair23.t.port)


def test_xreadgroup_over_the_same_stream_twice(pair23) -> None:  # type: ignore[no-untyped-def]
    _fill(pair23, "s", 4)
    script(pair23, """
        XGROUP CREATE s g 0
        XREADGROUP GROUP g c COUNT 1 STREAMS s s > >
        XREADGROUP GROUP g c STREAMS s s 0 >
        XREADGROUP GROUP g c STREAMS s s > 0
        XPENDING s g - + 10
    """)


@pytest.mark.parametrize("cmd", [
    ("XREADGROUP", "STREAMS", "s", ">"), ("XREADGROUP", "GROUP", "g", "c"),
    ("XREADGROUP", "GROUP", "g", "c", "STREAMS"), ("XREADGROUP", "GROUP", "g", "c", "STREAMS", "s"),
    ("XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", "t", ">"),
    ("XREADGROUP", "GROUP", "nog", "c", "STREAMS", "s", ">"),
    ("XREADGROUP", "GROUP", "g", "c", "STREAMS", "nokey", ">"),
    ("XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", "nokey", ">", ">"),
    ("XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", "$"), ("XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", "+"),
    ("XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", "x"), ("XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", "-"),
    ("XREADGROUP", "GROUP", "g", "c", "COUNT", "x", "STREAMS", "s", ">"),
    ("XREADGROUP", "GROUP", "g", "c", "BLOCK", "x", "STREAMS", "s", ">"),
    ("XREADGROUP", "GROUP", "g", "c", "BLOCK", "-1", "STREAMS", "s", ">"),
    ("XREADGROUP", "GROUP", "g", "c", "FOO", "STREAMS", "s", ">"),
    ("XREADGROUP", "GROUP", "g", "STREAMS", "s", ">"), ("XREADGROUP", "GROUP", "g", "c", "COUNT"),
    ("XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", ">", "x"),
    ("XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", "(1"),
    ("XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", "1-*"),
    ("XREADGROUP", "GROUP", "g", "c", "GROUP", "g2", "c2", "STREAMS", "s", ">"),
    ("XREADGROUP", "GROUP", "g", "c", "NOACK", "NOACK", "STREAMS", "s", ">"),
    ("XREAD", "GROUP", "g", "c", "STREAMS", "s", ">"), ("XREAD", "NOACK", "STREAMS", "s", "0"),
    ("XREAD", "STREAMS", "s", ">"), ("XREAD", "STREAMS", "s"), ("XREAD", "STREAMS", "s", "t", "0"),
    ("XREAD", "COUNT", "1"), ("XREAD", "STREAMS", "s", "x"), ("XREAD", "FOO", "STREAMS", "s", "0"),
    ("XREAD", "BLOCK", "-5", "STREAMS", "s", "0"), ("XREAD", "BLOCK", "1.5", "STREAMS", "s", "0"),
    ("XREAD", "COUNT", "x", "STREAMS", "s", "0"), ("XREAD", "STREAMS", "s", "-"), ("XREAD", "STREAMS", "s", "(0"),
    ("XREAD",), ("XREADGROUP",), ("XREAD", "STREAMS"),
])
def test_xread_errors(pair23, cmd: tuple) -> None:  # type: ignore[no-untyped-def]
    _fill(pair23, "s", 3)
    pair23.check("XGROUP", "CREATE", "s", "g", "0")
    attempt(pair23, *cmd)


def test_xread_without_blocking(pair23) -> None:  # type: ignore[no-untyped-def]
    _fill(pair23, "s", 5)
    _fill(pair23, "t", 2, start=10)
    script(pair23, """
        XREAD STREAMS s 0
        XREAD COUNT 2 STREAMS s 0
        XREAD COUNT 2 STREAMS s t 3 0
        XREAD STREAMS s t $ $
        XREAD STREAMS s +
        XREAD COUNT 5 STREAMS s t + +
        XREAD STREAMS nokey +
        XREAD STREAMS nokey $
        XREAD STREAMS nokey 0
        XREAD STREAMS s nokey t 0 0 0
        XREAD STREAMS s s 3 4
        XREAD COUNT 0 STREAMS s 4
        XREAD COUNT -1 STREAMS s 4
        XREAD count 1 count 2 streams s 0
        XREAD STREAMS s 18446744073709551615-18446744073709551615
        XREAD STREAMS s 5
        XADD e MAXLEN 0 1-0 f v
        XREAD STREAMS e +
        XREAD STREAMS e 0
        XREAD STREAMS s STREAMS 0
    """)


# -- XACK / XPENDING ------------------------------------------------------------------------


def test_xack_and_xpending(pair23) -> None:  # type: ignore[no-untyped-def]
    _fill(pair23, "s", 10)
    script(pair23, """
        XGROUP CREATE s g 0
        XPENDING s g
        XPENDING s g - + 10
        XREADGROUP GROUP g alice COUNT 3 STREAMS s >
        XREADGROUP GROUP g bob COUNT 4 STREAMS s >
        XREADGROUP GROUP g carol COUNT 1 STREAMS s >
        XPENDING s g
        XPENDING s g - + 10
        XPENDING s g - + 3
        XPENDING s g - + 0
        XPENDING s g - + -1
        XPENDING s g 2 6 10
        XPENDING s g (2 (6 10
        XPENDING s g - + 10 bob
        XPENDING s g - + 10 nobody
        XPENDING s g IDLE 0 - + 10
        XPENDING s g IDLE 0 - + 10 alice
        XPENDING s g IDLE {HOUR} - + 10
        XPENDING s g idle -5 - + 10
        XPENDING s g + - 10
        XACK s g 1-0 2 99-0
        XACK s g 1-0
        XACK s g 5-0 6-0 5-0
        XACK s nog 3-0
        XACK nokey g 3-0
        XPENDING s g
        XPENDING s g - + 10
        XINFO CONSUMERS s g
        XACK s g 3 4 7 8
        XPENDING s g
        XINFO GROUPS s
    """.replace("{HOUR}", HOUR))
    assert_same_state(pair23.v.port, pair23.t.port)


@pytest.mark.parametrize("cmd", [
    ("XACK", "s", "g"), ("XACK", "s", "g", "x"), ("XACK", "s", "g", "1-0", "x"), ("XACK", "s", "g", "*"),
    ("XACK", "nokey", "g", "x"), ("XACK", "s", "nog", "x"), ("XACK", "s"),
    ("XPENDING", "s"), ("XPENDING", "s", "nog"), ("XPENDING", "nokey", "g"), ("XPENDING", "s", "g", "-"),
    ("XPENDING", "s", "g", "-", "+"), ("XPENDING", "s", "g", "x", "+", "10"), ("XPENDING", "s", "g", "-", "x", "10"),
    ("XPENDING", "s", "g", "-", "+", "x"), ("XPENDING", "s", "g", "-", "+", "10", "c", "x"),
    ("XPENDING", "s", "g", "IDLE", "x", "-", "+", "10"), ("XPENDING", "s", "g", "IDLE", "10"),
    ("XPENDING", "s", "g", "IDLE", "10", "-", "+"), ("XPENDING", "s", "nog", "-", "+", "10"),
    ("XPENDING", "nokey", "g", "-", "+", "10"), ("XPENDING", "s", "g", "(-", "+", "10"),
    ("XPENDING", "s", "g", "-", "(+", "10"),
    ("XPENDING", "s", "g", "(18446744073709551615-18446744073709551615", "+", "1"),
    ("XPENDING", "s", "g", "-", "(0-0", "1"), ("XPENDING", "s", "g", "-", "+", "9223372036854775808"),
    ("XPENDING", "s", "g", "-", "+", "-9223372036854775808"), ("XPENDING", "s", "g", "IDLE", "-", "+", "10"),
])
def test_xack_xpending_errors(pair23, cmd: tuple) -> None:  # type: ignore[no-untyped-def]
    _fill(pair23, "s", 3)
    pair23.check("XGROUP", "CREATE", "s", "g", "0")
    pair23.check("XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", ">")
    attempt(pair23, *cmd)


# -- XCLAIM / XAUTOCLAIM --------------------------------------------------------------------


def test_xclaim_options(pair23) -> None:  # type: ignore[no-untyped-def]
    _fill(pair23, "s", 10)
    script(pair23, """
        XGROUP CREATE s g 0
        XREADGROUP GROUP g alice COUNT 5 STREAMS s >
        XCLAIM s g bob 0 1-0
        XCLAIM s g bob {HOUR} 2-0
        XCLAIM s g bob 0 2-0 3 JUSTID
        XCLAIM s g bob -5 4-0 RETRYCOUNT 9
        XCLAIM s g bob 0 99-0 6-0 7-0
        XCLAIM s g bob 0 6-0 FORCE
        XCLAIM s g bob 0 6-0 FORCE
        XCLAIM s g bob 0 7-0 FORCE JUSTID
        XCLAIM s g carol 0 5-0 TIME 1000
        XCLAIM s g carol 0 1-0 TIME 1000 RETRYCOUNT 3 JUSTID
        XCLAIM s g carol 0 2-0 IDLE 5000
        XCLAIM s g carol 0 3-0 IDLE -7
        XCLAIM s g carol 0 4-0 TIME -7
        XCLAIM s g carol 0 4-0 TIME 99999999999999
        XCLAIM s g dave 0 5-0 JUSTID
        XINFO STREAM s FULL
        XPENDING s g - + 20
        XCLAIM s g erin 0 1-0 LASTID 8-0
        XINFO GROUPS s
        XCLAIM s g erin 0 1-0 LASTID 3-0
        XINFO GROUPS s
        XCLAIM s g erin 0 9-0 FORCE LASTID 9-0 JUSTID
        XCLAIM s g frank {HOUR} 1-0 2-0
        XINFO CONSUMERS s g
        XCLAIM s g frank 0 10-0
        XINFO CONSUMERS s g
        XDEL s 1-0 2-0
        XCLAIM s g gina 0 1-0 2-0 3-0
        XPENDING s g - + 20
        XCLAIM s g gina 0 1-0 FORCE
        XPENDING s g - + 20
        XCLAIM s g gina 0 3-0 force justid idle 0 time 5 retrycount 0 lastid 0-0
        XINFO STREAM s FULL
    """.replace("{HOUR}", HOUR))
    assert_same_state(pair23.v.port, pair23.t.port)


@pytest.mark.parametrize("cmd", [
    ("XCLAIM", "s", "g", "c", "0"), ("XCLAIM", "s", "g", "c"), ("XCLAIM", "s", "g", "c", "x", "1-0"),
    ("XCLAIM", "s", "g", "c", "0", "x"), ("XCLAIM", "s", "g", "c", "0", "1-0", "FOO"),
    ("XCLAIM", "s", "g", "c", "0", "1-0", "IDLE"), ("XCLAIM", "s", "g", "c", "0", "1-0", "IDLE", "x"),
    ("XCLAIM", "s", "g", "c", "0", "1-0", "TIME", "x"), ("XCLAIM", "s", "g", "c", "0", "1-0", "RETRYCOUNT", "x"),
    ("XCLAIM", "s", "g", "c", "0", "1-0", "LASTID", "x"), ("XCLAIM", "s", "g", "c", "0", "1-0", "LASTID"),
    ("XCLAIM", "s", "g", "c", "0", "1-0", "JUSTID", "2-0"), ("XCLAIM", "s", "nog", "c", "0", "1-0"),
    ("XCLAIM", "nokey", "g", "c", "0", "1-0"), ("XCLAIM", "nokey", "g", "c", "x", "1-0"),
    ("XCLAIM", "s", "nog", "c", "x", "1-0"), ("XCLAIM", "s", "g", "c", "0", "1-0", "RETRYCOUNT", "-1"),
    ("XCLAIM", "s", "g", "c", "0", "1-0", "TIME", "1", "IDLE", "x"), ("XCLAIM", "s", "g", "c", "0", "*"),
    ("XCLAIM", "s", "g", "c", "0", "1-0", "x", "FORCE"),
    ("XAUTOCLAIM", "s", "g", "c", "0"), ("XAUTOCLAIM", "s", "g", "c", "x", "0"),
    ("XAUTOCLAIM", "s", "g", "c", "0", "x"),
    ("XAUTOCLAIM", "s", "g", "c", "0", "0", "COUNT", "0"), ("XAUTOCLAIM", "s", "g", "c", "0", "0", "COUNT", "-1"),
    ("XAUTOCLAIM", "s", "g", "c", "0", "0", "COUNT", "x"), ("XAUTOCLAIM", "s", "g", "c", "0", "0", "COUNT"),
    ("XAUTOCLAIM", "s", "g", "c", "0", "0", "FOO"), ("XAUTOCLAIM", "s", "nog", "c", "0", "0"),
    ("XAUTOCLAIM", "nokey", "g", "c", "0", "0"), ("XAUTOCLAIM", "nokey", "g", "c", "0", "x"),
    ("XAUTOCLAIM", "nokey", "g", "c", "0", "0", "COUNT", "0"),
    ("XAUTOCLAIM", "s", "g", "c", "0", "(18446744073709551615-18446744073709551615"),
    ("XAUTOCLAIM", "s", "g", "c", "0", "0", "COUNT", "9223372036854775807"),
    ("XAUTOCLAIM", "s", "g", "c", "0", "0", "COUNT", "922337203685477580"),
    ("XAUTOCLAIM", "s", "g", "c", "0", "-"), ("XAUTOCLAIM", "s", "g", "c", "0", "+"),
    ("XAUTOCLAIM", "s", "g", "c", "0", "(1-0", "JUSTID", "JUSTID"),
])
def test_xclaim_xautoclaim_errors(pair23, cmd: tuple) -> None:  # type: ignore[no-untyped-def]
    _fill(pair23, "s", 3)
    pair23.check("XGROUP", "CREATE", "s", "g", "0")
    pair23.check("XREADGROUP", "GROUP", "g", "c", "COUNT", "2", "STREAMS", "s", ">")
    attempt(pair23, *cmd)


def test_xautoclaim(pair23) -> None:  # type: ignore[no-untyped-def]
    _fill(pair23, "s", 12)
    script(pair23, """
        XGROUP CREATE s g 0
        XREADGROUP GROUP g alice STREAMS s >
        XAUTOCLAIM s g bob {HOUR} 0
        XAUTOCLAIM s g bob 0 0 COUNT 3
        XAUTOCLAIM s g bob 0 4-0 COUNT 2 JUSTID
        XAUTOCLAIM s g bob 0 (5-0 COUNT 2
        XDEL s 7-0 8-0 10-0
        XAUTOCLAIM s g carol 0 7-0 COUNT 2
        XAUTOCLAIM s g carol 0 7-0 COUNT 3 JUSTID
        XPENDING s g - + 20
        XAUTOCLAIM s g carol 0 0
        XAUTOCLAIM s g carol 0 - COUNT 100
        XAUTOCLAIM s g carol 0 12-0
        XAUTOCLAIM s g carol 0 13-0
        XINFO STREAM s FULL
        XAUTOCLAIM s g dave 0 0 justid count 1
        XINFO CONSUMERS s g
    """.replace("{HOUR}", HOUR))
    # The scan is bounded by ten times COUNT: a long run of deleted entries.
    _fill(pair23, "big", 40)
    pair23.check("XGROUP", "CREATE", "big", "g", "0")
    pair23.check("XREADGROUP", "GROUP", "g", "a", "STREAMS", "big", ">")
    pair23.check("XDEL", "big", *[f"{i}-0" for i in range(1, 36)])
    script(pair23, """
        XAUTOCLAIM big g b 0 0 COUNT 1
        XAUTOCLAIM big g b 0 0 COUNT 2
        XAUTOCLAIM big g b 0 0 COUNT 1 JUSTID
        XPENDING big g
    """)
    assert_same_state(pair23.v.port, pair23.t.port)


# -- entries-read and lag -------------------------------------------------------------------


def test_entries_read_and_lag(pair23) -> None:  # type: ignore[no-untyped-def]
    _fill(pair23, "s", 6)
    script(pair23, """
        XGROUP CREATE s a 0
        XGROUP CREATE s b $
        XGROUP CREATE s c 3-0
        XGROUP CREATE s d 0 ENTRIESREAD 0
        XINFO GROUPS s
        XREADGROUP GROUP a x COUNT 2 STREAMS s >
        XREADGROUP GROUP c x COUNT 1 STREAMS s >
        XREADGROUP GROUP d x COUNT 1 STREAMS s >
        XINFO GROUPS s
        XADD s 7-0 f v
        XINFO GROUPS s
        XDEL s 2-0
        XINFO GROUPS s
        XDEL s 6-0
        XINFO GROUPS s
        XREADGROUP GROUP a x STREAMS s >
        XREADGROUP GROUP c x STREAMS s >
        XINFO GROUPS s
        XDEL s 7-0
        XINFO GROUPS s
        XADD s 8-0 f v
        XTRIM s MAXLEN 2
        XINFO GROUPS s
        XINFO STREAM s
        XREADGROUP GROUP b x STREAMS s >
        XREADGROUP GROUP d x STREAMS s >
        XINFO GROUPS s
        XGROUP SETID s a 0
        XGROUP SETID s b 4-0 ENTRIESREAD 4
        XGROUP SETID s c $
        XINFO GROUPS s
        XSETID s 8-0 ENTRIESADDED 20 MAXDELETEDID 7-0
        XINFO GROUPS s
        XADD s 9-0 f v
        XINFO GROUPS s
        XREADGROUP GROUP a y STREAMS s >
        XINFO GROUPS s
        XTRIM s MAXLEN 0
        XINFO GROUPS s
        XINFO STREAM s FULL
        XADD s 10-0 f v
        XINFO GROUPS s
    """)
    # A group on an emptied stream, and XCLAIM's LASTID moving a group on.
    _fill(pair23, "t", 4)
    script(pair23, """
        XGROUP CREATE t g 0
        XCLAIM t g c 0 1-0 FORCE LASTID 2-0
        XINFO GROUPS t
        XDEL t 1-0 2-0 3-0 4-0
        XINFO GROUPS t
        XADD t 5-0 f v
        XINFO GROUPS t
        XGROUP CREATE t h 0
        XINFO GROUPS t
        XREADGROUP GROUP h c STREAMS t >
        XINFO GROUPS t
    """)
    assert_same_state(pair23.v.port, pair23.t.port)


def test_xinfo_consumers(pair23) -> None:  # type: ignore[no-untyped-def]
    _fill(pair23, "s", 4)
    script(pair23, """
        XGROUP CREATE s g 0
        XINFO CONSUMERS s g
        XGROUP CREATECONSUMER s g zed
        XGROUP CREATECONSUMER s g adam
        XREADGROUP GROUP g mid COUNT 1 STREAMS s >
        XREADGROUP GROUP g adam STREAMS s 0
        XINFO CONSUMERS s g
        XINFO CONSUMERS s nog
        XINFO CONSUMERS nokey g
        XINFO consumers s g
    """)


def test_group_names_and_consumer_names_are_binary(pair23) -> None:  # type: ignore[no-untyped-def]
    _fill(pair23, "s", 3)
    for cmd in [("XGROUP", "CREATE", "s", b"g\x00\xff", "0"),
                ("XREADGROUP", "GROUP", b"g\x00\xff", b"c\r\n", "COUNT", "1", "STREAMS", "s", ">"),
                ("XGROUP", "CREATECONSUMER", "s", b"g\x00\xff", b""),
                ("XINFO", "GROUPS", "s"), ("XINFO", "CONSUMERS", "s", b"g\x00\xff"),
                ("XPENDING", "s", b"g\x00\xff"), ("XPENDING", "s", b"g\x00\xff", "-", "+", "5", b"c\r\n"),
                ("XINFO", "CONSUMERS", "s", b"g\x00"), ("XREADGROUP", "GROUP", b"g\x00", "c", "STREAMS", "s", ">"),
                ("XCLAIM", "s", b"g\x00", "c", "0", "1-0"), ("XINFO", "STREAM", "s", "FULL")]:
        assert_alike(pair23, *cmd)


def test_integer_extremes(pair23) -> None:  # type: ignore[no-untyped-def]
    _fill(pair23, "s", 2)
    script(pair23, """
        XGROUP CREATE s g 0
        XINFO STREAM s FULL COUNT 9223372036854775807
        XRANGE s - + COUNT 9223372036854775807
        XREAD COUNT 9223372036854775807 STREAMS s 0
        XREADGROUP GROUP g c COUNT 9223372036854775807 STREAMS s >
        XPENDING s g - + 9223372036854775807
        XCLAIM s g c 0 1-0 RETRYCOUNT 9223372036854775807
        XCLAIM s g c 0 2-0 RETRYCOUNT -5
        XPENDING s g - + 10
        XCLAIM s g c 0 1-0 IDLE 9223372036854775807
        XCLAIM s g c 0 1-0 IDLE -9223372036854775808
        XCLAIM s g c 0 1-0 TIME -9223372036854775808
        XCLAIM s g c 9223372036854775807 1-0
        XCLAIM s g c -9223372036854775808 1-0
        XCLAIM s g c 0 1-0 RETRYCOUNT 9223372036854775808
        XGROUP CREATE s g2 0 ENTRIESREAD 9223372036854775807
        XINFO GROUPS s
        XREAD BLOCK 9223372036854775807 STREAMS s 0
        XREAD BLOCK 9223372036854775806 STREAMS s 9
        XREAD BLOCK -0 STREAMS s 0
        XREAD BLOCK 00 STREAMS s 0
        XREAD BLOCK 1e3 STREAMS s 0
        XAUTOCLAIM s g c 9223372036854775807 0
        XAUTOCLAIM s g c 0 0 COUNT 922337203685477580
        XAUTOCLAIM s g c 0 0 COUNT 922337203685477579
        XAUTOCLAIM s g c 0 0 COUNT 1152921504606846976
        XTRIM s MAXLEN ~ 9223372036854775807 LIMIT 9223372036854775807
        XADD s MAXLEN 9223372036854775807 3-0 f v
        XADD s MINID 18446744073709551615 4-0 f v
        XLEN s
        XPENDING s g IDLE 9223372036854775807 - + 10
        XPENDING s g IDLE -9223372036854775808 - + 10
        XINFO CONSUMERS s g
    """)
    assert_same_state(pair23.v.port, pair23.t.port)


def test_counters_past_the_signed_64_bit_range(pair23) -> None:  # type: ignore[no-untyped-def]
    """entries-added, entries-read and lag as Valkey's 64-bit counters
    report them past 2^63 - 1."""
    script(pair23, """
        XADD s 1-0 f v
        XSETID s 1-0 ENTRIESADDED 9223372036854775807 MAXDELETEDID 0-0
        XADD s 2-0 f v
        XINFO STREAM s
        XGROUP CREATE s g 0 ENTRIESREAD 9223372036854775807
        XGROUP CREATE s h 0 ENTRIESREAD 9223372036854775806
        XINFO GROUPS s
        XREADGROUP GROUP g c STREAMS s >
        XREADGROUP GROUP h c COUNT 1 STREAMS s >
        XINFO GROUPS s
        XADD s 3-0 f v
        XINFO GROUPS s
        XREADGROUP GROUP h c COUNT 1 STREAMS s >
        XINFO GROUPS s
        XINFO STREAM s FULL
        XADD t 1-0 f v
        XGROUP CREATE t g 0 ENTRIESREAD 5
        XINFO GROUPS t
        XGROUP SETID t g 0 ENTRIESREAD 9223372036854775807
        XINFO GROUPS t
        XREADGROUP GROUP g c STREAMS t >
        XINFO GROUPS t
        XADD t 2-0 f v
        XINFO GROUPS t
        XREADGROUP GROUP g c STREAMS t >
        XINFO GROUPS t
    """)


def test_entries_read_of_a_group_behind_the_first_entry(pair23) -> None:  # type: ignore[no-untyped-def]
    """A group whose last ID is before the stream's first entry has its
    counter estimated again on its next read, whatever ENTRIESREAD said."""
    script(pair23, """
        XADD t 1-0 f v
        XADD t 2-0 f v
        XGROUP CREATE t a 0 ENTRIESREAD 5
        XGROUP CREATE t b 0
        XGROUP SETID t b 0 ENTRIESREAD 1
        XGROUP CREATE t c 0 ENTRIESREAD 0
        XINFO GROUPS t
        XREADGROUP GROUP a x COUNT 1 STREAMS t >
        XREADGROUP GROUP b x COUNT 1 STREAMS t >
        XREADGROUP GROUP c x COUNT 1 STREAMS t >
        XINFO GROUPS t
        XTRIM t MAXLEN 1
        XGROUP CREATE t d 0 ENTRIESREAD 0
        XREADGROUP GROUP d x STREAMS t >
        XINFO GROUPS t
        XADD u 1-0 f v
        XGROUP CREATE u a 0 ENTRIESREAD 5
        XREADGROUP GROUP a x STREAMS u >
        XINFO GROUPS u
        XADD v 1-0 f v
        XADD v 2-0 f v
        XGROUP CREATE v a 0 ENTRIESREAD 7
        XREADGROUP GROUP a x STREAMS v >
        XINFO GROUPS v
    """)

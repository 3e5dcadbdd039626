"""Stream writes and reads without groups against Valkey 9.1, byte for
byte in RESP2 and RESP3: XADD (every option, every ID form and error),
XRANGE/XREVRANGE, XLEN, XDEL, XTRIM (exact and ``~``, LIMIT, over small
listpack nodes so node boundaries decide what ``~`` removes), XSETID and
XINFO STREAM [FULL]; wrong types both ways; each refusal with its exact
error and an unchanged keyspace on both servers.

Auto IDs (``*``) carry the server's clock; to compare them exactly a
stream is first given a last ID in the future (XSETID or an explicit ID),
after which ``*`` and ``<ms>-*`` are the last ID's successor on both.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from helpers.stream_diff import assert_alike, assert_refused, assert_same_state, attempt, script, tree

FUTURE = "99999999999999"  # ms far past any clock: "*" then follows the last ID


@pytest.fixture
def small_nodes(pair23) -> Iterator:  # type: ignore[no-untyped-def]
    """pair23 with listpack nodes of at most 3 entries on both servers."""
    for w in (pair23.v, pair23.t):
        assert w.call("CONFIG", "SET", "stream-node-max-entries", "3") == b"+OK\r\n"
    yield pair23
    for w in (pair23.v, pair23.t):
        w.call("CONFIG", "SET", "stream-node-max-entries", "100")
        w.call("CONFIG", "SET", "stream-node-max-bytes", "4096")


# -- XADD ------------------------------------------------------------------------------------


def test_xadd_explicit_ids_and_reads(pair23) -> None:  # type: ignore[no-untyped-def]
    script(pair23, """
        XADD s 1-1 f v
        XADD s 1-2 f v2 g w
        XADD s 2-0 "" ""
        XADD s 2 a b
        XADD s 3-* a b
        XADD s 3-* a b
        XADD s 00004-0005 a b
        XADD s 18446744073709551614-5 big id
        XLEN s
        XRANGE s - +
        XREVRANGE s + -
        XADD e 0-* f v
        XADD e 0-* f v
        XRANGE e - +
        XADD bin 1-0 "a\\x00b" "\\r\\n" "\\xff" ""
        XRANGE bin - +
        XADD many 1-0 f1 1 f2 2 f3 3 f4 4 f5 5 f6 6 f7 7 f8 8
        XADD many 2-0 f1 1 f2 2 f3 3 f4 4 f5 5 f6 6 f7 7 f8 8
        XADD many 3-0 f2 1 f1 2
        XRANGE many - +
        XADD ints 1-0 1 -1 9223372036854775807 -9223372036854775808 1.5 0x10 " 1" 01
        XRANGE ints - +
    """)
    assert_same_state(pair23.v.port, pair23.t.port)


@pytest.mark.parametrize("bad", [
    "abc", "-1", "1-", "-", "+", "1--1", "1-abc", "1.5", "1-1.5", " 1", "1 ", "1-1-1",
    "18446744073709551616", "18446744073709551616-0", "1-18446744073709551616", "*-1", "**", "* ",
    "$", ">", "", "0x10", "1e3", "+1", "1-+1", "1--0", "-0",
])
def test_xadd_odd_ids(pair23, bad: str) -> None:  # type: ignore[no-untyped-def]
    pair23.check("XADD", "s", "1-1", "f", "v")
    attempt(pair23, "XADD", "s", bad, "f", "v")
    attempt(pair23, "XADD", "new", bad, "f", "v")


def test_xadd_id_order_errors(pair23) -> None:  # type: ignore[no-untyped-def]
    pair23.check("XADD", "s", "5-5", "f", "v")
    for bad in ("5-5", "5-4", "4-9", "0-1", "5", "4-*", "0-0"):
        assert_refused(pair23, "XADD", "s", bad, "f", "v")
    assert_refused(pair23, "XADD", "z", "0-0", "f", "v")
    assert_refused(pair23, "XADD", "z", "0", "f", "v")
    # The largest ID, then nothing fits after it.
    pair23.check("XADD", "top", "18446744073709551615-18446744073709551615", "f", "v")
    for nxt in ("*", "18446744073709551615-*", "18446744073709551615-18446744073709551615"):
        assert_refused(pair23, "XADD", "top", nxt, "f", "v")
    # A sequence at its maximum cannot be followed by <ms>-*.
    pair23.check("XADD", "sq", "7-18446744073709551615", "f", "v")
    assert_refused(pair23, "XADD", "sq", "7-*", "f", "v")
    assert_alike(pair23, "XADD", "sq", "8-*", "f", "v")
    assert_refused(pair23, "XADD", "sq", "7-*", "f", "v")


def test_xadd_auto_ids_after_a_future_last_id(pair23) -> None:  # type: ignore[no-untyped-def]
    script(pair23, f"""
        XADD s {FUTURE}-5 f v
        XADD s * f v
        XADD s * f v
        XADD s {FUTURE}-* f v
        XADD s * f v
        XSETID s {FUTURE}9-18446744073709551614
        XADD s * f v
        XADD s * f v
        XADD s {FUTURE}9-* f v
        XRANGE s - +
        XINFO STREAM s
    """)


def test_xadd_auto_id_shape(pair23) -> None:  # type: ignore[no-untyped-def]
    """A fresh ``*`` is the clock's ms, sequence 0; the next in the same
    ms or earlier is the successor: compared as shapes."""
    for w in (pair23.v, pair23.t):
        first = w.call("XADD", "s", "*", "f", "v")
        second = w.call("XADD", "s", "*", "f", "v")
        ids = []
        for r in (first, second):
            node = tree(r)
            assert node[0] == b"$", r
            ms, seq = node[1].split(b"-")
            ids.append((int(ms), int(seq)))
        assert ids[0][1] == 0 and ids[1] > ids[0]
    assert_alike(pair23, "XLEN", "s")


def test_xadd_arity_and_syntax(pair23) -> None:  # type: ignore[no-untyped-def]
    pair23.check("XADD", "s", "1-0", "f", "v")
    for cmd in [
        ("XADD",), ("XADD", "s"), ("XADD", "s", "*"), ("XADD", "s", "*", "f"), ("XADD", "s", "*", "f", "v", "g"),
        ("XADD", "s", "MAXLEN"), ("XADD", "s", "MAXLEN", "1"), ("XADD", "s", "MAXLEN", "1", "*"),
        ("XADD", "s", "MAXLEN", "1", "*", "f"), ("XADD", "s", "NOMKSTREAM"), ("XADD", "s", "NOMKSTREAM", "*", "f"),
        ("XADD", "s", "MAXLEN", "-1", "*", "f", "v"), ("XADD", "s", "MAXLEN", "x", "*", "f", "v"),
        ("XADD", "s", "MAXLEN", "~", "x", "*", "f", "v"), ("XADD", "s", "MAXLEN", "=", "-5", "*", "f", "v"),
        ("XADD", "s", "MAXLEN", "9223372036854775808", "*", "f", "v"),
        ("XADD", "s", "MINID", "x", "*", "f", "v"), ("XADD", "s", "MINID", "~", "-1", "*", "f", "v"),
        ("XADD", "s", "MAXLEN", "1", "MINID", "0", "*", "f", "v"),
        ("XADD", "s", "MINID", "0", "MAXLEN", "1", "*", "f", "v"),
        ("XADD", "s", "MAXLEN", "1", "MAXLEN", "2", "*", "f", "v"),
        ("XADD", "s", "LIMIT", "10", "*", "f", "v"), ("XADD", "s", "MAXLEN", "1", "LIMIT", "10", "*", "f", "v"),
        ("XADD", "s", "MAXLEN", "=", "1", "LIMIT", "10", "*", "f", "v"),
        ("XADD", "s", "MAXLEN", "~", "1", "LIMIT", "-1", "*", "f", "v"),
        ("XADD", "s", "MAXLEN", "~", "1", "LIMIT", "x", "*", "f", "v"),
        ("XADD", "s", "MAXLEN", "~", "1", "LIMIT", "*", "f", "v"),
        ("XADD", "s", "MAXLEN", "~", "1", "LIMIT", "9223372036854775808", "*", "f", "v"),
        ("XADD", "s", "NOMKSTREAM", "NOMKSTREAM", "2-0", "f", "v", "g"),
        ("XADD", "s", "FOO", "*", "f", "v"), ("XADD", "s", "~", "1", "*", "f", "v"),
        ("XADD", "s", "MAXLEN", "~", "*", "f", "v"), ("XADD", "s", "MAXLEN", "1.5", "*", "f", "v"),
        ("XADD", "s", "MINID", "1-0", "2-0", "f"),
    ]:
        assert_refused(pair23, *cmd)


def test_xadd_options(small_nodes) -> None:  # type: ignore[no-untyped-def]
    p = small_nodes
    script(p, """
        XADD gone NOMKSTREAM 1-0 f v
        EXISTS gone
        XADD gone NOMKSTREAM MAXLEN 0 1-0 f v
        XADD s 1-0 f v
        XADD s NOMKSTREAM 2-0 f v
        XADD s nomkstream maxlen 2 3-0 f v
        XRANGE s - +
        XADD s MAXLEN = 1 4-0 f v
        XRANGE s - +
        XADD s MAXLEN 0 5-0 f v
        XLEN s
        XINFO STREAM s
        XADD s MINID 5-0 6-0 f v
        XADD s MINID = 7 7-0 f v
        XRANGE s - +
        XADD s MINID 100 8-0 f v
        XLEN s
        XINFO STREAM s
        XADD s NOMKSTREAM MAXLEN 1 MINID 0 9-0 f v
        XADD s NOMKSTREAM MINID 0 NOMKSTREAM 9-0 f v
        XADD s Maxlen ~ 0 LIMIT 0 10-0 f v
        XADD s MiNiD ~ 0 LiMiT 1 11-0 f v
        XRANGE s - +
    """)
    # ~ trims whole nodes only (3 entries each here), LIMIT bounds how many entries it may drop.
    for i in range(1, 20):
        p.check("XADD", "t", f"{i}-0", "f", str(i))
    script(p, """
        XINFO STREAM t
        XADD t MAXLEN ~ 10 20-0 f v
        XLEN t
        XRANGE t - + COUNT 2
        XADD t MAXLEN ~ 2 LIMIT 3 21-0 f v
        XLEN t
        XADD t MAXLEN ~ 2 LIMIT 2 22-0 f v
        XLEN t
        XADD t MINID ~ 19 LIMIT 100 23-0 f v
        XRANGE t - +
        XINFO STREAM t
        XADD t MAXLEN ~ 0 24-0 f v
        XINFO STREAM t
    """)
    assert_same_state(p.v.port, p.t.port)


def test_xadd_with_maxlen_zero_on_a_new_key_keeps_an_empty_stream(pair23) -> None:  # type: ignore[no-untyped-def]
    script(pair23, """
        XADD s MAXLEN 0 5-0 f v
        EXISTS s
        TYPE s
        XLEN s
        XINFO STREAM s
        XADD s 4-0 f v
        XADD s MINID 9 9-0 f v
        XINFO STREAM s
        XADD s 9-* f v
    """)


# -- XRANGE / XREVRANGE / XLEN -----------------------------------------------------------------


def test_xrange_bounds_and_count(pair23) -> None:  # type: ignore[no-untyped-def]
    for i in range(1, 8):
        pair23.check("XADD", "s", f"{i}-{i % 3}", "i", str(i))
    pair23.check("XADD", "s", "18446744073709551615-18446744073709551615", "i", "max")
    script(pair23, """
        XRANGE s - +
        XRANGE s + -
        XRANGE s 2 5
        XRANGE s 2-2 5-2
        XRANGE s (2-2 (5-2
        XRANGE s (1 +
        XRANGE s - (7
        XRANGE s (18446744073709551615-18446744073709551615 +
        XRANGE s - (0-0
        XRANGE s (0-0 (0-1
        XRANGE s 3 3
        XRANGE s 3-0 3-0
        XRANGE s 3 2
        XRANGE s - + COUNT 0
        XRANGE s - + COUNT -1
        XRANGE s - + COUNT 2
        XRANGE s - + count 3
        XRANGE s - + COUNT 2 COUNT 4
        XREVRANGE s + -
        XREVRANGE s - +
        XREVRANGE s 5 2
        XREVRANGE s (5 (2
        XREVRANGE s + - COUNT 3
        XREVRANGE s (18446744073709551615-18446744073709551615 - COUNT 1
        XREVRANGE s + (0-0
        XRANGE s 18446744073709551615 +
        XRANGE s 18446744073709551615-18446744073709551615 18446744073709551615-18446744073709551615
        XRANGE s - 0
        XRANGE nokey - +
        XREVRANGE nokey + -
        XLEN s
        XLEN nokey
    """)


@pytest.mark.parametrize("cmd", [
    ("XRANGE", "s", "x", "+"), ("XRANGE", "s", "-", "x"), ("XRANGE", "s", "(", "+"), ("XRANGE", "s", "(-", "+"),
    ("XRANGE", "s", "-", "(+"), ("XRANGE", "s", "(18446744073709551615-18446744073709551615", "+"),
    ("XRANGE", "s", "-", "(0-0"), ("XRANGE", "s", "1-x", "+"), ("XRANGE", "s", "-", "+", "COUNT"),
    ("XRANGE", "s", "-", "+", "COUNT", "x"), ("XRANGE", "s", "-", "+", "LIMIT", "1"), ("XRANGE", "s", "-", "+", "1"),
    ("XRANGE", "s", "-"), ("XRANGE", "s"), ("XREVRANGE", "s", "+"), ("XREVRANGE", "s", "x", "-"),
    ("XREVRANGE", "s", "(-", "-"), ("XREVRANGE", "s", "+", "(+"), ("XREVRANGE", "s", "+", "-", "COUNT", "1.5"),
    ("XRANGE", "nokey", "x", "+"), ("XRANGE", "nokey", "-", "+", "COUNT", "x"), ("XRANGE", "s", "*", "+"),
    ("XRANGE", "s", "-", "1-*"), ("XRANGE", "s", "$", "+"), ("XLEN",), ("XLEN", "s", "t"),
    ("XRANGE", "s", "-", "+", "COUNT", "9223372036854775808"),
])
def test_xrange_errors(pair23, cmd: tuple) -> None:  # type: ignore[no-untyped-def]
    pair23.check("XADD", "s", "1-1", "f", "v")
    assert_refused(pair23, *cmd)


def test_xrange_exclusive_bounds_overflow_on_an_empty_key(pair23) -> None:  # type: ignore[no-untyped-def]
    """Where ( on the end values errs, on a missing key as on a stream."""
    for cmd in [("XRANGE", "nokey", "(18446744073709551615-18446744073709551615", "+"),
                ("XREVRANGE", "nokey", "(0-0", "-"), ("XREVRANGE", "nokey", "+", "(0-0"),
                ("XRANGE", "nokey", "-", "(0"), ("XRANGE", "nokey", "(0", "+")]:
        assert_alike(pair23, *cmd)


# -- XDEL -----------------------------------------------------------------------------------


def test_xdel(small_nodes) -> None:  # type: ignore[no-untyped-def]
    p = small_nodes
    for i in range(1, 11):
        p.check("XADD", "s", f"{i}-0", "f", str(i))
    script(p, """
        XDEL s 1-0
        XDEL s 1-0
        XDEL s 2 3 3-0 99
        XRANGE s - +
        XINFO STREAM s
        XDEL s 10-0
        XINFO STREAM s
        XADD s 10-1 f v
        XDEL s 4-0 5-0 6-0
        XINFO STREAM s
        XRANGE s - +
        XREVRANGE s + -
        XDEL s 7 8 9 10-1
        XLEN s
        XINFO STREAM s
        EXISTS s
        XADD s 10-* f v
        XDEL nokey 1-0
        EXISTS nokey
    """)
    for cmd in [("XDEL", "s"), ("XDEL", "s", "x"), ("XDEL", "s", "7-0", "x"), ("XDEL", "s", "*"),
                ("XDEL", "s", "-"), ("XDEL", "s", "+"), ("XDEL", "nokey", "x"), ("XDEL",)]:
        attempt(p, *cmd)
    assert_same_state(p.v.port, p.t.port)


# -- XTRIM ----------------------------------------------------------------------------------


def _fill(p, key: str, n: int, start: int = 1) -> None:  # type: ignore[no-untyped-def]
    p.v.pipeline([("XADD", key, f"{i}-0", "f", str(i)) for i in range(start, start + n)])
    p.t.pipeline([("XADD", key, f"{i}-0", "f", str(i)) for i in range(start, start + n)])


@pytest.mark.parametrize("entries", ["1", "3", "7"])
def test_xtrim_over_node_boundaries(small_nodes, entries: str) -> None:  # type: ignore[no-untyped-def]
    p = small_nodes
    assert_alike(p, "CONFIG", "SET", "stream-node-max-entries", entries)
    _fill(p, "s", 40)
    script(p, """
        XINFO STREAM s
        XTRIM s MAXLEN ~ 38
        XTRIM s MAXLEN ~ 35
        XLEN s
        XTRIM s MAXLEN ~ 20 LIMIT 5
        XLEN s
        XTRIM s MAXLEN ~ 20 LIMIT 0
        XLEN s
        XTRIM s MAXLEN ~ 20 LIMIT 7
        XRANGE s - + COUNT 1
        XINFO STREAM s
        XTRIM s MINID ~ 30
        XRANGE s - + COUNT 1
        XTRIM s MINID ~ 31-0 LIMIT 2
        XTRIM s MINID 31
        XRANGE s - + COUNT 1
        XTRIM s MAXLEN = 5
        XRANGE s - +
        XINFO STREAM s
        XTRIM s MAXLEN 5
        XTRIM s MINID 0
        XTRIM s MINID 18446744073709551615-18446744073709551615
        XINFO STREAM s
        XTRIM nokey MAXLEN 0
        EXISTS nokey
    """)
    # Deleted entries still occupy their node: ~ removes nodes by their live count.
    _fill(p, "d", 30)
    for i in range(2, 30, 3):
        p.check("XDEL", "d", f"{i}-0")
    script(p, """
        XINFO STREAM d
        XTRIM d MAXLEN ~ 15
        XRANGE d - + COUNT 3
        XINFO STREAM d
        XTRIM d MINID ~ 20
        XRANGE d - + COUNT 3
        XTRIM d MAXLEN 0
        XINFO STREAM d
    """)
    assert_same_state(p.v.port, p.t.port)


def test_xtrim_by_node_bytes(small_nodes) -> None:  # type: ignore[no-untyped-def]
    p = small_nodes
    assert_alike(p, "CONFIG", "SET", "stream-node-max-entries", "0")
    assert_alike(p, "CONFIG", "SET", "stream-node-max-bytes", "100")
    for i in range(1, 25):
        assert_alike(p, "XADD", "s", f"{i}-0", "field", "x" * (i % 7 * 5))
    script(p, """
        XINFO STREAM s
        XTRIM s MAXLEN ~ 10
        XINFO STREAM s
        XTRIM s MINID ~ 20
        XINFO STREAM s
    """)
    assert_alike(p, "CONFIG", "SET", "stream-node-max-entries", "100")
    assert_alike(p, "CONFIG", "SET", "stream-node-max-bytes", "0")
    _fill(p, "t", 250)
    script(p, """
        XINFO STREAM t
        XTRIM t MAXLEN ~ 10
        XINFO STREAM t
    """)


def test_xtrim_default_limit_of_the_approximate_form(small_nodes) -> None:  # type: ignore[no-untyped-def]
    """~ without LIMIT drops at most 100 nodes' worth of entries."""
    p = small_nodes
    assert_alike(p, "CONFIG", "SET", "stream-node-max-entries", "1")
    _fill(p, "s", 150)
    script(p, """
        XTRIM s MAXLEN ~ 0
        XLEN s
        XTRIM s MAXLEN ~ 0
        XLEN s
        XINFO STREAM s
    """)


@pytest.mark.parametrize("cmd", [
    ("XTRIM", "s"), ("XTRIM", "s", "MAXLEN"), ("XTRIM", "s", "MAXLEN", "~"), ("XTRIM", "s", "MAXLEN", "-1"),
    ("XTRIM", "s", "MAXLEN", "x"), ("XTRIM", "s", "MINID"), ("XTRIM", "s", "MINID", "x"),
    ("XTRIM", "s", "MAXLEN", "1", "MINID", "1"), ("XTRIM", "s", "MINID", "1", "MAXLEN", "1"),
    ("XTRIM", "s", "MAXLEN", "1", "MAXLEN", "1"), ("XTRIM", "s", "LIMIT", "1"),
    ("XTRIM", "s", "MAXLEN", "1", "LIMIT", "1"), ("XTRIM", "s", "MAXLEN", "=", "1", "LIMIT", "1"),
    ("XTRIM", "s", "MAXLEN", "~", "1", "LIMIT", "-1"), ("XTRIM", "s", "MAXLEN", "~", "1", "LIMIT"),
    ("XTRIM", "s", "MAXLEN", "~", "1", "FOO"), ("XTRIM", "s", "FOO"), ("XTRIM", "s", "MAXLEN", "1", "2"),
    ("XTRIM", "nokey"), ("XTRIM", "nokey", "MAXLEN", "-1"), ("XTRIM", "nokey", "MAXLEN", "1", "LIMIT", "1"),
    ("XTRIM", "s", "NOMKSTREAM", "MAXLEN", "1"), ("XTRIM", "s", "MINID", "*"), ("XTRIM", "s", "MINID", "-"),
    ("XTRIM",),
])
def test_xtrim_errors(pair23, cmd: tuple) -> None:  # type: ignore[no-untyped-def]
    _fill(pair23, "s", 5)
    assert_refused(pair23, *cmd)


# -- XSETID ---------------------------------------------------------------------------------


def test_xsetid(pair23) -> None:  # type: ignore[no-untyped-def]
    script(pair23, """
        XADD s 1-0 a b
        XADD s 2-0 a b
        XADD s 3-0 a b
        XSETID s 3-0
        XSETID s 5
        XINFO STREAM s
        XADD s 5-1 a b
        XDEL s 5-1
        XINFO STREAM s
        XSETID s 5-1 ENTRIESADDED 10 MAXDELETEDID 5-1
        XINFO STREAM s
        XSETID s 6-0 ENTRIESADDED 4 MAXDELETEDID 0-0
        XINFO STREAM s
        XSETID s 7-0 MAXDELETEDID 6-0 ENTRIESADDED 100
        XINFO STREAM s
        XSETID s 7-0 entriesadded 3 maxdeletedid 7-0
        XSETID s 7-0 ENTRIESADDED 9223372036854775807 MAXDELETEDID 7-0
        XINFO STREAM s
        XADD e MAXLEN 0 5-0 f v
        XSETID e 1-0
        XSETID e 0-0
        XINFO STREAM e
        XADD e 0-* f v
    """)
    for cmd in [
        ("XSETID", "s", "1-0"), ("XSETID", "s", "7-0"), ("XSETID", "nokey", "1-0"), ("XSETID", "s"),
        ("XSETID", "s", "x"), ("XSETID", "s", "*"), ("XSETID", "s", "$"), ("XSETID", "s", "+"),
        ("XSETID", "s", "99-0", "ENTRIESADDED", "1"), ("XSETID", "s", "99-0", "MAXDELETEDID", "1-0"),
        ("XSETID", "s", "99-0", "ENTRIESADDED", "-1", "MAXDELETEDID", "1-0"),
        ("XSETID", "s", "99-0", "ENTRIESADDED", "x", "MAXDELETEDID", "1-0"),
        ("XSETID", "s", "99-0", "ENTRIESADDED", "5", "MAXDELETEDID", "x"),
        ("XSETID", "s", "99-0", "ENTRIESADDED", "10", "MAXDELETEDID", "100-0"),
        ("XSETID", "s", "99-0", "ENTRIESADDED", "1", "MAXDELETEDID", "1-0"),
        ("XSETID", "s", "99-0", "ENTRIESADDED", "100", "MAXDELETEDID", "1-0"),
        ("XSETID", "s", "99-0", "ENTRIESADDED"), ("XSETID", "s", "99-0", "FOO", "1"),
        ("XSETID", "s", "99-0", "ENTRIESADDED", "100", "MAXDELETEDID"),
        ("XSETID", "s", "99-0", "ENTRIESADDED", "100", "MAXDELETEDID", "1-0", "FOO"),
        ("XSETID", "nokey", "99-0", "ENTRIESADDED", "1", "MAXDELETEDID", "1-0"),
        ("XSETID", "nokey", "99-0", "ENTRIESADDED", "-1", "MAXDELETEDID", "1-0"),
        ("XSETID", "nokey", "x"), ("XSETID",),
    ]:
        attempt(pair23, *cmd)


# -- XINFO STREAM ---------------------------------------------------------------------------


def test_xinfo_stream(small_nodes) -> None:  # type: ignore[no-untyped-def]
    p = small_nodes
    script(p, """
        XADD e MAXLEN 0 1-0 f v
        XINFO STREAM e
        XINFO STREAM e FULL
        XGROUP CREATE e g $
        XINFO STREAM e
        XINFO STREAM e FULL
    """)
    _fill(p, "s", 12)
    script(p, """
        XINFO STREAM s
        XINFO STREAM s FULL
        XINFO STREAM s full count 2
        XINFO STREAM s FULL COUNT 0
        XINFO STREAM s FULL COUNT 100
        XDEL s 1-0 12-0
        XINFO STREAM s
        XGROUP CREATE s g1 0
        XGROUP CREATE s g2 5-0
        XINFO STREAM s
        XREADGROUP GROUP g1 alice COUNT 3 STREAMS s >
        XREADGROUP GROUP g1 bob COUNT 2 STREAMS s >
        XREADGROUP GROUP g2 carol COUNT 1 STREAMS s >
        XGROUP CREATECONSUMER s g2 dave
        XINFO STREAM s FULL
        XINFO STREAM s FULL COUNT 1
        XCLAIM s g1 carol 0 2-0 3-0 TIME 1000 RETRYCOUNT 7
        XINFO STREAM s FULL
        XINFO stream s
    """)
    for cmd in [
        ("XINFO", "STREAM", "s", "FULL", "COUNT", "x"), ("XINFO", "STREAM", "s", "FULL", "COUNT", "-1"),
        ("XINFO", "STREAM", "s", "FULL", "COUNT"), ("XINFO", "STREAM", "s", "FOO"),
        ("XINFO", "STREAM", "s", "FULL", "FOO", "1"), ("XINFO", "STREAM", "s", "FULL", "COUNT", "1", "X"),
        ("XINFO", "STREAM"), ("XINFO", "STREAM", "nokey"), ("XINFO", "STREAM", "nokey", "FULL"),
        ("XINFO", "STREAM", "nokey", "FOO"), ("XINFO",), ("XINFO", "FOO"), ("XINFO", "FOO", "s"),
        ("XINFO", "GROUPS"), ("XINFO", "GROUPS", "s", "x"), ("XINFO", "CONSUMERS", "s"),
        ("XINFO", "CONSUMERS", "s", "g1", "x"), ("XINFO", "HELP", "x"),
    ]:
        attempt(p, *cmd)
    assert_alike(p, "XINFO", "HELP")
    assert_alike(p, "XINFO", "help")


def test_xinfo_stream_full_counts(pair23) -> None:  # type: ignore[no-untyped-def]
    """FULL shows 10 entries, PEL entries and consumer PEL entries by default."""
    _fill(pair23, "s", 25)
    script(pair23, """
        XGROUP CREATE s g 0
        XREADGROUP GROUP g a COUNT 12 STREAMS s >
        XREADGROUP GROUP g b STREAMS s >
        XCLAIM s g c 0 1-0 2-0 3-0 TIME 1000
        XINFO STREAM s FULL
        XINFO STREAM s FULL COUNT 3
        XINFO STREAM s FULL COUNT 0
        XINFO STREAM s FULL COUNT 11
    """)


def test_xinfo_radix_tree_counts(small_nodes) -> None:  # type: ignore[no-untyped-def]
    """radix-tree-keys is the number of listpack nodes; radix-tree-nodes
    the rax's node count: both as Valkey reports them as a stream grows,
    loses entries and is trimmed."""
    p = small_nodes
    _fill(p, "s", 1)
    script(p, "XINFO STREAM s")
    for n in range(2, 30):
        _fill(p, "s", 1, start=n)
        assert_alike(p, "XINFO", "STREAM", "s")
    for ms in ("1", "255", "256", "65536", "1700000000000", "18446744073709551615"):
        assert_alike(p, "XADD", "s", f"{ms}-*", "f", "v")
        assert_alike(p, "XINFO", "STREAM", "s")
    for cmd in [("XDEL", "s", "4-0", "5-0", "6-0"), ("XTRIM", "s", "MAXLEN", "~", "20"),
                ("XTRIM", "s", "MAXLEN", "=", "10"), ("XTRIM", "s", "MAXLEN", "0")]:
        assert_alike(p, *cmd)
        assert_alike(p, "XINFO", "STREAM", "s")


# -- types ----------------------------------------------------------------------------------


def test_wrong_type_both_ways(pair23) -> None:  # type: ignore[no-untyped-def]
    script(pair23, """
        SET str v
        HSET h f v
        RPUSH l a
        XADD s 1-0 f v
        XGROUP CREATE s g 0
        TYPE s
        OBJECT ENCODING s
        EXISTS s
    """)
    for key in ("str", "h", "l"):
        for cmd in [
            ("XADD", key, "1-0", "f", "v"), ("XADD", key, "NOMKSTREAM", "1-0", "f", "v"), ("XLEN", key),
            ("XRANGE", key, "-", "+"), ("XREVRANGE", key, "+", "-"), ("XDEL", key, "1-0"),
            ("XTRIM", key, "MAXLEN", "0"), ("XSETID", key, "1-0"), ("XINFO", "STREAM", key),
            ("XINFO", "GROUPS", key), ("XINFO", "CONSUMERS", key, "g"), ("XGROUP", "CREATE", key, "g", "0"),
            ("XGROUP", "CREATE", key, "g", "0", "MKSTREAM"), ("XGROUP", "SETID", key, "g", "0"),
            ("XGROUP", "DESTROY", key, "g"), ("XGROUP", "CREATECONSUMER", key, "g", "c"),
            ("XGROUP", "DELCONSUMER", key, "g", "c"), ("XREAD", "STREAMS", key, "0"),
            ("XREADGROUP", "GROUP", "g", "c", "STREAMS", key, ">"), ("XACK", key, "g", "1-0"),
            ("XPENDING", key, "g"), ("XPENDING", key, "g", "-", "+", "10"),
            ("XCLAIM", key, "g", "c", "0", "1-0"), ("XAUTOCLAIM", key, "g", "c", "0", "0"),
            ("XRANGE", key, "x", "+"), ("XADD", key, "x", "f", "v"), ("XDEL", key, "x"),
            ("XREAD", "STREAMS", "s", key, "0", "0"), ("XINFO", "STREAM", key, "FULL", "COUNT", "x"),
        ]:
            assert_refused(pair23, *cmd)
    for cmd in [("GET", "s"), ("HGET", "s", "f"), ("LPUSH", "s", "x"), ("SADD", "s", "x"), ("ZADD", "s", "1", "x"),
                ("INCR", "s"), ("APPEND", "s", "x"), ("LRANGE", "s", "0", "-1"), ("SMEMBERS", "s"),
                ("ZRANGE", "s", "0", "-1"), ("HGETALL", "s"), ("STRLEN", "s"),
                ("SETRANGE", "s", "0", "x"), ("GETDEL", "s"), ("SORT", "s"), ("SORT_RO", "s")]:
        assert_refused(pair23, *cmd)


# -- the stream as a key ----------------------------------------------------------------------


def test_copy_rename_move_of_a_stream_with_groups(small_nodes) -> None:  # type: ignore[no-untyped-def]
    p = small_nodes
    _fill(p, "s", 8)
    script(p, """
        XDEL s 3-0
        XGROUP CREATE s g 0
        XREADGROUP GROUP g alice COUNT 3 STREAMS s >
        XCLAIM s g bob 0 2-0 TIME 1000
        XGROUP CREATE s h $ ENTRIESREAD 8
        COPY s c
        COPY s c
        XINFO STREAM c FULL
        XINFO GROUPS c
        XADD c 9-0 f v
        XREADGROUP GROUP g carol STREAMS c >
        XACK c g 1-0
        XINFO STREAM s FULL
        XINFO STREAM c FULL
        COPY c s REPLACE
        XINFO STREAM s FULL
        COPY s s1 DB 1
        RENAME c r
        XPENDING r g - + 10
        MOVE r 1
        SELECT 1
        XINFO STREAM r FULL
        XINFO STREAM s1 FULL
        XREADGROUP GROUP g dave STREAMS s1 >
        SELECT 0
        SWAPDB 0 1
        XINFO GROUPS s1
        SWAPDB 0 1
        OBJECT ENCODING s
        EXPIRE s 100
        TTL s
        PERSIST s
        TYPE r
        DEL s
        XINFO GROUPS s
    """)
    assert_same_state(p.v.port, p.t.port)
    assert_same_state(p.v.port, p.t.port, db=1)


def test_stream_replies_through_scripts(pair23) -> None:  # type: ignore[no-untyped-def]
    """Stream replies converted to Lua values and back, in RESP2 and with
    the script in RESP3."""
    _fill(pair23, "s", 3)
    pair23.check("XGROUP", "CREATE", "s", "g", "0")
    for body in [
        "return redis.call('XRANGE', KEYS[1], '-', '+')",
        "return redis.call('XREAD', 'STREAMS', KEYS[1], '0')",
        "return redis.call('XREAD', 'STREAMS', KEYS[1], '99')",
        "return redis.call('XINFO', 'STREAM', KEYS[1])",
        "return redis.call('XINFO', 'GROUPS', KEYS[1])",
        "return redis.call('XREADGROUP', 'GROUP', 'g', 'c', 'COUNT', '1', 'STREAMS', KEYS[1], '>')",
        "return redis.call('XPENDING', KEYS[1], 'g')",
        "return redis.call('XAUTOCLAIM', KEYS[1], 'g', 'd', '0', '0')",
        "return redis.pcall('XADD', KEYS[1], '1-0', 'f', 'v')",
        "return redis.call('XADD', KEYS[1], '9-*', 'f', 'v')",
        "redis.setresp(3); return redis.call('XPENDING', KEYS[1], 'g')",
    ]:
        assert_alike(pair23, "EVAL", body, "1", "s")
    # A map becomes a Lua table, walked in another order here than in
    # Valkey (docs/compatibility.md): compared as maps.
    for body in [
        "redis.setresp(3); return redis.call('XINFO', 'STREAM', KEYS[1])",
        "redis.setresp(3); return redis.call('XREAD', 'STREAMS', KEYS[1], '0')",
        "redis.setresp(3); return redis.call('XREAD', 'STREAMS', KEYS[1], '99')",
        "redis.setresp(3); return redis.call('XINFO', 'GROUPS', KEYS[1])",
    ]:
        v, t = pair23.both("EVAL", body, "1", "s")
        assert _as_maps(tree(t)) == _as_maps(tree(v)), f"{body}\n valkey:   {v!r}\n trafikey: {t!r}"


def _as_maps(node):  # type: ignore[no-untyped-def]
    """A parsed reply with every map's pairs (a RESP3 map, or the flat
    array a map becomes in RESP2) in sorted order."""
    kind, payload = node[0], node[1]
    if not isinstance(payload, list):
        return node
    items = [_as_maps(x) for x in payload]
    keyed = len(items) % 2 == 0 and all(x[0] in (b"$", b"+") for x in items[0::2])
    if kind == b"%" or (keyed and items):
        return (kind, sorted(zip(items[0::2], items[1::2], strict=True), key=repr))
    return (kind, items)

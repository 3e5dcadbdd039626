"""Hash commands against Valkey, byte for byte, in RESP2 and RESP3.

Small hashes (Valkey's listpack) keep insertion order, so every reply is
compared as bytes. Big ones (hashtable) are ordered by Valkey's hash table;
there we compare contents. HRANDFIELD picks are random: properties only.
"""

from __future__ import annotations

import pytest
from helpers.pair import string_key
from helpers.replies import bulk_items
from helpers.script import run
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

ENTRIES = 512  # hash-max-listpack-entries (Valkey 9's default)
VALUE = 64  # hash-max-listpack-value


def hfill(pair, key: str, n: int, field=lambda i: "f%04d" % i, value=lambda i: "v%d" % i) -> None:
    args: list = []
    for i in range(n):
        args += [field(i), value(i)]
    pair.check("HSET", key, *args)


def pairs_of(flat: list[bytes]) -> dict[bytes, bytes]:
    return dict(zip(flat[::2], flat[1::2], strict=True))


# -- writes and reads ---------------------------------------------------------------------------


def test_hset_family(pair23) -> None:
    run(pair23, """
        HSET h f v g
        HSET h f
        HMSET h f v g
        hmset h f v g
        HSET h f v g w f v2
        HGETALL h
        HSET h f v3
        HSET h "" empty
        HSET h bin \\x00\\xff
        HGETALL h
        HMSET h a 1 b 2 a 3
        HGETALL h
        HSETNX h f x
        HSETNX h n x
        HSETNX h2 n x
        HGETALL h
        HGETALL h2
        hset h F upper
        HKEYS h
        HVALS h
    """)


def test_reads(pair23) -> None:
    run(pair23, """
        HSET h f v g w e 12345 neg -7
        HGET h f
        HGET h nosuch
        HGET nokey f
        HMGET h f nosuch g e
        HMGET nokey a b
        HEXISTS h g
        HEXISTS h nosuch
        HEXISTS nokey f
        HLEN h
        HLEN nokey
        HSTRLEN h g
        HSTRLEN h e
        HSTRLEN h neg
        HSTRLEN h nosuch
        HSTRLEN nokey f
        HKEYS h
        HVALS h
        HGETALL h
        HKEYS nokey
        HVALS nokey
        HGETALL nokey
    """)


def test_hdel_and_order(pair23) -> None:
    """Deletes close the gap and updates keep a field's place, as in a listpack."""
    run(pair23, """
        HSET h a 1 b 2 c 3 d 4 e 5
        HDEL h nosuch b b
        HSET h a 10 f 6 b 7
        HGETALL h
        HDEL h a c nosuch
        HKEYS h
        HDEL nokey f
        HDEL h d e f b
        # The emptied hash is gone: another type can take the name.
        ZADD h 1 m
        HSET g x 1
        HDEL g x y
        ZADD g 1 m
    """)


def test_wrongtype(pair23) -> None:
    pair23.check("ZADD", "z", 1, "m")
    keys = ["z"] + (["str"] if string_key(pair23) else [])
    for k in keys:
        run(pair23, f"""
            HSET {k} f v
            HSET {k} f v g
            HMSET {k} f v
            HSETNX {k} f v
            HGET {k} f
            HMGET {k} f g
            HDEL {k} f
            HEXISTS {k} f
            HLEN {k}
            HSTRLEN {k} f
            HKEYS {k}
            HVALS {k}
            HGETALL {k}
            HINCRBY {k} f 1
            HINCRBY {k} f x
            HINCRBYFLOAT {k} f x
            HRANDFIELD {k}
            HRANDFIELD {k} 1
            HRANDFIELD {k} x
            HSCAN {k} 0
            HSCAN {k} x
            HSCAN {k} 0 COUNT 0
        """)
    pair23.check("ZRANGE", "z", 0, -1)


# -- counters --------------------------------------------------------------------------------------


def test_hincrby(pair23) -> None:
    run(pair23, """
        HINCRBY h i 5
        HINCRBY h i -10
        HINCRBY h i -0
        HINCRBY h i x
        HINCRBY h i 1.5
        HINCRBY h i " 1"
        HINCRBY h i 9223372036854775808
        HINCRBY h i -9223372036854775809
        HINCRBY nokey i x
        HSET h s str lz 007 sp " 1" e "" plus +1 big 9223372036854775806 small -9223372036854775807
        HINCRBY h s 1
        HINCRBY h lz 1
        HINCRBY h sp 1
        HINCRBY h e 1
        HINCRBY h plus 1
        HINCRBY h big 1
        HINCRBY h big 1
        HINCRBY h big -9223372036854775808
        HINCRBY h small -1
        HINCRBY h small -1
        HINCRBY h small 9223372036854775807
        HINCRBY h new 9223372036854775807
        HINCRBY h new2 -9223372036854775808
        HGETALL h
        HINCRBY fresh f 3
        HGETALL fresh
    """)


def test_hincrbyfloat(pair23) -> None:
    run(pair23, """
        HINCRBYFLOAT h f 1.5
        HINCRBYFLOAT h f 2
        HINCRBYFLOAT h f -3.5
        HINCRBYFLOAT h f 0.25
        HINCRBYFLOAT h f x
        HINCRBYFLOAT h f inf
        HINCRBYFLOAT h f -inf
        HINCRBYFLOAT h f nan
        HINCRBYFLOAT h f " 1"
        HINCRBYFLOAT h f ""
        HINCRBYFLOAT nokey f x
        HINCRBYFLOAT nokey f inf
        HSET h s str i 10 e ""
        HINCRBYFLOAT h s 1
        HINCRBYFLOAT h e 1
        HINCRBYFLOAT h i 1
        HINCRBYFLOAT h i 1e3
        HINCRBYFLOAT h i -1010
        HSET h inf inf
        HINCRBYFLOAT h inf 1
        HINCRBYFLOAT h inf -inf
        HINCRBYFLOAT h inf x
        HGETALL h
        HINCRBY h f 1
    """)


# -- HRANDFIELD --------------------------------------------------------------------------------------


def test_hrandfield_arguments(pair23) -> None:
    run(pair23, """
        HRANDFIELD nokey
        HRANDFIELD nokey 3
        HRANDFIELD nokey 3 WITHVALUES
        HRANDFIELD nokey x
        HRANDFIELD nokey 3 x
        HRANDFIELD nokey -9223372036854775808
        HSET one f v
        HRANDFIELD one
        HRANDFIELD one 0
        HRANDFIELD one 0 WITHVALUES
        HRANDFIELD one 1
        HRANDFIELD one 2 WITHVALUES
        HRANDFIELD one -2 WITHVALUES
        HRANDFIELD one -2
        HRANDFIELD one 1 withvalues
        HRANDFIELD one 1 WITHSCORES
        HRANDFIELD one 1 WITHVALUES x
        HRANDFIELD one -9223372036854775808
        HRANDFIELD one 9223372036854775808
        HRANDFIELD one 4611686018427387904 WITHVALUES
        HRANDFIELD one -4611686018427387904 WITHVALUES
        HRANDFIELD one 4611686018427387903 WITHVALUES
        HRANDFIELD one 9223372036854775807
        HSET h a 1 b 2 c 3
        HRANDFIELD h 3 WITHVALUES
        HRANDFIELD h 100 WITHVALUES
        HRANDFIELD h 100
    """)


@pytest.mark.parametrize("size", [10, ENTRIES + 10])
def test_hrandfield_picks(pair, size: int) -> None:
    hfill(pair, "h", size)
    fields = {b"f%04d" % i for i in range(size)}
    for count in [1, 2, 5, size - 1, size, -1, -7, -2 * size]:
        for w in (pair.v, pair.t):
            got = bulk_items(w.call("HRANDFIELD", "h", count))
            assert len(got) == (abs(count) if count < 0 else min(count, size))
            assert set(got) <= fields
            if count > 0:
                assert len(set(got)) == len(got)
                if size <= ENTRIES:
                    # A listpack yields distinct picks in insertion order.
                    assert got == sorted(got)
            flat = bulk_items(w.call("HRANDFIELD", "h", count, "WITHVALUES"))
            assert len(flat) == 2 * len(got)
            for f, v in zip(flat[::2], flat[1::2], strict=True):
                assert v == b"v%d" % int(f[1:])
    for w in (pair.v, pair.t):
        assert w.call("HRANDFIELD", "h").split(b"\r\n")[1] in fields
    # RESP3 nests field/value pairs.
    for w in (pair.v, pair.t):
        w.call("HELLO", "3")
        reply = w.call("HRANDFIELD", "h", 3, "WITHVALUES")
        assert reply.startswith(b"*3\r\n*2\r\n$")


# -- HSCAN -----------------------------------------------------------------------------------------------


def test_hscan_small(pair23) -> None:
    run(pair23, """
        HSET h f1 v1 f2 v2 g 3
        HSCAN h 0
        HSCAN h 0 NOVALUES
        HSCAN h 0 novalues COUNT 1
        HSCAN h 0 NOSCORES
        HSCAN h 0 COUNT 0
        HSCAN h 0 COUNT -5
        HSCAN h 0 COUNT x
        HSCAN h 0 COUNT 1
        HSCAN h 0 COUNT
        HSCAN h 0 MATCH
        HSCAN h 0 TYPE string
        HSCAN h 0 FOO
        HSCAN h 1
        HSCAN h x
        HSCAN h -1
        HSCAN h 18446744073709551615
        HSCAN h 18446744073709551616
        HSCAN h " 7"
        HSCAN h 007
        HSCAN nokey 0
        HSCAN nokey x
        HSCAN nokey 0 COUNT 0
        HSCAN nokey 0 NOSCORES
    """)


def _full_scan(w, key: str, *opts) -> list[bytes]:
    cursor = b"0"
    seen: list[bytes] = []
    for _ in range(10000):
        reply = w.call("HSCAN", key, cursor, *opts)
        head, _, rest = reply.partition(b"\r\n")
        assert head == b"*2"
        _, _, rest = rest.partition(b"\r\n")
        cursor, _, rest = rest.partition(b"\r\n")
        seen += bulk_items(b"x\r\n" + rest)
        if cursor == b"0":
            return seen
    raise AssertionError("scan did not finish")


def test_hscan_big(pair) -> None:
    hfill(pair, "h", ENTRIES + 100)
    for opts in [(), ("COUNT", 3), ("NOVALUES",), ("COUNT", 5000)]:
        vs, ts = _full_scan(pair.v, "h", *opts), _full_scan(pair.t, "h", *opts)
        if opts == ("NOVALUES",):
            assert set(vs) == set(ts) and len(set(ts)) == ENTRIES + 100
        else:
            assert pairs_of(vs) == pairs_of(ts) and len(pairs_of(ts)) == ENTRIES + 100
    for w in (pair.v, pair.t):
        assert not w.call("HSCAN", "h", 0, "COUNT", 5).startswith(b"*2\r\n$1\r\n0\r\n")


def test_hscan_match(pair23) -> None:
    pair23.check("HSET", "h", "a", 1, "b", 2, "ab", 3, "A*", 4, "c", 5)
    for pat in ["a*", "*", "?", "[a-b]*", "A\\*", "*b", "x*", ""]:
        pair23.check("HSCAN", "h", 0, "MATCH", pat)
        pair23.check("HSCAN", "h", 0, "MATCH", pat, "NOVALUES", "COUNT", 1)
    pair23.check("HSCAN", "h", 0, "match", "[a", "COUNT", 5, "MATCH", "b")
    hfill(pair23, "big", ENTRIES + 50)
    for pat in ["f01*", "*7", "f00[0-4]?"]:
        assert sorted(_full_scan(pair23.v, "big", "MATCH", pat)) == sorted(_full_scan(pair23.t, "big", "MATCH", pat))


# -- big hashes and the encoding switch ---------------------------------------------------------------------


def test_big_hash_contents(pair23) -> None:
    hfill(pair23, "h", ENTRIES + 20)
    run(pair23, """
        HLEN h
        HGET h f0100
        HMGET h f0000 nosuch f0531
        HSTRLEN h f0500
        HDEL h f0000 f0001 nosuch
        HINCRBY h f0002 1
        HINCRBY h ctr 7
        HSETNX h f0003 x
        HEXISTS h f0004
        HLEN h
    """)
    for cmd in ("HGETALL", "HKEYS", "HVALS"):
        v, t = pair23.both(cmd, "h")
        # A hashtable's order is its own; the header and contents must agree.
        assert v.split(b"\r\n", 1)[0] == t.split(b"\r\n", 1)[0]
        assert sorted(bulk_items(v)) == sorted(bulk_items(t))
    assert pairs_of(bulk_items(pair23.v.call("HGETALL", "h"))) == pairs_of(bulk_items(pair23.t.call("HGETALL", "h")))


def encoding(pair, key: str) -> bytes:
    """OBJECT ENCODING where trafikey serves it; otherwise what shows the
    encoding on the wire: a listpack is scanned whole in one call, a
    hashtable step by step.

    Either way the hash is first padded with 60 short fields: a hashtable
    of a few fields may be scanned whole too, and padding cannot switch a
    listpack that has room for it (the tests leave that room)."""
    pair.check("HSET", key, *[x for i in range(60) for x in ("pad%02d" % i, i)])
    t = pair.t.call("OBJECT", "ENCODING", key)
    if not t.startswith(b"-"):
        return pair.check("OBJECT", "ENCODING", key).split(b"\r\n")[1]
    v = pair.v.call("HSCAN", key, 0, "COUNT", 1).startswith(b"*2\r\n$1\r\n0\r\n")
    t2 = pair.t.call("HSCAN", key, 0, "COUNT", 1).startswith(b"*2\r\n$1\r\n0\r\n")
    assert v == t2, key
    return b"listpack" if v else b"hashtable"


def test_encoding_switch(pair) -> None:
    long = "x" * (VALUE + 1)
    hfill(pair, "a", ENTRIES - 60)
    assert encoding(pair, "a") == b"listpack"  # now ENTRIES fields
    pair.check("HSET", "a", "f0000", "again")
    assert encoding(pair, "a") == b"listpack"
    pair.check("HSET", "a", "new", "1")
    assert encoding(pair, "a") == b"hashtable"
    pair.check("HDEL", "a", *["f%04d" % i for i in range(ENTRIES - 100)])
    assert encoding(pair, "a") == b"hashtable"  # never back
    # The request's size decides, duplicates included.
    pair.check("HSET", "b", *[x for _ in range(ENTRIES + 1) for x in ("same", "v")])
    assert encoding(pair, "b") == b"hashtable"
    cases = [
        ("HSET c f " + "x" * VALUE, b"listpack"),
        ("HSET d f " + long, b"hashtable"),
        ("HSET e " + long + " v", b"hashtable"),
        ("HMSET f a 1 b " + long, b"hashtable"),
        ("HSET g a 1\nHSETNX g a " + long, b"listpack"),
        ("HSET i a 1\nHSETNX i b " + long, b"hashtable"),
        ("HINCRBY j " + long + " 1", b"hashtable"),
        ("HSET k a x\nHSET k a y " + long + " z", b"hashtable"),
    ]
    for setup, want in cases:
        key = setup.split()[1]
        run(pair, setup)
        assert encoding(pair, key) == want, setup
    hfill(pair, "m", ENTRIES)
    pair.check("HINCRBY", "m", "ctr", 1)
    assert encoding(pair, "m") == b"hashtable"
    hfill(pair, "n", ENTRIES)
    pair.check("HSETNX", "n", "extra", 1)
    assert encoding(pair, "n") == b"hashtable"
    hfill(pair, "o", ENTRIES - 61)
    pair.check("HSETNX", "o", "extra", 1)
    assert encoding(pair, "o") == b"listpack"


def test_hincrbyfloat_encoding(pair) -> None:
    run(pair, "HINCRBYFLOAT p " + "y" * (VALUE + 1) + " 1")
    assert encoding(pair, "p") == b"hashtable"
    hfill(pair, "q", ENTRIES)
    pair.check("HINCRBYFLOAT", "q", "ctr", "1.5")
    assert encoding(pair, "q") == b"hashtable"


# -- random operation sequences -----------------------------------------------------------------------------

_FIELDS = st.sampled_from(["a", "b", "c", "d", "e", "", "ctr"])
_VALUES = st.sampled_from(["1", "-5", "x", "", "007", "9223372036854775807", "v" * 70, "2.5"])
_INCRS = st.sampled_from(["1", "-1", "0", "100", "x", "9223372036854775807", "-9223372036854775808"])


@st.composite
def _command(draw) -> list:
    kind = draw(st.integers(0, 9))
    f = draw(_FIELDS)
    if kind <= 2:
        pairs = draw(st.lists(st.tuples(_FIELDS, _VALUES), min_size=1, max_size=3))
        return [draw(st.sampled_from(["HSET", "HMSET"])), "h", *[x for p in pairs for x in p]]
    if kind == 3:
        return ["HSETNX", "h", f, draw(_VALUES)]
    if kind == 4:
        return ["HDEL", "h", f, *draw(st.lists(_FIELDS, max_size=2))]
    if kind == 5:
        return ["HINCRBY", "h", f, draw(_INCRS)]
    if kind == 6:
        return ["HMGET", "h", f, draw(_FIELDS)]
    if kind == 7:
        return [draw(st.sampled_from(["HGET", "HEXISTS", "HSTRLEN"])), "h", f]
    if kind == 8:
        return [draw(st.sampled_from(["HGETALL", "HKEYS", "HVALS", "HLEN"])), "h"]
    return ["HSCAN", "h", 0, *draw(st.sampled_from([[], ["NOVALUES"], ["COUNT", 1]]))]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(commands=st.lists(_command(), min_size=1, max_size=25))
def test_random_sequences(pair23, commands) -> None:
    """Random writes and reads on a small hash: order and replies equal.
    (Values over 64 bytes switch it to a hashtable, so the order-sensitive
    reads are only compared while it is small.)"""
    pair23.check("FLUSHALL")
    big = False
    for cmd in commands:
        if big and cmd[0] == "HSCAN":
            continue  # a hashtable is scanned by cursor: see test_hscan_big
        if big and cmd[0] in ("HGETALL", "HKEYS", "HVALS"):
            v, t = pair23.both(*cmd)
            assert sorted(bulk_items(v)) == sorted(bulk_items(t))
            continue
        pair23.check(*cmd)
        big = big or any(len(str(a)) > VALUE for a in cmd[2:])

"""Generic key commands against Valkey, byte for byte, in RESP2 and RESP3.

Replies whose order is Valkey's hash-table order (KEYS, SCAN) or random
(RANDOMKEY) are compared as sets or by their properties; SCAN cursors are
ours to choose, so only what an iteration returns is compared. TTLs set from
a relative time are compared within a tolerance: the two servers read their
own clocks a few milliseconds apart. The last test drives random sequences
of string and key commands against both servers.
"""

from __future__ import annotations

import os
import random
import time

from helpers.encodings import assert_encodings_agree
from helpers.resp_wire import Wire
from helpers.script import run
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from trafikey_server.util.glob import match

FUTURE_MS = 4000000000123  # 2096


def parse_array(reply: bytes) -> list[bytes]:
    """The bulk strings of a flat array reply (keys free of CR LF)."""
    lines = reply.split(b"\r\n")
    assert lines[0][:1] == b"*", reply
    return [lines[i] for i in range(2, len(lines), 2)][: int(lines[0][1:])]


def assert_ttl_close(pair, key: str, cmd: str = "PTTL", slack: int = 1500) -> None:
    v, t = pair.both(cmd, key)
    vi, ti = int(v[1:]), int(t[1:])
    assert (vi < 0) == (ti < 0), (v, t)
    assert abs(vi - ti) <= slack, (v, t)


def test_del_unlink_exists_touch_type(pair23) -> None:
    run(pair23, """
        MSET a 1 b 2 c 3
        HSET h f v
        ZADD z 1 m
        EXISTS a b missing a
        EXISTS missing
        TOUCH a missing h
        TOUCH missing
        TYPE a
        TYPE h
        TYPE z
        TYPE missing
        DEL a missing a
        UNLINK b c h
        UNLINK missing
        EXISTS a b c h z
        DEL z z z
        DBSIZE
        DEL
        UNLINK
        EXISTS
        TOUCH
        TYPE
        TYPE a b
    """)


# -- KEYS and the glob matcher -------------------------------------------------------


def _keys_set(w: Wire, pattern: bytes | str) -> set[bytes]:
    return set(parse_array(w.call("KEYS", pattern)))


def test_keys_pattern(pair23) -> None:
    names = ("hello", "hallo", "hxllo", "hllo", "heeeello", "h[a]llo", "a*b", "x\\y", "", "one", "two",
             "h-llo", "h]llo", "h^llo", "\x80", "\xff", "\x00", "a\x00b", "\x7f")
    for k in names:
        pair23.check("SET", k.encode("latin-1"), "v")
    for pat in ("*", "h?llo", "h*llo", "h[ae]llo", "h[^e]llo", "h[a-b]llo", "h[b-a]llo", "*o", "a\\*b",
                "x\\\\y", "[", "h[", "h[a", "*[", "**", "?", "", "h[a-]llo", "\\", "o*e", "[^]", "[]", "[^",
                "[\\]", "h[\\]]llo", "h[]]llo", "h[-]llo", "h[--^]llo", "[a-\xff]", "[\xff-a]", "[\x80-\xff]",
                "[\x00-\x7f]", "[^\x80-\xff]", "a?b", "a\x00b", "*\x00*", "\\[", "h\\", "[a-z]*", "*?*?*"):
        assert _keys_set(pair23.v, pat.encode("latin-1")) == _keys_set(pair23.t, pat.encode("latin-1")), pat


_PATTERN_BYTES = b"ab*?[]^-\\\x00\x80\xff"
_KEY_BYTES = b"ab-]\\^*?[\x00\x80\xff"


def _over(alphabet: bytes, size: int) -> st.SearchStrategy[bytes]:
    return st.lists(st.sampled_from(list(alphabet)), max_size=size).map(bytes)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(_over(_PATTERN_BYTES, 8), st.lists(_over(_KEY_BYTES, 5), max_size=6))
def test_keys_glob_random(pair, pattern: bytes, keys: list[bytes]) -> None:
    """Random patterns over a small alphabet full of glob syntax and of
    bytes that C compares as signed."""
    pair.v.call("FLUSHALL")
    pair.t.call("FLUSHALL")
    for k in keys:
        pair.check("SET", k, "v")
    assert _keys_set(pair.v, pattern) == _keys_set(pair.t, pattern), (pattern, keys)


def test_glob_nesting_limit(pair) -> None:
    """Valkey gives up on a pattern needing more than 1000 nested stars."""
    for k in (b"a" * 1500, b"a" * 1001, b"a" * 1000 + b"b"):
        pair.check("SET", k, "v")
    for pat in (b"*a" * 1000, b"*a" * 1001, b"*a" * 1000 + b"*", b"*a" * 1001 + b"*", b"a" + b"*a" * 999 + b"*",
                b"*a" * 1000 + b"**", b"*" * 5000 + b"a"):
        assert _keys_set(pair.v, pat) == _keys_set(pair.t, pat), len(pat)


def test_glob_is_not_exponential() -> None:
    """What Valkey answers at once must not take our matcher forever
    (runaway backtracking would trip the suite's timeout)."""
    assert not match(b"*a" * 40 + b"b", b"a" * 5000)
    assert match(b"*a*a*a*a*a*a*a*a*a*a", b"a" * 5000)


# -- expiry --------------------------------------------------------------------------


def test_expire_family(pair23) -> None:
    run(pair23, """
        SET k v
        EXPIRE missing 10
        EXPIRE k 100
        EXPIRE k 100 NX
        EXPIRE k 100 XX
        EXPIRE k 50 GT
        EXPIRE k 500 GT
        EXPIRE k 1000 LT
        EXPIRE k 10 LT
        EXPIRE k 10 NX XX
        EXPIRE k 10 XX NX
        EXPIRE k 10 NX GT
        EXPIRE k 10 LT NX
        EXPIRE k 10 GT LT
        EXPIRE k 5 GT GT
        EXPIRE k 20 XX GT
        EXPIRE k 10 xx lt
        EXPIRE k 10 foo
        EXPIRE k 10 NX foo
        EXPIRE k 10 foo NX XX
        EXPIRE k 10 "NX\\x00zz"
        EXPIRE k 10 "Fo\\x00o"
        EXPIRE k x
        EXPIRE k x foo
        EXPIRE k x NX XX
        EXPIRE k ""
        EXPIRE k 1.5
        EXPIRE k 9223372036854775807
        EXPIRE k 9223372036854775
        EXPIRE k 9223372036854776
        EXPIRE k -9223372036854775
        EXPIRE k -9223372036854776
        EXPIRE k -9223372036854775808
        PEXPIRE k 9223372036854775807
        EXPIREAT k 9223372036854775807
        PEXPIREAT k 9223372036854775807
        PEXPIRETIME k
        EXPIRETIME k
        TTL k
        SET p v
        EXPIRE p 10 GT
        EXPIRE p 10 XX
        EXPIRE p 10 LT
        PERSIST p
        PEXPIREAT p 4000000000000
        PEXPIRETIME p
        EXPIRETIME p
        EXPIREAT p 4000000001
        PEXPIRETIME p
        PEXPIREAT p 4000000000499
        EXPIRETIME p
        PEXPIREAT p 4000000000500
        EXPIRETIME p
        PEXPIREAT p 4000000000500 GT
        PEXPIREAT p 4000000000501 GT
        PEXPIREAT p 4000000000501 LT
        PEXPIREAT p 4000000000400 LT
        PEXPIRETIME p
        PERSIST p
        PERSIST p
        PERSIST missing
        TTL p
        PTTL p
        TTL missing
        PTTL missing
        EXPIRETIME missing
        PEXPIRETIME missing
        EXPIRETIME p
        EXPIRE p -1
        EXISTS p
        SET q v
        PEXPIREAT q 1
        GET q
        SET q v
        EXPIREAT q 0 NX
        EXISTS q
        SET q v
        EXPIRE q 0 XX
        EXISTS q
        EXPIRE q -5 GT
        SET q v
        EXPIRE q -5 LT
        EXISTS q
        HSET h f v
        EXPIRE h 100 NX
        PEXPIREAT h 1
        TYPE h
        ZADD z 1 m
        PEXPIREAT z 4000000000000
        PEXPIRETIME z
        PERSIST z
        TTL z
    """)


def test_ttl_tolerance(pair) -> None:
    pair.check("SET", "k", "v")
    pair.check("EXPIRE", "k", "100")
    assert_ttl_close(pair, "k")
    assert_ttl_close(pair, "k", "TTL", 1)
    assert_ttl_close(pair, "k", "EXPIRETIME", 2)
    assert_ttl_close(pair, "k", "PEXPIRETIME", 1500)
    pair.check("PEXPIRE", "k", "5000")
    assert_ttl_close(pair, "k")
    pair.check("PEXPIRE", "k", "1000000", "GT")
    assert_ttl_close(pair, "k")
    pair.check("PEXPIRE", "k", "10000", "LT")
    assert_ttl_close(pair, "k")


# -- renaming, copying, moving --------------------------------------------------------


def test_rename(pair23) -> None:
    run(pair23, """
        RENAME missing x
        RENAMENX missing x
        RENAME missing missing
        SET a 1
        RENAME a a
        RENAMENX a a
        RENAME a b
        EXISTS a b
        SET c 3
        RENAMENX b c
        RENAME b c
        GET c
        HSET h f v
        RENAME h c
        TYPE c
        HGETALL c
        PEXPIREAT c 4000000000000
        RENAME c d
        PEXPIRETIME d
        SET e 5
        PEXPIREAT e 4000000000001
        RENAME d e
        PEXPIRETIME e
        TYPE e
        SET f 6
        RENAME e f
        TTL f
        PEXPIRETIME f
        SET g 7
        PEXPIREAT g 4000000000002
        RENAMENX f g
        RENAMENX f g2
        PEXPIRETIME g2
    """)


def test_copy(pair23) -> None:
    run(pair23, """
        COPY missing x
        COPY missing missing
        SET a 1
        COPY a a
        COPY a b
        GET b
        COPY a b
        SET a 2
        COPY a b REPLACE
        GET b
        COPY a b replace REPLACE
        COPY a b DB
        COPY a b DB x
        COPY a b DB 99
        COPY a b DB -1
        COPY a b DB 2147483648
        COPY a b DB 16
        COPY a b DB 15
        COPY a a DB 99
        COPY a b foo
        COPY a b REPLACE foo
        COPY a a DB 0
        COPY a a DB 1
        COPY a a DB 1
        COPY a a DB 1 REPLACE
        COPY a a DB 1 DB 0
        COPY missing a DB 0 DB 1
        SELECT 1
        GET a
        SELECT 15
        GET b
        SELECT 0
        HSET h f v
        COPY h h2
        HSET h g w
        HGETALL h2
        ZADD z 1 m
        COPY z z2
        ZADD z 2 n
        ZRANGE z2 0 -1 WITHSCORES
        APPEND a x
        COPY a a3
        APPEND a y
        GET a3
        OBJECT ENCODING a3
        PEXPIREAT a 4000000000000
        COPY a a4
        PEXPIRETIME a4
        PEXPIRETIME a
        SET a5 v
        PEXPIREAT a5 4000000000005
        COPY a a5 REPLACE
        PEXPIRETIME a5
        SET plain v
        COPY plain a5 REPLACE
        TTL a5
    """)


def test_copy_big_values_are_independent(pair) -> None:
    """A copied hash or sorted set past its listpack limits is its own."""
    for i in range(200):
        pair.check("HSET", "h", f"f{i}", "x" * (i % 70))
        pair.check("ZADD", "z", str(i), f"m{i}" + "y" * (i % 70))
    pair.check("OBJECT", "ENCODING", "h")
    pair.check("OBJECT", "ENCODING", "z")
    pair.check("COPY", "h", "h2")
    pair.check("COPY", "z", "z2")
    pair.check("OBJECT", "ENCODING", "h2")
    pair.check("OBJECT", "ENCODING", "z2")
    pair.check("HDEL", "h", "f1", "f2")
    pair.check("ZREM", "z", "m1")
    pair.check("HLEN", "h2")
    pair.check("ZCARD", "z2")
    pair.check("ZRANGE", "z2", "0", "5", "WITHSCORES")


def test_move(pair23) -> None:
    run(pair23, """
        MOVE missing 1
        SET a 1
        MOVE a 0
        MOVE a x
        MOVE a 99
        MOVE a -1
        MOVE a 16
        MOVE a 2147483648
        MOVE missing 0
        MOVE missing 99
        PEXPIREAT a 4000000000000
        MOVE a 1
        EXISTS a
        SELECT 1
        GET a
        PEXPIRETIME a
        SET b 2
        SELECT 0
        SET b 3
        MOVE b 1
        GET b
        HSET h f v
        MOVE h 1
        SELECT 1
        HGETALL h
        TYPE h
        FLUSHDB
    """)


# -- RANDOMKEY -------------------------------------------------------------------------


def test_randomkey(pair23) -> None:
    pair23.check("RANDOMKEY")
    keys = {b"a", b"b", b"c"}
    for k in keys:
        pair23.check("SET", k, "v")
    seen: set[bytes] = set()
    for _ in range(60):
        v, t = pair23.both("RANDOMKEY")
        assert v.split(b"\r\n")[1] in keys
        seen.add(t.split(b"\r\n")[1])
    assert seen == keys  # 60 draws miss one of 3 keys with probability ~1e-10
    pair23.check("DEL", "a", "b", "c")
    pair23.check("RANDOMKEY")
    pair23.check("RANDOMKEY", "x")


def test_randomkey_skips_expired(pair) -> None:
    """Expired keys are never returned, even when nearly all are expired
    (whether the active cycle removed them yet or not)."""
    pair.v.pipeline([("SET", f"dead{i}", "v", "PX", "1") for i in range(500)])
    pair.t.pipeline([("SET", f"dead{i}", "v", "PX", "1") for i in range(500)])
    pair.check("SET", "live", "v")
    time.sleep(0.05)
    for _ in range(5):
        pair.check("RANDOMKEY")


# -- SCAN ------------------------------------------------------------------------------


def _scan_all(w: Wire, *opts: str, between=None) -> tuple[list[bytes], int]:
    """Every key an iteration returns, and the number of calls it took."""
    cursor = b"0"
    seen: list[bytes] = []
    calls = 0
    while True:
        r = w.call("SCAN", cursor, *opts)
        calls += 1
        lines = r.split(b"\r\n")
        assert lines[0] == b"*2", r
        cursor = lines[2]
        seen.extend(parse_array(b"\r\n".join(lines[3:])))
        if cursor == b"0":
            return seen, calls
        if between is not None:
            between(calls)


def test_scan(pair23) -> None:
    for i in range(120):
        pair23.check("SET", f"key:{i}", "v")
    pair23.check("HSET", "h1", "f", "v")
    pair23.check("ZADD", "z1", "1", "m")
    pair23.check("SET", "", "empty")
    for opts in ((), ("COUNT", "7"), ("COUNT", "1"), ("MATCH", "key:1*"), ("TYPE", "hash"), ("TYPE", "ZSET"),
                 ("TYPE", "string"), ("MATCH", "*1", "COUNT", "1000"), ("TYPE", "list"), ("TYPE", "set"),
                 ("TYPE", "stream"), ("MATCH", "*"), ("MATCH", ""), ("MATCH", "*", "TYPE", "string", "COUNT", "3"),
                 ("COUNT", "3", "COUNT", "50"), ("MATCH", "nomatch", "MATCH", "key:2*")):
        v, _ = _scan_all(pair23.v, *opts)
        t, _ = _scan_all(pair23.t, *opts)
        assert set(v) == set(t), opts
        assert len(t) == len(set(t)), opts  # ours never repeats a key


def test_scan_small_and_empty(pair23) -> None:
    run(pair23, """
        SCAN 0
        SCAN 0 COUNT 100 MATCH * TYPE string
        SET a 1
        SCAN 0
        SCAN 0 MATCH b*
        SCAN 0 TYPE hash
    """)


def test_scan_guarantee_under_writes(pair) -> None:
    """Keys present for the whole iteration are all returned, however the
    keyspace changes meanwhile; checked on both servers (cursors differ)."""
    for w in (pair.v, pair.t):
        w.pipeline([("SET", f"k{i}", "v") for i in range(3000)])
        doomed = [f"k{i}" for i in random.Random(5).sample(range(3000), 1000)]
        deleted: set[bytes] = set()

        def between(calls: int, w: Wire = w, doomed: list[str] = doomed, deleted: set[bytes] = deleted) -> None:
            for i in range(5):
                if doomed:
                    k = doomed.pop()
                    w.call("DEL", k)
                    deleted.add(k.encode())
                w.call("SET", f"new{calls}-{i}", "v")

        seen, _ = _scan_all(w, "COUNT", "20", between=between)
        survivors = {f"k{i}".encode() for i in range(3000)} - deleted
        assert survivors <= set(seen)
        w.call("FLUSHALL")


def test_scan_survivors_exact(pair) -> None:
    """The same property, stated directly on trafikey: no key that stayed
    is missed, and no key is returned twice."""
    t = pair.t
    for i in range(2000):
        t.call("SET", f"k{i}", "v")
    deleted: set[bytes] = set()
    step = [0]

    def between(calls: int) -> None:
        for _ in range(4):
            k = f"k{(step[0] * 7919) % 2000}".encode()
            step[0] += 1
            if t.call("DEL", k) == b":1\r\n":
                deleted.add(k)
            t.call("SET", f"n{step[0]}", "v")

    seen, calls = _scan_all(t, "COUNT", "25", between=between)
    assert calls > 10
    assert {f"k{i}".encode() for i in range(2000)} - deleted <= set(seen)
    assert len(seen) == len(set(seen))


def test_scan_concurrent_iterations(pair) -> None:
    """Two iterations interleaved, the second started mid-way through the
    first, both complete."""
    t = pair.t
    for i in range(500):
        t.call("SET", f"k{i}", "v")
    other = Wire(pair.t.port)
    c1, c2 = b"0", None
    s1: set[bytes] = set()
    s2: set[bytes] = set()
    while c1 != b"0" or c2 is None or c2 != b"0":
        if c1 != b"0" or not s1:
            lines = t.call("SCAN", c1, "COUNT", "30").split(b"\r\n")
            c1 = lines[2]
            s1.update(parse_array(b"\r\n".join(lines[3:])))
        if len(s1) > 100 and (c2 is None or c2 != b"0"):
            lines = other.call("SCAN", c2 or b"0", "COUNT", "17").split(b"\r\n")
            c2 = lines[2]
            s2.update(parse_array(b"\r\n".join(lines[3:])))
        if c1 == b"0" and c2 == b"0":
            break
    other.close()
    everything = {f"k{i}".encode() for i in range(500)}
    assert s1 == everything and s2 == everything


def _scan_from(w: Wire, cursor: bytes, *opts: str) -> list[bytes]:
    seen: list[bytes] = []
    while True:
        lines = w.call("SCAN", cursor, *opts).split(b"\r\n")
        cursor = lines[2]
        seen.extend(parse_array(b"\r\n".join(lines[3:])))
        if cursor == b"0":
            return seen


def test_scan_unknown_cursor_starts_over(pair) -> None:
    """A cursor trafikey never gave (or gave for another database) still
    leads to a complete iteration: it starts over."""
    t = pair.t
    t.pipeline([("SET", f"k{i}", "v") for i in range(300)])
    everything = {f"k{i}".encode() for i in range(300)}
    for cur in (b"123456789012", b"18446744073709551615", b"4294967296", b"1"):
        assert set(_scan_from(t, cur, "COUNT", "40")) == everything, cur
    # A cursor from database 0, continued in database 1.
    lines = t.call("SCAN", "0", "COUNT", "40").split(b"\r\n")
    t.call("SELECT", "1")
    t.pipeline([("SET", f"other{i}", "v") for i in range(100)])
    assert set(_scan_from(t, lines[2], "COUNT", "40")) == {f"other{i}".encode() for i in range(100)}
    t.call("SELECT", "0")


def test_scan_resumed_twice(pair) -> None:
    """Repeating a call with the same cursor (a client retrying) gets the
    same page, and the iteration still completes with every key. (Not for
    cursor 0, which always begins a new iteration, nor for the call that
    ended one: its snapshot is gone, so a retry would start over.)"""
    t = pair.t
    t.pipeline([("SET", f"k{i}", "v") for i in range(200)])
    cursor, seen = b"0", set()
    while True:
        first = t.call("SCAN", cursor, "COUNT", "30")
        if cursor != b"0" and first.split(b"\r\n")[2] != b"0":
            assert t.call("SCAN", cursor, "COUNT", "30") == first
        lines = first.split(b"\r\n")
        cursor = lines[2]
        seen.update(parse_array(b"\r\n".join(lines[3:])))
        if cursor == b"0":
            break
    assert seen == {f"k{i}".encode() for i in range(200)}


def test_scan_skips_expired(pair) -> None:
    """A full iteration returns only live keys and removes the expired ones
    it meets (so DBSIZE agrees afterwards, whatever the active cycle did)."""
    for w in (pair.v, pair.t):
        w.pipeline([("SET", f"e{i}", "v", "PX", "1") for i in range(50)])
        w.pipeline([("SET", f"l{i}", "v") for i in range(50)])
    time.sleep(0.05)
    v, _ = _scan_all(pair.v, "COUNT", "7")
    t, _ = _scan_all(pair.t, "COUNT", "7")
    assert set(v) == set(t) == {f"l{i}".encode() for i in range(50)}
    pair.check("DBSIZE")


def test_scan_cursor_forms(pair23) -> None:
    """Cursor parsing is Valkey's string2ull; the replies to cursors that
    are not 0 depend on each server's layout, so only errors are compared."""
    for i in range(30):
        pair23.check("SET", f"k{i}", "v")
    for cur in ("x", "-1", "1.5", "", " ", "+", "18446744073709551616", "0x10", "1 ", "-1 ", "-18446744073709551616"):
        pair23.check("SCAN", cur)
    for cur in (" 0", "+0", "00", "-0", "0\x00junk"):
        v, t = pair23.both("SCAN", cur, "COUNT", "1000")
        assert set(parse_array(v.split(b"\r\n", 3)[3])) == set(parse_array(t.split(b"\r\n", 3)[3])), cur
    for cur in ("18446744073709551615", " -5", "9223372036854775808", "123", "\t7"):
        v, t = pair23.both("SCAN", cur)
        assert v[:4] == t[:4] == b"*2\r\n", cur


def test_scan_errors(pair23) -> None:
    run(pair23, """
        SCAN x
        SCAN -1
        SCAN 0 COUNT 0
        SCAN 0 COUNT -1
        SCAN 0 COUNT x
        SCAN 0 COUNT 9223372036854775808
        SCAN 0 COUNT
        SCAN 0 TYPE foo
        SCAN 0 TYPE "str\\x00ing"
        SCAN 0 TYPE "bad\\x00ing"
        SCAN 0 TYPE
        SCAN 0 MATCH
        SCAN 0 NOVALUES
        SCAN 0 NOSCORES
        SCAN 0 bogus 1
        SCAN 0 COUNT 0 TYPE foo
        SCAN 0 TYPE foo COUNT 0
        SCAN x COUNT 0
        SCAN
    """)


def test_scan_many_keys_no_duplicates(pair) -> None:
    """A quiet keyspace is returned exactly once over."""
    t = pair.t
    t.pipeline([("SET", f"key{i}", "v") for i in range(20000)])
    seen, _ = _scan_all(t, "COUNT", "500")
    assert len(seen) == 20000 and len(set(seen)) == 20000


# -- OBJECT ------------------------------------------------------------------------------


def test_object(pair23) -> None:
    run(pair23, """
        OBJECT HELP
        OBJECT help
        OBJECT HELP extra
        OBJECT ENCODING missing
        OBJECT REFCOUNT missing
        OBJECT IDLETIME missing
        OBJECT FREQ missing
        OBJECT bogus
        OBJECT bogus k
        OBJECT
        OBJECT ENCODING
        OBJECT ENCODING a b
        SET i 12345
        OBJECT ENCODING i
        OBJECT REFCOUNT i
        SET e abc
        OBJECT ENCODING e
        SET e 12345678901234567890123456789012345678901234
        OBJECT ENCODING e
        SET r 123456789012345678901234567890123456789012345
        OBJECT ENCODING r
        OBJECT REFCOUNT r
        OBJECT FREQ r
        HSET h f v
        OBJECT ENCODING h
        OBJECT REFCOUNT h
        OBJECT FREQ h
        ZADD z 1 m
        OBJECT ENCODING z
    """)
    # The LRU clock ticks in whole seconds on both servers, each on its own
    # schedule: a key just written reads 0, or 1 when a tick fell between.
    for key in ("r", "z"):
        v, t = pair23.both("OBJECT", "IDLETIME", key)
        assert v in (b":0\r\n", b":1\r\n") and t in (b":0\r\n", b":1\r\n"), (v, t)
    long = "x" * 100
    pair23.check("HSET", "hb", "f", long)
    pair23.check("OBJECT", "ENCODING", "hb")
    pair23.check("ZADD", "zb", "1", long)
    pair23.check("OBJECT", "ENCODING", "zb")


def test_object_under_lfu(pair) -> None:
    """Under an LFU policy IDLETIME is refused and FREQ answers. Valkey's
    counter moves with every access, probabilistically; a key only just
    written, and never read, reads 5 on both."""
    pair.check("CONFIG", "SET", "maxmemory-policy", "allkeys-lfu")
    try:
        pair.check("SET", "k", "v")
        pair.check("OBJECT", "IDLETIME", "k")
        pair.check("OBJECT", "FREQ", "k")
        pair.check("OBJECT", "FREQ", "missing")
    finally:
        pair.check("CONFIG", "SET", "maxmemory-policy", "noeviction")


def test_wrong_arity(pair23) -> None:
    run(pair23, """
        EXPIRE k
        PEXPIRE k
        EXPIREAT k
        PEXPIREAT
        TTL
        PTTL a b
        EXPIRETIME
        PEXPIRETIME a b
        PERSIST
        RENAME a
        RENAMENX a b c
        COPY a
        MOVE a
        MOVE a 1 2
        KEYS
        KEYS a b
        SCAN
        RANDOMKEY a
    """)


# -- random sequences ---------------------------------------------------------------------

KEYS = ["a", "b", "n", "k" * 31, "k" * 32, "k" * 107, "k" * 108, "k" * 110]
VALUES = (["", "0", "1", "-1", "7", "42", "3.5", "-0", "1e3", "0x10", "9223372036854775807", "abc",
           " 1", "01", "inf"] + ["v" * n for n in (44, 45, 70, 71, 72, 79, 80, 81, 100, 103, 104, 105, 112, 113)])
ABS_MS = ["4000000000000", "4000000000500", "4000000001000", "1"]
_key = st.sampled_from(KEYS)
_val = st.sampled_from(VALUES)


def _cmd() -> st.SearchStrategy[tuple[str, ...]]:
    k, v = _key, _val
    small = st.sampled_from(["-3", "-1", "0", "1", "2", "5", "100", "x"])
    rel = st.sampled_from(["100", "1000", "100000"])
    set_opts = st.lists(st.sampled_from([("NX",), ("XX",), ("GET",), ("KEEPTTL",), ("EX", "100"),
                                         ("PXAT", ABS_MS[0]), ("PXAT", "1"), ("IFEQ", "1"), ("IFEQ", "abc")]),
                        max_size=3).map(lambda xs: tuple(w for x in xs for w in x))
    return st.one_of(
        st.tuples(st.just("SET"), k, v).flatmap(lambda t: set_opts.map(lambda o: t + o)),
        st.tuples(st.sampled_from(["GET", "STRLEN", "TYPE", "EXISTS", "GETDEL", "PERSIST", "INCR", "DECR",
                                   "OBJECT ENCODING", "TTL", "PTTL", "EXPIRETIME", "PEXPIRETIME", "DEL",
                                   "UNLINK", "TOUCH"]), k),
        st.tuples(st.sampled_from(["APPEND", "SETNX", "GETSET", "INCRBYFLOAT"]), k, v),
        st.tuples(st.sampled_from(["INCRBY", "DECRBY"]), k, small),
        st.tuples(st.just("INCRBYFLOAT"), k, st.sampled_from(["0.1", "-2.5", "1e20", "3", "1e60", "x"])),
        st.tuples(st.sampled_from(["SETEX", "PSETEX"]), k, rel, v),
        st.tuples(st.just("GETRANGE"), k, small, small),
        st.tuples(st.just("SETRANGE"), k, st.sampled_from(["0", "1", "3", "40", "100"]), v),
        st.tuples(st.just("GETEX"), k).flatmap(lambda t: st.sampled_from(
            [(), ("PERSIST",), ("EX", "100"), ("PXAT", ABS_MS[1]), ("PXAT", "1")]).map(lambda o: t + o)),
        st.tuples(st.sampled_from(["MSET", "MSETNX"]), k, v, k, v),
        st.tuples(st.just("MGET"), k, k, k),
        st.tuples(st.sampled_from(["RENAME", "RENAMENX"]), k, k),
        st.tuples(st.just("COPY"), k, k).flatmap(lambda t: st.sampled_from(
            [(), ("REPLACE",), ("DB", "1"), ("DB", "1", "REPLACE")]).map(lambda o: t + o)),
        st.tuples(st.just("MOVE"), k, st.sampled_from(["0", "1"])),
        st.tuples(st.sampled_from(["EXPIRE", "PEXPIRE"]), k, rel,).flatmap(
            lambda t: st.sampled_from([(), ("NX",), ("XX",)]).map(lambda o: t + o)),
        st.tuples(st.sampled_from(["PEXPIREAT"]), k, st.sampled_from(ABS_MS)).flatmap(
            lambda t: st.sampled_from([(), ("NX",), ("XX",), ("GT",), ("LT",)]).map(lambda o: t + o)),
        st.tuples(st.just("EXPIRE"), k, st.sampled_from(["-1", "0"])),
        st.tuples(st.just("HSET"), k, st.sampled_from(["f", "g"]), v),
        st.tuples(st.just("ZADD"), k, st.sampled_from(["1", "2"]), st.sampled_from(["m", "n"])),
        st.tuples(st.sampled_from(["SELECT"]), st.sampled_from(["0", "1"])),
        st.tuples(st.sampled_from(["KEYS"]), st.sampled_from(["*", "k*", "?", "[ab]", "*8*"])),
        st.just(("DBSIZE",)),
        st.just(("RANDOMKEY",)),
        st.just(("SCAN",)),
    )


_TIMING = {"TTL": 1, "PTTL": 1500, "EXPIRETIME": 2, "PEXPIRETIME": 1500}


def assert_alike(pair, cmd: tuple[str, ...]) -> None:
    name = cmd[0]
    if name == "OBJECT ENCODING":
        cmd = ("OBJECT", "ENCODING", cmd[1])
    if name == "SCAN":
        v, _ = _scan_all(pair.v, "COUNT", "3")
        t, _ = _scan_all(pair.t, "COUNT", "3")
        assert set(v) == set(t)
        return
    if name == "OBJECT ENCODING":
        assert_encodings_agree(pair, cmd[2])
        return
    v, t = pair.both(*cmd)
    if name in _TIMING and v[:1] == b":" and int(v[1:]) >= 0:
        # Set from a relative time: the servers' clocks differ by a few ms.
        assert t[:1] == b":" and abs(int(v[1:]) - int(t[1:])) <= _TIMING[name], (cmd, v, t)
    elif name == "KEYS":
        assert set(parse_array(v)) == set(parse_array(t)), cmd
    elif name == "RANDOMKEY":
        # Random picks differ; both must be null together, else a live key.
        assert (v == b"$-1\r\n") == (t == b"$-1\r\n"), (v, t)
        if t != b"$-1\r\n":
            assert pair.t.call("EXISTS", t.split(b"\r\n")[1]) == b":1\r\n"
    else:
        assert t == v, f"{cmd!r}\n valkey:   {v!r}\n trafikey: {t!r}"


@settings(max_examples=int(os.environ.get("SEQ_EXAMPLES", "300")), deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(_cmd(), min_size=1, max_size=25))
def test_random_command_sequences(pair, cmds: list[tuple[str, ...]]) -> None:
    """Random string and key commands over a few keys (some long enough to
    move Valkey's embstr limits), every reply compared; OBJECT ENCODING is
    in the mix, so the encoding model is exercised along every path."""
    pair.v.call("FLUSHALL")
    pair.t.call("FLUSHALL")
    pair.v.call("SELECT", "0")
    pair.t.call("SELECT", "0")
    for cmd in cmds:
        assert_alike(pair, cmd)

"""Generic key commands against Valkey, byte for byte, in RESP2 and RESP3.

Replies whose order is Valkey's hash-table order (KEYS, SCAN) or random
(RANDOMKEY) are compared as sets or by their properties. TTLs set from a
relative time are compared within a tolerance: the two servers read their
own clocks a few milliseconds apart.
"""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from trafikey_server.glob import match


def words(line: str) -> list[bytes]:
    r"""Split like a shell; ``\xNN`` escapes give raw bytes."""
    return [w.encode().decode("unicode_escape").encode("latin-1") for w in shlex.split(line)]


def run(pair, script: str) -> None:
    for line in script.strip().splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            pair.check(*words(line))


def parse_array(reply: bytes) -> list[bytes]:
    """The bulk strings of a flat array reply."""
    lines = reply.split(b"\r\n")
    assert lines[0][:1] == b"*"
    return [lines[i] for i in range(2, len(lines), 2)][: int(lines[0][1:])]


def ttl_close(pair, key: str, cmd: str = "PTTL", slack: int = 1500) -> None:
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
        TOUCH a missing h
        TYPE a
        TYPE h
        TYPE z
        TYPE missing
        DEL a missing a
        UNLINK b c h
        EXISTS a b c h z
        DEL
    """)


def test_keys_pattern(pair23) -> None:
    for k in ("hello", "hallo", "hxllo", "hllo", "heeeello", "h[a]llo", "a*b", "x\\y", "", "one", "two"):
        pair23.check("SET", k, "v")
    for pat in ("*", "h?llo", "h*llo", "h[ae]llo", "h[^e]llo", "h[a-b]llo", "h[b-a]llo", "*o", "a\\*b",
                "x\\\\y", "[", "h[", "h[a", "*[", "**", "?", "", "h[a-]llo", "\\", "o*e", "[^]"):
        v, t = pair23.both("KEYS", pat)
        assert sorted(parse_array(v)) == sorted(parse_array(t)), pat


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.text(alphabet="ab*?[]^-\\", max_size=8), st.lists(st.text(alphabet="ab-]\\^", max_size=5), max_size=5))
def test_keys_glob_random(pair, pattern: str, keys: list[str]) -> None:
    """Random patterns over a small alphabet full of glob syntax."""
    pair.v.call("FLUSHALL")
    pair.t.call("FLUSHALL")
    for k in keys:
        pair.check("SET", k, "v")
    v, t = pair.both("KEYS", pattern)
    assert sorted(parse_array(v)) == sorted(parse_array(t)), (pattern, keys)


def test_glob_unit() -> None:
    # Checked against Valkey by the differential tests above; these pin
    # the quirks down without a server.
    assert match(b"h[a", b"ha")
    assert not match(b"[", b"[")
    assert match(b"a\\", b"a\\")
    assert match(b"*", b"")  # a lone star is "everything" in every caller
    assert not match(b"**", b"")
    assert not match(b"?", b"")
    assert match(b"", b"")


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
        EXPIRE k 10 NX GT
        EXPIRE k 10 GT LT
        EXPIRE k 10 foo
        EXPIRE k x
        EXPIRE k x foo
        EXPIRE k 9223372036854775807
        EXPIRE k -9223372036854775808
        PEXPIRE k 9223372036854775807
        EXPIREAT k 9223372036854775807
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
    """)


def test_ttl_tolerance(pair) -> None:
    pair.check("SET", "k", "v")
    pair.check("EXPIRE", "k", "100")
    ttl_close(pair, "k")
    ttl_close(pair, "k", "TTL", 1)
    pair.check("PEXPIRE", "k", "5000")
    ttl_close(pair, "k")


def test_rename(pair23) -> None:
    run(pair23, """
        RENAME missing x
        RENAMENX missing x
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
        PEXPIREAT c 4000000000000
        RENAME c d
        PEXPIRETIME d
    """)


def test_copy(pair23) -> None:
    run(pair23, """
        COPY missing x
        SET a 1
        COPY a a
        COPY a b
        GET b
        COPY a b
        SET a 2
        COPY a b REPLACE
        GET b
        COPY a b DB
        COPY a b DB x
        COPY a b DB 99
        COPY a a DB 99
        COPY a b foo
        COPY a a DB 0
        COPY a a DB 1
        SELECT 1
        GET a
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
        PEXPIREAT a 4000000000000
        COPY a a4
        PEXPIRETIME a4
    """)


def test_move(pair23) -> None:
    run(pair23, """
        MOVE missing 1
        SET a 1
        MOVE a 0
        MOVE a x
        MOVE a 99
        MOVE a -1
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
        SELECT 1
        FLUSHDB
    """)


def test_randomkey(pair23) -> None:
    pair23.check("RANDOMKEY")
    keys = {b"a", b"b", b"c"}
    for k in keys:
        pair23.check("SET", k, "v")
    for _ in range(10):
        v, t = pair23.both("RANDOMKEY")
        assert v.split(b"\r\n")[1] in keys
        assert t.split(b"\r\n")[1] in keys


def _scan_all(w, *opts: str) -> list[bytes]:
    cursor = b"0"
    seen: list[bytes] = []
    while True:
        r = w.call("SCAN", cursor, *opts)
        lines = r.split(b"\r\n")
        cursor = lines[2]
        seen.extend(parse_array(b"\r\n".join(lines[3:])))
        if cursor == b"0":
            return seen


def test_scan(pair23) -> None:
    for i in range(120):
        pair23.check("SET", f"key:{i}", "v")
    pair23.check("HSET", "h1", "f", "v")
    pair23.check("ZADD", "z1", "1", "m")
    for opts in ((), ("COUNT", "7"), ("MATCH", "key:1*"), ("TYPE", "hash"), ("TYPE", "ZSET"),
                 ("MATCH", "*1", "COUNT", "1000"), ("TYPE", "list")):
        v = _scan_all(pair23.v, *opts)
        t = _scan_all(pair23.t, *opts)
        assert set(v) == set(t), opts


def test_scan_keeps_survivors(pair) -> None:
    """Keys present for the whole scan are all returned despite writes."""
    for i in range(100):
        pair.t.call("SET", f"k{i}", "v")
    cursor = b"0"
    seen: set[bytes] = set()
    step = 0
    while True:
        lines = pair.t.call("SCAN", cursor, "COUNT", "5").split(b"\r\n")
        cursor = lines[2]
        seen.update(parse_array(b"\r\n".join(lines[3:])))
        pair.t.call("DEL", f"k{50 + step}")
        pair.t.call("SET", f"new{step}", "v")
        step += 1
        if cursor == b"0":
            break
    survivors = {f"k{i}".encode() for i in range(100) if not 50 <= i < 50 + step}
    assert survivors <= seen


def test_scan_errors(pair23) -> None:
    run(pair23, """
        SCAN x
        SCAN -1
        SCAN 0 COUNT 0
        SCAN 0 COUNT x
        SCAN 0 COUNT
        SCAN 0 TYPE foo
        SCAN 0 MATCH
        SCAN 0 NOVALUES
        SCAN 0 NOSCORES
        SCAN 0 bogus 1
    """)


def test_object(pair23) -> None:
    run(pair23, """
        OBJECT HELP
        OBJECT ENCODING missing
        OBJECT REFCOUNT missing
        OBJECT IDLETIME missing
        OBJECT FREQ missing
        OBJECT bogus
        OBJECT
        SET i 12345
        OBJECT ENCODING i
        SET i -9223372036854775808
        OBJECT ENCODING i
        SET i 01
        OBJECT ENCODING i
        SET e abc
        OBJECT ENCODING e
        SET e 12345678901234567890123456789012345678901234
        OBJECT ENCODING e
        SET r 123456789012345678901234567890123456789012345
        OBJECT ENCODING r
        OBJECT REFCOUNT r
        OBJECT IDLETIME r
        OBJECT FREQ r
        HSET h f v
        OBJECT ENCODING h
        ZADD z 1 m
        OBJECT ENCODING z
    """)
    # Valkey 9 embeds a value with its key while both fit one allocation.
    for key in ("k", "k" * 20, "k" * 31, "k" * 33, "k" * 40, "k" * 60):
        for ttl in (False, True):
            room = 112 - (len(key) - 1 if len(key) < 32 else len(key) + 1)
            for n in {max(room - 1, 0), max(room, 0), room + 1}:
                extra = ("EX", "100") if ttl else ()
                pair23.check("DEL", key)  # a fresh key: see _embstr_room
                pair23.check("SET", key, "x" * n, *extra)
                pair23.check("OBJECT", "ENCODING", key)
    long = "x" * 100
    pair23.check("HSET", "hb", "f", long)
    pair23.check("OBJECT", "ENCODING", "hb")
    pair23.check("ZADD", "zb", "1", long)
    pair23.check("OBJECT", "ENCODING", "zb")


def test_wrong_arity(pair23) -> None:
    run(pair23, """
        EXPIRE k
        TTL
        RENAME a
        COPY a
        MOVE a
        TYPE
        KEYS
        SCAN
    """)

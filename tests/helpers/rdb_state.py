"""A varied keyspace written through commands (``populate``), every key of
it read back (``state``), and two such readings compared
(``assert_same``): for tests that move a keyspace through files and
restarts."""

from __future__ import annotations

from typing import Any

import redis

# -- a varied keyspace, written through commands ------------------------------------------


def populate(r: redis.Redis) -> None:
    """Every supported type and encoding, with and without expiry, in two databases."""
    p = r.pipeline(transaction=False)
    strings = {
        b"s": b"hello", b"empty": b"", b"bin": b"\x00\xff\r\n\x01", b"int": b"12345", b"neg": b"-5",
        b"i8": b"-128", b"i16": b"30000", b"i32": b"-2000000000", b"i33": b"2147483648",
        b"i11": b"12345678901", b"i20": b"-9223372036854775808", b"nines": b"9" * 20,
        b"lead0": b"00012", b"plus": b"+5", b"v44": b"x" * 44, b"v100": b"y" * 100,
        b"v112": b"z" * 112, b"v200": b"w" * 200, b"lz": b"abc" * 1000,
        b"k" * 40: b"v" * 70, b"k" * 110: b"short",
    }
    for k, v in strings.items():
        p.set(k, v)
    p.append(b"appended", b"grown")
    p.append(b"appended", b" in place")
    p.set(b"sx", b"expiring", px=500_000)
    p.set(b"sx100", b"q" * 100, px=500_000)
    p.set(b"L" * 110, b"long key, ttl", px=500_000)
    p.set(b"L" * 108, b"v", px=500_000)
    p.set(b"ix", b"777", px=500_000)
    p.hset(b"hsmall", mapping={b"a": b"1", b"b": b"-20000", b"c": b"x"})
    p.hset(b"hint", mapping={b"f%d" % i: v for i, v in enumerate(
        [b"5", b"-5", b"1000", b"-4000", b"30000", b"-30000", b"8000000", b"-8000000", b"2000000000",
         b"-2000000000", b"%d" % 2**40, b"%d" % -(2**62), b"9223372036854775807", b"007"])})
    p.hset(b"hbigcount", mapping={b"f%d" % i: b"%d" % i for i in range(600)})
    p.hset(b"hbigval", mapping={b"a": b"1", b"b": b"v" * 100})
    p.hset(b"hbigfield", mapping={b"f" * 65: b"1"})
    p.hset(b"hx", mapping={b"a": b"1"})
    p.pexpire(b"hx", 500_000)
    p.zadd(b"zsmall", {b"a": 1.5, b"b": -2, b"c": 3, b"d": float("inf"), b"e": float("-inf"),
                       b"f": 0.1, b"g": 1e300, b"h": 5, b"i": -7, b"j": 2.0**53, b"k": 5e-324})
    p.zadd(b"zbig", {b"m%d" % i: i / 3 for i in range(200)})
    p.zadd(b"zlongmember", {b"x" * 100: 1, b"y": 2})
    p.zadd(b"zx", {b"a": 1})
    p.pexpire(b"zx", 500_000)
    p.rpush(b"lsmall", b"a", b"12", b"-7", b"%d" % 2**40, b"", b"x" * 100)
    p.rpush(b"lbig", *[b"e%d" % i for i in range(1000)])
    p.rpush(b"lhuge", b"a", b"h" * 10000, b"b")
    p.rpush(b"lx", b"a")
    p.pexpire(b"lx", 500_000)
    p.execute()
    p = r.pipeline(transaction=False)
    p.execute_command("SELECT", 2)
    p.set(b"db2-string", b"in two")
    p.hset(b"db2-hash", mapping={b"f": b"v"})
    p.zadd(b"db2-zset", {b"m": 1})
    p.pexpire(b"db2-zset", 400_000)
    p.execute_command("SELECT", 0)
    p.execute()


def state(port: int, dbs: tuple[int, ...] = (0, 2), skip: tuple[bytes, ...] = ()) -> dict[Any, Any]:
    """What a client can read of every key: type, value, TTL, encoding."""
    out: dict[Any, Any] = {}
    for n in dbs:
        r = redis.Redis(port=port, db=n)
        for k in r.keys(b"*"):
            if k in skip:
                continue
            t = r.type(k)
            if t == b"string":
                v: Any = r.get(k)
            elif t == b"hash":
                v = sorted(r.hgetall(k).items())
            elif t == b"zset":
                v = r.zrange(k, 0, -1, withscores=True)
            elif t == b"list":
                v = r.lrange(k, 0, -1)
            else:
                v = None
            out[(n, k)] = (t, v, r.object("encoding", k), r.pttl(k))
        r.close()
    return out


def assert_same(a: dict[Any, Any], b: dict[Any, Any], encodings: bool = True) -> None:
    """Equal keyspaces; TTLs within a generous tolerance (both servers count
    down). Encodings are compared between two servers that loaded the same
    file; across a reload they may change (an appended string comes back
    embstr, as in Valkey), so round trips leave them out."""
    assert sorted(a) == sorted(b)
    for k in a:
        (ta, va, ea, pa), (tb, vb, eb, pb) = a[k], b[k]
        assert (ta, va) == (tb, vb), k
        if encodings:
            assert ea == eb, (k, ea, eb)
        assert (pa == -1) == (pb == -1), (k, pa, pb)
        if pa != -1:
            assert pa > 0 and pb > 0 and abs(pa - pb) < 30_000, (k, pa, pb)

"""Bitmap commands against Valkey 9.1.2, byte for byte in RESP2 and RESP3:
every reply, and after each step the whole keyspace with each string's
OBJECT ENCODING (a bit write makes a value raw, even one that changes
nothing). Every refusal gets Valkey's exact text and leaves the keyspace
as it was.
"""

from __future__ import annotations

import random

from helpers.resp_wire import Wire

BIG = "x" * 200


def state(w: Wire) -> list[tuple[bytes, ...]]:
    """Each key with its type, value, encoding and whether it has a TTL
    (raw replies: both servers speak the same protocol version)."""
    out = []
    keys = w.call("KEYS", "*")
    for k in sorted(keys.split(b"\r\n")[2::2]):
        t = w.call("TYPE", k)
        v = w.call("GET", k) if t.endswith(b"string\r\n") else b""
        pttl = w.call("PTTL", k)  # -1 (none) or -2, else a TTL: its digits tick on
        out.append((k, t, w.call("OBJECT", "ENCODING", k), v, pttl if pttl.startswith(b":-") else b"ttl"))
    return out


_READS = {"BITCOUNT", "BITPOS", "GETBIT", "GET", "EXISTS", "TYPE", "STRLEN"}


def assert_steps(pair, steps: list[tuple]) -> None:  # type: ignore[no-untyped-def]
    """Each step on both servers; after a write or a refusal, the keyspaces
    compared (and a refusal must have left ours as it was)."""
    before = state(pair.t)
    for step in steps:
        v, t = pair.both(*step)
        assert t == v, f"{step!r}\n valkey:   {v!r}\n trafikey: {t!r}"
        if step[0].upper() in _READS and not v.startswith(b"-"):
            continue
        after = state(pair.t)
        assert after == state(pair.v), step
        if v.startswith(b"-"):
            assert after == before, step
        before = after


SETUP = [
    ("SET", "int", "12345"), ("SET", "emb", "foobar"), ("SET", "raw", BIG), ("RPUSH", "list", "a"),
    ("SET", "ttl", "ab", "EX", "1000"), ("SET", "neg", "-7"), ("SET", "empty", ""),
]


def test_setbit_getbit(pair23) -> None:  # type: ignore[no-untyped-def]
    assert_steps(pair23, [
        *SETUP,
        ("SETBIT", "k", "7", "1"), ("SETBIT", "k", "7", "1"), ("SETBIT", "k", "7", "0"), ("GETBIT", "k", "7"),
        ("SETBIT", "k", "100", "1"), ("GETBIT", "k", "100"), ("GETBIT", "k", "101"), ("GETBIT", "k", "100000"),
        ("GETBIT", "nokey", "3"), ("SETBIT", "int", "2", "1"), ("SETBIT", "int2", "0", "0"),
        ("SET", "int2", "1"), ("SETBIT", "int2", "2", "1"), ("GETBIT", "int", "3"), ("GETBIT", "neg", "2"),
        ("SETBIT", "emb", "1", "1"), ("SETBIT", "raw", "0", "1"), ("SETBIT", "ttl", "30", "1"),
        ("SETBIT", "empty", "0", "0"), ("GETBIT", "empty", "0"),
        # refusals
        ("SETBIT", "k", "-1", "1"), ("SETBIT", "k", "4294967296", "1"), ("SETBIT", "k", "x", "1"),
        ("SETBIT", "k", " 1", "1"), ("SETBIT", "k", "1", "2"), ("SETBIT", "k", "1", "-1"),
        ("SETBIT", "k", "1", "x"), ("SETBIT", "k", "x", "x"), ("SETBIT", "list", "1", "1"),
        ("SETBIT", "list", "-1", "1"), ("GETBIT", "list", "1"), ("GETBIT", "list", "-1"),
        ("GETBIT", "k", "4294967296"), ("GETBIT", "k", "01"), ("SETBIT", "k", "1"), ("GETBIT", "k"),
        ("SETBIT", "k", "#1", "1"), ("setbit", "k", "1", "1"),
    ])


def test_bitcount(pair23) -> None:  # type: ignore[no-untyped-def]
    steps: list[tuple] = [*SETUP, ("SET", "s", "\xff\xf0\x00\x0f\xaa")]
    for key in ("s", "int", "raw", "nokey", "empty", "emb"):
        steps.append(("BITCOUNT", key))
        for start, end in ((0, -1), (1, 2), (-2, -1), (-1, -2), (5, 1), (-100, 100), (3, 3), (-3, 0),
                           (0, 0), (100, 200)):
            steps.append(("BITCOUNT", key, start))
            for unit in ("BYTE", "bit", "BiT"):
                steps.append(("BITCOUNT", key, start, end, unit))
            steps.append(("BITCOUNT", key, start, end))
        for start, end in ((5, 30), (7, 8), (1, 6), (-5, -1), (-1, -1), (13, 13), (8, 15), (9, 14)):
            steps.append(("BITCOUNT", key, start, end, "BIT"))
    steps += [
        ("BITCOUNT", "s", "0", "1", "BITS"), ("BITCOUNT", "s", "x", "1", "BITS"), ("BITCOUNT", "s", "0", "x", "BITS"),
        ("BITCOUNT", "s", "0", "x"), ("BITCOUNT", "s", "x"), ("BITCOUNT", "s", "0", "1", "bit", "extra"),
        ("BITCOUNT", "list"), ("BITCOUNT", "list", "0", "1"), ("BITCOUNT", "list", "x"),
        ("BITCOUNT", "list", "0", "1", "foo"), ("BITCOUNT", "nokey", "0", "1", "foo"),
        ("BITCOUNT", "s", "0", "1", "bit\0x"), ("BITCOUNT", "s", "9223372036854775807", "-9223372036854775808"),
        ("BITCOUNT", "s", "-9223372036854775808", "9223372036854775807", "BIT"),
        ("BITCOUNT", "s", "9223372036854775808"), ("BITCOUNT",),
    ]
    assert_steps(pair23, steps)


def test_bitpos(pair23) -> None:  # type: ignore[no-untyped-def]
    steps: list[tuple] = [
        *SETUP,
        ("SET", "s", "\x00\x00\xf0\xff\xff\x0f"), ("SET", "ones", "\xff\xff\xff"), ("SET", "zeros", "\x00\x00"),
    ]
    for key in ("s", "ones", "zeros", "int", "raw", "nokey", "empty"):
        for bit in (0, 1):
            steps.append(("BITPOS", key, bit))
            for start, end in ((0, -1), (1, 2), (-2, -1), (-1, -2), (5, 1), (-100, 100), (2, 2), (3, 4)):
                steps.append(("BITPOS", key, bit, start))
                steps.append(("BITPOS", key, bit, start, end))
                steps.append(("BITPOS", key, bit, start, end, "BYTE"))
            for start, end in ((0, -1), (5, 30), (7, 8), (1, 6), (-5, -1), (-1, -1), (16, 19), (17, 17),
                               (18, 30), (8, 23), (9, 14), (20, 46), (-200, 3)):
                steps.append(("BITPOS", key, bit, start, end, "bit"))
    steps += [
        ("BITPOS", "s", "2"), ("BITPOS", "s", "-1"), ("BITPOS", "s", "x"), ("BITPOS", "s", "1", "x"),
        ("BITPOS", "s", "1", "0", "x"), ("BITPOS", "s", "1", "0", "1", "bits"), ("BITPOS", "s", "1", "x", "1", "bits"),
        ("BITPOS", "s", "1", "0", "x", "bits"), ("BITPOS", "s", "1", "0", "1", "bit", "x"),
        ("BITPOS", "s", "2", "0", "1", "bit", "x"), ("BITPOS", "list", "1"), ("BITPOS", "list", "2"),
        ("BITPOS", "list", "1", "0", "1", "foo"), ("BITPOS", "list", "1", "0"), ("BITPOS", "s"),
    ]
    assert_steps(pair23, steps)


def test_bitop(pair23) -> None:  # type: ignore[no-untyped-def]
    assert_steps(pair23, [
        *SETUP,
        ("SET", "a", "\x0f\xf0abc"), ("SET", "b", "\xff"), ("SET", "c", "xyzxyzxyzxyzxyzxyzxyzxyzxyzxyzxyzxyzxyzxyz"),
        ("BITOP", "AND", "d", "a", "b"), ("GET", "d"), ("BITOP", "or", "d", "a", "b", "c"),
        ("BITOP", "XoR", "d", "a", "b", "c", "nokey"), ("BITOP", "AND", "d", "a", "nokey"),
        ("BITOP", "NOT", "d", "a"), ("BITOP", "NOT", "d", "int"), ("BITOP", "AND", "d", "int", "emb", "raw"),
        ("BITOP", "OR", "ttl", "a"), ("BITOP", "OR", "d", "d", "d"), ("BITOP", "AND", "d", "empty", "nokey"),
        ("EXISTS", "d"), ("BITOP", "AND", "d", "nokey"), ("BITOP", "NOT", "d", "empty"),
        ("BITOP", "OR", "list", "a"), ("TYPE", "list"), ("BITOP", "or\0x", "d", "a"),
        ("BITOP", "OR", "d", "raw", "c"), ("BITOP", "XOR", "d2", "raw", "raw"), ("STRLEN", "d2"),
        # refusals
        ("BITOP", "NAND", "d", "a"), ("BITOP", "DIFF", "d", "a", "b"), ("BITOP", "NOT", "d", "a", "b"),
        ("BITOP", "NOT", "d", "list"), ("BITOP", "AND", "d", "a", "list"), ("BITOP", "AND", "d", "nokey", "list"),
        ("BITOP", "NAND", "d", "list"), ("BITOP", "AND", "d"),
    ])


def test_bitfield(pair23) -> None:  # type: ignore[no-untyped-def]
    assert_steps(pair23, [
        *SETUP,
        ("BITFIELD", "f", "SET", "i8", "0", "100", "INCRBY", "i8", "0", "100", "GET", "u4", "0"),
        ("BITFIELD", "f", "OVERFLOW", "SAT", "INCRBY", "i8", "0", "100", "OVERFLOW", "FAIL", "INCRBY", "i8", "0",
         "1000", "overflow", "wrap", "set", "u8", "#1", "-1", "get", "u8", "#1"),
        ("BITFIELD", "f", "SET", "u8", "0", "-5", "OVERFLOW", "SAT", "SET", "u8", "0", "-5", "SET", "i64", "8", "-1",
         "GET", "i64", "8", "GET", "u63", "8", "GET", "i64", "#1", "GET", "u63", "#100"),
        ("BITFIELD", "f", "INCRBY", "i64", "3", "9223372036854775807", "INCRBY", "i64", "3", "9223372036854775807"),
        ("BITFIELD", "f", "OVERFLOW", "SAT", "INCRBY", "i64", "3", "-9223372036854775808",
         "INCRBY", "i64", "3", "-9223372036854775808", "INCRBY", "u63", "3", "-9223372036854775808"),
        ("BITFIELD", "f", "OVERFLOW", "SAT", "INCRBY", "u63", "3", "9223372036854775807", "INCRBY", "u1", "0", "5",
         "INCRBY", "i1", "0", "-5", "SET", "i1", "0", "1", "GET", "i1", "0"),
        ("BITFIELD", "f", "OVERFLOW", "FAIL", "INCRBY", "u2", "100", "3", "INCRBY", "u2", "100", "1"),
        ("BITFIELD", "f", "SET", "u8", "0", "5", "SET", "u8", "0", "5"), ("BITFIELD", "f", "SET", "u8", "0", "5"),
        ("BITFIELD", "f"), ("BITFIELD", "nokey"), ("EXISTS", "nokey"), ("BITFIELD", "nokey", "GET", "u8", "0"),
        ("BITFIELD", "m", "OVERFLOW", "FAIL", "INCRBY", "u2", "0", "100"), ("EXISTS", "m"),
        ("BITFIELD", "int", "GET", "u8", "0", "GET", "i16", "#1"), ("BITFIELD", "int", "SET", "u8", "0", "49"),
        ("BITFIELD", "emb", "GET", "u8", "8"), ("BITFIELD", "emb", "SET", "u8", "8", "111"),
        ("BITFIELD", "ttl", "INCRBY", "u8", "200", "1"), ("BITFIELD", "raw", "SET", "i3", "#3", "-2"),
        ("BITFIELD", "w", "SET", "i8", "#2305843009213693953", "1"),
        ("BITFIELD", "w", "GET", "u8", "#2305843009213693953"),
        ("BITFIELD", "w", "GET", "i8", "#0", "GET", "i8", "#-0"), ("BITFIELD_RO", "w", "GET", "i8", "0"),
        ("BITFIELD_RO", "nokey", "GET", "i8", "0"), ("BITFIELD_RO", "w"),
        ("BITFIELD", "f", "get", "i8\0xx", "0"), ("BITFIELD", "f", "GET\0x", "i8", "0"),
        ("BITFIELD", "f", "OVERFLOW", "sat\0x", "INCRBY", "i8", "0", "1000"),
        # refusals, in Valkey's order
        ("BITFIELD_RO", "w", "SET", "i8", "0", "1"), ("BITFIELD_RO", "w", "GET", "i8", "0", "INCRBY", "i8", "0", "1"),
        ("BITFIELD_RO", "w", "SET", "i65", "0", "1"), ("BITFIELD_RO", "list", "SET", "i8", "0", "1"),
        ("BITFIELD_RO", "list", "GET", "i8", "0"), ("BITFIELD", "list", "GET", "i8", "0"),
        ("BITFIELD", "list", "SET", "i8", "0", "1"), ("BITFIELD", "list"),
        ("BITFIELD", "f", "GET"), ("BITFIELD", "f", "GET", "i8"), ("BITFIELD", "f", "SET", "i8", "0"),
        ("BITFIELD", "f", "INCRBY", "i8", "0"), ("BITFIELD", "f", "OVERFLOW"), ("BITFIELD", "f", "OVERFLOW", "foo"),
        ("BITFIELD", "f", "FOO", "i8", "0"), ("BITFIELD", "f", "GET", "I8", "0"), ("BITFIELD", "f", "GET", "i0", "0"),
        ("BITFIELD", "f", "GET", "i65", "0"), ("BITFIELD", "f", "GET", "u64", "0"), ("BITFIELD", "f", "GET", "u", "0"),
        ("BITFIELD", "f", "GET", "", "0"), ("BITFIELD", "f", "GET", "x8", "0"), ("BITFIELD", "f", "GET", "i-1", "0"),
        ("BITFIELD", "f", "GET", "i8", "-1"), ("BITFIELD", "f", "GET", "i8", "#"),
        ("BITFIELD", "f", "GET", "i8", "#-1"),
        ("BITFIELD", "f", "GET", "i8", "4294967296"), ("BITFIELD", "f", "GET", "i8", "#536870912"),
        ("BITFIELD", "f", "GET", "i8", "#x"), ("BITFIELD", "f", "GET", "i8", "##1"),
        ("BITFIELD", "f", "GET", "i8", "#1152921504606846976"),
        ("BITFIELD", "f", "SET", "i8", "0", "x"), ("BITFIELD", "f", "INCRBY", "i8", "0", "9223372036854775808"),
        ("BITFIELD", "f", "SET", "i8", "0", "1", "OVERFLOW", "nope", "GET", "i99", "0"),
        ("BITFIELD", "f", "SET", "i8", "0", "1", "GET", "i99", "x"),
        ("BITFIELD", "f", "SET", "i99", "x", "x"), ("BITFIELD", "f", "SET", "i8", "x", "x"),
        ("BITFIELD", "f", "SET", "i8", "0", "1", "GET", "i8"),
    ])


def test_random_bitfield_bitcount_bitpos(pair) -> None:  # type: ignore[no-untyped-def]
    """Random bit writes and reads over a few keys, every reply compared."""
    rnd = random.Random(20261203)
    keys = ["a", "b", "c"]
    for step in range(1500):
        key = rnd.choice(keys)
        kind = rnd.random()
        width = rnd.randint(1, 64)
        sign = "i" if width == 64 or rnd.random() < 0.5 else "u"
        off = str(rnd.randint(0, 300)) if rnd.random() < 0.8 else "#%d" % rnd.randint(0, 20)
        val = str(rnd.choice([rnd.randint(-300, 300), rnd.randint(-2**63, 2**63 - 1), 2**(width - 1), -2**(width - 1)]))
        if kind < 0.35:
            cmd: list = ["BITFIELD", key]
            for _ in range(rnd.randint(1, 4)):
                r = rnd.random()
                if r < 0.2:
                    cmd += ["OVERFLOW", rnd.choice(["WRAP", "SAT", "FAIL"])]
                elif r < 0.5:
                    cmd += ["GET", f"{sign}{width}", off]
                elif r < 0.75:
                    cmd += ["SET", f"{sign}{width}", off, val]
                else:
                    cmd += ["INCRBY", f"{sign}{width}", off, val]
            cmd = cmd if rnd.random() < 0.9 else ["BITFIELD_RO", key, *cmd[2:]]
        elif kind < 0.5:
            cmd = ["SETBIT", key, rnd.randint(0, 400), rnd.randint(0, 1)]
        elif kind < 0.7:
            cmd = ["BITCOUNT", key, *rnd.choice([[], [rnd.randint(-60, 60), rnd.randint(-60, 60)],
                                                 [rnd.randint(-400, 400), rnd.randint(-400, 400), "BIT"]])]
        elif kind < 0.9:
            cmd = ["BITPOS", key, rnd.randint(0, 1), *rnd.choice(
                [[], [rnd.randint(-60, 60)], [rnd.randint(-60, 60), rnd.randint(-60, 60)],
                 [rnd.randint(-400, 400), rnd.randint(-400, 400), "BIT"]])]
        elif kind < 0.97:
            cmd = ["BITOP", rnd.choice(["AND", "OR", "XOR"]), rnd.choice(keys), *rnd.sample(keys, rnd.randint(1, 3))]
        else:
            cmd = ["SET", key, bytes(rnd.randrange(256) for _ in range(rnd.randint(0, 40)))]
        pair.check(*cmd)
        if step % 50 == 0:
            for k in keys:
                pair.check("GET", k)
    for k in keys:
        pair.check("GET", k)


def test_long_bitmaps(pair) -> None:  # type: ignore[no-untyped-def]
    """Bitmaps of several hundred KiB: searches and counts that cross many
    64 KiB chunks, and BITOP over strings of different lengths."""
    steps: list[tuple] = [
        ("SETBIT", "z", "4000003", "1"), ("SET", "o", b"\xff" * 300_000), ("SETBIT", "o", "1500001", "0"),
        ("SETRANGE", "r", "0", bytes(range(256)) * 700),
    ]
    for key in ("z", "o", "r"):
        for bit in (0, 1):
            steps += [("BITPOS", key, bit), ("BITPOS", key, bit, "65536"), ("BITPOS", key, bit, "65537", "-1"),
                      ("BITPOS", key, bit, "3", "131071"), ("BITPOS", key, bit, "100", "4000001", "BIT"),
                      ("BITPOS", key, bit, "-300000", "-2")]
        steps += [("BITCOUNT", key), ("BITCOUNT", key, "70000", "-70000"), ("BITCOUNT", key, "9", "3999999", "BIT")]
    steps += [("BITOP", "AND", "d", "z", "o", "r"), ("BITCOUNT", "d"), ("BITOP", "OR", "d", "z", "o", "r"),
              ("BITCOUNT", "d"), ("BITOP", "XOR", "d", "z", "o", "r"), ("BITCOUNT", "d"), ("BITOP", "NOT", "d", "r"),
              ("BITPOS", "d", "1", "1000"), ("BITFIELD", "d", "INCRBY", "i64", "#10000", "5", "GET", "u63", "800001")]
    for step in steps:
        pair.check(*step)
    for key in ("z", "o", "r", "d"):
        pair.check("GET", key)

"""Doubles read and written as Valkey 9 does, checked against the real server.

format_double must give d2string's bytes (integers up to LLONG_MAX/2, else
fpconv's Grisu2 digits, which are not always the shortest ones), and
parse_double must accept exactly what ZADD accepts and read the same value.
Each test sends its whole corpus to Valkey in one pipelined batch. Scores go
to a member longer than zset-max-listpack-value, so the set is a skiplist
and keeps the double as is (a listpack would turn -0 into 0).
"""

from __future__ import annotations

import random
import struct
import sys
from decimal import Decimal, getcontext
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from helpers.resp_wire import Wire, encode, reply_end

from trafikey_server.protocol.resp import RESP3
from trafikey_server.util.floats import format_double, parse_double

MEMBER = b"m" * 70  # longer than zset-max-listpack-value (64)
KEY = b"fz"


def batch(w: Wire, commands: list[tuple]) -> list[bytes]:
    """All commands in one write; replies framed by offset, without
    re-slicing the buffer per reply (Wire.pipeline would go quadratic)."""
    w.send_raw(b"".join(encode(*c) for c in commands))
    buf = w.buf
    out: list[bytes] = []
    pos = 0
    while len(out) < len(commands):
        end = reply_end(buf, pos)
        if end < 0:
            chunk = w.sock.recv(1 << 20)
            if not chunk:
                raise ConnectionError("closed mid-batch")
            buf = buf[pos:] + chunk
            pos = 0
            continue
        out.append(buf[pos:end])
        pos = end
    w.buf = buf[pos:]
    return out


def _double(bits: int) -> float:
    return struct.unpack("<d", struct.pack("<Q", bits))[0]


def _bits(x: float) -> int:
    return struct.unpack("<Q", struct.pack("<d", x))[0]


def _finite(x: float) -> bool:
    return x - x == 0.0


def format_corpus() -> list[float]:
    rnd = random.Random(20240917)
    out = [0.0, -0.0, 0.1, 1 / 3, 1e23, 5e-324, 2.2250738585072014e-308, 2.225073858507201e-308,
           1.7976931348623157e308, -3.39916778826608e-23, 720889748556924.2, 225320880960098.12, 0.9249,
           8.711421e-14, 7.39e-08, 1e-7, 1e-6, 123e-9, 1e21, 1e20, 1.5e-7]
    out += [10.0**e for e in range(-323, 309)]
    out += [float(f"1e{e}") for e in range(-323, 309)]
    out += [2.0**e for e in range(-1074, 1024)]
    # Integers around 2**53 and around LLONG_MAX/2 = 2**62 - 1/2, where
    # d2string switches from integer printing to fpconv, a few ulps apart.
    for base in (2**53, 2**62, 2**63, 10**15, 10**16, 10**17, 10**18, 10**19):
        for d in range(-40, 41):
            x = float(base + d * rnd.randint(1, 3000))
            out += [_double(_bits(x) + u) for u in range(-2, 3)]
    while len(out) < 40000:
        r = rnd.random()
        if r < 0.35:
            x = _double(rnd.getrandbits(64))  # any bit pattern
        elif r < 0.45:
            x = _double(rnd.getrandbits(52))  # subnormal
        elif r < 0.55:
            # the significands at the edges of each binade
            x = _double((rnd.randint(1, 2046) << 52) | rnd.choice([0, 1, 2, (1 << 52) - 1, (1 << 52) - 2]))
        elif r < 0.75:
            x = float(f"{rnd.randint(1, 10 ** rnd.randint(1, 17))}e{rnd.randint(-330, 310)}")
        elif r < 0.9:
            x = rnd.randint(1, 10 ** rnd.randint(1, 8)) / 10 ** rnd.randint(1, 9)  # short decimals
        else:
            x = rnd.uniform(-1, 1) * 10 ** rnd.randint(-30, 30)
        if not _finite(x):
            continue
        out.append(-x if rnd.random() < 0.3 else x)
    return out


def test_format_double_matches_valkey(valkey_server) -> None:
    values = format_corpus()
    w2 = Wire(valkey_server.port)
    w3 = Wire(valkey_server.port)
    try:
        assert w2.call("DEL", KEY)[:1] == b":"
        assert w3.call("HELLO", "3")[:1] == b"%"
        # A fresh set each time: updating 0 to -0 is no change (they compare equal).
        cmds: list[tuple] = []
        for x in values:
            cmds += [("DEL", KEY), ("ZADD", KEY, repr(x), MEMBER), ("ZSCORE", KEY, MEMBER)]
        replies = batch(w2, cmds)
        for x, added, score in zip(values, replies[1::3], replies[2::3], strict=True):
            assert added == b":1\r\n", (x, added)
            mine = format_double(x)
            assert b"$%d\r\n%s\r\n" % (len(mine), mine) == score, f"{x!r}: valkey {score!r}, ours {mine!r}"
        # RESP3 spells a double ",<d2string>\r\n": the same digits through resp.py.
        sample = values[::8]
        cmds = [c for x in sample for c in (("DEL", KEY), ("ZADD", KEY, repr(x), MEMBER), ("ZSCORE", KEY, MEMBER))]
        replies = batch(w3, cmds)
        for x, score in zip(sample, replies[2::3], strict=True):
            assert RESP3.double(x) == score, f"{x!r}: valkey {score!r}"
    finally:
        w2.call("DEL", KEY)
        w2.close()
        w3.close()


# -- parsing --------------------------------------------------------------------

HAND_PICKED = [
    b"+inf", b"-inf", b"inf", b"Inf", b"INF", b"infinity", b"+infinity", b"-Infinity", b"INFINITY", b"infinit",
    b"infinityy", b"in", b"i", b"+-inf", b"inf ", b" inf",
    b"1e400", b"-1e400", b"1e-400", b"-1e-400", b"1.7976931348623158e308", b"1.7976931348623159e308",
    b"2e-324", b"3e-324", b"4.9e-324", b"2.4703282292062328e-324", b"2.4703282292062327e-324",
    b"1e-99999999999999999999", b"1e99999999999999999999", b"0e99999999999999999999", b"0e-400",
    b"0.0000e-99999", b"-0", b"-0.0", b"+0", b"0", b"00000", b"1e0000000000000000000000000005",
    b" 1", b"1 ", b"\t1", b"1\t", b"\n1", b"1\n", b"1\r", b"\v1", b"\f1", b"\xa01", b"1\xa0", b"1\x00", b"\x001",
    b"0x1p3", b"0x10", b"-0x10", b"0X1P-1074", b"0x", b"0x.8", b"0x1p", b"1p3",
    b"nan", b"NaN", b"-nan", b"+nan", b"nan(1)", b"nan()", b"NAN",
    b"1_0", b"1_000.5", b"1e1_0", b"_1", b"1_",
    b".5", b"5.", b"+5", b"-.5e3", b"+.5", b"-5.", b".", b"+.", b"-", b"+", b"", b"e5", b".e5", b"5.e3", b"5.e",
    b"1e", b"1e+", b"1e-", b"1E3", b"1e+3", b"1e-3", b"1e--3", b"1e3.5", b"1.5e+3", b"1..5", b"1.5.5", b"--1",
    b"++1", b"1d5", b"1f", b"0.1f", b"\xd9\xa1", b"\xef\xbc\x91",
    b"1" + b"0" * 400, b"1" + b"0" * 308, b"1" + b"0" * 309, b"0." + b"0" * 320 + b"1", b"0." + b"0" * 330 + b"1",
    b"0." + b"0" * 5000 + b"1e5000", b"1" + b"0" * 5000 + b"e-5000", b"9" * 800 + b"e-800",
    b"3." + b"1415926535" * 300, b"-" + b"7" * 10000,
]


def _halfway_cases(rnd: random.Random, n: int) -> list[bytes]:
    """Decimal strings at, just under and just over the midpoint of two
    neighbouring doubles: where a parser that does not round correctly fails."""
    getcontext().prec = 1200
    out = []
    while len(out) < n:
        bits = rnd.choice([rnd.getrandbits(63), rnd.getrandbits(52), rnd.randint(1, 64)])
        x, y = _double(bits), _double(bits + 1)
        if not (_finite(x) and _finite(y)):
            continue
        mid = (Decimal(x) + Decimal(y)) / 2
        s = format(mid, "e")
        mant, _, exp = s.partition("e")
        out.append(s.encode())
        out.append((mant + "1e" + exp).encode() if "." in mant else (mant + ".1e" + exp).encode())
        out.append(format(mid.next_minus(), "e").encode())
    return out


def _random_literal(rnd: random.Random) -> bytes:
    def digits(n: int) -> str:
        return "".join(rnd.choice("0123456789") for _ in range(n))

    sign = rnd.choice(["", "", "", "+", "-", "++", "+-", " "])
    if rnd.random() < 0.1:
        word = rnd.choice(["inf", "infinity", "infinit", "nan", "nan(7)", "infx", "0x1p2", "0x1f"])
        word = "".join(ch.upper() if rnd.random() < 0.5 else ch for ch in word)
        return (sign + word).encode()
    s = sign + "0" * rnd.choice([0, 0, 0, 1, 30]) + digits(rnd.choice([0, 1, 1, 2, 3, 5, 16, 17, 20, 400]))
    if rnd.random() < 0.6:
        s += "." + digits(rnd.choice([0, 1, 2, 5, 16, 17, 30, 400]))
    if rnd.random() < 0.5:
        s += rnd.choice("eE") + rnd.choice(["", "+", "-", "--"]) + digits(rnd.choice([0, 1, 2, 3, 3, 4, 25]))
    if rnd.random() < 0.05:
        i = rnd.randint(0, len(s))
        s = s[:i] + rnd.choice(["_", " ", "x", ".", "e", "\x00", "\t"]) + s[i:]
    return s.encode("latin-1")


def parse_corpus() -> list[bytes]:
    rnd = random.Random(77)
    out = list(HAND_PICKED)
    out += _halfway_cases(rnd, 1500)
    out += [repr(x).encode() for x in format_corpus()[::20]]
    out += [_random_literal(rnd) for _ in range(12000)]
    return out


def test_parse_double_matches_valkey(valkey_server) -> None:
    """What ZADD accepts, parse_double accepts, and reads to the same double
    (ZSCORE's bytes then equal format_double's, which tells doubles apart)."""
    corpus = parse_corpus()
    w = Wire(valkey_server.port)
    try:
        cmds: list[tuple] = []
        for s in corpus:
            cmds += [("DEL", KEY), ("ZADD", KEY, s, MEMBER), ("ZSCORE", KEY, MEMBER)]
        replies = batch(w, cmds)
        accepted = 0
        for i, s in enumerate(corpus):
            added, score = replies[3 * i + 1], replies[3 * i + 2]
            x = parse_double(s)
            if added == b":1\r\n":
                accepted += 1
                assert x is not None, f"{s[:60]!r}: Valkey accepts it, we refuse"
                mine = format_double(x)
                assert score == b"$%d\r\n%s\r\n" % (len(mine), mine), f"{s[:60]!r}: valkey {score!r}, ours {x!r}"
            else:
                assert added == b"-ERR value is not a valid float\r\n", (s[:60], added)
                assert x is None, f"{s[:60]!r}: Valkey refuses it, we read {x!r}"
        # The corpus must exercise both outcomes in earnest.
        assert 3000 < accepted < len(corpus) - 3000
    finally:
        w.call("DEL", KEY)
        w.close()


def test_zadd_scores_through_both_servers(pair) -> None:
    """The same literals through trafikey's ZADD, ZINCRBY and ZADD INCR."""
    for s in HAND_PICKED:
        if len(s) > 1000:
            continue
        pair.check("ZADD", "z", s, MEMBER)
        pair.check("ZSCORE", "z", MEMBER)
        pair.check("ZADD", "small", s, "m")
        pair.check("ZSCORE", "small", "m")
        pair.check("ZINCRBY", "z", s, MEMBER)
        pair.check("ZADD", "z", "INCR", s, "other")
        pair.check("ZRANGE", "z", 0, -1, "WITHSCORES")
        pair.check("DEL", "z", "small")

"""String commands against Valkey, byte for byte, in RESP2 and RESP3.

Every option, combination and error path is sent to both servers and the
raw replies compared. Expiry set by relative times (EX, PX, SETEX) is read
back through PTTL with a tolerance: the two servers read their clocks a few
milliseconds apart, so only "has a TTL of about N" can be compared; absolute
times (EXAT, PXAT) are compared exactly through (P)EXPIRETIME.
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Iterator

import pytest
from helpers.encodings import assert_encodings_agree
from helpers.resp_wire import Wire
from helpers.script import run
from helpers.servers import start_trafikey, start_valkey
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from trafikey_server.util.errors import CommandError
from trafikey_server.util.longdouble import incr_by_float

FUTURE_S = "4000000000"  # 2096: an absolute time that never passes in a test
FUTURE_MS = "4000000000123"




def assert_ttl_close(pair, key: str, cmd: str = "PTTL", slack: int = 1500) -> None:
    """Both TTLs present (or both absent) and within slack of each other."""
    v, t = pair.both(cmd, key)
    assert v[:1] == t[:1] == b":", (v, t)
    vi, ti = int(v[1:-2]), int(t[1:-2])
    assert (vi < 0) == (ti < 0), (v, t)
    if vi < 0:
        assert vi == ti, (v, t)
    assert abs(vi - ti) <= slack, (v, t)


def test_get_set_basic(pair23) -> None:
    run(pair23, """
        GET missing
        SET k v
        GET k
        SET k ""
        GET k
        STRLEN k
        SET k "\\x00\\xff bin"
        GET k
        SET "" empty-key
        GET ""
        SET k v extra
        HSET h f v
        GET h
        SET h v
        TYPE h
        GET h
        ZADD z 1 m
        GET z
        SET z v
        GET z
    """)


# -- SET / GETEX option grammar ------------------------------------------------------

SET_TOKENS = [
    ["NX"], ["XX"], ["GET"], ["KEEPTTL"], ["EX", "100"], ["PX", "100000"], ["EXAT", FUTURE_S],
    ["PXAT", FUTURE_MS], ["IFEQ", "v"], ["IFEQ", "other"], ["PERSIST"], ["EX"], ["nx"], ["gEt"],
    ["EXAT", "1"], ["PX", "0"], ["IFEQ"], ["keepttl"],
]
GETEX_TOKENS = [
    ["PERSIST"], ["EX", "100"], ["PX", "100000"], ["EXAT", FUTURE_S], ["PXAT", FUTURE_MS], ["EXAT", "1"],
    ["KEEPTTL"], ["GET"], ["NX"], ["EX"], ["persist"], ["ex", "0"], ["PXAT", "x"],
]


def _states(pair) -> Iterator[str]:
    """The key k in each interesting state before a command."""
    for state in ("missing", "plain", "ttl", "hash"):
        pair.v.call("DEL", "k")
        pair.t.call("DEL", "k")
        if state == "plain":
            pair.check("SET", "k", "v")
        elif state == "ttl":
            pair.check("SET", "k", "v", "PXAT", FUTURE_MS)
        elif state == "hash":
            pair.check("HSET", "k", "f", "v")
        yield state


def _after(pair) -> None:
    """Everything observable about k after a command: type, value, and its
    expire (exact when absolute or absent, else within tolerance)."""
    pair.check("TYPE", "k")
    pair.check("GET", "k")
    if pair.v.call("PEXPIRETIME", "k") == pair.t.call("PEXPIRETIME", "k"):
        return
    assert_ttl_close(pair, "k")


def _sequences(tokens: list[list[str]], longest: int, extra: int, seed: int) -> list[list[str]]:
    seqs = [list(itertools.chain(*combo)) for n in range(longest + 1) for combo in itertools.product(tokens, repeat=n)]
    rnd = random.Random(seed)
    for _ in range(extra):
        seqs.append(list(itertools.chain(*rnd.choices(tokens, k=rnd.randint(3, 5)))))
    return seqs


def test_set_option_grammar(pair) -> None:
    """Every pair of SET options (and random longer runs) in every key state."""
    for opts in _sequences(SET_TOKENS, 2, 150, 1):
        for _ in _states(pair):
            pair.check("SET", "k", "v2", *opts)
            _after(pair)


def test_getex_option_grammar(pair) -> None:
    for opts in _sequences(GETEX_TOKENS, 2, 60, 2):
        for _ in _states(pair):
            pair.check("GETEX", "k", *opts)
            _after(pair)


def test_set_options(pair23) -> None:
    run(pair23, """
        SET k v NX
        SET k w NX
        GET k
        SET k w XX
        SET nope w XX
        GET nope
        SET k v2 GET
        SET new v GET
        SET k v3 NX GET
        SET k v3 XX GET
        SET absent v XX GET
        GET absent
        SET k v EX 0
        SET k v EX -1
        SET k v PX 0
        SET k v EXAT 0
        SET k v PXAT -5
        SET k v EX notanumber
        SET k v EX 9223372036854775807
        SET k v EX 9223372036854775
        SET k v EX 9223372036854776
        SET k v PX 9223372036854775807
        SET k v EXAT 9223372036854775807
        SET k v PXAT 9223372036854775807
        PEXPIRETIME k
        SET k v EX 1 EX 2
        SET k v "NX\\x00junk"
        SET k v "EX\\x00" 5
        SET k v ex 100 get
        SET k v KEEPTTL KEEPTTL
        SET k v GET GET
        HSET h f v
        SET h v GET
        SET h v NX GET
        SET h v XX GET
        SET h v IFEQ x
        SET h v IFEQ x GET
        TYPE h
        SET h v
        GET h
    """)


def test_set_ifeq(pair23) -> None:
    run(pair23, """
        SET k v IFEQ v
        GET k
        SET k v
        SET k w IFEQ nope
        GET k
        SET k w IFEQ v
        GET k
        SET k z IFEQ w GET
        GET k
        SET k z IFEQ z NX
        SET k z NX IFEQ z
        SET k z IFEQ z XX
        SET k z IFEQ
        SET k y IFEQ z IFEQ z
        SET n 12
        SET n 13 IFEQ 12
        GET n
        APPEND n x
        SET n 14 IFEQ 13x
        GET n
    """)


def test_set_already_expired(pair23) -> None:
    """A past EXAT/PXAT deletes an existing key and stores nothing."""
    run(pair23, """
        SET k v
        SET k w EXAT 1
        EXISTS k
        DBSIZE
        SET k w PXAT 1 GET
        SET k v
        SET k w PXAT 1 GET
        EXISTS k
        HSET h f v
        SET h w EXAT 1
        EXISTS h
        SET k v
        SET k w EXAT 1 NX
        GET k
        SET k w EXAT 1 XX
        EXISTS k
    """)


def test_set_expiry(pair) -> None:
    pair.check("SET", "k", "v", "EX", "100")
    assert_ttl_close(pair, "k")
    pair.check("SET", "k", "v", "KEEPTTL")
    assert_ttl_close(pair, "k")
    pair.check("SET", "k", "v")
    pair.check("TTL", "k")
    pair.check("SET", "k", "v", "PX", "50000")
    assert_ttl_close(pair, "k")
    pair.check("SET", "k", "v", "EXAT", FUTURE_S)
    pair.check("EXPIRETIME", "k")
    pair.check("SET", "k", "v", "PXAT", FUTURE_MS)
    pair.check("PEXPIRETIME", "k")
    pair.check("SET", "k", "w", "GET", "KEEPTTL")
    pair.check("PEXPIRETIME", "k")
    pair.check("SETEX", "k", "100", "v")
    assert_ttl_close(pair, "k")
    pair.check("PSETEX", "k", "100000", "v")
    assert_ttl_close(pair, "k")
    pair.check("GETSET", "k", "x")
    pair.check("TTL", "k")
    pair.check("SET", "k", "v", "EX", "100")
    pair.check("MSET", "k", "y")
    pair.check("TTL", "k")


def test_setnx_setex_psetex(pair23) -> None:
    run(pair23, """
        SETNX k v
        SETNX k w
        GET k
        SETEX k 0 v
        SETEX k -1 v
        SETEX k x v
        SETEX k 9223372036854775807 v
        SETEX k 9223372036854776 v
        PSETEX k 0 v
        PSETEX k -5 v
        PSETEX k 9223372036854775807 v
        PSETEX k 1.5 v
        SETEX k 10 v
        GET k
        HSET h f v
        SETNX h v
        SETEX h 10 v
        TYPE h
        GET h
        SETEX
        SETEX k 10
        PSETEX k 10
    """)


def test_mget_mset_msetnx(pair23) -> None:
    run(pair23, """
        MSET a 1 b 2 c 3
        MGET a b c missing
        MSET a
        MSET a 1 b
        HSET h f v
        ZADD z 1 m
        MGET a h b z
        MSETNX a 9 z2 9
        MGET a z2
        MSETNX y 1 z2 2
        MGET y z2
        MSETNX y
        MSETNX y 1 z2
        MSETNX q 1 q 2
        GET q
        MSET r 1 r 2
        GET r
        MSET h v
        TYPE h
        MSETNX z v
        TYPE z
        MGET
    """)


def test_getset_getdel(pair23) -> None:
    run(pair23, """
        GETSET k v
        GETSET k w
        GET k
        GETDEL k
        GETDEL k
        EXISTS k
        HSET h f v
        GETSET h v
        GETDEL h
        TYPE h
        SET n 5
        GETDEL n
        GETSET n ""
        GET n
    """)


def test_getex(pair23) -> None:
    run(pair23, """
        GETEX missing
        GETEX missing EX 10
        GETEX missing EX 0
        GETEX missing PERSIST
        SET k v
        GETEX k
        GETEX k EX 0
        GETEX k EX x
        GETEX k PERSIST EX 1
        GETEX k EX 1 PERSIST
        GETEX k EX 1 PX 1
        GETEX k KEEPTTL
        GETEX k GET
        GETEX k bogus
        GETEX k EX 9223372036854775807
        GETEX k PX 9223372036854775807
        GETEX k EXAT 4000000000
        EXPIRETIME k
        GETEX k PERSIST
        TTL k
        GETEX k PERSIST
        GETEX k PXAT 1
        EXISTS k
        SET k v
        GETEX k EXAT 1
        EXISTS k
        HSET h f v
        GETEX h
        GETEX h PERSIST
        GETEX h EX 0
    """)


def test_append_strlen(pair23) -> None:
    run(pair23, """
        APPEND k abc
        OBJECT ENCODING k
        APPEND k def
        GET k
        STRLEN k
        OBJECT ENCODING k
        STRLEN missing
        APPEND n 12
        OBJECT ENCODING n
        APPEND n 3
        OBJECT ENCODING n
        INCR n
        OBJECT ENCODING n
        APPEND n ""
        OBJECT ENCODING n
        SET e ""
        APPEND e ""
        GET e
        STRLEN e
        APPEND "" x
        GET ""
        HSET h f v
        APPEND h x
        STRLEN h
        ZADD z 1 m
        STRLEN z
    """)


def test_append_keeps_ttl(pair) -> None:
    pair.check("SET", "k", "v", "EX", "100")
    pair.check("APPEND", "k", "w")
    assert_ttl_close(pair, "k")
    pair.check("SETRANGE", "k", "5", "z")
    assert_ttl_close(pair, "k")
    pair.check("GET", "k")


def test_getrange_setrange(pair23) -> None:
    run(pair23, """
        SET k "Hello World"
        GETRANGE k 0 4
        GETRANGE k -5 -1
        GETRANGE k -1 -5
        GETRANGE k 5 2
        GETRANGE k 0 100
        GETRANGE k -100 -50
        GETRANGE k -100 2
        GETRANGE k 100 200
        GETRANGE k 0 -100
        GETRANGE k 10 10
        GETRANGE k 11 11
        GETRANGE k -9223372036854775808 9223372036854775807
        GETRANGE k x 1
        GETRANGE k 0 x
        GETRANGE missing 0 -1
        GETRANGE missing x 0
        SET e ""
        GETRANGE e 0 -1
        GETRANGE e -1 0
        SET n 12345
        GETRANGE n 1 -2
        SETRANGE k 6 Valkey
        GET k
        SETRANGE k 20 tail
        GET k
        SETRANGE k -1 x
        SETRANGE k x x
        SETRANGE k 9223372036854775808 x
        SETRANGE k 2 ""
        SETRANGE k 900000000 ""
        SETRANGE new 0 ""
        EXISTS new
        SETRANGE new 3 abc
        GET new
        OBJECT ENCODING new
        SETRANGE new 536870912 ""
        SETRANGE n 0 9
        GET n
        OBJECT ENCODING n
        INCR n
        HSET h f v
        GETRANGE h 0 1
        SETRANGE h 0 x
        SETRANGE h 0 ""
        SETRANGE h -1 x
    """)


@pytest.fixture(scope="module")
def small_bulk():
    """Both servers with proto-max-bulk-len at its minimum (1mb), so the
    limit can be hit without allocating 512 MB."""
    v = start_valkey("--proto-max-bulk-len", "1mb")
    t = start_trafikey("--proto-max-bulk-len", "1mb")
    yield v, t
    v.stop()
    t.stop()


def test_max_bulk_len(small_bulk) -> None:
    v, t = small_bulk
    wv, wt = Wire(v.port), Wire(t.port)
    mb = 1024 * 1024
    for cmd in (
        ("SETRANGE", "k", str(mb - 1), "x"), ("STRLEN", "k"), ("SETRANGE", "k", str(mb), "x"),
        ("SETRANGE", "k", str(mb - 1), "xy"), ("SETRANGE", "n", str(mb), "x"), ("SETRANGE", "n", str(mb), ""),
        ("EXISTS", "n"), ("APPEND", "k", "y"), ("SET", "a", "x" * 1000), ("SETRANGE", "a", str(mb - 1000), "z"),
        ("SETRANGE", "a", str(mb - 1000), "zz"), ("APPEND", "a", "x" * (mb - 1001)), ("STRLEN", "a"),
        ("APPEND", "a", ""), ("APPEND", "a", "q"), ("SETRANGE", "k", "9223372036854775807", "x"),
    ):
        assert wt.call(*cmd) == wv.call(*cmd), cmd
    wv.close()
    wt.close()


def test_incr_decr(pair23) -> None:
    run(pair23, """
        INCR n
        INCR n
        DECR n
        INCRBY n 10
        DECRBY n 100
        GET n
        OBJECT ENCODING n
        INCRBY n x
        INCRBY n 1.5
        INCRBY n " 1"
        INCRBY n +1
        INCRBY n 01
        DECRBY n ""
        DECR missing
        INCRBY fresh -5
        SET big 9223372036854775807
        INCR big
        INCRBY big 0
        DECR big
        SET small -9223372036854775808
        DECR small
        DECRBY small 1
        INCRBY small -1
        INCRBY small 9223372036854775807
        DECRBY n -9223372036854775808
        DECRBY n 9223372036854775807
        INCRBY n -9223372036854775808
        INCRBY n 9223372036854775808
        SET s abc
        INCR s
        SET s " 1"
        INCR s
        SET s 01
        INCR s
        SET s -0
        INCR s
        SET s +1
        INCR s
        SET s 1.0
        INCR s
        SET s 12345678901234567890123
        INCR s
        SET s ""
        INCR s
        APPEND r 4
        APPEND r 2
        INCR r
        OBJECT ENCODING r
        HSET h f v
        INCR h
        DECRBY h 1
        INCRBY h x
    """)


def test_incr_keeps_ttl(pair) -> None:
    pair.check("SET", "n", "1", "EX", "100")
    pair.check("INCR", "n")
    assert_ttl_close(pair, "n")
    pair.check("INCRBYFLOAT", "n", "1.5")
    assert_ttl_close(pair, "n")


def test_an_incrbyfloat_mark_dies_with_its_key(pair) -> None:
    """INCRBYFLOAT's "3" is embstr in Valkey; once that key is deleted or
    replaced by another write, a "3" stored under it again is int. (The
    one-byte value is one shared object in CPython, so a mark kept past its
    key would claim the new value.)"""
    pair.check("SET", "k", "1.5")
    pair.check("INCRBYFLOAT", "k", "1.5")
    assert pair.check("OBJECT", "ENCODING", "k") == b"$6\r\nembstr\r\n"
    payload = pair.v.call("DUMP", "k")
    assert pair.t.call("DUMP", "k") == payload
    body = payload.split(b"\r\n", 1)[1][:-2]
    pair.check("DEL", "k")
    pair.check("RESTORE", "k", "0", body)
    assert pair.check("OBJECT", "ENCODING", "k") == b"$3\r\nint\r\n"
    pair.check("INCRBYFLOAT", "k", "0")
    pair.check("OBJECT", "ENCODING", "k")
    pair.check("LPUSH", "j", "a")
    pair.check("RESTORE", "k", "0", body, "REPLACE")
    assert pair.check("OBJECT", "ENCODING", "k") == b"$3\r\nint\r\n"


def test_incrbyfloat(pair23) -> None:
    run(pair23, """
        INCRBYFLOAT f 10.5
        INCRBYFLOAT f 0.1
        INCRBYFLOAT f -5.0e3
        INCRBYFLOAT f 3
        OBJECT ENCODING f
        GET f
        SET f 5.0e3
        INCRBYFLOAT f 2.0e2
        SET f 1
        INCRBYFLOAT f 1.1
        INCRBYFLOAT f 0.0000001
        INCRBYFLOAT f 1e30
        INCRBYFLOAT f abc
        INCRBYFLOAT f ""
        INCRBYFLOAT f " 1"
        INCRBYFLOAT f "1 "
        INCRBYFLOAT f nan
        INCRBYFLOAT f inf
        INCRBYFLOAT f -inf
        INCRBYFLOAT f 1e5000
        INCRBYFLOAT f 1e999999999
        INCRBYFLOAT f 1e-999999999
        INCRBYFLOAT f 0x1p99999999999
        INCRBYFLOAT f "1\\x00"
        SET f inf
        INCRBYFLOAT f 1
        INCRBYFLOAT f x
        SET f abc
        INCRBYFLOAT f 1
        INCRBYFLOAT f inf
        SET z 0
        INCRBYFLOAT z -0
        SET z -0
        INCRBYFLOAT z -0
        INCRBYFLOAT z 0
        INCRBYFLOAT z -0.0000000000000000001
        HSET h f v
        INCRBYFLOAT h 1
        INCRBYFLOAT h x
    """)


EDGES = [
    ("0.1", "0.2"), (None, "1e21"), (None, "1.5e-7"), ("3", "-3"), ("1e300", "1"), (None, "0x1p3"),
    (None, "0x10"), (None, "0X1.8P1"), (None, "0x.8"), (None, "0x"), (None, "0xg"), (None, "0x1p"),
    (None, "inf"), (None, "-infinity"), (None, "+Inf"), (None, "+-inf"), (None, "infinit"), (None, "nan"),
    (None, "-nan"), (None, "nan(1)"), (None, " 1"), (None, "1 "), (None, "\t1"), (None, "+5"), (None, "-+5"),
    (None, ".5"), (None, "5."), (None, "."), (None, "e5"), (None, "5e"), (None, "5e+"), (None, "5.e3"),
    (None, "1e5000"), (None, "1e-5000"), (None, "-0"), ("5", "-5.0"), (None, "1_0"), (None, "1e"),
    (None, "-.5e3"), (None, "1.7976931348623157e308"), (None, "123456789.123456789"), ("abc", "1"), (None, ""),
    ("1e4932", "1e4932"), (None, "1.18973149535723176502e+4932"), (None, "1.18973149535723176503e+4932"),
    (None, "1.18973149535723176509e+4932"), (None, "3.6e-4951"), (None, "1.8e-4951"), (None, "1.9e-4951"),
    (None, "1e-4950"), (None, "0x1p-16445"), (None, "0x1p-16446"), (None, "0x1.0000000000000001p-16446"),
    (None, "0x1p16383"), (None, "0x1p16384"), (None, "0x1.fffffffffffffffep16383"),
    (None, "0x1.ffffffffffffffffp16383"), (None, "0e99999999"), (None, "0x0p99999999"), (None, "000.000e-9"),
    (None, "1" * 5119), (None, "1" * 5120), ("1" * 5119, "1"), (None, "0." + "0" * 5000 + "1"),
    (None, "1e-324"), (None, "4.9e-324"), ("0.1", "-0.1"), ("1e18", "0.5"), ("1e19", "0.5"),
    ("9223372036854775807", "1"), ("-9223372036854775808", "-1"), ("1e100", "1e100"), ("1e105", "1"),
    ("0.30000000000000004", "0"), ("1e-17", "0"), ("5e-18", "0"), ("1.5e-17", "0"), ("-5e-18", "0"),
]


def _random_cases(n: int, seed: int) -> list[tuple[str | None, str]]:
    rnd = random.Random(seed)

    def num() -> str:
        kind = rnd.random()
        if kind < 0.3:
            return repr(rnd.uniform(-1e6, 1e6))
        if kind < 0.5:
            return str(rnd.randint(-10**18, 10**18))
        if kind < 0.7:
            return f"{rnd.uniform(-10, 10):.{rnd.randint(0, 25)}f}"
        if kind < 0.85:
            return f"{rnd.uniform(1, 10):.{rnd.randint(0, 21)}f}e{rnd.randint(-40, 40)}"
        return float.hex(rnd.uniform(-1e5, 1e5))

    return [(num() if rnd.random() < 0.8 else None, num()) for _ in range(n)]


def test_incr_by_float_function_matches_valkey(valkey_server) -> None:
    """longdouble.incr_by_float (also HINCRBYFLOAT's) against Valkey's own
    INCRBYFLOAT over edge cases and many random operands."""
    w = Wire(valkey_server.port)
    for cur, inc in EDGES + _random_cases(3000, 7):
        w.call("DEL", "ld")
        if cur is not None:
            w.call("SET", "ld", cur)
        want = w.call("INCRBYFLOAT", "ld", inc)
        try:
            got = incr_by_float(cur.encode() if cur is not None else None, inc.encode())
            mine = b"$%d\r\n%s\r\n" % (len(got), got)
        except CommandError as e:
            mine = e.reply()
        assert mine == want, (cur, inc)
    w.close()


def test_incrbyfloat_chains(pair) -> None:
    """Repeated additions accumulate in long double, then print rounded."""
    rnd = random.Random(3)
    for _ in range(40):
        pair.check("INCRBYFLOAT", "acc", repr(rnd.uniform(-100, 100)))
    for _ in range(40):
        pair.check("INCRBYFLOAT", "tenths", "0.1")
    pair.check("GET", "tenths")


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    st.floats(allow_nan=False, allow_infinity=False, min_value=-1e15, max_value=1e15),
    st.floats(allow_nan=False, allow_infinity=False, min_value=-1e15, max_value=1e15),
)
def test_incrbyfloat_long_double(pair, a: float, b: float) -> None:
    """Sums in 80-bit long double, printed with %.17Lf and stripped."""
    pair.check("SET", "f", repr(a))
    pair.check("INCRBYFLOAT", "f", repr(b))


# -- OBJECT ENCODING of strings -----------------------------------------------------------


def _encoding_scenarios(k: str, v: str) -> list[list[tuple[str, ...]]]:
    """Ways to arrive at key k holding value v (or derived from it)."""
    other = "o" * 60
    return [
        [("SET", k, v)],
        [("SET", k, v, "EX", "100")],
        [("SET", k, "x", "EX", "100"), ("SET", k, v)],
        [("SET", k, "x", "EX", "100"), ("SET", k, v, "EX", "100")],
        [("SET", k, "x", "EX", "100"), ("SET", k, v, "KEEPTTL")],
        [("SET", k, "x"), ("SET", k, v, "KEEPTTL")],
        [("SET", k, v), ("EXPIRE", k, "100")],
        [("SET", k, v), ("EXPIRE", k, "100"), ("PERSIST", k)],
        [("SET", k, "x", "EX", "100"), ("SET", k, v), ("EXPIRE", k, "100")],
        [("SET", k, "x", "EX", "100"), ("PERSIST", k), ("SET", k, v)],
        [("SET", k, "x", "EX", "100"), ("SET", k, "y"), ("SET", k, v)],
        [("SET", k, v), ("EXPIRE", k, "100"), ("PERSIST", k), ("EXPIRE", k, "100")],
        [("SETEX", k, "100", v)],
        [("SET", k, "x", "EX", "100"), ("SETEX", k, "100", v)],
        [("PSETEX", k, "100000", v)],
        [("SETNX", k, v)],
        [("MSET", k, v)],
        [("SET", k, "x", "EX", "100"), ("MSET", k, v)],
        [("MSETNX", k, v)],
        [("GETSET", k, v)],
        [("SET", k, "x", "EX", "100"), ("GETSET", k, v)],
        [("SET", k, v, "GET")],
        [("SET", k, "x", "PX", "100000"), ("SET", k, v, "GET")],
        [("APPEND", k, v)],
        [("SET", k, v), ("APPEND", k, "")],
        [("SETRANGE", k, "0", v)],
        [("SET", k, v), ("SETRANGE", k, "0", "")],
        [("SET", k, v), ("GETEX", k, "EX", "100")],
        [("SET", k, v, "EX", "100"), ("GETEX", k, "PERSIST")],
        [("SET", "x", v), ("RENAME", "x", k)],
        [("SET", other, v), ("RENAME", other, k)],
        [("SET", "x", v, "EX", "100"), ("RENAME", "x", k)],
        [("SET", k, "y"), ("SET", "x", v), ("RENAME", "x", k)],
        [("SET", k, "y", "EX", "100"), ("SET", "x", v), ("RENAME", "x", k)],
        [("SET", "x", v), ("RENAMENX", "x", k)],
        [("SET", "x", v), ("COPY", "x", k)],
        [("SET", other, v), ("COPY", other, k)],
        [("SET", "x", v, "EX", "100"), ("COPY", "x", k)],
        [("SET", k, "y", "EX", "100"), ("SET", "x", v), ("COPY", "x", k, "REPLACE")],
        [("SET", k, v), ("MOVE", k, "1"), ("SELECT", "1"), ("MOVE", k, "0"), ("SELECT", "0")],
        [("SET", k, v, "EX", "100"), ("MOVE", k, "1"), ("SELECT", "1"), ("MOVE", k, "0"), ("SELECT", "0")],
        [("SET", "x", v), ("COPY", "x", k, "DB", "1"), ("SELECT", "1"), ("RENAME", k, k + "z"),
         ("RENAME", k + "z", k), ("MOVE", k, "0"), ("SELECT", "0")],
    ]


@pytest.mark.parametrize("klen", [0, 1, 20, 31, 32, 33, 60, 100, 104, 107, 108, 111, 112, 113, 120, 300])
def test_string_encodings(pair, klen: int) -> None:
    """int / embstr / raw as Valkey 9 decides them, around every limit:
    the embstr size depends on the key's length and on an inherited TTL."""
    k = "k" * klen
    # Only the lengths around the limits for this key are interesting.
    near = {n for base in (103, 105, 111, 113) for n in range(base - klen - 2, base - klen + 3) if n >= 0}
    lengths = sorted(near | {0, 1, 20, 44, 45, 200})
    for n in lengths:
        for value in ("a" * n, ("7" * n) if 0 < n <= 21 else None):
            if value is None:
                continue
            for steps in _encoding_scenarios(k, value):
                pair.check("FLUSHALL")
                for step in steps:
                    pair.check(*step)
                assert_encodings_agree(pair, k, any(w in ("EX", "PX", "EXPIRE", "SETEX", "PSETEX", "KEEPTTL")
                                                 for step in steps for w in step))


def test_numeric_encodings(pair23) -> None:
    run(pair23, """
        SET i 12345
        OBJECT ENCODING i
        SET i -9223372036854775808
        OBJECT ENCODING i
        SET i 9223372036854775807
        OBJECT ENCODING i
        SET i 9223372036854775808
        OBJECT ENCODING i
        SET i 01
        OBJECT ENCODING i
        SET i -0
        OBJECT ENCODING i
        SET i +1
        OBJECT ENCODING i
        SET i 0
        OBJECT ENCODING i
        OBJECT REFCOUNT i
        INCR i
        OBJECT ENCODING i
        OBJECT REFCOUNT i
        INCRBYFLOAT f 3
        OBJECT ENCODING f
        INCRBYFLOAT f 0.5
        OBJECT ENCODING f
        INCRBYFLOAT f 0.5
        OBJECT ENCODING f
        INCR f
        OBJECT ENCODING f
        INCRBYFLOAT f 1e25
        OBJECT ENCODING f
        INCRBYFLOAT g 7
        RENAME g g2
        OBJECT ENCODING g2
        COPY g2 g3
        OBJECT ENCODING g3
        MOVE g3 1
        SELECT 1
        OBJECT ENCODING g3
        SELECT 0
        SET g2 7
        OBJECT ENCODING g2
        INCRBYFLOAT g2 0
        OBJECT ENCODING g2
        APPEND g2 ""
        OBJECT ENCODING g2
        INCRBYFLOAT g4 1
        DEL g4
        SET g4 2
        OBJECT ENCODING g4
        INCRBYFLOAT g5 -1
        GETSET g5 -1
        OBJECT ENCODING g5
        INCRBYFLOAT g6 5
        FLUSHDB
        SET g6 5
        OBJECT ENCODING g6
        INCRBYFLOAT g7 8
        SWAPDB 0 1
        OBJECT ENCODING g7
        SELECT 1
        OBJECT ENCODING g7
        SET g8 8
        SWAPDB 0 1
        OBJECT ENCODING g8
        SELECT 0
        OBJECT ENCODING g8
        OBJECT ENCODING g7
    """)


def test_many_float_int_marks(pair) -> None:
    """Thousands of integer-looking INCRBYFLOAT results, some overwritten:
    each keeps the encoding Valkey gives it."""
    for w in (pair.v, pair.t):
        w.pipeline([("INCRBYFLOAT", f"f{i}", str(i)) for i in range(3000)])
        w.pipeline([("SET", f"f{i}", str(i)) for i in range(0, 3000, 3)])
        w.pipeline([("INCRBYFLOAT", f"f{i}", "0.5") for i in range(1, 3000, 3)])
    for i in range(0, 3000, 7):
        pair.check("OBJECT", "ENCODING", f"f{i}")


@pytest.mark.parametrize("klen", [1, 40])
def test_incrbyfloat_long_results_encoding(pair, klen: int) -> None:
    """INCRBYFLOAT results of every length near the embstr limit, with and
    without an inherited TTL."""
    k = "f" * klen
    for exp in range(40, 116):
        for ttl in (False, True):
            pair.check("DEL", k)
            pair.check("SET", k, "0", *(("EX", "100") if ttl else ()))
            pair.check("INCRBYFLOAT", k, f"1e{exp}")
            pair.check("OBJECT", "ENCODING", k)


STRING_COMMANDS = [
    ("GET", "{k}"), ("SET", "{k}", "v", "GET"), ("SET", "{k}", "v", "IFEQ", "v"), ("SET", "{k}", "v", "NX"),
    ("SETNX", "{k}", "v"), ("GETSET", "{k}", "v"), ("GETDEL", "{k}"), ("GETEX", "{k}"), ("GETEX", "{k}", "EX", "0"),
    ("GETEX", "{k}", "PERSIST"), ("APPEND", "{k}", "x"), ("STRLEN", "{k}"), ("GETRANGE", "{k}", "0", "-1"),
    ("GETRANGE", "{k}", "x", "0"), ("SETRANGE", "{k}", "0", "x"), ("SETRANGE", "{k}", "0", ""),
    ("SETRANGE", "{k}", "-1", "x"), ("INCR", "{k}"), ("DECR", "{k}"), ("INCRBY", "{k}", "2"), ("INCRBY", "{k}", "x"),
    ("DECRBY", "{k}", "2"), ("DECRBY", "{k}", "-9223372036854775808"), ("INCRBYFLOAT", "{k}", "1.5"),
    ("INCRBYFLOAT", "{k}", "x"), ("MGET", "{k}", "s"), ("MSETNX", "{k}", "v", "n", "1"),
]


def test_wrong_type(pair23) -> None:
    """Every string command against a hash and a sorted set: WRONGTYPE (or
    the argument error Valkey checks first), and the key left alone."""
    for cmd in STRING_COMMANDS:
        for kind in ("h", "z"):
            pair23.check("FLUSHALL")
            pair23.check("HSET", "h", "f", "v")
            pair23.check("ZADD", "z", "1", "m")
            pair23.check("SET", "s", "str")
            pair23.check(*(a.format(k=kind) for a in cmd))
            pair23.check("TYPE", kind)
            pair23.check("EXISTS", "n")
    # Commands that overwrite whatever is there.
    for cmd in (("SET", "h", "v"), ("MSET", "z", "v"), ("SETEX", "h", "10", "v"), ("PSETEX", "z", "10000", "v")):
        pair23.check("HSET", "h", "f", "v")
        pair23.check("ZADD", "z", "1", "m")
        pair23.check(*cmd)
        pair23.check("TYPE", cmd[1])
        pair23.check("GET", cmd[1])


def test_wrong_arity(pair23) -> None:
    run(pair23, """
        GET
        GET a b
        SET k
        SETNX k
        MGET
        MSET
        INCR
        INCR a b
        INCRBY k
        INCRBYFLOAT k
        GETRANGE k 0
        SETRANGE k 0
        APPEND k
        STRLEN
        GETDEL
        GETEX
        GETSET k
    """)


def test_string_commands_in_multi(pair23) -> None:
    """Errors found at run time inside EXEC are reported in place."""
    run(pair23, """
        MULTI
        SET k v
        INCR k
        APPEND k x
        SET k v EX 0
        GET k
        EXEC
    """)

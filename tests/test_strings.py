"""String commands against Valkey, byte for byte, in RESP2 and RESP3.

Every option, combination and error path is sent to both servers and the
raw replies compared. Expiry set by relative times (EX, PX, SETEX) is read
back through TTL with a tolerance: the two servers read their clocks a few
milliseconds apart, so only "has a TTL of about N" can be compared.
"""

from __future__ import annotations

import shlex

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st


def words(line: str) -> list[bytes]:
    r"""Split like a shell; ``\xNN`` escapes give raw bytes."""
    return [w.encode().decode("unicode_escape").encode("latin-1") for w in shlex.split(line)]


def run(pair, script: str) -> None:
    for line in script.strip().splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            pair.check(*words(line))


def ttl_close(pair, key: str, cmd: str = "PTTL", slack: int = 1500) -> None:
    """Both TTLs present and within slack of each other (clocks differ)."""
    v, t = pair.both(cmd, key)
    assert v[:1] == t[:1] == b":"
    vi, ti = int(v[1:]), int(t[1:])
    assert (vi < 0) == (ti < 0)
    assert abs(vi - ti) <= slack, (v, t)


def test_get_set_basic(pair23) -> None:
    run(pair23, """
        GET missing
        SET k v
        GET k
        SET k ""
        GET k
        SET k "\\x00\\xff bin"
        GET k
        SET k v extra
        HSET h f v
        GET h
        SET h v
        TYPE h
    """)


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
        SET k v NX XX
        SET k v XX NX
        SET k v EX 10 PX 100
        SET k v EX 10 KEEPTTL
        SET k v KEEPTTL EX 10
        SET k v EX
        SET k v bogus
        SET k v EX 0
        SET k v EX -1
        SET k v PX 0
        SET k v EXAT 0
        SET k v PXAT -5
        SET k v EX notanumber
        SET k v EX 9223372036854775807
        SET k v PX 9223372036854775807
        SET k v EXAT 9223372036854775807
        SET k v EX 1 EX 2
        SET k v nx
        SET k v ex 100 get
        HSET h f v
        SET h v GET
        SET h v NX GET
        SET h v IFEQ x
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
        SET k z IFEQ
    """)


def test_set_expiry(pair) -> None:
    pair.check("SET", "k", "v", "EX", "100")
    ttl_close(pair, "k")
    pair.check("SET", "k", "v", "KEEPTTL")
    ttl_close(pair, "k")
    pair.check("SET", "k", "v")
    pair.check("TTL", "k")
    pair.check("SET", "k", "v", "PX", "50000")
    ttl_close(pair, "k")
    pair.check("SET", "k", "v", "EXAT", "4000000000")
    pair.check("EXPIRETIME", "k")
    pair.check("SET", "k", "v", "PXAT", "4000000000123")
    pair.check("PEXPIRETIME", "k")
    # An absolute time in the past: the key is gone at once.
    pair.check("SET", "k", "v", "EXAT", "1")
    pair.check("GET", "k")
    pair.check("EXISTS", "k")
    pair.check("SET", "k", "v", "PXAT", "1", "GET")
    pair.check("SETEX", "k", "100", "v")
    ttl_close(pair, "k")
    pair.check("PSETEX", "k", "100000", "v")
    ttl_close(pair, "k")


def test_setnx_setex_psetex(pair23) -> None:
    run(pair23, """
        SETNX k v
        SETNX k w
        GET k
        SETEX k 0 v
        SETEX k -1 v
        SETEX k x v
        SETEX k 9223372036854775807 v
        PSETEX k 0 v
        PSETEX k 9223372036854775807 v
        SETEX k 10 v
        GET k
        HSET h f v
        SETNX h v
        SETEX h 10 v
        TYPE h
    """)


def test_mget_mset_msetnx(pair23) -> None:
    run(pair23, """
        MSET a 1 b 2 c 3
        MGET a b c missing
        MSET a
        MSET a 1 b
        HSET h f v
        MGET a h b
        MSETNX a 9 z 9
        MGET a z
        MSETNX y 1 z 2
        MGET y z
        MSETNX y
        MSETNX q 1 q 2
        GET q
        MSET r 1 r 2
        GET r
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
    """)


def test_getex(pair23) -> None:
    run(pair23, """
        GETEX missing
        GETEX missing EX 10
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
        GETEX k EXAT 4000000000
        EXPIRETIME k
        GETEX k PERSIST
        TTL k
        GETEX k PXAT 1
        EXISTS k
        HSET h f v
        GETEX h
        GETEX h PERSIST
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
        HSET h f v
        APPEND h x
        STRLEN h
    """)


def test_append_keeps_ttl(pair) -> None:
    pair.check("SET", "k", "v", "EX", "100")
    pair.check("APPEND", "k", "w")
    ttl_close(pair, "k")


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
        GETRANGE k x 1
        GETRANGE k 0 x
        GETRANGE missing 0 -1
        SET e ""
        GETRANGE e 0 -1
        SETRANGE k 6 Valkey
        GET k
        SETRANGE k 20 tail
        GET k
        SETRANGE k -1 x
        SETRANGE k x x
        SETRANGE k 536870912 x
        SETRANGE k 536870911 x
        SETRANGE k 2 ""
        SETRANGE new 0 ""
        EXISTS new
        SETRANGE new 3 abc
        GET new
        OBJECT ENCODING new
        SETRANGE new 536870912 ""
        HSET h f v
        GETRANGE h 0 1
        SETRANGE h 0 x
    """)


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
        DECRBY n ""
        SET big 9223372036854775807
        INCR big
        INCRBY big 0
        SET small -9223372036854775808
        DECR small
        DECRBY small 1
        DECRBY n -9223372036854775808
        INCRBY n -9223372036854775808
        SET s abc
        INCR s
        SET s " 1"
        INCR s
        SET s 01
        INCR s
        SET s 1.0
        INCR s
        SET s 12345678901234567890123
        INCR s
        HSET h f v
        INCR h
        DECRBY h 1
    """)


def test_incr_keeps_ttl(pair) -> None:
    pair.check("SET", "n", "1", "EX", "100")
    pair.check("INCR", "n")
    ttl_close(pair, "n")


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
        SET f inf
        INCRBYFLOAT f 1
        SET f abc
        INCRBYFLOAT f 1
        SET z 0
        INCRBYFLOAT z -0
        SET z -0
        INCRBYFLOAT z -0
        INCRBYFLOAT z 0
        HSET h f v
        INCRBYFLOAT h 1
    """)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    st.floats(allow_nan=False, allow_infinity=False, min_value=-1e15, max_value=1e15),
    st.floats(allow_nan=False, allow_infinity=False, min_value=-1e15, max_value=1e15),
)
def test_incrbyfloat_long_double(pair, a: float, b: float) -> None:
    """Sums in 80-bit long double, printed with %.17Lf and stripped."""
    pair.check("SET", "f", repr(a))
    pair.check("INCRBYFLOAT", "f", repr(b))


def test_wrong_arity(pair23) -> None:
    run(pair23, """
        GET
        SET k
        MGET
        INCRBY k
        GETRANGE k 0
    """)

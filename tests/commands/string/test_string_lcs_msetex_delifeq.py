"""LCS, SUBSTR, MSETEX and DELIFEQ against Valkey 9.1.2, byte for byte in
RESP2 and RESP3: replies, every refusal's text, and the keyspace after each
step (a refused request leaves it as it was). LCS is also compared on many
random pairs of strings, every reply form each time."""

from __future__ import annotations

import random
from typing import Any

import pytest
import redis
from helpers.pair import Pair

# -- the keyspace -------------------------------------------------------------------


def snapshot(port: int) -> dict[bytes, Any]:
    """Each key's type, value and whether it has an expire."""
    r = redis.Redis(port=port)
    try:
        out: dict[bytes, Any] = {}
        for k in sorted(r.keys("*")):
            t = r.type(k)
            v = r.get(k) if t == b"string" else r.lrange(k, 0, -1) if t == b"list" else t
            out[k] = (t, v, r.pttl(k) > 0)
        return out
    finally:
        r.close()


def assert_steps(pair: Pair, steps: list[tuple]) -> None:
    """Each step must answer as on Valkey and leave the same keyspace."""
    for step in steps:
        pair.check(*step)
        assert snapshot(pair.t.port) == snapshot(pair.v.port), step


def assert_refusals(pair: Pair, steps: list[tuple]) -> None:
    """Each step is refused with Valkey's text and changes nothing."""
    before_v, before_t = snapshot(pair.v.port), snapshot(pair.t.port)
    assert before_t == before_v
    for step in steps:
        reply = pair.check(*step)
        assert reply.startswith(b"-"), (step, reply)
        assert snapshot(pair.v.port) == before_v, step
        assert snapshot(pair.t.port) == before_t, step


SETUP = [("SET", "a", "ohmytext"), ("SET", "b", "mynewtext"), ("RPUSH", "l", "x"), ("SET", "n", "12345"),
         ("SET", "e", "")]

# -- LCS ----------------------------------------------------------------------------

LCS_STEPS: list[tuple] = [
    ("LCS", "a", "b"), ("LCS", "b", "a"), ("LCS", "a", "b", "LEN"), ("LCS", "a", "b", "IDX"),
    ("LCS", "a", "b", "IDX", "WITHMATCHLEN"), ("LCS", "a", "b", "idx", "minmatchlen", "4", "withmatchlen"),
    ("LCS", "a", "b", "IDX", "MINMATCHLEN", "-4"), ("LCS", "a", "b", "IDX", "MINMATCHLEN", "2", "MINMATCHLEN", "0"),
    ("LCS", "a", "b", "WITHMATCHLEN"), ("LCS", "a", "b", "MINMATCHLEN", "3"), ("LCS", "a", "b", "LEN", "LEN"),
    ("LCS", "a", "b", "LEN", "MINMATCHLEN", "3"), ("LCS", "a", "b", "IDX\0x"),
    ("LCS", "a", "a", "IDX", "WITHMATCHLEN"), ("LCS", "a", "n"), ("LCS", "n", "n", "IDX"),
    ("LCS", "a", "nokey"), ("LCS", "nokey", "a", "IDX"), ("LCS", "nokey", "nokey2", "LEN"),
    ("LCS", "e", "a", "IDX", "WITHMATCHLEN"), ("LCS", "e", "e"),
]

LCS_REFUSALS: list[tuple] = [
    ("LCS", "a", "b", "IDX", "LEN"), ("LCS", "a", "b", "LEN", "IDX"), ("LCS", "a", "b", "foo"),
    ("LCS", "a", "b", "MINMATCHLEN"), ("LCS", "a", "b", "MINMATCHLEN", "x"),
    ("LCS", "a", "b", "MINMATCHLEN", "9223372036854775808"), ("LCS", "a", "l"), ("LCS", "l", "a"),
    ("LCS", "l", "a", "foo"), ("LCS", "l", "nokey", "IDX", "LEN"), ("LCS", "a", "b", "IDX", "LEN", "foo"),
    ("LCS", "a"), ("LCS",),
]


def test_lcs_replies(pair23: Pair) -> None:
    assert_steps(pair23, SETUP + LCS_STEPS)


def test_lcs_refusals(pair23: Pair) -> None:
    assert_steps(pair23, SETUP)
    assert_refusals(pair23, LCS_REFUSALS)


def test_lcs_table_beyond_proto_max_bulk_len(pair: Pair) -> None:
    """Valkey refuses a table (4 bytes a cell) larger than proto-max-bulk-len."""
    pair.check("SET", "x", "a" * 1000)
    pair.check("SET", "y", "b" * 1100)
    for limit in ("1048576", "4408404", "4408403", "536870912"):
        pair.check("CONFIG", "SET", "proto-max-bulk-len", limit)
        pair.check("LCS", "x", "y", "LEN")
        pair.check("LCS", "x", "y")


def _random_text(rng: random.Random) -> bytes:
    alphabet = rng.choice([b"ab", b"abc", b"acgt", bytes(range(256))])
    return bytes(rng.choice(alphabet) for _ in range(rng.choice([0, 1, 3, 10, 40, 150])))


def test_lcs_random_pairs(pair23: Pair) -> None:
    rng = random.Random(1729)
    for _ in range(120):
        x, y = _random_text(rng), _random_text(rng)
        pair23.check("MSET", "x", x, "y", y)
        pair23.check("LCS", "x", "y")
        pair23.check("LCS", "x", "y", "LEN")
        pair23.check("LCS", "x", "y", "IDX", "WITHMATCHLEN")
        pair23.check("LCS", "y", "x", "IDX", "MINMATCHLEN", str(rng.randint(0, 4)))


def test_lcs_long_strings(pair: Pair) -> None:
    """Strings of a few thousand bytes, where a table of Python lists would
    be slow: the same ranges as Valkey."""
    rng = random.Random(7)
    x = bytes(rng.choice(b"acgt") for _ in range(3000))
    y = bytes(rng.choice(b"acgt") for _ in range(2500))
    pair.check("MSET", "x", x, "y", y)
    pair.check("LCS", "x", "y", "LEN")
    pair.check("LCS", "x", "y", "IDX", "MINMATCHLEN", "5", "WITHMATCHLEN")


# -- SUBSTR ---------------------------------------------------------------------------

SUBSTR_STEPS: list[tuple] = [
    ("SUBSTR", "a", "0", "3"), ("SUBSTR", "a", "-3", "-1"), ("SUBSTR", "a", "5", "1"), ("SUBSTR", "a", "0", "100"),
    ("SUBSTR", "a", "-100", "-50"), ("SUBSTR", "n", "1", "2"), ("SUBSTR", "nokey", "0", "1"),
    ("SUBSTR", "e", "0", "-1"),
]
SUBSTR_REFUSALS: list[tuple] = [
    ("SUBSTR", "a", "x", "1"), ("SUBSTR", "a", "0", "1.5"), ("SUBSTR", "l", "0", "1"), ("SUBSTR", "a", "0"),
    ("SUBSTR", "a", "0", "1", "2"),
]


def test_substr(pair23: Pair) -> None:
    assert_steps(pair23, SETUP + SUBSTR_STEPS)
    assert_refusals(pair23, SUBSTR_REFUSALS)


# -- MSETEX -----------------------------------------------------------------------------

MSETEX_STEPS: list[tuple] = [
    ("MSETEX", "2", "k1", "1", "k2", "2"), ("MSETEX", "2", "k1", "1", "k2", "2", "EX", "100"),
    ("MSETEX", "1", "k1", "3", "KEEPTTL"), ("MSETEX", "1", "k1", "4"),
    ("MSETEX", "1", "k1", "4", "NX"), ("MSETEX", "2", "k1", "4", "new", "1", "NX"),
    ("MSETEX", "2", "new", "1", "new2", "1", "NX"), ("MSETEX", "2", "k1", "5", "k3", "1", "XX"),
    ("MSETEX", "2", "k1", "5", "k2", "6", "XX", "PX", "100000"), ("MSETEX", "1", "k1", "5", "xx", "xx", "nx"),
    ("MSETEX", "1", "k1", "7", "ex", "10", "ex", "20"), ("MSETEX", "1", "k1", "7", "nx", "nx"),
    ("MSETEX", "2", "d", "1", "d", "2"), ("MSETEX", "2", "ex", "1", "ex", "2", "ex", "5"),
    ("MSETEX", "1", "l", "now a string"), ("MSETEX", "2", "exat", "0", "pxat", "1", "EXAT", "99999999999"),
    ("MSETEX", "1", "p", "1", "pxat", "99999999999999"), ("MSETEX", "1", "past", "1", "PXAT", "1"),
    ("EXISTS", "past"), ("MSETEX", "1", "past", "1", "EXAT", "1"), ("GET", "past"),
    ("MSETEX", "1", "k1", "8", "Ex\0", "10"), ("MSETEX", "1", "k1", "v" * 200, "keepttl"),
]
MSETEX_REFUSALS: list[tuple] = [
    ("MSETEX", "0", "k1", "1"), ("MSETEX", "-1", "k1", "1"), ("MSETEX", "x", "k1", "1"), ("MSETEX", "01", "k1", "1"),
    ("MSETEX", "+1", "k1", "1"), ("MSETEX", "2147483648", "k1", "1"), ("MSETEX", "2147483647", "k1", "1"),
    ("MSETEX", "2", "k1", "1"), ("MSETEX", "1", "k1", "1", "k2"), ("MSETEX", "1", "k1", "1", "EX"),
    ("MSETEX", "1", "k1", "1", "EX", "0"), ("MSETEX", "1", "k1", "1", "EX", "-1"),
    ("MSETEX", "1", "k1", "1", "EX", "x"),
    ("MSETEX", "1", "k1", "1", "EX", "10", "PX", "10"), ("MSETEX", "1", "k1", "1", "NX", "XX"),
    ("MSETEX", "1", "k1", "1", "XX", "NX"), ("MSETEX", "1", "k1", "1", "KEEPTTL", "EX", "10"),
    ("MSETEX", "1", "k1", "1", "EX", "10", "KEEPTTL"), ("MSETEX", "1", "k1", "1", "GET"),
    ("MSETEX", "1", "k1", "1", "PERSIST"), ("MSETEX", "1", "k1", "1", "EX", "9223372036854775807"),
    ("MSETEX", "1", "k1", "1", "PX", "9223372036854775807"), ("MSETEX", "1", "k1", "1", "EXAT", "9223372036854775807"),
    ("MSETEX", "1", "k1", "1", "EX", "0", "NX", "XX"), ("MSETEX", "1", "k1", "1", "NX", "XX", "EX", "0"),
    ("MSETEX", "1", "k1"), ("MSETEX", "1"), ("MSETEX",),
]


def test_msetex(pair23: Pair) -> None:
    assert_steps(pair23, SETUP + MSETEX_STEPS)
    assert_refusals(pair23, MSETEX_REFUSALS)


def test_msetex_keeps_or_drops_the_expire(pair: Pair) -> None:
    pair.check("SET", "k", "v", "EX", "100")
    pair.check("MSETEX", "1", "k", "w", "KEEPTTL")
    v, t = redis.Redis(port=pair.v.port), redis.Redis(port=pair.t.port)
    assert 0 < t.ttl("k") <= 100 and 0 < v.ttl("k") <= 100
    pair.check("MSETEX", "1", "k", "w")
    pair.check("TTL", "k")
    pair.check("MSETEX", "2", "k", "1", "j", "2", "EXAT", "4000000000")
    pair.check("EXPIRETIME", "k")
    pair.check("EXPIRETIME", "j")
    v.close()
    t.close()


# -- DELIFEQ ---------------------------------------------------------------------------


DELIFEQ_STEPS: list[tuple] = [
    ("DELIFEQ", "a", "nope"), ("DELIFEQ", "a", "ohmytex"), ("DELIFEQ", "a", "ohmytext"), ("DELIFEQ", "a", "ohmytext"),
    ("DELIFEQ", "nokey", "x"), ("DELIFEQ", "n", "12345"), ("DELIFEQ", "e", ""), ("EXISTS", "e"),
]
DELIFEQ_REFUSALS: list[tuple] = [("DELIFEQ", "l", "x"), ("DELIFEQ", "b"), ("DELIFEQ", "b", "x", "y"), ("DELIFEQ",)]


def test_delifeq(pair23: Pair) -> None:
    assert_steps(pair23, SETUP + DELIFEQ_STEPS)
    assert_refusals(pair23, DELIFEQ_REFUSALS)


# -- WATCH --------------------------------------------------------------------------------


@pytest.mark.parametrize("write, touches", [
    (("MSETEX", "1", "w", "v2"), True), (("MSETEX", "1", "w", "v2", "NX"), False),
    (("MSETEX", "2", "w", "v2", "other", "1", "XX"), False), (("MSETEX", "2", "other", "1", "w", "v", "EX", "5"), True),
    (("DELIFEQ", "w", "v"), True), (("DELIFEQ", "w", "x"), False),
    (("LCS", "w", "w"), False), (("SUBSTR", "w", "0", "1"), False),
])
def test_watch(pair: Pair, write: tuple, touches: bool) -> None:
    """A write that changed the watched key aborts the transaction, one that
    did not leaves it to run, on both servers alike."""
    pair.check("SET", "w", "v")
    other_v, other_t = redis.Redis(port=pair.v.port), redis.Redis(port=pair.t.port)
    try:
        pair.check("WATCH", "w")
        assert other_v.execute_command(*write) == other_t.execute_command(*write)
        pair.check("MULTI")
        pair.check("GET", "w")
        reply = pair.check("EXEC")
        assert (reply in (b"*-1\r\n", b"_\r\n")) == touches
    finally:
        other_v.close()
        other_t.close()


# -- keys and encodings -----------------------------------------------------------------

GETKEYS: list[tuple] = [
    ("COMMAND", "GETKEYS", "MSETEX", "2", "a", "1", "b", "2", "EX", "10"),
    ("COMMAND", "GETKEYS", "MSETEX", "1", "a", "1"), ("COMMAND", "GETKEYS", "MSETEX", "2", "a", "1", "b"),
    ("COMMAND", "GETKEYS", "MSETEX", "3", "a", "1", "b", "2"), ("COMMAND", "GETKEYS", "MSETEX", "0", "a", "1"),
    ("COMMAND", "GETKEYS", "MSETEX", "x", "a", "1"), ("COMMAND", "GETKEYSANDFLAGS", "MSETEX", "2", "a", "1", "b", "2"),
    ("COMMAND", "GETKEYSANDFLAGS", "DELIFEQ", "a", "b"), ("COMMAND", "GETKEYSANDFLAGS", "LCS", "a", "b", "IDX"),
    ("COMMAND", "GETKEYS", "SUBSTR", "a", "0", "1"), ("COMMAND", "GETKEYS", "ZUNIONSTORE", "d", "2", "a", "b"),
    ("COMMAND", "GETKEYS", "ZUNIONSTORE", "d", "3", "a", "b"),
    ("COMMAND", "INFO", "LCS", "SUBSTR", "MSETEX", "DELIFEQ"), ("COMMAND", "DOCS", "MSETEX", "DELIFEQ"),
]


def test_keys_of_the_new_commands(pair23: Pair) -> None:
    """MSETEX's keys are every other argument after numkeys (its key spec
    steps by two)."""
    for step in GETKEYS:
        pair23.check(*step)


LONG_KEY = "k" * 110
ENCODINGS: list[tuple] = [
    ("MSETEX", "1", LONG_KEY, "v", "EX", "100"), ("OBJECT", "ENCODING", LONG_KEY),
    ("MSETEX", "1", "x", "v" * 110, "EX", "100"), ("OBJECT", "ENCODING", "x"),
    ("MSETEX", "1", "x", "v" * 106, "KEEPTTL"), ("OBJECT", "ENCODING", "x"),
    ("MSETEX", "1", "x", "v" * 104, "EX", "100"), ("OBJECT", "ENCODING", "x"),
    ("MSETEX", "1", "y", "v" * 104, "EX", "100"), ("OBJECT", "ENCODING", "y"),
    ("MSETEX", "1", "y", "v" * 112), ("OBJECT", "ENCODING", "y"),
    ("MSETEX", "2", "n", "123", "m", "12.5", "EX", "100"), ("OBJECT", "ENCODING", "n"), ("OBJECT", "ENCODING", "m"),
    ("MSETEX", "1", "n", "123", "KEEPTTL"), ("OBJECT", "ENCODING", "n"), ("LCS", "n", "m"), ("OBJECT", "ENCODING", "n"),
]


def test_msetex_encodings(pair: Pair) -> None:
    assert_steps(pair, ENCODINGS)

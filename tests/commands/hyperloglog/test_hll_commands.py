"""HyperLogLog commands against Valkey 9.1.2, byte for byte.

Every step is sent to both servers and must get the same reply; after each
step the HLL values themselves (GET) must be the same bytes, so the sparse
opcodes, the dense registers, the header's cached cardinality and its stale
bit all follow Valkey's. Refusals are checked with their exact text and the
keyspace compared with Valkey's (unchanged where Valkey leaves it so).
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from typing import Any

import pytest
import redis
from helpers.resp_wire import Wire

HDR = b"HYLL"


@pytest.fixture
def hpair(pair23: Any) -> Iterator[Any]:
    """pair23, with hll-sparse-max-bytes back at its default afterwards."""
    yield pair23
    pair23.both("CONFIG", "SET", "hll-sparse-max-bytes", "3000")


def same_values(p: Any, *keys: str) -> None:
    for k in keys:
        p.check("GET", k)
        p.check("TYPE", k)


def steps(p: Any, keys: tuple[str, ...], *commands: tuple) -> None:
    """Each command on both servers, then the values of keys compared."""
    for cmd in commands:
        p.check(*cmd)
        same_values(p, *keys)


def elements(seed: int, n: int) -> list[bytes]:
    rng = random.Random(seed)
    return [str(rng.random()).encode()[: rng.randint(0, 19)] for _ in range(n)]


def test_pfadd_pfcount_and_the_cached_cardinality(hpair: Any) -> None:
    steps(hpair, ("h",),
          ("PFADD", "h"),
          ("PFCOUNT", "h"),
          ("PFADD", "h", "a", "b", "c"),
          ("PFADD", "h", "a", "b", "c"),
          ("PFADD", "h", ""),
          ("PFCOUNT", "h"),
          ("PFCOUNT", "h"),
          ("PFADD", "h", "a"),
          ("PFADD", "h", "1", "2", "3", "x" * 100, "\x00\xff"),
          ("PFCOUNT", "h"),
          ("GETRANGE", "h", "15", "15"),
          ("PFCOUNT", "missing"),
          ("OBJECT", "ENCODING", "h"))


def test_values_set_from_outside_are_edited_as_valkey_does(hpair: Any) -> None:
    """An HLL copied with GET/SET is embstr or raw; PFCOUNT and PFADD edit a
    raw copy (OBJECT ENCODING says so)."""
    hpair.both("PFADD", "src", *elements(1, 20))
    v = hpair.v.call("GET", "src")
    body = v.split(b"\r\n", 1)[1][:-2]
    hpair.t.call("SET", "copy", body)
    hpair.v.call("SET", "copy", body)
    steps(hpair, ("copy",),
          ("OBJECT", "ENCODING", "copy"),
          ("PFCOUNT", "copy"),
          ("OBJECT", "ENCODING", "copy"),
          ("PFCOUNT", "copy"),
          ("PFADD", "copy", *elements(2, 5)),
          ("PFCOUNT", "copy"))


@pytest.mark.parametrize("max_bytes", [30, 100, 500, 3000])
def test_sparse_to_dense_at_hll_sparse_max_bytes(hpair: Any, max_bytes: int) -> None:
    hpair.check("CONFIG", "SET", "hll-sparse-max-bytes", str(max_bytes))
    rng = random.Random(max_bytes)
    seen_dense = False
    for i in range(60):
        batch = elements(rng.randrange(1 << 30), rng.choice([1, 3, 10, 40]))
        hpair.check("PFADD", "h", *batch)
        same_values(hpair, "h")
        enc = hpair.check("PFDEBUG", "ENCODING", "h")
        if i % 7 == 0:
            hpair.check("PFCOUNT", "h")
        if enc == b"+dense\r\n":
            seen_dense = True
            break
        hpair.check("PFDEBUG", "DECODE", "h")
    assert seen_dense or max_bytes == 3000
    hpair.check("PFCOUNT", "h")
    same_values(hpair, "h")


def test_lowering_the_limit_promotes_on_the_next_growth(hpair: Any) -> None:
    steps(hpair, ("h",),
          ("PFADD", "h", *"abcdedghijk"),
          ("PFDEBUG", "ENCODING", "h"),
          ("CONFIG", "SET", "hll-sparse-max-bytes", "30"),
          ("PFADD", "h", "a"),
          ("PFDEBUG", "ENCODING", "h"),
          ("PFADD", "h", "new_element"),
          ("PFDEBUG", "ENCODING", "h"),
          ("PFCOUNT", "h"))


def test_one_large_pfadd_crosses_to_dense_mid_call(pair: Any) -> None:
    """Thousands of elements in one call: the value goes sparse, then
    dense part way through, and ends as Valkey's."""
    els = elements(7, 6000)
    steps(pair, ("h", "small"),
          ("PFADD", "h", *els[:1500]),
          ("PFDEBUG", "ENCODING", "h"),
          ("PFADD", "h", *els),
          ("PFDEBUG", "ENCODING", "h"),
          ("PFCOUNT", "h"),
          ("PFADD", "small", *els[:100]),
          ("PFCOUNT", "small"))


def test_pfcount_of_several_keys_merges_without_writing(hpair: Any) -> None:
    hpair.check("CONFIG", "SET", "hll-sparse-max-bytes", "3000")
    steps(hpair, ("a", "b", "c", "d"),
          ("PFADD", "a", *elements(1, 50)),
          ("PFADD", "b", *elements(2, 4000)),
          ("PFADD", "c", *elements(3, 300)),
          ("PFCOUNT", "a", "b"),
          ("PFCOUNT", "a", "c", "missing"),
          ("PFCOUNT", "missing", "other"),
          ("PFCOUNT", "a", "b", "c", "a"),
          ("PFADD", "d"),
          ("PFCOUNT", "d", "d"),
          ("PFCOUNT", "a"))


def test_pfmerge_sparse_dense_and_existing_destinations(hpair: Any) -> None:
    steps(hpair, ("s1", "s2", "big", "dst", "dst2", "dst3", "empty"),
          ("PFADD", "s1", *elements(11, 40)),
          ("PFADD", "s2", *elements(12, 200)),
          ("PFADD", "big", *elements(13, 5000)),
          ("PFMERGE", "dst", "s1", "s2"),
          ("PFDEBUG", "ENCODING", "dst"),
          ("PFMERGE", "dst", "s1"),
          ("PFCOUNT", "dst"),
          ("PFMERGE", "dst", "big"),
          ("PFDEBUG", "ENCODING", "dst"),
          ("PFMERGE", "dst2", "nothing", "nothing2"),
          ("PFMERGE", "empty"),
          ("PFADD", "dst3", "a", "b"),
          ("PFCOUNT", "dst3"),
          ("PFMERGE", "dst3"),
          ("PFCOUNT", "dst3"),
          ("PFMERGE", "s1", "s2", "s1"),
          ("PFCOUNT", "s1"))


def test_pfmerge_of_sparse_sources_into_a_small_limit(hpair: Any) -> None:
    """The merged registers go into a sparse destination one by one and
    promote it when it outgrows hll-sparse-max-bytes."""
    hpair.check("CONFIG", "SET", "hll-sparse-max-bytes", "3000")
    hpair.check("PFADD", "a", *elements(21, 300))
    hpair.check("PFADD", "b", *elements(22, 300))
    hpair.check("CONFIG", "SET", "hll-sparse-max-bytes", "400")
    steps(hpair, ("a", "b", "m"),
          ("PFMERGE", "m", "a"),
          ("PFDEBUG", "ENCODING", "m"),
          ("PFMERGE", "m", "b"),
          ("PFDEBUG", "ENCODING", "m"),
          ("PFCOUNT", "m"))


def test_pfdebug(hpair: Any) -> None:
    steps(hpair, ("h", "d"),
          ("PFADD", "h", *elements(31, 30)),
          ("PFDEBUG", "DECODE", "h"),
          ("PFDEBUG", "decode", "h"),
          ("PFDEBUG", "ENCODING", "h"),
          ("PFDEBUG", "GETREG", "h"),
          ("PFDEBUG", "ENCODING", "h"),
          ("PFDEBUG", "DECODE", "h"),
          ("PFADD", "d", "x"),
          ("PFDEBUG", "TODENSE", "d"),
          ("PFDEBUG", "TODENSE", "d"),
          ("PFDEBUG", "getreg\x00junk", "d"),
          ("PFDEBUG", "nope", "d"),
          ("PFDEBUG", "no\r\npe\x00x", "d"),
          ("PFDEBUG", "GETREG", "missing"),
          ("PFDEBUG", "nope", "missing"),
          ("PFDEBUG", "GETREG"),
          ("PFDEBUG", "GETREG", "d", "x"),
          ("PFSELFTEST", "x"))


def test_pfselftest(pair: Any) -> None:
    pair.check("PFSELFTEST")


def test_refusals_with_valkey_text(hpair: Any) -> None:
    p = hpair
    p.check("RPUSH", "list", "a")
    p.check("SET", "str", "not an hll at all")
    p.check("SET", "short", "HYLL")
    p.check("PFADD", "ok", "a")
    body = p.v.call("GET", "ok").split(b"\r\n", 1)[1][:-2]
    p.check("SET", "badmagic", b"HYLX" + body[4:])
    p.check("SET", "badenc", body[:4] + b"\x02" + body[5:])
    p.check("SET", "shortdense", body[:4] + b"\x00" + body[5:])
    keys = ("list", "str", "short", "ok", "badmagic", "badenc", "shortdense")
    for cmd in (("PFADD", "{k}", "x"), ("PFCOUNT", "{k}"), ("PFCOUNT", "ok", "{k}"), ("PFMERGE", "ok", "{k}"),
                ("PFMERGE", "{k}", "ok"), ("PFDEBUG", "GETREG", "{k}"), ("PFDEBUG", "nope", "{k}")):
        for k in keys[:3] + keys[4:]:
            r = p.check(*(a.replace("{k}", k) for a in cmd))
            assert r.startswith(b"-WRONGTYPE"), (cmd, k, r)
            same_values(p, *keys)
    p.check("PFADD")
    p.check("PFCOUNT")
    p.check("PFMERGE")
    p.check("PFDEBUG", "DECODE", "missing")
    p.check("EXISTS", "missing")


def corrupt_sparse(p: Any) -> dict[str, bytes]:
    """Sparse values whose opcodes do not cover 16384 registers, set alike
    on both servers."""
    p.check("PFADD", "base", *elements(41, 25))
    body = p.v.call("GET", "base").split(b"\r\n", 1)[1][:-2]
    made = {
        "tail": body + b"hello",          # opcodes past the last register
        "short": body[:-2],               # the last XZERO gone: registers missing
        "val_over": body + b"\x83",       # a VAL run past the end
        "empty": body[:16],               # no opcodes at all
        "odd_xzero": body + b"\x40",      # an XZERO cut short
    }
    for k, v in made.items():
        p.check("SET", k, v)
    return made


def test_corrupted_sparse_values_get_invalidobj(hpair: Any) -> None:
    p = hpair
    made = corrupt_sparse(p)
    keys = (*made, "base")
    for k in made:
        for cmd in (("PFCOUNT", k), ("PFCOUNT", "base", k), ("PFMERGE", "base", k), ("PFMERGE", k),
                    ("PFDEBUG", "DECODE", k), ("PFDEBUG", "TODENSE", k), ("PFDEBUG", "GETREG", k),
                    ("PFADD", k, *elements(42, 30)), ("PFCOUNT", k)):
            p.check(*cmd)
            same_values(p, *keys)


def test_fuzzed_corruption_answers_as_valkey(pair: Any) -> None:
    """Random bytes written over HLL values (Valkey's fuzz test, with the
    replies and the values compared instead of only surviving)."""
    rng = random.Random(5)
    for _ in range(60):
        pair.check("DEL", "h")
        pair.check("PFADD", "h", *elements(rng.randrange(1 << 30), rng.choice([5, 50, 300, 3000])))
        n = int(pair.check("STRLEN", "h")[1:-2])
        for _ in range(rng.randint(1, 5)):
            pair.check("SETRANGE", "h", str(rng.randrange(n)), bytes([rng.randrange(256)]))
        pair.check("PFCOUNT", "h")
        pair.check("PFCOUNT", "h", "h")
        pair.check("PFADD", "h", *elements(rng.randrange(1 << 30), 5))
        same_values(pair, "h")


def hll_value(header_card: bytes, regs: list[int]) -> bytes:
    n = 0
    for i, r in enumerate(regs):
        n |= r << (6 * i)
    return HDR + b"\x00\x00\x00\x00" + header_card + n.to_bytes(12288, "little")


def test_crafted_dense_registers_past_the_estimator(hpair: Any) -> None:
    """Registers no hash can produce: an estimate past 2**63 is answered
    and cached as Valkey's llroundl leaves it."""
    stale = b"\x00" * 7 + b"\x80"
    for name, regs in (("r63", [63] * 16384), ("r51", [51] * 16384), ("r50", [50] * 16384),
                       ("mixed", [i % 64 for i in range(16384)]), ("one", [1] * 16384)):
        hpair.check("SET", name, hll_value(stale, regs))
        steps(hpair, (name,), ("PFCOUNT", name), ("PFCOUNT", name, "one"), ("PFCOUNT", name))


def test_values_cross_between_the_servers(valkey_server: Any, trafikey_server: Any) -> None:
    """An HLL built on one server counts the same on the other, and edits
    on either side continue the other's bytes."""
    v = redis.Redis(port=valkey_server.port)
    t = redis.Redis(port=trafikey_server.port)
    v.flushall()
    t.flushall()
    try:
        for n, mb in ((10, 3000), (800, 3000), (20000, 3000), (300, 100)):
            v.config_set("hll-sparse-max-bytes", mb)
            t.config_set("hll-sparse-max-bytes", mb)
            els = elements(n, n)
            v.pfadd("made_on_valkey", *els)
            t.pfadd("made_here", *els)
            t.set("from_valkey", v.get("made_on_valkey"))
            v.set("from_here", t.get("made_here"))
            assert v.get("made_on_valkey") == t.get("made_here")
            assert t.pfcount("from_valkey") == v.pfcount("from_here") == v.pfcount("made_on_valkey")
            more = elements(n + 1, 50)
            t.pfadd("from_valkey", *more)
            v.pfadd("from_here", *more)
            assert t.get("from_valkey") == v.get("from_here")
            for r in (v, t):
                r.delete("made_on_valkey", "made_here", "from_valkey", "from_here")
    finally:
        for r in (v, t):
            r.config_set("hll-sparse-max-bytes", 3000)
            r.close()


def test_sparse_stress_dense_and_sparse_agree(pair: Any) -> None:
    """Valkey's sparse stress test, compared: the same elements into a
    sparse and a dense HLL count the same, on both servers."""
    rng = random.Random(9)
    for _ in range(40):
        pair.check("DEL", "h1", "h2")
        els = elements(rng.randrange(1 << 30), rng.randrange(100))
        pair.check("PFADD", "h2")
        pair.check("PFDEBUG", "TODENSE", "h2")
        pair.check("PFADD", "h1", *els)
        pair.check("PFADD", "h2", *els)
        assert pair.check("PFCOUNT", "h1") == pair.check("PFCOUNT", "h2")
        same_values(pair, "h1", "h2")


def test_watch_sees_what_valkey_signals(pair: Any) -> None:
    """PFCOUNT that refreshes the cache is a change to a watcher; one that
    reads the cache is not, nor PFDEBUG TODENSE (Valkey signals nothing)."""
    others = (Wire(pair.v.port), Wire(pair.t.port))
    try:
        for setup, cmd in (
            (("PFADD", "h", "a", "b"), ("PFCOUNT", "h")),
            (("PFCOUNT", "h"), ("PFCOUNT", "h")),
            (("PFADD", "h", "zz"), ("PFDEBUG", "TODENSE", "h")),
            (("PFADD", "h", "a"), ("PFADD", "h", "a")),
            (("PFADD", "h", "new1"), ("PFMERGE", "h")),
            (("PFADD", "g", "x"), ("PFCOUNT", "h", "g")),
        ):
            pair.check(*setup)
            pair.check("WATCH", "h")
            for o in others:
                o.call(*cmd)
            pair.check("MULTI")
            pair.check("PING")
            pair.check("EXEC")
    finally:
        for o in others:
            o.close()

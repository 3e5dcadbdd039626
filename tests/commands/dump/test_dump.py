"""DUMP and RESTORE against Valkey 9.1.2, byte for byte in RESP2 and RESP3.

A DUMP payload is the value's RDB type byte and encoding, the RDB version
(80) and a CRC-64: for every encoding Valkey writes deterministically
(strings in all their forms, LZF-compressed ones included, listpacks of
hashes, sorted sets, lists and sets, intsets, quicklists built by pushes,
skiplists, streams) the payloads are the same bytes. A payload from either
server restores on the other to the same value and encoding (hashtable
hashes and sets, whose order is Valkey's hash order, are checked this way
only). Every refusal has Valkey's text and leaves the keyspace as it was.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import redis
from helpers.pair import Pair, fresh
from helpers.servers import Proc, own_pair

from trafikey_server.util.crc64 import crc64

# (name, commands building the key "k", whether Valkey's bytes are deterministic)
_ALNUM = "abcdefghijklmnopqrstuvwxyz0123456789"
CASES: list[tuple[str, list[tuple], bool]] = [
    ("str-short", [("SET", "k", "hello")], True),
    ("str-int8", [("SET", "k", "-12")], True),
    ("str-int16", [("SET", "k", "3000")], True),
    ("str-int32", [("SET", "k", "-2000000000")], True),
    ("str-int64", [("SET", "k", "12345678901")], True),
    ("str-not-canonical", [("SET", "k", "0012")], True),
    ("str-lzf", [("SET", "k", "a" * 21)], True),
    ("str-lzf-text", [("SET", "k", "the quick brown fox jumps over the lazy dog " * 40)], True),
    ("str-incompressible", [("SET", "k", _ALNUM)], True),
    ("str-big", [("SET", "k", "".join(_ALNUM[(i * 7 + i // 13) % 36] for i in range(20000)))], True),
    ("str-append", [("SET", "k", "x"), ("APPEND", "k", "yz" * 20)], True),
    ("hash-listpack", [("HSET", "k", "a", "1", "b", "xyz", "c", "-70000", "d", "x" * 30, "e", "99999999999")], True),
    ("hash-hashtable", [("HSET", "k", *[f"f{i}" if j == 0 else f"v{i}" for i in range(200) for j in (0, 1)])], False),
    ("hash-big-value", [("HSET", "k", "f", "v" * 100)], False),
    ("zset-listpack", [("ZADD", "k", "1", "a", "2.5", "b", "-0.1", "c", "1e20", "d", "3.14159", "e",
                        "inf", "f", "-inf", "g", "0", "h", "-0", "i", "123456789012", "j")], True),
    ("zset-skiplist", [("ZADD", "k", *[str(x) for i in range(200) for x in (i * 1.5, f"m{i}")])], True),
    ("list-listpack", [("RPUSH", "k", "a", "1", "-5", "b", "y" * 40, "4096")], True),
    ("list-quicklist", [("RPUSH", "k", *[f"elem{i}" for i in range(1000)]),
                        ("LPUSH", "k", *[f"h{i}" for i in range(300)])], True),
    ("list-plain-node", [("RPUSH", "k", "a", "z" * 10000, "b")], True),
    ("list-middle-write", [("RPUSH", "k", *[f"elem{i}" for i in range(1000)]),
                           ("LINSERT", "k", "BEFORE", "elem500", "mid")], False),
    ("set-intset16", [("SADD", "k", "1", "-2", "300")], True),
    ("set-intset32", [("SADD", "k", "1", "70000")], True),
    ("set-intset64", [("SADD", "k", "1", "-5000000000")], True),
    ("set-intset-many", [("SADD", "k", *range(300))], True),
    ("set-listpack", [("SADD", "k", "a", "1", "-300", "b" * 30)], True),
    ("set-hashtable", [("SADD", "k", *[f"{i}x" for i in range(200)])], False),
    ("stream", [("XADD", "k", "1-1", "f", "v"), ("XADD", "k", "2-1", "f", "w", "g", "1"),
                ("XADD", "k", "2-2", "f", "x"), ("XDEL", "k", "2-1"), ("XGROUP", "CREATE", "k", "grp", "0")], True),
    # Delivery and seen times are the servers' clocks: same bytes only by chance.
    ("stream-pending", [("XADD", "k", "1-1", "f", "v"), ("XADD", "k", "2-1", "f", "w", "g", "1"),
                        ("XGROUP", "CREATE", "k", "grp", "0"),
                        ("XREADGROUP", "GROUP", "grp", "alice", "COUNT", "1", "STREAMS", "k", ">")], False),
]
IDS = [c[0] for c in CASES]


def _debug_pair() -> Iterator[tuple[Proc, Proc]]:
    debug = ("--enable-debug-command", "yes")
    with own_pair(debug, debug) as servers:
        yield servers


debug_pair = pytest.fixture(scope="module")(_debug_pair)


class Two(Pair):
    def __init__(self, servers: tuple[Proc, Proc], proto: int) -> None:
        self.ports = (servers[0].port, servers[1].port)
        super().__init__(fresh(servers[0].port, proto), fresh(servers[1].port, proto))


@pytest.fixture(params=[2, 3], ids=["resp2", "resp3"])
def two(request: pytest.FixtureRequest, debug_pair: tuple[Proc, Proc]) -> Iterator[Two]:
    p = Two(debug_pair, request.param)
    yield p
    p.close()


def _content(port: int, key: str) -> object:
    """A key's value read back with the type's own commands (order-free
    for hashes and sets)."""
    r = redis.Redis(port=port)
    try:
        kind = r.type(key)
        if kind == b"string":
            return r.get(key)
        if kind == b"hash":
            return r.hgetall(key)
        if kind == b"zset":
            return r.zrange(key, 0, -1, withscores=True)
        if kind == b"list":
            return r.lrange(key, 0, -1)
        if kind == b"set":
            return r.smembers(key)
        if kind == b"stream":
            return r.xrange(key), r.xinfo_stream(key, full=True)["groups"]
        return kind
    finally:
        r.close()


def _bulk(reply: bytes) -> bytes:
    head, _, rest = reply.partition(b"\r\n")
    assert head.startswith(b"$"), reply
    return rest[:int(head[1:])]


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_dump_and_cross_restore(two: Two, case: tuple[str, list[tuple], bool]) -> None:
    _, build, same_bytes = case
    for cmd in build:
        two.v.call(*cmd)
        two.t.call(*cmd)
    two.check("OBJECT", "ENCODING", "k")
    dv, dt = two.v.call("DUMP", "k"), two.t.call("DUMP", "k")
    if same_bytes:
        assert dt == dv
    pv, pt = _bulk(dv), _bulk(dt)
    assert pt[-10:-8] == pv[-10:-8] == b"\x50\x00"
    assert int.from_bytes(pt[-8:], "little") == crc64(pt[:-8])
    # Each server restores the other's payload (and its own) to the same value.
    for name, payload in (("from_v", pv), ("from_t", pt)):
        two.check("RESTORE", name, "0", payload)
        two.check("OBJECT", "ENCODING", name)
        two.check("TYPE", name)
        two.check("PTTL", name)
    # A restored value is the value its payload came from, on either server.
    for name, source in (("from_v", two.ports[0]), ("from_t", two.ports[1])):
        want = _content(source, "k")
        for port in two.ports:
            assert _content(port, name) == want, (port, name)
    if same_bytes:
        assert _content(two.ports[0], "k") == _content(two.ports[1], "k")
    if same_bytes:
        two.check("DUMP", "from_v")
        two.check("DUMP", "from_t")


def test_dump_missing_and_wrong_arity(two: Two) -> None:
    two.check("DUMP", "nokey")
    two.check("DUMP")
    two.check("DUMP", "a", "b")
    two.check("RESTORE", "k", "0")


def _payload(body: bytes, version: int = 80, good_crc: bool = True) -> bytes:
    b = body + version.to_bytes(2, "little")
    crc = crc64(b) ^ (0 if good_crc else 1)
    return b + crc.to_bytes(8, "little")


def test_restore_refusals_in_valkeys_order(two: Two) -> None:
    good = _payload(b"\x00\x03abc")
    two.check("SET", "busy", "old")
    two.check("SET", "busy2", "old", "EX", "100")
    refusals = [
        ("RESTORE", "k", "0", good, "BOGUS"),
        ("RESTORE", "k", "0", good, "IDLETIME"),
        ("RESTORE", "k", "0", good, "IDLETIME", "x"),
        ("RESTORE", "k", "0", good, "IDLETIME", "-1"),
        ("RESTORE", "k", "0", good, "FREQ", "256"),
        ("RESTORE", "k", "0", good, "FREQ", "-1"),
        ("RESTORE", "k", "0", good, "FREQ", "1.5"),
        ("RESTORE", "k", "0", good, "IDLETIME", "1", "FREQ", "1"),
        ("RESTORE", "k", "0", good, "FREQ", "1", "IDLETIME", "1"),
        ("RESTORE", "k", "0", good, "REPLACE", "IDLETIME", "-1"),
        ("RESTORE", "busy", "0", good),
        ("RESTORE", "busy", "x", b"junk"),
        ("RESTORE", "busy", "0", good, "IDLETIME", "-5"),
        ("RESTORE", "k", "x", good),
        ("RESTORE", "k", "-1", good),
        ("RESTORE", "k", "-1", b"junk"),
        ("RESTORE", "k", "0", b"junk"),
        ("RESTORE", "k", "0", b""),
        ("RESTORE", "k", "0", _payload(b"\x00\x03abc", good_crc=False)),
        ("RESTORE", "k", "0", _payload(b"\x00\x03abc", version=81)),
        ("RESTORE", "k", "0", _payload(b"\x00\x03abc", version=12)),
        ("RESTORE", "k", "0", _payload(b"\x00\x03abc", version=79)),
        ("RESTORE", "k", "0", _payload(b"\x63\x03abc")),
        ("RESTORE", "k", "0", _payload(b"\x00\x40")),
        ("RESTORE", "k", "0", _payload(b"\x04\x05\x01a")),
        ("RESTORE", "k", "0", _payload(b"\x10\x03abc")),
        ("RESTORE", "busy", "0", _payload(b"\x63"), "REPLACE"),
        ("RESTORE", "busy2", "0", _payload(b"\x10\x03abc"), "REPLACE"),
    ]
    for cmd in refusals:
        reply = two.check(*cmd)
        assert reply.startswith(b"-"), (cmd, reply)
    two.check("DBSIZE")
    two.check("GET", "busy")
    two.check("TTL", "busy2")
    two.check("EXISTS", "k")
    # Accepted: older versions, a value reading into its own footer, options in any case.
    for cmd in [
        ("RESTORE", "k9", "0", _payload(b"\x00\x03abc", version=9)),
        ("RESTORE", "k11", "0", _payload(b"\x00\x03abc", version=11)),
        ("RESTORE", "kfoot", "0", _payload(b"\x00\x05abc")),
        ("RESTORE", "busy", "0", good, "replace", "IdleTime", "10"),
        ("RESTORE", "kf", "0", good, "FREQ", "255", "FREQ", "3"),
        ("RESTORE", "ki", "0", good, "IDLETIME", "0", "IDLETIME", "7"),
    ]:
        assert two.check(*cmd) == b"+OK\r\n"
    for k in ("k9", "k11", "kfoot", "busy", "kf", "ki"):
        two.check("GET", k)
    two.check("DBSIZE")


def test_restore_version_check_relaxed(two: Two) -> None:
    try:
        two.check("CONFIG", "SET", "rdb-version-check", "relaxed")
        for i, version in enumerate((12, 79, 81, 300)):
            two.check("RESTORE", f"k{i}", "0", _payload(b"\x00\x03abc", version=version))
        two.check("RESTORE", "bad", "0", _payload(b"\x00\x03abc", good_crc=False))
        two.check("DBSIZE")
    finally:
        two.check("CONFIG", "SET", "rdb-version-check", "strict")


def test_restore_ttls(two: Two) -> None:
    payload = _payload(b"\x00\x03abc")
    two.check("RESTORE", "rel", "100000", payload)
    two.check("RESTORE", "abs", "4102444800000", payload, "ABSTTL")
    two.check("PEXPIRETIME", "abs")
    # An expiry in the past: nothing is created; with REPLACE the old key goes.
    two.check("RESTORE", "gone", "1", payload, "ABSTTL")
    two.check("SET", "old", "v")
    two.check("RESTORE", "old", "1", payload, "ABSTTL", "REPLACE")
    two.check("EXISTS", "gone", "old")
    two.check("SET", "old", "v", "EX", "100")
    two.check("RESTORE", "old", "0", payload, "REPLACE")
    two.check("TTL", "old")
    for k in ("rel",):
        ttl_v, ttl_t = two.v.call("PTTL", k), two.t.call("PTTL", k)
        assert 99_000 < int(ttl_t[1:-2]) <= 100_000 and 99_000 < int(ttl_v[1:-2]) <= 100_000
    two.check("DBSIZE")


def test_restore_asking_is_restore(two: Two) -> None:
    """Outside a cluster RESTORE-ASKING is RESTORE under another name."""
    good = _payload(b"\x00\x03abc")
    two.check("RESTORE-ASKING", "k", "0", good)
    two.check("RESTORE-ASKING", "k", "0", good)
    two.check("RESTORE-ASKING", "k", "-1", good, "REPLACE")
    two.check("RESTORE-ASKING", "k", "0", b"junk", "REPLACE")
    two.check("RESTORE-ASKING", "k", "100000", good, "REPLACE", "FREQ", "300")
    two.check("RESTORE-ASKING", "k", "100000", good, "REPLACE")
    two.check("TTL", "k")
    two.check("GET", "k")
    two.check("RESTORE-ASKING", "k")


def test_dump_without_compression(two: Two) -> None:
    """rdbcompression no: strings and listpacks go raw, as Valkey writes them."""
    try:
        two.check("CONFIG", "SET", "rdbcompression", "no")
        two.check("SET", "s", "a" * 100)
        two.check("HSET", "h", "f" * 30, "v" * 30)
        two.check("DUMP", "s")
        two.check("DUMP", "h")
    finally:
        two.check("CONFIG", "SET", "rdbcompression", "yes")
    two.check("DUMP", "s")
    two.check("DUMP", "h")

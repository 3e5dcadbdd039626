"""Hash slots: CLUSTER KEYSLOT, and the CROSSSLOT check (spec §5, decisions #15).

Three oracles, each for what it can judge:

* A standalone Valkey (the ``pair`` fixture) answers CLUSTER KEYSLOT even
  without cluster mode, so every key's slot, hash-tag rules included, is
  compared byte for byte, over edge cases and hypothesis-drawn byte keys.
* A real one-node Valkey *cluster* (``--cluster-enabled yes``, all 16384
  slots assigned to itself, waited on until ``cluster_state:ok``) is the
  oracle for CROSSSLOT: the same requests go to it and to a trafikey started
  with ``--cluster-slot-checks yes``, and the replies must be identical bytes.
  The node owns every slot, so it never answers MOVED/ASK; requests that a
  cluster node legitimately answers differently from a standalone server
  (SELECT of a non-zero database, CLUSTER subcommands other than KEYSLOT,
  scripts, which trafikey does not serve yet) are left out, and said so.
* The EMQ verbs exist only on trafikey; there the spec itself is the oracle
  (CROSSSLOT, nothing written) and a CRC16 written here, independently of
  the server and checked against Valkey above, proves the keys used really
  do span slots.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import redis
from helpers.resp_wire import Wire
from helpers.servers import Proc
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

CROSSSLOT = b"-CROSSSLOT Keys in request don't hash to the same slot\r\n"
OK = b"+OK\r\n"
QUEUED = b"+QUEUED\r\n"


# -- an independent slot function ------------------------------------------------


def crc16_xmodem(data: bytes) -> int:
    """CRC16-CCITT (XMODEM), bit by bit: polynomial 0x1021, initial 0."""
    crc = 0
    for byte in data:
        crc ^= byte << 8
        for _ in range(8):
            crc = ((crc << 1) ^ 0x1021) if crc & 0x8000 else crc << 1
            crc &= 0xFFFF
    return crc


def slot(key: bytes) -> int:
    """Valkey Cluster's rule: hash the text between the first '{' and the
    first '}' after it, when that text is not empty; else the whole key."""
    s = key.find(b"{")
    if s != -1:
        e = key.find(b"}", s + 1)
        if e != -1 and e != s + 1:
            key = key[s + 1 : e]
    return crc16_xmodem(key) % 16384


def test_own_crc16_known_value() -> None:
    """The published check value of CRC16/XMODEM, and Valkey's doc example."""
    assert crc16_xmodem(b"123456789") == 0x31C3
    assert slot(b"foo") == 12182  # as Valkey answered CLUSTER KEYSLOT foo


def _colliding_tags() -> tuple[bytes, bytes]:
    """Two different hash tags that land on the same slot."""
    seen: dict[int, bytes] = {}
    i = 0
    while True:
        tag = b"t%d" % i
        s = slot(tag)
        if s in seen:
            return seen[s], tag
        seen[s] = tag
        i += 1


TAG_A, TAG_B = _colliding_tags()


# -- CLUSTER KEYSLOT against standalone Valkey -------------------------------------

EDGE_KEYS: list[bytes] = [
    b"", b"a", b"foo", b"{", b"}", b"{}", b"}{", b"{{}}", b"{}}", b"{{}",
    b"{a}", b"{a}{b}", b"a{", b"a}", b"a{b", b"a{b}", b"a{b}c", b"{}a{b}", b"{}{b}",
    b"a{}b", b"{{a}}", b"{a}}", b"{{a}", b"x{y}z{w}", b"}{a}", b"{ }", b"{\x00}", b"\x00",
    b"\xff\xfe{\x80}", b"{\xff}", b"emq:{orders}:pending", b"emq:{orders}:", b"emq:{orders}:job:42",
    b"emq:orders:pending", b"emq:orders:", b"123456789", b"{user1000}.following",
    b"{user1000}.followers", b"foo{}{bar}", b"foo{{bar}}zap", b"foo{bar}{zap}", b"k" * 1000,
    b"{" + b"z" * 500 + b"}", TAG_A, TAG_B,
]


def test_keyslot_edge_cases(pair) -> None:  # type: ignore[no-untyped-def]
    """Every hash-tag edge case byte-identical to Valkey, and equal to the
    independent slot function (which later tests rely on)."""
    for key in EDGE_KEYS:
        reply = pair.check("CLUSTER", "KEYSLOT", key)
        assert reply == b":%d\r\n" % slot(key), key


def test_keyslot_arity(pair) -> None:  # type: ignore[no-untyped-def]
    pair.check("CLUSTER", "KEYSLOT")
    pair.check("CLUSTER", "KEYSLOT", "a", "b")
    pair.check("cluster", "keyslot", "{x}y")


def test_other_cluster_subcommands_standalone(pair) -> None:  # type: ignore[no-untyped-def]
    """All other CLUSTER subcommands answer as a standalone Valkey does."""
    for args in (("INFO",), ("MYID",), ("NODES",), ("SLOTS",), ("SHARDS",), ("COUNTKEYSINSLOT", "0")):
        pair.check("CLUSTER", *args)


_KEY_BYTES = st.one_of(
    st.binary(max_size=24),
    st.lists(st.sampled_from([b"{", b"}", b"a", b"b", b"ab", b"\x00", b"\xff", b"{}", b""]), max_size=8).map(b"".join),
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(keys=st.lists(_KEY_BYTES, min_size=1, max_size=12))
def test_keyslot_random_keys(pair, keys: list[bytes]) -> None:  # type: ignore[no-untyped-def]
    """Random byte keys (braces drawn often): pipelined to both servers."""
    cmds = [("CLUSTER", "KEYSLOT", k) for k in keys]
    v = pair.v.pipeline(cmds)
    t = pair.t.pipeline(cmds)
    assert t == v, keys
    assert v == [b":%d\r\n" % slot(k) for k in keys]


# -- a real one-node Valkey cluster vs trafikey with slot checks ---------------------


class ClusterPair:
    """The same requests to the cluster node (oracle) and trafikey."""

    def __init__(self, cluster: Wire, trafikey: Wire) -> None:
        self.c = cluster
        self.t = trafikey

    def check(self, *args: object) -> bytes:
        c = self.c.call(*args)  # type: ignore[arg-type]
        t = self.t.call(*args)  # type: ignore[arg-type]
        assert t == c, f"{args!r}\n cluster:  {c!r}\n trafikey: {t!r}"
        return c


@pytest.fixture
def cpair(cluster_node: Proc, checked_server: Proc) -> Iterator[ClusterPair]:
    c, t = Wire(cluster_node.port), Wire(checked_server.port)
    assert c.call("FLUSHALL") == OK and t.call("FLUSHALL") == OK
    # Make sure the option is on (a toggle test may have run before).
    assert t.call("CONFIG", "SET", "cluster-slot-checks", "yes") == OK
    yield ClusterPair(c, t)
    c.close()
    t.close()


def test_crossslot_keys_really_differ() -> None:
    """The untagged keys used below are in different slots, the tagged and
    colliding ones in the same slot (facts about CRC16, not the server)."""
    assert len({slot(b"a"), slot(b"b"), slot(b"c"), slot(b"d")}) == 4
    assert slot(b"{t}a") == slot(b"{t}b") == slot(b"x{t}") == slot(b"t")
    assert slot(b"{" + TAG_A + b"}x") == slot(b"{" + TAG_B + b"}y") and TAG_A != TAG_B
    assert slot(b"{}a") != slot(b"{}b")
    assert slot(b"{a}{b}") == slot(b"a") != slot(b"b")


MULTI_KEY_CASES: list[tuple[str, ...]] = [
    ("MSET", "a", "1", "b", "2"),
    ("MSET", "{t}a", "1", "{t}b", "2"),
    ("MSET", "a", "1", "a", "2"),
    ("MSETNX", "a", "1", "b", "2"),
    ("MSETNX", "{t}x", "1", "t", "2"),
    ("MGET", "a", "b"),
    ("MGET", "{t}a", "{t}b", "x{t}"),
    ("MGET", "{a}{b}", "a"),
    ("MGET", "{a}{b}", "b"),
    ("MGET", "{}a", "{}b"),
    ("MGET", "{" + TAG_A.decode() + "}x", "{" + TAG_B.decode() + "}y"),
    ("DEL", "a", "b"),
    ("DEL", "{t}a", "{t}b"),
    ("UNLINK", "a", "b", "c"),
    ("EXISTS", "a", "b"),
    ("EXISTS", "{t}a", "{t}a"),
    ("TOUCH", "a", "b"),
    ("RENAME", "a", "b"),
    ("RENAME", "{t}a", "{t}b"),
    ("RENAMENX", "a", "b"),
    ("COPY", "a", "b"),
    ("COPY", "{t}a", "{t}b"),
    ("ZUNIONSTORE", "d", "2", "a", "b"),
    ("ZUNIONSTORE", "{t}d", "2", "{t}a", "b"),
    ("ZUNIONSTORE", "{t}d", "2", "{t}a", "{t}b", "WEIGHTS", "1", "2"),
    ("ZINTERSTORE", "d", "1", "a"),
    ("ZINTERSTORE", "{t}d", "2", "{t}a", "{t}b"),
    ("ZDIFFSTORE", "{t}d", "2", "{t}a", "c"),
    ("ZUNION", "2", "a", "b"),
    ("ZINTER", "2", "{t}a", "{t}b"),
    ("ZDIFF", "2", "a", "{a}x"),
    ("ZINTERCARD", "2", "a", "b"),
    ("ZINTERCARD", "2", "{t}a", "{t}b", "LIMIT", "1"),
    ("ZRANGESTORE", "d", "a", "0", "-1"),
    ("ZRANGESTORE", "{t}d", "{t}a", "0", "-1"),
    ("GET", "a"),
    ("DEL", "a"),
    ("DEL",),
    ("MSET", "a", "1", "b"),
    ("ZUNIONSTORE", "d", "x", "a", "b"),
]


@pytest.mark.parametrize("args", MULTI_KEY_CASES, ids=" ".join)
def test_multikey_commands_match_cluster(cpair: ClusterPair, args: tuple[str, ...]) -> None:
    """Same-slot and cross-slot multi-key commands: CROSSSLOT or the normal
    reply, identical to the cluster node's."""
    cpair.check("ZADD", "{t}a", "1", "m")
    cpair.check("ZADD", "{t}b", "2", "m")
    cpair.check(*args)
    cpair.check("DBSIZE")


def test_crossslot_writes_nothing(cpair: ClusterPair) -> None:
    assert cpair.check("MSET", "a", "1", "b", "2") == CROSSSLOT
    assert cpair.check("DBSIZE") == b":0\r\n"
    assert cpair.check("MGET", "a", "b") == CROSSSLOT


def test_watch_crossslot(cpair: ClusterPair) -> None:
    """WATCH names keys too: the cluster refuses it across slots."""
    assert cpair.check("WATCH", "a", "b") == CROSSSLOT
    assert cpair.check("WATCH", "{t}a", "{t}b") == OK
    cpair.check("UNWATCH")


def test_multi_crossing_command_flags_transaction(cpair: ClusterPair) -> None:
    """A crossing command inside MULTI is refused at queue time and the
    transaction is flagged: EXEC answers EXECABORT, nothing is written."""
    assert cpair.check("MULTI") == OK
    assert cpair.check("MSET", "a", "1", "b", "2") == CROSSSLOT
    assert cpair.check("SET", "{t}x", "1") == QUEUED
    cpair.check("EXEC")
    assert cpair.check("DBSIZE") == b":0\r\n"


def test_multi_single_keys_in_different_slots(cpair: ClusterPair) -> None:
    """Two single-key commands in different slots queue fine, but EXEC
    refuses the transaction as a whole (CROSSSLOT) and discards it."""
    assert cpair.check("MULTI") == OK
    assert cpair.check("SET", "a", "1") == QUEUED
    assert cpair.check("SET", "b", "1") == QUEUED
    assert cpair.check("EXEC") == CROSSSLOT
    cpair.check("EXEC")  # discarded: no transaction is open any more
    assert cpair.check("DBSIZE") == b":0\r\n"


def test_multi_same_slot_runs(cpair: ClusterPair) -> None:
    assert cpair.check("MULTI") == OK
    cpair.check("SET", "{t}a", "1")
    cpair.check("INCR", "{t}b")
    cpair.check("SET", "{" + TAG_A.decode() + "}", "1")
    cpair.check("GET", "{" + TAG_B.decode() + "}")
    cpair.check("PING")
    cpair.check("EXEC")
    cpair.check("MGET", "{t}a", "{t}b")


def test_multi_crossslot_with_queue_error(cpair: ClusterPair) -> None:
    """Both a queue-time error and keys spanning slots: which one EXEC
    reports is the cluster's choice; trafikey must make the same one."""
    cpair.check("MULTI")
    cpair.check("SET", "a", "1")
    cpair.check("SET", "b", "1")
    cpair.check("NOSUCHCOMMAND")
    cpair.check("EXEC")
    cpair.check("EXEC")
    cpair.check("DBSIZE")


def test_multi_watch_keys_do_not_count(cpair: ClusterPair) -> None:
    """The EXEC slot check looks at the queued commands, not at WATCHed keys."""
    cpair.check("WATCH", "a")
    cpair.check("MULTI")
    cpair.check("SET", "b", "1")
    cpair.check("EXEC")
    cpair.check("GET", "b")


def test_multi_keyless_and_empty(cpair: ClusterPair) -> None:
    cpair.check("MULTI")
    cpair.check("EXEC")
    cpair.check("MULTI")
    cpair.check("PING")
    cpair.check("DBSIZE")
    cpair.check("SET", "a", "1")
    cpair.check("EXEC")


def test_discard_after_crossing(cpair: ClusterPair) -> None:
    """DISCARD clears the flag: the next transaction starts clean."""
    cpair.check("MULTI")
    cpair.check("MGET", "a", "b")
    cpair.check("DISCARD")
    cpair.check("MULTI")
    cpair.check("SET", "a", "1")
    cpair.check("EXEC")


_CLUSTER_KEYS = st.sampled_from(["a", "b", "{a}b", "{b}a", "{t}a", "{t}b", "t", "{}a", "{}b", "{a}{b}", "x{t}y"])


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(keys=st.lists(_CLUSTER_KEYS, min_size=1, max_size=5))
def test_random_key_sets_match_cluster(cpair: ClusterPair, keys: list[str]) -> None:
    """Random key lists through MGET, EXISTS, MSET, DEL, and one MULTI per
    key list: the cluster node and trafikey agree on every reply."""
    cpair.check("MGET", *keys)
    cpair.check("EXISTS", *keys)
    cpair.check("MSET", *[x for k in keys for x in (k, "v")])
    cpair.check("DEL", *keys)
    cpair.check("MULTI")
    for k in keys:
        cpair.check("INCR", k)
    cpair.check("EXEC")
    cpair.check("FLUSHALL")


# -- the EMQ verbs (trafikey only) ------------------------------------------------

UNTAGGED = "emq:orders:"
TAGGED = "emq:{orders}:"


def _enqueue(p: str) -> tuple[object, ...]:
    return ("EMQ.ENQUEUE", "2", p + "pending", p, "j1", "payload")


def test_untagged_prefix_spans_slots() -> None:
    """Precondition: an untagged queue's keys are not in one slot."""
    assert slot(b"emq:orders:pending") != slot(b"emq:orders:")
    assert len({slot(b"emq:orders:" + s) for s in (b"pending", b"active", b"schedule", b"dead", b"")}) > 1


def test_emq_untagged_refused(cpair: ClusterPair) -> None:
    """Every verb with an untagged prefix: CROSSSLOT, and nothing written."""
    w = cpair.t
    p = UNTAGGED
    calls = [
        _enqueue(p),
        ("EMQ.SCHEDULE", "2", p + "schedule", p, "j1", "x", "0"),
        ("EMQ.CLAIM", "3", p + "pending", p + "active", p, "1000"),
        ("EMQ.EXTEND", "2", p + "active", p, "j1", "1", "1000"),
        ("EMQ.EXTENDS", "2", p + "active", p, "1000", "j1", "1"),
        ("EMQ.COMPLETE", "2", p + "active", p, "j1", "1"),
        ("EMQ.DELAY", "3", p + "active", p + "schedule", p, "j1", "1", "10"),
        ("EMQ.FAIL", "5", p + "active", p + "pending", p + "schedule", p + "dead", p, "j1", "1", "3", "0"),
        ("EMQ.PROMOTE", "3", p + "schedule", p + "pending", p),
        ("EMQ.RESCHEDULE", "2", p + "schedule", p, "j1", "5"),
        ("EMQ.REPROCESS", "3", p + "dead", p + "pending", p, "j1"),
        ("EMQ.REQUEUE", "3", p + "active", p + "pending", p, "j1", "1"),
        ("EMQ.STALLED.CHECK", "4", p + "active", p + "pending", p + "dead", p, "1"),
    ]
    for call in calls:
        assert w.call(*call) == CROSSSLOT, call
    assert w.call("DBSIZE") == b":0\r\n"


def test_emq_keys_in_two_tags_refused(cpair: ClusterPair) -> None:
    """Tagged keys of two different queues in one call: CROSSSLOT."""
    w = cpair.t
    assert w.call("EMQ.CLAIM", "3", "q{a}:pending", "q{b}:active", "q{a}:", "1000") == CROSSSLOT
    assert w.call("EMQ.ENQUEUE", "2", "q{a}:pending", "q{b}:", "j", "p") == CROSSSLOT
    assert w.call("DBSIZE") == b":0\r\n"


def test_emq_tagged_works(cpair: ClusterPair) -> None:
    """A tagged queue lives in one slot: the verbs run as usual."""
    w = cpair.t
    p = TAGGED
    assert w.call(*_enqueue(p)) == b"$2\r\nj1\r\n"
    assert w.call("EMQ.CLAIM", "3", p + "pending", p + "active", p, "60000") == (
        b"*3\r\n$2\r\nj1\r\n$7\r\npayload\r\n:1\r\n"
    )
    assert w.call("EMQ.COMPLETE", "2", p + "active", p, "j1", "1") == b":1\r\n"
    assert w.call("EMQ.STALLED.CHECK", "4", p + "active", p + "pending", p + "dead", p, "1") == b"*2\r\n*0\r\n*0\r\n"


def test_emq_key_check_uses_declared_keys(cpair: ClusterPair) -> None:
    """The check is on the declared KEYS as numkeys delimits them (the key
    spec). A numkeys that makes keys span slots is refused by the slot
    check first, as a cluster routes before the command runs; a numkeys the
    key spec cannot read gives no keys to check, so the verb's own numkeys
    error comes through."""
    w = cpair.t
    assert w.call("EMQ.CLAIM", "2", "q{a}:pending", "q{b}:active", "q{a}:", "10") == CROSSSLOT
    assert w.call("EMQ.CLAIM", "x", "q{a}:pending", "q{b}:active", "q{a}:", "10") == (
        b"-ERR numkeys for 'emq.claim' must be 3\r\n"
    )
    assert w.call("EMQ.CLAIM", "1", "q{a}:pending", "q{b}:active", "q{a}:", "10") == (
        b"-ERR numkeys for 'emq.claim' must be 3\r\n"
    )


def test_emq_in_multi(cpair: ClusterPair) -> None:
    """A crossing verb inside MULTI flags the transaction (EXECABORT); a
    tagged verb next to a key of another slot fails EXEC as a whole."""
    w = cpair.t
    assert w.call("MULTI") == OK
    assert w.call(*_enqueue(UNTAGGED)) == CROSSSLOT
    assert w.call("EXEC") == b"-EXECABORT Transaction discarded because of previous errors.\r\n"
    assert w.call("MULTI") == OK
    assert w.call(*_enqueue(TAGGED)) == QUEUED
    assert w.call("SET", "elsewhere", "1") == QUEUED
    assert w.call("EXEC") == CROSSSLOT
    assert w.call("DBSIZE") == b":0\r\n"
    assert w.call("MULTI") == OK
    assert w.call(*_enqueue(TAGGED)) == QUEUED
    assert w.call("GET", "{orders}") == QUEUED
    assert w.call("EXEC") == b"*2\r\n$2\r\nj1\r\n$-1\r\n"


def test_emq_without_checks(emq: redis.Redis) -> None:
    """With the option off (the default), an untagged queue just works."""
    assert emq.config_get("cluster-slot-checks") == {"cluster-slot-checks": "no"}
    assert emq.execute_command(*_enqueue(UNTAGGED)) == b"j1"
    assert emq.mset({"a": 1, "b": 2})


def test_config_set_toggles_live(checked_server: Proc) -> None:
    """CONFIG SET cluster-slot-checks no / yes takes effect for the very next
    request, on an open connection, and CONFIG GET reports it."""
    w = Wire(checked_server.port)
    try:
        assert w.call("FLUSHALL") == OK
        assert w.call("CONFIG", "GET", "cluster-slot-checks") == b"*2\r\n$19\r\ncluster-slot-checks\r\n$3\r\nyes\r\n"
        assert w.call(*_enqueue(UNTAGGED)) == CROSSSLOT
        assert w.call("CONFIG", "SET", "cluster-slot-checks", "no") == OK
        assert w.call("CONFIG", "GET", "cluster-slot-checks") == b"*2\r\n$19\r\ncluster-slot-checks\r\n$2\r\nno\r\n"
        assert w.call(*_enqueue(UNTAGGED)) == b"$2\r\nj1\r\n"
        assert w.call("MSET", "a", "1", "b", "2") == OK
        assert w.call("CONFIG", "SET", "cluster-slot-checks", "yes") == OK
        assert w.call("MSET", "a", "1", "b", "2") == CROSSSLOT
        assert w.call("EMQ.CLAIM", "3", UNTAGGED + "pending", UNTAGGED + "active", UNTAGGED, "10") == CROSSSLOT
        assert w.call("ZCARD", UNTAGGED + "pending") == b":1\r\n"
    finally:
        w.call("CONFIG", "SET", "cluster-slot-checks", "yes")
        w.close()


def test_config_set_toggle_on_a_default_server(emq_server: Proc) -> None:
    """Switching it on at run time on a server started without it."""
    w = Wire(emq_server.port)
    try:
        assert w.call("FLUSHALL") == OK
        assert w.call("MSET", "a", "1", "b", "2") == OK
        assert w.call("CONFIG", "SET", "cluster-slot-checks", "yes") == OK
        assert w.call("MGET", "a", "b") == CROSSSLOT
    finally:
        assert w.call("CONFIG", "SET", "cluster-slot-checks", "no") == OK
        w.close()
    r = redis.Redis(port=emq_server.port)
    try:
        assert r.mget("a", "b") == [b"1", b"2"]
    finally:
        r.close()

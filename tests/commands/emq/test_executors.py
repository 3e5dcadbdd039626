"""Where the two executors of the job core differ: docs/executors.md, entry by entry.

Every test here shows BOTH behaviours of one entry: the native verb on
trafikey-server (the ``emq`` fixture, clock frozen at T0) and its scripted twin
(trafikey_server/lua) loaded with SCRIPT LOAD and run with EVALSHA on a real
valkey-server 9.1.2. Each side gets the same keyspace, written by hand, and the
same call; its reply and its whole keyspace afterwards are compared with what
the spec (the EchoMQ job-core specification, docs/job-core.md) and docs/executors.md say. Expected values
are worked out by hand, never read back from a server. Scores the script
computes from Valkey's running clock are checked against the window of TIME
around the call (``At``); the frozen trafikey clock makes them exact.

The test names carry the entry number of docs/executors.md (E1, E2, ...).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import redis
from helpers.replies import arr, bulk, ids, num
from helpers.servers import Proc
from helpers.twins import T0, Executor, H, S, Z, native, row, valkey_lua

P = b"emq:{x}:"
PENDING, ACTIVE, SCHEDULE, DEAD = P + b"pending", P + b"active", P + b"schedule", P + b"dead"
SEQ, PAUSED = P + b"seq", P + b"paused"
OTHER_RUN = b"f" * 40  # a run_id that is no live server's
WRONGTYPE = b"WRONGTYPE Operation against a key holding the wrong kind of value"
NOT_INT = b"ERR value is not an integer or out of range"
HASH_NOT_INT = b"ERR hash value is not an integer"
OVERFLOW = b"ERR increment or decrement would overflow"
EPOCH = 2**53

Space = dict[bytes, tuple[str, Any]]


def job(jid: bytes) -> bytes:
    return P + b"job:" + jid


def err(text: bytes) -> bytes:
    """An error reply as the native verbs (and redis.error_reply) send it."""
    return b"-" + text + b"\r\n"


def raised(reply: bytes, text: bytes) -> bool:
    """An error that a Valkey command raised inside a script: its own text,
    then Valkey's note of where in the script it happened."""
    return reply.startswith(b"-" + text + b" script: ") and reply.endswith(b"\r\n")


ONE = num(1)
NIL = b"$-1\r\n"


@pytest.fixture
def nat(emq: redis.Redis, emq_server: Proc) -> Iterator[Executor]:
    x = native(emq_server.port)
    yield x
    x.close()


@pytest.fixture
def lua(valkey_server: Proc) -> Iterator[Executor]:
    x = valkey_lua(valkey_server.port)
    yield x
    x.close()


@pytest.fixture
def run_id(nat: Executor) -> bytes:
    return nat.r.info("server")["run_id"].encode()


def seed(space: Space, *xs: Executor) -> None:
    """Write a keyspace, given as ``key -> (type, content)``, on each server."""
    for x in xs:
        for key, (kind, content) in space.items():
            if kind == "zset":
                args: list[Any] = []
                for member, score in content.items():
                    args += [score, member]
                x.raw("ZADD", key, *args)
            elif kind == "hash":
                x.raw("HSET", key, *[v for pair in content.items() for v in pair])
            else:
                x.raw("SET", key, content)


def active_job(jid: bytes = b"a", attempts: bytes = b"1", deadline: int = T0 + 60_000, **extra: bytes) -> Space:
    """A job held under a lease, as a claim leaves it (no lease_epoch: a
    scripted claim's row)."""
    return {ACTIVE: Z({jid: deadline}), job(jid): row(b"active", attempts, **extra)}


# ============================================================ ordinary paths


def test_e1_fail_writes_failures_natively_only(nat: Executor, lua: Executor) -> None:
    """E1: FAIL adds one to `failures` natively; the script keeps no such field."""
    space = {SEQ: S(b"4"), **active_job(b"a", error=b"old")}
    seed(space, nat, lua)
    for x in (nat, lua):
        assert x.call("fail", P, b"a", b"1", 3, 0, b"boom") == bulk(b"pending")
    assert nat.keyspace() == {SEQ: S(b"5"), PENDING: Z({b"a": 5}),
                              job(b"a"): row(b"pending", b"1", error=b"boom", failures=b"1")}
    assert lua.keyspace() == {SEQ: S(b"5"), PENDING: Z({b"a": 5}),
                              job(b"a"): row(b"pending", b"1", error=b"boom")}


def test_e2_lease_epoch_is_stamped_natively_only(nat: Executor, lua: Executor, run_id: bytes) -> None:
    """E2: CLAIM, EXTEND and EXTENDS stamp `lease_epoch` with the server's
    run_id; the scripts never write it (nor touch one already there)."""
    space = {SEQ: S(b"2"), PENDING: Z({b"a": 1, b"b": 2}),
             job(b"a"): row(b"pending", payload=b"A"), job(b"b"): row(b"pending", payload=b"B")}
    seed(space, nat, lua)
    for x in (nat, lua):
        assert x.call("claim", P, 30_000) == arr(bulk(b"a"), bulk(b"A"), num(1))
        at_a = x.at(30_000)
        assert x.call("claim", P, 30_000) == arr(bulk(b"b"), bulk(b"B"), num(1))
        at_b = x.at(30_000)
        stamp = {} if x.scripted else {"lease_epoch": run_id}
        assert x.keyspace() == {SEQ: S(b"2"), ACTIVE: Z({b"a": at_a, b"b": at_b}),
                                job(b"a"): row(b"active", b"1", b"A", **stamp),
                                job(b"b"): row(b"active", b"1", b"B", **stamp)}
    # an old stamp (as after a restart): EXTEND and EXTENDS restamp it natively
    for x in (nat, lua):
        x.raw("HSET", job(b"a"), "lease_epoch", OTHER_RUN)
        x.raw("HSET", job(b"b"), "lease_epoch", OTHER_RUN)
        assert x.call("extend", P, b"a", b"1", 50_000) == ONE
        at_a = x.at(50_000)
        assert x.call("extends", P, 70_000, b"b", b"1") == arr(ONE)
        at_b = x.at(70_000)
        stamp = OTHER_RUN if x.scripted else run_id
        assert x.keyspace() == {SEQ: S(b"2"), ACTIVE: Z({b"a": at_a, b"b": at_b}),
                                job(b"a"): row(b"active", b"1", b"A", lease_epoch=stamp),
                                job(b"b"): row(b"active", b"1", b"B", lease_epoch=stamp)}


def test_e3_retry_cap_is_on_failures_natively_on_attempts_by_script(nat: Executor, lua: Executor) -> None:
    """E3: a job claimed twice but failed once (its first lease was given
    back with DELAY): FAIL with max_attempts 2 retries it natively
    (failures 1 < 2) and buries it in the script (attempts 2 >= 2)."""
    seed({SEQ: S(b"0"), PENDING: Z({b"a": 0}), job(b"a"): row(b"pending")}, nat, lua)
    for x in (nat, lua):
        assert x.call("claim", P, 60_000) == arr(bulk(b"a"), bulk(b"p"), num(1))
        assert x.call("delay", P, b"a", b"1", 0) == ONE
        x.tick()  # the delay is due by the next call
        assert x.call("promote", P) == num(1)
        assert x.call("claim", P, 60_000) == arr(bulk(b"a"), bulk(b"p"), num(2))
    assert nat.call("fail", P, b"a", b"2", 2, 0) == bulk(b"pending")
    assert lua.call("fail", P, b"a", b"2", 2, 0) == bulk(b"dead")
    # seq: 1 from the promotion, 2 from the retry
    assert nat.keyspace(strip=True) == {SEQ: S(b"2"), PENDING: Z({b"a": 2}), job(b"a"): row(b"pending", b"2")}
    assert nat.r.hget(job(b"a"), "failures") == b"1"
    assert lua.keyspace() == {SEQ: S(b"1"), DEAD: Z({b"a": lua.at()}), job(b"a"): row(b"dead", b"2")}


def test_e4_sweep_counts_every_expiry_in_the_script(nat: Executor, lua: Executor, run_id: bytes) -> None:
    """E4: a lease stamped by another server process (a restart) is requeued
    uncounted natively; the script reads no stamp and counts it. A lease
    without a stamp is counted by both."""
    space = {SEQ: S(b"7"), ACTIVE: Z({b"a": 10, b"b": 20}),
             job(b"a"): row(b"active", b"1", lease_epoch=OTHER_RUN), job(b"b"): row(b"active", b"1")}
    seed(space, nat, lua)
    assert nat.call("stalled.check", P, 0) == arr(ids(b"a"), ids(b"b"))
    assert nat.keyspace() == {SEQ: S(b"8"), PENDING: Z({b"a": 8}), DEAD: Z({b"b": T0}),
                              job(b"a"): row(b"pending", b"1", lease_epoch=OTHER_RUN),
                              job(b"b"): row(b"dead", b"1", stalled=b"1")}
    assert lua.call("stalled.check", P, 0) == arr(ids(), ids(b"a", b"b"))
    assert lua.keyspace() == {SEQ: S(b"7"), DEAD: Z({b"a": lua.at(), b"b": lua.at()}),
                              job(b"a"): row(b"dead", b"1", lease_epoch=OTHER_RUN, stalled=b"1"),
                              job(b"b"): row(b"dead", b"1", stalled=b"1")}


# ============================================================ rows the native verbs refuse


# (verb, its ARGV, the row's place, the script's keyspace afterwards, its reply)
LANE_CASES = [
    ("complete", (b"a", b"1"), "active", {}, ONE),
    ("fail", (b"a", b"1", 1, 0), "active",
     {DEAD: Z({b"a": "now"}), job(b"a"): row(b"dead", b"1", group=b"g")}, bulk(b"dead")),
    ("delay", (b"a", b"1", 500), "active",
     {SCHEDULE: Z({b"a": ("now", 500)}), job(b"a"): row(b"scheduled", b"1", group=b"g")}, ONE),
    ("reprocess", (b"a",), "dead",
     {SEQ: S(b"1"), PENDING: Z({b"a": 1}), job(b"a"): row(b"pending", b"1", group=b"g")}, ONE),
    ("stalled.check", (5,), "active-due",
     {SEQ: S(b"1"), PENDING: Z({b"a": 1}), job(b"a"): row(b"pending", b"1", group=b"g", stalled=b"1")},
     arr(ids(b"a"), ids())),
]


def placed(place: str, **fields: bytes) -> Space:
    """Job `a`, claimed once, in `place`, with extra row fields."""
    state = {"active": b"active", "active-due": b"active", "dead": b"dead", "schedule": b"scheduled"}[place]
    zset = {"active": ACTIVE, "active-due": ACTIVE, "dead": DEAD, "schedule": SCHEDULE}[place]
    score = 5 if place == "active-due" else T0 + 60_000
    return {zset: Z({b"a": score}), job(b"a"): row(state, b"1", **fields)}


def resolve(space: Space, x: Executor) -> Space:
    """Turn the placeholders "now" and ("now", offset) into `x`'s last window."""
    out: Space = {}
    for key, (kind, content) in space.items():
        if kind == "zset":
            content = {m: x.at() if s == "now" else x.at(s[1]) if isinstance(s, tuple) else s
                       for m, s in content.items()}
        out[key] = (kind, content)
    return out


@pytest.mark.parametrize(("verb", "argv", "place", "after", "reply"), LANE_CASES, ids=[c[0] for c in LANE_CASES])
def test_e5_lane_rows_are_refused_natively_and_moved_by_the_script(
    nat: Executor, lua: Executor, verb: str, argv: tuple, place: str, after: Space, reply: bytes
) -> None:
    """E5: a lane row (field `group`) is refused by COMPLETE, FAIL, DELAY,
    REPROCESS and STALLED.CHECK; the script treats it as any other job."""
    space = placed(place, group=b"g")
    seed(space, nat, lua)
    assert nat.call(verb, P, *argv) == err(b"EMQSTATE job a is a lane row, not native")
    assert nat.keyspace() == space
    assert lua.call(verb, P, *argv) == reply
    assert lua.keyspace() == resolve(after, lua)


def test_e5_lane_rows_are_claimed_and_promoted_alike(nat: Executor, lua: Executor) -> None:
    """E5, the contrast: CLAIM and PROMOTE (and EXTEND) move a lane row on
    both executors."""
    seed({SCHEDULE: Z({b"a": 1}), job(b"a"): row(b"scheduled", group=b"g")}, nat, lua)
    for x in (nat, lua):
        assert x.call("promote", P) == num(1)
        assert x.call("claim", P, 5000) == arr(bulk(b"a"), bulk(b"p"), num(1))
        assert x.call("extend", P, b"a", b"1", 9000) == ONE
        assert x.keyspace(strip=True) == {SEQ: S(b"1"), ACTIVE: Z({b"a": x.at(9000)}),
                                          job(b"a"): row(b"active", b"1", group=b"g")}


FLOW_CASES = [
    ("complete", (b"a", b"1"), {}, ONE),
    ("fail", (b"a", b"1", 3, 0, b"why"),
     {SEQ: S(b"1"), PENDING: Z({b"a": 1}), job(b"a"): row(b"pending", b"1", parent=b"q:1", error=b"why")},
     bulk(b"pending")),
]


@pytest.mark.parametrize(("verb", "argv", "after", "reply"), FLOW_CASES, ids=[c[0] for c in FLOW_CASES])
def test_e6_flow_children_are_refused_natively_and_settled_by_the_script(
    nat: Executor, lua: Executor, verb: str, argv: tuple, after: Space, reply: bytes
) -> None:
    """E6: a flow child (field `parent`) is refused by COMPLETE and FAIL;
    the script settles it as a flat job, parent untouched."""
    space = placed("active", parent=b"q:1")
    seed(space, nat, lua)
    assert nat.call(verb, P, *argv) == err(b"EMQSTATE job a is a flow child, not native")
    assert nat.keyspace() == space
    assert lua.call(verb, P, *argv) == reply
    assert lua.keyspace() == resolve(after, lua)


STATELESS = H({b"attempts": b"1", b"payload": b"p"})


@pytest.mark.parametrize(("verb", "argv", "zset", "expected"), [
    ("extend", (b"a", b"1", 1000), ACTIVE, b"active"),
    ("complete", (b"a", b"1"), ACTIVE, b"active"),
    ("delay", (b"a", b"1", 0), ACTIVE, b"active"),
    ("fail", (b"a", b"1", 3, 0), ACTIVE, b"active"),
    ("reprocess", (b"a",), DEAD, b"dead"),
], ids=["extend", "complete", "delay", "fail", "reprocess"])
def test_e7_a_row_without_state_is_a_ghost_to_the_script(
    nat: Executor, lua: Executor, verb: str, argv: tuple, zset: bytes, expected: bytes
) -> None:
    """E7: a row with no `state` field is described natively with an empty
    state; the script reads no state as no row."""
    space = {zset: Z({b"a": T0 + 60_000}), job(b"a"): STATELESS}
    seed(space, nat, lua)
    assert nat.call(verb, P, *argv) == err(b"EMQSTATE job a is , not " + expected)
    assert lua.call(verb, P, *argv) == err(b"EMQNOJOB job a has no row")
    assert nat.keyspace() == space
    assert lua.keyspace() == space


def test_e7_claim_drops_a_stateless_head(nat: Executor, lua: Executor) -> None:
    """E7, CLAIM: natively a refusal; the script clears the head from
    pending as it clears a ghost, and hands out nothing."""
    space = {PENDING: Z({b"a": 1, b"b": 2}), job(b"a"): STATELESS, job(b"b"): row(b"pending")}
    seed(space, nat, lua)
    assert nat.call("claim", P, 1000) == err(b"EMQSTATE job a is , not pending")
    assert nat.keyspace() == space
    assert lua.call("claim", P, 1000) == b"*0\r\n"
    assert lua.keyspace() == {PENDING: Z({b"b": 2}), job(b"a"): STATELESS, job(b"b"): row(b"pending")}


@pytest.mark.parametrize("verb", ["promote", "stalled.check"])
def test_e7_sweeps_drop_a_stateless_entry(nat: Executor, lua: Executor, verb: str) -> None:
    """E7, PROMOTE and STALLED.CHECK: natively the whole sweep is refused;
    the script drops the entry and leaves the row alone."""
    zset, argv, expected = (SCHEDULE, (), b"scheduled") if verb == "promote" else (ACTIVE, (1,), b"active")
    space = {zset: Z({b"a": 5}), job(b"a"): STATELESS}
    seed(space, nat, lua)
    assert nat.call(verb, P, *argv) == err(b"EMQSTATE job a is , not " + expected)
    assert nat.keyspace() == space
    assert lua.call(verb, P, *argv) == (num(0) if verb == "promote" else arr(ids(), ids()))
    assert lua.keyspace() == {job(b"a"): STATELESS}


def test_e8_promote_drops_a_due_entry_whose_row_lives_elsewhere(nat: Executor, lua: Executor) -> None:
    """E8: a due schedule entry whose row is `active` (the keyspace was
    changed behind the job core's back). Natively the whole PROMOTE is
    refused; the script drops that entry, leaves the row and its lease, and
    promotes the rest."""
    space = {SEQ: S(b"3"), SCHEDULE: Z({b"a": 5, b"b": 6}), ACTIVE: Z({b"a": T0 + 60_000}),
             job(b"a"): row(b"active", b"1"), job(b"b"): row(b"scheduled")}
    seed(space, nat, lua)
    assert nat.call("promote", P) == err(b"EMQSTATE job a is active, not scheduled")
    assert nat.keyspace() == space
    assert lua.call("promote", P) == num(1)
    assert lua.keyspace() == {SEQ: S(b"4"), PENDING: Z({b"b": 4}), ACTIVE: Z({b"a": T0 + 60_000}),
                              job(b"a"): row(b"active", b"1"), job(b"b"): row(b"pending")}


def test_e9_stalled_check_drops_a_due_entry_whose_row_is_not_active(nat: Executor, lua: Executor) -> None:
    """E9: a due lease whose row is `pending` (and in pending). Natively the
    whole sweep is refused; the script drops the active entry and recovers
    the rest."""
    space = {SEQ: S(b"3"), ACTIVE: Z({b"a": 5, b"b": 6}), PENDING: Z({b"a": 2}),
             job(b"a"): row(b"pending", b"1"), job(b"b"): row(b"active", b"1")}
    seed(space, nat, lua)
    assert nat.call("stalled.check", P, 1) == err(b"EMQSTATE job a is pending, not active")
    assert nat.keyspace() == space
    assert lua.call("stalled.check", P, 1) == arr(ids(b"b"), ids())
    assert lua.keyspace() == {SEQ: S(b"4"), PENDING: Z({b"a": 2, b"b": 4}),
                              job(b"a"): row(b"pending", b"1"), job(b"b"): row(b"pending", b"1", stalled=b"1")}


# ============================================================ arguments


def test_e10_an_empty_id_is_an_id_to_the_script(nat: Executor, lua: Executor) -> None:
    """E10: natively an empty id is refused (`ERR id is out of range`, in
    EXTENDS for the whole call); the script admits a job named "" and looks
    for its row like any other."""
    seed({job(b"b"): row(b"active", b"1"), ACTIVE: Z({b"b": T0 + 1000})}, nat, lua)
    out_of_range = err(b"ERR id is out of range")
    assert nat.call("enqueue", P, b"", b"x") == out_of_range
    assert nat.call("extend", P, b"", b"0", 1000) == out_of_range
    assert nat.call("extends", P, 5000, b"", b"0", b"b", b"1") == out_of_range
    assert nat.keyspace() == {job(b"b"): row(b"active", b"1"), ACTIVE: Z({b"b": T0 + 1000})}

    assert lua.call("enqueue", P, b"", b"x") == bulk(b"")
    assert lua.call("extend", P, b"", b"0", 1000) == err(b"EMQSTATE job  is pending, not active")
    assert lua.call("extends", P, 5000, b"", b"0", b"b", b"1") == arr(num(0), ONE)
    assert lua.keyspace() == {SEQ: S(b"1"), PENDING: Z({b"": 1}), job(b""): row(b"pending", payload=b"x"),
                              job(b"b"): row(b"active", b"1"), ACTIVE: Z({b"b": lua.at(5000)})}


@pytest.mark.parametrize(("raw", "value"), [
    (b"+5", 5), (b" 5", 5), (b"5 ", 5), (b"05", 5), (b"0x10", 16), (b"1e3", 1000), (b"5.0", 5),
    (b"99999999999999999999", 10**20),
])
def test_e11_scripts_read_numbers_with_tonumber(nat: Executor, lua: Executor, raw: bytes, value: int) -> None:
    """E11: natively an integer argument is read as Valkey reads integers;
    the script takes anything Lua's tonumber reads as a whole number."""
    assert nat.call("schedule", P, b"a", b"p", raw) == err(NOT_INT)
    assert nat.keyspace() == {}
    assert lua.call("schedule", P, b"a", b"p", raw) == bulk(b"a")
    assert lua.keyspace() == {SCHEDULE: Z({b"a": value}), job(b"a"): row(b"scheduled")}


def test_e11_a_limit_too_large_for_zrangebyscore(nat: Executor, lua: Executor) -> None:
    """E11: natively 1e300 is no integer; the script reads it, and the
    LIMIT of ZRANGEBYSCORE refuses it inside the script, before any write."""
    space = {SCHEDULE: Z({b"a": 1}), job(b"a"): row(b"scheduled")}
    seed(space, nat, lua)
    assert nat.call("promote", P, b"1e300") == err(NOT_INT)
    assert raised(lua.call("promote", P, b"1e300"), NOT_INT)
    assert nat.keyspace() == space
    assert lua.keyspace() == space


@pytest.mark.parametrize("raw", [b"x", b"", b"5.5", b"inf", b"nan", b"1e"])
def test_e11_what_neither_reads_as_an_integer(nat: Executor, lua: Executor, raw: bytes) -> None:
    """E11, the contrast: no whole number at all is refused by both, with
    the same text."""
    for x in (nat, lua):
        assert x.call("schedule", P, b"a", b"p", raw) == err(NOT_INT)
        assert x.keyspace() == {}


def test_e12_run_at_past_2_53_is_rounded_by_the_script(nat: Executor, lua: Executor) -> None:
    """E12: natively run_at_ms above 2^53 is out of range; the script
    writes it as the nearest double."""
    assert nat.call("schedule", P, b"a", b"p", EPOCH + 1) == err(b"ERR run_at_ms is out of range")
    assert nat.keyspace() == {}
    assert lua.call("schedule", P, b"a", b"p", EPOCH + 1) == bulk(b"a")
    assert lua.keyspace() == {SCHEDULE: Z({b"a": EPOCH}), job(b"a"): row(b"scheduled")}


def test_e12_lease_past_2_53(nat: Executor, lua: Executor) -> None:
    """E12: natively `now + lease_ms` above 2^53 is out of range; the
    script writes the (rounded) sum."""
    space = active_job(b"a")
    seed(space, nat, lua)
    assert nat.call("extend", P, b"a", b"1", EPOCH - T0 + 1) == err(b"ERR lease_ms is out of range")
    assert nat.keyspace() == space
    assert lua.call("extend", P, b"a", b"1", EPOCH) == ONE
    score = lua.r.zscore(ACTIVE, b"a")
    lo, hi = lua.window
    assert score is not None and float(EPOCH + lo) <= score <= float(EPOCH + hi) and score > EPOCH


def test_e12_seq_past_2_53(nat: Executor, lua: Executor) -> None:
    """E12: natively a sequence number past 2^53 is refused; the script
    takes it, and its score (and a `*` id made from it) is rounded."""
    seed({SEQ: S(b"%d" % EPOCH)}, nat, lua)
    assert nat.call("enqueue", P, b"a", b"p") == err(b"ERR seq is out of range")
    assert nat.call("enqueue", P, b"*", b"p") == err(b"ERR seq is out of range")
    assert nat.keyspace() == {SEQ: S(b"%d" % EPOCH)}
    assert lua.call("enqueue", P, b"a", b"p") == bulk(b"a")  # seq 2^53 + 1, scored 2^53
    assert lua.call("enqueue", P, b"*", b"q") == bulk(b"%d" % (EPOCH + 2))  # seq 2^53 + 2: exact
    assert lua.call("enqueue", P, b"*", b"r") == bulk(b"%d" % (EPOCH + 4))  # seq 2^53 + 3, read as + 4
    assert lua.keyspace() == {
        SEQ: S(b"%d" % (EPOCH + 3)),
        PENDING: Z({b"a": EPOCH, b"%d" % (EPOCH + 2): EPOCH + 2, b"%d" % (EPOCH + 4): EPOCH + 4}),
        job(b"a"): row(b"pending"),
        job(b"%d" % (EPOCH + 2)): row(b"pending", payload=b"q"),
        job(b"%d" % (EPOCH + 4)): row(b"pending", payload=b"r"),
    }


def test_e12_a_counter_past_2_53_is_replied_rounded(nat: Executor, lua: Executor) -> None:
    """E12: CLAIM's reply carries the new attempts; above 2^53 the script
    replies it as a Lua number (a double) while the row holds it exactly."""
    space = {PENDING: Z({b"a": 1}), job(b"a"): row(b"pending", b"%d" % (EPOCH + 2))}
    seed(space, nat, lua)
    for x, replied in ((nat, EPOCH + 3), (lua, EPOCH + 4)):
        assert x.call("claim", P, 1000) == arr(bulk(b"a"), bulk(b"p"), num(replied))
        assert x.keyspace(strip=True) == {ACTIVE: Z({b"a": x.at(1000)}),
                                          job(b"a"): row(b"active", b"%d" % (EPOCH + 3))}


# ============================================================ keys of the wrong type


def _wrongtype_cases() -> list[tuple[str, tuple, Space, bytes, Space]]:
    """(verb, ARGV, seeded keyspace, the key made a string, the script's
    keyspace after its error)."""
    held = active_job(b"a")
    return [
        # INCR and HSET ran before ZADD pending failed: a row that no set holds
        ("enqueue", (b"a", b"p"), {}, PENDING,
         {PENDING: S(b"x"), SEQ: S(b"1"), job(b"a"): row(b"pending")}),
        # the head left pending and was claimed, but no lease holds it
        ("claim", (1000,), {PENDING: Z({b"a": 1}), job(b"a"): row(b"pending")}, ACTIVE,
         {ACTIVE: S(b"x"), job(b"a"): row(b"active", b"1")}),
        ("delay", (b"a", b"1", 0), held, SCHEDULE,
         {SCHEDULE: S(b"x"), job(b"a"): row(b"scheduled", b"1")}),
        ("fail", (b"a", b"1", 1, 0, b"why"), held, DEAD,
         {DEAD: S(b"x"), job(b"a"): row(b"dead", b"1", error=b"why")}),
        # the first write fails: nothing written, only the text differs
        ("complete", (b"x", b"1"), {job(b"x"): row(b"active", b"1")}, ACTIVE,
         {ACTIVE: S(b"x"), job(b"x"): row(b"active", b"1")}),
        # the first due job left schedule and took a seq before ZADD pending failed
        ("promote", (), {SCHEDULE: Z({b"a": 1, b"b": 2}), job(b"a"): row(b"scheduled"), job(b"b"): row(b"scheduled")},
         PENDING, {PENDING: S(b"x"), SEQ: S(b"1"), SCHEDULE: Z({b"b": 2}), job(b"a"): row(b"pending"),
                   job(b"b"): row(b"scheduled")}),
        # counted, out of active and marked dead before ZADD dead failed
        ("stalled.check", (0,), {ACTIVE: Z({b"a": 1}), job(b"a"): row(b"active", b"1")}, DEAD,
         {DEAD: S(b"x"), job(b"a"): row(b"dead", b"1", stalled=b"1")}),
    ]


@pytest.mark.parametrize(("verb", "argv", "space", "key", "after"), _wrongtype_cases(),
                         ids=[c[0] for c in _wrongtype_cases()])
def test_e13_a_set_of_the_wrong_type(
    nat: Executor, lua: Executor, verb: str, argv: tuple, space: Space, key: bytes, after: Space
) -> None:
    """E13: natively every named set is type-checked before the first write;
    in the script the error comes from the command that first touches the
    key, with Valkey's note of the script line, and what the script wrote
    before it stays written."""
    space = {k: v for k, v in space.items() if k != key}
    space[key] = S(b"x")
    seed(space, nat, lua)
    assert nat.call(verb, P, *argv) == err(WRONGTYPE)
    assert nat.keyspace() == space
    assert raised(lua.call(verb, P, *argv), WRONGTYPE)
    assert lua.keyspace() == after


@pytest.mark.parametrize("verb", ["enqueue", "schedule"])
def test_e14_admission_takes_any_key_under_the_row_name_as_a_row(nat: Executor, lua: Executor, verb: str) -> None:
    """E14: natively a row key that is not a hash is WRONGTYPE; the script
    asks only whether the key exists, so it answers nil: already admitted."""
    space = {job(b"a"): S(b"not a row")}
    seed(space, nat, lua)
    argv = (b"a", b"p") if verb == "enqueue" else (b"a", b"p", 0)
    assert nat.call(verb, P, *argv) == err(WRONGTYPE)
    assert lua.call(verb, P, *argv) == NIL
    assert nat.keyspace() == space
    assert lua.keyspace() == space


def test_e14_a_row_of_the_wrong_type_read_by_one_job_verb(nat: Executor, lua: Executor) -> None:
    """E14: EXTEND (as COMPLETE, DELAY, FAIL, REPROCESS, and CLAIM's head)
    reads the row before writing: the same refusal, nothing written, only
    the script's note added."""
    space = {ACTIVE: Z({b"a": 1}), job(b"a"): S(b"x")}
    seed(space, nat, lua)
    assert nat.call("extend", P, b"a", b"1", 1000) == err(WRONGTYPE)
    assert raised(lua.call("extend", P, b"a", b"1", 1000), WRONGTYPE)
    assert nat.keyspace() == space
    assert lua.keyspace() == space


def test_e14_a_row_of_the_wrong_type_part_way_through_extends(nat: Executor, lua: Executor) -> None:
    """E14: natively EXTENDS checks every row first; the script fails at the
    bad row after extending the pairs before it."""
    space = {ACTIVE: Z({b"a": T0 + 10, b"b": T0 + 10}), job(b"a"): row(b"active", b"1"), job(b"b"): S(b"x")}
    seed(space, nat, lua)
    assert nat.call("extends", P, 5000, b"a", b"1", b"b", b"1") == err(WRONGTYPE)
    assert nat.keyspace() == space
    assert raised(lua.call("extends", P, 5000, b"a", b"1", b"b", b"1"), WRONGTYPE)
    assert lua.keyspace() == {**space, ACTIVE: Z({b"a": lua.at(5000), b"b": T0 + 10})}


@pytest.mark.parametrize("verb", ["promote", "stalled.check"])
def test_e14_a_row_of_the_wrong_type_part_way_through_a_sweep(nat: Executor, lua: Executor, verb: str) -> None:
    """E14: natively a sweep type-checks every due row before moving any;
    the script has moved the earlier ones when it meets the bad row."""
    if verb == "promote":
        space = {SCHEDULE: Z({b"a": 1, b"b": 2}), job(b"a"): row(b"scheduled"), job(b"b"): S(b"x")}
        after = {SEQ: S(b"1"), PENDING: Z({b"a": 1}), SCHEDULE: Z({b"b": 2}),
                 job(b"a"): row(b"pending"), job(b"b"): S(b"x")}
        argv: tuple = ()
    else:
        space = {ACTIVE: Z({b"a": 1, b"b": 2}), job(b"a"): row(b"active", b"1"), job(b"b"): S(b"x")}
        after = {SEQ: S(b"1"), PENDING: Z({b"a": 1}), ACTIVE: Z({b"b": 2}),
                 job(b"a"): row(b"pending", b"1", stalled=b"1"), job(b"b"): S(b"x")}
        argv = (3,)
    seed(space, nat, lua)
    assert nat.call(verb, P, *argv) == err(WRONGTYPE)
    assert nat.keyspace() == space
    assert raised(lua.call(verb, P, *argv), WRONGTYPE)
    assert lua.keyspace() == after


def _seq_cases() -> list[tuple[str, tuple, Space, bytes | None, Space]]:
    """(verb, ARGV, seeded keyspace besides seq = "x", the script's reply
    (None: INCR's error), the script's keyspace besides seq)."""
    held = active_job(b"a")
    return [
        ("enqueue", (b"a", b"p"), {}, None, {}),
        ("fail-to-dead", (b"a", b"1", 1, 0), held, bulk(b"dead"),
         {DEAD: Z({b"a": "now"}), job(b"a"): row(b"dead", b"1")}),
        # out of active, the reason kept, then INCR fails: the row says active, no set holds it
        ("fail-to-pending", (b"a", b"1", 3, 0, b"why"), held, None, {job(b"a"): row(b"active", b"1", error=b"why")}),
        ("promote-nothing-due", (), {SCHEDULE: Z({b"a": 2**50}), job(b"a"): row(b"scheduled")}, num(0),
         {SCHEDULE: Z({b"a": 2**50}), job(b"a"): row(b"scheduled")}),
        ("promote", (), {SCHEDULE: Z({b"a": 5}), job(b"a"): row(b"scheduled")}, None, {job(b"a"): row(b"scheduled")}),
        ("reprocess", (b"a",), {DEAD: Z({b"a": 5}), job(b"a"): row(b"dead", b"1")}, None,
         {job(b"a"): row(b"dead", b"1")}),
        ("stalled.check", (3,), {ACTIVE: Z({b"a": 5}), job(b"a"): row(b"active", b"1")}, None,
         {job(b"a"): row(b"active", b"1", stalled=b"1")}),
    ]


@pytest.mark.parametrize(("case", "argv", "space", "reply", "after"), _seq_cases(), ids=[c[0] for c in _seq_cases()])
def test_e15_a_seq_that_is_not_an_integer(
    nat: Executor, lua: Executor, case: str, argv: tuple, space: Space, reply: bytes | None, after: Space
) -> None:
    """E15: natively a verb that may INCR P..seq refuses a seq that is no
    integer, whatever path it would take; the script meets it only if it
    reaches INCR, after the writes that come before."""
    verb = case.split("-")[0]
    space = {**space, SEQ: S(b"x")}
    seed(space, nat, lua)
    assert nat.call(verb, P, *argv) == err(NOT_INT)
    assert nat.keyspace() == space
    got = lua.call(verb, P, *argv)
    if reply is None:
        assert raised(got, NOT_INT)
    else:
        assert got == reply
    assert lua.keyspace() == resolve({**after, SEQ: S(b"x")}, lua)


@pytest.mark.parametrize(("attempts", "text"), [(b"x", HASH_NOT_INT), (b"%d" % (2**63 - 1), OVERFLOW)])
def test_e16_claim_on_a_counter_it_cannot_add_to(nat: Executor, lua: Executor, attempts: bytes, text: bytes) -> None:
    """E16: natively CLAIM refuses before writing; the script has taken the
    head out of pending when HINCRBY fails, so the job is in no set."""
    space = {PENDING: Z({b"a": 1}), job(b"a"): row(b"pending", attempts)}
    seed(space, nat, lua)
    assert nat.call("claim", P, 1000) == err(text)
    assert nat.keyspace() == space
    assert raised(lua.call("claim", P, 1000), text)
    assert lua.keyspace() == {job(b"a"): row(b"pending", attempts)}


def test_e16_stalled_check_on_a_counter_it_cannot_add_to(nat: Executor, lua: Executor) -> None:
    """E16: natively the whole sweep is refused; the script has recovered
    the jobs before the bad one, and writes nothing for it."""
    space = {ACTIVE: Z({b"a": 1, b"b": 2}), job(b"a"): row(b"active", b"1"),
             job(b"b"): row(b"active", b"1", stalled=b"x")}
    seed(space, nat, lua)
    assert nat.call("stalled.check", P, 3) == err(HASH_NOT_INT)
    assert nat.keyspace() == space
    assert raised(lua.call("stalled.check", P, 3), HASH_NOT_INT)
    assert lua.keyspace() == {SEQ: S(b"1"), PENDING: Z({b"a": 1}), ACTIVE: Z({b"b": 2}),
                              job(b"a"): row(b"pending", b"1", stalled=b"1"),
                              job(b"b"): row(b"active", b"1", stalled=b"x")}


def test_e16_fail_with_failures_that_is_not_an_integer(nat: Executor, lua: Executor) -> None:
    """E16: natively FAIL refuses a `failures` it cannot add to; the script
    never reads it."""
    space = {SEQ: S(b"1"), **active_job(b"a", failures=b"x")}
    seed(space, nat, lua)
    assert nat.call("fail", P, b"a", b"1", 3, 0) == err(HASH_NOT_INT)
    assert nat.keyspace() == space
    assert lua.call("fail", P, b"a", b"1", 3, 0) == bulk(b"pending")
    assert lua.keyspace() == {SEQ: S(b"2"), PENDING: Z({b"a": 2}), job(b"a"): row(b"pending", b"1", failures=b"x")}


def test_e16_fail_with_attempts_that_is_not_a_number(nat: Executor, lua: Executor) -> None:
    """E16: `attempts` is a token natively and compared as bytes only; the
    script also compares it with max_attempts as a number, and a Lua error
    stops it before any write."""
    space = {SEQ: S(b"1"), **active_job(b"a", b"x")}
    seed(space, nat, lua)
    assert nat.call("fail", P, b"a", b"x", 3, 0) == bulk(b"pending")
    assert nat.keyspace() == {SEQ: S(b"2"), PENDING: Z({b"a": 2}), job(b"a"): row(b"pending", b"x", failures=b"1")}
    got = lua.call("fail", P, b"a", b"x", 3, 0)
    assert got.startswith(b"-ERR user_script:") and b"attempt to compare number with nil" in got
    assert lua.keyspace() == space


# ============================================================ which refusal, and its text


ORDER = [
    # (what, seeded keyspace, verb, ARGV, native reply, script reply)
    ("a row of the wrong type and a bad lease_ms", {job(b"r"): S(b"x")},
     "extend", (b"r", b"1", b"soon"), err(WRONGTYPE), err(NOT_INT)),
    ("a paused queue whose pending is no sorted set", {PENDING: S(b"x"), PAUSED: S(b"1")},
     "claim", (1000,), err(WRONGTYPE), b"*0\r\n"),
    ("an admitted id and pending no sorted set", {PENDING: S(b"x"), job(b"e"): row(b"pending")},
     "enqueue", (b"e", b"p"), err(WRONGTYPE), NIL),
    ("a ghost and a seq that is no integer", {SEQ: S(b"x")},
     "fail", (b"g", b"1", 3, 0), err(NOT_INT), err(b"EMQNOJOB job g has no row")),
]


@pytest.mark.parametrize(("what", "space", "verb", "argv", "native_reply", "script_reply"), ORDER,
                         ids=[o[0] for o in ORDER])
def test_e17_check_order(
    nat: Executor, lua: Executor, what: str, space: Space, verb: str, argv: tuple, native_reply: bytes,
    script_reply: bytes,
) -> None:
    """E17: natively key types come first, then the arguments, then the
    row; the script checks its arguments, then reads what it needs in its
    own order, and never checks a key's type on its own. A call with two
    faults can be answered for a different one -- or answered at all."""
    seed(space, nat, lua)
    assert nat.call(verb, P, *argv) == native_reply
    assert lua.call(verb, P, *argv) == script_reply
    assert nat.keyspace() == space
    assert lua.keyspace() == space


SHAPES = [
    # (what, numkeys and the rest, native reply, EVALSHA reply)
    ("numkeys with a leading zero", (b"03", PENDING, ACTIVE, P, 1000),
     err(b"ERR numkeys for 'emq.claim' must be 3"), err(NOT_INT)),
    ("numkeys past the arguments", (9, PENDING, ACTIVE, P, 1000),
     err(b"ERR numkeys for 'emq.claim' must be 3"), err(b"ERR Number of keys can't be greater than number of args")),
    ("negative numkeys", (-1, PENDING, ACTIVE, P, 1000),
     err(b"ERR numkeys for 'emq.claim' must be 3"), err(b"ERR Number of keys can't be negative")),
    ("no numkeys", (), err(b"ERR wrong number of arguments for 'emq.claim' command"),
     err(b"ERR wrong number of arguments for 'evalsha' command")),
    # the contrast: a plain miscount is answered alike
    ("numkeys 2", (2, PENDING, ACTIVE, P, 1000),
     err(b"ERR numkeys for 'emq.claim' must be 3"), err(b"ERR numkeys for 'emq.claim' must be 3")),
    ("no lease_ms", (3, PENDING, ACTIVE, P),
     err(b"ERR wrong number of arguments for 'emq.claim' command"),
     err(b"ERR wrong number of arguments for 'emq.claim' command")),
]


@pytest.mark.parametrize(("what", "args", "native_reply", "script_reply"), SHAPES, ids=[s[0] for s in SHAPES])
def test_e18_numkeys_is_read_by_evalsha_first(
    nat: Executor, lua: Executor, what: str, args: tuple, native_reply: bytes, script_reply: bytes
) -> None:
    """E18: EVALSHA reads numkeys itself before the script runs; the script
    checks the counts it is given with the native texts."""
    from trafikey_server.lua import SCRIPTS

    assert nat.raw("EMQ.CLAIM", *args) == native_reply
    assert lua.raw("EVALSHA", SCRIPTS["claim"].sha1, *args) == script_reply
    assert nat.keyspace() == {}
    assert lua.keyspace() == {}


def test_e19_an_id_with_a_nul_byte_in_an_error(nat: Executor, lua: Executor) -> None:
    """E19: natively an error quotes the whole id; Valkey ends a script's
    error text at a NUL byte. A CR or LF becomes a space on both."""
    assert nat.call("extend", P, b"a\x00b", b"1", 1000) == err(b"EMQNOJOB job a\x00b has no row")
    assert lua.call("extend", P, b"a\x00b", b"1", 1000) == err(b"EMQNOJOB job a")
    for x in (nat, lua):
        assert x.call("extend", P, b"a\r\nb", b"1", 1000) == err(b"EMQNOJOB job a  b has no row")
        assert x.keyspace() == {}

"""The two-executor conformance suite: the job core run three ways.

    (a) native     the EMQ.* verbs on trafikey-server
    (b) trafikey-lua  the scripted twins (trafikey_server/lua) by EVALSHA on trafikey-server
    (c) valkey-lua    the scripted twins by EVALSHA on a real valkey-server 9.1.2

The same job scenarios -- every ordinary path of the eleven twinned verbs, and
long random sequences of valid calls drawn by hypothesis -- must give the same
replies, byte for byte, and the same keyspace after every step. Expected values
come from the spec (the EchoMQ job-core specification, docs/job-core.md), worked out by hand in the
scenarios and by ``Model`` (written from the spec) in the random sequences; the
executors are compared with those and with each other.

What is compared, and how it is normalised:

* Replies: the exact RESP2 bytes.
* The keyspace: every key, its type and content, after each step. The native
  verbs' own row fields, ``failures`` and ``lease_epoch``, are ignored when
  executors are compared (docs/executors.md, E1 and E2); on their own, the
  scripted executors must never write them, and the native one must write
  them as the spec says.
* Scores computed from the clock (active deadlines, run-at times from DELAY
  and FAIL's backoff, times of death) are compared as ``now + offset``,
  where ``offset`` is what the spec names (lease_ms, delay_ms, backoff_ms,
  0) and ``now`` is the executor's own clock during that step: TIME read on
  the executor just before and just after the call bound it. trafikey's test
  clock is frozen, so there the bound is exact; Valkey's runs. Sequence
  numbers and caller-given run-at times are compared exactly.

Valkey's clock cannot be frozen, so the scenarios make every time-dependent
outcome certain instead: a run-at time is 0..1000 (long past) or 2^50 (far
future); a lease, delay or backoff is 0 or 1 ms (past by the next step) or
10^9 ms (not within the test). Before every step each executor's clock is
moved (trafikey: ADVANCE; Valkey: a wait of a few milliseconds) at least 2 ms
past the previous step, so a 0/1 ms offset is due at any later step and
due entries are ordered alike on every executor. No timing is asserted.

trafikey-server's EVAL/EVALSHA is being written as this suite is; until it
lands, executor (b) fails here. That is expected and not hidden.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from helpers.emq_model import SHAPES, resp2
from helpers.replies import arr, bulk, ids, num
from helpers.servers import Proc
from helpers.twins import IGNORED_FIELDS, T0, At, Executor, H, S, Z, native, row, trafikey_lua, valkey_lua
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from trafikey_server.lua import SCRIPTS

P = b"emq:{c}:"
PENDING, ACTIVE, SCHEDULE, DEAD = P + b"pending", P + b"active", P + b"schedule", P + b"dead"
SEQ, PAUSED = P + b"seq", P + b"paused"
FAR = 2**50  # a run-at time no test reaches
LONG = 10**9  # a lease, delay or backoff no test outlives (11.5 days)
TWINNED = ("enqueue", "claim", "extend", "extends", "complete", "schedule", "promote", "delay", "fail",
           "reprocess", "stalled.check")
EXECUTORS = ("native", "trafikey-lua", "valkey-lua")

Space = dict[bytes, tuple[str, Any]]


def job(jid: bytes, prefix: bytes = P) -> bytes:
    return prefix + b"job:" + jid


# ============================================================ the package


def test_the_package_ships_every_twin_and_both_reads() -> None:
    assert set(SCRIPTS) == {*TWINNED, "counts", "state"}
    for name, script in SCRIPTS.items():
        assert script.name == name
        assert script.sha1 == hashlib.sha1(script.source).hexdigest()
        assert script.read_only == (name in ("counts", "state"))
        assert script.source.startswith(b"#!lua flags=no-writes\n") == script.read_only
    # the twins take exactly the native verb's numkeys (emq_model.SHAPES is written from the spec)
    for name in TWINNED:
        assert SCRIPTS[name].numkeys == SHAPES["EMQ." + name.upper()].numkeys
        assert SCRIPTS[name].key_names(P)[-1] == P
        assert SCRIPTS[name].key_names(P)[:-1] == [P + s.encode() for s in SHAPES["EMQ." + name.upper()].sets]
    assert SCRIPTS["counts"].key_names(P) == [PENDING, ACTIVE, SCHEDULE, DEAD]
    assert SCRIPTS["state"].key_names(P) == [P]


def test_valkey_loads_each_script_under_its_sha1_and_honours_no_writes(valkey_server: Proc) -> None:
    x = valkey_lua(valkey_server.port)  # SCRIPT LOAD of every script, replies checked against .sha1
    try:
        assert x.raw("SCRIPT", "EXISTS", *(s.sha1 for s in SCRIPTS.values())) == b"*13\r\n" + b":1\r\n" * 13
        counts = SCRIPTS["counts"]
        assert x.raw("EVALSHA_RO", counts.sha1, 4, PENDING, ACTIVE, SCHEDULE, DEAD) == b"*4\r\n" + b":0\r\n" * 4
        assert x.raw("EVALSHA_RO", SCRIPTS["state"].sha1, 1, P, b"a") == b"$-1\r\n"
        reply = x.raw("EVALSHA_RO", SCRIPTS["enqueue"].sha1, 2, PENDING, P, b"a", b"p")
        assert reply.startswith(b"-ERR Write commands are not allowed from read-only scripts.")
        assert x.keyspace() == {}
    finally:
        x.close()


# ============================================================ executors


def make_executor(kind: str, request: pytest.FixtureRequest, db: int = 0) -> Executor:
    if kind == "valkey-lua":
        return valkey_lua(request.getfixturevalue("valkey_server").port)
    request.getfixturevalue("emq")  # flushed, clock released afterwards
    port = request.getfixturevalue("emq_server").port
    return native(port, db) if kind == "native" else trafikey_lua(port, db)


@pytest.fixture(params=EXECUTORS)
def x(request: pytest.FixtureRequest) -> Iterator[Executor]:
    ex = make_executor(request.param, request)
    yield ex
    ex.close()


ONE, NIL, EMPTY = num(1), b"$-1\r\n", b"*0\r\n"


def seed(x: Executor, space: Space) -> None:
    for key, (kind, content) in space.items():
        if kind == "zset":
            x.raw("ZADD", key, *[v for m, s in content.items() for v in (s, m)])
        elif kind == "hash":
            x.raw("HSET", key, *[v for pair in content.items() for v in pair])
        else:
            x.raw("SET", key, content)


def assert_keyspace(x: Executor, expected: Space) -> None:
    """The keyspace, the native verbs' own fields ignored; a script must not
    have written them at all."""
    if x.scripted:
        for kind, content in x.keyspace().values():
            if kind == "hash":
                assert not set(content) & set(IGNORED_FIELDS)
    assert x.keyspace(strip=True) == expected


def step(x: Executor, verb: str, *argv: bytes | str | int) -> bytes:
    """One call, at least 2 ms of the executor's clock after the last."""
    x.tick()
    return x.call(verb, P, *argv)


# ============================================================ scenarios: every ordinary path


def test_enqueue_takes_the_next_seq_and_is_idempotent(x: Executor) -> None:
    assert step(x, "enqueue", b"job1", b"pay\x00load\r\n") == bulk(b"job1")
    assert step(x, "enqueue", b"job2", b"") == bulk(b"job2")
    assert step(x, "enqueue", b"job1", b"other") == NIL  # the row exists: nothing written
    assert_keyspace(x, {SEQ: S(b"2"), PENDING: Z({b"job1": 1, b"job2": 2}),
             job(b"job1"): row(b"pending", payload=b"pay\x00load\r\n"), job(b"job2"): row(b"pending", payload=b"")})


def test_enqueue_star_moves_past_numbers_that_have_a_row(x: Executor) -> None:
    assert step(x, "enqueue", b"*", b"a") == bulk(b"1")
    assert step(x, "enqueue", b"3", b"b") == bulk(b"3")  # seq 2 is its score
    assert step(x, "enqueue", b"*", b"c") == bulk(b"4")  # 3 has a row: seq ends at 4
    assert step(x, "enqueue", b"*", b"d") == bulk(b"5")
    assert_keyspace(x, {SEQ: S(b"5"), PENDING: Z({b"1": 1, b"3": 2, b"4": 4, b"5": 5}),
             job(b"1"): row(b"pending", payload=b"a"), job(b"3"): row(b"pending", payload=b"b"),
             job(b"4"): row(b"pending", payload=b"c"), job(b"5"): row(b"pending", payload=b"d")})


def test_schedule_explicit_and_star(x: Executor) -> None:
    assert step(x, "schedule", b"s", b"p", 0) == bulk(b"s")  # no seq for an explicit id
    assert step(x, "schedule", b"f", b"q", FAR) == bulk(b"f")
    assert step(x, "schedule", b"s", b"r", 5) == NIL
    seed(x, {job(b"1"): row(b"pending")})
    assert step(x, "schedule", b"*", b"t", 7) == bulk(b"2")
    assert_keyspace(x, {SEQ: S(b"2"), SCHEDULE: Z({b"s": 0, b"f": FAR, b"2": 7}), job(b"s"): row(b"scheduled"),
             job(b"f"): row(b"scheduled", payload=b"q"), job(b"1"): row(b"pending"),
             job(b"2"): row(b"scheduled", payload=b"t")})


def test_claim_leases_the_head(x: Executor) -> None:
    seed(x, {PENDING: Z({b"b": 2, b"a": 1}), job(b"a"): row(b"pending", b"2", b"A"), job(b"b"): row(b"pending")})
    assert step(x, "claim", 30_000) == arr(bulk(b"a"), bulk(b"A"), num(3))
    at = x.at(30_000)
    assert_keyspace(x, {PENDING: Z({b"b": 2}), ACTIVE: Z({b"a": at}), job(b"a"): row(b"active", b"3", b"A"),
             job(b"b"): row(b"pending")})


def test_claim_a_paused_or_empty_queue_gets_nothing(x: Executor) -> None:
    assert step(x, "claim", 1000) == EMPTY
    seed(x, {PENDING: Z({b"a": 1}), job(b"a"): row(b"pending"), PAUSED: S(b"")})
    assert step(x, "claim", 1000) == EMPTY
    assert_keyspace(x, {PENDING: Z({b"a": 1}), job(b"a"): row(b"pending"), PAUSED: S(b"")})


def test_claim_clears_a_ghost_head(x: Executor) -> None:
    seed(x, {PENDING: Z({b"g": 1, b"a": 2}), job(b"a"): row(b"pending")})
    assert step(x, "claim", 1000) == EMPTY
    assert_keyspace(x, {PENDING: Z({b"a": 2}), job(b"a"): row(b"pending")})
    assert step(x, "claim", 1000) == arr(bulk(b"a"), bulk(b"p"), num(1))


def test_claim_of_a_row_without_payload(x: Executor) -> None:
    seed(x, {PENDING: Z({b"a": 1}), job(b"a"): H({b"state": b"pending", b"attempts": b"0"})})
    assert step(x, "claim", 1000) == arr(bulk(b"a"), NIL, num(1))
    assert_keyspace(x, {ACTIVE: Z({b"a": x.at(1000)}), job(b"a"): H({b"state": b"active", b"attempts": b"1"})})


def test_extend_moves_the_deadline_even_past_it(x: Executor) -> None:
    seed(x, {PENDING: Z({b"a": 1}), job(b"a"): row(b"pending")})
    assert step(x, "claim", 1) == arr(bulk(b"a"), bulk(b"p"), num(1))
    assert step(x, "extend", b"a", b"1", 45_000) == ONE  # the 1 ms lease is past: no sweep ran
    assert_keyspace(x, {ACTIVE: Z({b"a": x.at(45_000)}), job(b"a"): row(b"active", b"1")})


def test_extends_judges_each_pair_alone(x: Executor) -> None:
    seed(x, {ACTIVE: Z({b"a": T0, b"b": T0, b"g": T0}), PENDING: Z({b"n": 1}),
             job(b"a"): row(b"active", b"7"), job(b"b"): row(b"active", b"2"), job(b"n"): row(b"pending")})
    reply = step(x, "extends", 9000, b"a", b"7", b"g", b"1", b"n", b"0", b"b", b"1", b"b", b"02", b"b", b"2")
    assert reply == arr(ONE, num(0), num(0), num(0), num(0), ONE)
    assert_keyspace(x, {ACTIVE: Z({b"a": x.at(9000), b"b": x.at(9000), b"g": T0}), PENDING: Z({b"n": 1}),
             job(b"a"): row(b"active", b"7"), job(b"b"): row(b"active", b"2"), job(b"n"): row(b"pending")})


def test_complete_deletes_the_row(x: Executor) -> None:
    seed(x, {ACTIVE: Z({b"a": T0, b"b": T0}), job(b"a"): row(b"active", b"1", error=b"e", stalled=b"1"),
             job(b"b"): row(b"active", b"1")})
    assert step(x, "complete", b"a", b"1") == ONE
    assert_keyspace(x, {ACTIVE: Z({b"b": T0}), job(b"b"): row(b"active", b"1")})


@pytest.mark.parametrize("delay", [0, 4000])
def test_delay_gives_the_job_back_for_later(x: Executor, delay: int) -> None:
    seed(x, {ACTIVE: Z({b"a": T0}), job(b"a"): row(b"active", b"3", stalled=b"1")})
    assert step(x, "delay", b"a", b"3", delay) == ONE
    assert_keyspace(x, {SCHEDULE: Z({b"a": x.at(delay)}), job(b"a"): row(b"scheduled", b"3", stalled=b"1")})


@pytest.mark.parametrize(("reason", "error"), [((), {}), ((b"",), {"error": b""}), ((b"boom",), {"error": b"boom"})],
                         ids=["no-reason", "empty-reason", "reason"])
def test_fail_back_to_pending(x: Executor, reason: tuple, error: dict) -> None:
    seed(x, {SEQ: S(b"9"), ACTIVE: Z({b"a": T0}), job(b"a"): row(b"active", b"1")})
    assert step(x, "fail", b"a", b"1", 3, 0, *reason) == bulk(b"pending")
    assert_keyspace(x, {SEQ: S(b"10"), PENDING: Z({b"a": 10}), job(b"a"): row(b"pending", b"1", **error)})


def test_fail_with_a_backoff_schedules_the_retry(x: Executor) -> None:
    seed(x, {ACTIVE: Z({b"a": T0}), job(b"a"): row(b"active", b"1")})
    assert step(x, "fail", b"a", b"1", 2, 2500, b"slow") == bulk(b"scheduled")
    assert_keyspace(x, {SCHEDULE: Z({b"a": x.at(2500)}), job(b"a"): row(b"scheduled", b"1", error=b"slow")})


def test_fail_on_the_last_attempt_is_dead_and_a_repeat_is_told_so(x: Executor) -> None:
    """One claim, one failure: attempts and failures agree, so both retry
    caps say dead (docs/executors.md E3 is where they part)."""
    seed(x, {PENDING: Z({b"a": 1}), job(b"a"): row(b"pending")})
    assert step(x, "claim", 60_000) == arr(bulk(b"a"), bulk(b"p"), num(1))
    assert step(x, "fail", b"a", b"1", 1, 100, b"x") == bulk(b"dead")
    died = x.at()
    assert step(x, "fail", b"a", b"1", 1, 100, b"y") == bulk(b"dead")  # repeated: nothing written
    assert_keyspace(x, {DEAD: Z({b"a": died}), job(b"a"): row(b"dead", b"1", error=b"x")})


def test_promote_moves_due_jobs_earliest_first(x: Executor) -> None:
    seed(x, {SEQ: S(b"4"), SCHEDULE: Z({b"c": 5, b"b": 5, b"a": 9, b"f": FAR}),
             job(b"a"): row(b"scheduled"), job(b"b"): row(b"scheduled"), job(b"c"): row(b"scheduled"),
             job(b"f"): row(b"scheduled")})
    assert step(x, "promote") == num(3)  # b and c share a millisecond: id order
    assert_keyspace(x, {SEQ: S(b"7"), PENDING: Z({b"b": 5, b"c": 6, b"a": 7}), SCHEDULE: Z({b"f": FAR}),
             job(b"a"): row(b"pending"), job(b"b"): row(b"pending"), job(b"c"): row(b"pending"),
             job(b"f"): row(b"scheduled")})


def test_promote_limit_counts_ghosts_but_replies_only_jobs(x: Executor) -> None:
    seed(x, {SCHEDULE: Z({b"g": 1, b"a": 2, b"b": 3}), job(b"a"): row(b"scheduled"), job(b"b"): row(b"scheduled")})
    assert step(x, "promote", 2) == num(1)
    assert_keyspace(x, {SEQ: S(b"1"), PENDING: Z({b"a": 1}), SCHEDULE: Z({b"b": 3}),
             job(b"a"): row(b"pending"), job(b"b"): row(b"scheduled")})
    assert step(x, "promote", 1) == num(1)
    assert step(x, "promote") == num(0)


def test_delayed_and_backed_off_jobs_come_due(x: Executor) -> None:
    seed(x, {ACTIVE: Z({b"a": T0, b"b": T0}), job(b"a"): row(b"active", b"1"), job(b"b"): row(b"active", b"1")})
    assert step(x, "delay", b"a", b"1", 0) == ONE
    assert step(x, "fail", b"b", b"1", 5, 1) == bulk(b"scheduled")
    assert step(x, "promote") == num(2)
    assert_keyspace(x, {SEQ: S(b"2"), PENDING: Z({b"a": 1, b"b": 2}), job(b"a"): row(b"pending", b"1"),
             job(b"b"): row(b"pending", b"1")})


def test_reprocess_keeps_every_counter(x: Executor) -> None:
    seed(x, {SEQ: S(b"5"), DEAD: Z({b"a": T0}), job(b"a"): row(b"dead", b"4", stalled=b"2", error=b"e")})
    assert step(x, "reprocess", b"a") == ONE
    assert_keyspace(x, {SEQ: S(b"6"), PENDING: Z({b"a": 6}),
                        job(b"a"): row(b"pending", b"4", stalled=b"2", error=b"e")})


def test_stalled_check_requeues_then_buries(x: Executor) -> None:
    seed(x, {PENDING: Z({b"a": 1}), job(b"a"): row(b"pending")})
    assert step(x, "claim", 1) == arr(bulk(b"a"), bulk(b"p"), num(1))
    assert step(x, "stalled.check", 1) == arr(ids(b"a"), ids())
    assert_keyspace(x, {SEQ: S(b"1"), PENDING: Z({b"a": 1}), job(b"a"): row(b"pending", b"1", stalled=b"1")})
    assert step(x, "claim", 1) == arr(bulk(b"a"), bulk(b"p"), num(2))
    assert step(x, "stalled.check", 1) == arr(ids(), ids(b"a"))
    assert_keyspace(x, {SEQ: S(b"1"), DEAD: Z({b"a": x.at()}), job(b"a"): row(b"dead", b"2", stalled=b"2")})


def test_stalled_check_limit_ghosts_and_live_leases(x: Executor) -> None:
    seed(x, {ACTIVE: Z({b"g": 1, b"a": 2, b"b": 3, b"live": FAR}), job(b"a"): row(b"active", b"1"),
             job(b"b"): row(b"active", b"1"), job(b"live"): row(b"active", b"1")})
    assert step(x, "stalled.check", 0, 2) == arr(ids(), ids(b"a"))  # the ghost counts toward the limit
    died = x.at()
    assert step(x, "stalled.check", 5) == arr(ids(b"b"), ids())
    assert_keyspace(x, {SEQ: S(b"1"), PENDING: Z({b"b": 1}), DEAD: Z({b"a": died}), ACTIVE: Z({b"live": FAR}),
             job(b"a"): row(b"dead", b"1", stalled=b"1"), job(b"b"): row(b"pending", b"1", stalled=b"1"),
             job(b"live"): row(b"active", b"1")})


@pytest.fixture(params=[e for e in EXECUTORS if e != "native"])
def sx(request: pytest.FixtureRequest) -> Iterator[Executor]:
    """A scripted executor: (b) or (c)."""
    ex = make_executor(request.param, request)
    yield ex
    ex.close()


def read(x: Executor, name: str, *argv: bytes) -> bytes:
    script = SCRIPTS[name]
    return x.raw("EVALSHA", script.sha1, script.numkeys, *script.key_names(P), *argv)


def test_counts_and_state_read_a_queue(sx: Executor) -> None:
    """The two declared reads of EchoMQ.Metrics: the four ZCARDs, and one
    row's state (nil without a row). A wire-6 connector sends them to
    trafikey-server by EVALSHA as well, so they are run on (b) and (c)."""
    assert read(sx, "counts") == arr(num(0), num(0), num(0), num(0))
    seed(sx, {PENDING: Z({b"a": 1, b"b": 2}), ACTIVE: Z({b"c": FAR}), DEAD: Z({b"d": 1, b"e": 2, b"f": 3}),
              job(b"a"): row(b"pending"), job(b"c"): row(b"active", b"1"), job(b"d"): row(b"dead", b"1"),
              job(b"s"): row(b"scheduled")})
    assert read(sx, "counts") == arr(num(2), num(1), num(0), num(3))
    for jid, state in ((b"a", b"pending"), (b"c", b"active"), (b"d", b"dead"), (b"s", b"scheduled")):
        assert read(sx, "state", jid) == bulk(state)
    assert read(sx, "state", b"b") == NIL  # a ghost has no row
    assert read(sx, "state", b"nobody") == NIL
    assert sx.keyspace() == {PENDING: Z({b"a": 1, b"b": 2}), ACTIVE: Z({b"c": FAR}),
                             DEAD: Z({b"d": 1, b"e": 2, b"f": 3}), job(b"a"): row(b"pending"),
                             job(b"c"): row(b"active", b"1"), job(b"d"): row(b"dead", b"1"),
                             job(b"s"): row(b"scheduled")}


# ============================================================ random sequences: the model

Score = tuple  # ("abs", value) | ("clock", step, offset)
PAST_RUN_AT = (0, 1, 1000)  # caller-given run-at times long past on every executor
QUEUES = (b"emq:{a}:", b"emq:{b}:")


@dataclass
class Row:
    state: bytes
    payload: bytes
    attempts: int = 0
    failures: int = 0  # the native verbs' retry budget (E1)
    stamped: bool = False  # a native claim or extension wrote lease_epoch (E2)
    stalled: int | None = None
    error: bytes | None = None


class QueueModel:
    """One queue as the spec says the job core leaves it. Scores are
    symbolic: a sequence number or caller's run-at is ("abs", n); a score
    computed from the clock at step k as now + d is ("clock", k, d)."""

    def __init__(self, prefix: bytes) -> None:
        self.prefix = prefix
        self.rows: dict[bytes, Row] = {}
        self.sets: dict[str, dict[bytes, Score]] = {"pending": {}, "active": {}, "schedule": {}, "dead": {}}
        self.seq: int | None = None
        self.paused = False

    # -- reading ---------------------------------------------------------------------

    def ghosts(self) -> set[bytes]:
        return {m for zs in self.sets.values() for m in zs if m not in self.rows}

    def held(self) -> list[bytes]:
        return sorted(j for j in self.sets["active"] if j in self.rows)

    def dead(self) -> list[bytes]:
        return sorted(j for j in self.sets["dead"] if j in self.rows)

    @staticmethod
    def _due(score: Score, now_step: int) -> bool:
        if score[0] == "abs":
            return score[1] in PAST_RUN_AT
        _, k, d = score
        return k < now_step and d <= 1

    @staticmethod
    def _order(item: tuple[bytes, Score]) -> tuple:
        member, score = item
        return (0, score[1], 0, member) if score[0] == "abs" else (1, score[1], score[2], member)

    def due(self, place: str, now_step: int, limit: int) -> list[bytes]:
        entries = sorted(((m, s) for m, s in self.sets[place].items() if self._due(s, now_step)), key=self._order)
        return [m for m, _ in entries[:limit]]

    # -- writing ---------------------------------------------------------------------

    def _next_seq(self) -> int:
        self.seq = (self.seq or 0) + 1
        return self.seq

    def _to_pending(self, jid: bytes) -> None:
        self.rows[jid].state = b"pending"
        self.sets["pending"][jid] = ("abs", self._next_seq())

    def _admit(self, jid: bytes, payload: bytes, state: bytes) -> tuple[bytes, int | None] | None:
        """The id a new row takes (and its seq), or None if the row exists."""
        if jid == b"*":
            n = (self.seq or 0) + 1
            while b"%d" % n in self.rows:
                n += 1
            self.seq = n
            jid = b"%d" % n
            seq: int | None = n
        elif jid in self.rows:
            return None
        else:
            seq = self._next_seq() if state == b"pending" else None
        self.rows[jid] = Row(state, payload)
        return jid, seq

    # -- the verbs (ordinary paths only) -------------------------------------------

    def enqueue(self, k: int, jid: bytes, payload: bytes) -> Any:
        admitted = self._admit(jid, payload, b"pending")
        if admitted is None:
            return None
        jid, seq = admitted
        self.sets["pending"][jid] = ("abs", seq)
        return jid

    def schedule(self, k: int, jid: bytes, payload: bytes, run_at: int) -> Any:
        admitted = self._admit(jid, payload, b"scheduled")
        if admitted is None:
            return None
        self.sets["schedule"][admitted[0]] = ("abs", run_at)
        return admitted[0]

    def claim(self, k: int, lease: int) -> Any:
        pending = self.sets["pending"]
        if self.paused or not pending:
            return []
        jid = min(pending.items(), key=self._order)[0]
        del pending[jid]
        if jid not in self.rows:
            return []  # a ghost head is cleared
        r = self.rows[jid]
        r.attempts += 1
        r.state = b"active"
        r.stamped = True
        self.sets["active"][jid] = ("clock", k, lease)
        return [jid, r.payload, r.attempts]

    def _holds(self, jid: bytes, token: bytes) -> bool:
        r = self.rows.get(jid)
        return r is not None and r.state == b"active" and b"%d" % r.attempts == token

    def extend(self, k: int, jid: bytes, token: bytes, lease: int) -> Any:
        assert self._holds(jid, token)
        self.sets["active"][jid] = ("clock", k, lease)
        self.rows[jid].stamped = True
        return 1

    def extends(self, k: int, lease: int, pairs: list[tuple[bytes, bytes]]) -> Any:
        out = []
        for jid, token in pairs:
            ok = self._holds(jid, token)
            if ok:
                self.sets["active"][jid] = ("clock", k, lease)
                self.rows[jid].stamped = True
            out.append(1 if ok else 0)
        return out

    def complete(self, k: int, jid: bytes, token: bytes) -> Any:
        assert self._holds(jid, token)
        del self.sets["active"][jid]
        del self.rows[jid]
        return 1

    def delay(self, k: int, jid: bytes, token: bytes, delay: int) -> Any:
        assert self._holds(jid, token)
        del self.sets["active"][jid]
        self.rows[jid].state = b"scheduled"
        self.sets["schedule"][jid] = ("clock", k, delay)
        return 1

    def fail(self, k: int, jid: bytes, token: bytes, max_attempts: int, backoff: int, reason: bytes | None) -> Any:
        r = self.rows[jid]
        assert b"%d" % r.attempts == token
        if r.state == b"dead":
            return b"dead"  # a repeated terminal failure
        assert r.state == b"active"
        r.failures += 1
        # the executors' caps agree here: the machine only picks such max_attempts (E3)
        assert (r.failures >= max_attempts) == (r.attempts >= max_attempts)
        if reason is not None:
            r.error = reason
        del self.sets["active"][jid]
        if r.attempts >= max_attempts:
            r.state = b"dead"
            self.sets["dead"][jid] = ("clock", k, 0)
            return b"dead"
        if backoff > 0:
            r.state = b"scheduled"
            self.sets["schedule"][jid] = ("clock", k, backoff)
            return b"scheduled"
        self._to_pending(jid)
        return b"pending"

    def promote(self, k: int, limit: int) -> Any:
        moved = 0
        for jid in self.due("schedule", k, limit):
            del self.sets["schedule"][jid]
            if jid in self.rows:
                self._to_pending(jid)
                moved += 1
        return moved

    def reprocess(self, k: int, jid: bytes) -> Any:
        assert self.rows[jid].state == b"dead"
        del self.sets["dead"][jid]
        self._to_pending(jid)
        return 1

    def stalled_check(self, k: int, max_stalled: int, limit: int) -> Any:
        requeued, buried = [], []
        for jid in self.due("active", k, limit):
            del self.sets["active"][jid]
            r = self.rows.get(jid)
            if r is None:
                continue  # a ghost
            r.stalled = (r.stalled or 0) + 1
            if r.stalled > max_stalled:
                r.state = b"dead"
                self.sets["dead"][jid] = ("clock", k, 0)
                buried.append(jid)
            else:
                self._to_pending(jid)
                requeued.append(jid)
        return [requeued, buried]

    # -- what the executors must hold ------------------------------------------------

    def render(self) -> Space:
        """The queue's keys, scores symbolic, without the native-only fields."""
        p = self.prefix
        out: Space = {}
        if self.seq is not None:
            out[p + b"seq"] = S(b"%d" % self.seq)
        if self.paused:
            out[p + b"paused"] = S(b"1")
        for place, zs in self.sets.items():
            if zs:
                out[p + place.encode()] = Z({m: s[1] if s[0] == "abs" else s for m, s in zs.items()})
        for jid, r in self.rows.items():
            fields = {b"state": r.state, b"payload": r.payload, b"attempts": b"%d" % r.attempts}
            if r.stalled is not None:
                fields[b"stalled"] = b"%d" % r.stalled
            if r.error is not None:
                fields[b"error"] = r.error
            out[p + b"job:" + jid] = H(fields)
        return out

    def native_fields(self, run_id: bytes) -> dict[bytes, dict[bytes, bytes]]:
        """row key -> the native verbs' own fields it must hold."""
        out = {}
        for jid, r in self.rows.items():
            fields = {}
            if r.failures:
                fields[b"failures"] = b"%d" % r.failures
            if r.stamped:
                fields[b"lease_epoch"] = run_id
            out[self.prefix + b"job:" + jid] = fields
        return out


def normalise(space: Space, symbolic: Space, windows: dict[int, tuple[int, int]]) -> Space:
    """An executor's keyspace in the model's symbolic form: the native-only
    fields dropped, and each clock score that lies where the model puts it
    (now of its step, bounded by that step's TIME window, plus the offset)
    replaced by the model's ("clock", step, offset). Any other score stays a
    number, and so fails the comparison."""
    out: Space = {}
    for key, (kind, content) in space.items():
        if kind == "hash":
            content = {f: v for f, v in content.items() if f not in IGNORED_FIELDS}
        elif kind == "zset":
            model_kind, model_zs = symbolic.get(key, ("zset", {}))
            scores = model_zs if model_kind == "zset" else {}
            new = {}
            for member, score in content.items():
                sym = scores.get(member)
                if isinstance(sym, tuple) and At(windows[sym[1]], sym[2]) == score:
                    new[member] = sym
                else:
                    new[member] = score
            content = new
        out[key] = (kind, content)
    return out


# ============================================================ random sequences: the runner

some_ids = st.one_of(st.sampled_from([b"1", b"2", b"3", b"job"]),
                     st.binary(min_size=1, max_size=4).filter(lambda b: b != b"*"))
LEASES = (1, 1, LONG)
DELAYS = (0, 1, LONG)
BACKOFFS = (0, 0, 1, LONG)
RUN_ATS = (*PAST_RUN_AT, FAR)
LIMITS = (None, 1, 2, 1000)
# what a step does, weighted so that jobs flow: admitted, claimed, settled, swept
KINDS = ("admit",) * 4 + ("claim",) * 3 + ("settle",) * 6 + ("sweep",) * 2 + ("disturb",)
operations = st.tuples(
    st.sampled_from(KINDS),
    st.lists(st.integers(0, 255), min_size=10, max_size=10),  # the step's choices
    st.binary(max_size=12),  # a payload
    st.one_of(st.none(), st.just(b""), st.binary(min_size=1, max_size=6)),  # a FAIL reason
)
programs = st.lists(operations, min_size=20, max_size=70)


class Choices:
    """One step's choices: each pick takes the next number."""

    def __init__(self, numbers: list[int]) -> None:
        self.numbers = list(numbers)

    def pick(self, options: Any) -> Any:
        options = list(options)
        n = self.numbers.pop(0) if self.numbers else 0
        return options[n % len(options)]


class Conformance:
    """Valid calls only (every reply is an ordinary one, never a refusal),
    sent in lockstep to every executor of the lineup; each reply and keyspace
    is checked against the model and against the other executors'."""

    def __init__(self, executors: tuple[Executor, ...], run_ids: dict[str, bytes], pool: list[bytes]) -> None:
        self.executors = executors
        self.run_ids = run_ids
        for x in executors:
            x.reset()
        self.windows: dict[str, dict[int, tuple[int, int]]] = {x.name: {} for x in executors}
        self.queues = {p: QueueModel(p) for p in QUEUES}
        self.k = 0
        self.pool = sorted({b"1", b"2", *pool})

    # -- one step on every executor ------------------------------------------------

    def run(self, prefix: bytes, verb: str, argv: tuple, expected: Any) -> None:
        want = resp2(expected)
        replies = {}
        for x in self.executors:
            x.tick()
            replies[x.name] = x.call(verb, prefix, *argv)
            self.windows[x.name][self.k] = x.window
        for name, got in replies.items():
            assert got == want, f"step {self.k} {verb}{argv!r} on {name}:\n got  {got!r}\n want {want!r}"
        self.k += 1
        self.check(prefix)

    def raw(self, *command: bytes | str | int) -> None:
        for x in self.executors:
            x.raw(*command)

    def check(self, prefix: bytes) -> None:
        symbolic: Space = {}
        for q in self.queues.values():
            symbolic.update(q.render())
        seen = {}
        for x in self.executors:
            space = x.keyspace()
            own = {k: {f: v for f, v in c.items() if f in IGNORED_FIELDS} for k, (t, c) in space.items() if t == "hash"}
            if x.scripted:
                assert not any(own.values()), f"{x.name} wrote a native-only field: {own}"
            else:
                want_own: dict[bytes, dict[bytes, bytes]] = {}
                for q in self.queues.values():
                    want_own.update(q.native_fields(self.run_ids[x.name]))
                assert own == want_own, f"after step {self.k - 1} on {x.name}"
            seen[x.name] = normalise(space, symbolic, self.windows[x.name])
            assert seen[x.name] == symbolic, f"after step {self.k - 1} on {x.name}"
        first = next(iter(seen.values()))
        assert all(v == first for v in seen.values())  # and so equal to each other
        # the two declared reads, on the scripted executors
        q = self.queues[prefix]
        counts = resp2([len(q.sets[p]) for p in ("pending", "active", "schedule", "dead")])
        c, s = SCRIPTS["counts"], SCRIPTS["state"]
        for x in self.executors:
            if x.scripted:
                assert x.raw("EVALSHA", c.sha1, 4, *c.key_names(prefix)) == counts
                for jid in sorted({*self.pool, *q.rows, *q.ghosts()}):
                    r = q.rows.get(jid)
                    assert x.raw("EVALSHA", s.sha1, 1, prefix, jid) == resp2(r.state if r else None)

    # -- the steps -------------------------------------------------------------------

    def step(self, kind: str, c: Choices, payload: bytes, reason: bytes | None) -> None:
        q = c.pick([QUEUES[0], QUEUES[0], QUEUES[0], QUEUES[1]])  # mostly one queue, so jobs meet
        getattr(self, kind)(q, c, payload, reason)

    def admissible(self, q: bytes) -> list[bytes]:
        """Explicit ids that are not a ghost anywhere: a row made for one
        would share a set entry the job core did not make."""
        return [j for j in self.pool if j not in self.queues[q].ghosts()]

    def admit(self, q: bytes, c: Choices, payload: bytes, reason: bytes | None) -> None:
        jid = c.pick([b"*", *self.admissible(q)])
        model = self.queues[q]
        if c.pick([True, False]):
            self.run(q, "enqueue", (jid, payload), model.enqueue(self.k, jid, payload))
        else:
            run_at = c.pick(RUN_ATS)
            self.run(q, "schedule", (jid, payload, run_at), model.schedule(self.k, jid, payload, run_at))

    def claim(self, q: bytes, c: Choices, payload: bytes, reason: bytes | None) -> None:
        waiting = [p for p, m in self.queues.items() if m.sets["pending"]]
        if waiting and c.pick([True, True, True, False]):
            q = c.pick(waiting)
        lease = c.pick(LEASES)
        self.run(q, "claim", (lease,), self.queues[q].claim(self.k, lease))

    def settle(self, q: bytes, c: Choices, payload: bytes, reason: bytes | None) -> None:
        """A call on a held job (or FAIL repeated / REPROCESS on a dead one)."""
        options = [(p, j) for p, m in self.queues.items() for j in (*m.held(), *m.dead())]
        if not options:
            return self.admit(q, c, payload, reason)
        q, jid = c.pick(options)
        model = self.queues[q]
        token = b"%d" % model.rows[jid].attempts
        if model.rows[jid].state == b"dead":
            if c.pick([True, False]):
                return self.run(q, "reprocess", (jid,), model.reprocess(self.k, jid))
            return self.fail(q, jid, token, c, reason)
        verb = c.pick(["extend", "extends", "complete", "delay", "fail", "fail"])
        if verb == "extend":
            lease = c.pick(LEASES)
            self.run(q, "extend", (jid, token, lease), model.extend(self.k, jid, token, lease))
        elif verb == "extends":
            self.extends(q, jid, c)
        elif verb == "complete":
            self.run(q, "complete", (jid, token), model.complete(self.k, jid, token))
        elif verb == "delay":
            delay = c.pick(DELAYS)
            self.run(q, "delay", (jid, token, delay), model.delay(self.k, jid, token, delay))
        else:
            self.fail(q, jid, token, c, reason)
        return None

    def fail(self, q: bytes, jid: bytes, token: bytes, c: Choices, reason: bytes | None) -> None:
        r = self.queues[q].rows[jid]
        # a max_attempts on which both retry caps agree (docs/executors.md E3)
        max_attempts = c.pick([m for m in (1, 2, 3, 1000) if (r.failures + 1 >= m) == (r.attempts >= m)])
        backoff = c.pick(BACKOFFS)
        argv = (jid, token, max_attempts, backoff) + (() if reason is None else (reason,))
        self.run(q, "fail", argv, self.queues[q].fail(self.k, jid, token, max_attempts, backoff, reason))

    def extends(self, q: bytes, first: bytes, c: Choices) -> None:
        """Pairs judged alone: held jobs with their token, stale tokens
        ("07" for "7", the next number), rows elsewhere, ghosts, strangers."""
        model = self.queues[q]
        others = sorted({*self.pool, *model.rows, *model.ghosts()})
        pairs = []
        for i in range(c.pick([1, 2, 3, 4])):
            jid = first if i == 0 else c.pick([*model.held(), *others])
            right = b"%d" % model.rows[jid].attempts if jid in model.rows else b"1"
            pairs.append((jid, c.pick([right, right, b"0" + right, b"%d" % (int(right) + 1)])))
        lease = c.pick(LEASES)
        argv = (lease, *[v for pair in pairs for v in pair])
        self.run(q, "extends", argv, model.extends(self.k, lease, pairs))

    def sweep(self, q: bytes, c: Choices, payload: bytes, reason: bytes | None) -> None:
        """PROMOTE or STALLED.CHECK, mostly on a queue with something to sweep."""
        busy = [p for p, m in self.queues.items() if m.sets["schedule"] or m.sets["active"]]
        if busy and c.pick([True, True, True, False]):
            q = c.pick(busy)
        model = self.queues[q]
        limit = c.pick(LIMITS)
        if c.pick([True, False]):
            argv: tuple = () if limit is None else (limit,)
            self.run(q, "promote", argv, model.promote(self.k, limit or 1000))
        else:
            max_stalled = c.pick([0, 1, 2])
            argv = (max_stalled,) if limit is None else (max_stalled, limit)
            self.run(q, "stalled.check", argv, model.stalled_check(self.k, max_stalled, limit or 1000))

    def disturb(self, q: bytes, c: Choices, payload: bytes, reason: bytes | None) -> None:
        """Pause or resume the queue, lose a row behind the job core's back
        (its id becomes a ghost), or move the clocks on."""
        model = self.queues[q]
        what = c.pick(["pause", "ghost", "clock"])
        ghostable = sorted(j for p in ("pending", "schedule", "active") for j in model.sets[p]
                           if j in model.rows and not j.isdigit())  # a `*` id could land on a decimal ghost
        if what == "pause":
            if model.paused:
                self.raw("DEL", q + b"paused")
            else:
                self.raw("SET", q + b"paused", b"1")
            model.paused = not model.paused
        elif what == "ghost" and ghostable:
            jid = c.pick(ghostable)
            self.raw("DEL", q + b"job:" + jid)
            del model.rows[jid]
        else:
            ms = c.pick([1, 50, 5000, 120_000])
            for x in self.executors:
                x.advance(ms)  # a test clock jumps; a real one just runs
        self.check(q)


LINEUPS = {
    "native+valkey-lua": ("native", "valkey-lua"),
    "native+trafikey-lua+valkey-lua": ("native", "trafikey-lua", "valkey-lua"),
}


@pytest.mark.slow
@pytest.mark.parametrize("lineup", list(LINEUPS))
def test_random_sequences_agree(request: pytest.FixtureRequest, lineup: str) -> None:
    """Long random sequences of valid calls, run in lockstep by every
    executor of the lineup: (a) and (c) now; all three once trafikey-server
    serves EVALSHA."""
    names = LINEUPS[lineup]
    executors = tuple(make_executor(kind, request, db=i) for i, kind in enumerate(names))
    run_ids = {x.name: x.r.info("server")["run_id"].encode() for x in executors}

    # No shrinking: every example costs live round trips, and shrinking one
    # can take minutes. A failure names its step, verb, arguments and
    # executor, and hypothesis prints the whole program to replay.
    @settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck),
              phases=(Phase.explicit, Phase.reuse, Phase.generate))
    @given(pool=st.lists(some_ids, max_size=4, unique=True), program=programs)
    def sequences(pool: list[bytes], program: list[tuple]) -> None:
        runner = Conformance(executors, run_ids, pool)
        for kind, numbers, payload, reason in program:
            runner.step(kind, Choices(numbers), payload, reason)

    try:
        sequences()
    finally:
        for x in executors:
            x.close()

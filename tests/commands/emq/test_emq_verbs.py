"""The EMQ job core's ordinary paths, verb by verb, over a real socket.

Each test sets a queue up (mostly with plain HSET/ZADD, so one verb is tested
at a time), runs one verb on a frozen test clock, and compares the reply and
then the WHOLE keyspace -- every key, its type, every field, member and
score -- with what the EchoMQ job-core specification (§3) and
docs/job-core.md say it must be. Expected values are worked out
by hand from the spec, never read back from the server.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import redis
from helpers.emq_model import MAX_SCORE, VERSION_TOKENS, Queue, server_keyspace
from helpers.resp_wire import Wire

Q = Queue(b"emq:{t}:")
T0 = 1_700_000_000_000  # the frozen clock's "now" in every test
OTHER_RUN = b"f" * 40  # a run_id that is not this server's

Entry = tuple[str, object]


@pytest.fixture
def r(emq: redis.Redis) -> Iterator[redis.Redis]:
    """The job-core client with the clock frozen at T0."""
    assert emq.execute_command("TRAFIKEY.CLOCK", "FREEZE", T0) == T0
    yield emq


@pytest.fixture
def run_id(r: redis.Redis) -> bytes:
    rid = r.info("server")["run_id"]
    assert len(rid) == 40
    return rid.encode()


def call(r: redis.Redis, verb: str, *argv: bytes | str | int) -> object:
    return r.execute_command(*Q.request(verb, *argv))


def dump(r: redis.Redis) -> dict[bytes, Entry]:
    return server_keyspace(r)


def digest(r: redis.Redis) -> bytes:
    return r.execute_command("DEBUG", "DIGEST")


def Z(members: dict[bytes, int]) -> Entry:  # reads like a type tag
    return ("zset", members)


def H(fields: dict[bytes, bytes]) -> Entry:
    return ("hash", fields)


def S(value: bytes) -> Entry:
    return ("string", value)


def row(state: bytes, attempts: bytes = b"0", payload: bytes = b"p", **extra: bytes) -> Entry:
    fields = {b"state": state, b"attempts": attempts, b"payload": payload}
    fields.update({k.encode(): v for k, v in extra.items()})
    return H(fields)


def put_row(r: redis.Redis, job: bytes, state: bytes, attempts: bytes = b"0", payload: bytes = b"p",
            **extra: bytes) -> None:
    """A row written by hand, as a verb (or a script) would have left it."""
    fields = {b"state": state, b"attempts": attempts, b"payload": payload}
    fields.update({k.encode(): v for k, v in extra.items()})
    r.hset(Q.row(job), mapping=fields)  # type: ignore[arg-type]


def assert_nothing_written(r: redis.Redis, before: dict[bytes, Entry], before_digest: bytes) -> None:
    assert dump(r) == before
    assert digest(r) == before_digest


# ---------------------------------------------------------------- ENQUEUE


def test_enqueue_explicit_ids_take_seq_as_score(r: redis.Redis) -> None:
    """Explicit ids: INCR P..seq is the score, the row starts at attempts 0."""
    assert call(r, "EMQ.ENQUEUE", b"job1", b"pay\x00load\r\n") == b"job1"
    assert call(r, "EMQ.ENQUEUE", b"job2", b"") == b"job2"
    assert dump(r) == {
        Q.seq: S(b"2"),
        Q.pending: Z({b"job1": 1, b"job2": 2}),
        Q.row(b"job1"): row(b"pending", payload=b"pay\x00load\r\n"),
        Q.row(b"job2"): row(b"pending", payload=b""),
    }


def test_enqueue_star_takes_next_seq_skipping_taken_numbers(r: redis.Redis) -> None:
    """`*` is the next P..seq, moving past numbers that already have a row
    (any key under that name, decision 8); seq ends at the number used."""
    assert call(r, "EMQ.ENQUEUE", b"2", b"a") == b"2"  # seq 1, score 1
    r.set(Q.row(b"4"), b"not a row")
    assert call(r, "EMQ.ENQUEUE", b"*", b"b") == b"3"  # 2 has a row
    assert call(r, "EMQ.ENQUEUE", b"*", b"c") == b"5"  # 4 is taken
    assert call(r, "EMQ.ENQUEUE", b"*", b"d") == b"6"
    assert dump(r) == {
        Q.seq: S(b"6"),
        Q.pending: Z({b"2": 1, b"3": 3, b"5": 5, b"6": 6}),
        Q.row(b"2"): row(b"pending", payload=b"a"),
        Q.row(b"3"): row(b"pending", payload=b"b"),
        Q.row(b"4"): S(b"not a row"),
        Q.row(b"5"): row(b"pending", payload=b"c"),
        Q.row(b"6"): row(b"pending", payload=b"d"),
    }


def test_enqueue_star_on_a_fresh_queue_is_one(r: redis.Redis) -> None:
    assert call(r, "EMQ.ENQUEUE", b"*", b"x") == b"1"
    assert dump(r) == {Q.seq: S(b"1"), Q.pending: Z({b"1": 1}), Q.row(b"1"): row(b"pending", payload=b"x")}


@pytest.mark.parametrize("state", [b"pending", b"active", b"dead"])
def test_enqueue_existing_row_is_nil_and_writes_nothing(r: redis.Redis, state: bytes) -> None:
    """Idempotent admission: a row under that id means nil, not even seq."""
    put_row(r, b"a", state, attempts=b"3")
    r.set(Q.seq, b"41")
    before, d = dump(r), digest(r)
    assert call(r, "EMQ.ENQUEUE", b"a", b"other") is None
    assert_nothing_written(r, before, d)


def test_enqueue_seq_may_reach_exactly_2_pow_53(r: redis.Redis) -> None:
    """2^53 itself is a valid score; only passing it is refused."""
    r.set(Q.seq, MAX_SCORE - 1)
    assert call(r, "EMQ.ENQUEUE", b"a", b"p") == b"a"
    assert dump(r) == {Q.seq: S(b"%d" % MAX_SCORE), Q.pending: Z({b"a": MAX_SCORE}), Q.row(b"a"): row(b"pending")}


# ---------------------------------------------------------------- SCHEDULE


def test_schedule_explicit_id_leaves_seq_alone_and_allows_the_past(r: redis.Redis) -> None:
    assert call(r, "EMQ.SCHEDULE", b"s1", b"later", T0 + 5000) == b"s1"
    assert call(r, "EMQ.SCHEDULE", b"s0", b"past", 0) == b"s0"
    assert call(r, "EMQ.SCHEDULE", b"top", b"x", MAX_SCORE) == b"top"
    assert dump(r) == {
        Q.schedule: Z({b"s1": T0 + 5000, b"s0": 0, b"top": MAX_SCORE}),
        Q.row(b"s1"): row(b"scheduled", payload=b"later"),
        Q.row(b"s0"): row(b"scheduled", payload=b"past"),
        Q.row(b"top"): row(b"scheduled", payload=b"x"),
    }


def test_schedule_star_takes_a_seq_number(r: redis.Redis) -> None:
    put_row(r, b"1", b"scheduled")
    r.zadd(Q.schedule, {b"1": 7})
    assert call(r, "EMQ.SCHEDULE", b"*", b"q", T0) == b"2"
    assert dump(r) == {
        Q.seq: S(b"2"),
        Q.schedule: Z({b"1": 7, b"2": T0}),
        Q.row(b"1"): row(b"scheduled"),
        Q.row(b"2"): row(b"scheduled", payload=b"q"),
    }


def test_schedule_existing_row_is_nil_and_writes_nothing(r: redis.Redis) -> None:
    put_row(r, b"a", b"scheduled")
    r.zadd(Q.schedule, {b"a": T0})
    before, d = dump(r), digest(r)
    assert call(r, "EMQ.SCHEDULE", b"a", b"other", T0 + 1) is None
    assert_nothing_written(r, before, d)


def test_schedule_explicit_id_ignores_a_broken_seq(r: redis.Redis) -> None:
    """Decision 2/8: SCHEDULE with an explicit id never touches P..seq."""
    r.set(Q.seq, b"not a number")
    assert call(r, "EMQ.SCHEDULE", b"a", b"p", 5) == b"a"
    assert dump(r) == {Q.seq: S(b"not a number"), Q.schedule: Z({b"a": 5}), Q.row(b"a"): row(b"scheduled")}


# ---------------------------------------------------------------- CLAIM


@pytest.mark.parametrize("paused_type", ["string", "hash"])
def test_claim_on_paused_queue_is_empty_and_writes_nothing(r: redis.Redis, paused_type: str) -> None:
    """P..paused (of any type) gates CLAIM; even a ghost head stays put."""
    put_row(r, b"a", b"pending")
    r.zadd(Q.pending, {b"ghost": 0, b"a": 1})
    if paused_type == "string":
        r.set(Q.paused, b"1")
    else:
        r.hset(Q.paused, b"f", b"v")
    before, d = dump(r), digest(r)
    assert call(r, "EMQ.CLAIM", 1000) == []
    assert_nothing_written(r, before, d)


def test_claim_on_empty_queue_is_empty_and_writes_nothing(r: redis.Redis) -> None:
    put_row(r, b"a", b"scheduled")
    r.zadd(Q.schedule, {b"a": T0})
    before, d = dump(r), digest(r)
    assert call(r, "EMQ.CLAIM", 1000) == []
    assert_nothing_written(r, before, d)


def test_claim_removes_a_ghost_head_and_nothing_else(r: redis.Redis) -> None:
    put_row(r, b"a", b"pending")
    r.zadd(Q.pending, {b"ghost": 1, b"a": 2})
    assert call(r, "EMQ.CLAIM", 1000) == []
    assert dump(r) == {Q.pending: Z({b"a": 2}), Q.row(b"a"): row(b"pending")}
    assert not r.exists(Q.row(b"ghost"))  # no row created for the ghost


def test_claim_moves_the_head_to_active(r: redis.Redis, run_id: bytes) -> None:
    """The lowest score (ties in member order) is claimed: payload returned,
    attempts + 1, lease_epoch = run_id, active score = now + lease_ms."""
    put_row(r, b"b", b"pending", payload=b"B")
    put_row(r, b"a", b"pending", payload=b"\x00bin\r\n")
    put_row(r, b"c", b"pending", payload=b"C")
    r.zadd(Q.pending, {b"b": 5, b"a": 5, b"c": 9})
    assert call(r, "EMQ.CLAIM", 30000) == [b"a", b"\x00bin\r\n", 1]
    assert dump(r) == {
        Q.pending: Z({b"b": 5, b"c": 9}),
        Q.active: Z({b"a": T0 + 30000}),
        Q.row(b"a"): row(b"active", b"1", b"\x00bin\r\n", lease_epoch=run_id),
        Q.row(b"b"): row(b"pending", payload=b"B"),
        Q.row(b"c"): row(b"pending", payload=b"C"),
    }
    assert call(r, "EMQ.CLAIM", 1) == [b"b", b"B", 1]
    assert dump(r)[Q.active] == Z({b"a": T0 + 30000, b"b": T0 + 1})


def test_claim_increments_attempts_from_its_current_value(r: redis.Redis, run_id: bytes) -> None:
    put_row(r, b"a", b"pending", attempts=b"4", failures=b"2", stalled=b"1")
    r.zadd(Q.pending, {b"a": 3})
    assert call(r, "EMQ.CLAIM", 10) == [b"a", b"p", 5]
    assert dump(r) == {
        Q.active: Z({b"a": T0 + 10}),
        Q.row(b"a"): row(b"active", b"5", failures=b"2", stalled=b"1", lease_epoch=run_id),
    }


def test_claim_with_no_payload_field_replies_nil_payload(r: redis.Redis, run_id: bytes) -> None:
    """Decision 12: a missing payload field is returned as nil."""
    r.hset(Q.row(b"a"), mapping={b"state": b"pending", b"attempts": b"0"})
    r.zadd(Q.pending, {b"a": 1})
    assert call(r, "EMQ.CLAIM", 10) == [b"a", None, 1]
    assert dump(r) == {
        Q.active: Z({b"a": T0 + 10}),
        Q.row(b"a"): H({b"state": b"active", b"attempts": b"1", b"lease_epoch": run_id}),
    }


def test_claim_lease_may_end_exactly_at_2_pow_53(r: redis.Redis) -> None:
    now = MAX_SCORE - 1000
    r.execute_command("TRAFIKEY.CLOCK", "FREEZE", now)
    put_row(r, b"a", b"pending")
    r.zadd(Q.pending, {b"a": 1})
    assert call(r, "EMQ.CLAIM", 1000) == [b"a", b"p", 1]
    assert dump(r)[Q.active] == Z({b"a": MAX_SCORE})


def test_claim_lane_row_is_claimed(r: redis.Redis, run_id: bytes) -> None:
    """Decision 10: CLAIM does not check lane or flow fields."""
    put_row(r, b"a", b"pending", group=b"g", parent=b"p1")
    r.zadd(Q.pending, {b"a": 1})
    assert call(r, "EMQ.CLAIM", 5) == [b"a", b"p", 1]
    assert dump(r) == {
        Q.active: Z({b"a": T0 + 5}),
        Q.row(b"a"): row(b"active", b"1", group=b"g", parent=b"p1", lease_epoch=run_id),
    }


# ---------------------------------------------------------------- EXTEND / EXTENDS


def test_extend_rescores_from_now_and_stamps_run_id(r: redis.Redis, run_id: bytes) -> None:
    put_row(r, b"a", b"active", attempts=b"3", lease_epoch=OTHER_RUN)
    r.zadd(Q.active, {b"a": T0 + 1000})
    assert r.execute_command("TRAFIKEY.CLOCK", "ADVANCE", 500) == T0 + 500
    assert call(r, "EMQ.EXTEND", b"a", b"3", 2000) == 1
    assert dump(r) == {Q.active: Z({b"a": T0 + 2500}), Q.row(b"a"): row(b"active", b"3", lease_epoch=run_id)}


def test_extend_a_lease_past_its_deadline(r: redis.Redis, run_id: bytes) -> None:
    """No sweep has recovered it yet, so its holder may still extend it."""
    put_row(r, b"a", b"active", attempts=b"1", lease_epoch=run_id)
    r.zadd(Q.active, {b"a": T0 - 10_000})
    assert call(r, "EMQ.EXTEND", b"a", b"1", 100) == 1
    assert dump(r) == {Q.active: Z({b"a": T0 + 100}), Q.row(b"a"): row(b"active", b"1", lease_epoch=run_id)}


def test_extend_lane_row_is_allowed(r: redis.Redis, run_id: bytes) -> None:
    """Decision 10: EXTEND does not check lane or flow fields."""
    put_row(r, b"a", b"active", attempts=b"1", group=b"g", parent=b"x")
    r.zadd(Q.active, {b"a": T0})
    assert call(r, "EMQ.EXTEND", b"a", b"1", 7) == 1
    assert dump(r) == {
        Q.active: Z({b"a": T0 + 7}),
        Q.row(b"a"): row(b"active", b"1", group=b"g", parent=b"x", lease_epoch=run_id),
    }


def test_extends_judges_each_pair_alone(r: redis.Redis, run_id: bytes) -> None:
    """1 for a held active lease; 0 (and no write) for a ghost, a stale
    token ("02" is not "2") and a row that is not active."""
    put_row(r, b"a", b"active", attempts=b"1")
    put_row(r, b"c", b"active", attempts=b"2", lease_epoch=OTHER_RUN)
    put_row(r, b"d", b"pending", attempts=b"1")
    put_row(r, b"e", b"active", attempts=b"1", lease_epoch=OTHER_RUN)
    r.zadd(Q.active, {b"a": T0 + 1, b"ghost": T0 + 2, b"c": T0 + 3, b"e": T0 - 5})
    r.zadd(Q.pending, {b"d": 1})
    reply = call(r, "EMQ.EXTENDS", 5000, b"a", b"1", b"ghost", b"1", b"c", b"02", b"d", b"1", b"e", b"1")
    assert reply == [1, 0, 0, 0, 1]
    assert dump(r) == {
        Q.active: Z({b"a": T0 + 5000, b"ghost": T0 + 2, b"c": T0 + 3, b"e": T0 + 5000}),
        Q.pending: Z({b"d": 1}),
        Q.row(b"a"): row(b"active", b"1", lease_epoch=run_id),
        Q.row(b"c"): row(b"active", b"2", lease_epoch=OTHER_RUN),
        Q.row(b"d"): row(b"pending", b"1"),
        Q.row(b"e"): row(b"active", b"1", lease_epoch=run_id),
    }


def test_extends_all_zero_writes_nothing(r: redis.Redis) -> None:
    put_row(r, b"a", b"active", attempts=b"7")
    r.zadd(Q.active, {b"a": T0})
    before, d = dump(r), digest(r)
    assert call(r, "EMQ.EXTENDS", 10, b"a", b"07", b"nobody", b"0") == [0, 0]
    assert_nothing_written(r, before, d)


# ---------------------------------------------------------------- COMPLETE


def test_complete_deletes_the_row(r: redis.Redis) -> None:
    put_row(r, b"a", b"active", attempts=b"2", failures=b"1", lease_epoch=OTHER_RUN)
    put_row(r, b"b", b"active", attempts=b"1")
    r.zadd(Q.active, {b"a": T0 + 10, b"b": T0 + 20})
    assert call(r, "EMQ.COMPLETE", b"a", b"2") == 1
    assert dump(r) == {Q.active: Z({b"b": T0 + 20}), Q.row(b"b"): row(b"active", b"1")}
    assert call(r, "EMQ.COMPLETE", b"b", b"1") == 1
    assert dump(r) == {}


# ---------------------------------------------------------------- DELAY


@pytest.mark.parametrize("delay_ms", [0, 700])
def test_delay_moves_to_schedule_without_counter_changes(r: redis.Redis, delay_ms: int) -> None:
    put_row(r, b"a", b"active", attempts=b"1", failures=b"2", stalled=b"1", lease_epoch=OTHER_RUN)
    r.zadd(Q.active, {b"a": T0 + 10})
    assert call(r, "EMQ.DELAY", b"a", b"1", delay_ms) == 1
    assert dump(r) == {
        Q.schedule: Z({b"a": T0 + delay_ms}),
        Q.row(b"a"): row(b"scheduled", b"1", failures=b"2", stalled=b"1", lease_epoch=OTHER_RUN),
    }


def test_delay_of_a_flow_child_is_allowed(r: redis.Redis) -> None:
    """Only COMPLETE and FAIL refuse a flow child."""
    put_row(r, b"a", b"active", attempts=b"1", parent=b"P1")
    r.zadd(Q.active, {b"a": T0})
    assert call(r, "EMQ.DELAY", b"a", b"1", 5) == 1
    assert dump(r) == {Q.schedule: Z({b"a": T0 + 5}), Q.row(b"a"): row(b"scheduled", b"1", parent=b"P1")}


# ---------------------------------------------------------------- FAIL


def test_fail_to_dead_when_failures_reach_max_attempts(r: redis.Redis) -> None:
    put_row(r, b"a", b"active", attempts=b"1", lease_epoch=OTHER_RUN)
    r.zadd(Q.active, {b"a": T0 + 10})
    assert call(r, "EMQ.FAIL", b"a", b"1", 1, 0, b"boom") == b"dead"
    assert dump(r) == {
        Q.dead: Z({b"a": T0}),
        Q.row(b"a"): row(b"dead", b"1", failures=b"1", error=b"boom", lease_epoch=OTHER_RUN),
    }


def test_fail_repeated_terminal_failure_replies_dead_and_writes_nothing(r: redis.Redis) -> None:
    put_row(r, b"a", b"active", attempts=b"1")
    r.zadd(Q.active, {b"a": T0})
    assert call(r, "EMQ.FAIL", b"a", b"1", 1, 0) == b"dead"
    r.execute_command("TRAFIKEY.CLOCK", "ADVANCE", 1000)
    before, d = dump(r), digest(r)
    assert before == {Q.dead: Z({b"a": T0}), Q.row(b"a"): row(b"dead", b"1", failures=b"1")}
    assert call(r, "EMQ.FAIL", b"a", b"1", 1, 0, b"again") == b"dead"
    assert call(r, "EMQ.FAIL", b"a", b"1", 50, 500) == b"dead"
    assert_nothing_written(r, before, d)


def test_fail_failures_accumulate_to_dead(r: redis.Redis) -> None:
    put_row(r, b"a", b"active", attempts=b"3", failures=b"2")
    r.zadd(Q.active, {b"a": T0})
    assert call(r, "EMQ.FAIL", b"a", b"3", 3, 100) == b"dead"
    assert dump(r) == {Q.dead: Z({b"a": T0}), Q.row(b"a"): row(b"dead", b"3", failures=b"3")}


def test_fail_with_backoff_schedules_and_spends_failures_not_attempts(r: redis.Redis) -> None:
    """The retry budget is `failures`: attempts 9 > max_attempts 2 still retries."""
    put_row(r, b"a", b"active", attempts=b"9")
    r.zadd(Q.active, {b"a": T0})
    assert call(r, "EMQ.FAIL", b"a", b"9", 2, 5000) == b"scheduled"
    assert dump(r) == {Q.schedule: Z({b"a": T0 + 5000}), Q.row(b"a"): row(b"scheduled", b"9", failures=b"1")}


def test_fail_without_backoff_requeues_with_fresh_seq(r: redis.Redis) -> None:
    """backoff 0: back of the line (INCR P..seq); an empty reason is written."""
    put_row(r, b"a", b"active", attempts=b"1", error=b"old")
    put_row(r, b"b", b"pending")
    r.zadd(Q.active, {b"a": T0})
    r.zadd(Q.pending, {b"b": 7})
    r.set(Q.seq, 7)
    assert call(r, "EMQ.FAIL", b"a", b"1", 3, 0, b"") == b"pending"
    assert dump(r) == {
        Q.seq: S(b"8"),
        Q.pending: Z({b"b": 7, b"a": 8}),
        Q.row(b"a"): row(b"pending", b"1", failures=b"1", error=b""),
        Q.row(b"b"): row(b"pending"),
    }


def test_fail_without_reason_keeps_the_old_error(r: redis.Redis) -> None:
    """Without a reason, `error` is not written (an old one stays)."""
    put_row(r, b"a", b"active", attempts=b"2", error=b"old")
    r.zadd(Q.active, {b"a": T0})
    assert call(r, "EMQ.FAIL", b"a", b"2", 5, 1) == b"scheduled"
    assert dump(r) == {Q.schedule: Z({b"a": T0 + 1}), Q.row(b"a"): row(b"scheduled", b"2", failures=b"1", error=b"old")}


# ---------------------------------------------------------------- PROMOTE


def test_promote_earliest_first_up_to_limit_with_fresh_seq(r: redis.Redis) -> None:
    for job in (b"a", b"b", b"c", b"d"):
        put_row(r, job, b"scheduled")
    r.zadd(Q.schedule, {b"a": T0 - 3, b"b": T0 - 2, b"c": T0, b"d": T0 + 1})
    r.set(Q.seq, 5)
    assert call(r, "EMQ.PROMOTE", 2) == 2
    assert dump(r) == {
        Q.seq: S(b"7"),
        Q.schedule: Z({b"c": T0, b"d": T0 + 1}),
        Q.pending: Z({b"a": 6, b"b": 7}),
        Q.row(b"a"): row(b"pending"),
        Q.row(b"b"): row(b"pending"),
        Q.row(b"c"): row(b"scheduled"),
        Q.row(b"d"): row(b"scheduled"),
    }
    assert call(r, "EMQ.PROMOTE") == 1  # default limit; d is not due yet
    assert dump(r)[Q.pending] == Z({b"a": 6, b"b": 7, b"c": 8})
    assert dump(r)[Q.schedule] == Z({b"d": T0 + 1})


def test_promote_ghosts_use_the_limit_but_are_not_counted(r: redis.Redis) -> None:
    put_row(r, b"a", b"scheduled")
    put_row(r, b"b", b"scheduled")
    r.zadd(Q.schedule, {b"ghost": T0 - 5, b"a": T0 - 4, b"b": T0 - 3})
    assert call(r, "EMQ.PROMOTE", 2) == 1
    assert dump(r) == {
        Q.seq: S(b"1"),
        Q.schedule: Z({b"b": T0 - 3}),
        Q.pending: Z({b"a": 1}),
        Q.row(b"a"): row(b"pending"),
        Q.row(b"b"): row(b"scheduled"),
    }


def test_promote_same_millisecond_in_id_byte_order(r: redis.Redis) -> None:
    ids = [b"b", b"a", b"B", b"aa", b"\x01", b"10", b"9"]
    for job in ids:
        put_row(r, job, b"scheduled")
    r.zadd(Q.schedule, dict.fromkeys(ids, T0))
    assert call(r, "EMQ.PROMOTE") == len(ids)
    order = sorted(ids)  # bytes order: \x01 < 10 < 9 < B < a < aa < b
    assert order == [b"\x01", b"10", b"9", b"B", b"a", b"aa", b"b"]
    expected: dict[bytes, Entry] = {Q.seq: S(b"7"), Q.pending: Z({job: n for n, job in enumerate(order, 1)})}
    expected.update({Q.row(job): row(b"pending") for job in ids})
    assert dump(r) == expected


def test_promote_a_schedule_in_the_past_and_lane_rows(r: redis.Redis) -> None:
    """SCHEDULE's past run_at is moved by PROMOTE; lane rows and flow
    children are promoted (decision 6)."""
    assert call(r, "EMQ.SCHEDULE", b"old", b"p", 0) == b"old"
    put_row(r, b"lane", b"scheduled", group=b"g")
    put_row(r, b"kid", b"scheduled", parent=b"par")
    r.zadd(Q.schedule, {b"lane": 1, b"kid": 2})
    assert call(r, "EMQ.PROMOTE", 1000) == 3
    assert dump(r) == {
        Q.seq: S(b"3"),
        Q.pending: Z({b"old": 1, b"lane": 2, b"kid": 3}),
        Q.row(b"old"): row(b"pending"),
        Q.row(b"lane"): row(b"pending", group=b"g"),
        Q.row(b"kid"): row(b"pending", parent=b"par"),
    }


def test_promote_nothing_due_writes_nothing(r: redis.Redis) -> None:
    put_row(r, b"a", b"scheduled")
    r.zadd(Q.schedule, {b"a": T0 + 1})
    before, d = dump(r), digest(r)
    assert call(r, "EMQ.PROMOTE") == 0
    assert_nothing_written(r, before, d)


# ---------------------------------------------------------------- RESCHEDULE


@pytest.mark.parametrize("run_at", [0, 42, MAX_SCORE])
def test_reschedule_rescores_inside_schedule(r: redis.Redis, run_at: int) -> None:
    put_row(r, b"a", b"scheduled", attempts=b"2")
    r.zadd(Q.schedule, {b"a": T0 + 100})
    assert call(r, "EMQ.RESCHEDULE", b"a", run_at) == 1
    assert dump(r) == {Q.schedule: Z({b"a": run_at}), Q.row(b"a"): row(b"scheduled", b"2")}


# ---------------------------------------------------------------- REPROCESS


def test_reprocess_keeps_every_counter(r: redis.Redis) -> None:
    put_row(r, b"a", b"dead", attempts=b"3", failures=b"3", stalled=b"1", error=b"x", lease_epoch=OTHER_RUN)
    r.zadd(Q.dead, {b"a": T0 - 1})
    r.set(Q.seq, 10)
    assert call(r, "EMQ.REPROCESS", b"a") == 1
    assert dump(r) == {
        Q.seq: S(b"11"),
        Q.pending: Z({b"a": 11}),
        Q.row(b"a"): row(b"pending", b"3", failures=b"3", stalled=b"1", error=b"x", lease_epoch=OTHER_RUN),
    }


# ---------------------------------------------------------------- REQUEUE


def test_requeue_releases_the_lease_without_counters(r: redis.Redis, run_id: bytes) -> None:
    put_row(r, b"a", b"active", attempts=b"2", lease_epoch=run_id)
    put_row(r, b"b", b"pending")
    r.zadd(Q.active, {b"a": T0 + 100})
    r.zadd(Q.pending, {b"b": 1})
    r.set(Q.seq, 1)
    assert call(r, "EMQ.REQUEUE", b"a", b"2") == 1
    assert dump(r) == {
        Q.seq: S(b"2"),
        Q.pending: Z({b"b": 1, b"a": 2}),
        Q.row(b"a"): row(b"pending", b"2", lease_epoch=run_id),
        Q.row(b"b"): row(b"pending"),
    }


# ---------------------------------------------------------------- STALLED.CHECK


def test_stalled_check_counted_requeue(r: redis.Redis, run_id: bytes) -> None:
    """Deadline <= now is expired (earliest first); later ones stay."""
    put_row(r, b"a", b"active", attempts=b"1", lease_epoch=run_id)
    put_row(r, b"b", b"active", attempts=b"1", lease_epoch=run_id)
    put_row(r, b"c", b"active", attempts=b"1", lease_epoch=run_id)
    r.zadd(Q.active, {b"b": T0, b"a": T0 - 1, b"c": T0 + 1})
    assert call(r, "EMQ.STALLED.CHECK", 1) == [[b"a", b"b"], []]
    assert dump(r) == {
        Q.seq: S(b"2"),
        Q.active: Z({b"c": T0 + 1}),
        Q.pending: Z({b"a": 1, b"b": 2}),
        Q.row(b"a"): row(b"pending", b"1", stalled=b"1", lease_epoch=run_id),
        Q.row(b"b"): row(b"pending", b"1", stalled=b"1", lease_epoch=run_id),
        Q.row(b"c"): row(b"active", b"1", lease_epoch=run_id),
    }


@pytest.mark.parametrize(("stalled", "max_stalled"), [(b"1", 1), (None, 0), (b"4", 2)])
def test_stalled_check_counted_dead_past_max_stalled(
    r: redis.Redis, run_id: bytes, stalled: bytes | None, max_stalled: int
) -> None:
    extra = {"stalled": stalled} if stalled is not None else {}
    put_row(r, b"a", b"active", attempts=b"2", lease_epoch=run_id, **extra)
    r.zadd(Q.active, {b"a": T0 - 100})
    assert call(r, "EMQ.STALLED.CHECK", max_stalled) == [[], [b"a"]]
    n = b"%d" % (int(stalled or b"0") + 1)
    assert dump(r) == {Q.dead: Z({b"a": T0}), Q.row(b"a"): row(b"dead", b"2", stalled=n, lease_epoch=run_id)}


def test_stalled_check_other_run_id_is_not_counted(r: redis.Redis) -> None:
    """A lease stamped by another run crossed a restart: requeued with no
    stall counted (even at max_stalled 0), lease_epoch left as it was."""
    put_row(r, b"a", b"active", attempts=b"1", stalled=b"3", lease_epoch=OTHER_RUN)
    put_row(r, b"b", b"active", attempts=b"1", lease_epoch=b"")
    r.zadd(Q.active, {b"a": T0 - 2, b"b": T0 - 1})
    assert call(r, "EMQ.STALLED.CHECK", 0) == [[b"a", b"b"], []]
    assert dump(r) == {
        Q.seq: S(b"2"),
        Q.pending: Z({b"a": 1, b"b": 2}),
        Q.row(b"a"): row(b"pending", b"1", stalled=b"3", lease_epoch=OTHER_RUN),
        Q.row(b"b"): row(b"pending", b"1", lease_epoch=b""),
    }


def test_stalled_check_no_stamp_is_counted(r: redis.Redis) -> None:
    """A scripted claim leaves no lease_epoch: its expiry is a counted stall."""
    put_row(r, b"a", b"active", attempts=b"1")
    r.zadd(Q.active, {b"a": T0 - 2})
    assert call(r, "EMQ.STALLED.CHECK", 1) == [[b"a"], []]
    assert dump(r) == {Q.seq: S(b"1"), Q.pending: Z({b"a": 1}), Q.row(b"a"): row(b"pending", b"1", stalled=b"1")}


def test_stalled_check_limit_and_ghosts(r: redis.Redis, run_id: bytes) -> None:
    """Ghosts are removed (and use the limit) but never reported."""
    for job in (b"a", b"b"):
        put_row(r, job, b"active", attempts=b"1", lease_epoch=run_id)
    r.zadd(Q.active, {b"ghost": T0 - 9, b"a": T0 - 8, b"b": T0 - 7})
    assert call(r, "EMQ.STALLED.CHECK", 5, 2) == [[b"a"], []]
    assert dump(r) == {
        Q.seq: S(b"1"),
        Q.active: Z({b"b": T0 - 7}),
        Q.pending: Z({b"a": 1}),
        Q.row(b"a"): row(b"pending", b"1", stalled=b"1", lease_epoch=run_id),
        Q.row(b"b"): row(b"active", b"1", lease_epoch=run_id),
    }
    assert not r.exists(Q.row(b"ghost"))


def test_stalled_check_mixed_reply_in_sweep_order(r: redis.Redis, run_id: bytes) -> None:
    put_row(r, b"r1", b"active", attempts=b"1", lease_epoch=run_id)
    put_row(r, b"d1", b"active", attempts=b"1", stalled=b"2", lease_epoch=run_id)
    put_row(r, b"r2", b"active", attempts=b"1", lease_epoch=OTHER_RUN, stalled=b"9")
    put_row(r, b"d2", b"active", attempts=b"1", stalled=b"2")
    r.zadd(Q.active, {b"r1": T0 - 4, b"d1": T0 - 3, b"r2": T0 - 2, b"d2": T0 - 1})
    r.set(Q.seq, 100)
    assert call(r, "EMQ.STALLED.CHECK", 2) == [[b"r1", b"r2"], [b"d1", b"d2"]]
    assert dump(r) == {
        Q.seq: S(b"102"),
        Q.pending: Z({b"r1": 101, b"r2": 102}),
        Q.dead: Z({b"d1": T0, b"d2": T0}),
        Q.row(b"r1"): row(b"pending", b"1", stalled=b"1", lease_epoch=run_id),
        Q.row(b"d1"): row(b"dead", b"1", stalled=b"3", lease_epoch=run_id),
        Q.row(b"r2"): row(b"pending", b"1", stalled=b"9", lease_epoch=OTHER_RUN),
        Q.row(b"d2"): row(b"dead", b"1", stalled=b"3"),
    }


def test_stalled_check_nothing_due_writes_nothing(r: redis.Redis) -> None:
    put_row(r, b"a", b"active", attempts=b"1")
    r.zadd(Q.active, {b"a": T0 + 1})
    before, d = dump(r), digest(r)
    assert call(r, "EMQ.STALLED.CHECK", 0) == [[], []]
    assert_nothing_written(r, before, d)


def test_advancing_the_clock_past_a_lease_makes_it_recoverable(r: redis.Redis, run_id: bytes) -> None:
    """§6: ENQUEUE, CLAIM, ADVANCE past the lease, sweep: counted stall."""
    assert call(r, "EMQ.ENQUEUE", b"a", b"p") == b"a"
    assert call(r, "EMQ.CLAIM", 1000) == [b"a", b"p", 1]
    assert call(r, "EMQ.STALLED.CHECK", 1) == [[], []]
    r.execute_command("TRAFIKEY.CLOCK", "ADVANCE", 1000)
    assert call(r, "EMQ.STALLED.CHECK", 1) == [[b"a"], []]
    assert dump(r) == {
        Q.seq: S(b"2"),
        Q.pending: Z({b"a": 2}),
        Q.row(b"a"): row(b"pending", b"1", stalled=b"1", lease_epoch=run_id),
    }


def test_stalled_check_same_deadline_in_id_byte_order(r: redis.Redis, run_id: bytes) -> None:
    """Sweep order is the sorted set's: score, then member bytes."""
    ids = [b"b", b"B", b"a", b"10", b"9"]
    for job in ids:
        put_row(r, job, b"active", attempts=b"1", lease_epoch=run_id)
    r.zadd(Q.active, dict.fromkeys(ids, T0))
    order = [b"10", b"9", b"B", b"a", b"b"]
    assert call(r, "EMQ.STALLED.CHECK", 3) == [order, []]
    expected: dict[bytes, Entry] = {Q.seq: S(b"5"), Q.pending: Z({job: n for n, job in enumerate(order, 1)})}
    expected.update({Q.row(job): row(b"pending", b"1", stalled=b"1", lease_epoch=run_id) for job in ids})
    assert dump(r) == expected


def test_extends_the_same_id_twice(r: redis.Redis, run_id: bytes) -> None:
    put_row(r, b"a", b"active", attempts=b"1")
    r.zadd(Q.active, {b"a": T0})
    assert call(r, "EMQ.EXTENDS", 50, b"a", b"1", b"a", b"2", b"a", b"1") == [1, 0, 1]
    assert dump(r) == {Q.active: Z({b"a": T0 + 50}), Q.row(b"a"): row(b"active", b"1", lease_epoch=run_id)}


def test_sets_are_the_keys_given_rows_and_seq_come_from_the_prefix(r: redis.Redis) -> None:
    """§1: the verb writes the set KEYS it is given; row, seq and paused
    are derived from the prefix (the last KEY)."""
    mine = b"elsewhere:{t}:list"
    assert r.execute_command("EMQ.ENQUEUE", 2, mine, Q.prefix, b"a", b"p") == b"a"
    assert r.execute_command("EMQ.CLAIM", 3, mine, b"{t}leases", Q.prefix, 10) == [b"a", b"p", 1]
    assert dump(r)[b"{t}leases"] == Z({b"a": T0 + 10})
    assert dump(r)[Q.seq] == S(b"1")
    assert mine not in dump(r) and Q.pending not in dump(r)


# ---------------------------------------------------------------- VERSION


def test_version_lists_the_fourteen_tokens(r: redis.Redis) -> None:
    assert r.execute_command("EMQ.VERSION") == VERSION_TOKENS
    assert len(VERSION_TOKENS.split(b" ")) == 14


# ---------------------------------------------------------------- reply shapes


@pytest.fixture(params=[2, 3], ids=["resp2", "resp3"])
def wire(request: pytest.FixtureRequest, emq_server: object, r: redis.Redis) -> Iterator[tuple[int, Wire]]:
    w = Wire(emq_server.port)  # type: ignore[attr-defined]
    if request.param == 3:
        assert w.call("HELLO", "3").startswith(b"%")
    yield request.param, w
    w.close()


def test_reply_bytes_in_resp2_and_resp3(r: redis.Redis, wire: tuple[int, Wire]) -> None:
    """The exact reply frames: nil, CLAIM's array with an integer, FAIL's
    bulk state, STALLED.CHECK's array of two arrays."""
    proto, w = wire
    assert w.call(*Q.request("EMQ.ENQUEUE", b"a", b"pay")) == b"$1\r\na\r\n"
    assert w.call(*Q.request("EMQ.ENQUEUE", b"a", b"pay")) == (b"_\r\n" if proto == 3 else b"$-1\r\n")
    assert w.call(*Q.request("EMQ.ENQUEUE", b"b", b"pay")) == b"$1\r\nb\r\n"
    assert w.call(*Q.request("EMQ.CLAIM", 10)) == b"*3\r\n$1\r\na\r\n$3\r\npay\r\n:1\r\n"
    assert w.call(*Q.request("EMQ.CLAIM", 10)) == b"*3\r\n$1\r\nb\r\n$3\r\npay\r\n:1\r\n"
    assert w.call(*Q.request("EMQ.CLAIM", 10)) == b"*0\r\n"
    assert w.call(*Q.request("EMQ.FAIL", b"a", b"1", 5, 100)) == b"$9\r\nscheduled\r\n"
    assert w.call(*Q.request("EMQ.EXTENDS", 10, b"b", b"1", b"x", b"1")) == b"*2\r\n:1\r\n:0\r\n"
    r.execute_command("TRAFIKEY.CLOCK", "ADVANCE", 10)
    assert w.call(*Q.request("EMQ.STALLED.CHECK", 1)) == b"*2\r\n*1\r\n$1\r\nb\r\n*0\r\n"
    assert w.call(*Q.request("EMQ.PROMOTE")) == b":0\r\n"
    assert w.call("EMQ.VERSION") == b"$%d\r\n%s\r\n" % (len(VERSION_TOKENS), VERSION_TOKENS)


def test_redis_py_resp3_decodes_the_replies(emq_server: object, r: redis.Redis) -> None:
    c = redis.Redis(port=emq_server.port, protocol=3)  # type: ignore[attr-defined]
    try:
        assert c.execute_command(*Q.request("EMQ.ENQUEUE", b"a", b"p")) == b"a"
        assert c.execute_command(*Q.request("EMQ.ENQUEUE", b"a", b"p")) is None
        assert c.execute_command(*Q.request("EMQ.CLAIM", 5)) == [b"a", b"p", 1]
        assert c.execute_command(*Q.request("EMQ.FAIL", b"a", b"1", 1, 0)) == b"dead"
        assert c.execute_command(*Q.request("EMQ.STALLED.CHECK", 0)) == [[], []]
    finally:
        c.close()

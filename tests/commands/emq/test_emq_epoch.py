"""The lease epoch: how STALLED.CHECK tells a server restart from a stall.

CLAIM, EXTEND and EXTENDS stamp the row's ``lease_epoch`` with the server's
``run_id`` (spec §1). When a lease expires, STALLED.CHECK (§3) counts a stall
only if the stamp is this server's run_id or absent (a scripted claim leaves
none); a stamp from another run means the lease crossed a restart, and the
job is requeued at the back of pending without touching ``stalled``
(decisions #7: ``lease_epoch`` is left as it was).

A restart cannot be staged in one test process without persistence, so the
foreign stamp is written directly with HSET, as a previous run would have
left it. ``max_stalled`` 0 makes the difference loud: a counted expiry would
send the job to dead (n = 1 > 0), the uncounted path keeps it alive.

All scores here are computed from the spec with the test clock frozen, never
read back from the server first.
"""

from __future__ import annotations

import re

import pytest
import redis
from helpers.resp_wire import Wire
from helpers.servers import Proc, start_trafikey

P = "emq:{ep}:"
ACTIVE, PENDING, DEAD, SEQ = P + "active", P + "pending", P + "dead", P + "seq"
T0 = 1_700_000_000_000  # a frozen "now", ms
OTHER_RUN = "0123456789abcdef0123456789abcdef01234567"
RUN_ID_RE = re.compile(r"[0-9a-f]{40}")


def row(i: str) -> str:
    return P + "job:" + i


def run_id(r: redis.Redis) -> str:
    rid = r.info("server")["run_id"]
    return rid if isinstance(rid, str) else str(rid)


def stalled_check(r: redis.Redis, max_stalled: int, *limit: int) -> list[list[bytes]]:
    return r.execute_command("EMQ.STALLED.CHECK", 4, ACTIVE, PENDING, DEAD, P, max_stalled, *limit)


def put_active(r: redis.Redis, i: str, deadline: int, epoch: str | None, **extra: str) -> None:
    """A row that sits in active with the given lease stamp (or none)."""
    fields = {"state": "active", "attempts": "1", "payload": "pl-" + i, **extra}
    if epoch is not None:
        fields["lease_epoch"] = epoch
    r.hset(row(i), mapping=fields)
    r.zadd(ACTIVE, {i: deadline})


@pytest.fixture
def frozen(emq: redis.Redis) -> redis.Redis:
    assert emq.execute_command("TRAFIKEY.CLOCK", "FREEZE", T0) == T0
    return emq


# -- run_id ----------------------------------------------------------------------


def test_run_id_format_and_constant(emq: redis.Redis, emq_server: Proc) -> None:
    """40 lowercase hex characters, the same on every read in one process,
    whatever runs in between."""
    first = run_id(emq)
    assert RUN_ID_RE.fullmatch(first), first
    emq.set("k", "v")
    emq.flushall()
    emq.execute_command("TRAFIKEY.CLOCK", "ADVANCE", 1000)
    assert run_id(emq) == first
    w = Wire(emq_server.port)
    try:
        text = w.call("INFO", "server").decode()
    finally:
        w.close()
    lines = [ln for ln in text.splitlines() if ln.startswith("run_id:")]
    assert lines == [f"run_id:{first}"]


def test_run_ids_differ_between_processes(emq_server: Proc, trafikey_server: Proc) -> None:
    """Each server process picks its own run_id at start-up: the suite's two
    servers and a freshly started third all differ."""
    third = start_trafikey()
    try:
        ids = []
        for port in (emq_server.port, trafikey_server.port, third.port):
            r = redis.Redis(port=port)
            try:
                ids.append(run_id(r))
            finally:
                r.close()
    finally:
        third.stop()
    assert all(RUN_ID_RE.fullmatch(i) for i in ids), ids
    assert len(set(ids)) == 3, ids


def test_claim_and_extend_stamp_this_run_id(frozen: redis.Redis) -> None:
    """CLAIM writes lease_epoch = run_id; EXTEND and EXTENDS re-stamp a row
    that carries another run's stamp."""
    me = run_id(frozen).encode()
    assert frozen.execute_command("EMQ.ENQUEUE", 2, PENDING, P, "a", "x") == b"a"
    assert frozen.execute_command("EMQ.CLAIM", 3, PENDING, ACTIVE, P, 1000) == [b"a", b"x", 1]
    assert frozen.hget(row("a"), "lease_epoch") == me
    frozen.hset(row("a"), "lease_epoch", OTHER_RUN)
    assert frozen.execute_command("EMQ.EXTEND", 2, ACTIVE, P, "a", "1", 1000) == 1
    assert frozen.hget(row("a"), "lease_epoch") == me
    frozen.hset(row("a"), "lease_epoch", OTHER_RUN)
    assert frozen.execute_command("EMQ.EXTENDS", 2, ACTIVE, P, 1000, "a", "1") == [1]
    assert frozen.hget(row("a"), "lease_epoch") == me


# -- the uncounted path -------------------------------------------------------------


def test_foreign_epoch_requeued_without_counting(frozen: redis.Redis) -> None:
    """A lease stamped by another run, deadline in the past, max_stalled 0:
    requeued (not dead), ``stalled`` never written, ``lease_epoch`` left,
    ``attempts`` kept, and the pending score is a fresh INCR of P..seq."""
    frozen.set(SEQ, 41)
    put_active(frozen, "j", T0 - 5000, OTHER_RUN)
    assert stalled_check(frozen, 0) == [[b"j"], []]
    assert frozen.hgetall(row("j")) == {
        b"state": b"pending", b"attempts": b"1", b"payload": b"pl-j", b"lease_epoch": OTHER_RUN.encode(),
    }
    assert frozen.zscore(PENDING, "j") == 42
    assert frozen.get(SEQ) == b"42"
    assert frozen.zscore(ACTIVE, "j") is None
    assert frozen.zcard(DEAD) == 0


def test_foreign_epoch_keeps_existing_stalled_count(frozen: redis.Redis) -> None:
    """A row that already stalled once keeps stalled = 1 across the
    uncounted requeue, even at max_stalled 0 (where a counted expiry kills)."""
    put_active(frozen, "s", T0 - 1, OTHER_RUN, stalled="1")
    assert stalled_check(frozen, 0) == [[b"s"], []]
    assert frozen.hget(row("s"), "stalled") == b"1"
    assert frozen.hget(row("s"), "state") == b"pending"
    assert frozen.zscore(PENDING, "s") == 1  # P..seq was absent: INCR gives 1


def test_deadline_equal_to_now_is_due(frozen: redis.Redis) -> None:
    """"deadline ≤ now": a lease ending exactly now is swept; one ending a
    millisecond later is not."""
    put_active(frozen, "now", T0, OTHER_RUN)
    put_active(frozen, "later", T0 + 1, OTHER_RUN)
    assert stalled_check(frozen, 0) == [[b"now"], []]
    assert frozen.zscore(ACTIVE, "later") == T0 + 1
    assert frozen.hget(row("later"), "state") == b"active"


@pytest.mark.parametrize("epoch", [
    pytest.param("UPPER", id="own-run-id-uppercased"),
    pytest.param("", id="empty-stamp"),
])
def test_other_byte_strings_are_foreign(frozen: redis.Redis, epoch: str) -> None:
    """The stamp is compared as bytes: this run_id in upper case, or a
    present but empty stamp, is "present and ≠ run_id", so not counted."""
    stamp = run_id(frozen).upper() if epoch == "UPPER" else epoch
    put_active(frozen, "f", T0 - 10, stamp)
    assert stalled_check(frozen, 0) == [[b"f"], []]
    assert frozen.hexists(row("f"), "stalled") is False
    assert frozen.hget(row("f"), "lease_epoch") == stamp.encode()


# -- the counted path ----------------------------------------------------------------


@pytest.mark.parametrize("stamp", ["own", "none"])
def test_own_or_missing_epoch_is_counted_and_dies_at_zero(frozen: redis.Redis, stamp: str) -> None:
    """Same run_id, or no stamp (a scripted claim): a counted expiry.
    With max_stalled 0, n = 1 > 0: dead, scored now, stalled = 1."""
    epoch = run_id(frozen) if stamp == "own" else None
    frozen.set(SEQ, 7)
    put_active(frozen, "c", T0 - 100, epoch)
    assert stalled_check(frozen, 0) == [[], [b"c"]]
    assert frozen.hget(row("c"), "stalled") == b"1"
    assert frozen.hget(row("c"), "state") == b"dead"
    assert frozen.zscore(DEAD, "c") == T0
    assert frozen.zscore(PENDING, "c") is None
    assert frozen.zscore(ACTIVE, "c") is None
    assert frozen.get(SEQ) == b"7"  # the dead path takes no sequence number


@pytest.mark.parametrize("stamp", ["own", "none"])
def test_own_or_missing_epoch_is_counted_and_requeued(frozen: redis.Redis, stamp: str) -> None:
    """Within the budget (max_stalled 3): requeued with stalled = 1 and a
    fresh sequence number; the stamp is not what decides the move."""
    epoch = run_id(frozen) if stamp == "own" else None
    frozen.set(SEQ, 7)
    put_active(frozen, "c", T0 - 100, epoch)
    assert stalled_check(frozen, 3) == [[b"c"], []]
    assert frozen.hget(row("c"), "stalled") == b"1"
    assert frozen.hget(row("c"), "state") == b"pending"
    assert frozen.zscore(PENDING, "c") == 8
    assert frozen.hget(row("c"), "attempts") == b"1"


def test_real_claim_then_expiry_is_counted(frozen: redis.Redis) -> None:
    """End to end on this server: CLAIM, let the test clock pass the lease,
    sweep with max_stalled 0: the lease is this run's, so the job dies."""
    assert frozen.execute_command("EMQ.ENQUEUE", 2, PENDING, P, "r", "x") == b"r"
    assert frozen.execute_command("EMQ.CLAIM", 3, PENDING, ACTIVE, P, 500) == [b"r", b"x", 1]
    assert frozen.zscore(ACTIVE, "r") == T0 + 500
    assert stalled_check(frozen, 0) == [[], []]
    frozen.execute_command("TRAFIKEY.CLOCK", "ADVANCE", 500)
    assert stalled_check(frozen, 0) == [[], [b"r"]]
    assert frozen.zscore(DEAD, "r") == T0 + 500


def test_mixed_sweep_in_deadline_order(frozen: redis.Redis) -> None:
    """One sweep over foreign, own and unstamped leases: each takes its own
    path, the reply lists ids in sweep order (earliest deadline first), and
    the requeued ones take consecutive fresh sequence numbers in that order."""
    me = run_id(frozen)
    frozen.set(SEQ, 100)
    put_active(frozen, "own1", T0 - 50, me)            # counted, first stall, survives
    put_active(frozen, "foreign", T0 - 40, OTHER_RUN)  # uncounted
    put_active(frozen, "bare", T0 - 30, None, stalled="1")  # counted, second stall: dies
    put_active(frozen, "foreign2", T0 - 20, OTHER_RUN, stalled="1")  # uncounted, keeps 1
    put_active(frozen, "notyet", T0 + 1, me)           # not due
    assert stalled_check(frozen, 1) == [[b"own1", b"foreign", b"foreign2"], [b"bare"]]
    assert frozen.zrange(PENDING, 0, -1, withscores=True) == [(b"own1", 101), (b"foreign", 102), (b"foreign2", 103)]
    assert frozen.get(SEQ) == b"103"
    assert frozen.zrange(DEAD, 0, -1, withscores=True) == [(b"bare", T0)]
    assert frozen.zrange(ACTIVE, 0, -1) == [b"notyet"]
    assert frozen.hget(row("own1"), "stalled") == b"1"
    assert frozen.hexists(row("foreign"), "stalled") is False
    assert frozen.hget(row("foreign2"), "stalled") == b"1"
    assert frozen.hget(row("bare"), "stalled") == b"2"
    assert [frozen.hget(row(i), "state") for i in ("own1", "foreign", "bare", "foreign2", "notyet")] == [
        b"pending", b"pending", b"dead", b"pending", b"active",
    ]


def test_limit_bounds_the_sweep(frozen: redis.Redis) -> None:
    """The limit takes the earliest deadlines first, whatever their stamp."""
    put_active(frozen, "a", T0 - 30, OTHER_RUN)
    put_active(frozen, "b", T0 - 20, None)
    put_active(frozen, "c", T0 - 10, OTHER_RUN)
    assert stalled_check(frozen, 5, 2) == [[b"a", b"b"], []]
    assert frozen.zrange(ACTIVE, 0, -1) == [b"c"]
    assert stalled_check(frozen, 5, 2) == [[b"c"], []]

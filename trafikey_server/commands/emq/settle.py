"""Settling a held job: EMQ.COMPLETE and EMQ.FAIL.

Both are for flat native rows only: a lane row (field ``group``) or a flow
child (field ``parent``) is settled by the scripts that made it, which
know about its lane or its parent, so the native verbs refuse them.

FAIL spends the retry budget, ``failures`` (not ``attempts``, which stays
a pure fencing token): when failures reaches max_attempts the job is dead,
otherwise it waits backoff_ms in schedule, or re-enters pending at the back
of the line when there is no backoff. FAIL checks the token before the
state so that a worker repeating its final FAIL (its reply was lost) is told
``dead`` again instead of being refused.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from ...protocol.resp import ONE
from .core import (
    ACTIVE,
    DEAD,
    ERROR,
    FAILURES,
    GROUP,
    MAX_SCORE,
    PARENT,
    PENDING,
    SCHEDULED,
    STATE,
    Plan,
    arg_int,
    check_row,
    check_token,
    counter,
    flow_child,
    job_id,
    lane_row,
    next_seq,
    no_job,
    seq_value,
    shape,
    wrong_state,
)

if TYPE_CHECKING:
    from ...services.client import Client

_DEAD: Final = b"$4\r\ndead\r\n"
_SCHEDULED: Final = b"$9\r\nscheduled\r\n"
_PENDING: Final = b"$7\r\npending\r\n"


def complete(c: Client, argv: list[bytes]) -> bytes:
    """EMQ.COMPLETE 2 active P id token -> 1; the row is deleted."""
    if argv[1] != b"2" or len(argv) != 6:
        shape(argv, "emq.complete", 2, 2, 2)
    db = c.db
    active, p, job, token = argv[2], argv[3], argv[4], argv[5]
    db.get_zset(active)
    row_key = p + b"job:" + job
    row = db.get_hash(row_key) if job else None
    job_id(job)
    check_row(job, row, ACTIVE, token, flow=True)
    plan = Plan()
    plan.zrem(active, job)
    plan.delete(row_key)
    plan.apply(c)
    return ONE


def fail(c: Client, argv: list[bytes]) -> bytes:
    """EMQ.FAIL 5 active pending schedule dead P id token max_attempts backoff_ms [reason]
    -> "dead" | "scheduled" | "pending"."""
    shape(argv, "emq.fail", 5, 4, 5)
    db = c.db
    active, pending, sched, dead, p = argv[2], argv[3], argv[4], argv[5], argv[6]
    job, token = argv[7], argv[8]
    for key in (active, pending, sched, dead):
        db.get_zset(key)
    row_key = p + b"job:" + job
    row = db.get_hash(row_key) if job else None
    seq_key = p + b"seq"
    cur = seq_value(db, seq_key)
    now = c.server.clock.ms()
    job_id(job)
    max_attempts = arg_int(argv[9], b"max_attempts", 1)
    backoff = arg_int(argv[10], b"backoff_ms", 0, MAX_SCORE - now)
    # FAIL's own order: the token before the state.
    if row is None:
        raise no_job(job)
    if GROUP in row:
        raise lane_row(job)
    if PARENT in row:
        raise flow_child(job)
    check_token(job, row, token)
    state = row.get(STATE)
    if state == DEAD:
        return _DEAD  # a repeated terminal failure: already settled
    if state != ACTIVE:
        raise wrong_state(job, state, ACTIVE)
    failures = counter(row, FAILURES) + 1
    plan = Plan()
    plan.hincrby(row_key, FAILURES, failures)
    if len(argv) == 12:
        plan.hset(row_key, ERROR, argv[11])
    plan.zrem(active, job)
    if failures >= max_attempts:
        plan.hset(row_key, STATE, DEAD)
        plan.zadd(dead, now, job)
        reply = _DEAD
    elif backoff > 0:
        plan.hset(row_key, STATE, SCHEDULED)
        plan.zadd(sched, now + backoff, job)
        reply = _SCHEDULED
    else:
        s = next_seq(cur)
        plan.seq(seq_key, cur, s)
        plan.hset(row_key, STATE, PENDING)
        plan.zadd(pending, s, job)
        reply = _PENDING
    plan.apply(c)
    return reply

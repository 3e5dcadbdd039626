"""Moving one job between places: EMQ.DELAY, EMQ.REQUEUE, EMQ.RESCHEDULE
and EMQ.REPROCESS.

None of them touches a counter: DELAY and REQUEUE give a held job back
(later, or now) without spending its retry budget, RESCHEDULE moves a
waiting job's run-at time, and REPROCESS brings a dead job back with every
counter as it was. Each re-entry into pending takes a fresh sequence number,
so the job joins the back of the line. All four are flat-only.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...protocol.resp import ONE
from .core import (
    ACTIVE,
    DEAD,
    MAX_SCORE,
    PENDING,
    SCHEDULED,
    STATE,
    Plan,
    arg_int,
    check_row,
    job_id,
    next_seq,
    seq_value,
    shape,
)

if TYPE_CHECKING:
    from ...services.client import Client


def delay(c: Client, argv: list[bytes]) -> bytes:
    """EMQ.DELAY 3 active schedule P id token delay_ms -> 1."""
    if argv[1] != b"3" or len(argv) != 8:
        shape(argv, "emq.delay", 3, 3, 3)
    db = c.db
    active, sched, p, job, token = argv[2], argv[3], argv[4], argv[5], argv[6]
    db.get_zset(active)
    db.get_zset(sched)
    row_key = p + b"job:" + job
    row = db.get_hash(row_key) if job else None
    now = c.server.clock.ms()
    job_id(job)
    wait = arg_int(argv[7], b"delay_ms", 0, MAX_SCORE - now)
    check_row(job, row, ACTIVE, token)
    plan = Plan()
    plan.zrem(active, job)
    plan.hset(row_key, STATE, SCHEDULED)
    plan.zadd(sched, now + wait, job)
    plan.apply(c)
    return ONE


def _to_pending(c: Client, argv: list[bytes], name: str, expected: bytes, with_token: bool) -> bytes:
    """REQUEUE (active, with the token) and REPROCESS (dead): out of the
    first set, into pending at a fresh sequence number."""
    shape(argv, name, 3, 1 + with_token, 1 + with_token)
    db = c.db
    source, pending, p, job = argv[2], argv[3], argv[4], argv[5]
    db.get_zset(source)
    db.get_zset(pending)
    row_key = p + b"job:" + job
    row = db.get_hash(row_key) if job else None
    seq_key = p + b"seq"
    cur = seq_value(db, seq_key)
    job_id(job)
    check_row(job, row, expected, argv[6] if with_token else None)
    s = next_seq(cur)
    plan = Plan()
    plan.zrem(source, job)
    plan.seq(seq_key, cur, s)
    plan.hset(row_key, STATE, PENDING)
    plan.zadd(pending, s, job)
    plan.apply(c)
    return ONE


def requeue(c: Client, argv: list[bytes]) -> bytes:
    """EMQ.REQUEUE 3 active pending P id token -> 1."""
    return _to_pending(c, argv, "emq.requeue", ACTIVE, True)


def reprocess(c: Client, argv: list[bytes]) -> bytes:
    """EMQ.REPROCESS 3 dead pending P id -> 1."""
    return _to_pending(c, argv, "emq.reprocess", DEAD, False)


def reschedule(c: Client, argv: list[bytes]) -> bytes:
    """EMQ.RESCHEDULE 2 schedule P id run_at_ms -> 1."""
    if argv[1] != b"2" or len(argv) != 6:
        shape(argv, "emq.reschedule", 2, 2, 2)
    db = c.db
    sched, p, job = argv[2], argv[3], argv[4]
    db.get_zset(sched)
    row_key = p + b"job:" + job
    row = db.get_hash(row_key) if job else None
    job_id(job)
    run_at = arg_int(argv[5], b"run_at_ms", 0, MAX_SCORE)
    check_row(job, row, SCHEDULED)
    plan = Plan()
    plan.zadd(sched, run_at, job)
    plan.apply(c)
    return ONE

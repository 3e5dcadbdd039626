"""Admission: EMQ.ENQUEUE into pending, EMQ.SCHEDULE into schedule.

Admission is idempotent: an id that already has a row is answered with nil
and nothing is written, so a producer may retry a send whose reply it lost.
The id ``*`` asks the server for one: the next sequence number, moving on
past any number that already names a row (callers may mix numeric ids of
their own with server-chosen ones), with ``P..seq`` left at the number used.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from .core import (
    ATTEMPTS,
    MAX_SCORE,
    PAYLOAD,
    PENDING,
    SCHEDULED,
    STATE,
    Plan,
    arg_int,
    job_id,
    next_seq,
    seq_value,
    shape,
)

if TYPE_CHECKING:
    from ...keyspace.db import Db
    from ...services.client import Client

_ZERO: Final = b"0"


def _free_id(db: Db, p: bytes, cur: int) -> int:
    """The next sequence number that names no existing key under the prefix."""
    s = next_seq(cur)
    while db.get(b"%sjob:%d" % (p, s)) is not None:
        s = next_seq(s)
    return s


def enqueue(c: Client, argv: list[bytes]) -> bytes:
    """EMQ.ENQUEUE 2 pending P id payload -> id, or nil if the row exists."""
    if argv[1] != b"2" or len(argv) != 6:
        shape(argv, "emq.enqueue", 2, 2, 2)
    db = c.db
    pending, p, job, payload = argv[2], argv[3], argv[4], argv[5]
    db.get_zset(pending)
    seq_key = p + b"seq"
    cur = seq_value(db, seq_key)
    auto = job == b"*"
    row_key = b""
    exists = False
    if not auto and job:
        row_key = p + b"job:" + job
        exists = db.get_hash(row_key) is not None
    job_id(job)
    if exists:
        return c.r.null
    if auto:
        s = _free_id(db, p, cur)
        job = b"%d" % s
        row_key = p + b"job:" + job
    else:
        s = next_seq(cur)
    plan = Plan()
    plan.seq(seq_key, cur, s)
    plan.hset(row_key, STATE, PENDING, ATTEMPTS, _ZERO, PAYLOAD, payload)
    plan.zadd(pending, s, job)
    plan.apply(c)
    return b"$%d\r\n%s\r\n" % (len(job), job)


def schedule(c: Client, argv: list[bytes]) -> bytes:
    """EMQ.SCHEDULE 2 schedule P id payload run_at_ms -> id, or nil if the row exists."""
    if argv[1] != b"2" or len(argv) != 7:
        shape(argv, "emq.schedule", 2, 3, 3)
    db = c.db
    sched, p, job, payload = argv[2], argv[3], argv[4], argv[5]
    db.get_zset(sched)
    auto = job == b"*"
    seq_key = p + b"seq"
    cur = 0
    row_key = b""
    exists = False
    if auto:
        cur = seq_value(db, seq_key)
    elif job:
        row_key = p + b"job:" + job
        exists = db.get_hash(row_key) is not None
    job_id(job)
    run_at = arg_int(argv[6], b"run_at_ms", 0, MAX_SCORE)
    if exists:
        return c.r.null
    plan = Plan()
    if auto:
        s = _free_id(db, p, cur)
        job = b"%d" % s
        row_key = p + b"job:" + job
        plan.seq(seq_key, cur, s)
    plan.hset(row_key, STATE, SCHEDULED, ATTEMPTS, _ZERO, PAYLOAD, payload)
    plan.zadd(sched, run_at, job)
    plan.apply(c)
    return b"$%d\r\n%s\r\n" % (len(job), job)

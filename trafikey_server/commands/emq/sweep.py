"""The time-driven verbs: EMQ.PROMOTE and EMQ.STALLED.CHECK.

Nothing in the server runs them on its own: a client (the queue's sweeper)
sends them, so time-driven work happens exactly when a test or an operator
asks for it. Both take the due entries earliest first, at most ``limit``
of them (default 1000), ghosts included in the limit and cleared away.

Both verbs plan the whole sweep before writing. A due entry whose row is
not in the state its set implies (a ``scheduled`` row for schedule, an
``active`` row for active) means the keyspace was changed behind the job
core's back; the sweep refuses as a whole with EMQSTATE naming the row,
rather than move a job whose place it cannot vouch for. STALLED.CHECK also
refuses as a whole when a due row is a lane row, as the contract says.

STALLED.CHECK counts an expiry against the stall budget only when the lease
was stamped by this process (or carries no stamp, as a scripted claim
leaves it). A lease stamped by another run_id outlived a server restart,
not a worker, and is requeued without being counted.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from ...protocol.resp import integer
from .core import (
    ACTIVE,
    DEAD,
    GROUP,
    LEASE_EPOCH,
    PENDING,
    SCHEDULED,
    STALLED,
    STATE,
    Plan,
    arg_int,
    bulk_list,
    counter,
    due,
    lane_row,
    next_seq,
    seq_value,
    shape,
    wrong_state,
)

if TYPE_CHECKING:
    from ...services.client import Client

_LIMIT: Final = 1000


def promote(c: Client, argv: list[bytes]) -> bytes:
    """EMQ.PROMOTE 3 schedule pending P [limit] -> the number promoted."""
    shape(argv, "emq.promote", 3, 0, 1)
    db = c.db
    sched_key, pending, p = argv[2], argv[3], argv[4]
    sched = db.get_zset(sched_key)
    db.get_zset(pending)
    seq_key = p + b"seq"
    cur = seq_value(db, seq_key)
    limit = arg_int(argv[5], b"limit", 1) if len(argv) == 6 else _LIMIT
    now = c.server.clock.ms()
    plan = Plan()
    moved = 0
    for _, job in due(sched, now, limit):
        row_key = p + b"job:" + job
        row = db.get_hash(row_key)
        plan.zrem(sched_key, job)
        if row is None:
            continue
        state = row.get(STATE)
        if state != SCHEDULED:
            raise wrong_state(job, state, SCHEDULED)
        s = next_seq(cur)
        plan.seq(seq_key, cur, s)
        cur = s
        plan.hset(row_key, STATE, PENDING)
        plan.zadd(pending, s, job)
        moved += 1
    plan.apply(c)
    return integer(moved)


def stalled_check(c: Client, argv: list[bytes]) -> bytes:
    """EMQ.STALLED.CHECK 4 active pending dead P max_stalled [limit]
    -> [[requeued ids], [dead ids]]."""
    shape(argv, "emq.stalled.check", 4, 1, 2)
    db = c.db
    active_key, pending, dead, p = argv[2], argv[3], argv[4], argv[5]
    active = db.get_zset(active_key)
    db.get_zset(pending)
    db.get_zset(dead)
    seq_key = p + b"seq"
    cur = seq_value(db, seq_key)
    max_stalled = arg_int(argv[6], b"max_stalled", 0)
    limit = arg_int(argv[7], b"limit", 1) if len(argv) == 8 else _LIMIT
    server = c.server
    now = server.clock.ms()
    entries = due(active, now, limit)
    rows = []
    for _, job in entries:
        row_key = p + b"job:" + job
        row = db.get_hash(row_key)
        if row is not None and GROUP in row:
            raise lane_row(job)
        rows.append((job, row_key, row))
    stamp = server.run_id_b
    plan = Plan()
    requeued: list[bytes] = []
    buried: list[bytes] = []
    for job, row_key, row in rows:
        if row is None:
            plan.zrem(active_key, job)
            continue
        state = row.get(STATE)
        if state != ACTIVE:
            raise wrong_state(job, state, ACTIVE)
        epoch = row.get(LEASE_EPOCH)
        if epoch is not None and epoch != stamp:
            plan.zrem(active_key, job)  # the lease outlived a restart: not counted
        else:
            n = counter(row, STALLED) + 1
            plan.hincrby(row_key, STALLED, n)
            plan.zrem(active_key, job)
            if n > max_stalled:
                plan.hset(row_key, STATE, DEAD)
                plan.zadd(dead, now, job)
                buried.append(job)
                continue
        s = next_seq(cur)
        plan.seq(seq_key, cur, s)
        cur = s
        plan.hset(row_key, STATE, PENDING)
        plan.zadd(pending, s, job)
        requeued.append(job)
    plan.apply(c)
    return b"*2\r\n" + bulk_list(requeued) + bulk_list(buried)

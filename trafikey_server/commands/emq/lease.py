"""Keeping a lease: EMQ.EXTEND and its batch form EMQ.EXTENDS.

An extension moves the lease deadline to now + lease_ms and restamps the
row with this process's run_id. A lease already past its deadline can
still be extended as long as no sweep has recovered it: the deadline is a
promise of the worker, not a verdict, until STALLED.CHECK acts on it.

EXTENDS judges each (id, token) pair alone, so a worker holding many jobs
keeps the ones it still holds when one of them was lost: a ghost, a row no
longer active or a stale token gives 0 for that pair and writes nothing
for it. Only what makes the whole request malformed (arity, key types, a
bad lease_ms, an empty id) refuses the call.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...protocol.resp import ONE, ZERO, array_header
from ...util.errors import wrong_args
from .core import ACTIVE, ATTEMPTS, LEASE_EPOCH, MAX_SCORE, STATE, Plan, arg_int, check_row, job_id, shape

if TYPE_CHECKING:
    from ...services.client import Client


def extend(c: Client, argv: list[bytes]) -> bytes:
    """EMQ.EXTEND 2 active P id token lease_ms -> 1."""
    if argv[1] != b"2" or len(argv) != 7:
        shape(argv, "emq.extend", 2, 3, 3)
    db = c.db
    active, p, job, token = argv[2], argv[3], argv[4], argv[5]
    db.get_zset(active)
    row_key = p + b"job:" + job
    row = db.get_hash(row_key) if job else None
    server = c.server
    now = server.clock.ms()
    job_id(job)
    lease = arg_int(argv[6], b"lease_ms", 1, MAX_SCORE - now)
    check_row(job, row, ACTIVE, token, flat=False)
    plan = Plan()
    plan.zadd(active, now + lease, job)
    plan.hset(row_key, LEASE_EPOCH, server.run_id_b)
    plan.apply(c)
    return ONE


def extends(c: Client, argv: list[bytes]) -> bytes:
    """EMQ.EXTENDS 2 active P lease_ms id1 token1 [id2 token2 ...] -> [1|0 ...]."""
    shape(argv, "emq.extends", 2, 3, 1 << 62)
    if len(argv) % 2 == 0:  # name, numkeys, 2 keys, lease_ms, then pairs: odd
        raise wrong_args("emq.extends")
    db = c.db
    active, p = argv[2], argv[3]
    db.get_zset(active)
    rows = []
    for i in range(5, len(argv), 2):
        job = argv[i]
        row_key = p + b"job:" + job
        rows.append((job, argv[i + 1], row_key, db.get_hash(row_key) if job else None))
    server = c.server
    now = server.clock.ms()
    lease = arg_int(argv[4], b"lease_ms", 1, MAX_SCORE - now)
    for job, _, _, _ in rows:
        job_id(job)
    plan = Plan()
    out = [array_header(len(rows))]
    stamp = server.run_id_b
    deadline = now + lease
    for job, token, row_key, row in rows:
        if row is None or row.get(STATE) != ACTIVE or row.get(ATTEMPTS) != token:
            out.append(ZERO)
            continue
        plan.zadd(active, deadline, job)
        plan.hset(row_key, LEASE_EPOCH, stamp)
        out.append(ONE)
    plan.apply(c)
    return b"".join(out)

"""EMQ.CLAIM: the head of pending becomes active under a lease.

The claim adds one to ``attempts`` and hands the new value to the worker
as its fencing token; every later settle must present it. The row is
stamped with this process's run_id (``lease_epoch``), which is how the
sweep later tells a lease that outlived its worker from one that outlived
the server. A paused queue (``P..paused`` exists, of any type) claims
nothing, and a ghost at the head is cleared away without being handed out.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from ...protocol.resp import EMPTY_ARRAY
from .core import (
    ATTEMPTS,
    LEASE_EPOCH,
    MAX_SCORE,
    PAYLOAD,
    PENDING,
    STATE,
    Plan,
    arg_int,
    claim_reply,
    counter,
    shape,
    wrong_state,
)

if TYPE_CHECKING:
    from ...services.client import Client

_ACTIVE: Final = b"active"


def claim(c: Client, argv: list[bytes]) -> bytes:
    """EMQ.CLAIM 3 pending active P lease_ms -> [id, payload, attempts] or []."""
    if argv[1] != b"3" or len(argv) != 6:
        shape(argv, "emq.claim", 3, 1, 1)
    db = c.db
    pending_key, active_key, p = argv[2], argv[3], argv[4]
    pending = db.get_zset(pending_key)
    db.get_zset(active_key)
    server = c.server
    now = server.clock.ms()
    lease = arg_int(argv[5], b"lease_ms", 1, MAX_SCORE - now)
    if pending is None or db.get(p + b"paused") is not None:
        return EMPTY_ARRAY
    job = pending.index[0][1]
    row_key = p + b"job:" + job
    row = db.get_hash(row_key)
    plan = Plan()
    if row is None:
        plan.zpopmin(pending_key, job)
        plan.apply(c)
        return EMPTY_ARRAY
    state = row.get(STATE)
    if state != PENDING:
        raise wrong_state(job, state, PENDING)
    attempts = counter(row, ATTEMPTS) + 1
    payload = row.get(PAYLOAD)
    plan.zpopmin(pending_key, job)
    plan.hincrby(row_key, ATTEMPTS, attempts)
    plan.hset(row_key, STATE, _ACTIVE, LEASE_EPOCH, server.run_id_b)
    plan.zadd(active_key, now + lease, job)
    plan.apply(c)
    return claim_reply(c, job, payload, attempts)

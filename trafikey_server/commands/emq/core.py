"""What every job-core verb shares: the request's shape, the refusals, the
queue's keys, and the plan through which a verb writes.

A verb is written in two phases. The *plan* phase reads the keyspace and
runs every check the contract names (arity, numkeys, key types, arguments
and ranges, then the row's conditions), recording each write it decides on
in a ``Plan``; a refusal is an exception raised during that phase. Only
then does ``Plan.apply`` make the writes, in the order they were planned.
Verb modules never call a write method of the database themselves, so a
refused call cannot have written anything: check-then-write holds by
construction rather than by care.

A plan is plain data: each operation is one of the ordinary commands a
Lua script would have issued (ZADD with the computed score, ZREM, HSET,
HINCRBY, DEL, INCRBY), which is also the form in which the effects of a
verb can be logged or propagated.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

from ...protocol.resp import array_header, bulk
from ...util.errors import CommandError, not_integer, wrong_args
from ...util.parsing import LLONG_MAX, to_int
from ...values.hash import Hash
from ...values.zset import ZSet

if TYPE_CHECKING:
    from ...keyspace.db import Db
    from ...services.client import Client

# Scores are doubles: integers are exact up to 2^53, and no verb writes a
# score (or a sequence number) beyond it.
MAX_SCORE: Final = 2**53

STATE: Final = b"state"
PAYLOAD: Final = b"payload"
ATTEMPTS: Final = b"attempts"
FAILURES: Final = b"failures"
STALLED: Final = b"stalled"
LEASE_EPOCH: Final = b"lease_epoch"
ERROR: Final = b"error"
GROUP: Final = b"group"
PARENT: Final = b"parent"

PENDING: Final = b"pending"
ACTIVE: Final = b"active"
SCHEDULED: Final = b"scheduled"
DEAD: Final = b"dead"

_HASH_NOT_INT: Final = b"ERR hash value is not an integer"
_OVERFLOW: Final = b"ERR increment or decrement would overflow"


# -- refusals -----------------------------------------------------------------------


def _text(b: bytes) -> bytes:
    """An argument quoted inside an error line: a CR or LF in it would end
    the reply early, so they become spaces (as Valkey's own error replies
    do)."""
    if 13 in b or 10 in b:  # CR, LF
        return b.replace(b"\r", b" ").replace(b"\n", b" ")
    return b


def out_of_range(name: bytes) -> CommandError:
    return CommandError(b"ERR %s is out of range" % name)


def no_job(job: bytes) -> CommandError:
    return CommandError(b"EMQNOJOB job %s has no row" % _text(job))


def lane_row(job: bytes) -> CommandError:
    return CommandError(b"EMQSTATE job %s is a lane row, not native" % _text(job))


def flow_child(job: bytes) -> CommandError:
    return CommandError(b"EMQSTATE job %s is a flow child, not native" % _text(job))


def wrong_state(job: bytes, state: bytes | None, expected: bytes) -> CommandError:
    # A row without a state field is described by an empty state.
    return CommandError(b"EMQSTATE job %s is %s, not %s" % (_text(job), _text(state or b""), expected))


def stale_token(job: bytes, token: bytes) -> CommandError:
    return CommandError(b"EMQLEASE job %s is not held by token %s" % (_text(job), _text(token)))


# -- the request's shape ----------------------------------------------------------------


def shape(argv: list[bytes], name: str, numkeys: int, least: int, most: int) -> None:
    """Checks (1) to (3) of the contract: a numkeys argument, numkeys equal
    to the verb's, and an ARGV count within [least, most] after the keys.

    The table's arity (-2) has already guaranteed argv[1]. A canonical
    integer equal to ``numkeys`` is exactly the bytes of its decimal form,
    so one comparison stands for parse-and-compare. Verbs of a fixed shape
    test that shape inline and call this only to find which refusal applies."""
    if argv[1] != b"%d" % numkeys:
        raise CommandError(f"ERR numkeys for '{name}' must be {numkeys}")
    n = len(argv) - 2 - numkeys
    if n < least or n > most:
        raise wrong_args(name)


def arg_int(b: bytes, name: bytes, low: int, high: int = LLONG_MAX) -> int:
    """An integer argument parsed as Valkey parses integers, then held to
    the verb's range."""
    v = to_int(b)
    if v is None:
        raise not_integer()
    if v < low or v > high:
        raise out_of_range(name)
    return v


def job_id(b: bytes) -> bytes:
    if not b:
        raise out_of_range(b"id")
    return b


# -- typed reads ------------------------------------------------------------------------


def seq_value(db: Db, key: bytes) -> int:
    """The queue's sequence counter as INCR would read it (absent is 0)."""
    v = db.get_string(key)
    if v is None:
        return 0
    cur = to_int(bytes(v)) if len(v) <= 20 else None
    if cur is None:
        raise not_integer()
    return cur


def counter(row: Hash, field: bytes) -> int:
    """A row counter as HINCRBY would read it (absent is 0), checked for
    room to add one."""
    v = row.get(field)
    if v is None:
        return 0
    n = to_int(v)
    if n is None:
        raise CommandError(_HASH_NOT_INT)
    if n == LLONG_MAX:
        raise CommandError(_OVERFLOW)
    return n


def next_seq(cur: int) -> int:
    s = cur + 1
    if s > MAX_SCORE:
        raise out_of_range(b"seq")
    return s


def check_token(job: bytes, row: Hash, token: bytes) -> None:
    """The fencing token is compared as bytes: "7" holds, "07" does not."""
    if row.get(ATTEMPTS) != token:
        raise stale_token(job, token)


def check_row(
    job: bytes, row: Hash | None, expected: bytes, token: bytes | None = None, flat: bool = True,
    flow: bool = False,
) -> Hash:
    """The row conditions, in the contract's order: ghost, lane row (when
    the verb is flat-only), flow child (COMPLETE, FAIL), state, token."""
    if row is None:
        raise no_job(job)
    if flat and GROUP in row:
        raise lane_row(job)
    if flow and PARENT in row:
        raise flow_child(job)
    state = row.get(STATE)
    if state != expected:
        raise wrong_state(job, state, expected)
    if token is not None and row.get(ATTEMPTS) != token:
        raise stale_token(job, token)
    return row


def due(zs: ZSet | None, now: int, limit: int) -> list[tuple[float, bytes]]:
    """The earliest entries scored at or before now, at most limit."""
    if zs is None:
        return []
    start, stop = zs.score_span(float("-inf"), False, float(now), False)
    return list(zs.index.islice(start, min(stop, start + limit)))


# -- replies -------------------------------------------------------------------------------


def bulk_list(items: list[bytes]) -> bytes:
    out = [array_header(len(items))]
    for b in items:
        out.append(b"$%d\r\n%s\r\n" % (len(b), b))
    return b"".join(out)


# -- the plan --------------------------------------------------------------------------------


class Plan:
    """The writes one verb has decided on, applied only when all checks passed.

    An operation is ``(apply_function, key, a, b)``. Operations name keys,
    not objects: a key created by an earlier operation of the same plan (a
    first ZADD to an absent set) is found by the later ones. The operations
    read the data dict directly rather than through ``Db.get``, because
    everything the plan relies on was read live a moment ago and must not
    be expired half-way through."""

    __slots__ = ("ops",)

    def __init__(self) -> None:
        self.ops: list[tuple[Any, bytes, Any, Any]] = []

    def zadd(self, key: bytes, score: int, member: bytes) -> None:
        self.ops.append((_zadd, key, score, member))

    def zrem(self, key: bytes, member: bytes) -> None:
        self.ops.append((_zrem, key, member, None))

    def zpopmin(self, key: bytes, member: bytes) -> None:
        """ZPOPMIN key, whose head is known to be member (written as ZREM)."""
        self.ops.append((_zpopmin, key, member, None))

    def hset(self, key: bytes, *pairs: bytes) -> None:
        self.ops.append((_hset, key, pairs, None))

    def hincrby(self, key: bytes, field: bytes, new: int) -> None:
        """HINCRBY field 1, recorded with the value it leaves."""
        self.ops.append((_hincrby, key, field, new))

    def delete(self, key: bytes) -> None:
        self.ops.append((_delete, key, None, None))

    def seq(self, key: bytes, old: int, new: int) -> None:
        """INCRBY (new - old): the counter ends at new."""
        self.ops.append((_seq, key, old, new))

    def apply(self, c: Client) -> None:
        db = c.db
        if db.events:
            self._apply_notifying(c, db)
        else:
            for fn, key, a, b in self.ops:
                fn(c, db, key, a, b)
        if c.server.aof is not None:
            c.server.aof.add(db.id, self.commands())

    def _apply_notifying(self, c: Client, db: Db) -> None:
        """The writes, each followed by the keyspace events Valkey raises
        for the command it stands for, so that a subscriber sees the verb
        as the same commands sent one by one."""
        for fn, key, a, b in self.ops:
            if fn is _zadd:
                zs = db.stored(key)
                changed = zs is None or zs.scores.get(b) != float(a)
                fn(c, db, key, a, b)
                if changed:  # ZADD announces only an added or re-scored member
                    db.notify(b"zadd", key)
            elif fn is _zrem or fn is _zpopmin:
                fn(c, db, key, a, b)  # a removal raises its own events
            elif fn is _delete:
                live = db.get(key) is not None
                fn(c, db, key, a, b)
                if live:
                    db.notify(b"del", key)
            else:
                fn(c, db, key, a, b)
                db.notify(_EVENTS[fn], key)

    def commands(self) -> list[list[bytes]]:
        """The plan as the plain commands that make the same writes."""
        return [_COMMAND[fn](key, a, b) for fn, key, a, b in self.ops]


def _zadd(c: Client, db: Db, key: bytes, score: int, member: bytes) -> None:
    """ZADD key score member, with ZADD's listpack-to-skiplist switch."""
    zs = db.stored(key)
    if zs is None:
        entries, value = c.server.zset_limits
        zs = ZSet()
        zs.big = len(member) > value or entries < 1
        db.add(key, zs)
    elif not zs.big and member not in zs.scores:
        entries, value = c.server.zset_limits
        if len(zs.scores) + 1 > entries or len(member) > value:
            zs.big = True
    zs.add(member, float(score))
    if db.signalled:
        db.touch(key)


def _zrem(c: Client, db: Db, key: bytes, member: bytes, _: None) -> None:
    zs = db.stored(key)
    if zs is not None and zs.remove(member):
        # Most of a verb's removals leave the set with members and nobody
        # to tell: members_removed would do nothing, so it is not called.
        if zs.scores and not db.signalled and db.events is None:
            return
        db.members_removed(key, zs.scores, b"zrem")


def _zpopmin(c: Client, db: Db, key: bytes, member: bytes, _: None) -> None:
    zs = db.stored(key)
    if zs is not None and zs.remove(member):
        if zs.scores and not db.signalled and db.events is None:
            return
        db.members_removed(key, zs.scores, b"zpopmin")


def _hset(c: Client, db: Db, key: bytes, pairs: tuple[bytes, ...], _: None) -> None:
    """HSET key field value ..., with HSET's listpack-to-hashtable switch."""
    h = db.stored(key)
    if h is None:
        h = Hash()
        db.add(key, h)
    if not h.big:
        entries, value = c.server.hash_limits
        if len(pairs) // 2 > entries or max(map(len, pairs)) > value:
            h.big = True
    for i in range(0, len(pairs), 2):
        h[pairs[i]] = pairs[i + 1]
    if not h.big and len(h) > c.server.hash_limits[0]:
        h.big = True
    if db.signalled:
        db.touch(key)


def _hincrby(c: Client, db: Db, key: bytes, field: bytes, new: int) -> None:
    _hset(c, db, key, (field, b"%d" % new), None)


def _delete(c: Client, db: Db, key: bytes, _a: None, _b: None) -> None:
    db.delete(key)


def _seq(c: Client, db: Db, key: bytes, old: int, new: int) -> None:
    if key in db.data:
        db.set(key, b"%d" % new, True)  # a counter keeps its TTL
    else:
        db.add(key, b"%d" % new)


_COMMAND: Final[dict[Any, Any]] = {
    _zadd: lambda key, score, member: [b"ZADD", key, b"%d" % score, member],
    _zrem: lambda key, member, _: [b"ZREM", key, member],
    _zpopmin: lambda key, member, _: [b"ZREM", key, member],
    _hset: lambda key, pairs, _: [b"HSET", key, *pairs],
    _hincrby: lambda key, field, _: [b"HINCRBY", key, field, b"1"],
    _delete: lambda key, _a, _b: [b"DEL", key],
    _seq: lambda key, old, new: [b"INCRBY", key, b"%d" % (new - old)],
}


# The event of each write that always announces itself.
_EVENTS: Final[dict[Any, bytes]] = {_hset: b"hset", _hincrby: b"hincrby", _seq: b"incrby"}


def claim_reply(c: Client, job: bytes, payload: bytes | None, attempts: int) -> bytes:
    return b"*3\r\n" + bulk(job) + (c.r.null if payload is None else bulk(payload)) + b":%d\r\n" % attempts

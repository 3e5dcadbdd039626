"""An independent model of the EMQ job core (wire 6), for tests.

Written from the EchoMQ job-core specification and docs/job-core.md only,
never from the server's code, so it can serve as an oracle: feed it the same
requests as trafikey-server and it says what the reply must be and what the
keyspace must hold afterwards.

The keyspace is modelled key by key (a queue is its four sorted sets
``P..pending``/``P..active``/``P..schedule``/``P..dead`` as ``id -> score``,
its rows ``P..job:<id>`` as ``field -> bytes``, ``P..seq`` as the string INCR
works on and ``P..paused``), so that key types (WRONGTYPE), keys a test put
there by hand, and whatever KEYS a caller passes are all modelled as the spec
words them.

Every verb is written in three steps, as §2 orders them: key types (step 4),
arguments (step 5), row conditions (step 6) -- each raising ``Refused`` --
and only then the writes, listed in the spec's order. A refused call
therefore writes nothing by construction.

Beside the model: ``Queue`` names a queue's keys and builds its requests,
``resp2`` gives a reply's exact bytes, and ``server_keyspace`` reads a live
server's keyspace in the same form as ``Model.dump``.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

MAX_SCORE = 2**53  # scores are doubles, exact up to 2^53 (§2 rule 6)
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
DEFAULT_LIMIT = 1000

WRONGTYPE = b"WRONGTYPE Operation against a key holding the wrong kind of value"
NOT_AN_INTEGER = b"ERR value is not an integer or out of range"
HASH_NOT_AN_INTEGER = b"ERR hash value is not an integer"
OVERFLOW = b"ERR increment or decrement would overflow"
SEQ_OUT_OF_RANGE = b"ERR seq is out of range"

# §3 EMQ.VERSION: the job core's fourteen capability tokens, in table order.
VERSION_TOKENS = (
    b"enqueue claim claim.pause extend extends complete.flat schedule promote "
    b"reschedule delay fail.flat reprocess requeue stalled.check"
)


def arity_error(verb: str) -> bytes:
    return b"ERR wrong number of arguments for '%s' command" % verb.lower().encode()


def numkeys_error(verb: str, numkeys: int) -> bytes:
    return b"ERR numkeys for '%s' must be %d" % (verb.lower().encode(), numkeys)


def out_of_range(argname: str) -> bytes:
    return b"ERR %s is out of range" % argname.encode()


def quote(raw: bytes) -> bytes:
    """An id, token or state as an error reply quotes it: CR and LF become
    spaces (decision 11), so the error stays one line."""
    return raw.replace(b"\r", b" ").replace(b"\n", b" ")


def no_job(job: bytes) -> bytes:
    return b"EMQNOJOB job " + quote(job) + b" has no row"


def lane_row(job: bytes) -> bytes:
    return b"EMQSTATE job " + quote(job) + b" is a lane row, not native"


def flow_child(job: bytes) -> bytes:
    return b"EMQSTATE job " + quote(job) + b" is a flow child, not native"


def wrong_state(job: bytes, state: bytes, expected: bytes) -> bytes:
    return b"EMQSTATE job " + quote(job) + b" is " + quote(state) + b", not " + expected


def stale_token(job: bytes, token: bytes) -> bytes:
    return b"EMQLEASE job " + quote(job) + b" is not held by token " + quote(token)


_INTEGER = re.compile(rb"-?[1-9][0-9]*|0")


def parse_int(raw: bytes) -> int | None:
    """Valkey's string2ll: no '+', no spaces, no leading zeros (so "-0" is
    refused too), within signed 64-bit. None when it is not an integer."""
    if _INTEGER.fullmatch(raw) is None:
        return None
    value = int(raw)
    return value if INT64_MIN <= value <= INT64_MAX else None


class Refused(Exception):
    """A check failed: the call replies this error and writes nothing."""

    def __init__(self, text: bytes) -> None:
        super().__init__(text)
        self.text = text


@dataclass(frozen=True)
class Err:
    """An expected error reply (the text after '-', without CRLF)."""

    text: bytes


class ZSet(dict[bytes, int]):
    """A sorted set: member -> score (every score the core writes is an
    integer no larger than 2^53, so ints are exact)."""


class Hash(dict[bytes, bytes]):
    """A hash: field -> value."""


Value = ZSet | Hash | bytes  # bytes: a string key
Reply = None | bytes | int | list["Reply"] | Err


def type_name(value: Value) -> str:
    if isinstance(value, ZSet):
        return "zset"
    if isinstance(value, Hash):
        return "hash"
    return "string"


def resp2(reply: Reply) -> bytes:
    """The exact RESP2 bytes of a reply."""
    if isinstance(reply, Err):
        return b"-" + reply.text + b"\r\n"
    if reply is None:
        return b"$-1\r\n"
    if isinstance(reply, int):
        return b":%d\r\n" % reply
    if isinstance(reply, bytes):
        return b"$%d\r\n%s\r\n" % (len(reply), reply)
    return b"*%d\r\n" % len(reply) + b"".join(resp2(item) for item in reply)


def row_key(prefix: bytes, job: bytes) -> bytes:
    return prefix + b"job:" + job


def seq_key(prefix: bytes) -> bytes:
    return prefix + b"seq"


def paused_key(prefix: bytes) -> bytes:
    return prefix + b"paused"


@dataclass(frozen=True)
class Shape:
    """A verb's KEYS (its sets, in order; the prefix follows as the last
    KEY) and how many ARGV fit: what §2 steps 1-3 check."""

    sets: tuple[str, ...]
    fits: Callable[[int], bool]

    @property
    def numkeys(self) -> int:
        return len(self.sets) + 1


SHAPES: dict[str, Shape] = {
    "EMQ.ENQUEUE": Shape(("pending",), lambda n: n == 2),
    "EMQ.SCHEDULE": Shape(("schedule",), lambda n: n == 3),
    "EMQ.CLAIM": Shape(("pending", "active"), lambda n: n == 1),
    "EMQ.EXTEND": Shape(("active",), lambda n: n == 3),
    # lease_ms, then at least one (id, token) pair
    "EMQ.EXTENDS": Shape(("active",), lambda n: n >= 3 and n % 2 == 1),
    "EMQ.COMPLETE": Shape(("active",), lambda n: n == 2),
    "EMQ.DELAY": Shape(("active", "schedule"), lambda n: n == 3),
    "EMQ.FAIL": Shape(("active", "pending", "schedule", "dead"), lambda n: n in (4, 5)),
    "EMQ.PROMOTE": Shape(("schedule", "pending"), lambda n: n in (0, 1)),
    "EMQ.RESCHEDULE": Shape(("schedule",), lambda n: n == 2),
    "EMQ.REPROCESS": Shape(("dead", "pending"), lambda n: n == 1),
    "EMQ.REQUEUE": Shape(("active", "pending"), lambda n: n == 2),
    "EMQ.STALLED.CHECK": Shape(("active", "pending", "dead"), lambda n: n in (1, 2)),
}


@dataclass(frozen=True)
class Queue:
    """A queue's key names, and its verbs' requests as a client sends them."""

    prefix: bytes

    def key(self, place: str) -> bytes:
        return self.prefix + place.encode()

    @property
    def pending(self) -> bytes:
        return self.key("pending")

    @property
    def active(self) -> bytes:
        return self.key("active")

    @property
    def schedule(self) -> bytes:
        return self.key("schedule")

    @property
    def dead(self) -> bytes:
        return self.key("dead")

    @property
    def seq(self) -> bytes:
        return seq_key(self.prefix)

    @property
    def paused(self) -> bytes:
        return paused_key(self.prefix)

    def row(self, job: bytes) -> bytes:
        return row_key(self.prefix, job)

    def request(self, verb: str, *argv: bytes | str | int) -> tuple[bytes | str | int, ...]:
        """`verb numkeys <sets...> prefix <argv...>`."""
        shape = SHAPES[verb]
        return (verb, shape.numkeys, *(self.key(s) for s in shape.sets), self.prefix, *argv)


def server_keyspace(client: Any) -> dict[bytes, tuple[str, object]]:
    """A live server's whole keyspace in the form ``Model.dump`` gives
    (SCAN, TYPE, then GET / HGETALL / ZRANGE WITHSCORES), read with a RESP2
    redis-py client. Integral scores come back as ints."""
    keys = list(client.scan_iter(count=1000))
    pipe = client.pipeline(transaction=False)
    for key in keys:
        pipe.type(key)
    kinds = [k.decode() if isinstance(k, bytes) else k for k in pipe.execute()]
    pipe = client.pipeline(transaction=False)
    for key, kind in zip(keys, kinds, strict=True):
        if kind == "string":
            pipe.get(key)
        elif kind == "hash":
            pipe.hgetall(key)
        elif kind == "zset":
            pipe.zrange(key, 0, -1, withscores=True)
        elif kind == "list":
            pipe.lrange(key, 0, -1)
        else:
            pipe.type(key)  # a kind the core never writes: its type is enough
    out: dict[bytes, tuple[str, object]] = {}
    for key, kind, content in zip(keys, kinds, pipe.execute(), strict=True):
        if kind == "zset":
            content = {m: int(s) if float(s).is_integer() else s for m, s in content}
        elif kind not in ("string", "hash", "list"):
            content = None
        out[key] = (kind, content)
    return out


def _b(arg: bytes | str | int) -> bytes:
    if isinstance(arg, bytes):
        return arg
    return str(arg).encode()


class Model:
    """The keyspace plus the server's clock (`now`, ms) and `run_id`."""

    def __init__(self, now: int, run_id: bytes) -> None:
        self.now = now
        self.run_id = run_id
        self.db: dict[bytes, Value] = {}

    @classmethod
    def load(cls, keyspace: dict[bytes, tuple[str, Any]], now: int, run_id: bytes) -> Model:
        """A model holding a keyspace in ``dump`` form (strings, hashes and
        sorted sets only)."""
        model = cls(now, run_id)
        for key, (kind, content) in keyspace.items():
            if kind == "zset":
                model.db[key] = ZSet(content)
            elif kind == "hash":
                model.db[key] = Hash(content)
            elif kind == "string":
                model.db[key] = content
            else:
                raise ValueError(f"the model holds no {kind} ({key!r})")
        return model

    # ------------------------------------------------------------------
    # The entry point: a whole request, as a client sends it.

    def call(self, verb: str, *args: bytes | str | int) -> Reply:
        """Run one request (``verb`` then its arguments) and return the
        expected reply, applying the expected writes."""
        verb = verb.upper()
        if verb == "EMQ.VERSION":
            return VERSION_TOKENS if not args else Err(arity_error(verb))
        shape = SHAPES[verb]
        raw = [_b(a) for a in args]
        try:
            # (1) a numkeys argument, (2) equal to the verb's, canonical
            # decimal, (3) the ARGV count after the keys fits.
            if not raw:
                raise Refused(arity_error(verb))
            if raw[0] != b"%d" % shape.numkeys:
                raise Refused(numkeys_error(verb, shape.numkeys))
            keys, argv = raw[1 : 1 + shape.numkeys], raw[1 + shape.numkeys :]
            if len(keys) < shape.numkeys or not shape.fits(len(argv)):
                raise Refused(arity_error(verb))
            handler = getattr(self, verb[4:].lower().replace(".", "_"))
            return handler(keys, argv)
        except Refused as refusal:
            return Err(refusal.text)

    # ------------------------------------------------------------------
    # Step 4: key types.

    def _must_be_zset(self, key: bytes) -> None:
        if key in self.db and not isinstance(self.db[key], ZSet):
            raise Refused(WRONGTYPE)

    def _must_be_hash(self, key: bytes) -> None:
        if key in self.db and not isinstance(self.db[key], Hash):
            raise Refused(WRONGTYPE)

    def _seq_now(self, prefix: bytes) -> int:
        """P..seq as INCR would see it: absent is 0; another type is
        WRONGTYPE; a string that is no integer gets INCR's text."""
        value = self.db.get(seq_key(prefix))
        if value is None:
            return 0
        if not isinstance(value, bytes):
            raise Refused(WRONGTYPE)
        number = parse_int(value)
        if number is None:
            raise Refused(NOT_AN_INTEGER)
        return number

    # ------------------------------------------------------------------
    # Step 5: arguments.

    @staticmethod
    def _id(raw: bytes) -> bytes:
        if raw == b"":
            raise Refused(out_of_range("id"))
        return raw

    @staticmethod
    def _int(raw: bytes, argname: str, low: int, high: int = INT64_MAX) -> int:
        value = parse_int(raw)
        if value is None:
            raise Refused(NOT_AN_INTEGER)
        if not low <= value <= high:
            raise Refused(out_of_range(argname))
        return value

    def _lease_ms(self, raw: bytes) -> int:
        return self._int(raw, "lease_ms", 1, MAX_SCORE - self.now)

    # ------------------------------------------------------------------
    # Step 6: the row.

    def _row(self, prefix: bytes, job: bytes) -> Hash | None:
        value = self.db.get(row_key(prefix, job))
        if value is not None and not isinstance(value, Hash):
            raise Refused(WRONGTYPE)  # a row read through a set (decision 2)
        return value

    def _existing_row(self, prefix: bytes, job: bytes) -> Hash:
        row = self._row(prefix, job)
        if row is None:
            raise Refused(no_job(job))
        return row

    @staticmethod
    def _not_lane(job: bytes, row: Hash) -> None:
        if b"group" in row:
            raise Refused(lane_row(job))

    @staticmethod
    def _not_flow_child(job: bytes, row: Hash) -> None:
        if b"parent" in row:
            raise Refused(flow_child(job))

    @staticmethod
    def _state(job: bytes, row: Hash, expected: bytes) -> None:
        state = row.get(b"state", b"")  # missing state reads as "" (decision 5)
        if state != expected:
            raise Refused(wrong_state(job, state, expected))

    @staticmethod
    def _token(job: bytes, row: Hash, token: bytes) -> None:
        if row.get(b"attempts") != token:  # compared as bytes: "07" is not "7"
            raise Refused(stale_token(job, token))

    @staticmethod
    def _counter_after_incr(row: Hash, field: bytes) -> int:
        """What HINCRBY row field 1 would give; refused as Valkey refuses."""
        raw = row.get(field)
        value = 0 if raw is None else parse_int(raw)
        if value is None:
            raise Refused(HASH_NOT_AN_INTEGER)
        if value == INT64_MAX:
            raise Refused(OVERFLOW)
        return value + 1

    def _seq_room(self, prefix: bytes, increments: int) -> int:
        """Check that `increments` INCRs keep P..seq within 2^53."""
        seq = self._seq_now(prefix)
        if seq + increments > MAX_SCORE:
            raise Refused(SEQ_OUT_OF_RANGE)
        return seq

    def _next_free_number(self, prefix: bytes, seq: int) -> int:
        """`*`: the next number after seq with no key P..job:<n> (decision 8)."""
        number = seq + 1
        while row_key(prefix, b"%d" % number) in self.db:
            number += 1
        if number > MAX_SCORE:
            raise Refused(SEQ_OUT_OF_RANGE)
        return number

    # ------------------------------------------------------------------
    # The plain commands a verb writes with (§2 rule 7).

    def zadd(self, key: bytes, score: int, member: bytes) -> None:
        self.db.setdefault(key, ZSet())[member] = score  # type: ignore[index]

    def zrem(self, key: bytes, member: bytes) -> None:
        zset = self.db.get(key)
        if isinstance(zset, ZSet):
            zset.pop(member, None)
            if not zset:
                del self.db[key]

    def hset(self, key: bytes, *pairs: bytes) -> None:
        row = self.db.setdefault(key, Hash())
        for field, value in zip(pairs[::2], pairs[1::2], strict=True):
            row[field] = value  # type: ignore[index]

    def hdel(self, key: bytes, field: bytes) -> None:
        """(For tests' raw writes; no verb deletes a field.) An emptied hash
        is no key at all."""
        row = self.db.get(key)
        if isinstance(row, Hash):
            row.pop(field, None)
            if not row:
                del self.db[key]

    def hincrby(self, key: bytes, field: bytes) -> int:
        row = self.db[key]
        assert isinstance(row, Hash)
        value = int(row.get(field, b"0")) + 1
        row[field] = b"%d" % value
        return value

    def incr(self, key: bytes) -> int:
        value = int(self.db.get(key, b"0")) + 1  # type: ignore[arg-type]
        self.db[key] = b"%d" % value
        return value

    def set_seq(self, prefix: bytes, value: int) -> None:
        self.db[seq_key(prefix)] = b"%d" % value

    def delete(self, key: bytes) -> None:
        self.db.pop(key, None)

    @staticmethod
    def sweep(zset: Value | None, now: int, limit: int) -> list[bytes]:
        """Ids whose score <= now, lowest score first, ties in member byte
        order (as a sorted set orders them), at most `limit`."""
        if not isinstance(zset, ZSet):
            return []
        due = sorted((score, member) for member, score in zset.items() if score <= now)
        return [member for _, member in due[:limit]]

    @staticmethod
    def lowest(zset: Value | None) -> bytes | None:
        """The head of a sorted set (what ZPOPMIN would pop), or None."""
        if not isinstance(zset, ZSet) or not zset:
            return None
        return min(zset.items(), key=lambda item: (item[1], item[0]))[0]

    def move_to_pending(self, prefix: bytes, pending: bytes, job: bytes) -> None:
        """Every re-entry into pending takes a fresh sequence number."""
        s = self.incr(seq_key(prefix))
        self.hset(row_key(prefix, job), b"state", b"pending")
        self.zadd(pending, s, job)

    # ------------------------------------------------------------------
    # The thirteen verbs. Each receives its KEYS (prefix last) and ARGV.

    def enqueue(self, keys: list[bytes], argv: list[bytes]) -> Reply:
        pending, prefix = keys
        job, payload = argv
        self._must_be_zset(pending)
        if job not in (b"", b"*"):
            self._must_be_hash(row_key(prefix, job))
        seq = self._seq_now(prefix)  # ENQUEUE always INCRs
        self._id(job)
        if job == b"*":
            s = self._next_free_number(prefix, seq)
            job = b"%d" % s
        else:
            if self._row(prefix, job) is not None:
                return None  # idempotent admission: not even seq moves
            s = self._seq_room(prefix, 1) + 1
        self.set_seq(prefix, s)  # INCR P..seq (moving past taken numbers)
        self.hset(row_key(prefix, job), b"state", b"pending", b"attempts", b"0", b"payload", payload)
        self.zadd(pending, s, job)
        return job

    def schedule(self, keys: list[bytes], argv: list[bytes]) -> Reply:
        schedule, prefix = keys
        job, payload, run_at_raw = argv
        self._must_be_zset(schedule)
        if job not in (b"", b"*"):
            self._must_be_hash(row_key(prefix, job))
        seq = self._seq_now(prefix) if job == b"*" else 0  # seq only for `*`
        self._id(job)
        run_at = self._int(run_at_raw, "run_at_ms", 0, MAX_SCORE)
        if job == b"*":
            s = self._next_free_number(prefix, seq)
            job = b"%d" % s
            self.set_seq(prefix, s)
        elif self._row(prefix, job) is not None:
            return None
        self.hset(row_key(prefix, job), b"state", b"scheduled", b"attempts", b"0", b"payload", payload)
        self.zadd(schedule, run_at, job)
        return job

    def claim(self, keys: list[bytes], argv: list[bytes]) -> Reply:
        pending, active, prefix = keys
        self._must_be_zset(pending)
        self._must_be_zset(active)
        lease = self._lease_ms(argv[0])  # parsed before paused/empty (decision 4)
        if paused_key(prefix) in self.db:
            return []
        head = self.lowest(self.db.get(pending))
        if head is None:
            return []
        job = head
        row = self._row(prefix, job)
        if row is None:
            self.zrem(pending, job)  # a ghost head: its removal is the only write
            return []
        self._state(job, row, b"pending")
        self._counter_after_incr(row, b"attempts")
        # writes
        self.zrem(pending, job)  # ZPOPMIN
        attempts = self.hincrby(row_key(prefix, job), b"attempts")
        self.hset(row_key(prefix, job), b"state", b"active", b"lease_epoch", self.run_id)
        self.zadd(active, self.now + lease, job)
        return [job, row.get(b"payload"), attempts]

    def extend(self, keys: list[bytes], argv: list[bytes]) -> Reply:
        active, prefix = keys
        job, token, lease_raw = argv
        self._must_be_zset(active)
        if job:
            self._must_be_hash(row_key(prefix, job))
        self._id(job)
        lease = self._lease_ms(lease_raw)
        row = self._existing_row(prefix, job)  # no lane/flow check (decision 10)
        self._state(job, row, b"active")  # a lease past its deadline still counts
        self._token(job, row, token)
        self.zadd(active, self.now + lease, job)
        self.hset(row_key(prefix, job), b"lease_epoch", self.run_id)
        return 1

    def extends(self, keys: list[bytes], argv: list[bytes]) -> Reply:
        active, prefix = keys
        lease_raw, pairs = argv[0], list(zip(argv[1::2], argv[2::2], strict=True))
        self._must_be_zset(active)
        for job, _ in pairs:
            if job:
                self._must_be_hash(row_key(prefix, job))
        lease = self._lease_ms(lease_raw)  # lease_ms first, then the ids
        for job, _ in pairs:
            self._id(job)  # any empty id refuses the whole call
        results: list[Reply] = []
        for job, token in pairs:
            row = self._row(prefix, job)
            ok = row is not None and row.get(b"state") == b"active" and row.get(b"attempts") == token
            if ok:  # judged alone: 0 writes nothing for that pair
                self.zadd(active, self.now + lease, job)
                self.hset(row_key(prefix, job), b"lease_epoch", self.run_id)
            results.append(1 if ok else 0)
        return results

    def complete(self, keys: list[bytes], argv: list[bytes]) -> Reply:
        active, prefix = keys
        job, token = argv
        self._must_be_zset(active)
        if job:
            self._must_be_hash(row_key(prefix, job))
        self._id(job)
        row = self._existing_row(prefix, job)
        self._not_lane(job, row)
        self._not_flow_child(job, row)
        self._state(job, row, b"active")
        self._token(job, row, token)
        self.zrem(active, job)
        self.delete(row_key(prefix, job))  # completion deletes the row
        return 1

    def delay(self, keys: list[bytes], argv: list[bytes]) -> Reply:
        active, schedule, prefix = keys
        job, token, delay_raw = argv
        self._must_be_zset(active)
        self._must_be_zset(schedule)
        if job:
            self._must_be_hash(row_key(prefix, job))
        self._id(job)
        delay = self._int(delay_raw, "delay_ms", 0, MAX_SCORE - self.now)
        row = self._existing_row(prefix, job)
        self._not_lane(job, row)
        self._state(job, row, b"active")
        self._token(job, row, token)
        self.zrem(active, job)
        self.hset(row_key(prefix, job), b"state", b"scheduled")
        self.zadd(schedule, self.now + delay, job)
        return 1

    def fail(self, keys: list[bytes], argv: list[bytes]) -> Reply:
        active, pending, schedule, dead, prefix = keys
        job, token, max_raw, backoff_raw = argv[:4]
        reason = argv[4] if len(argv) == 5 else None
        for key in (active, pending, schedule, dead):
            self._must_be_zset(key)
        if job:
            self._must_be_hash(row_key(prefix, job))
        self._seq_now(prefix)  # FAIL may INCR: checked whatever the path
        self._id(job)
        max_attempts = self._int(max_raw, "max_attempts", 1)
        backoff = self._int(backoff_raw, "backoff_ms", 0, MAX_SCORE - self.now)
        row = self._existing_row(prefix, job)
        self._not_lane(job, row)
        self._not_flow_child(job, row)
        self._token(job, row, token)  # FAIL alone: token before state
        if row.get(b"state") == b"dead":
            return b"dead"  # a repeated terminal failure writes nothing
        self._state(job, row, b"active")
        failures = self._counter_after_incr(row, b"failures")
        if failures >= max_attempts:
            outcome = b"dead"
        elif backoff > 0:
            outcome = b"scheduled"
        else:
            outcome = b"pending"
            self._seq_room(prefix, 1)
        # writes
        key = row_key(prefix, job)
        self.hincrby(key, b"failures")
        if reason is not None:
            self.hset(key, b"error", reason)  # an empty reason counts
        self.zrem(active, job)
        if outcome == b"dead":
            self.hset(key, b"state", b"dead")
            self.zadd(dead, self.now, job)
        elif outcome == b"scheduled":
            self.hset(key, b"state", b"scheduled")
            self.zadd(schedule, self.now + backoff, job)
        else:
            self.move_to_pending(prefix, pending, job)
        return outcome

    def promote(self, keys: list[bytes], argv: list[bytes]) -> Reply:
        schedule, pending, prefix = keys
        self._must_be_zset(schedule)
        self._must_be_zset(pending)
        self._seq_now(prefix)
        limit = self._int(argv[0], "limit", 1) if argv else DEFAULT_LIMIT
        due = self.sweep(self.db.get(schedule), self.now, limit)  # ghosts count in the limit
        promoted = []
        for job in due:
            row = self._row(prefix, job)
            if row is not None:
                # lane rows and flow children are promoted (decision 6)
                self._state(job, row, b"scheduled")
                promoted.append(job)
        self._seq_room(prefix, len(promoted))
        for job in due:
            self.zrem(schedule, job)
            if job in promoted:
                self.move_to_pending(prefix, pending, job)
        return len(promoted)  # ghosts are removed but not counted

    def reschedule(self, keys: list[bytes], argv: list[bytes]) -> Reply:
        schedule, prefix = keys
        job, run_at_raw = argv
        self._must_be_zset(schedule)
        if job:
            self._must_be_hash(row_key(prefix, job))
        self._id(job)
        run_at = self._int(run_at_raw, "run_at_ms", 0, MAX_SCORE)
        row = self._existing_row(prefix, job)
        self._not_lane(job, row)
        self._state(job, row, b"scheduled")
        self.zadd(schedule, run_at, job)
        return 1

    def reprocess(self, keys: list[bytes], argv: list[bytes]) -> Reply:
        dead, pending, prefix = keys
        (job,) = argv
        self._must_be_zset(dead)
        self._must_be_zset(pending)
        if job:
            self._must_be_hash(row_key(prefix, job))
        self._seq_now(prefix)
        self._id(job)
        row = self._existing_row(prefix, job)
        self._not_lane(job, row)
        self._state(job, row, b"dead")
        self._seq_room(prefix, 1)
        self.zrem(dead, job)
        self.move_to_pending(prefix, pending, job)  # every counter kept
        return 1

    def requeue(self, keys: list[bytes], argv: list[bytes]) -> Reply:
        active, pending, prefix = keys
        job, token = argv
        self._must_be_zset(active)
        self._must_be_zset(pending)
        if job:
            self._must_be_hash(row_key(prefix, job))
        self._seq_now(prefix)
        self._id(job)
        row = self._existing_row(prefix, job)
        self._not_lane(job, row)
        self._state(job, row, b"active")
        self._token(job, row, token)
        self._seq_room(prefix, 1)
        self.zrem(active, job)
        self.move_to_pending(prefix, pending, job)  # no counter written
        return 1

    def stalled_check(self, keys: list[bytes], argv: list[bytes]) -> Reply:
        active, pending, dead, prefix = keys
        for key in (active, pending, dead):
            self._must_be_zset(key)
        self._seq_now(prefix)
        max_stalled = self._int(argv[0], "max_stalled", 0)
        limit = self._int(argv[1], "limit", 1) if len(argv) == 2 else DEFAULT_LIMIT
        due = self.sweep(self.db.get(active), self.now, limit)
        rows = {job: self._row(prefix, job) for job in due}
        for job, row in rows.items():  # a lane row refuses the whole sweep
            if row is not None:
                self._not_lane(job, row)
        for job, row in rows.items():  # then a due row not active (decision 7)
            if row is not None:
                self._state(job, row, b"active")
        plan: list[tuple[bytes, str]] = []
        for job, row in rows.items():
            if row is None:
                plan.append((job, "ghost"))
            elif row.get(b"lease_epoch", self.run_id) != self.run_id:
                plan.append((job, "restart"))  # crossed a restart: not counted
            elif self._counter_after_incr(row, b"stalled") > max_stalled:
                plan.append((job, "dead"))
            else:
                plan.append((job, "stalled"))
        self._seq_room(prefix, sum(1 for _, how in plan if how in ("restart", "stalled")))
        requeued: list[Reply] = []
        buried: list[Reply] = []
        for job, how in plan:
            if how == "ghost":
                self.zrem(active, job)
                continue
            if how != "restart":
                self.hincrby(row_key(prefix, job), b"stalled")
            self.zrem(active, job)
            if how == "dead":
                self.hset(row_key(prefix, job), b"state", b"dead")
                self.zadd(dead, self.now, job)
                buried.append(job)
            else:
                self.move_to_pending(prefix, pending, job)
                requeued.append(job)
        return [requeued, buried]

    # ------------------------------------------------------------------
    # What a test compares.

    def dump(self) -> dict[bytes, tuple[str, object]]:
        """The whole keyspace as ``key -> (type, content)``."""
        return {key: (type_name(value), value if isinstance(value, bytes) else dict(value))
                for key, value in self.db.items()}

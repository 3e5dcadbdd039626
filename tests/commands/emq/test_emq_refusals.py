"""Every refusal of the EMQ job core: exact error bytes, and nothing written.

Each case starts from one small queue (``world``) in which every verb's
baseline request succeeds (``test_baseline_is_accepted`` proves it), changes
one thing, and sends a request. The reply must be the error the spec's table
(§2, "Replies for refusals") names, byte for byte, and DEBUG DIGEST, the
whole keyspace and P..seq must be as they were before (rule 1: a refused call
writes nothing). Where two checks collide, the case pins the §2 check order
(and decisions 1-11). Expected texts are written by hand; the model is
asked too, so it stays in step with the spec as these cases read it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import pytest
import redis
from helpers.emq_model import (
    HASH_NOT_AN_INTEGER,
    MAX_SCORE,
    NOT_AN_INTEGER,
    OVERFLOW,
    SEQ_OUT_OF_RANGE,
    SHAPES,
    WRONGTYPE,
    Err,
    Model,
    Queue,
    arity_error,
    flow_child,
    lane_row,
    no_job,
    numkeys_error,
    out_of_range,
    resp2,
    server_keyspace,
    stale_token,
    wrong_state,
)
from helpers.resp_wire import Wire

Q = Queue(b"emq:{t}:")
T0 = 1_700_000_000_000
INT64_MAX = b"9223372036854775807"
Tweak = Callable[[redis.Redis], object]
Arg = bytes | str | int


def world(r: redis.Redis) -> None:
    """p pending (seq 1), a active and due, s scheduled and due, d dead."""
    r.hset(Q.row(b"p"), mapping={b"state": b"pending", b"attempts": b"0", b"payload": b"P"})
    r.hset(Q.row(b"a"), mapping={b"state": b"active", b"attempts": b"1", b"payload": b"A"})
    r.hset(Q.row(b"s"), mapping={b"state": b"scheduled", b"attempts": b"0", b"payload": b"S"})
    r.hset(Q.row(b"d"), mapping={b"state": b"dead", b"attempts": b"2", b"payload": b"D", b"failures": b"2"})
    r.zadd(Q.pending, {b"p": 1})
    r.zadd(Q.active, {b"a": T0 - 1})
    r.zadd(Q.schedule, {b"s": T0 - 1})
    r.zadd(Q.dead, {b"d": T0 - 2})
    r.set(Q.seq, b"1")


# One request per verb that `world` accepts; cases vary one thing of it.
BASELINE: dict[str, tuple[Arg, ...]] = {
    "EMQ.ENQUEUE": (b"n", b"x"),
    "EMQ.SCHEDULE": (b"n", b"x", T0),
    "EMQ.CLAIM": (1000,),
    "EMQ.EXTEND": (b"a", b"1", 1000),
    "EMQ.EXTENDS": (1000, b"a", b"1"),
    "EMQ.COMPLETE": (b"a", b"1"),
    "EMQ.DELAY": (b"a", b"1", 100),
    "EMQ.FAIL": (b"a", b"1", 3, 0),
    "EMQ.PROMOTE": (10,),
    "EMQ.RESCHEDULE": (b"s", 5),
    "EMQ.REPROCESS": (b"d",),
    "EMQ.REQUEUE": (b"a", b"1"),
    "EMQ.STALLED.CHECK": (1, 10),
}
VERBS = list(BASELINE)


@dataclass(frozen=True)
class Case:
    name: str
    request: tuple[Arg, ...]
    error: bytes
    tweaks: tuple[Tweak, ...] = field(default=())
    now: int = T0


CASES: list[Case] = []


def case(name: str, request: tuple[Arg, ...], error: bytes, *tweaks: Tweak, now: int = T0) -> None:
    CASES.append(Case(name, request, error, tweaks, now))


def req(verb: str, *argv: Arg) -> tuple[Arg, ...]:
    return Q.request(verb, *argv)


def base(verb: str, **changes: Arg) -> tuple[Arg, ...]:
    """The verb's baseline request with some ARGV positions replaced
    (``a0=...`` is the first ARGV)."""
    argv = list(BASELINE[verb])
    for pos, value in changes.items():
        argv[int(pos[1:])] = value
    return req(verb, *argv)


def replace_with_string(key: bytes) -> Tweak:
    return lambda r: (r.delete(key), r.set(key, b"not a zset"))


def replace_with_hash(key: bytes) -> Tweak:
    return lambda r: (r.delete(key), r.hset(key, b"f", b"v"))


def hset(job: bytes, fld: bytes, value: bytes) -> Tweak:
    return lambda r: r.hset(Q.row(job), fld, value)


def hdel(job: bytes, fld: bytes) -> Tweak:
    return lambda r: r.hdel(Q.row(job), fld)


def zadd(key: bytes, member: bytes, score: int) -> Tweak:
    return lambda r: r.zadd(key, {member: score})


def set_seq(value: bytes | int) -> Tweak:
    return lambda r: r.set(Q.seq, value)


def pause(r: redis.Redis) -> object:
    return r.set(Q.paused, b"1")


def empty_pending(r: redis.Redis) -> object:
    return r.delete(Q.pending)


# ---------------------------------------------------------------- (1)-(3) arity and numkeys

for verb in VERBS:
    case(f"{verb}-no-args", (verb,), arity_error(verb))

ARGV_COUNTS_THAT_DO_NOT_FIT: dict[str, list[tuple[Arg, ...]]] = {
    "EMQ.ENQUEUE": [(), (b"n",), (b"n", b"x", b"y")],
    "EMQ.SCHEDULE": [(b"n", b"x"), (b"n", b"x", T0, b"y")],
    "EMQ.CLAIM": [(), (1000, 1000)],
    "EMQ.EXTEND": [(b"a", b"1"), (b"a", b"1", 1000, b"y")],
    "EMQ.EXTENDS": [(), (1000,), (1000, b"a"), (1000, b"a", b"1", b"a")],
    "EMQ.COMPLETE": [(b"a",), (b"a", b"1", b"y")],
    "EMQ.DELAY": [(b"a", b"1"), (b"a", b"1", 100, b"y")],
    "EMQ.FAIL": [(b"a", b"1", 3), (b"a", b"1", 3, 0, b"why", b"y")],
    "EMQ.PROMOTE": [(10, 10)],
    "EMQ.RESCHEDULE": [(b"s",), (b"s", 5, b"y")],
    "EMQ.REPROCESS": [(), (b"d", b"y")],
    "EMQ.REQUEUE": [(b"a",), (b"a", b"1", b"y")],
    "EMQ.STALLED.CHECK": [(), (1, 10, 10)],
}
for verb, variants in ARGV_COUNTS_THAT_DO_NOT_FIT.items():
    for argv in variants:
        case(f"{verb}-argc-{len(argv)}", req(verb, *argv), arity_error(verb))
    numkeys = SHAPES[verb].numkeys
    some_keys = req(verb)[2 : 2 + numkeys - 1]  # one key short, no ARGV
    case(f"{verb}-keys-missing", (verb, numkeys, *some_keys), arity_error(verb))

for verb in VERBS:
    n = SHAPES[verb].numkeys
    full = base(verb)
    for bad in (str(n - 1), str(n + 1), f"0{n}", f"+{n}", f" {n}", f"{n} ", "x", "-1", "", "0"):
        case(f"{verb}-numkeys-{bad!r}", (verb, bad, *full[2:]), numkeys_error(verb, n))
    # numkeys is checked before the ARGV count and before key types
    case(f"{verb}-numkeys-before-argc", (verb, str(n + 1), *full[2:], b"extra", b"more"), numkeys_error(verb, n))
    case(f"{verb}-numkeys-before-type", (verb, f"0{n}", *full[2:]), numkeys_error(verb, n),
         replace_with_string(Q.key(SHAPES[verb].sets[0])))
    # the ARGV count is checked before key types
    case(f"{verb}-argc-before-type", (*full, b"x", b"y", b"z", b"w", b"v") if verb != "EMQ.EXTENDS"
         else (*full, b"odd"), arity_error(verb), replace_with_string(Q.key(SHAPES[verb].sets[0])))

# the name in the texts is the lower-case command name, however the client spelled it
case("mixed-case-arity", ("Emq.Stalled.Check",), arity_error("EMQ.STALLED.CHECK"))
case("mixed-case-numkeys", ("eMQ.cLAIM", 2, Q.pending, Q.prefix, 1000), numkeys_error("EMQ.CLAIM", 3))
case("mixed-case-argc", ("emq.fail", 5, Q.active, Q.pending, Q.schedule, Q.dead, Q.prefix, b"a"),
     arity_error("EMQ.FAIL"))

# ---------------------------------------------------------------- (4) key types

for verb in VERBS:
    for place in SHAPES[verb].sets:
        key = Q.key(place)
        case(f"{verb}-{place}-is-string", base(verb), WRONGTYPE, replace_with_string(key))
        case(f"{verb}-{place}-is-hash", base(verb), WRONGTYPE, replace_with_hash(key))

# the verb's own row (a key P..job:<id> that is not a hash)
for verb, job in [("EMQ.ENQUEUE", b"n"), ("EMQ.SCHEDULE", b"n"), ("EMQ.EXTEND", b"a"), ("EMQ.EXTENDS", b"a"),
                  ("EMQ.COMPLETE", b"a"), ("EMQ.DELAY", b"a"), ("EMQ.FAIL", b"a"), ("EMQ.RESCHEDULE", b"s"),
                  ("EMQ.REPROCESS", b"d"), ("EMQ.REQUEUE", b"a")]:
    case(f"{verb}-row-is-string", base(verb), WRONGTYPE, replace_with_string(Q.row(job)))
    case(f"{verb}-row-is-zset", base(verb), WRONGTYPE, lambda r, job=job: (r.delete(Q.row(job)),
                                                                          r.zadd(Q.row(job), {b"m": 1})))
# rows read through a set: CLAIM's head, PROMOTE's and STALLED.CHECK's due ids
case("EMQ.CLAIM-head-row-is-string", base("EMQ.CLAIM"), WRONGTYPE, replace_with_string(Q.row(b"p")))
case("EMQ.PROMOTE-due-row-is-string", base("EMQ.PROMOTE"), WRONGTYPE, replace_with_string(Q.row(b"s")))
case("EMQ.STALLED.CHECK-due-row-is-string", base("EMQ.STALLED.CHECK"), WRONGTYPE, replace_with_string(Q.row(b"a")))

# P..seq, for every verb that may INCR it, whatever path the call would take
SEQ_VERBS: dict[str, tuple[Arg, ...]] = {
    "EMQ.ENQUEUE": base("EMQ.ENQUEUE"),
    "EMQ.ENQUEUE-existing-row": base("EMQ.ENQUEUE", a0=b"p"),  # would reply nil
    "EMQ.SCHEDULE-star": base("EMQ.SCHEDULE", a0=b"*"),
    "EMQ.FAIL": base("EMQ.FAIL"),
    "EMQ.FAIL-to-dead": base("EMQ.FAIL", a2=1),  # would not INCR
    "EMQ.FAIL-to-schedule": base("EMQ.FAIL", a3=100),  # would not INCR
    "EMQ.PROMOTE": base("EMQ.PROMOTE"),
    "EMQ.REPROCESS": base("EMQ.REPROCESS"),
    "EMQ.REQUEUE": base("EMQ.REQUEUE"),
    "EMQ.STALLED.CHECK": base("EMQ.STALLED.CHECK"),
    "EMQ.STALLED.CHECK-to-dead": base("EMQ.STALLED.CHECK", a0=0),  # would not INCR
}
for name, request in SEQ_VERBS.items():
    for bad in (b"abc", b"01", b"1.5", b"", b" 1", b"9223372036854775808"):
        case(f"{name}-seq-{bad!r}", request, NOT_AN_INTEGER, set_seq(bad))
    case(f"{name}-seq-is-hash", request, WRONGTYPE, replace_with_hash(Q.seq))
    case(f"{name}-seq-is-zset", request, WRONGTYPE, lambda r: (r.delete(Q.seq), r.zadd(Q.seq, {b"m": 1})))
case("EMQ.PROMOTE-nothing-due-seq-bad", base("EMQ.PROMOTE"), NOT_AN_INTEGER, set_seq(b"x"),
     zadd(Q.schedule, b"s", T0 + 1))
case("EMQ.STALLED.CHECK-nothing-due-seq-bad", base("EMQ.STALLED.CHECK"), NOT_AN_INTEGER, set_seq(b"x"),
     zadd(Q.active, b"a", T0 + 1))

# P..seq is a key type (step 4): checked before arguments and before the row
case("EMQ.FAIL-seq-before-ghost", base("EMQ.FAIL", a0=b"g"), NOT_AN_INTEGER, set_seq(b"x"))
case("EMQ.REQUEUE-seq-type-before-ghost", base("EMQ.REQUEUE", a0=b"g"), WRONGTYPE, replace_with_hash(Q.seq))
case("EMQ.REPROCESS-seq-type-before-empty-id", base("EMQ.REPROCESS", a0=b""), WRONGTYPE, replace_with_hash(Q.seq))
case("EMQ.PROMOTE-seq-type-before-limit", base("EMQ.PROMOTE", a0=0), WRONGTYPE, replace_with_hash(Q.seq))
case("EMQ.STALLED.CHECK-seq-type-before-args", base("EMQ.STALLED.CHECK", a0=-1), WRONGTYPE,
     replace_with_hash(Q.seq))

# a row counter that holds no integer: HINCRBY's texts (decision 9)
for bad in (b"x", b"1.0", b"01", b"", b"-0"):
    case(f"EMQ.CLAIM-attempts-{bad!r}", base("EMQ.CLAIM"), HASH_NOT_AN_INTEGER, hset(b"p", b"attempts", bad))
    case(f"EMQ.FAIL-failures-{bad!r}", base("EMQ.FAIL"), HASH_NOT_AN_INTEGER, hset(b"a", b"failures", bad))
    case(f"EMQ.STALLED.CHECK-stalled-{bad!r}", base("EMQ.STALLED.CHECK"), HASH_NOT_AN_INTEGER,
         hset(b"a", b"stalled", bad))
case("EMQ.CLAIM-attempts-overflow", base("EMQ.CLAIM"), OVERFLOW, hset(b"p", b"attempts", INT64_MAX))
case("EMQ.FAIL-failures-overflow", base("EMQ.FAIL"), OVERFLOW, hset(b"a", b"failures", INT64_MAX))
case("EMQ.STALLED.CHECK-stalled-overflow", base("EMQ.STALLED.CHECK"), OVERFLOW, hset(b"a", b"stalled", INT64_MAX))

# ---------------------------------------------------------------- (5) arguments

INTEGER_ARGS: list[tuple[str, int, str]] = [  # verb, ARGV position, argname
    ("EMQ.SCHEDULE", 2, "run_at_ms"),
    ("EMQ.CLAIM", 0, "lease_ms"),
    ("EMQ.EXTEND", 2, "lease_ms"),
    ("EMQ.EXTENDS", 0, "lease_ms"),
    ("EMQ.DELAY", 2, "delay_ms"),
    ("EMQ.FAIL", 2, "max_attempts"),
    ("EMQ.FAIL", 3, "backoff_ms"),
    ("EMQ.PROMOTE", 0, "limit"),
    ("EMQ.RESCHEDULE", 1, "run_at_ms"),
    ("EMQ.STALLED.CHECK", 0, "max_stalled"),
    ("EMQ.STALLED.CHECK", 1, "limit"),
]
NOT_INTEGERS = [b"x", b"1.5", b"+1", b" 1", b"1 ", b"01", b"", b"-0", b"0x1", b"1e3", b"--1",
                b"9223372036854775808", b"-9223372036854775809", b"\xff"]
for verb, pos, argname in INTEGER_ARGS:
    for bad in NOT_INTEGERS:
        case(f"{verb}-{argname}-{bad!r}", base(verb, **{f"a{pos}": bad}), NOT_AN_INTEGER)
    case(f"{verb}-{argname}-int64-min", base(verb, **{f"a{pos}": b"-9223372036854775808"}), out_of_range(argname))

OUT_OF_RANGE: list[tuple[str, int, str, list[Arg]]] = [
    ("EMQ.SCHEDULE", 2, "run_at_ms", [-1, MAX_SCORE + 1, INT64_MAX]),
    ("EMQ.RESCHEDULE", 1, "run_at_ms", [-1, MAX_SCORE + 1, INT64_MAX]),
    ("EMQ.CLAIM", 0, "lease_ms", [0, -1, MAX_SCORE - T0 + 1, INT64_MAX]),
    ("EMQ.EXTEND", 2, "lease_ms", [0, -1, MAX_SCORE - T0 + 1]),
    ("EMQ.EXTENDS", 0, "lease_ms", [0, -1, MAX_SCORE - T0 + 1]),
    ("EMQ.DELAY", 2, "delay_ms", [-1, MAX_SCORE - T0 + 1, INT64_MAX]),
    ("EMQ.FAIL", 2, "max_attempts", [0, -1]),
    ("EMQ.FAIL", 3, "backoff_ms", [-1, MAX_SCORE - T0 + 1, INT64_MAX]),
    ("EMQ.PROMOTE", 0, "limit", [0, -1]),
    ("EMQ.STALLED.CHECK", 0, "max_stalled", [-1]),
    ("EMQ.STALLED.CHECK", 1, "limit", [0, -1]),
]
for verb, pos, argname, values in OUT_OF_RANGE:
    for value in values:
        case(f"{verb}-{argname}={value}", base(verb, **{f"a{pos}": value}), out_of_range(argname))

# now + x must stay within 2^53 with the clock near it
NEAR = MAX_SCORE - 1000
for verb, pos, argname in [("EMQ.CLAIM", 0, "lease_ms"), ("EMQ.EXTEND", 2, "lease_ms"),
                           ("EMQ.EXTENDS", 0, "lease_ms"), ("EMQ.DELAY", 2, "delay_ms"),
                           ("EMQ.FAIL", 3, "backoff_ms")]:
    case(f"{verb}-{argname}-near-2^53", base(verb, **{f"a{pos}": 1001}), out_of_range(argname), now=NEAR)
case("EMQ.CLAIM-lease-at-2^53", base("EMQ.CLAIM", a0=1), out_of_range("lease_ms"), now=MAX_SCORE)
# checked whatever the path: FAIL to dead still checks backoff_ms, on a paused/empty queue CLAIM checks lease_ms
case("EMQ.FAIL-to-dead-backoff-range", base("EMQ.FAIL", a2=1, a3=-1), out_of_range("backoff_ms"))
case("EMQ.CLAIM-paused-lease-0", base("EMQ.CLAIM", a0=0), out_of_range("lease_ms"), pause)
case("EMQ.CLAIM-paused-lease-x", base("EMQ.CLAIM", a0=b"x"), NOT_AN_INTEGER, pause)
case("EMQ.CLAIM-empty-lease-0", base("EMQ.CLAIM", a0=0), out_of_range("lease_ms"), empty_pending)

# the empty id
for verb, pos in [("EMQ.ENQUEUE", 0), ("EMQ.SCHEDULE", 0), ("EMQ.EXTEND", 0), ("EMQ.EXTENDS", 1),
                  ("EMQ.COMPLETE", 0), ("EMQ.DELAY", 0), ("EMQ.FAIL", 0), ("EMQ.RESCHEDULE", 0),
                  ("EMQ.REPROCESS", 0), ("EMQ.REQUEUE", 0)]:
    case(f"{verb}-empty-id", base(verb, **{f"a{pos}": b""}), out_of_range("id"))
case("EMQ.EXTENDS-empty-id-in-second-pair", req("EMQ.EXTENDS", 1000, b"a", b"1", b"", b"1"), out_of_range("id"))

# ARGV order inside step 5 (EXTENDS: lease_ms first)
case("EMQ.SCHEDULE-id-before-run_at", req("EMQ.SCHEDULE", b"", b"x", -1), out_of_range("id"))
case("EMQ.DELAY-id-before-delay", req("EMQ.DELAY", b"", b"1", b"x"), out_of_range("id"))
case("EMQ.FAIL-max_attempts-before-backoff", req("EMQ.FAIL", b"a", b"1", 0, -1), out_of_range("max_attempts"))
case("EMQ.FAIL-parse-before-backoff-range", req("EMQ.FAIL", b"a", b"1", b"x", -1), NOT_AN_INTEGER)
case("EMQ.STALLED.CHECK-max_stalled-before-limit", req("EMQ.STALLED.CHECK", -1, 0), out_of_range("max_stalled"))
case("EMQ.EXTENDS-lease-before-ids", req("EMQ.EXTENDS", 0, b"", b"1"), out_of_range("lease_ms"))
case("EMQ.EXTENDS-lease-parse-before-ids", req("EMQ.EXTENDS", b"x", b"", b"1"), NOT_AN_INTEGER)
case("EMQ.EXTEND-id-before-lease", req("EMQ.EXTEND", b"", b"1", 0), out_of_range("id"))

# ---------------------------------------------------------------- P..seq passing 2^53

SEQ_TOP = set_seq(MAX_SCORE)
case("EMQ.ENQUEUE-seq-top", base("EMQ.ENQUEUE"), SEQ_OUT_OF_RANGE, SEQ_TOP)
case("EMQ.SCHEDULE-star-seq-top", base("EMQ.SCHEDULE", a0=b"*"), SEQ_OUT_OF_RANGE, SEQ_TOP)
case("EMQ.ENQUEUE-star-skips-past-top", base("EMQ.ENQUEUE", a0=b"*"), SEQ_OUT_OF_RANGE, set_seq(MAX_SCORE - 1),
     lambda r: r.hset(Q.row(b"%d" % MAX_SCORE), b"state", b"pending"))
case("EMQ.FAIL-seq-top", base("EMQ.FAIL"), SEQ_OUT_OF_RANGE, SEQ_TOP)
case("EMQ.REQUEUE-seq-top", base("EMQ.REQUEUE"), SEQ_OUT_OF_RANGE, SEQ_TOP)
case("EMQ.REPROCESS-seq-top", base("EMQ.REPROCESS"), SEQ_OUT_OF_RANGE, SEQ_TOP)
case("EMQ.PROMOTE-seq-top", base("EMQ.PROMOTE"), SEQ_OUT_OF_RANGE, SEQ_TOP)
case("EMQ.PROMOTE-second-job-passes-top", base("EMQ.PROMOTE"), SEQ_OUT_OF_RANGE, set_seq(MAX_SCORE - 1),
     lambda r: r.hset(Q.row(b"s2"), mapping={b"state": b"scheduled", b"attempts": b"0"}),
     zadd(Q.schedule, b"s2", T0))
case("EMQ.STALLED.CHECK-seq-top", base("EMQ.STALLED.CHECK"), SEQ_OUT_OF_RANGE, SEQ_TOP)

# types and arguments come before the row: an existing row does not answer nil first
case("EMQ.ENQUEUE-existing-row-pending-wrongtype", base("EMQ.ENQUEUE", a0=b"p"), WRONGTYPE,
     replace_with_string(Q.pending))
case("EMQ.SCHEDULE-existing-row-schedule-wrongtype", base("EMQ.SCHEDULE", a0=b"s"), WRONGTYPE,
     replace_with_string(Q.schedule))
case("EMQ.SCHEDULE-existing-row-run_at-range", base("EMQ.SCHEDULE", a0=b"s", a2=-1), out_of_range("run_at_ms"))
case("EMQ.SCHEDULE-star-run_at-range", base("EMQ.SCHEDULE", a0=b"*", a2=MAX_SCORE + 1), out_of_range("run_at_ms"))
case("EMQ.CLAIM-paused-active-wrongtype", base("EMQ.CLAIM"), WRONGTYPE, pause, replace_with_string(Q.active))
case("EMQ.CLAIM-empty-active-wrongtype", base("EMQ.CLAIM"), WRONGTYPE, empty_pending, replace_with_hash(Q.active))
case("EMQ.PROMOTE-nothing-due-pending-wrongtype", base("EMQ.PROMOTE"), WRONGTYPE, zadd(Q.schedule, b"s", T0 + 1),
     replace_with_string(Q.pending))
case("EMQ.STALLED.CHECK-nothing-due-dead-wrongtype", base("EMQ.STALLED.CHECK"), WRONGTYPE,
     zadd(Q.active, b"a", T0 + 1), replace_with_string(Q.dead))

# ---------------------------------------------------------------- (6) the row

ROW_VERBS: dict[str, tuple[bytes, bytes]] = {  # verb -> (its job in `world`, the set it sits in)
    "EMQ.EXTEND": (b"a", Q.active),
    "EMQ.COMPLETE": (b"a", Q.active),
    "EMQ.DELAY": (b"a", Q.active),
    "EMQ.FAIL": (b"a", Q.active),
    "EMQ.REQUEUE": (b"a", Q.active),
    "EMQ.RESCHEDULE": (b"s", Q.schedule),
    "EMQ.REPROCESS": (b"d", Q.dead),
}
for verb, (job, place) in ROW_VERBS.items():
    case(f"{verb}-ghost-in-set", base(verb, a0=b"g"), no_job(b"g"), zadd(place, b"g", T0 - 5))
    case(f"{verb}-ghost-nowhere", base(verb, a0=b"nobody"), no_job(b"nobody"))
    case(f"{verb}-ghost-crlf", base(verb, a0=b"g\r\nx"), no_job(b"g\r\nx"))
    case(f"{verb}-deleted-row", base(verb), no_job(job), lambda r, job=job: r.delete(Q.row(job)))
    # arguments before the row: a ghost with a bad argument gets the argument error
    if verb in ("EMQ.EXTEND", "EMQ.DELAY", "EMQ.FAIL", "EMQ.RESCHEDULE"):
        pos = {"EMQ.EXTEND": 2, "EMQ.DELAY": 2, "EMQ.FAIL": 3, "EMQ.RESCHEDULE": 1}[verb]
        argname = {"EMQ.EXTEND": "lease_ms", "EMQ.DELAY": "delay_ms", "EMQ.FAIL": "backoff_ms",
                   "EMQ.RESCHEDULE": "run_at_ms"}[verb]
        case(f"{verb}-argument-before-ghost", base(verb, **{"a0": b"g", f"a{pos}": -1}), out_of_range(argname))
        # and a key of the wrong type before a bad argument
        case(f"{verb}-type-before-argument", base(verb, **{f"a{pos}": -1}), WRONGTYPE,
             replace_with_string(Q.key(SHAPES[verb].sets[0])))
        case(f"{verb}-row-type-before-argument", base(verb, **{f"a{pos}": b"x"}), WRONGTYPE,
             replace_with_string(Q.row(job)))

# lane rows: the seven flat verbs (STALLED.CHECK below); EXTEND and CLAIM do not look
for verb in ("EMQ.COMPLETE", "EMQ.FAIL", "EMQ.DELAY", "EMQ.REQUEUE", "EMQ.RESCHEDULE", "EMQ.REPROCESS"):
    job = ROW_VERBS[verb][0]
    case(f"{verb}-lane-row", base(verb), lane_row(job), hset(job, b"group", b"g1"))
    case(f"{verb}-lane-row-empty-group", base(verb), lane_row(job), hset(job, b"group", b""))
    # lane before state (and before the token where there is one)
    case(f"{verb}-lane-before-state", base(verb), lane_row(job), hset(job, b"group", b"g1"),
         hset(job, b"state", b"elsewhere"))
    case(f"{verb}-lane-before-flow", base(verb), lane_row(job), hset(job, b"group", b"g1"),
         hset(job, b"parent", b"P1"))
for verb in ("EMQ.COMPLETE", "EMQ.FAIL", "EMQ.DELAY", "EMQ.REQUEUE"):
    case(f"{verb}-lane-before-token", base(verb, a1=b"9"), lane_row(b"a"), hset(b"a", b"group", b"g1"))

# flow children: COMPLETE and FAIL only
for verb in ("EMQ.COMPLETE", "EMQ.FAIL"):
    case(f"{verb}-flow-child", base(verb), flow_child(b"a"), hset(b"a", b"parent", b"P1"))
    case(f"{verb}-flow-before-state", base(verb, a0=b"p", a1=b"0"), flow_child(b"p"), hset(b"p", b"parent", b"P1"))
    case(f"{verb}-flow-before-token", base(verb, a1=b"9"), flow_child(b"a"), hset(b"a", b"parent", b"P1"))

# wrong state
for verb in ("EMQ.EXTEND", "EMQ.COMPLETE", "EMQ.DELAY", "EMQ.REQUEUE", "EMQ.FAIL"):
    case(f"{verb}-pending", base(verb, a0=b"p", a1=b"0"), wrong_state(b"p", b"pending", b"active"))
    case(f"{verb}-scheduled", base(verb, a0=b"s", a1=b"0"), wrong_state(b"s", b"scheduled", b"active"))
    case(f"{verb}-no-state", base(verb), wrong_state(b"a", b"", b"active"), hdel(b"a", b"state"))
    case(f"{verb}-state-crlf", base(verb), wrong_state(b"a", b"act\r\nive", b"active"),
         hset(b"a", b"state", b"act\r\nive"))
for verb in ("EMQ.EXTEND", "EMQ.COMPLETE", "EMQ.DELAY", "EMQ.REQUEUE"):
    case(f"{verb}-dead", base(verb, a0=b"d", a1=b"2"), wrong_state(b"d", b"dead", b"active"))
    # state before token (FAIL alone is the other way round)
    case(f"{verb}-state-before-token", base(verb, a0=b"p", a1=b"5"), wrong_state(b"p", b"pending", b"active"))
case("EMQ.RESCHEDULE-active", base("EMQ.RESCHEDULE", a0=b"a"), wrong_state(b"a", b"active", b"scheduled"))
case("EMQ.RESCHEDULE-pending", base("EMQ.RESCHEDULE", a0=b"p"), wrong_state(b"p", b"pending", b"scheduled"))
case("EMQ.RESCHEDULE-dead", base("EMQ.RESCHEDULE", a0=b"d"), wrong_state(b"d", b"dead", b"scheduled"))
case("EMQ.REPROCESS-active", base("EMQ.REPROCESS", a0=b"a"), wrong_state(b"a", b"active", b"dead"))
case("EMQ.REPROCESS-scheduled", base("EMQ.REPROCESS", a0=b"s"), wrong_state(b"s", b"scheduled", b"dead"))
case("EMQ.CLAIM-head-not-pending", base("EMQ.CLAIM"), wrong_state(b"a", b"active", b"pending"),
     zadd(Q.pending, b"a", 0))
case("EMQ.CLAIM-head-no-state", base("EMQ.CLAIM"), wrong_state(b"p", b"", b"pending"), hdel(b"p", b"state"))

# stale tokens, compared as bytes
for verb in ("EMQ.EXTEND", "EMQ.COMPLETE", "EMQ.DELAY", "EMQ.FAIL", "EMQ.REQUEUE"):
    case(f"{verb}-token-07-vs-7", base(verb, a1=b"07"), stale_token(b"a", b"07"), hset(b"a", b"attempts", b"7"))
    case(f"{verb}-token-old", base(verb, a1=b"0"), stale_token(b"a", b"0"))
    case(f"{verb}-token-newer", base(verb, a1=b"2"), stale_token(b"a", b"2"))
    case(f"{verb}-token-space", base(verb, a1=b"1 "), stale_token(b"a", b"1 "))
    case(f"{verb}-token-empty", base(verb, a1=b""), stale_token(b"a", b""))
    case(f"{verb}-token-crlf", base(verb, a1=b"1\n"), stale_token(b"a", b"1\n"))
    case(f"{verb}-no-attempts-field", base(verb), stale_token(b"a", b"1"), hdel(b"a", b"attempts"))
# a dead row whose token matches is a repeated terminal failure only if it is flat
case("EMQ.FAIL-dead-lane-row", base("EMQ.FAIL", a0=b"d", a1=b"2"), lane_row(b"d"), hset(b"d", b"group", b"g"))
case("EMQ.FAIL-dead-flow-child", base("EMQ.FAIL", a0=b"d", a1=b"2"), flow_child(b"d"), hset(b"d", b"parent", b"x"))
# FAIL checks the token before the state
case("EMQ.FAIL-token-before-state-pending", base("EMQ.FAIL", a0=b"p", a1=b"5"), stale_token(b"p", b"5"))
case("EMQ.FAIL-token-before-state-dead", base("EMQ.FAIL", a0=b"d", a1=b"1"), stale_token(b"d", b"1"))

# PROMOTE (decision 6): a due row not scheduled refuses the whole call, no ghost removed
case("EMQ.PROMOTE-due-row-not-scheduled", base("EMQ.PROMOTE"), wrong_state(b"p", b"pending", b"scheduled"),
     zadd(Q.schedule, b"ghost", T0 - 9), zadd(Q.schedule, b"p", T0 - 5))
case("EMQ.PROMOTE-due-row-no-state", base("EMQ.PROMOTE"), wrong_state(b"s", b"", b"scheduled"),
     zadd(Q.schedule, b"ghost", T0 - 9), hdel(b"s", b"state"))

# STALLED.CHECK: a lane row due refuses the whole sweep; a due ghost stays
case("EMQ.STALLED.CHECK-lane-row", base("EMQ.STALLED.CHECK"), lane_row(b"a"),
     zadd(Q.active, b"ghost", T0 - 9), hset(b"a", b"group", b"g1"))
case("EMQ.STALLED.CHECK-lane-row-after-others", base("EMQ.STALLED.CHECK"), lane_row(b"L"),
     zadd(Q.active, b"ghost", T0 - 9),
     lambda r: r.hset(Q.row(b"L"), mapping={b"state": b"active", b"attempts": b"1", b"group": b"g"}),
     zadd(Q.active, b"L", T0))
case("EMQ.STALLED.CHECK-lane-before-state", base("EMQ.STALLED.CHECK"), lane_row(b"a"),
     zadd(Q.active, b"p", T0 - 9), hset(b"a", b"group", b"g1"))
# (decision 7) a due row that is not active
case("EMQ.STALLED.CHECK-due-row-not-active", base("EMQ.STALLED.CHECK"), wrong_state(b"p", b"pending", b"active"),
     zadd(Q.active, b"ghost", T0 - 9), zadd(Q.active, b"p", T0 - 5))


@pytest.fixture
def r(emq: redis.Redis) -> redis.Redis:
    return emq


@pytest.fixture
def w(emq_server: object, emq: redis.Redis) -> Iterator[Wire]:
    wire = Wire(emq_server.port)  # type: ignore[attr-defined]
    yield wire
    wire.close()


def run_id_of(r: redis.Redis) -> bytes:
    return r.info("server")["run_id"].encode()


def prepare(r: redis.Redis, now: int, *tweaks: Tweak) -> None:
    assert r.execute_command("TRAFIKEY.CLOCK", "FREEZE", now) == now
    world(r)
    for tweak in tweaks:
        tweak(r)


def test_cases_have_unique_names() -> None:
    names = [c.name for c in CASES]
    assert len(names) == len(set(names)), [n for n in names if names.count(n) > 1]


@pytest.mark.parametrize("verb", VERBS)
def test_baseline_is_accepted(r: redis.Redis, w: Wire, verb: str) -> None:
    """Each case changes one thing of a request that succeeds; the model
    agrees on the reply and the keyspace after it."""
    prepare(r, T0)
    model = Model.load(server_keyspace(r), T0, run_id_of(r))
    request = base(verb)
    reply = w.call(*request)
    assert not reply.startswith(b"-"), reply
    assert reply == resp2(model.call(*request))  # type: ignore[arg-type]
    assert server_keyspace(r) == model.dump()


@pytest.mark.parametrize("c", CASES, ids=lambda c: c.name)
def test_refusal(r: redis.Redis, w: Wire, c: Case) -> None:
    prepare(r, c.now, *c.tweaks)
    before, digest = server_keyspace(r), r.execute_command("DEBUG", "DIGEST")
    model = Model.load(before, c.now, run_id_of(r))
    assert model.call(*c.request) == Err(c.error), "the model disagrees with the hand-written case"  # type: ignore[arg-type]
    assert w.call(*c.request) == b"-" + c.error + b"\r\n"
    assert r.execute_command("DEBUG", "DIGEST") == digest
    after = server_keyspace(r)
    assert after.get(Q.seq) == before.get(Q.seq)  # P..seq (type and value) unchanged
    assert after == before


# ---------------------------------------------------------------- what is NOT refused


ACCEPTED: list[tuple[str, tuple[Arg, ...], tuple[Tweak, ...], int]] = [
    # the bounds themselves are in range
    ("lease-to-2^53", base("EMQ.CLAIM", a0=MAX_SCORE - T0), (), T0),
    ("extend-to-2^53", base("EMQ.EXTEND", a2=MAX_SCORE - T0), (), T0),
    ("delay-to-2^53", base("EMQ.DELAY", a2=1000), (), NEAR),
    ("backoff-to-2^53", base("EMQ.FAIL", a3=1000), (), NEAR),
    ("run_at-2^53", base("EMQ.RESCHEDULE", a1=MAX_SCORE), (), T0),
    ("max_attempts-int64-max", base("EMQ.FAIL", a2=INT64_MAX), (), T0),
    ("limit-int64-max", base("EMQ.PROMOTE", a0=INT64_MAX), (), T0),
    ("max_stalled-0", base("EMQ.STALLED.CHECK", a0=0), (), T0),
    ("seq-reaches-2^53", base("EMQ.REQUEUE"), (set_seq(MAX_SCORE - 1),), T0),
    # token "7" matches attempts "7"
    ("token-7", base("EMQ.COMPLETE", a1=b"7"), (hset(b"a", b"attempts", b"7"),), T0),
    # checks a verb does not make
    ("delay-flow-child", base("EMQ.DELAY"), (hset(b"a", b"parent", b"P1"),), T0),
    ("requeue-flow-child", base("EMQ.REQUEUE"), (hset(b"a", b"parent", b"P1"),), T0),
    ("extend-lane-row", base("EMQ.EXTEND"), (hset(b"a", b"group", b"g"),), T0),
    ("extends-lane-row", base("EMQ.EXTENDS"), (hset(b"a", b"group", b"g"),), T0),
    ("claim-lane-row", base("EMQ.CLAIM"), (hset(b"p", b"group", b"g"),), T0),
    ("promote-lane-row", base("EMQ.PROMOTE"), (hset(b"s", b"group", b"g"), hset(b"s", b"parent", b"x")), T0),
    ("schedule-explicit-bad-seq", base("EMQ.SCHEDULE"), (set_seq(b"x"),), T0),
    ("paused-of-any-type", base("EMQ.CLAIM"), (lambda r: r.zadd(Q.paused, {b"m": 1}),), T0),
    ("settles-while-paused", base("EMQ.COMPLETE"), (pause,), T0),
    ("stalled-uncounted-bad-stalled", base("EMQ.STALLED.CHECK"),
     (hset(b"a", b"stalled", b"x"), hset(b"a", b"lease_epoch", b"0" * 40)), T0),
    ("extends-ghost-and-stale-pairs", req("EMQ.EXTENDS", 10, b"g", b"1", b"a", b"07", b"p", b"0"), (), T0),
    ("fail-repeated-terminal", base("EMQ.FAIL", a0=b"d", a1=b"2"), (), T0),
    # the prefix itself is no key: whatever it holds does not matter
    ("prefix-holds-a-string", base("EMQ.ENQUEUE"), (lambda r: r.set(Q.prefix, b"x"),), T0),
    ("prefix-holds-a-hash", base("EMQ.FAIL"), (lambda r: r.hset(Q.prefix, b"f", b"v"),), T0),
]


@pytest.mark.parametrize(("request_", "tweaks", "now"), [a[1:] for a in ACCEPTED], ids=[a[0] for a in ACCEPTED])
def test_not_refused(r: redis.Redis, w: Wire, request_: tuple[Arg, ...], tweaks: tuple[Tweak, ...], now: int) -> None:
    """The other side of the bounds and of the checks a verb does not make."""
    prepare(r, now, *tweaks)
    model = Model.load(server_keyspace(r), now, run_id_of(r))
    expected = model.call(*request_)  # type: ignore[arg-type]
    assert not isinstance(expected, Err), expected
    assert w.call(*request_) == resp2(expected)
    assert server_keyspace(r) == model.dump()

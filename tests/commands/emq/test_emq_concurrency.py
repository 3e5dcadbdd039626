"""Many workers, one queue: nothing is lost, nothing is done twice.

Twenty worker threads, each with its own connection, claim 5,000 jobs from
one queue and settle them every way the job core allows: complete (some
after EXTEND or EXTENDS), fail with ``max_attempts`` 3 (some with a
backoff), give back with DELAY or REQUEUE, hold on past the lease and then
try to complete anyway, "stall" — drop the job and never send anything
again — or come back as a zombie after the lease to complete, fail or
extend with the old token while someone else may hold the job. A sweeper
connection loops EMQ.PROMOTE and EMQ.STALLED.CHECK (``max_stalled`` 2) the
whole time. Leases are 50-200 ms on the real clock, so sweeps and late
settles race for real.

Workers settle only with the token their CLAIM returned, and take the
refusals a race produces (EMQLEASE, EMQSTATE, EMQNOJOB) as normal outcomes;
any other error is recorded and fails the test. Nothing here asserts a
duration: the test runs until pending, active and schedule are all empty
(read atomically in one MULTI), with a generous liveness deadline.

Then it checks what the spec guarantees whatever the interleaving:

* every job was completed exactly once (successful COMPLETE replies are
  counted per id) or sits in dead — never both, never neither;
* no job was completed twice; no id is in two places and every row's
  ``state`` names the set that holds it — checked at the end and, while
  the workers run, in atomic snapshots (one MULTI over the four sets and
  every row); no row is left without a place (rows remain exactly for the
  dead jobs, state ``dead``);
* each dead row is explained by its counters (``failures`` = 3 or
  ``stalled`` = 3);
* every id's claim tokens are exactly 1..n (fencing tokens never repeat),
  and a completion carried the last one;
* conservation, from the replies alone: every entry into pending took one
  sequence number and was claimed once, and every claim left active by
  exactly one recorded move.

The chaos test goes further on the same queue: ten workers whose leases
(2-5 s) are expired by a thread that jumps the server's test clock
(``TRAFIKEY.CLOCK ADVANCE``: small steps often, now and then a step past
every lease), three sweepers running PROMOTE and STALLED.CHECK at once, and
holders that crash by dropping their connection (holding the lease, in the
middle of a COMPLETE frame, between MULTI and EXEC, or before reading
COMPLETE's reply), stall, complete twice, present stale tokens (``n+1``,
``n-1``, ``"0n"``), race a rival connection sending the same COMPLETE, or
come back as zombies. At the end every job was completed exactly once
(counting a COMPLETE whose reply was never read only where the lease
accounting proves it took effect) or is dead, every lease ended exactly
once, every command with a stale token was refused, and the server's
error counters match the refusals the clients saw.
"""

from __future__ import annotations

import random
import threading
import time
import zlib
from collections import Counter, defaultdict
from dataclasses import dataclass, field

import pytest
import redis
from helpers.servers import Proc

N_JOBS = 5000
N_WORKERS = 20
MAX_ATTEMPTS = 3
MAX_STALLED = 2
DRAIN_DEADLINE = 60.0  # seconds: liveness bound only

P = "emq:{conc}:"
PENDING, ACTIVE, SCHEDULE, DEAD, SEQ = P + "pending", P + "active", P + "schedule", P + "dead", P + "seq"
RACE_CODES = ("EMQLEASE", "EMQSTATE", "EMQNOJOB")


def job_ids() -> list[bytes]:
    return [b"j%04d" % i for i in range(N_JOBS)]


def payload_of(jid: bytes) -> bytes:
    return b"payload:" + jid


def doom(jid: bytes) -> str:
    """About 2% of jobs fail on every attempt, 2% stall on every attempt, so
    both roads to dead are always taken; the rest draw per attempt."""
    h = zlib.crc32(jid) % 50
    return "fail" if h == 0 else "stall" if h == 1 else ""


def action(jid: bytes, attempt: int) -> str:
    fate = doom(jid)
    if fate:
        return fate
    r = zlib.crc32(b"%s:%d" % (jid, attempt)) % 100
    for bound, what in (
        (50, "complete"), (58, "extend"), (62, "extends"), (70, "fail"), (77, "fail-backoff"),
        (82, "stall"), (85, "delay"), (88, "requeue"), (90, "slow"),
        (94, "zombie-complete"), (97, "zombie-fail"),
    ):
        if r < bound:
            return what
    return "zombie-extend"


@dataclass
class Stats:
    """What one thread saw; merged after the threads are joined."""

    claims: list[tuple[bytes, int]] = field(default_factory=list)
    bad_payloads: list[tuple[bytes, bytes]] = field(default_factory=list)
    completed: list[tuple[bytes, int]] = field(default_factory=list)
    fail_replies: list[tuple[bytes, bytes]] = field(default_factory=list)
    delays: int = 0
    requeues: int = 0
    races: Counter[str] = field(default_factory=Counter)
    unexpected: list[str] = field(default_factory=list)
    promoted: int = 0
    swept_requeued: list[bytes] = field(default_factory=list)
    swept_dead: list[bytes] = field(default_factory=list)
    sweeps: int = 0


def settle(r: redis.Redis, stats: Stats, *args: object) -> object | None:
    """Send a settling verb; a race refusal is a normal outcome (None)."""
    try:
        return r.execute_command(*args)
    except redis.ResponseError as e:
        code = str(e).split(" ", 1)[0]
        if code in RACE_CODES:
            stats.races[f"{args[0]} {code}"] += 1
        else:
            stats.unexpected.append(f"{args!r} -> {e}")
        return None


def act(r: redis.Redis, rng: random.Random, stats: Stats, what: str, jid: bytes, attempt: int) -> None:
    """Settle (or try to) one claimed job with the token its claim gave."""
    token = str(attempt)
    if what == "extend":
        settle(r, stats, "EMQ.EXTEND", 2, ACTIVE, P, jid, token, 500)
        what = "complete"
    elif what == "extends":
        reply = settle(r, stats, "EMQ.EXTENDS", 2, ACTIVE, P, 500, jid, token)
        if reply not in ([1], [0]):
            stats.unexpected.append(f"EXTENDS {jid!r} -> {reply!r}")
        what = "complete"
    if what == "complete":
        if settle(r, stats, "EMQ.COMPLETE", 2, ACTIVE, P, jid, token) == 1:
            stats.completed.append((jid, attempt))
    elif what in ("fail", "fail-backoff"):
        backoff = rng.randint(5, 30) if what == "fail-backoff" else 0
        reply = settle(
            r, stats, "EMQ.FAIL", 5, ACTIVE, PENDING, SCHEDULE, DEAD, P, jid, token, MAX_ATTEMPTS, backoff, "boom",
        )
        if reply is not None:
            stats.fail_replies.append((jid, reply))  # type: ignore[arg-type]
    elif what == "delay":
        if settle(r, stats, "EMQ.DELAY", 3, ACTIVE, SCHEDULE, P, jid, token, rng.randint(5, 20)) == 1:
            stats.delays += 1
    elif what == "requeue":
        if settle(r, stats, "EMQ.REQUEUE", 3, ACTIVE, PENDING, P, jid, token) == 1:
            stats.requeues += 1
    else:
        stats.unexpected.append(f"unknown action {what}")


def worker(port: int, seed: int, stop: threading.Event, stats: Stats) -> None:
    """Claim and settle until told to stop. A "zombie" drops its job like a
    stall but comes back after its lease (plus up to 150 ms) to complete,
    fail or extend it with its old token, while the worker goes on."""
    r = redis.Redis(port=port, socket_timeout=20)
    rng = random.Random(seed)
    zombies: list[tuple[float, str, bytes, int]] = []
    try:
        while not stop.is_set():
            now = time.monotonic()
            due = [z for z in zombies if z[0] <= now]
            if due:
                zombies = [z for z in zombies if z[0] > now]
                for _, what, jid, attempt in due:
                    act(r, rng, stats, what, jid, attempt)
            lease = rng.randint(50, 200)
            try:
                got = r.execute_command("EMQ.CLAIM", 3, PENDING, ACTIVE, P, lease)
            except redis.ResponseError as e:  # pending holds only pending rows
                stats.unexpected.append(f"CLAIM -> {e}")
                continue
            if not got:
                time.sleep(0.01)
                continue
            jid, payload, attempt = got
            stats.claims.append((jid, attempt))
            if payload != payload_of(jid):
                stats.bad_payloads.append((jid, payload))
            what = action(jid, attempt)
            if what == "stall":
                continue  # never heard from again
            if what.startswith("zombie-"):
                back = time.monotonic() + lease / 1000 + rng.uniform(0, 0.15)
                zombies.append((back, what.removeprefix("zombie-"), jid, attempt))
                continue
            if what == "slow":
                time.sleep(lease / 1000 + 0.02)
                what = "complete"
            act(r, rng, stats, what, jid, attempt)
    except Exception as e:  # surfaced by the main thread
        stats.unexpected.append(f"worker {seed} crashed: {e!r}")
    finally:
        r.close()


def sweeper(port: int, stop: threading.Event, stats: Stats) -> None:
    r = redis.Redis(port=port, socket_timeout=20)
    try:
        while not stop.is_set():
            try:
                stats.promoted += r.execute_command("EMQ.PROMOTE", 3, SCHEDULE, PENDING, P, 1000)
                requeued, dead = r.execute_command(
                    "EMQ.STALLED.CHECK", 4, ACTIVE, PENDING, DEAD, P, MAX_STALLED, 1000
                )
            except redis.ResponseError as e:
                stats.unexpected.append(f"sweeper -> {e}")
                continue
            stats.swept_requeued.extend(requeued)
            stats.swept_dead.extend(dead)
            stats.sweeps += 1
            time.sleep(0.005)
    except Exception as e:
        stats.unexpected.append(f"sweeper crashed: {e!r}")
    finally:
        r.close()


STATE_OF_SET = {PENDING: b"pending", ACTIVE: b"active", SCHEDULE: b"scheduled", DEAD: b"dead"}


def snapshot_violations(r: redis.Redis, ids: list[bytes]) -> list[str]:
    """One atomic MULTI reads the four sets and every row's state, while the
    workers run: each id is in at most one set, its row's ``state`` names
    that set, and an id in no set has no row (it was completed)."""
    tx = r.pipeline(transaction=True)
    for key in STATE_OF_SET:
        tx.zrange(key, 0, -1)
    for jid in ids:
        tx.hget((P + "job:").encode() + jid, "state")
    replies = tx.execute()
    members = dict(zip(STATE_OF_SET, replies[:4], strict=True))
    states = dict(zip(ids, replies[4:], strict=True))
    where: dict[bytes, list[str]] = defaultdict(list)
    for key, ms in members.items():
        for m in ms:
            where[m].append(key)
    out: list[str] = []
    for jid in set(where) - set(ids):
        out.append(f"unknown id {jid!r} in {where[jid]}")
    for jid in ids:
        places = where.get(jid, [])
        if len(places) > 1:
            out.append(f"{jid!r} in two places: {places}")
        elif places and states[jid] != STATE_OF_SET[places[0]]:
            out.append(f"{jid!r} in {places[0]} with state {states[jid]!r}")
        elif not places and states[jid] is not None:
            out.append(f"{jid!r} has a row (state {states[jid]!r}) but no place")
    return out


def test_snapshot_check_sees_violations(emq: redis.Redis) -> None:
    """The mid-flight checker is not vacuous: it reports a row whose state
    disagrees with its set, an id in two sets, and a row with no place."""
    ids = [b"a", b"b", b"c", b"d"]
    emq.hset(P + "job:a", "state", "pending")
    emq.zadd(ACTIVE, {"a": 1})
    emq.hset(P + "job:b", "state", "pending")
    emq.zadd(PENDING, {"b": 1})
    emq.zadd(DEAD, {"b": 1})
    emq.hset(P + "job:c", "state", "dead")
    emq.hset(P + "job:d", "state", "pending")
    emq.zadd(PENDING, {"d": 2})
    found = snapshot_violations(emq, ids)
    assert len(found) == 3, found
    assert any("b'a' in" in v and "state b'pending'" in v for v in found)
    assert any("b'b' in two places" in v for v in found)
    assert any("b'c' has a row" in v for v in found)


def test_twenty_workers_five_thousand_jobs(emq: redis.Redis, emq_server: Proc) -> None:
    ids = job_ids()
    pipe = emq.pipeline(transaction=False)
    for jid in ids:
        pipe.execute_command("EMQ.ENQUEUE", 2, PENDING, P, jid, payload_of(jid))
    assert pipe.execute() == ids
    assert emq.zcard(PENDING) == N_JOBS

    stop = threading.Event()
    worker_stats = [Stats() for _ in range(N_WORKERS)]
    sweep_stats = Stats()
    threads = [
        threading.Thread(target=worker, args=(emq_server.port, i, stop, worker_stats[i]), daemon=True)
        for i in range(N_WORKERS)
    ]
    threads.append(threading.Thread(target=sweeper, args=(emq_server.port, stop, sweep_stats), daemon=True))
    for t in threads:
        t.start()

    end = time.monotonic() + DRAIN_DEADLINE
    counts: list[int] = []
    violations: list[str] = []
    rounds = snapshots = 0
    try:
        while True:
            rounds += 1
            if rounds % 8 == 1:  # about twice a second, mid-flight
                snapshots += 1
                violations += snapshot_violations(emq, ids)
                if violations:
                    break
            tx = emq.pipeline(transaction=True)
            tx.zcard(PENDING).zcard(ACTIVE).zcard(SCHEDULE)
            counts = tx.execute()
            if counts == [0, 0, 0]:
                break
            if any(s.unexpected for s in [*worker_stats, sweep_stats]) or time.monotonic() > end:
                break
            time.sleep(0.05)
    finally:
        stop.set()
        for t in threads:
            t.join(30)
    assert not any(t.is_alive() for t in threads), "a worker did not stop"

    stats = Stats()
    for s in [*worker_stats, sweep_stats]:
        stats.claims += s.claims
        stats.bad_payloads += s.bad_payloads
        stats.completed += s.completed
        stats.fail_replies += s.fail_replies
        stats.delays += s.delays
        stats.requeues += s.requeues
        stats.races.update(s.races)
        stats.unexpected += s.unexpected
        stats.promoted += s.promoted
        stats.swept_requeued += s.swept_requeued
        stats.swept_dead += s.swept_dead
        stats.sweeps += s.sweeps
    assert stats.unexpected == [], stats.unexpected[:20]
    assert violations == [], violations[:20]
    assert snapshots >= 1
    assert snapshot_violations(emq, ids) == []
    assert counts == [0, 0, 0], f"not drained after {DRAIN_DEADLINE}s: pending/active/schedule = {counts}"
    assert stats.bad_payloads == []

    # -- every job completed exactly once, or dead ------------------------------------
    all_ids = set(ids)
    completes = Counter(jid for jid, _ in stats.completed)
    twice = {jid: n for jid, n in completes.items() if n > 1}
    assert twice == {}, f"completed more than once: {twice}"
    completed = set(completes)
    dead = set(emq.zrange(DEAD, 0, -1))
    assert completed & dead == set(), "completed and dead"
    assert completed | dead == all_ids, f"lost: {sorted(all_ids - completed - dead)[:20]}"
    assert completed <= all_ids and dead <= all_ids

    # -- no row without a place, no stray keys -----------------------------------------
    rows = {k[len(P + "job:") :] for k in emq.scan_iter(match=P + "job:*", count=1000)}
    assert rows == dead, (
        f"rows without a place: {sorted(rows - dead)[:20]}; dead without a row: {sorted(dead - rows)[:20]}"
    )
    assert set(emq.keys("*")) == {DEAD.encode(), SEQ.encode()} | {(P + "job:").encode() + jid for jid in dead}

    # -- tokens: 1..n per id, completion with the last one -----------------------------
    tokens: dict[bytes, list[int]] = defaultdict(list)
    for jid, a in stats.claims:
        tokens[jid].append(a)
    assert set(tokens) == all_ids, "a job was never claimed"
    for jid, seen in tokens.items():
        assert sorted(seen) == list(range(1, len(seen) + 1)), (jid, sorted(seen))
    for jid, a in stats.completed:
        assert a == len(tokens[jid]), (jid, a, sorted(tokens[jid]))

    # -- each dead row explained by its counters ---------------------------------------
    pipe = emq.pipeline(transaction=False)
    for jid in sorted(dead):
        pipe.hgetall((P + "job:").encode() + jid)
    for jid, row in zip(sorted(dead), pipe.execute(), strict=True):
        assert row[b"state"] == b"dead", (jid, row)
        assert row[b"payload"] == payload_of(jid), (jid, row)
        assert int(row[b"attempts"]) == len(tokens[jid]), (jid, row)
        failures = int(row.get(b"failures", b"0"))
        stalled = int(row.get(b"stalled", b"0"))
        assert failures <= MAX_ATTEMPTS and stalled <= MAX_STALLED + 1, (jid, row)
        assert failures == MAX_ATTEMPTS or stalled == MAX_STALLED + 1, (jid, row)
        if failures:
            assert row[b"error"] == b"boom", (jid, row)

    # -- who reported the deaths -----------------------------------------------------
    fail_counts = Counter(reply for _, reply in stats.fail_replies)
    assert set(fail_counts) <= {b"dead", b"scheduled", b"pending"}, fail_counts
    fail_dead_ids = [jid for jid, reply in stats.fail_replies if reply == b"dead"]
    swept_dead = set(stats.swept_dead)
    assert len(swept_dead) == len(stats.swept_dead), "a sweep reported the same death twice"
    assert swept_dead | set(fail_dead_ids) == dead
    # A FAIL that finds the row already dead with its token still matching
    # answers "dead" and writes nothing (a repeated terminal failure); only a
    # sweep can have killed it first, since each claim sends one FAIL at most.
    repeats = sum(1 for jid in fail_dead_ids if jid in swept_dead)

    # -- conservation, from the replies alone -----------------------------------------
    entries_into_pending = (
        N_JOBS + fail_counts[b"pending"] + stats.promoted + len(stats.swept_requeued) + stats.requeues
    )
    assert len(stats.claims) == entries_into_pending
    assert emq.get(SEQ) == str(entries_into_pending).encode()
    assert stats.promoted == fail_counts[b"scheduled"] + stats.delays
    exits_from_active = (
        len(stats.completed) + fail_counts[b"pending"] + fail_counts[b"scheduled"] + fail_counts[b"dead"] - repeats
        + stats.delays + stats.requeues + len(stats.swept_requeued) + len(stats.swept_dead)
    )
    assert len(stats.claims) == exits_from_active

    # -- the run exercised what it meant to -------------------------------------------
    assert stats.swept_requeued and stats.swept_dead, "no stall was recovered"
    assert fail_counts[b"pending"] and fail_counts[b"scheduled"] and fail_counts[b"dead"] - repeats > 0
    assert stats.delays and stats.requeues and stats.promoted


# -- chaos: crashes, doubles, stale tokens, racing rivals, many sweepers, a jumping clock --

CHAOS_JOBS = 2000
CHAOS_WORKERS = 10
CHAOS_SWEEPERS = 3
CHAOS_RIVALS = 2
SETTLE_REPLIES = {"EMQ.COMPLETE": 1, "EMQ.DELAY": 1, "EMQ.REQUEUE": 1}


def chaos_action(jid: bytes, attempt: int) -> str:
    """What the holder of (jid, attempt) does; about 2% of jobs fail every
    attempt and 2% are dropped every attempt, so both roads to dead are
    taken; the rest draw per attempt."""
    fate = doom(jid)
    if fate:
        return {"fail": "stale-fail", "stall": "drop"}[fate]
    r = zlib.crc32(b"chaos:%s:%d" % (jid, attempt)) % 100
    for bound, what in (
        (30, "complete-twice"), (38, "race"), (46, "stale-fail"), (52, "extend-complete"), (58, "drop"),
        (62, "drop-half-frame"), (66, "drop-in-multi"), (70, "drop-after-send"), (76, "slow"),
        (80, "delay"), (84, "requeue"), (88, "fail-backoff"), (94, "zombie-complete"),
    ):
        if r < bound:
            return what
    return "zombie-fail"


@dataclass
class Chaos:
    """What one thread saw; merged after the threads are joined."""

    claims: list[tuple[bytes, int]] = field(default_factory=list)
    # Lease endings a reply proved: (id, token, verb, reply).
    ends: list[tuple[bytes, int, str, bytes | int]] = field(default_factory=list)
    # COMPLETE sent on a connection dropped before its reply was read.
    unknown: list[tuple[bytes, int]] = field(default_factory=list)
    # Commands that must never succeed: (what, reply or refusal code).
    stale: list[tuple[str, str]] = field(default_factory=list)
    refusals: Counter[str] = field(default_factory=Counter)
    extends: int = 0
    drops: int = 0
    promoted: int = 0
    swept_requeued: list[bytes] = field(default_factory=list)
    swept_dead: list[bytes] = field(default_factory=list)
    sweeps: int = 0
    jumps: int = 0
    unexpected: list[str] = field(default_factory=list)

    def send(self, r: redis.Redis, *args: object) -> object | None:
        """One verb; a race refusal is an outcome (None), counted by code."""
        try:
            return r.execute_command(*args)
        except redis.ResponseError as e:
            code = str(e).split(" ", 1)[0]
            if code in RACE_CODES:
                self.refusals[code] += 1
            else:
                self.unexpected.append(f"{args!r} -> {e}")
            return None

    def never(self, r: redis.Redis, what: str, *args: object) -> None:
        """A command whose token is stale by construction: it must be refused."""
        try:
            got = r.execute_command(*args)
        except redis.ResponseError as e:
            code = str(e).split(" ", 1)[0]
            if code in RACE_CODES:
                self.refusals[code] += 1
            self.stale.append((what, code))
            return
        self.stale.append((what, f"ACCEPTED {got!r}"))

    def settle(self, r: redis.Redis, jid: bytes, token: int, *args: object) -> bool:
        """A settling verb with the holder's token; a success ends the lease.
        False when it was refused (a clock jump let a sweeper take the lease)."""
        verb = str(args[0])
        got = self.send(r, *args)
        if got is None:
            return False
        if verb in SETTLE_REPLIES and got != SETTLE_REPLIES[verb]:
            self.unexpected.append(f"{verb} {jid!r} -> {got!r}")
        self.ends.append((jid, token, verb, got))  # type: ignore[arg-type]
        return True


def complete_args(jid: bytes, token: int | bytes) -> tuple[object, ...]:
    return ("EMQ.COMPLETE", 2, ACTIVE, P, jid, token)


def fail_args(jid: bytes, token: int | bytes, backoff: int) -> tuple[object, ...]:
    return ("EMQ.FAIL", 5, ACTIVE, PENDING, SCHEDULE, DEAD, P, jid, token, MAX_ATTEMPTS, backoff, "boom")


def chaos_worker(port: int, seed: int, stop: threading.Event, rivals: list[tuple[bytes, int]],
                 rival_cv: threading.Condition, st: Chaos) -> None:
    """Claim and misbehave until told to stop. Leases are long on the real
    clock (2-5 s); what expires them is the clock thread's jumps."""
    r = redis.Redis(port=port, socket_timeout=20, single_connection_client=True)
    rng = random.Random(seed)
    zombies: list[tuple[float, str, bytes, int]] = []
    try:
        while not stop.is_set():
            now = time.monotonic()
            for z in [z for z in zombies if z[0] <= now]:
                zombies.remove(z)
                _, what, zid, zt = z
                args = complete_args(zid, zt) if what == "complete" else fail_args(zid, zt, 0)
                st.settle(r, zid, zt, *args)
            try:
                got = r.execute_command("EMQ.CLAIM", 3, PENDING, ACTIVE, P, rng.randint(2000, 5000))
            except redis.ResponseError as e:
                st.unexpected.append(f"CLAIM -> {e}")
                continue
            if not got:
                time.sleep(0.005)
                continue
            jid, payload, token = got
            st.claims.append((jid, token))
            if payload != payload_of(jid):
                st.unexpected.append(f"payload of {jid!r}: {payload!r}")
            what = chaos_action(jid, token)
            conn = r.connection
            assert conn is not None
            if what == "complete-twice":
                # Only after a COMPLETE that took effect is the row known to be
                # gone; if a sweeper took the lease first, the job lives on
                # (EMQSTATE/EMQLEASE), and the repeat must still be refused.
                done = st.settle(r, jid, token, *complete_args(jid, token))
                st.never(r, "second COMPLETE" if done else "COMPLETE repeated after a refused one",
                         *complete_args(jid, token))
            elif what == "race":  # a rival sends the same COMPLETE at the same time
                with rival_cv:
                    rivals.append((jid, token))
                    rival_cv.notify()
                st.settle(r, jid, token, *complete_args(jid, token))
            elif what == "stale-fail":  # tokens that are not this lease's, then the real FAIL
                st.never(r, "FAIL with token+1", *fail_args(jid, token + 1, 0))
                st.never(r, "FAIL with token 0-padded", *fail_args(jid, b"0%d" % token, 0))
                if token > 1:
                    st.never(r, "FAIL with token-1", *fail_args(jid, token - 1, 0))
                    st.never(r, "EXTEND with token-1", "EMQ.EXTEND", 2, ACTIVE, P, jid, token - 1, 5000)
                st.settle(r, jid, token, *fail_args(jid, token, 0))
            elif what == "extend-complete":
                if st.send(r, "EMQ.EXTEND", 2, ACTIVE, P, jid, token, 5000) == 1:
                    st.extends += 1
                st.settle(r, jid, token, *complete_args(jid, token))
            elif what == "drop":  # the worker process dies holding the lease
                conn.disconnect()
                st.drops += 1
            elif what == "drop-half-frame":  # dies in the middle of sending COMPLETE
                frame = b"".join(conn.pack_command(*complete_args(jid, token)))
                conn.send_packed_command([frame[: len(frame) // 2]], check_health=False)
                conn.disconnect()
                st.drops += 1
            elif what == "drop-in-multi":  # dies between MULTI and EXEC
                conn.send_packed_command(conn.pack_commands([("MULTI",), complete_args(jid, token)]))
                conn.disconnect()
                st.drops += 1
            elif what == "drop-after-send":  # dies before reading COMPLETE's reply
                conn.send_packed_command(conn.pack_command(*complete_args(jid, token)))
                conn.disconnect()
                st.unknown.append((jid, token))
                st.drops += 1
            elif what == "slow":  # stalls while the clock may jump, then completes
                time.sleep(rng.uniform(0.02, 0.1))
                st.settle(r, jid, token, *complete_args(jid, token))
            elif what == "delay":
                st.settle(r, jid, token, "EMQ.DELAY", 3, ACTIVE, SCHEDULE, P, jid, token, 50)
            elif what == "requeue":
                st.settle(r, jid, token, "EMQ.REQUEUE", 3, ACTIVE, PENDING, P, jid, token)
            elif what == "fail-backoff":
                st.settle(r, jid, token, *fail_args(jid, token, rng.randint(10, 100)))
            elif what.startswith("zombie-"):  # vanishes, comes back later with its token
                zombies.append((time.monotonic() + rng.uniform(0.05, 0.3), what[7:], jid, token))
            else:
                st.unexpected.append(f"unknown action {what}")
    except Exception as e:
        st.unexpected.append(f"worker {seed} crashed: {e!r}")
    finally:
        r.close()


def chaos_rival(port: int, stop: threading.Event, rivals: list[tuple[bytes, int]],
                rival_cv: threading.Condition, st: Chaos) -> None:
    r = redis.Redis(port=port, socket_timeout=20)
    try:
        while not stop.is_set():
            with rival_cv:
                if not rivals:
                    rival_cv.wait(0.05)
                    continue
                jid, token = rivals.pop()
            st.settle(r, jid, token, *complete_args(jid, token))
    except Exception as e:
        st.unexpected.append(f"rival crashed: {e!r}")
    finally:
        r.close()


def chaos_clock(port: int, seed: int, stop: threading.Event, st: Chaos) -> None:
    """Moves the server's clock forward in jumps: small ones often, and now
    and then one past every lease, so whole batches expire at once."""
    r = redis.Redis(port=port, socket_timeout=20)
    rng = random.Random(seed)
    try:
        while not stop.is_set():
            step = 6000 if rng.random() < 0.03 else rng.randint(0, 150)
            r.execute_command("TRAFIKEY.CLOCK", "ADVANCE", step)
            st.jumps += 1
            time.sleep(0.02)
    except Exception as e:
        st.unexpected.append(f"clock crashed: {e!r}")
    finally:
        r.close()


def chaos_sweeper(port: int, stop: threading.Event, st: Chaos) -> None:
    r = redis.Redis(port=port, socket_timeout=20)
    try:
        while not stop.is_set():
            try:
                st.promoted += r.execute_command("EMQ.PROMOTE", 3, SCHEDULE, PENDING, P, 100)
                requeued, dead = r.execute_command("EMQ.STALLED.CHECK", 4, ACTIVE, PENDING, DEAD, P, MAX_STALLED, 100)
            except redis.ResponseError as e:
                st.unexpected.append(f"sweeper -> {e}")
                continue
            st.swept_requeued.extend(requeued)
            st.swept_dead.extend(dead)
            st.sweeps += 1
            time.sleep(0.005)
    except Exception as e:
        st.unexpected.append(f"sweeper crashed: {e!r}")
    finally:
        r.close()


def merge(parts: list[Chaos]) -> Chaos:
    out = Chaos()
    for s in parts:
        for name in ("claims", "ends", "unknown", "stale", "swept_requeued", "swept_dead", "unexpected"):
            getattr(out, name).extend(getattr(s, name))
        out.refusals.update(s.refusals)
        for name in ("extends", "drops", "promoted", "sweeps", "jumps"):
            setattr(out, name, getattr(out, name) + getattr(s, name))
    return out


@pytest.mark.slow
def test_chaos_crashes_doubles_stale_tokens_sweepers_and_clock_jumps(emq: redis.Redis, emq_server: Proc) -> None:
    ids = [b"c%04d" % i for i in range(CHAOS_JOBS)]
    pipe = emq.pipeline(transaction=False)
    for jid in ids:
        pipe.execute_command("EMQ.ENQUEUE", 2, PENDING, P, jid, payload_of(jid))
    assert pipe.execute() == ids
    emq.config_resetstat()

    stop = threading.Event()
    rivals: list[tuple[bytes, int]] = []
    rival_cv = threading.Condition()
    parts = [Chaos() for _ in range(CHAOS_WORKERS + CHAOS_RIVALS + CHAOS_SWEEPERS + 1)]
    port = emq_server.port
    threads = [threading.Thread(target=chaos_worker, args=(port, i, stop, rivals, rival_cv, parts[i]))
               for i in range(CHAOS_WORKERS)]
    k = CHAOS_WORKERS
    threads += [threading.Thread(target=chaos_rival, args=(port, stop, rivals, rival_cv, parts[k + i]))
                for i in range(CHAOS_RIVALS)]
    k += CHAOS_RIVALS
    threads += [threading.Thread(target=chaos_sweeper, args=(port, stop, parts[k + i]))
                for i in range(CHAOS_SWEEPERS)]
    threads.append(threading.Thread(target=chaos_clock, args=(port, 7, stop, parts[-1])))
    for t in threads:
        t.daemon = True
        t.start()

    end = time.monotonic() + DRAIN_DEADLINE
    counts: list[int] = []
    violations: list[str] = []
    rounds = 0
    try:
        while True:
            rounds += 1
            if rounds % 8 == 1:
                violations += snapshot_violations(emq, ids)
                if violations:
                    break
            tx = emq.pipeline(transaction=True)
            tx.zcard(PENDING).zcard(ACTIVE).zcard(SCHEDULE)
            counts = tx.execute()
            if counts == [0, 0, 0] or any(s.unexpected for s in parts) or time.monotonic() > end:
                break
            time.sleep(0.05)
    finally:
        stop.set()
        for t in threads:
            t.join(30)
    assert not any(t.is_alive() for t in threads), "a thread did not stop"
    st = merge(parts)
    assert st.unexpected == [], st.unexpected[:20]
    assert emq_server.proc.poll() is None and "Traceback" not in emq_server.output()
    assert violations == [], violations[:20]
    assert counts == [0, 0, 0], f"not drained after {DRAIN_DEADLINE}s: pending/active/schedule = {counts}"
    assert snapshot_violations(emq, ids) == []

    # -- every stale holder was refused ------------------------------------------------
    accepted = [s for s in st.stale if s[1].startswith("ACCEPTED")]
    assert accepted == [], accepted[:20]
    stale_codes = Counter(code for what, code in st.stale)
    assert set(stale_codes) <= set(RACE_CODES), stale_codes
    second = Counter(code for what, code in st.stale if what == "second COMPLETE")
    assert set(second) == {"EMQNOJOB"}, second  # ids are never reused: the row is gone
    assert stale_codes["EMQLEASE"] > 0

    # -- fencing tokens: 1..n per id ---------------------------------------------------
    all_ids = set(ids)
    tokens: dict[bytes, list[int]] = defaultdict(list)
    for jid, a in st.claims:
        tokens[jid].append(a)
    assert set(tokens) == all_ids, "a job was never claimed"
    for jid, seen in tokens.items():
        assert sorted(seen) == list(range(1, len(seen) + 1)), (jid, sorted(seen))

    # -- each lease ended exactly once -------------------------------------------------
    # A lease ends by one successful settle of its holder, or by one sweep. A
    # FAIL answered "dead" for a row a sweep already killed is a repeated
    # terminal failure (it wrote nothing) and ends nothing.
    swept_dead = set(st.swept_dead)
    assert len(swept_dead) == len(st.swept_dead), "a sweep reported the same death twice"
    by_token: Counter[tuple[bytes, int]] = Counter()
    ended: Counter[bytes] = Counter()
    completed: Counter[bytes] = Counter()
    fail_replies: Counter[bytes] = Counter()
    for jid, token, verb, reply in st.ends:
        if verb == "EMQ.FAIL":
            fail_replies[reply] += 1  # type: ignore[index]
            if reply == b"dead" and jid in swept_dead:
                continue
        by_token[(jid, token)] += 1
        ended[jid] += 1
        if verb == "EMQ.COMPLETE":
            completed[jid] += 1
    assert max(by_token.values()) == 1, [k for k, n in by_token.items() if n > 1][:20]
    assert max(completed.values()) == 1, "a job was completed twice"
    for jid in st.swept_requeued + st.swept_dead:
        ended[jid] += 1
    unknown = Counter(jid for jid, _ in st.unknown)
    dead = set(emq.zrange(DEAD, 0, -1))
    rows = {k[len(P + "job:"):] for k in emq.scan_iter(match=P + "job:*", count=1000)}
    assert rows == dead
    silent = set()  # completed by a COMPLETE whose reply was never read
    for jid in all_ids:
        gap = len(tokens[jid]) - ended[jid]
        assert 0 <= gap <= unknown[jid], (jid, len(tokens[jid]), ended[jid], unknown[jid])
        if gap:
            silent.add(jid)

    # -- every job completed exactly once, or dead -------------------------------------
    done = set(completed) | silent
    assert set(completed) & silent == set()
    assert done & dead == set(), "completed and dead"
    assert done | dead == all_ids, f"lost: {sorted(all_ids - done - dead)[:20]}"
    for jid in dead:
        row = emq.hgetall((P + "job:").encode() + jid)
        assert row[b"state"] == b"dead" and int(row[b"attempts"]) == len(tokens[jid]), (jid, row)
        failures, stalled = int(row.get(b"failures", b"0")), int(row.get(b"stalled", b"0"))
        assert failures == MAX_ATTEMPTS or stalled == MAX_STALLED + 1, (jid, row)

    # -- counters consistent -----------------------------------------------------------
    requeues = sum(1 for e in st.ends if e[2] == "EMQ.REQUEUE")
    delays = sum(1 for e in st.ends if e[2] == "EMQ.DELAY")
    entries_into_pending = (
        CHAOS_JOBS + fail_replies[b"pending"] + st.promoted + len(st.swept_requeued) + requeues
    )
    assert len(st.claims) == entries_into_pending
    assert emq.get(SEQ) == str(entries_into_pending).encode()
    assert st.promoted == fail_replies[b"scheduled"] + delays
    # The server's error counters saw every refusal the clients saw, and no
    # more than those plus the replies nobody read.
    errors = {k.removeprefix("errorstat_"): v["count"] for k, v in emq.info("errorstats").items()}
    for code in RACE_CODES:
        assert st.refusals[code] <= errors.get(code, 0) <= st.refusals[code] + len(st.unknown), code
    # Besides those, only ERR: redis-py's connection handshake sends a
    # command Valkey 9.1 does not know either (ERR there too), once per connection.
    assert set(errors) <= {*RACE_CODES, "ERR"}, errors

    # -- the run exercised what it meant to --------------------------------------------
    assert st.jumps and st.sweeps and st.drops and st.extends and silent
    assert st.swept_requeued and st.swept_dead and fail_replies[b"dead"]
    assert requeues and delays and st.promoted

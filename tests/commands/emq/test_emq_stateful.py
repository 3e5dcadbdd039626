"""Random sequences of all thirteen EMQ verbs against the server and the model.

A hypothesis state machine drives two queues (one hash tag each) over a small
pool of ids, so `*` ids collide with explicit ones, ids come back after
completion, tokens go stale, rows turn into ghosts or lane rows under the
verbs' feet, the queue is paused and the frozen test clock moves on. Every
reply (value or exact error bytes) must equal the model's (emq_model.py,
written from the spec alone), and after every step the server's whole
keyspace must equal the model's and keep the spec's invariants.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import redis
from helpers.emq_model import Model, Queue, Reply, resp2, server_keyspace
from helpers.resp_wire import Wire
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule, run_state_machine_as_test

T0 = 1_700_000_000_000
QUEUES = (Queue(b"emq:{a}:"), Queue(b"emq:{b}:"))
PLACE_OF_STATE = {b"pending": "pending", b"active": "active", b"scheduled": "schedule", b"dead": "dead"}
COUNTERS = (b"attempts", b"failures", b"stalled")
OTHER_RUN = b"e" * 40

queues = st.sampled_from(QUEUES)
POOL = [b"1", b"2", b"3", b"x", b"y"]
jobs = st.sampled_from(POOL)
new_jobs = st.one_of(jobs, st.just(b"*"))
# "held" stands for the row's current attempts (the valid token)
tokens = st.sampled_from(["held"] * 6 + [b"0", b"1", b"2", b"01", b"x"])
steer = st.sampled_from([True, True, True, False])
PLACES = ("pending", "active", "schedule", "dead")


def targets(main: str) -> st.SearchStrategy[str | None]:
    """Where a call aims: mostly at an id in the place the verb wants (so
    it can succeed), sometimes at one in another place (a wrong state), or
    at any id of the pool (None: often a ghost or no row at all)."""
    return st.sampled_from([main] * 4 + [p for p in PLACES if p != main] + [None])

payloads = st.sampled_from([b"p", b"", b"\x00\r\nz"])
leases = st.sampled_from([1, 100, 1000, 5000, 1000, 100, 0, b"x"])
delays = st.sampled_from([0, 100, 2000, 100, -1])
run_at_offsets = st.sampled_from([-1000, 0, 500, 3000, None])  # None: a negative run_at_ms
max_attempts = st.sampled_from([1, 2, 3, 2, 3, 0])
backoffs = st.sampled_from([0, 0, 300, 300, -1])
reasons = st.sampled_from([None, b"", b"boom"])
limits = st.sampled_from([None, 1, 2, 1000, 0])
max_stalleds = st.sampled_from([0, 1, 2, -1])
advances = st.sampled_from([1, 100, 500, 1000, 3000])
waits = st.sampled_from([0, 1000, 6000])  # a sweep often comes after some time
# a lease's lease_epoch before a verb: as it is, another run's (the lease
# crossed a restart), or none (a scripted claim)
stamps = st.sampled_from(["keep", OTHER_RUN, None])
verbs = st.sampled_from([
    "EMQ.ENQUEUE", "EMQ.SCHEDULE", "EMQ.CLAIM", "EMQ.EXTEND", "EMQ.EXTENDS", "EMQ.COMPLETE", "EMQ.DELAY",
    "EMQ.FAIL", "EMQ.PROMOTE", "EMQ.RESCHEDULE", "EMQ.REPROCESS", "EMQ.REQUEUE", "EMQ.STALLED.CHECK",
])
SOME_ARGV = [b"1", b"1", b"1", b"0", b"r"]


class EmqMachine(RuleBasedStateMachine):
    """Each rule sends one request (or a raw write) to the server and the
    model alike; the invariant then compares everything."""

    def __init__(self, r: redis.Redis, w: Wire) -> None:
        super().__init__()
        self.r, self.w = r, w
        r.flushall()
        assert r.execute_command("TRAFIKEY.CLOCK", "FREEZE", T0) == T0
        self.model = Model(T0, r.info("server")["run_id"].encode())
        # ids whose row a raw write deleted or created: the verbs' own
        # invariants (one set, state = set) no longer hold for them
        self.tainted: set[tuple[bytes, bytes]] = set()
        self.seen_counters: dict[tuple[bytes, bytes], dict[bytes, int]] = {}
        self.ghosts: set[tuple[bytes, bytes]] = set()
        self.may_create_rows = False

    # ------------------------------------------------------------ helpers

    def send(self, q: Queue, verb: str, *argv: bytes | int | None) -> Reply:
        request = q.request(verb, *(a for a in argv if a is not None))
        return self.send_raw(request)

    def send_raw(self, request: tuple[bytes | str | int, ...]) -> Reply:
        """Send to the server and the model; the reply bytes must be equal."""
        reply = self.model.call(*request)  # type: ignore[arg-type]
        actual = self.w.call(*request)
        assert actual == resp2(reply), f"{request!r}\n model:  {resp2(reply)!r}\n server: {actual!r}"
        return reply

    def aim(self, q: Queue, place: str | None, job: bytes) -> tuple[Queue, bytes]:
        """An id from the model's `place` set (chosen by `job`'s position in
        the pool), in q or else the other queue -- and if both are empty, one
        brought there first with the verbs (replies compared as ever). With
        no place, q and `job` as drawn."""
        if place is None:
            return q, job
        for attempt in range(2):
            for queue in sorted(QUEUES, key=lambda other: other != q):
                members = self.model.db.get(queue.key(place))
                if isinstance(members, dict) and members:
                    ordered = sorted(members)
                    return queue, ordered[POOL.index(job) % len(ordered)]
            if attempt == 0:
                self.bring(q, place)
        return q, job

    def bring(self, q: Queue, place: str) -> None:
        self.may_create_rows = True
        if place == "schedule":
            self.send(q, "EMQ.SCHEDULE", b"*", b"p", self.model.now + 100)
            return
        self.send(q, "EMQ.ENQUEUE", b"*", b"p")
        if place == "pending":
            return
        claimed = self.send(q, "EMQ.CLAIM", 1000)
        if place == "dead" and isinstance(claimed, list) and claimed:
            job, _, attempts = claimed
            self.send(q, "EMQ.FAIL", job, b"%d" % attempts, 1, 0)  # type: ignore[str-bytes-safe]

    def token(self, q: Queue, job: bytes, token: bytes | str) -> bytes:
        if token != "held":
            return token  # type: ignore[return-value]
        row = self.model.db.get(q.row(job))
        return row.get(b"attempts", b"1") if isinstance(row, dict) else b"1"

    # ------------------------------------------------------------ the verbs

    @rule(q=queues, job=new_jobs, payload=payloads)
    def enqueue(self, q: Queue, job: bytes, payload: bytes) -> None:
        self.may_create_rows = True
        self.send(q, "EMQ.ENQUEUE", job, payload)

    def run_at(self, offset: int | None) -> int:
        return -1 if offset is None else self.model.now + offset

    @rule(q=queues, job=new_jobs, payload=payloads, offset=run_at_offsets)
    def schedule(self, q: Queue, job: bytes, payload: bytes, offset: int | None) -> None:
        self.may_create_rows = True
        self.send(q, "EMQ.SCHEDULE", job, payload, self.run_at(offset))

    @rule(q=queues, job=new_jobs, lease=st.sampled_from([100, 1000, 5000]))
    def enqueue_and_claim(self, q: Queue, job: bytes, lease: int) -> None:
        """Two verbs in a row: leases are where most verbs act."""
        self.may_create_rows = True
        self.send(q, "EMQ.ENQUEUE", job, b"p")
        self.send(q, "EMQ.CLAIM", lease)

    @rule(q=queues, lease=leases)
    def claim(self, q: Queue, lease: int | bytes) -> None:
        self.send(q, "EMQ.CLAIM", lease)

    @rule(q=queues, job=jobs, where=targets("active"), token=tokens, lease=leases, stamp=stamps)
    def extend(
        self, q: Queue, job: bytes, where: str | None, token: bytes | str, lease: int | bytes, stamp: bytes | str | None
    ) -> None:
        q, job = self.aim(q, where, job)
        self.stamp(q, job, stamp)
        self.send(q, "EMQ.EXTEND", job, self.token(q, job, token), lease)

    @rule(q=queues, pairs=st.lists(st.tuples(jobs, targets("active"), tokens), min_size=1, max_size=3), lease=leases)
    def extends(self, q: Queue, pairs: list[tuple[bytes, str | None, bytes | str]], lease: int | bytes) -> None:
        aimed = [(self.aim(q, where, job)[1], token) for job, where, token in pairs]
        flat = [x for job, token in aimed for x in (job, self.token(q, job, token))]
        self.send(q, "EMQ.EXTENDS", lease, *flat)

    @rule(q=queues, job=jobs, where=targets("active"), token=tokens)
    def complete(self, q: Queue, job: bytes, where: str | None, token: bytes | str) -> None:
        q, job = self.aim(q, where, job)
        self.send(q, "EMQ.COMPLETE", job, self.token(q, job, token))

    @rule(q=queues, job=jobs, where=targets("active"), token=tokens, delay=delays)
    def delay(self, q: Queue, job: bytes, where: str | None, token: bytes | str, delay: int) -> None:
        q, job = self.aim(q, where, job)
        self.send(q, "EMQ.DELAY", job, self.token(q, job, token), delay)

    @rule(q=queues, job=jobs, where=targets("active"), token=tokens, most=max_attempts, backoff=backoffs,
          reason=reasons)
    def fail(self, q: Queue, job: bytes, where: str | None, token: bytes | str, most: int, backoff: int,
             reason: bytes | None) -> None:
        q, job = self.aim(q, where, job)
        self.send(q, "EMQ.FAIL", job, self.token(q, job, token), most, backoff, reason)

    @rule(q=queues, limit=limits, wait=waits, steered=steer)
    def promote(self, q: Queue, limit: int | None, wait: int, steered: bool) -> None:
        q, _ = self.aim(q, "schedule" if steered else None, POOL[0])
        self.advance_clock(wait)
        self.send(q, "EMQ.PROMOTE", limit)

    @rule(q=queues, job=jobs, where=targets("schedule"), offset=run_at_offsets)
    def reschedule(self, q: Queue, job: bytes, where: str | None, offset: int | None) -> None:
        q, job = self.aim(q, where, job)
        self.send(q, "EMQ.RESCHEDULE", job, self.run_at(offset))

    @rule(q=queues, job=jobs, where=targets("dead"))
    def reprocess(self, q: Queue, job: bytes, where: str | None) -> None:
        q, job = self.aim(q, where, job)
        self.send(q, "EMQ.REPROCESS", job)

    @rule(q=queues, job=jobs, where=targets("active"), token=tokens)
    def requeue(self, q: Queue, job: bytes, where: str | None, token: bytes | str) -> None:
        q, job = self.aim(q, where, job)
        self.send(q, "EMQ.REQUEUE", job, self.token(q, job, token))

    @rule(q=queues, most=max_stalleds, limit=limits, wait=waits, steered=steer, stamp=stamps)
    def stalled_check(
        self, q: Queue, most: int, limit: int | None, wait: int, steered: bool, stamp: bytes | str | None
    ) -> None:
        """A sweep, often after some time, sometimes over a lease stamped by
        another run (a restart) or by none (a scripted claim)."""
        q, job = self.aim(q, "active" if steered else None, POOL[0])
        self.stamp(q, job, stamp)
        self.advance_clock(wait)
        self.send(q, "EMQ.STALLED.CHECK", most, limit)

    @rule(q=queues, verb=verbs, how=st.sampled_from(["numkeys", "short", "long", "no-args"]))
    def malformed(self, q: Queue, verb: str, how: str) -> None:
        """Arity and numkeys refusals (or, where a count happens to fit,
        an ordinary call: the model says which)."""
        request = list(q.request(verb, *SOME_ARGV[:3]))
        if how == "numkeys":
            request[1] = int(request[1]) + 1  # type: ignore[call-overload]
        elif how == "short":
            request = request[:-1]
        elif how == "long":
            request += [b"1", b"1"]
        else:
            request = request[:1]
        self.send_raw(tuple(request))

    # ------------------------------------------------------------ the world

    def advance_clock(self, ms: int) -> None:
        if ms:
            self.model.now += ms
            assert self.r.execute_command("TRAFIKEY.CLOCK", "ADVANCE", ms) == self.model.now

    @rule(ms=advances)
    def advance(self, ms: int) -> None:
        self.advance_clock(ms)

    @rule(q=queues)
    def pause(self, q: Queue) -> None:
        self.r.set(q.paused, b"1")
        self.model.db[q.paused] = b"1"

    @rule(q=queues)
    def unpause(self, q: Queue) -> None:
        self.r.delete(q.paused)
        self.model.delete(q.paused)

    @rule(q=queues, job=jobs, where=st.sampled_from([*PLACES, None]))
    def delete_row(self, q: Queue, job: bytes, where: str | None) -> None:
        """A raw DEL: the id, wherever it sits, becomes a ghost."""
        q, job = self.aim(q, where, job)
        if q.row(job) in self.model.db:
            self.tainted.add((q.prefix, job))
        self.r.delete(q.row(job))
        self.model.delete(q.row(job))

    @rule(q=queues, job=jobs, where=st.sampled_from([*PLACES, None]))
    def make_lane_row(self, q: Queue, job: bytes, where: str | None) -> None:
        """A raw HSET of `group`, as a lane script would leave it."""
        q, job = self.aim(q, where, job)
        if q.row(job) not in self.model.db:
            self.tainted.add((q.prefix, job))
            self.may_create_rows = True
        self.r.hset(q.row(job), b"group", b"g")
        self.model.hset(q.row(job), b"group", b"g")

    @rule(q=queues)
    def clear_lane_rows(self, q: Queue) -> None:
        """HDEL `group` from q's lane rows: a lane row in active blocks every
        sweep of its queue (rightly), so lanes come and go."""
        for key, value in list(self.model.db.items()):
            if key.startswith(q.row(b"")) and isinstance(value, dict) and b"group" in value:
                self.r.hdel(key, b"group")
                self.model.hdel(key, b"group")

    @rule(q=queues, job=jobs, where=targets("active"), stamp=st.sampled_from([OTHER_RUN, None]))
    def restamp(self, q: Queue, job: bytes, where: str | None, stamp: bytes | None) -> None:
        q, job = self.aim(q, where, job)
        self.stamp(q, job, stamp)

    def stamp(self, q: Queue, job: bytes, stamp: bytes | str | None) -> None:
        """A raw write of an existing row's lease_epoch: another run's (a
        restart), or none (HDEL: a scripted claim); "keep" leaves it."""
        row = self.model.db.get(q.row(job))
        if stamp == "keep" or not isinstance(row, dict):
            return
        if stamp is None:
            self.r.hdel(q.row(job), b"lease_epoch")
            self.model.hdel(q.row(job), b"lease_epoch")
        else:
            self.r.hset(q.row(job), b"lease_epoch", stamp)
            row[b"lease_epoch"] = stamp  # type: ignore[assignment]

    # ------------------------------------------------------------ invariants

    @invariant()
    def server_matches_model_and_spec(self) -> None:
        keyspace = server_keyspace(self.r)
        assert keyspace == self.model.dump()
        ghosts: set[tuple[bytes, bytes]] = set()
        counters: dict[tuple[bytes, bytes], dict[bytes, int]] = {}
        for q in QUEUES:
            places = {p: keyspace.get(q.key(p), ("zset", {}))[1] for p in PLACE_OF_STATE.values()}
            ids = {job for members in places.values() for job in members}  # type: ignore[attr-defined]
            rows = {key[len(q.row(b"")):]: content for key, (kind, content) in keyspace.items()
                    if key.startswith(q.row(b"")) and kind == "hash"}
            for job in ids | set(rows):
                holders = [p for p, members in places.items() if job in members]  # type: ignore[operator]
                row = rows.get(job)
                if row is None:
                    ghosts.add((q.prefix, job))
                else:
                    counters[(q.prefix, job)] = {f: int(row[f]) for f in COUNTERS if f in row}  # type: ignore[index]
                if (q.prefix, job) in self.tainted:
                    continue
                assert len(holders) <= 1, f"{job!r} is in {holders}"
                if row is not None:
                    state = row.get(b"state")  # type: ignore[attr-defined]
                    assert holders == [PLACE_OF_STATE.get(state)], f"{job!r}: state {state!r}, held by {holders}"
        # counters never go down while the row exists
        for key, current in counters.items():
            for name, before in self.seen_counters.get(key, {}).items():
                assert current.get(name, 0) >= before, f"{key!r}: {name!r} went from {before} to {current.get(name)}"
        # a ghost gains no row, but through admission (or a raw write)
        if not self.may_create_rows:
            for q_prefix, job in self.ghosts:
                assert (q_prefix + b"job:" + job) not in keyspace, f"ghost {job!r} gained a row"
        self.seen_counters, self.ghosts, self.may_create_rows = counters, ghosts, False


@pytest.fixture
def wire(emq_server: object, emq: redis.Redis) -> Iterator[Wire]:
    w = Wire(emq_server.port)  # type: ignore[attr-defined]
    yield w
    w.close()


@pytest.mark.slow
def test_random_verb_sequences_match_the_model(emq: redis.Redis, wire: Wire) -> None:
    run_state_machine_as_test(
        lambda: EmqMachine(emq, wire),
        settings=settings(
            max_examples=100,
            stateful_step_count=40,
            deadline=None,
            suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
        ),
    )

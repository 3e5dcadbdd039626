"""Workers whose replies are lost or refused, retrying: the queue's
guarantees hold when the network and the server misbehave.

Four worker threads claim and complete 300 jobs through redis-py clients
that retry (``Retry`` with backoff on a closed connection and on LOADING).
Fault rules (TRAFIKEY.FAULT, for the workers' connections only) lose the
reply of some EMQ.CLAIM and EMQ.COMPLETE requests after they ran
(DROP-AFTER: a claim nobody knows it holds, a completion the worker sends
again) and refuse others before they run (ERROR LOADING). The lease clock
is the server's test clock: a claim whose reply was lost stays active until
the main thread moves the clock past every lease and EMQ.STALLED.CHECK
gives it back, so it is claimed again.

Nothing here asserts a duration. At the end, whatever the interleaving:
pending, active and schedule are empty, nothing is dead, every job's row is
gone (completed); no job got two successful COMPLETE replies; a COMPLETE
sent again after its reply was lost was refused as a race (EMQNOJOB,
EMQLEASE, EMQSTATE), never done twice; and both kinds of rule fired on both
verbs.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field

import hiredis
import pytest
import redis
from helpers.resp_wire import Wire
from helpers.servers import Proc, start_trafikey
from redis.backoff import ExponentialBackoff
from redis.exceptions import BusyLoadingError
from redis.retry import Retry

P = "emq:{faults}:"
PENDING, ACTIVE, SCHEDULE, DEAD = P + "pending", P + "active", P + "schedule", P + "dead"
N_JOBS = 300
N_WORKERS = 4
LEASE = 60_000  # ms of the frozen test clock: only the main thread ends a lease
RACE_CODES = ("EMQLEASE", "EMQSTATE", "EMQNOJOB")
DEADLINE = 90.0  # seconds: liveness bound only


@pytest.fixture(scope="module")
def server() -> Iterator[Proc]:
    p = start_trafikey("--enable-fault-command", "yes", "--enable-clock-command", "yes")
    yield p
    p.stop()


def hiredis_list(raw: bytes) -> list[list[object]]:
    reader = hiredis.Reader()
    reader.feed(raw)
    out = reader.gets()
    assert isinstance(out, list)
    return out


@dataclass
class Seen:
    completed: Counter[bytes] = field(default_factory=Counter)
    races: Counter[str] = field(default_factory=Counter)
    unexpected: list[str] = field(default_factory=list)


def worker(port: int, stop: threading.Event, seen: Seen) -> None:
    r = redis.Redis(port=port, client_name="worker", socket_timeout=20,
                    retry=Retry(ExponentialBackoff(cap=0.02, base=0.001), 20),
                    retry_on_error=[BusyLoadingError])
    try:
        while not stop.is_set():
            got = r.execute_command("EMQ.CLAIM", 3, PENDING, ACTIVE, P, LEASE)
            if not got:
                time.sleep(0.005)
                continue
            jid, _, token = got
            try:
                if r.execute_command("EMQ.COMPLETE", 2, ACTIVE, P, jid, token) == 1:
                    seen.completed[jid] += 1
            except redis.ResponseError as e:
                code = str(e).split(" ", 1)[0]
                if code in RACE_CODES:
                    seen.races[code] += 1
                else:
                    seen.unexpected.append(f"COMPLETE {jid!r} -> {e}")
    except Exception as e:  # surfaced by the main thread
        seen.unexpected.append(f"worker crashed: {e!r}")
    finally:
        r.close()


def test_lost_and_refused_claims_and_completions(server: Proc) -> None:
    r = redis.Redis(port=server.port)
    r.flushall()
    r.execute_command("TRAFIKEY.CLOCK", "FREEZE")
    ids = [b"f%03d" % i for i in range(N_JOBS)]
    pipe = r.pipeline(transaction=False)
    for jid in ids:
        pipe.execute_command("EMQ.ENQUEUE", 2, PENDING, P, jid, b"payload:" + jid)
    assert pipe.execute() == ids
    for verb, kind, p in (("emq.complete", ("DROP-AFTER",), "0.2"), ("emq.complete", ("ERROR", "LOADING"), "0.1"),
                          ("emq.claim", ("DROP-AFTER",), "0.1"), ("emq.claim", ("ERROR", "LOADING"), "0.1")):
        r.execute_command("TRAFIKEY.FAULT", "ADD", *kind, "COMMAND", verb, "CLIENTNAME", "worker",
                          "PROBABILITY", p)

    stop = threading.Event()
    seen = [Seen() for _ in range(N_WORKERS)]
    threads = [threading.Thread(target=worker, args=(server.port, stop, seen[i]), daemon=True)
               for i in range(N_WORKERS)]
    for t in threads:
        t.start()
    requeued: list[bytes] = []
    deadline = time.monotonic() + DEADLINE
    try:
        while True:
            tx = r.pipeline(transaction=True)
            tx.zcard(PENDING).zcard(ACTIVE).zcard(SCHEDULE)
            pending, active, scheduled = tx.execute()
            if pending == active == scheduled == 0:
                break
            assert time.monotonic() < deadline, f"not drained: {pending} pending, {active} active"
            if pending == 0:
                # Only claims nobody knows it holds (or settling now): end
                # every lease and give them back.
                r.execute_command("TRAFIKEY.CLOCK", "ADVANCE", LEASE + 1)
                back, dead = r.execute_command("EMQ.STALLED.CHECK", 4, ACTIVE, PENDING, DEAD, P, 1000, 1000)
                requeued += back
                assert dead == []
            time.sleep(0.01)
    finally:
        stop.set()
        for t in threads:
            t.join(30)
    w = Wire(server.port)  # RESP2: each rule a flat list of field and value
    rules = [dict(zip(e[::2], e[1::2], strict=True)) for e in hiredis_list(w.call("TRAFIKEY.FAULT", "LIST"))]
    w.close()
    fired = {(rule[b"kind"], rule[b"command"]): rule[b"fired"] for rule in rules}
    r.execute_command("TRAFIKEY.FAULT", "RESET")
    r.execute_command("TRAFIKEY.CLOCK", "RELEASE")

    unexpected = [u for s in seen for u in s.unexpected]
    assert unexpected == []
    completed: Counter[bytes] = Counter()
    races: Counter[str] = Counter()
    for s in seen:
        completed += s.completed
        races += s.races
    assert max(completed.values()) == 1  # nothing done twice
    assert set(completed) <= set(ids)
    assert r.zcard(DEAD) == 0
    assert [jid for jid in ids if r.exists(P + "job:" + jid.decode())] == []  # every job completed
    # Every rule fired; a lost COMPLETE reply was retried and refused as a race.
    assert all(n > 0 for n in fired.values()), fired
    assert len(fired) == 4
    assert sum(races.values()) > 0
    # A completion whose reply was lost counts nowhere on the client side.
    assert len(completed) + fired[(b"DROP-AFTER", b"emq.complete")] >= N_JOBS
    assert requeued  # a lost claim came back through STALLED.CHECK
    r.close()

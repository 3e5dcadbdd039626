"""A thousand connections at once, each running a job lifecycle on one queue.

Why: a test server is shared by a whole test run, and EchoMQ's workers each
hold a connection. The server must take a thousand of them at the same
time, keep every one of them open, and lose no job while their claims race
on one queue.

All connections are opened first and held open together (the server's own
``connected_clients`` must show them all), then each one enqueues two jobs
and claims until it has settled three leases: a ``c`` job is completed on
its first claim; an ``f`` job fails once (back to pending, no backoff) and
is completed on its second claim. Supply and demand match exactly (2,000
admissions + 1,000 retries = 3,000 claims = 1,000 connections x 3), so the
run ends when every job is done, whichever connection claims which job.

Checks, from first principles: every job completed exactly once, every
``f`` job failed exactly once with token 1 and completed with token 2,
every payload came back intact, the queue and the keyspace are empty but
for ``seq`` (3,000: one number per entry into pending), every connection
still answers PING at the end, and the server's own command counters agree
with the replies the clients saw. Nothing asserts a duration; the deadline
is a liveness bound.
"""

from __future__ import annotations

import asyncio
import resource
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field

import hiredis
import pytest
import redis
from helpers.aresp import AsyncConn
from helpers.servers import Proc, start_trafikey

N_CONN = 1000
P = "emq:{load}:"
PENDING, ACTIVE, SCHEDULE, DEAD, SEQ = P + "pending", P + "active", P + "schedule", P + "dead", P + "seq"
LEASE_MS = 60_000
DEADLINE = 120.0  # seconds: liveness only


def raise_nofile(need: int) -> int:
    """Raise this process's soft RLIMIT_NOFILE to ``need`` (within the hard
    limit); the server started afterwards inherits it. Returns the limit."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < need:
        target = need if hard == resource.RLIM_INFINITY else min(need, hard)
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
    return resource.getrlimit(resource.RLIMIT_NOFILE)[0]


@pytest.fixture(scope="module")
def load_server() -> Iterator[Proc]:
    need = 2 * N_CONN + 256  # our sockets and the server's, plus slack
    got = raise_nofile(need)
    assert got >= need, f"RLIMIT_NOFILE hard limit too low for {N_CONN} connections: {got} < {need}"
    p = start_trafikey()
    yield p
    p.stop()


def payload_of(jid: bytes) -> bytes:
    return b"payload:" + jid


@dataclass
class Seen:
    claims: list[tuple[bytes, int]] = field(default_factory=list)
    completed: list[tuple[bytes, int]] = field(default_factory=list)
    failed: list[tuple[bytes, int, bytes]] = field(default_factory=list)
    empty_claims: int = 0
    unexpected: list[str] = field(default_factory=list)


async def lifecycle(c: AsyncConn, i: int, seen: Seen) -> None:
    for kind in (b"c", b"f"):
        jid = b"%s%04d" % (kind, i)
        got = await c.call("EMQ.ENQUEUE", 2, PENDING, P, jid, payload_of(jid))
        if got != jid:
            seen.unexpected.append(f"ENQUEUE {jid!r} -> {got!r}")
    settled = 0
    while settled < 3:
        got = await c.call("EMQ.CLAIM", 3, PENDING, ACTIVE, P, LEASE_MS)
        if isinstance(got, hiredis.ReplyError):
            seen.unexpected.append(f"CLAIM -> {got}")
            return
        if got == []:
            seen.empty_claims += 1
            await asyncio.sleep(0.01)
            continue
        jid, payload, token = got
        seen.claims.append((jid, token))
        if payload != payload_of(jid):
            seen.unexpected.append(f"payload of {jid!r}: {payload!r}")
        if jid.startswith(b"f") and token == 1:
            reply = await c.call("EMQ.FAIL", 5, ACTIVE, PENDING, SCHEDULE, DEAD, P, jid, token, 3, 0, "once")
            seen.failed.append((jid, token, reply))
        else:
            reply = await c.call("EMQ.COMPLETE", 2, ACTIVE, P, jid, token)
            if reply == 1:
                seen.completed.append((jid, token))
            else:
                seen.unexpected.append(f"COMPLETE {jid!r} {token} -> {reply!r}")
        settled += 1


async def run(port: int) -> tuple[Seen, int, list[object]]:
    conns = await asyncio.gather(*(AsyncConn.open(port) for _ in range(N_CONN)))
    control = await AsyncConn.open(port)
    try:
        info = (await control.call("INFO", "clients")).decode()
        connected = int(next(ln.split(":")[1] for ln in info.splitlines() if ln.startswith("connected_clients:")))
        seen = Seen()
        results = await asyncio.gather(
            *(lifecycle(c, i, seen) for i, c in enumerate(conns)), return_exceptions=True
        )
        errors = [r for r in results if isinstance(r, BaseException)]
        pongs = await asyncio.gather(*(c.call("PING") for c in conns), return_exceptions=True)
        seen.unexpected += [f"lifecycle raised {e!r}" for e in errors]
        return seen, connected, pongs
    finally:
        await asyncio.gather(*(c.close() for c in [*conns, control]))


def commandstats(r: redis.Redis) -> dict[str, dict[str, int]]:
    """INFO commandstats as {command: {calls, failed_calls, ...}}."""
    return {k.removeprefix("cmdstat_"): v for k, v in r.info("commandstats").items()}


def test_thousand_connections_job_lifecycle(load_server: Proc) -> None:
    r = redis.Redis(port=load_server.port)
    r.flushall()
    r.config_resetstat()
    seen, connected, pongs = asyncio.run(asyncio.wait_for(run(load_server.port), DEADLINE))

    assert seen.unexpected == [], seen.unexpected[:20]
    assert connected >= N_CONN + 1, f"only {connected} clients connected at once"
    dropped = [p for p in pongs if p != b"PONG"]
    assert dropped == [], f"{len(dropped)} connections did not answer PING: {dropped[:5]}"
    assert load_server.proc.poll() is None
    assert "Traceback" not in load_server.output()

    c_ids = {b"c%04d" % i for i in range(N_CONN)}
    f_ids = {b"f%04d" % i for i in range(N_CONN)}
    completes = Counter(jid for jid, _ in seen.completed)
    assert set(completes) == c_ids | f_ids, "a job was never completed"
    assert max(completes.values()) == 1, "a job was completed twice"
    assert all(tok == (2 if jid in f_ids else 1) for jid, tok in seen.completed)
    assert sorted(jid for jid, _, _ in seen.failed) == sorted(f_ids)
    assert {(tok, reply) for _, tok, reply in seen.failed} == {(1, b"pending")}
    tokens: dict[bytes, list[int]] = {}
    for jid, tok in seen.claims:
        tokens.setdefault(jid, []).append(tok)
    assert {jid: sorted(t) for jid, t in tokens.items()} == {
        **{jid: [1] for jid in c_ids}, **{jid: [1, 2] for jid in f_ids}
    }

    # The queue is empty; one sequence number per entry into pending.
    assert [r.zcard(k) for k in (PENDING, ACTIVE, SCHEDULE, DEAD)] == [0, 0, 0, 0]
    assert set(r.keys("*")) == {SEQ.encode()}
    assert r.get(SEQ) == str(3 * N_CONN).encode()

    # The server counted what the clients saw.
    stats = commandstats(r)
    assert stats["emq.enqueue"]["calls"] == 2 * N_CONN
    assert stats["emq.claim"]["calls"] == 3 * N_CONN + seen.empty_claims
    assert stats["emq.fail"]["calls"] == N_CONN
    assert stats["emq.complete"]["calls"] == 2 * N_CONN
    assert all(stats[v]["failed_calls"] == 0 and stats[v]["rejected_calls"] == 0
               for v in ("emq.enqueue", "emq.claim", "emq.fail", "emq.complete"))
    assert stats["ping"]["calls"] == N_CONN
    r.close()

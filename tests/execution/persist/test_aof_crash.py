"""Crashes and restarts with the append-only file on.

``kill -9`` the server under load from 20 connections enqueueing, claiming
and completing jobs, several rounds, then restart from the log: every
acknowledged ENQUEUE must still have its row (or have been completed), and
no acknowledged COMPLETE may be undone. Under ``always`` a reply goes out
only after its record is fsynced; the same check is run under ``everysec``,
where a killed *process* must lose nothing either (records are written
before replies; only the fsync is deferred), and the number of acknowledged
writes lost is printed.

The same for lists and sets: pipelining connections LPUSH, RPUSH, LPOP,
LMOVE, BLMOVE, SADD, SREM, SMOVE and SPOP on keys of their own; after each
restart every connection's keys must hold what its acknowledged commands
(and possibly some of the batch in flight, in order) made of them.

Then the lease epoch across a real restart (job-core point 4): a lease
stamped by the previous process is requeued by STALLED.CHECK without
counting a stall; a lease of the current process is counted.
"""

from __future__ import annotations

import random
import signal
import tempfile
import threading
import time

import pytest
import redis
from helpers.aof_util import aof_server
from helpers.crash_model import ListSetWriter
from redis.backoff import NoBackoff
from redis.retry import Retry

P = "emq:{crash}:"
PEND, ACT = P + "pending", P + "active"
CONNS = 20


class Worker(threading.Thread):
    """One connection: enqueue a job of its own, claim one, complete it."""

    def __init__(self, port: int, tag: str) -> None:
        super().__init__(daemon=True)
        self.port = port
        self.tag = tag
        self.acked_enqueue: list[str] = []
        self.sent_complete: set[str] = set()
        self.acked_complete: list[str] = []

    def run(self) -> None:
        # No retries: a reply lost to the kill must count as unacknowledged.
        r = redis.Redis(port=self.port, socket_timeout=5, retry=Retry(NoBackoff(), 0))
        n = 0
        try:
            while True:
                job = f"{self.tag}-{n}"
                n += 1
                if r.execute_command("EMQ.ENQUEUE", 2, PEND, P, job, "x" * 20) is not None:
                    self.acked_enqueue.append(job)
                got = r.execute_command("EMQ.CLAIM", 3, PEND, ACT, P, 600_000)
                if got:
                    jid, _, token = got
                    jid = jid.decode()
                    self.sent_complete.add(jid)
                    if r.execute_command("EMQ.COMPLETE", 2, ACT, P, jid, token) == 1:
                        self.acked_complete.append(jid)
        except (redis.ConnectionError, redis.TimeoutError, OSError):
            return


def crash_rounds(policy: str, rounds: int) -> int:
    """Run rounds of load and kill -9; check every acknowledgement after
    each restart. Returns the number of acknowledged writes lost."""
    d = tempfile.mkdtemp(prefix=f"aof-crash-{policy}-")
    rng = random.Random(7)
    lost = 0
    acked_enqueue: list[str] = []
    sent_complete: set[str] = set()
    acked_complete: list[str] = []
    total_ops = 0
    srv = aof_server(d, "--appendfsync", policy)
    for rnd in range(rounds):
        try:
            workers = [Worker(srv.port, f"r{rnd}c{i}") for i in range(CONNS)]
            for w in workers:
                w.start()
            time.sleep(rng.uniform(0.4, 1.2))
            srv.proc.send_signal(signal.SIGKILL)
            srv.proc.wait()
            for w in workers:
                w.join(10)
                acked_enqueue += w.acked_enqueue
                sent_complete |= w.sent_complete
                acked_complete += w.acked_complete
                total_ops += len(w.acked_enqueue) + len(w.acked_complete)
        finally:
            srv.stop()
        # The restarted server is checked, then carries the next round's load.
        srv = aof_server(d, "--appendfsync", policy)
        r = redis.Redis(port=srv.port)
        pipe = r.pipeline(transaction=False)
        for job in acked_enqueue:
            pipe.exists(P + "job:" + job)
        present = pipe.execute()
        for job, ok in zip(acked_enqueue, present, strict=True):
            if not ok and job not in sent_complete:
                lost += 1  # an acknowledged ENQUEUE neither present nor completed
        pipe = r.pipeline(transaction=False)
        for job in acked_complete:
            pipe.exists(P + "job:" + job)
        lost += sum(pipe.execute())  # an acknowledged COMPLETE undone
        r.close()
    srv.stop()
    assert len(acked_enqueue) > 100 and len(acked_complete) > 50, (len(acked_enqueue), len(acked_complete))
    print(f"\n{policy}: {rounds} kill -9 rounds, {total_ops} acknowledged writes, {lost} lost")
    return lost


def test_kill9_always_loses_nothing() -> None:
    assert crash_rounds("always", 4) == 0


@pytest.mark.slow
def test_kill9_everysec_measured() -> None:
    """A killed process (not a lost machine) loses nothing under everysec
    either: records reach the kernel before replies are sent."""
    assert crash_rounds("everysec", 2) == 0


def list_set_crash_rounds(policy: str, rounds: int) -> None:
    """kill -9 under pipelined list and set writes, several rounds; after
    each restart every writer's keys (this round's and all earlier ones')
    must be its model after a count of its commands no smaller than the
    acknowledged count, and the same count at every later restart."""
    d = tempfile.mkdtemp(prefix=f"aof-crash-ls-{policy}-")
    rng = random.Random(11)
    writers: list[ListSetWriter] = []
    srv = aof_server(d, "--appendfsync", policy)
    try:
        for rnd in range(rounds):
            fresh = [ListSetWriter(srv.port, f"r{rnd}c{i}", seed=rnd * 100 + i) for i in range(CONNS // 2)]
            for w in fresh:
                w.start()
            time.sleep(rng.uniform(0.4, 1.0))
            srv.proc.send_signal(signal.SIGKILL)
            srv.proc.wait()
            for w in fresh:
                w.join(10)
            writers += fresh
            srv.stop()
            srv = aof_server(d, "--appendfsync", policy)
            r = redis.Redis(port=srv.port)
            for w in writers:
                seen = w.observe(r)
                m = w.explained_by(seen)
                assert m is not None, (w.keys, w.acked, len(w.sent), seen)
                assert w.pinned in (None, m), (w.keys, w.pinned, m)
                w.pinned = m
            r.close()
    finally:
        srv.stop()
    acked = sum(w.acked for w in writers)
    kinds = {c[0] for w in writers for c in w.sent[: w.acked]}
    assert acked > 1000 and kinds >= {"LPUSH", "LMOVE", "BLMOVE", "SADD", "SMOVE", "SPOP"}, (acked, kinds)
    print(f"\n{policy}: {rounds} kill -9 rounds, {acked} acknowledged list and set writes, none lost")


@pytest.mark.slow
def test_kill9_always_keeps_lists_and_sets() -> None:
    list_set_crash_rounds("always", 3)


# -- the lease epoch across a real restart ----------------------------------------------

E = "emq:{ep}:"
EACT, EPEND, EDEAD = E + "active", E + "pending", E + "dead"
T0 = 1_700_000_000_000


def _claim(r: redis.Redis, lease: int) -> list:
    return r.execute_command("EMQ.CLAIM", 3, EPEND, EACT, E, lease)


def test_lease_epoch_across_restart() -> None:
    d = tempfile.mkdtemp(prefix="aof-epoch-")
    extra = ("--appendfsync", "always", "--enable-clock-command", "yes")
    one = aof_server(d, *extra)
    try:
        r = redis.Redis(port=one.port)
        run1 = r.info("server")["run_id"]
        r.execute_command("TRAFIKEY.CLOCK", "FREEZE", T0)
        r.execute_command("EMQ.ENQUEUE", 2, EPEND, E, "j", "payload")
        job, _, attempts = _claim(r, 1000)
        assert (job, attempts) == (b"j", 1)
        assert r.hget(E + "job:j", "lease_epoch").decode() == run1
        r.close()
    finally:
        one.stop()
    two = aof_server(d, *extra)
    try:
        r = redis.Redis(port=two.port)
        run2 = r.info("server")["run_id"]
        assert run2 != run1
        # The old lease is long past (frozen T0 + 1000 in process 1; process
        # 2's clock is the wall clock, years later).
        assert r.zscore(EACT, "j") == T0 + 1000
        assert r.hget(E + "job:j", "lease_epoch").decode() == run1
        moved = r.execute_command("EMQ.STALLED.CHECK", 4, EACT, EPEND, EDEAD, E, 0)
        assert moved, "the expired lease was requeued"
        row = r.hgetall(E + "job:j")
        assert row[b"state"] == b"pending"
        assert b"stalled" not in row  # not counted: the lease crossed a restart
        assert r.zscore(EPEND, "j") is not None and r.zscore(EACT, "j") is None
        # Claimed again under process 2, the lease expires: counted.
        r.execute_command("TRAFIKEY.CLOCK", "FREEZE", T0)
        job, _, attempts = _claim(r, 1000)
        assert (job, attempts) == (b"j", 2)
        assert r.hget(E + "job:j", "lease_epoch").decode() == run2
        r.execute_command("TRAFIKEY.CLOCK", "ADVANCE", 1001)
        r.execute_command("EMQ.STALLED.CHECK", 4, EACT, EPEND, EDEAD, E, 5)
        row = r.hgetall(E + "job:j")
        assert row[b"stalled"] == b"1"
        assert row[b"state"] == b"pending"
        r.close()
    finally:
        two.stop()
    # And the counted stall is itself in the log.
    three = aof_server(d)
    try:
        r = redis.Redis(port=three.port)
        assert r.hget(E + "job:j", "stalled") == b"1"
        r.close()
    finally:
        three.stop()


@pytest.mark.parametrize("policy", ["always", "everysec", "no"])
def test_sigterm_and_shutdown_flush(policy: str) -> None:
    """SIGTERM and SHUTDOWN both leave every acknowledged write in the log."""
    d = tempfile.mkdtemp(prefix="aof-stop-")
    srv = aof_server(d, "--appendfsync", policy)
    r = redis.Redis(port=srv.port)
    pipe = r.pipeline(transaction=False)
    for i in range(2000):
        pipe.set(f"k{i}", i)
    pipe.execute()
    srv.proc.send_signal(signal.SIGTERM)
    assert srv.proc.wait(10) == 0
    srv.stop()
    srv = aof_server(d, "--appendfsync", policy)
    r = redis.Redis(port=srv.port, retry=Retry(NoBackoff(), 0))
    assert r.dbsize() == 2001  # and the brand key
    r.set("after", "1")
    try:
        r.shutdown()
    except redis.ConnectionError:
        pass
    srv.proc.wait(10)
    srv.stop()
    srv = aof_server(d)
    try:
        r = redis.Redis(port=srv.port)
        assert r.get("after") == b"1" and r.get("k1999") == b"1999"
    finally:
        srv.stop()

"""``python3 -m bench.soak``: mixed traffic for minutes; memory stays flat, no job is lost.

    python3 -m bench.soak --minutes 10          # the full soak (the figures in docs/security.md)
    python3 -m bench.soak --seconds 40          # the short variant the test suite runs
    python3 -m bench.soak --minutes 10 --json out.json

Why: a server that leaks a little per command, per expired key or per job
passes every short test and falls over in a long CI run. The soak drives one
trafikey-server with a bounded keyspace — strings with and without expiry,
hashes, sorted sets, MULTI/EXEC, EVALSHA — and a job queue with producers,
workers that complete, fail (with and without backoff) or drop their job,
a sweeper and a janitor that clears the dead set, so the data the server
holds is bounded and any steady growth of its memory is the server's own.

Memory: the server's RSS (``VmRSS`` in ``/proc/PID/status``) is sampled every
``--sample-every`` seconds. The first half of the run is warm-up (the
keyspace fills to its bound, the allocator finds its size). The criterion is
on the second half: the least-squares slope of RSS against time, projected
over that half, must stay within ``--max-growth-mib`` MiB (default 4). The
run prints every sample and the figures the verdict rests on.

Jobs: every id the producers enqueued must end, after the final drain, either
completed exactly once (a COMPLETE answered 1) or dead (collected by the
janitor), never both; the queue's sets must be empty. Any other error reply,
or any connection error, fails the run. Exit status 0 means every check held.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import redis

from . import servers
from .memory import rss_bytes
from .soak_memory import memory_verdict

P = "emq:{soak}:"
PENDING, ACTIVE, SCHEDULE, DEAD = P + "pending", P + "active", P + "schedule", P + "dead"
MAX_PENDING = 2000  # producers wait while the queue is this long
MAX_ATTEMPTS = 3
MAX_STALLED = 1
SCRIPT = "local v = redis.call('INCR', KEYS[1]) redis.call('PEXPIRE', KEYS[1], ARGV[1]) return v"
RACE_CODES = ("EMQLEASE", "EMQSTATE", "EMQNOJOB")


@dataclass
class Tally:
    """What one thread did; merged at the end."""

    ops: int = 0
    enqueued: list[bytes] = field(default_factory=list)
    completed: list[bytes] = field(default_factory=list)
    collected_dead: list[bytes] = field(default_factory=list)
    fails: Counter[bytes] = field(default_factory=Counter)
    drops: int = 0
    swept: int = 0
    promoted: int = 0
    refusals: Counter[str] = field(default_factory=Counter)
    errors: list[str] = field(default_factory=list)


def client(port: int) -> redis.Redis:
    return redis.Redis(port=port, socket_timeout=30, single_connection_client=True)


def mixed(port: int, seed: int, keys: int, stop: threading.Event, t: Tally) -> None:
    """Strings, hashes, sorted sets, expiry, MULTI/EXEC and EVALSHA over a bounded keyspace."""
    r = client(port)
    rng = random.Random(seed)
    try:
        sha = r.script_load(SCRIPT)
        while not stop.is_set():
            k = rng.randrange(keys)
            op = rng.randrange(12)
            val = rng.randbytes(rng.randint(1, 200))
            if op == 0:
                r.set(f"s:{k}", val)
            elif op == 1:
                r.set(f"s:{k}", val, px=rng.randint(50, 3000))
            elif op == 2:
                r.mget([f"s:{rng.randrange(keys)}" for _ in range(5)])
            elif op == 3:
                r.hset(f"h:{k}", f"f{rng.randrange(20)}", val)
            elif op == 4:
                r.hgetall(f"h:{k}")
                r.hdel(f"h:{k}", f"f{rng.randrange(20)}")
            elif op == 5:
                r.zadd(f"z:{k}", {f"m{rng.randrange(50)}": rng.random() * 1000})
            elif op == 6:
                r.zrangebyscore(f"z:{k}", 100, 500, withscores=True)
                r.zrem(f"z:{k}", f"m{rng.randrange(50)}")
            elif op == 7:
                r.zpopmin(f"z:{k}")
                r.incr(f"n:{k}")
            elif op == 8:
                tx = r.pipeline(transaction=True)
                tx.set(f"s:{k}", val).hset(f"h:{k}", "tx", val).zadd(f"z:{k}", {"tx": 1})
                tx.pexpire(f"h:{k}", rng.randint(100, 5000)).get(f"s:{k}")
                tx.execute()
            elif op == 9:
                r.evalsha(sha, 1, f"e:{k}", rng.randint(100, 3000))
            elif op == 10:
                r.delete(f"s:{k}", f"n:{k}")
            else:
                r.expire(f"z:{k}", rng.randint(1, 5))
            t.ops += 1
    except Exception as e:
        t.errors.append(f"mixed {seed}: {e!r}")
    finally:
        r.close()


def producer(port: int, stop: threading.Event, t: Tally) -> None:
    r = client(port)
    rng = random.Random(1)
    try:
        while not stop.is_set():
            if r.zcard(PENDING) > MAX_PENDING:
                time.sleep(0.05)
                continue
            pipe = r.pipeline(transaction=False)
            for _ in range(20):
                pipe.execute_command("EMQ.ENQUEUE", 2, PENDING, P, "*", rng.randbytes(rng.randint(10, 300)))
            t.enqueued.extend(pipe.execute())
            t.ops += 20
    except Exception as e:
        t.errors.append(f"producer: {e!r}")
    finally:
        r.close()


def worker(port: int, seed: int, done: threading.Event, t: Tally) -> None:
    """Claims until told the run is over and the queue is drained. Most jobs
    complete; some fail (retry at once or after a backoff); some are dropped
    with a short lease for the sweeper to recover."""
    r = client(port)
    rng = random.Random(seed)
    try:
        while not done.is_set():
            drop = rng.random() < 0.01
            got = r.execute_command("EMQ.CLAIM", 3, PENDING, ACTIVE, P, 100 if drop else 30_000)
            t.ops += 1
            if not got:
                time.sleep(0.01)
                continue
            jid, _payload, token = got
            if drop:
                t.drops += 1
                continue
            x = rng.random()
            try:
                if x < 0.9:
                    if r.execute_command("EMQ.COMPLETE", 2, ACTIVE, P, jid, token) == 1:
                        t.completed.append(jid)
                else:
                    backoff = 0 if x < 0.95 else rng.randint(10, 200)
                    reply = r.execute_command("EMQ.FAIL", 5, ACTIVE, PENDING, SCHEDULE, DEAD, P, jid, token,
                                              MAX_ATTEMPTS, backoff, "soak")
                    t.fails[reply] += 1
            except redis.ResponseError as e:  # only a sweep racing a slow worker may refuse it
                code = str(e).split(" ", 1)[0]
                if code not in RACE_CODES:
                    raise
                t.refusals[code] += 1
            t.ops += 1
    except Exception as e:
        t.errors.append(f"worker {seed}: {e!r}")
    finally:
        r.close()


def sweeper(port: int, done: threading.Event, t: Tally) -> None:
    """Promotes due jobs, recovers expired leases, and collects the dead
    (the janitor), so the queue's data stays bounded."""
    r = client(port)
    try:
        while not done.is_set():
            t.promoted += r.execute_command("EMQ.PROMOTE", 3, SCHEDULE, PENDING, P, 1000)
            requeued, dead = r.execute_command("EMQ.STALLED.CHECK", 4, ACTIVE, PENDING, DEAD, P, MAX_STALLED, 1000)
            t.swept += len(requeued) + len(dead)
            ids = r.zrange(DEAD, 0, 999)
            if ids:
                tx = r.pipeline(transaction=True)
                tx.zrem(DEAD, *ids)
                for jid in ids:
                    tx.delete((P + "job:").encode() + jid)
                tx.execute()
                t.collected_dead.extend(ids)
            t.ops += 3
            time.sleep(0.05)
    except Exception as e:
        t.errors.append(f"sweeper: {e!r}")
    finally:
        r.close()


def run(seconds: float, sample_every: float, max_growth_mib: float, mixed_clients: int, workers: int,
        keys: int, log: Any = sys.stdout) -> dict[str, Any]:
    server = servers.start_trafikey("soak")
    try:
        return _soak(server, seconds, sample_every, max_growth_mib, mixed_clients, workers, keys, log)
    finally:
        server.stop()


def _soak(server: servers.Server, seconds: float, sample_every: float, max_growth_mib: float,
          mixed_clients: int, workers: int, keys: int, log: Any) -> dict[str, Any]:
    port = server.port
    stop, done = threading.Event(), threading.Event()
    tallies: list[Tally] = []

    def spawn(target: Any, *args: Any) -> threading.Thread:
        t = Tally()
        tallies.append(t)
        th = threading.Thread(target=target, args=(port, *args, t), daemon=True)
        th.start()
        return th

    load = [spawn(mixed, i, keys, stop) for i in range(mixed_clients)] + [spawn(producer, stop)]
    queue = [spawn(worker, 100 + i, done) for i in range(workers)] + [spawn(sweeper, done)]

    samples: list[tuple[float, int, int, int]] = []  # (t, rss, keys, ops)
    t0 = time.monotonic()
    print(f"soak: {seconds:.0f} s, server pid {server.pid} port {port}; t(s) rss(MiB) keys ops", file=log)
    while True:
        now = time.monotonic() - t0
        dbsize = int(server.execute("DBSIZE"))
        rss = rss_bytes(server.pid)
        ops = sum(t.ops for t in tallies)
        samples.append((now, rss, dbsize, ops))
        print(f"  {now:7.1f} {rss / 2**20:8.2f} {dbsize:6d} {ops:9d}", file=log, flush=True)
        if now >= seconds or any(t.errors for t in tallies):
            break
        time.sleep(max(0.0, min(sample_every, seconds - now)))

    stop.set()
    for th in load:
        th.join(30)
    drain_end = time.monotonic() + 120
    while time.monotonic() < drain_end and not any(t.errors for t in tallies):
        counts = [int(server.execute("ZCARD", k)) for k in (PENDING, ACTIVE, SCHEDULE, DEAD)]
        if counts == [0, 0, 0, 0]:
            break
        time.sleep(0.2)
    done.set()
    for th in queue:
        th.join(30)
    alive = sum(th.is_alive() for th in load + queue)

    merged = Tally()
    for t in tallies:
        merged.ops += t.ops
        merged.enqueued += t.enqueued
        merged.completed += t.completed
        merged.collected_dead += t.collected_dead
        merged.fails.update(t.fails)
        merged.refusals.update(t.refusals)
        merged.drops += t.drops
        merged.swept += t.swept
        merged.promoted += t.promoted
        merged.errors += t.errors

    enq = Counter(merged.enqueued)
    comp = Counter(merged.completed)
    dead = Counter(merged.collected_dead)
    rows_left = int(server.execute("EVAL", "return #redis.call('KEYS', ARGV[1])", 0, P + "job:*"))
    sets_left = [int(server.execute("ZCARD", k)) for k in (PENDING, ACTIVE, SCHEDULE, DEAD)]
    jobs = {
        "enqueued": len(merged.enqueued),
        "completed": len(merged.completed),
        "dead": len(merged.collected_dead),
        "duplicate_ids": sum(n - 1 for n in enq.values() if n > 1),
        "completed_twice": sum(1 for n in comp.values() if n > 1),
        "completed_and_dead": len(set(comp) & set(dead)),
        "lost": len(set(enq) - set(comp) - set(dead)),
        "unknown": len((set(comp) | set(dead)) - set(enq)),
        "rows_left": rows_left,
        "sets_left": sets_left,
        "fails": {k.decode(): v for k, v in merged.fails.items()},
        "dropped_leases": merged.drops,
        "swept": merged.swept,
        "promoted": merged.promoted,
        "race_refusals": dict(merged.refusals),
    }
    jobs_ok = (jobs["duplicate_ids"] == 0 and jobs["completed_twice"] == 0 and jobs["completed_and_dead"] == 0
               and jobs["lost"] == 0 and jobs["unknown"] == 0 and rows_left == 0 and sets_left == [0, 0, 0, 0]
               and jobs["enqueued"] > 0)

    memory, memory_ok = memory_verdict([(s[0], s[1]) for s in samples], max_growth_mib)
    ok = jobs_ok and memory_ok and not merged.errors and alive == 0 and server.proc.poll() is None
    result = {
        "ok": ok, "seconds": round(samples[-1][0], 1), "ops": merged.ops, "errors": merged.errors[:20],
        "threads_stuck": alive, "memory_ok": memory_ok, "jobs_ok": jobs_ok, "memory": memory, "jobs": jobs,
        "rss_samples": [[round(s[0], 1), s[1], s[2], s[3]] for s in samples],
    }
    print(f"memory: {json.dumps(memory)}", file=log)
    print(f"jobs: {json.dumps(jobs)}", file=log)
    print(f"ops: {merged.ops}; errors: {merged.errors[:5]}; verdict: {'OK' if ok else 'FAILED'}", file=log)
    return result


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python3 -m bench.soak", description=__doc__.split("\n")[0])
    g = ap.add_mutually_exclusive_group()
    g.add_argument("--minutes", type=float, help="run length in minutes (default 10)")
    g.add_argument("--seconds", type=float, help="run length in seconds")
    ap.add_argument("--sample-every", type=float, default=5.0, help="seconds between RSS samples (default 5)")
    ap.add_argument("--max-growth-mib", type=float, default=4.0,
                    help="bound on the RSS growth projected over the second half (default 4 MiB)")
    ap.add_argument("--mixed-clients", type=int, default=2, help="connections sending mixed commands")
    ap.add_argument("--workers", type=int, default=3, help="job-core worker connections")
    ap.add_argument("--keys", type=int, default=5000, help="keyspace bound of the mixed traffic, per type")
    ap.add_argument("--json", type=Path, help="also write the result (with every sample) here")
    a = ap.parse_args(argv)
    seconds = a.seconds if a.seconds is not None else 60 * (a.minutes if a.minutes is not None else 10)
    servers.pin_self()
    try:
        result = run(seconds, a.sample_every, a.max_growth_mib, a.mixed_clients, a.workers, a.keys)
    finally:
        servers.kill_all()
    if a.json:
        a.json.write_text(json.dumps(result, indent=1))
    return 0 if result["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())

"""Section 4 (growth and latency) and the fill that section 5 (memory) measures.

What is measured, exactly. One queue, ``emq:{growth}:``, holds a *backlog* of
W waiting jobs in pending and W more in schedule (W = 1,000 and 1,000,000),
and in front of it a *working set* of M jobs (M = the latency run's claim
count). Then, per round:

1. **lifecycle**: shape 1 (enqueue -> claim -> complete) on that queue, all
   connections sharing it. A claim takes the head of pending -- a
   working-set job, never a backlog job -- and the new job joins the working
   set, so the working set stays at M and the backlog at W. What the CPU per
   job measures is the cost of the ordinary job cycle when the sets it
   touches (pending: W + M; the keyspace: 2W + M rows) are big: ZADD into,
   and the head read and ZREM out of, a sorted set of W + M members, and
   hash rows among 2W others (hash-table growth, cache misses, and for
   Python the garbage collector walking a bigger heap).
2. **CLAIM latency**: redis-benchmark, 50 clients, M single claims with a
   1 ms lease: the whole working set moves to active, its leases expiring
   almost at once. The client-side round-trip p50/p99 is reported.
3. **STALLED.CHECK latency**: M / 10 sweeps with ``limit 10`` by 50 clients,
   each recovering exactly 10 expired leases back to pending (max_stalled is
   huge, so none dies). The working set is back in pending for the next
   round. p50/p99 again, client-side.

Why the backlog stays behind: pending is ordered by admission number, taken
from the queue's counter ``P..seq``. The backlog is admitted with that
counter set to 10^12 and the counter is then put back to 0, so every
working-set job (and every job a lifecycle run enqueues or a sweep requeues)
takes a smaller number and sits in front of every backlog job. Nothing in
the job core reads ``seq`` other than to INCR it, so this changes no verb's
work; it only keeps the big set's members out of the measured claims.
``check_queue`` verifies after each round that the backlog is intact (W
members scored >= 10^12, W scheduled) and nothing is left active or dead.

The scheduled backlog is far in the future (year 2100): no verb of these
runs moves it; it is there because a real queue's schedule is big too, and
its rows weigh on the keyspace (and on Python's heap).

The fill uses the executor being measured -- native ``EMQ.ENQUEUE`` /
``EMQ.SCHEDULE`` on trafikey-server, the twin scripts by EVALSHA on Valkey --
pipelined, 250 calls (about 48 KB) per batch on two connections, from the harness
pinned to the load core.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from trafikey_server.connector import Connector, ReplyError
from trafikey_server.lua import SCRIPTS

from .commands import redis_benchmark
from .lifecycle import PAYLOAD, run_lifecycle
from .memory import Probe
from .servers import Server

PREFIX = b"emq:{growth}:"
BACKLOG_SEQ = 10**12  # the backlog's admission numbers start here; the working set's at 1
RUN_AT_FAR = 4_102_444_800_000  # 2100-01-01 in ms: never due during a run
STALL_LIMIT = 10  # leases each STALLED.CHECK recovers
MAX_STALLED = 10**9  # no job ever dies of stalls in these runs


def fill(server: Server, wire: int, verb: str, n: int, *, batch: int = 250) -> float:
    """Admit n jobs with ``*`` ids and 100-byte payloads through ``verb``
    (enqueue, or schedule far in the future), pipelined. Returns jobs/s."""
    conns = [Connector(port=server.port, wire=wire, timeout=600) for _ in range(2)]
    try:
        q = conns[0].queue(PREFIX)
        args: list[bytes | str | int] = [b"*", PAYLOAD] + ([RUN_AT_FAR] if verb == "schedule" else [])
        req = conns[0].request(verb, q.keys(verb), args)
        left = n
        t0 = time.perf_counter()
        while left:
            step = []
            for c in conns:
                b = min(batch, left)
                if b:
                    c.conn.send(req * b)
                    step.append((c, b))
                    left -= b
            for c, b in step:
                for _ in range(b):
                    r = c.conn.read()
                    if r is None or isinstance(r, ReplyError):
                        raise RuntimeError(f"{server.label}: filling {verb} answered {r!r}")
        return n / max(time.perf_counter() - t0, 1e-9)
    finally:
        for c in conns:
            c.close()


def prepare_queue(server: Server, wire: int, waiting: int, working: int,
                  on_pending_filled: Callable[[], None] | None = None,
                  log: Callable[[str], None] = print) -> None:
    """Backlog (``waiting`` pending + ``waiting`` scheduled, behind everything),
    then the working set in front. ``on_pending_filled`` runs right after the
    pending backlog is in (the memory probe's 'after')."""
    server.execute("SET", PREFIX + b"seq", BACKLOG_SEQ)
    rate = fill(server, wire, "enqueue", waiting)
    if on_pending_filled is not None:
        on_pending_filled()
    rate_s = fill(server, wire, "schedule", waiting)
    server.execute("SET", PREFIX + b"seq", 0)
    fill(server, wire, "enqueue", working)
    log(f"  filled {server.label}: {waiting:,} pending ({rate:,.0f}/s) + {waiting:,} scheduled "
        f"({rate_s:,.0f}/s) + {working:,} working")


def check_queue(server: Server, waiting: int, working: int) -> None:
    """The backlog untouched, the working set back in pending, nothing left active or dead."""
    p = PREFIX
    got = {
        "backlog in pending": server.execute("ZCOUNT", p + b"pending", BACKLOG_SEQ, "+inf"),
        "pending": server.execute("ZCARD", p + b"pending"),
        "schedule": server.execute("ZCARD", p + b"schedule"),
        "active": server.execute("ZCARD", p + b"active"),
        "dead": server.execute("ZCARD", p + b"dead"),
    }
    want = {"backlog in pending": waiting, "pending": waiting + working, "schedule": waiting, "active": 0, "dead": 0}
    if got != want:
        raise RuntimeError(f"{server.label}: the growth queue drifted: {got} != {want}")


def _call(wire: int, name: str, keys: list[bytes], args: list[str]) -> list[str]:
    """A job-core call as redis-benchmark's custom-command arguments, on either wire."""
    head = [f"EMQ.{name.upper()}"] if wire == 6 else ["EVALSHA", SCRIPTS[name].sha1]
    return [*head, str(len(keys)), *(k.decode() for k in keys), *args]


def latency(server: Server, wire: int, working: int, clients: int) -> dict[str, dict[str, float]]:
    """CLAIM then STALLED.CHECK under ``clients`` concurrent redis-benchmark clients."""
    p = PREFIX
    claim = _call(wire, "claim", [p + b"pending", p + b"active", p], ["1"])
    res_claim = redis_benchmark(server, claim, clients=clients, requests=working)
    if server.execute("ZCARD", p + b"active") != working:
        raise RuntimeError(f"{server.label}: the claim run did not lease exactly the working set")
    time.sleep(0.05)  # every 1 ms lease is now past its deadline
    sweep = _call(wire, "stalled.check", [p + b"active", p + b"pending", p + b"dead", p],
                  [str(MAX_STALLED), str(STALL_LIMIT)])
    res_sweep = redis_benchmark(server, sweep, clients=clients, requests=working // STALL_LIMIT)
    return {"claim": res_claim, "stalled": res_sweep}


def run_growth(pairs: list[tuple[Server, int]], *, waiting: int, working: int, rounds: int, jobs: int,
               procs: int, conns: int, batch: int, clients: int,
               record: Callable[[str, tuple[str, ...], dict[str, float]], None],
               log: Callable[[str], None], memory: bool = False) -> None:
    """Fill every (server, wire), then ``rounds`` rounds of lifecycle + latency,
    the servers alternating. With ``memory``, the pending fill is also the
    memory probe (section 5)."""
    if working % STALL_LIMIT:
        raise ValueError(f"the working set must be a multiple of {STALL_LIMIT}")
    size = f"{waiting:,}"
    for server, wire in pairs:
        probe = Probe(server).before() if memory else None

        def after(server: Server = server, probe: Probe | None = probe) -> None:
            if probe is not None:
                record("memory", (server.label,), probe.after(waiting))

        prepare_queue(server, wire, waiting, working, after, log)
    for r in range(rounds):
        for server, wire in pairs:
            res = run_lifecycle(server, wire=wire, shape=1, jobs=jobs, procs=procs, conns=conns, batch=batch,
                                prefix=PREFIX)
            record("growth", (size, "lifecycle", server.label), res)
            log(f"  round {r + 1} waiting {size:>9} lifecycle {server.label:9} {res['jobs_per_s']:>9,.0f} jobs/s "
                f"{res['cpu_us']:7.1f} µs/job  gen core {res['gen_busy_pct']:.0f}%")
        for server, wire in pairs:
            lat = latency(server, wire, working, clients)
            check_queue(server, waiting, working)
            for what, res in lat.items():
                record("growth", (size, what, server.label), res)
                log(f"  round {r + 1} waiting {size:>9} {what:9} {server.label:9} p50 {res['p50_ms']:.3f} ms "
                    f"p99 {res['p99_ms']:.3f} ms  ({res['rps']:,.0f}/s)")

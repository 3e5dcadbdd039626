"""Section 3: the job-lifecycle load generator and its driver.

Two shapes, each job going through every step:

- ``1``: enqueue -> claim -> complete (3 requests a job);
- ``2``: enqueue -> claim -> fail (back to pending, backoff 0) -> claim ->
  complete (5 requests a job).

The generator speaks through ``trafikey_server.connector``: a ``Connector``
does the handshake (wire 6 checks ``EMQ.VERSION`` and the brand
``echomq:6.0.0``; wire 4 checks ``echomq:4.0.0``) and its ``request()`` is the
reference for the bytes each call travels as -- native verbs on wire 6,
``EVALSHA`` of the twin scripts on wire 4. Requests are built from templates
checked byte for byte against ``request()`` at start-up, so the client stays
cheap: the point is to measure the server, not the client.

How it keeps up: each worker process holds several connections and drives
them in lock step, one batch (100-500 calls) per connection per step: it
writes the batch on every connection, then reads the replies of each, so the
server always has a full pipeline to work on while the worker parses. The
driver starts ``procs`` such workers pinned to the load core, waits until all
have connected, and only then opens the measured window and says "go", so
Python start-up and handshakes are outside the window. Each worker reports
its own CPU; the driver reads the load core's busy fraction, and the report
flags a row whose generator core was saturated.

Queues: by default every connection has a queue of its own
(``emq:{lc-<pid>-<k>}:``), so each claim takes exactly the job its
connection just enqueued (shape 2 checks that the second claim returns the
failed job with token 2). With ``--prefix`` all connections share one queue
(the growth section's big queue); then only shape 1 is allowed, and the
claims take the head of pending, whichever job that is.

Every reply is checked (ids, ``pending``, ``1``); a reply that is not what
the shape expects aborts the run rather than counting a failed call as work.

Worker entry point: ``python3 -m bench.lifecycle --port N --wire 6 ...``.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import select
import subprocess
import sys
import time
from collections.abc import Sequence
from typing import Any

from trafikey_server.connector import Connector, ReplyError
from trafikey_server.lua import SCRIPTS

from .cpu import Window, generator_busy
from .servers import LOAD_CORE, Server, pinned, reap, spawn

PAYLOAD = b"p" * 100
LEASE_MS = 60_000
# the scripts a wire-4 run needs, loaded before any measured window (never a NOSCRIPT inside one)
TWINS_USED = ("enqueue", "schedule", "claim", "fail", "complete", "stalled.check")
REQUESTS_PER_JOB = {1: 3, 2: 5}


def load_twins(server: Server) -> None:
    """SCRIPT LOAD the twins a run uses, so the measured EVALSHA calls never miss."""
    for name in TWINS_USED:
        sha = server.execute("SCRIPT", "LOAD", SCRIPTS[name].source)
        if sha.decode() != SCRIPTS[name].sha1:
            raise RuntimeError(f"{server.label}: SCRIPT LOAD {name} answered {sha!r}")


def brand_wire4(server: Server) -> None:
    """Mark a plain server for wire 4 as EchoMQ does: ``SET {emq}:version echomq:4.0.0``."""
    server.execute("SET", "{emq}:version", "echomq:4.0.0")


def _enc(parts: Sequence[bytes | str | int]) -> bytes:
    out = []
    for p in parts:
        b = p if isinstance(p, bytes) else str(p).encode()
        out.append(b"$%d\r\n%s\r\n" % (len(b), b))
    return b"".join(out)


class Template:
    """The bytes of one job-core call with its KEYS fixed and its ARGV filled in per call."""

    def __init__(self, c: Connector, name: str, keys: Sequence[bytes]) -> None:
        if c.wire == 6:
            head: list[bytes | str | int] = [b"EMQ." + name.upper().encode(), len(keys), *keys]
        else:
            head = [b"EVALSHA", SCRIPTS[name].sha1, len(keys), *keys]
        self.n = len(head)
        self.head = _enc(head)
        sample = {"complete": [b"17", b"3"], "fail": [b"17", b"3", b"3", b"0"]}[name]
        if self(*sample) != c.request(name, keys, sample):  # the connector is the reference
            raise RuntimeError(f"request template for {name} differs from the connector's")

    def __call__(self, *args: bytes) -> bytes:
        return b"*%d\r\n" % (self.n + len(args)) + self.head + b"".join(b"$%d\r\n%s\r\n" % (len(a), a) for a in args)


class Lane:
    """One connection and its queue."""

    def __init__(self, port: int, wire: int, prefix: bytes) -> None:
        self.c = Connector(port=port, wire=wire, timeout=600)
        q = self.c.queue(prefix)
        self.enqueue = self.c.request("enqueue", q.keys("enqueue"), [b"*", PAYLOAD])
        self.claim = self.c.request("claim", q.keys("claim"), [LEASE_MS])
        self.fail = Template(self.c, "fail", q.keys("fail"))
        self.complete = Template(self.c, "complete", q.keys("complete"))
        self.read = self.c.conn.read
        self.send = self.c.conn.send


def _replies(lane: Lane, n: int) -> list[Any]:
    out = [lane.read() for _ in range(n)]
    for r in out:
        if isinstance(r, ReplyError):
            raise RuntimeError(f"error reply: {r}")
    return out


def _claims(lane: Lane, n: int) -> list[tuple[bytes, bytes]]:
    got = _replies(lane, n)
    out = []
    for r in got:
        if not r:
            raise RuntimeError("a claim found pending empty: the run would count a no-op as work")
        out.append((r[0], str(r[2]).encode()))
    return out


def run_worker(port: int, wire: int, shape: int, jobs: int, conns: int, batch: int,
               prefix: bytes | None) -> dict[str, Any]:
    """Run ``jobs`` jobs through ``shape`` over ``conns`` lock-stepped connections, after "go" on stdin."""
    if prefix is not None and shape != 1:
        raise ValueError("a shared queue only runs shape 1 (claims take the head, whichever job it is)")
    lanes = [Lane(port, wire, prefix or b"emq:{lc-%d-%d}:" % (os.getpid(), k)) for k in range(conns)]
    left = [jobs // conns + (1 if k < jobs % conns else 0) for k in range(conns)]
    print("ready", flush=True)
    if sys.stdin.readline().strip() != "go":
        raise SystemExit(1)
    ru0 = resource.getrusage(resource.RUSAGE_SELF)
    t0 = time.time()
    while any(left):
        step = [(lane, min(batch, n)) for lane, n in zip(lanes, left, strict=True) if n]
        for lane, b in step:
            lane.send(lane.enqueue * b)
        for lane, b in step:
            if any(r is None for r in _replies(lane, b)):
                raise RuntimeError("an enqueue of '*' answered nil")
        for lane, b in step:
            lane.send(lane.claim * b)
        held = [_claims(lane, b) for lane, b in step]
        if shape == 2:
            for (lane, _), h in zip(step, held, strict=True):
                lane.send(b"".join(lane.fail(j, t, b"3", b"0") for j, t in h))
            for lane, b in step:
                if any(r != b"pending" for r in _replies(lane, b)):
                    raise RuntimeError("a fail with backoff 0 did not answer pending")
            for lane, b in step:
                lane.send(lane.claim * b)
            again = [_claims(lane, b) for lane, b in step]
            for h, a in zip(held, again, strict=True):
                if [j for j, _ in h] != [j for j, _ in a] or any(t != b"2" for _, t in a):
                    raise RuntimeError("the second claim did not return the failed jobs with token 2")
            held = again
        for (lane, _), h in zip(step, held, strict=True):
            lane.send(b"".join(lane.complete(j, t) for j, t in h))
        for lane, b in step:
            if any(r != 1 for r in _replies(lane, b)):
                raise RuntimeError("a complete did not answer 1")
        left = [n - min(batch, n) for n in left]
    t1 = time.time()
    ru1 = resource.getrusage(resource.RUSAGE_SELF)
    for lane in lanes:
        lane.c.close()
    cpu = (ru1.ru_utime - ru0.ru_utime) + (ru1.ru_stime - ru0.ru_stime)
    return {"jobs": jobs, "t0": t0, "t1": t1, "cpu_s": cpu}


def _readline(p: subprocess.Popen[str], timeout: float, what: str) -> str:
    assert p.stdout is not None
    ready, _, _ = select.select([p.stdout], [], [], timeout)
    line = p.stdout.readline() if ready else ""
    if not line:
        err = ""
        if p.poll() is not None and p.stderr is not None:
            err = p.stderr.read()[-2000:]
        raise RuntimeError(f"lifecycle worker gave no {what} (exit {p.poll()}): {err}")
    return line


def run_lifecycle(server: Server, *, wire: int, shape: int, jobs: int, procs: int, conns: int, batch: int,
                  prefix: bytes | None = None, timeout: float = 900.0) -> dict[str, float]:
    """One measured lifecycle run: ``procs`` worker processes on the load core.
    Returns jobs/s, the server's CPU µs per job and the generator's load."""
    procs = max(1, min(procs, jobs))
    share = [jobs // procs + (1 if k < jobs % procs else 0) for k in range(procs)]
    ps: list[subprocess.Popen[str]] = []
    try:
        for n in share:
            argv = [sys.executable, "-m", "bench.lifecycle", "--port", str(server.port), "--wire", str(wire),
                    "--shape", str(shape), "--jobs", str(n), "--conns", str(max(1, min(conns, n))),
                    "--batch", str(batch)]
            if prefix is not None:
                argv += ["--prefix", prefix.decode()]
            ps.append(spawn(pinned(LOAD_CORE, argv), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True))
        for p in ps:
            if _readline(p, 60, "ready line").strip() != "ready":
                raise RuntimeError("lifecycle worker did not say ready")
        win = Window({"server": server.pid}).start()
        for p in ps:
            assert p.stdin is not None
            p.stdin.write("go\n")
            p.stdin.flush()
        results = [json.loads(_readline(p, timeout, "result")) for p in ps]
        win.stop()
        for p in ps:
            p.wait(30)
    finally:
        for p in ps:
            reap(p)
    done = sum(r["jobs"] for r in results)
    gen_cpu = sum(r["cpu_s"] for r in results)
    span = max(r["t1"] for r in results) - min(r["t0"] for r in results)
    return {
        "jobs_per_s": done / span if span > 0 else 0.0,
        "cpu_us": win.cpu["server"] * 1e6 / done,
        "gen_cpu_pct": 100 * gen_cpu / win.wall if win.wall else 0.0,
        "gen_busy_pct": 100 * generator_busy(win, gen_cpu),
        "server_core_busy_pct": 100 * win.busy.get(0, 0.0),
        "wall_s": win.wall,
        "jobs": done,
        "requests": done * REQUESTS_PER_JOB[shape],
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="one lifecycle load-generator process (started by the harness)")
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--wire", type=int, choices=(4, 6), required=True)
    ap.add_argument("--shape", type=int, choices=(1, 2), required=True)
    ap.add_argument("--jobs", type=int, required=True)
    ap.add_argument("--conns", type=int, default=4)
    ap.add_argument("--batch", type=int, default=200)
    ap.add_argument("--prefix", default=None, help="one shared queue (shape 1 only)")
    a = ap.parse_args(argv)
    res = run_worker(a.port, a.wire, a.shape, a.jobs, a.conns, a.batch,
                     a.prefix.encode() if a.prefix is not None else None)
    print(json.dumps(res), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""``python3 -m bench``: trafikey-server against valkey-server 9.1.2, every section, one command.

    python3 -m bench                      # full run, 5 rounds (about 15 minutes on 2 cores)
    python3 -m bench --rounds 3           # shorter
    python3 -m bench --quick              # seconds: proves the harness end to end, asserts no timing
    python3 -m bench --write-results      # also bench/RESULTS.md and bench/ratios.png

Why one process drives everything: the sections share the machine, the
pinning and the cleanup, and the report compares across them (the targets
mix commands, lifecycle, growth and memory), so they are run and written
together. Each section starts its own servers and stops them before the
next, so no section inherits another's keyspace. See bench/README.md.
"""

from __future__ import annotations

import argparse
import shlex
import sys
import time
from collections.abc import Callable
from pathlib import Path

from . import blocking, commands, growth, lifecycle, memory, pubsub, report, servers, snapshot, streams
from .report import FAKE, PURE, TRAFIKEY, TWINS, TWINS_PURE, VALKEY, Results

BENCH_DIR = Path(__file__).resolve().parent
SECTIONS = ("commands", "lifecycle", "growth", "blocking", "pubsub", "streams", "snapshot")


def parse(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog="python3 -m bench", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="tiny counts, 1 round: proves the harness works")
    ap.add_argument("--rounds", type=int, default=None, help="alternating rounds per measurement (default 5; quick 1)")
    ap.add_argument("--sections", default=",".join(SECTIONS),
                    help="comma-separated subset of commands,lifecycle,growth,blocking,pubsub,streams,snapshot"
                         " (growth includes memory)")
    ap.add_argument("--out", type=Path, default=BENCH_DIR / "out", help="where results.md/json and ratios.png go")
    ap.add_argument("--write-results", action="store_true", help="also write bench/RESULTS.md and bench/ratios.png")
    ap.add_argument("--requests", type=int, default=None, help="redis-benchmark requests per run at P1 (100,000)")
    ap.add_argument("--p16-requests", type=int, default=None, help="... at P16 (500,000)")
    ap.add_argument("--commands", default=None,
                    help="comma-separated subset of the commands section's rows (all of them)")
    ap.add_argument("--clients", type=int, default=None, help="redis-benchmark clients (50)")
    ap.add_argument("--jobs", type=int, default=None, help="jobs per lifecycle run (40,000)")
    ap.add_argument("--fake-jobs", type=int, default=None, help="jobs per fakeredis lifecycle run (400)")
    ap.add_argument("--procs", type=int, default=None, help="lifecycle generator processes (2)")
    ap.add_argument("--conns", type=int, default=None, help="connections per generator process (4)")
    ap.add_argument("--batch", type=int, default=None, help="calls per pipelined batch (200)")
    ap.add_argument("--growth-sizes", default=None, help="waiting jobs, small,large (1000,1000000)")
    ap.add_argument("--working", type=int, default=None, help="growth working set = latency claims (20,000)")
    ap.add_argument("--wakeups", type=int, default=None, help="blocked-client wake-ups per run (2,000)")
    ap.add_argument("--pubsub-messages", type=int, default=None,
                    help="messages delivered per pub/sub run, whatever the fan-out (200,000)")
    ap.add_argument("--stream-entries", type=int, default=None,
                    help="stream entries of the memory section's stream row (1,000,000)")
    ap.add_argument("--stream-cycle-entries", type=int, default=None,
                    help="entries per XADD/XREADGROUP/XACK run of the streams section (100,000)")
    ap.add_argument("--snapshot-keys", type=int, default=None,
                    help="keys of every type saved and restored by the snapshot section (100,000)")
    ap.add_argument("--no-fakeredis", action="store_true", help="skip executor (d)")
    ap.add_argument("--no-pure", action="store_true",
                    help="with a compiled build, skip the second, pure-Python trafikey-server")
    a = ap.parse_args(argv)
    q = a.quick
    defaults = {
        "rounds": (1, 5), "requests": (2_000, 100_000), "p16_requests": (8_000, 500_000), "clients": (10, 50),
        "jobs": (3_000, 40_000), "fake_jobs": (20, 400), "procs": (1, 2), "conns": (2, 4), "batch": (50, 200),
        "growth_sizes": ("1000,10000", "1000,1000000"), "working": (500, 20_000), "wakeups": (50, 2_000),
        "pubsub_messages": (2_000, 200_000), "stream_entries": (5_000, 1_000_000),
        "stream_cycle_entries": (2_000, 100_000), "snapshot_keys": (2_000, 100_000),
    }
    for name, (quick, full) in defaults.items():
        if getattr(a, name) is None:
            setattr(a, name, quick if q else full)
    a.sections = [s.strip() for s in a.sections.split(",") if s.strip()]
    bad = set(a.sections) - set(SECTIONS)
    if bad:
        ap.error(f"unknown sections: {', '.join(sorted(bad))}")
    a.sizes = [int(x) for x in a.growth_sizes.split(",")]
    # A compiled build is measured beside the pure modules it replaces, in the same run.
    a.compiled = servers.compiled_build()
    a.pure = bool(a.compiled) and not a.no_pure
    names = {t.name for t in commands.TESTS}
    a.only = None if a.commands is None else {c.strip().upper() for c in a.commands.split(",") if c.strip()}
    if a.only is not None and a.only - names:
        ap.error(f"unknown commands: {', '.join(sorted(a.only - names))} (known: {', '.join(sorted(names))})")
    return a


def section_commands(a: argparse.Namespace, res: Results, log: Callable[[str], None]) -> None:
    log("commands: redis-benchmark")
    started: list[servers.Server] = []
    try:
        started.append(servers.start_valkey(VALKEY))
        started.append(servers.start_trafikey(TRAFIKEY))
        if a.pure:
            started.append(servers.start_trafikey(PURE, pure=True))
        commands.run_commands(started, rounds=a.rounds, requests=a.requests, p16_requests=a.p16_requests,
                              clients=a.clients, record=res.record, log=log, only=a.only)
    finally:
        for s in started:
            s.stop()


def section_lifecycle(a: argparse.Namespace, res: Results, log: Callable[[str], None]) -> None:
    log("lifecycle: the job core, native and scripted")
    started: list[servers.Server] = []
    try:
        t6 = servers.start_trafikey(TRAFIKEY, "echomq:6.0.0")
        started.append(t6)
        t4 = servers.start_trafikey(TWINS, "echomq:4.0.0")
        started.append(t4)
        v = servers.start_valkey(VALKEY)
        started.append(v)
        lifecycle.brand_wire4(v)
        variants: list[tuple[servers.Server, int, int]] = [(t6, 6, a.jobs), (t4, 4, a.jobs), (v, 4, a.jobs)]
        if a.pure:
            p6 = servers.start_trafikey(PURE, "echomq:6.0.0", pure=True)
            started.append(p6)
            p4 = servers.start_trafikey(TWINS_PURE, "echomq:4.0.0", pure=True)
            started.append(p4)
            variants[2:2] = [(p6, 6, a.jobs), (p4, 4, a.jobs)]
        why = "--no-fakeredis was given" if a.no_fakeredis else servers.fakeredis_available()
        if why is None:
            f = servers.start_fakeredis(FAKE)
            started.append(f)
            lifecycle.brand_wire4(f)
            variants.append((f, 4, a.fake_jobs))
            res.notes.append(f"(d) fakeredis runs {a.fake_jobs:,} jobs per run instead of {a.jobs:,}: it is a"
                             " thread-per-connection Python server, far slower than the others.")
        else:
            res.notes.append(f"(d) fakeredis was not run: {why}.")
        for s, wire, _ in variants:
            if wire == 4:
                lifecycle.load_twins(s)
        for r in range(a.rounds):
            for shape in (1, 2):
                for s, wire, jobs in variants:
                    fake = s.kind == "fakeredis"
                    out = lifecycle.run_lifecycle(
                        s, wire=wire, shape=shape, jobs=jobs, procs=1 if fake else a.procs,
                        conns=min(2, a.conns) if fake else a.conns, batch=min(20, a.batch) if fake else a.batch)
                    res.record("lifecycle", (str(shape), s.label), out)
                    log(f"  round {r + 1} shape {shape} {s.label:14} {out['jobs_per_s']:>9,.0f} jobs/s "
                        f"{out['cpu_us']:8.1f} µs/job  gen core {out['gen_busy_pct']:.0f}%")
    finally:
        for s in started:
            s.stop()


def section_growth(a: argparse.Namespace, res: Results, log: Callable[[str], None]) -> None:
    for i, size in enumerate(a.sizes):
        last = i == len(a.sizes) - 1
        log(f"growth: {size:,} waiting" + (" (and memory)" if last else ""))
        started: list[servers.Server] = []
        try:
            t6 = servers.start_trafikey(TRAFIKEY, "echomq:6.0.0")
            started.append(t6)
            v = servers.start_valkey(VALKEY)
            started.append(v)
            lifecycle.brand_wire4(v)
            lifecycle.load_twins(v)
            growth.run_growth([(t6, 6), (v, 4)], waiting=size, working=a.working, rounds=a.rounds, jobs=a.jobs,
                              procs=a.procs, conns=a.conns, batch=a.batch, clients=a.clients, record=res.record,
                              log=log, memory=last)
        finally:
            for s in started:
                s.stop()
    log(f"memory: {a.stream_entries:,} stream entries")
    for start in (lambda: servers.start_trafikey(TRAFIKEY, "none"), lambda: servers.start_valkey(VALKEY)):
        server = start()
        try:
            res.record("memory_stream", (server.label,), memory.stream_row(server, a.stream_entries))
        finally:
            server.stop()


def section_blocking(a: argparse.Namespace, res: Results, log: Callable[[str], None]) -> None:
    log("blocking: waking clients blocked in BZPOPMIN")
    started: list[servers.Server] = []
    try:
        started.append(servers.start_valkey(VALKEY))
        started.append(servers.start_trafikey(TRAFIKEY))
        blocking.run_blocking(started, rounds=a.rounds, wakeups=a.wakeups, record=res.record, log=log)
    finally:
        for s in started:
            s.stop()


def section_pubsub(a: argparse.Namespace, res: Results, log: Callable[[str], None]) -> None:
    log("pubsub: PUBLISH to 1, 10 and 100 subscribers")
    started: list[servers.Server] = []
    try:
        started.append(servers.start_valkey(VALKEY))
        started.append(servers.start_trafikey(TRAFIKEY))
        pubsub.run_pubsub(started, rounds=a.rounds, messages=a.pubsub_messages, batch=a.batch,
                          record=res.record, log=log)
    finally:
        for s in started:
            s.stop()


def section_streams(a: argparse.Namespace, res: Results, log: Callable[[str], None]) -> None:
    log("streams: XADD, XREADGROUP and XACK with 1 and 10 consumers")
    started: list[servers.Server] = []
    try:
        started.append(servers.start_valkey(VALKEY))
        started.append(servers.start_trafikey(TRAFIKEY))
        streams.run_streams(started, rounds=a.rounds, entries=a.stream_cycle_entries, record=res.record, log=log)
    finally:
        for s in started:
            s.stop()


def section_snapshot(a: argparse.Namespace, res: Results, log: Callable[[str], None]) -> None:
    log(f"snapshot: TRAFIKEY.SNAPSHOT SAVE and RESTORE of {a.snapshot_keys:,} keys, Valkey's DEBUG RELOAD")
    started: list[servers.Server] = []
    try:
        v = servers.start_valkey(VALKEY, "--enable-debug-command", "yes")
        started.append(v)
        t = servers.start_trafikey(TRAFIKEY, "none", "--enable-debug-command", "yes")
        started.append(t)
        snapshot.run_snapshot(t, v, rounds=a.rounds, keys=a.snapshot_keys, record=res.record, log=log)
    finally:
        for s in started:
            s.stop()


def main(argv: list[str] | None = None) -> int:
    a = parse(argv)
    t0 = time.monotonic()

    def log(msg: str) -> None:
        print(f"[{time.monotonic() - t0:6.1f}s] {msg}", flush=True)

    servers.pin_self()
    res = Results()
    res.meta = {
        "command": "python3 -m bench" + ("" if argv is None and len(sys.argv) <= 1 else
                                         " " + shlex.join(sys.argv[1:] if argv is None else argv)),
        "quick": a.quick, "rounds": a.rounds, "requests": a.requests, "p16_requests": a.p16_requests,
        "clients": a.clients, "latency_clients": a.clients, "jobs": a.jobs, "fake_jobs": a.fake_jobs,
        "procs": a.procs, "conns": a.conns, "batch": a.batch, "working": a.working, "wakeups": a.wakeups,
        "pubsub_messages": a.pubsub_messages, "stream_cycle_entries": a.stream_cycle_entries,
        "snapshot_keys": a.snapshot_keys,
        "pinning": servers.pinning_note(), "machine": report.machine(), "sections": a.sections,
        "compiled": a.compiled, "pure": a.pure,
    }
    if not servers.PINNED:
        res.notes.append(servers.pinning_note())
    try:
        for name, fn in (("commands", section_commands), ("lifecycle", section_lifecycle),
                         ("growth", section_growth), ("blocking", section_blocking), ("pubsub", section_pubsub),
                         ("streams", section_streams), ("snapshot", section_snapshot)):
            if name in a.sections:
                fn(a, res, log)
    finally:
        servers.kill_all()
    res.meta["elapsed_s"] = round(time.monotonic() - t0, 1)
    res.meta["pids"] = list(servers.STARTED)
    a.out.mkdir(parents=True, exist_ok=True)
    why = report.png(res, a.out / "ratios.png")
    if why is not None:
        res.notes.append(why)
    text = report.markdown(res)
    (a.out / "results.md").write_text(text)
    (a.out / "results.json").write_text(res.to_json())
    if a.write_results:
        (BENCH_DIR / "RESULTS.md").write_text(text)
        if why is None:
            (BENCH_DIR / "ratios.png").write_bytes((a.out / "ratios.png").read_bytes())
    print(text)
    log(f"wrote {a.out / 'results.md'}" + (" and bench/RESULTS.md" if a.write_results else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())

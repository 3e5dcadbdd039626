"""redis-benchmark against trafikey-server and Valkey 9.1.2, in one run.

Each server is pinned to core 0 and redis-benchmark to core 1 (taskset), and
the two servers are measured alternately, A B A B, over several rounds, so
drift on a shared machine hits both alike. Reports requests per second and
server CPU microseconds per request (from /proc/PID/stat), medians over the
rounds, and the ratio trafikey / Valkey.

    python bench/commands.py                # full run
    python bench/commands.py --quick        # a few seconds, proves the harness
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from servers import Proc, free_port, valkey_binary, wait_port

ROOT = Path(__file__).resolve().parent.parent
TICKS = os.sysconf("SC_CLK_TCK")

# name -> redis-benchmark arguments after the common ones
TESTS = {
    "PING": ["-t", "ping_mbulk"],
    "SET": ["-t", "set"],
    "GET": ["-t", "get"],
    "INCR": ["-t", "incr"],
    "HSET": ["-t", "hset"],
    "ZADD": ["-t", "zadd"],
    "ZPOPMIN": ["-t", "zpopmin"],
    "ZRANGE": ["ZRANGE", "bench:z", "0", "9", "WITHSCORES"],
}


def cpu_ticks(pid: int) -> int:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])  # utime + stime


def pinned(core: int, argv: list[str]) -> list[str]:
    return (["taskset", "-c", str(core)] if shutil.which("taskset") else []) + argv


def start(kind: str) -> Proc:
    port = free_port()
    if kind == "valkey":
        argv = [valkey_binary(), "--port", str(port), "--save", "", "--appendonly", "no"]
        env = None
    else:
        argv = [sys.executable, "-m", "trafikey_server", "--port", str(port), "--loglevel", "warning"]
        env = dict(os.environ, PYTHONPATH=str(ROOT))
    p = Proc(pinned(0, argv), port, cwd=str(ROOT), env=env)
    wait_port(port, p.proc)
    return p


def seed_zrange(port: int) -> None:
    members = []
    for i in range(100):
        members += [str(i), f"m{i}"]
    subprocess.run(["redis-cli", "-p", str(port), "ZADD", "bench:z", *members], check=True, capture_output=True)


def run_one(p: Proc, test: str, pipeline: int, requests: int, clients: int) -> tuple[float, float]:
    argv = pinned(1, ["redis-benchmark", "-p", str(p.port), "-c", str(clients), "-n", str(requests),
                      "-P", str(pipeline), "-r", "1000", "-q", "--csv", *TESTS[test]])
    before = cpu_ticks(p.proc.pid)
    out = subprocess.run(argv, check=True, capture_output=True, text=True).stdout
    used = cpu_ticks(p.proc.pid) - before
    rows = [line for line in out.splitlines() if line and not line.startswith('"test"')]
    rps = float(rows[-1].split(",")[1].strip('"'))
    return rps, used / TICKS * 1e6 / requests


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--requests", type=int, default=200_000)
    ap.add_argument("--tests", default=",".join(TESTS))
    args = ap.parse_args()
    rounds, requests = (1, 5000) if args.quick else (args.rounds, args.requests)
    tests = args.tests.split(",")
    servers = {"valkey": start("valkey"), "trafikey": start("trafikey")}
    try:
        for p in servers.values():
            seed_zrange(p.port)
        results: dict[tuple[str, int, str], list[tuple[float, float]]] = {}
        for _ in range(rounds):
            for test in tests:
                for pipeline in (1, 16):
                    for kind in ("valkey", "trafikey"):
                        n = requests * (4 if pipeline == 16 else 1)
                        results.setdefault((test, pipeline, kind), []).append(
                            run_one(servers[kind], test, pipeline, n, 50))
        print("| command | pipeline | valkey rps | trafikey rps | rps ratio "
              "| valkey µs/req | trafikey µs/req | CPU ratio |")
        print("|---|---|---|---|---|---|---|---|")
        for test in tests:
            for pipeline in (1, 16):
                v = results[(test, pipeline, "valkey")]
                t = results[(test, pipeline, "trafikey")]
                vr, tr = statistics.median(x[0] for x in v), statistics.median(x[0] for x in t)
                vc, tc = statistics.median(x[1] for x in v), statistics.median(x[1] for x in t)
                print(f"| {test} | {pipeline} | {vr:,.0f} | {tr:,.0f} | {tr / vr:.2f} | "
                      f"{vc:.2f} | {tc:.2f} | {tc / vc if vc else float('nan'):.2f} |")
    finally:
        for p in servers.values():
            p.stop()


if __name__ == "__main__":
    main()

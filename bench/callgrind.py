"""Instructions per request, counted by callgrind: the profile bench/README.md quotes.

Wall-clock figures on a two-core machine drift by tens of percent between
runs; callgrind's instruction counts do not (the same binary, inputs and
hash seed give the same total whatever else the machine does), so every
before/after comparison of the per-request path is made with this.

One trafikey-server runs under ``valgrind --tool=callgrind`` with
``PYTHONHASHSEED=0``. For each test: a warm-up (the same load, unmeasured,
so the first-call costs of a code path are outside the count), then the
counters are zeroed (``callgrind_control -z``), the measured load runs, and
the counters are dumped (``callgrind_control -d``). The dump's total divided
by the requests (or jobs) of the measured load is the figure.

    python3 -m bench.callgrind                       # GET SET INCR ZADD LPUSH XADD PFADD, lifecycle 1 and 2
    python3 -m bench.callgrind --tests GET,SET --requests 20000
    python3 -m bench.callgrind --pure                # the same on TRAFIKEY_PURE_PYTHON=1
    python3 -m bench.callgrind --lifecycle twins     # the twin scripts (EVALSHA, wire 4) in place of the verbs

Needs valgrind (``apt-get install valgrind``) and Debian's redis-benchmark.
"""

from __future__ import annotations

import argparse
import glob
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from trafikey_server.util import native
from trafikey_server.util.procs import free_port

from .commands import TESTS, Test
from .servers import ROOT, Server

DEFAULT_TESTS = ("GET", "SET", "INCR", "ZADD", "LPUSH", "XADD", "PFADD")
_TOTALS = re.compile(rb"^(?:summary|totals):\s*(\d+)", re.M)


class Counted:
    """A server under callgrind, with its counters zeroed and dumped on demand."""

    def __init__(self, pure: bool, brand: str) -> None:
        self.dir = tempfile.mkdtemp(prefix="bench-callgrind-")
        port = free_port()
        env = dict(os.environ, PYTHONHASHSEED="0")
        env.pop(native.PURE_ENV, None)
        if pure:
            env[native.PURE_ENV] = "1"
        argv = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={self.dir}/cg.%p",
                sys.executable, "-m", "trafikey_server", "--port", str(port), "--bind", "127.0.0.1",
                "--loglevel", "warning", "--save", "", "--emq-brand", brand, "--dir", self.dir]
        self.log = open(Path(self.dir) / "server.log", "wb")  # closed in stop()
        # A group of its own: stop() (servers.reap) signals the group, and
        # without one the server under valgrind was left running.
        self.proc = subprocess.Popen(argv, cwd=str(ROOT), env=env, stdout=self.log, stderr=subprocess.STDOUT,
                                     start_new_session=True)
        self.server = Server.__new__(Server)  # the harness's helpers, on a process started here
        self.server.kind, self.server.label, self.server.port = "trafikey", "callgrind", port
        self.server.proc = self.proc
        self.server.logpath = Path(self.dir) / "server.log"
        self.server._conn = None
        self.server._wait_ready(timeout=300.0)

    def control(self, flag: str) -> None:
        subprocess.run(["callgrind_control", flag, str(self.proc.pid)], check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=300)

    def zero(self) -> None:
        self.control("-z")

    def dump(self) -> int:
        before = set(glob.glob(f"{self.dir}/cg.{self.proc.pid}.*"))
        self.control("-d")
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            new = sorted(set(glob.glob(f"{self.dir}/cg.{self.proc.pid}.*")) - before)
            if new:
                time.sleep(0.2)  # the file is written whole before control returns; be safe
                m = _TOTALS.search(Path(new[-1]).read_bytes())
                if m:
                    return int(m.group(1))
            time.sleep(0.1)
        raise RuntimeError("callgrind wrote no dump")

    def stop(self) -> None:
        self.server.stop()
        self.log.close()


def _benchmark(port: int, test: Test, requests: int, pipeline: int, clients: int) -> None:
    argv = ["redis-benchmark", "-h", "127.0.0.1", "-p", str(port), "-c", str(clients), "-n", str(requests),
            "-P", str(pipeline), "-q", *test.args]
    p = subprocess.run(argv, capture_output=True, text=True, timeout=3600)
    if p.returncode != 0 or "Error" in p.stdout + p.stderr:
        raise RuntimeError(f"redis-benchmark failed: {p.stdout[-300:]} {p.stderr[-300:]}")


def _lifecycle(port: int, wire: int, shape: int, jobs: int) -> None:
    p = subprocess.Popen([sys.executable, "-m", "bench.lifecycle", "--port", str(port), "--wire", str(wire),
                          "--shape", str(shape), "--jobs", str(jobs), "--conns", "4", "--batch", "100"],
                         cwd=str(ROOT), stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert p.stdin is not None and p.stdout is not None
    if p.stdout.readline().strip() != "ready":
        raise RuntimeError("lifecycle worker did not start")
    p.stdin.write("go\n")
    p.stdin.flush()
    p.stdout.readline()
    if p.wait(timeout=3600) != 0:
        raise RuntimeError("lifecycle worker failed")


def count_commands(names: list[str], *, requests: int, warmup: int, pipeline: int, clients: int,
                   pure: bool) -> dict[str, float]:
    by_name = {t.name: t for t in TESTS}
    out: dict[str, float] = {}
    srv = Counted(pure, "echomq:6.0.0")
    try:
        for name in names:
            test = by_name[name]
            test.prepare(srv.server, warmup + requests)
            _benchmark(srv.server.port, test, warmup, pipeline, clients)
            srv.zero()
            _benchmark(srv.server.port, test, requests, pipeline, clients)
            out[name] = srv.dump() / requests
            print(f"{name:12} P{pipeline:<3} {out[name]:>12,.0f} instructions/request", flush=True)
    finally:
        srv.stop()
    return out


def count_lifecycle(kind: str, *, jobs: int, pure: bool) -> dict[str, float]:
    from .lifecycle import brand_wire4, load_twins

    wire = 6 if kind == "native" else 4
    out: dict[str, float] = {}
    srv = Counted(pure, "echomq:6.0.0" if wire == 6 else "echomq:4.0.0")
    try:
        if wire == 4:
            load_twins(srv.server)
            brand_wire4(srv.server)
        for shape in (1, 2):
            _lifecycle(srv.server.port, wire, shape, max(200, jobs // 10))
            srv.zero()
            _lifecycle(srv.server.port, wire, shape, jobs)
            out[f"{kind} shape {shape}"] = srv.dump() / jobs
            print(f"{kind} lifecycle shape {shape}: {out[f'{kind} shape {shape}']:>12,.0f} instructions/job",
                  flush=True)
    finally:
        srv.stop()
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tests", default=",".join(DEFAULT_TESTS), help="bench/commands.py test names, or ''")
    ap.add_argument("--requests", type=int, default=20_000)
    ap.add_argument("--warmup", type=int, default=2_000)
    ap.add_argument("--pipeline", type=int, default=16)
    ap.add_argument("--clients", type=int, default=50)
    ap.add_argument("--jobs", type=int, default=2_000)
    ap.add_argument("--lifecycle", default="native", help="native, twins, both or none")
    ap.add_argument("--pure", action="store_true", help="TRAFIKEY_PURE_PYTHON=1")
    a = ap.parse_args(argv)
    names = [n for n in a.tests.split(",") if n]
    if names:
        count_commands(names, requests=a.requests, warmup=a.warmup, pipeline=a.pipeline, clients=a.clients,
                       pure=a.pure)
    kinds = {"native": ["native"], "twins": ["twins"], "both": ["native", "twins"], "none": []}[a.lifecycle]
    for kind in kinds:
        count_lifecycle(kind, jobs=a.jobs, pure=a.pure)
    return 0


if __name__ == "__main__":
    sys.exit(main())

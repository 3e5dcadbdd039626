"""The servers under test and every child process: started pinned, always cleaned up.

Why this module exists: a benchmark that leaves a server or a load generator
behind poisons every run after it (a spinning leftover steals the core the
next server is pinned to), so every process the harness starts is put in its
own process group, registered here, and killed -- group and all -- by
``kill_all()``, which ``__main__`` runs in a ``finally`` and at exit, and
which a SIGTERM/SIGHUP to the harness reaches too.

Pinning: each server runs on core ``SERVER_CORE`` and every load generator
(redis-benchmark, the lifecycle workers, the harness itself while it fills)
on core ``LOAD_CORE``, with ``taskset -c``. Without taskset, or on a
one-core machine, everything runs unpinned and ``pinning_note()`` says so,
so the report can print it.
"""

from __future__ import annotations

import atexit
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from trafikey_server.connector import Connection, ReplyError
from trafikey_server.util import native
from trafikey_server.util.procs import free_port, valkey_binary

ROOT = Path(__file__).resolve().parent.parent
SERVER_CORE = 0
LOAD_CORE = 1
TASKSET = shutil.which("taskset")
PINNED = bool(TASKSET) and (os.cpu_count() or 1) >= 2

_LIVE: dict[int, subprocess.Popen[Any]] = {}  # pid -> every child still to be reaped
STARTED: list[int] = []  # every pid ever started, so a test can check that none outlived the run
_TMPDIRS: list[str] = []


def pinning_note() -> str:
    """One sentence for the report on how processes were placed."""
    if PINNED:
        return (f"servers pinned to core {SERVER_CORE}, load generators to core {LOAD_CORE} "
                f"(`taskset -c`)")
    why = "taskset is not installed" if not TASKSET else "this machine has one core"
    return f"**unpinned**: {why}, so servers and load generators share the cores as the scheduler likes"


def pinned(core: int, argv: list[str]) -> list[str]:
    """``argv`` prefixed with ``taskset -c core`` when pinning is possible."""
    return [TASKSET, "-c", str(core), *argv] if PINNED and TASKSET else list(argv)


def pin_self(core: int = LOAD_CORE) -> None:
    """Pin the harness process to the load core, so its own work (filling,
    bookkeeping) never competes with the server it measures."""
    if PINNED:
        os.sched_setaffinity(0, {core})


def mkdtemp(prefix: str) -> str:
    """A temp dir that ``kill_all`` removes."""
    d = tempfile.mkdtemp(prefix=prefix)
    _TMPDIRS.append(d)
    return d


def spawn(argv: list[str], **kw: Any) -> subprocess.Popen[Any]:
    """Start a child in its own process group and register it for cleanup."""
    env = kw.pop("env", None) or child_env()
    p: subprocess.Popen[Any] = subprocess.Popen(argv, start_new_session=True, env=env, **kw)
    _LIVE[p.pid] = p
    STARTED.append(p.pid)
    return p


def child_env() -> dict[str, str]:
    """The environment of a child that imports ``bench`` or ``trafikey_server``
    from this checkout, whatever the current directory."""
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return env


def reap(p: subprocess.Popen[Any], timeout: float = 10.0) -> None:
    """Stop one child and its group: SIGTERM, then SIGKILL; then forget it."""
    if p.poll() is None:
        for sig, wait in ((signal.SIGTERM, timeout), (signal.SIGKILL, 10.0)):
            try:
                os.killpg(p.pid, sig)
            except ProcessLookupError:
                break
            try:
                p.wait(wait)
                break
            except subprocess.TimeoutExpired:
                continue
    else:
        try:  # the leader is gone; anything it left in its group goes too
            os.killpg(p.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
    _LIVE.pop(p.pid, None)


def kill_all() -> None:
    """Stop every registered child and remove every temp dir. Idempotent."""
    for p in list(_LIVE.values()):
        reap(p, timeout=5.0)
    while _TMPDIRS:
        shutil.rmtree(_TMPDIRS.pop(), ignore_errors=True)


def _on_signal(signum: int, _frame: Any) -> None:
    raise SystemExit(128 + signum)  # unwinds through the callers' finally blocks


atexit.register(kill_all)
for _sig in (signal.SIGTERM, signal.SIGHUP):
    signal.signal(_sig, _on_signal)


def valkey_version() -> str:
    out = subprocess.run([valkey_binary(), "--version"], capture_output=True, text=True, check=False).stdout
    for part in out.split():
        if part.startswith("v="):
            return part[2:]
    return out.strip() or "unknown"


class Server:
    """One server process under test: its port, pid, CPU, memory and a raw connection."""

    def __init__(self, kind: str, label: str, argv: list[str], port: int, cwd: str,
                 env: dict[str, str] | None = None) -> None:
        self.kind = kind  # "trafikey" | "valkey" | "fakeredis"
        self.label = label
        self.port = port
        self.logdir = mkdtemp(f"bench-{kind}-")
        self.logpath = Path(self.logdir) / "server.log"
        with open(self.logpath, "wb") as log:
            self.proc = spawn(pinned(SERVER_CORE, argv), cwd=cwd, stdout=log, stderr=subprocess.STDOUT, env=env)
        self._conn: Connection | None = None
        try:
            self._wait_ready()
        except BaseException:
            self.stop()
            raise

    @property
    def pid(self) -> int:
        return self.proc.pid  # taskset execs the server, so this is the server itself

    def _wait_ready(self, timeout: float = 30.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"{self.label} exited with {self.proc.returncode}: {self.log_tail()}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.5) as s:
                    s.sendall(b"*1\r\n$4\r\nPING\r\n")
                    if s.recv(64).startswith(b"+PONG"):
                        return
            except OSError:
                pass
            time.sleep(0.05)
        raise RuntimeError(f"{self.label} did not answer on port {self.port}: {self.log_tail()}")

    def log_tail(self) -> str:
        try:
            return self.logpath.read_text(errors="replace")[-2000:]
        except OSError:
            return ""

    @property
    def conn(self) -> Connection:
        """A lazily opened raw connection for set-up calls (never inside a measured window)."""
        if self._conn is None:
            self._conn = Connection("127.0.0.1", self.port, timeout=600)
        return self._conn

    def execute(self, *parts: bytes | str | int) -> Any:
        reply = self.conn.execute(*parts)
        if isinstance(reply, ReplyError):
            raise reply
        return reply

    def info(self, section: str) -> dict[str, str]:
        text = self.execute("INFO", section)
        out: dict[str, str] = {}
        for line in text.decode().splitlines():
            if ":" in line and not line.startswith("#"):
                k, v = line.split(":", 1)
                out[k] = v
        return out

    def stop(self) -> None:
        if self._conn is not None:
            try:
                self._conn.close()
            except OSError:
                pass
            self._conn = None
        reap(self.proc)


def start_trafikey(label: str, brand: str = "echomq:6.0.0", *extra: str, pure: bool = False) -> Server:
    """``python3 -m trafikey_server`` from this checkout, with the brand a connector of the wire needs;
    ``pure`` forces the pure path where a compiled build is present (TRAFIKEY_PURE_PYTHON=1)."""
    port = free_port()
    argv = [sys.executable, "-m", "trafikey_server", "--port", str(port), "--bind", "127.0.0.1",
            "--loglevel", "warning", "--emq-brand", brand, "--save", "", "--dir", mkdtemp("bench-trafikey-"),
            *extra]
    env = child_env()
    env.pop(native.PURE_ENV, None)
    if pure:
        env[native.PURE_ENV] = "1"
    return Server("trafikey", label, argv, port, cwd=str(ROOT), env=env)


def compiled_build() -> list[str]:
    """The kernels this checkout has compiled (``python3 setup.py build_ext --inplace``):
    when there are any, trafikey-server is measured twice, compiled and pure Python."""
    return native.built()


def start_valkey(label: str, *extra: str) -> Server:
    """valkey-server 9.1.2 without persistence, in its own temp dir."""
    port = free_port()
    d = mkdtemp("bench-valkey-")
    argv = [valkey_binary(), "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
            "--dir", d, "--loglevel", "warning", *extra]
    return Server("valkey", label, argv, port, cwd=d)


def fakeredis_available() -> str | None:
    """None when fakeredis with Lua can run; otherwise why not."""
    try:
        import fakeredis  # noqa: F401
        import lupa  # noqa: F401
        from fakeredis import TcpFakeServer  # noqa: F401
    except ImportError as e:
        return f"fakeredis[lua] is not installed ({e.name}); `pip install -e '.[bench]'`"
    return None


def start_fakeredis(label: str) -> Server:
    """fakeredis's TcpFakeServer in its own process (bench/fakeserver.py), so its CPU can be measured."""
    port = free_port()
    argv = [sys.executable, "-m", "bench.fakeserver", "--port", str(port)]
    return Server("fakeredis", label, argv, port, cwd=str(ROOT))

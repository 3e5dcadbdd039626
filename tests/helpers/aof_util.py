"""Helpers for the append-only-file tests: servers on a directory of their
own, and the whole keyspace read back through ordinary commands."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import hiredis
import redis

from .resp_wire import Wire
from .servers import ROOT, Proc, free_port, valkey_binary

DBS = 16


def aof_server(d: str, *extra: str, port: int | None = None) -> Proc:
    """trafikey-server with appendonly yes on directory d."""
    port = port or free_port()
    argv = [sys.executable, "-m", "trafikey_server", "--port", str(port), "--dir", d,
            "--appendonly", "yes", *extra]
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    return Proc(argv, port, cwd=str(ROOT), env=env)


def run_trafikey(d: str, *extra: str, timeout: float = 20) -> subprocess.CompletedProcess:
    """Start a server expected to refuse start-up; its exit and output."""
    port = free_port()
    argv = [sys.executable, "-m", "trafikey_server", "--port", str(port), "--dir", d,
            "--appendonly", "yes", *extra]
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, cwd=str(ROOT), env=env)
    deadline = time.monotonic() + timeout
    while p.poll() is None and time.monotonic() < deadline:
        try:
            import socket

            # The port opens before the load (as Valkey's): started means
            # served, a PING answered, not a connection accepted.
            with socket.create_connection(("127.0.0.1", port), timeout=0.5) as s:
                s.sendall(b"PING\r\n")
                if s.recv(16).startswith(b"+PONG"):
                    break
        except OSError:
            time.sleep(0.05)
    if p.poll() is None:
        p.terminate()
    out, _ = p.communicate(timeout=10)
    return subprocess.CompletedProcess(argv, p.returncode, out.decode(errors="replace"), "")


def run_valkey(d: str, *extra: str, timeout: float = 30) -> subprocess.CompletedProcess:
    """valkey-server 9.1.2 with appendonly yes on d, expected to refuse
    start-up: its exit and output."""
    argv = [valkey_binary(), "--port", str(free_port()), "--bind", "127.0.0.1", "--save", "", "--dir", d,
            "--appendonly", "yes", *extra]
    p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, cwd=d, text=True)
    try:
        out, _ = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        p.kill()
        out, _ = p.communicate()
    return subprocess.CompletedProcess(argv, p.returncode, out, "")


def valkey_on(d: str, *extra: str) -> Proc:
    """valkey-server 9.1.2 loading what is in directory d."""
    port = free_port()
    argv = [valkey_binary(), "--port", str(port), "--bind", "127.0.0.1", "--save", "",
            "--dir", d, *extra]
    p = Proc(argv, port, cwd=d)
    wait_loaded(p.port)
    return p


def wait_loaded(port: int) -> None:
    r = redis.Redis(port=port)
    for _ in range(200):
        try:
            if r.info("persistence")["loading"] == 0:
                return
        except redis.exceptions.BusyLoadingError:
            pass
        time.sleep(0.05)


def keyspace(port: int, skip: tuple[bytes, ...] = ()) -> dict[tuple[int, bytes], Any]:
    """Every key of every database: its type, value and absolute expiry."""
    out: dict[tuple[int, bytes], Any] = {}
    for i in range(DBS):
        r = redis.Redis(port=port, db=i)
        for k in r.keys("*"):
            if k in skip:
                continue
            t = r.type(k)
            if t == b"string":
                v: Any = r.get(k)
            elif t == b"hash":
                v = r.hgetall(k)
            elif t == b"zset":
                v = r.zrange(k, 0, -1, withscores=True)
            elif t == b"list":
                v = r.lrange(k, 0, -1)
            elif t == b"set":
                v = sorted(r.smembers(k))
            else:
                v = t
            out[(i, k)] = (t, v, r.pexpiretime(k))
        r.close()
    return out


def functions(port: int) -> list[Any]:
    r = redis.Redis(port=port)
    try:
        return sorted(str(x) for x in r.execute_command("FUNCTION", "LIST", "WITHCODE"))
    finally:
        r.close()


def aof_dir(d: str) -> Path:
    return Path(d) / "appendonlydir"


def legacy_copy(d: str) -> str:
    """Our multi-part log joined into one legacy file, in a new directory."""
    src = aof_dir(d)
    lines = (src / "appendonly.aof.manifest").read_text().splitlines()
    names = [ln.split()[1] for ln in lines if ln.split()[-1] in ("b", "i")]
    # base first, then the incremental files in manifest order
    names.sort(key=lambda n: (0 if ".base." in n or n == "appendonly.aof" else 1))
    out = tempfile.mkdtemp(prefix="aof-legacy-")
    with open(os.path.join(out, "appendonly.aof"), "wb") as f:
        for n in names:
            f.write((src / n).read_bytes())
    return out


def manifest_copy(d: str) -> str:
    out = tempfile.mkdtemp(prefix="aof-dir-")
    shutil.copytree(aof_dir(d), Path(out) / "appendonlydir")
    return out



def logged(d: str, files: str = "*.incr.aof") -> list[list[bytes]]:
    """Every command in d's log files named like ``files``, in file order
    (the incremental files by default: what the workload itself wrote)."""
    out = []
    for f in sorted(aof_dir(d).glob(files)):
        reader = hiredis.Reader()
        reader.feed(f.read_bytes())
        while (cmd := reader.gets()) is not False:
            out.append(cmd)
    return out


def run_workload(port: int, workload: list[tuple[Any, ...]]) -> list[bytes]:
    """Each command of the workload on one connection: the replies' bytes."""
    w = Wire(port)
    try:
        return [w.call(*cmd) for cmd in workload]
    finally:
        w.close()


def without_select(log: list[list[bytes]]) -> list[list[bytes]]:
    """The logged commands but SELECT, for comparing logs that switch
    databases at different points."""
    return [c for c in log if c[0].upper() != b"SELECT"]


@dataclass
class Logged:
    """One server's run of a workload with appendfsync always: what the run
    returned, its keyspace afterwards, what it logged, and its directory."""

    replies: Any
    keyspace: dict[tuple[int, bytes], Any]
    log: list[list[bytes]]
    dir: str


def logged_runs(run: Callable[[int], Any]) -> tuple[Logged, Logged]:
    """``run(port)`` on a Valkey and on a trafikey-server (no brand), each
    logging to a directory of its own under appendfsync always: (valkey,
    trafikey). The directories stay for ``assert_replays``."""
    dv = tempfile.mkdtemp(prefix="aof-v-")
    dt = tempfile.mkdtemp(prefix="aof-t-")
    v = valkey_on(dv, "--appendonly", "yes", "--appendfsync", "always")
    t = aof_server(dt, "--appendfsync", "always", "--emq-brand", "none", "--save", "")
    try:
        rv, rt = run(v.port), run(t.port)
        kv, kt = keyspace(v.port), keyspace(t.port)
    finally:
        v.stop()
        t.stop()
    return Logged(rv, kv, logged(dv), dv), Logged(rt, kt, logged(dt), dt)


def logged_beside_valkey(workload: list[tuple[Any, ...]],
                         run: Callable[[int, list[tuple[Any, ...]]], Any] = run_workload) -> tuple[Logged, Logged]:
    """``logged_runs`` of a list of commands, each sent on one connection
    (a test that needs the time around the run wraps ``run_workload``)."""
    return logged_runs(lambda port: run(port, workload))


def assert_replays(d: str, expected: dict[tuple[int, bytes], Any]) -> None:
    """The log in d, copied, restores ``expected`` when trafikey-server
    starts on it and when Valkey does."""
    for start in (lambda x: aof_server(x, "--emq-brand", "none", "--save", ""),
                  lambda x: valkey_on(x, "--appendonly", "yes")):
        copy = manifest_copy(d)
        again = start(copy)
        try:
            assert keyspace(again.port) == expected
        finally:
            again.stop()
        shutil.rmtree(copy, ignore_errors=True)

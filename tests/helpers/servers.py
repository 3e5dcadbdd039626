"""Start real servers for the suite: trafikey-server and the Valkey oracle.

Both run as separate processes on free loopback ports, so tests talk to them
the way users do: over a socket.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from trafikey_server.util.procs import free_port, valkey_binary, wait_port

from .resp_wire import Wire

ROOT = Path(__file__).resolve().parents[2]


class Proc:
    def __init__(self, argv: list[str], port: int, cwd: str | None = None, env: dict | None = None) -> None:
        self.port = port
        self.argv = argv
        self.log = tempfile.NamedTemporaryFile(prefix="srv-", suffix=".log", delete=False)
        self.proc = subprocess.Popen(argv, stdout=self.log, stderr=subprocess.STDOUT, cwd=cwd, env=env)
        try:
            wait_port(port, self.proc)
        except Exception:
            out = self.output()
            self.stop()
            raise RuntimeError(f"{argv} failed: {out}") from None

    def output(self) -> str:
        self.log.flush()
        return Path(self.log.name).read_text(errors="replace")

    def wait_output(self, text: str, timeout: float = 10.0) -> str:
        """The log once it holds ``text`` (or as it is at the deadline): a
        server may answer on its port before it has loaded its files."""
        deadline = time.monotonic() + timeout
        out = self.output()
        while text not in out and time.monotonic() < deadline:
            time.sleep(0.05)
            out = self.output()
        return out

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()
        Path(self.log.name).unlink(missing_ok=True)  # stopping twice is stopping once


def start_valkey(*extra: str) -> Proc:
    port = free_port()
    tmp = tempfile.mkdtemp(prefix="valkey-")
    argv = [valkey_binary(), "--port", str(port), "--bind", "127.0.0.1", "--save", "",
            "--appendonly", "no", "--dir", tmp, *extra]
    return Proc(argv, port, cwd=tmp)


def start_valkey_cluster_node() -> Proc:
    """valkey-server in cluster mode owning all 16384 slots, state ok: the
    oracle for what a cluster refuses (CROSSSLOT, slot checks). The bus
    port is chosen free (the default, port + 10000, can fall outside the
    port range for a high ephemeral port)."""
    tmp = tempfile.mkdtemp(prefix="valkey-cluster-")
    p = start_valkey("--cluster-enabled", "yes", "--cluster-config-file", str(Path(tmp) / "nodes.conf"),
                     "--cluster-port", str(free_port()))
    try:
        w = Wire(p.port)
        try:
            assert w.call("CLUSTER", "ADDSLOTSRANGE", "0", "16383") == b"+OK\r\n"
            end = time.monotonic() + 30
            while b"cluster_state:ok" not in w.call("CLUSTER", "INFO"):
                if time.monotonic() > end:
                    raise RuntimeError("the one-node cluster never reached cluster_state:ok")
                time.sleep(0.05)
        finally:
            w.close()
    except BaseException:
        p.stop()
        raise
    return p


def start_trafikey(*extra: str) -> Proc:
    port = free_port()
    # Like start_valkey: no save rules and a directory of its own, so a stop
    # (SIGTERM) writes no snapshot and no stray dump.rdb is ever loaded.
    tmp = tempfile.mkdtemp(prefix="trafikey-")
    argv = [sys.executable, "-m", "trafikey_server", "--port", str(port), "--save", "", "--dir", tmp, *extra]
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    return Proc(argv, port, cwd=str(ROOT), env=env)


@contextlib.contextmanager
def own_pair(valkey_args: tuple[str, ...] = (), trafikey_args: tuple[str, ...] = ()) -> Iterator[tuple[Proc, Proc]]:
    """A Valkey and a trafikey-server of a test's own, for tests that change
    what the shared pair must not see (ports, limits, replicas); both are
    stopped whatever happens."""
    v = start_valkey(*valkey_args)
    try:
        t = start_trafikey(*trafikey_args)
    except Exception:
        v.stop()
        raise
    try:
        yield v, t
    finally:
        v.stop()
        t.stop()


@contextlib.contextmanager
def lazy_expiry_pair() -> Iterator[tuple[Proc, Proc]]:
    """``own_pair`` with DEBUG on and active expiry off on both: a key whose
    TTL ran out is still stored when the next command reaches it, whatever
    the timing, so tests can see that command's expiry and its events."""
    debug = ("--enable-debug-command", "yes")
    with own_pair(debug, debug) as pair:
        for p in pair:
            w = Wire(p.port)
            assert w.call("DEBUG", "SET-ACTIVE-EXPIRE", "0") == b"+OK\r\n"
            w.close()
        yield pair

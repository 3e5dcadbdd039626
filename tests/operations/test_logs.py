"""Log lines in Valkey's format and at Valkey's levels, compared with Valkey's log.

The same session (a client that runs PING and leaves, a client that sends
a bad bulk length, a client with unbalanced quotes) runs against both
servers at ``loglevel verbose``; the messages about clients must be the
same kinds with the same client fields, and every line must have Valkey's
``pid:M dd Mon yyyy hh:mm:ss.mmm <level> message`` shape.
"""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import time
from collections.abc import Callable

import pytest
from helpers.servers import ROOT, Proc, start_trafikey, start_valkey

from trafikey_server.util.procs import valkey_binary

ENV = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
LINE = re.compile(r"^\d+:M \d\d [A-Z][a-z]{2} \d{4} \d\d:\d\d:\d\d\.\d{3} ([.\-*#]) (.*)$")


def _session(port: int) -> None:
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    s.sendall(b"*1\r\n$4\r\nPING\r\n")
    assert s.recv(100) == b"+PONG\r\n"
    s.close()
    for bad in (b"*1\r\n$x\r\n", b'SET a "b\r\n'):
        s = socket.create_connection(("127.0.0.1", port), timeout=10)
        s.sendall(bad)
        reply = b""
        while True:  # the server answers and closes
            chunk = s.recv(1000)
            if not chunk:
                break
            reply += chunk
        assert reply.startswith(b"-ERR Protocol error")
        s.close()


def _wait_for(p: Proc, ready: Callable[[str], bool]) -> str:
    for _ in range(200):
        out = p.output()
        if ready(out):
            return out
        time.sleep(0.05)
    return p.output()


def _client_events(out: str) -> list[tuple[str, str, list[str]]]:
    """(level, message kind, client field names) of the lines about clients."""
    events = []
    for line in out.splitlines():
        m = LINE.match(line)
        if not m:
            continue
        level, text = m.groups()
        if text.startswith("Accepted "):
            events.append((level, "Accepted", []))
        elif text.startswith("Client closed connection "):
            info = text.removeprefix("Client closed connection ")
            events.append((level, "closed", [kv.split("=")[0] for kv in info.split(" ")]))
        elif text.startswith("Protocol error ("):
            head, info = text.split(" from client: ", 1)
            info, tail = info.rsplit(". ", 1)
            fields = [kv.split("=")[0] for kv in info.split(" ")]
            assert "name=*redacted*" in info and "user=*redacted*" in info
            events.append((level, head + " / " + tail, fields))
    return sorted(events)


@pytest.mark.parametrize("start", [start_valkey, start_trafikey], ids=["valkey", "trafikey"])
def test_line_format(start: Callable[..., Proc]) -> None:
    p = start("--loglevel", "verbose")
    try:
        _session(p.port)
        _wait_for(p, lambda o: "Client closed connection" in o)
        p.proc.terminate()  # SIGTERM: the shutdown lines
        p.proc.wait(10)
        out = p.output()
    finally:
        p.stop()
    lines = [line for line in out.splitlines() if line.strip()]
    starts = [line for line in lines if LINE.match(line)]
    assert any(LINE.match(line).group(2) == "Ready to accept connections tcp" for line in starts)  # type: ignore[union-attr]
    assert any(re.search(r" # .*ready to exit, bye bye\.\.\.$", line) for line in starts)
    assert any(" * Server initialized" in line for line in starts)
    assert any(re.search(r" \* Running mode=standalone, port=\d+\.$", line) for line in starts)


def test_client_lines_match_valkey() -> None:
    events = []
    for start in (start_valkey, start_trafikey):
        p = start("--loglevel", "verbose")
        try:
            _session(p.port)
            out = _wait_for(p, lambda o: o.count("Protocol error (") == 2 and "Client closed connection" in o)
        finally:
            p.stop()
        events.append(_client_events(out))
    valkey, trafikey = events
    assert trafikey == valkey
    assert [e[1] for e in trafikey].count("Accepted") == 4  # with the start-up probe of servers.py


def test_notice_level_is_quiet() -> None:
    p = start_trafikey()
    try:
        _session(p.port)
        out = p.output()
    finally:
        p.stop()
    assert "Accepted" not in out and "Protocol error" not in out
    assert "Ready to accept connections tcp" in out


@pytest.mark.parametrize("start", [start_valkey, start_trafikey], ids=["valkey", "trafikey"])
def test_logo_shows_the_pid_before_server_initialized(start: Callable[..., Proc]) -> None:
    """Under always-show-logo, Valkey's test harness knows the server it
    started is up when " PID: <pid>" and then "Server initialized" are in
    its log; "Ready to accept" comes once it serves."""
    p = start("--always-show-logo", "yes")
    try:
        out = p.wait_output("Ready to accept connections tcp")
    finally:
        p.stop()
    assert re.search(rf" PID: {p.proc.pid}\b.*\n.* \* Server initialized\n.*Ready to accept connections tcp", out,
                     re.S), out
    assert "Running mode=" not in out


def _started(argv: list[str]) -> tuple[int, str]:
    p = subprocess.run(argv, capture_output=True, text=True, timeout=60, cwd=str(ROOT), env=ENV)
    return p.returncode, p.stdout + p.stderr


def test_a_port_in_use_ends_the_start_as_valkey_does() -> None:
    """A port another process holds stops the start, with Valkey's lines
    and exit code."""
    holder = socket.socket()
    holder.bind(("127.0.0.1", 0))
    holder.listen()
    port = holder.getsockname()[1]
    try:
        runs = [_started([valkey_binary(), "--port", str(port), "--bind", "127.0.0.1", "--save", ""]),
                _started([sys.executable, "-m", "trafikey_server", "--port", str(port), "--bind", "127.0.0.1",
                          "--save", ""])]
    finally:
        holder.close()
    for code, out in runs:
        assert code == 1, out
        assert f"Failed listening on port {port} (tcp), aborting." in out
        assert re.search(rf"Could not create server TCP listening socket 127\.0\.0\.1:{port}: bind: "
                         r"Address already in use", out), out
        assert out.count("Could not create server TCP listening socket") == 1, out
        assert "Ready to accept" not in out

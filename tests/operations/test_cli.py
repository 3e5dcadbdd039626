"""The program: command line, config file, start-up line, clean stops."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile

from helpers.resp_wire import Wire
from helpers.servers import ROOT, free_port, start_trafikey

ENV = dict(os.environ, PYTHONPATH=str(ROOT))


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "trafikey_server", *args], capture_output=True, text=True,
                          env=ENV, timeout=30)


def test_unknown_option_fails_at_startup() -> None:
    r = run("--port", str(free_port()), "--no-such-option", "1")
    assert r.returncode == 1
    assert "no-such-option" in r.stderr
    assert "FATAL CONFIG" in r.stderr


def test_bad_value_fails_at_startup() -> None:
    r = run("--port", "notaport")
    assert r.returncode == 1
    assert "port" in r.stderr


def test_version_and_help() -> None:
    r = run("--version")
    assert r.returncode == 0 and r.stdout.startswith("trafikey-server v=")
    r = run("--help")
    assert r.returncode == 0 and "Usage" in r.stdout


def test_config_file_then_options(tmp_path) -> None:  # type: ignore[no-untyped-def]
    port = free_port()
    conf = tmp_path / "trafikey.conf"
    conf.write_text(f"# a comment\nport {port}\ndatabases 4\nrequirepass \"from file\"\n")
    # The command line overrides the file, as with valkey-server.
    p = start_trafikey_from(str(conf), "--requirepass", "cli")
    try:
        w = Wire(port)
        assert w.call("PING") == b"-NOAUTH Authentication required.\r\n"
        assert w.call("AUTH", "from file").startswith(b"-WRONGPASS")
        assert w.call("AUTH", "cli") == b"+OK\r\n"
        assert w.call("SELECT", "3") == b"+OK\r\n"
        assert w.call("SELECT", "4") == b"-ERR DB index is out of range\r\n"
    finally:
        p.terminate()
        p.wait(10)


def start_trafikey_from(*args: str) -> subprocess.Popen[bytes]:
    from helpers.servers import wait_port

    p = subprocess.Popen([sys.executable, "-m", "trafikey_server", *args, "--save", "",
                          "--dir", tempfile.mkdtemp(prefix="trafikey-")], env=ENV,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    port = int(open(args[0]).read().split("port ", 1)[1].split()[0])
    wait_port(port, p)
    return p


def test_startup_line_and_sigterm() -> None:
    p = start_trafikey()
    try:
        w = Wire(p.port)
        assert w.call("PING") == b"+PONG\r\n"
        p.proc.send_signal(signal.SIGTERM)
        assert p.proc.wait(10) == 0
        out = p.output()
        # After Valkey's start-up lines ("... is starting", "Server initialized"...).
        first = next(line for line in out.splitlines() if "run_id=" in line)
        assert out.splitlines()[0].endswith("oO0OoO0OoO0Oo trafikey-server is starting oO0OoO0OoO0Oo")
        assert f"port={p.port}" in first and f"pid={p.proc.pid}" in first and "run_id=" in first
        assert "trafikey-server 0." in first
    finally:
        p.stop()


def test_sigint_stops_cleanly() -> None:
    p = start_trafikey()
    try:
        p.proc.send_signal(signal.SIGINT)
        assert p.proc.wait(10) == 0
    finally:
        p.stop()


def test_multi_arg_options_given_as_one_word_split_again() -> None:
    """Valkey splits a multi-argument option given as one word again, as a
    config line: ``--save "''"`` (an unexpanded shell quote) is an empty
    save, and ``--save "60 100"`` two numbers. Compared with Valkey."""
    from helpers.servers import Proc, valkey_binary

    for words, want in ((["''"], b""), (["60 100"], b"60 100"), (['"" '], b"")):
        got = []
        for binary in ([valkey_binary()], [sys.executable, "-m", "trafikey_server"]):
            port = free_port()
            argv = [*binary, "--port", str(port), "--dir", tempfile.mkdtemp(prefix="cli-"), "--save", *words]
            p = Proc(argv, port, env=ENV)
            try:
                got.append(Wire(port).call("CONFIG", "GET", "save"))
            finally:
                p.stop()
        assert got == [b"*2\r\n$4\r\nsave\r\n$%d\r\n%s\r\n" % (len(want), want)] * 2, words

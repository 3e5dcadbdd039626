"""The program: command line, config file, start-up line, clean stops."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile

import pytest
from helpers.resp_wire import Wire
from helpers.servers import ROOT, Proc, free_port, start_trafikey, valkey_binary

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


def _report(stderr: str) -> list[str]:
    """A fatal config report without its first line (which names the server)."""
    lines = [x for x in stderr.splitlines() if x.strip()]
    return lines[1:] if lines and "FATAL CONFIG FILE ERROR" in lines[0] else lines


@pytest.mark.parametrize("args", [
    ["--invalid"], ["--port"], ["--port", "6380", "--loglevel"], ["--port", "6379", "6380"],
    ["--port", "--loglevel", "verbose"], ["--port", "--bla", "--loglevel", "verbose"],
    ["--maxmemory", "1mb", "2mb"], ["--save", "60"], ["--requirepass", "x", "y"], ["--port", "1", "--x y"],
])
def test_command_line_errors_as_valkey(args: list[str]) -> None:
    """The command line is read as Valkey reads it, as lines of a config
    text: each bad one is reported with its line number, the line as Valkey
    quotes it, and the reason, in Valkey's words."""
    ours = run(*args)
    theirs = subprocess.run([valkey_binary(), *args], capture_output=True, text=True, timeout=30)
    assert ours.returncode == theirs.returncode == 1
    assert _report(ours.stderr) == _report(theirs.stdout + theirs.stderr)


def _config_get_both(tmp_path, body: str, args: list[str], names: list[str]) -> list[list[bytes]]:
    """CONFIG GET of each name from valkey-server and from this server, each
    started from a config file holding body and then the command line args."""
    got = []
    for kind in ("valkey", "trafikey"):
        port = free_port()
        conf = tmp_path / f"{kind}.conf"
        conf.write_text(f"port {port}\n{body}")
        if kind == "valkey":
            proc = Proc([valkey_binary(), str(conf), *args], port, cwd=str(tmp_path))
        else:
            proc = Proc([sys.executable, "-m", "trafikey_server", str(conf), *args], port, cwd=str(tmp_path), env=ENV)
        try:
            w = Wire(port)
            got.append([w.call("CONFIG", "GET", n) for n in names])
            w.close()
        finally:
            proc.stop()
    return got


@pytest.mark.parametrize("args, names", [
    (["--maxmemory 700mb", "--maxmemory-policy volatile-lru"], ["maxmemory", "maxmemory-policy"]),
    (["loglevel", "verbose", "--maxmemory '700mb'", "--maxmemory-policy 'volatile-lru'"],
     ["loglevel", "maxmemory", "maxmemory-policy"]),
    (["--proc-title-template", "--my--title--template", "--loglevel", "verbose"], ["proc-title-template", "loglevel"]),
    (["--save", "--loglevel", "verbose"], ["save", "loglevel"]),
    (["--loglevel", "verbose", "--save"], ["save", "loglevel"]),
    (["--proc-title-template", "--save", "--save", "", "--loglevel", "verbose"],
     ["proc-title-template", "save", "loglevel"]),
    (["--shutdown-on-sigint", "nosave", "force", "now", "--shutdown-on-sigterm", "nosave force"],
     ["shutdown-on-sigint", "shutdown-on-sigterm"]),
])
def test_command_line_forms_as_valkey(tmp_path, args: list[str], names: list[str]) -> None:
    """The forms Valkey accepts after a config file: a name and value in
    one argument, words before any name, values beginning with --, an empty
    --save; each server reads the same values."""
    got = _config_get_both(tmp_path, 'save ""\n', args, names)
    assert got[0] == got[1]


@pytest.mark.parametrize("body, args", [
    ("", []), ("save 100 100\n", []), ("save 900 1\n", ["--save", "100", "100"]), ("save 900 1\n", ["--save", ""]),
    ("save 900 1\nsave 300 10\n", []), ("save 900 1\nsave \"\"\nsave 60 5\n", []),
])
def test_save_lines_add_up_as_valkey(tmp_path, body: str, args: list[str]) -> None:
    """The first save line replaces the default rules, later ones (the
    command line's too) add to them, an empty one clears them."""
    got = _config_get_both(tmp_path, body, args, ["save"])
    assert got[0] == got[1]

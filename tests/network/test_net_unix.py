"""unixsocket and unixsocketperm, compared with Valkey 9.1.2 started the same way."""

from __future__ import annotations

import grp
import os
import socket
import stat
import subprocess
from pathlib import Path

import pytest
from helpers.resp_wire import Wire
from helpers.servers import ROOT
from helpers.transports import Endpoints, dial, trafikey_argv, trafikey_env, wait_unix

from trafikey_server.util.procs import valkey_binary


def _info_lines(w: Wire, prefix: str) -> list[str]:
    text = w.call("INFO", "server").split(b"\r\n", 1)[1].decode()
    return [line for line in text.split("\r\n") if line.startswith(prefix)]


def test_config_get_and_immutable(net: Endpoints, oracle: Endpoints) -> None:
    t, v = Wire(net.port), Wire(oracle.port)
    for name in ("unixsocket", "unixsocketperm", "unixsocketgroup"):
        got = t.call("CONFIG", "GET", name).replace(net.unix.encode(), b"PATH").replace(
            b"$%d\r\nPATH" % len(net.unix), b"$N\r\nPATH")
        want = v.call("CONFIG", "GET", name).replace(oracle.unix.encode(), b"PATH").replace(
            b"$%d\r\nPATH" % len(oracle.unix), b"$N\r\nPATH")
        assert got == want, name
        assert t.call("CONFIG", "SET", name, "x") == v.call("CONFIG", "SET", name, "x")
    assert t.call("CONFIG", "GET", "unixsocketperm") == b"*2\r\n$14\r\nunixsocketperm\r\n$3\r\n700\r\n"
    t.close()
    v.close()


def test_socket_file_mode(net: Endpoints, oracle: Endpoints) -> None:
    modes = [stat.S_IMODE(os.stat(p).st_mode) for p in (net.unix, oracle.unix)]
    assert modes[0] == modes[1] == 0o700
    assert stat.S_ISSOCK(os.stat(net.unix).st_mode)


def test_info_listener_lines(net: Endpoints, oracle: Endpoints) -> None:
    t, v = Wire(net.port), Wire(oracle.port)
    got = [line.replace(net.unix, "PATH").replace(f"port={net.port}", "port=P").replace(
        f"port={net.tls_port}", "port=TLS") for line in _info_lines(t, "listener")]
    want = [line.replace(oracle.unix, "PATH").replace(f"port={oracle.port}", "port=P")
            for line in _info_lines(v, "listener")]
    # Valkey has no TLS listener to show: the tls line comes last, as index 2.
    assert got == [*want, "listener2:name=tls,bind=127.0.0.1,port=TLS"]
    assert want == ["listener0:name=tcp,bind=127.0.0.1,port=P", "listener1:name=unix,bind=PATH"]
    t.close()
    v.close()


def test_redis_cli_over_the_socket(net: Endpoints) -> None:
    out = subprocess.run(["redis-cli", "-s", net.unix, "PING"], capture_output=True, text=True, timeout=30)
    assert out.stdout == "PONG\n"
    out = subprocess.run(["redis-cli", "-s", net.unix, "CLIENT", "INFO"], capture_output=True, text=True,
                         timeout=30)
    assert f"addr=[{net.unix}:0]:0 laddr=[{net.unix}:0]:0 " in out.stdout


def _start_only_unix(cmd: list[str], path: str, cwd: str) -> tuple[subprocess.Popen, Path]:  # type: ignore[type-arg]
    log = Path(cwd) / f"out-{os.path.basename(path)}.log"
    proc = subprocess.Popen(cmd, stdout=log.open("w"), stderr=subprocess.STDOUT, cwd=cwd, env=trafikey_env())
    wait_unix(path, proc)
    return proc, log


def _stop(proc: subprocess.Popen) -> None:  # type: ignore[type-arg]
    proc.terminate()
    proc.wait(10)


def _log_messages(log: Path) -> list[str]:
    # Valkey's lines are "pid:role date time level message"; trafikey's the same shape.
    return _log_messages_text(log.read_text())


def test_port_0_listens_only_on_the_socket_and_shutdown_removes_it(tmp_path: Path) -> None:
    """--port 0 --unixsocket P: no TCP listener, the socket's listener line
    and log lines as Valkey's; a stale file at the path is replaced, and
    the file is gone after a stop."""
    runs = {}
    for name, cmd in (("valkey", [valkey_binary(), "--save", "", "--dir"]),
                      ("trafikey", [*trafikey_argv()[:-2], "--dir"])):
        folder = tmp_path / name
        folder.mkdir()
        path = str(folder / "s.sock")
        Path(path).write_text("stale")  # a file left behind: replaced
        proc, log = _start_only_unix([*cmd, str(folder), "--port", "0", "--unixsocket", path,
                                      "--unixsocketperm", "600", "--loglevel", "verbose"], path, str(folder))
        try:
            assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
            w = Wire.__new__(Wire)
            w.sock = socket.socket(socket.AF_UNIX)
            w.sock.settimeout(10)
            w.sock.connect(path)
            w.buf = b""
            lines = [line.replace(path, "PATH") for line in _info_lines(w, "listener")]
            tcp_port = _info_lines(w, "tcp_port:")
            w.close()
        finally:
            _stop(proc)
        messages = _log_messages(log)
        runs[name] = (lines, tcp_port, os.path.exists(path),
                      [m.replace(path, "PATH") for m in messages
                       if m.startswith(("Ready to accept", "Removing the unix", "Accepted connection to"))])
    assert runs["trafikey"] == runs["valkey"]
    # wait_unix's probe and the test's own connection are both logged.
    assert runs["valkey"] == (["listener1:name=unix,bind=PATH"], ["tcp_port:0"], False,
                              ["Ready to accept connections unix", "Accepted connection to PATH",
                               "Accepted connection to PATH", "Removing the unix socket file."])


@pytest.mark.parametrize("case", ["no-dir", "too-long", "no-group"])
def test_unopenable_socket_exits_as_valkey(tmp_path: Path, case: str) -> None:
    extra: list[str] = []
    if case == "no-dir":
        path = str(tmp_path / "no-such-dir" / "s.sock")
    elif case == "too-long":
        path = str(tmp_path / ("s" * 120))
    else:
        path = str(tmp_path / "s.sock")
        extra = ["--unixsocketgroup", "no-such-group-here"]
    results = []
    for cmd in ([valkey_binary(), "--save", "", "--dir", str(tmp_path)], trafikey_argv()):
        out = subprocess.run([*cmd, "--port", "0", "--unixsocket", path, *extra], capture_output=True, text=True,
                             timeout=60, cwd=str(ROOT), env=trafikey_env())
        messages = _log_messages_text(out.stdout + out.stderr)
        results.append((out.returncode, [m for m in messages if m.startswith("Failed opening")]))
    assert results[0] == results[1]
    assert results[0][0] == 1 and len(results[0][1]) == 1


def test_unixsocketgroup_sets_the_files_group(tmp_path: Path) -> None:
    # A group other than the one the file would get anyway, that this user may give it.
    others = [g for g in os.getgroups() if g != os.getgid()]
    if os.geteuid() == 0:
        others += [g.gr_gid for g in grp.getgrall() if g.gr_gid != os.getgid()]
    if not others:
        pytest.skip("this user belongs to no second group")
    gid = others[0]
    group = grp.getgrgid(gid).gr_name
    gids = []
    for name, cmd in (("valkey", [valkey_binary(), "--save", "", "--dir", str(tmp_path)]),
                      ("trafikey", trafikey_argv())):
        path = str(tmp_path / f"{name}.sock")
        proc, _ = _start_only_unix([*cmd, "--port", "0", "--unixsocket", path, "--unixsocketgroup", group],
                                   path, str(tmp_path))
        try:
            gids.append(os.stat(path).st_gid)
        finally:
            _stop(proc)
    assert gids == [gid, gid]


def _log_messages_text(text: str) -> list[str]:
    return [parts[6] for parts in (line.split(" ", 6) for line in text.splitlines()) if len(parts) == 7]


@pytest.mark.parametrize("who", ["trafikey", "valkey"])
def test_tcp_and_unix_share_the_keyspace(net: Endpoints, oracle: Endpoints, who: str) -> None:
    ep = net if who == "trafikey" else oracle
    u, t = dial(ep, "unix"), dial(ep, "tcp")
    u.call("SET", "shared", who)
    assert t.call("GET", "shared") == b"$%d\r\n%s\r\n" % (len(who), who.encode())
    u.close()
    t.close()

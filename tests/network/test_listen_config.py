"""CONFIG SET port and bind at run time, against Valkey 9.1.2: the server
stops listening where it did and listens where it is told; when it cannot
(the port is taken, the address is not local) CONFIG SET answers Valkey's
error naming the option, every option of the request is rolled back (their
effects too) and the server goes on listening where it was. Open
connections are not touched.
"""

from __future__ import annotations

import socket
import subprocess
import tempfile
from collections.abc import Iterator

import pytest
from helpers.resp_wire import Wire
from helpers.servers import Proc, free_port, own_pair, start_trafikey, valkey_binary
from helpers.transports import trafikey_argv, trafikey_env


@pytest.fixture
def servers() -> Iterator[tuple[Proc, Proc]]:
    """Servers of this test's own: their ports move."""
    with own_pair() as pair:
        yield pair


def _ping(port: int) -> bytes | None:
    try:
        w = Wire(port, timeout=2)
    except OSError:
        return None
    try:
        return w.call("PING")
    finally:
        w.close()


def assert_same(ws: tuple[Wire, Wire], *args: object) -> bytes:
    a, b = ws[0].call(*args), ws[1].call(*args)  # type: ignore[arg-type]
    assert b == a, f"{args!r}\n valkey:   {a!r}\n trafikey: {b!r}"
    return a


def test_port_moves_and_rolls_back(servers: tuple[Proc, Proc]) -> None:
    v, t = servers
    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen(1)
    used = taken.getsockname()[1]
    ws = (Wire(v.port), Wire(t.port))
    try:
        # A port in use: refused after maxmemory was set, which is rolled back.
        assert_same(ws, "CONFIG", "SET", "maxmemory", "10000001", "port", str(used), "client-query-buffer-limit", "10m")
        assert_same(ws, "CONFIG", "GET", "maxmemory")
        assert_same(ws, "CONFIG", "GET", "client-query-buffer-limit")
        assert [w.call("CONFIG", "GET", "port") for w in ws] == [
            b"*2\r\n$4\r\nport\r\n$%d\r\n%d\r\n" % (len(str(p)), p) for p in (v.port, t.port)]
        assert _ping(t.port) == _ping(v.port) == b"+PONG\r\n"
        # A free port: the old one closes, the connection that asked stays.
        new = [free_port(), free_port()]
        replies = [w.call("CONFIG", "SET", "port", str(p)) for w, p in zip(ws, new, strict=True)]
        assert replies == [b"+OK\r\n", b"+OK\r\n"]
        assert assert_same(ws, "PING") == b"+PONG\r\n"
        assert [_ping(p) for p in new] == [b"+PONG\r\n", b"+PONG\r\n"]
        assert _ping(t.port) is None and _ping(v.port) is None
        assert [w.call("CONFIG", "GET", "port") for w in ws] == [
            b"*2\r\n$4\r\nport\r\n$%d\r\n%d\r\n" % (len(str(p)), p) for p in new]
        # And back.
        assert [w.call("CONFIG", "SET", "port", str(p)) for w, p in zip(ws, (v.port, t.port), strict=True)] == [
            b"+OK\r\n", b"+OK\r\n"]
        assert _ping(t.port) == _ping(v.port) == b"+PONG\r\n"
        assert [_ping(p) for p in new] == [None, None]
        # Port checks as any number option.
        assert_same(ws, "CONFIG", "SET", "port", "65536")
        assert_same(ws, "CONFIG", "SET", "port", "x")
    finally:
        taken.close()
        for w in ws:
            w.close()


def test_bind_changes_and_rolls_back(servers: tuple[Proc, Proc]) -> None:
    v, t = servers
    ws = (Wire(v.port), Wire(t.port))
    try:
        assert_same(ws, "CONFIG", "SET", "bind", "127.0.0.1 -::1")
        assert_same(ws, "CONFIG", "GET", "bind")
        assert _ping(t.port) == _ping(v.port) == b"+PONG\r\n"
        # An address that is not this host's: refused, the old binding kept.
        assert_same(ws, "CONFIG", "SET", "maxmemory", "10000001", "bind", "192.0.2.1")
        assert_same(ws, "CONFIG", "GET", "bind")
        assert_same(ws, "CONFIG", "GET", "maxmemory")
        assert _ping(t.port) == _ping(v.port) == b"+PONG\r\n"
        # A leading '-' makes an address optional: one the host lacks is skipped.
        assert_same(ws, "CONFIG", "SET", "bind", "-192.0.2.1 127.0.0.1")
        assert _ping(t.port) == _ping(v.port) == b"+PONG\r\n"
        assert_same(ws, "CONFIG", "SET", "bind", "127.0.0.1")
        assert_same(ws, "CONFIG", "GET", "bind")
        assert _ping(t.port) == _ping(v.port) == b"+PONG\r\n"
        assert_same(ws, "CONFIG", "SET", "bind", " ".join(["127.0.0.1"] * 17))
    finally:
        for w in ws:
            w.close()


def _connects(host: str, port: int) -> bool:
    try:
        with socket.create_connection((host, port), timeout=2):
            return True
    except OSError:
        return False


def _ipv6_loopback() -> bool:
    try:
        with socket.socket(socket.AF_INET6) as s:
            s.bind(("::1", 0))
        return True
    except OSError:
        return False


def test_default_bind_is_valkeys() -> None:
    """Without a bind option both listen where Valkey's default `* -::*`
    says: every IPv4 address and, where the host has IPv6, every IPv6 one
    (protected mode keeps outside clients out, tests/services/limits).
    `CONFIG SET bind ""` closes the TCP listeners and leaves open
    connections alone."""
    tmp = tempfile.mkdtemp(prefix="valkey-")
    port = free_port()
    v = Proc([valkey_binary(), "--port", str(port), "--save", "", "--appendonly", "no", "--dir", tmp], port, cwd=tmp)
    try:
        t = start_trafikey()
        try:
            ws = (Wire(v.port), Wire(t.port))
            assert_same(ws, "CONFIG", "GET", "bind")
            assert ws[0].call("CONFIG", "GET", "bind") == b"*2\r\n$4\r\nbind\r\n$6\r\n* -::*\r\n"
            lines = [[ln.replace(f"port={p.port}", "port=P") for ln in w.call("INFO", "server").decode().split("\r\n")
                      if ln.startswith("listener")] for w, p in zip(ws, (v, t), strict=True)]
            assert lines[1] == lines[0] == ["listener0:name=tcp,bind=*,bind=-::*,port=P"]
            ipv6 = _ipv6_loopback()
            for p in (v, t):
                assert _connects("127.0.0.1", p.port)
                assert _connects("::1", p.port) == ipv6
            assert_same(ws, "CONFIG", "SET", "bind", "")
            assert_same(ws, "CONFIG", "GET", "bind")
            for p in (v, t):
                assert not _connects("127.0.0.1", p.port)
            assert_same(ws, "PING")
            assert_same(ws, "CONFIG", "SET", "bind", "127.0.0.1")
            for p in (v, t):
                assert _connects("127.0.0.1", p.port)
                assert not _connects("::1", p.port)
            for w in ws:
                w.close()
        finally:
            t.stop()
    finally:
        v.stop()


def test_listening_nowhere_exits_like_valkey() -> None:
    """`bind ""` with no unix socket and no TLS port leaves nothing to serve:
    both exit with status 1 and Valkey's line."""
    outs = []
    for argv, env in (([valkey_binary()], None), (trafikey_argv(), trafikey_env())):
        tmp = tempfile.mkdtemp(prefix="nowhere-")
        r = subprocess.run([*argv, "--port", str(free_port()), "--bind", "", "--save", "", "--dir", tmp],
                           capture_output=True, text=True, timeout=30, env=env, cwd=tmp)
        outs.append((r.returncode, "Configured to not listen anywhere, exiting." in r.stdout + r.stderr))
    assert outs == [(1, True), (1, True)]

"""The real transports: one server reachable three ways (TCP, a unix socket, TLS), and raw
connections and redis-py clients over each, for tests that run the same
conversation over every transport."""

from __future__ import annotations

import os
import socket
import ssl
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field

import redis

from trafikey_server.util.procs import free_port

from .certs import Certs
from .resp_wire import Wire
from .servers import ROOT, Proc

TRANSPORTS = ("tcp", "unix", "tls")


@dataclass
class Endpoints:
    """Where one server listens: its TCP port, unix socket and TLS port (0: none)."""

    port: int
    unix: str = ""
    tls_port: int = 0
    certs: Certs | None = None
    proc: Proc | None = field(default=None, repr=False)


def client_context(certs: Certs, client: str | None = "client", ca: str = "ca") -> ssl.SSLContext:
    """A client-side context trusting ``ca``, presenting ``client``'s
    certificate (none for None)."""
    ctx = ssl.create_default_context(cafile=certs.crt(ca))
    if client is not None:
        ctx.load_cert_chain(certs.crt(client), certs.key(client))
    return ctx


def raw_socket(ep: Endpoints, transport: str, ctx: ssl.SSLContext | None = None,
               timeout: float = 10.0) -> socket.socket:
    if transport == "unix":
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(timeout)
        s.connect(ep.unix)
        return s
    port = ep.tls_port if transport == "tls" else ep.port
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    if transport == "tls":
        assert ep.certs is not None
        ctx = ctx or client_context(ep.certs)
        return ctx.wrap_socket(s, server_hostname="127.0.0.1")
    return s


def dial(ep: Endpoints, transport: str, ctx: ssl.SSLContext | None = None) -> Wire:
    """A raw RESP connection (helpers.resp_wire.Wire) over ``transport``."""
    w = Wire.__new__(Wire)
    w.port = ep.port
    w.sock = raw_socket(ep, transport, ctx)
    w.buf = b""
    return w


def redis_kwargs(ep: Endpoints, transport: str, client: str = "client") -> dict:
    """redis-py's connection arguments for ``transport``."""
    if transport == "unix":
        return {"unix_socket_path": ep.unix}
    if transport == "tls":
        assert ep.certs is not None
        return {"host": "127.0.0.1", "port": ep.tls_port, "ssl": True, "ssl_ca_certs": ep.certs.crt("ca"),
                "ssl_certfile": ep.certs.crt(client), "ssl_keyfile": ep.certs.key(client)}
    return {"host": "127.0.0.1", "port": ep.port}


def redis_client(ep: Endpoints, transport: str, **kw: object) -> redis.Redis:
    return redis.Redis(**redis_kwargs(ep, transport), **kw)  # type: ignore[arg-type]


def wait_unix(path: str, proc: subprocess.Popen, timeout: float = 20.0) -> None:  # type: ignore[type-arg]
    """Until the server ``proc`` accepts on the unix socket ``path``."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"server exited with {proc.returncode}")
        try:
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
                s.connect(path)
                return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"nothing accepts on {path}")


def trafikey_argv(*extra: str) -> list[str]:
    return [sys.executable, "-m", "trafikey_server", "--save", "", "--dir", tempfile.mkdtemp(prefix="trafikey-"),
            *extra]


def trafikey_env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    return env


def tls_args(certs: Certs, tls_port: int, *extra: str) -> list[str]:
    return ["--tls-port", str(tls_port), "--tls-cert-file", certs.crt("server"), "--tls-key-file",
            certs.key("server"), "--tls-ca-cert-file", certs.crt("ca"), *extra]


def start_all_ways(folder: str, certs: Certs, *extra: str) -> Endpoints:
    """A trafikey-server on a TCP port, a unix socket in ``folder`` and a TLS port."""
    port, tls_port = free_port(), free_port()
    unix = os.path.join(folder, "trafikey.sock")
    # Bound as the Valkey beside it is (start_valkey), so their listeners read alike.
    argv = trafikey_argv("--port", str(port), "--bind", "127.0.0.1", "--unixsocket", unix, "--unixsocketperm", "700",
                         *tls_args(certs, tls_port), *extra)
    proc = Proc(argv, port, cwd=str(ROOT), env=trafikey_env())
    wait_unix(unix, proc.proc)
    return Endpoints(port, unix, tls_port, certs, proc)

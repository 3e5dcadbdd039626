"""Listening sockets, accepted by the server itself.

The event loop could accept connections for us (``create_server``), but
it would then own each new connection until it gets round to announcing
it, which it cannot do while a long script holds the loop. Accepting here
keeps every connection in the server's hands from its first moment: a
connection accepted but not yet handed to the loop is in ``pending``, and
the busy-script loop (``scripting/busy.py``) can serve it.

One class serves the three kinds Valkey has, in its listener order: ``tcp``
(one per bind address), ``unix`` (``unixsocket``: the path, its mode and
group) and ``tls`` (the bind addresses on ``tls-port``; the handshake runs
on the event loop with the context current at accept time). Only how a
connection is made differs; every kind is then served by ``Connection``.
"""

from __future__ import annotations

import asyncio
import grp
import os
import socket
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .connection import Connection, format_addr
from .tls import openssl_text

if TYPE_CHECKING:
    from ..server import Server


# sizeof(struct sockaddr_un.sun_path) on Linux.
_SUN_PATH = 108


class Listener:
    # What an accepted socket is served by.
    connection_class = Connection

    def __init__(self, server: Server, host: str, port: int, backlog: int, kind: str = "tcp") -> None:
        self.server = server
        # "tcp", "unix" (host is the socket's path) or "tls".
        self.kind = kind
        self.host = host
        if kind == "unix":
            sock = self._unix(host, backlog)
            self.port = 0
        else:
            family = socket.AF_INET6 if ":" in host else socket.AF_INET
            sock = socket.socket(family, socket.SOCK_STREAM)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            if family == socket.AF_INET6:
                sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
            sock.bind((host, port))
            sock.listen(backlog)
            self.port = sock.getsockname()[1]
        sock.setblocking(False)
        self.sock = sock
        # Accepted sockets whose Connection the loop has not yet announced.
        self.pending: dict[socket.socket, Connection] = {}
        self.loop: asyncio.AbstractEventLoop | None = None

    def _unix(self, path: str, backlog: int) -> socket.socket:
        """Valkey's anetUnixServer: a stale file at the path is replaced,
        then bind, unixsocketperm's mode, unixsocketgroup's group and
        listen, in that order. An OSError's text is Valkey's neterr."""
        values = self.server.config.values
        if len(path.encode()) > _SUN_PATH - 1:
            raise OSError(0, f"unix socket path too long ({len(path.encode())}), must be under {_SUN_PATH}")
        try:
            os.unlink(path)
        except OSError:
            pass  # none there, or not ours to remove: bind says which
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            try:
                sock.bind(path)
            except OSError as e:
                raise OSError(e.errno, f"bind: {e.strerror}") from None
            perm = values["unixsocketperm"]
            if perm:
                os.chmod(path, perm)
            group = values["unixsocketgroup"]
            if group:
                try:
                    gid = grp.getgrnam(group).gr_gid
                except KeyError:  # getgrnam found none and set no errno: strerror(0)
                    raise OSError(0, f"getgrnam error for group '{group}': Success") from None
                try:
                    os.chown(path, -1, gid)
                except OSError as e:
                    raise OSError(e.errno, f"chown error for group '{group}': {e.strerror}") from None
            try:
                sock.listen(backlog)
            except OSError as e:
                raise OSError(e.errno, f"listen: {e.strerror}") from None
        except OSError:
            sock.close()
            raise
        return sock

    def fileno(self) -> int:
        return self.sock.fileno()

    def start(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        loop.add_reader(self.sock.fileno(), self.accept_ready)

    def accept_one(self) -> socket.socket | None:
        try:
            conn, _ = self.sock.accept()
        except (BlockingIOError, InterruptedError):
            return None
        except OSError as e:  # too many open files, aborted handshakes
            self.server.log.warning(f"Accepting client connection: {e}")
            return None
        conn.setblocking(False)
        if conn.family in (socket.AF_INET, socket.AF_INET6):
            conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return conn

    def accept_raw(self, transport: Callable[[socket.socket], object]) -> None:
        """Accept one connection while a script holds the event loop
        (execution/scripting/busy.py): it is served through
        ``transport(sock)`` until the loop, free again, takes it over."""
        sock = self.accept_one()
        if sock is None:
            return
        conn = self.connection_class(self.server)
        conn.connection_made(transport(sock))
        self.pending[sock] = conn
        assert self.loop is not None
        self.hand_over(self.loop, conn, sock)

    def accept_ready(self) -> None:
        loop = self.loop
        assert loop is not None
        for _ in range(1000):  # what is waiting, within reason per turn
            sock = self.accept_one()
            if sock is None:
                return
            conn = Connection(self.server)
            self.pending[sock] = conn
            self.hand_over(loop, conn, sock)

    def hand_over(self, loop: asyncio.AbstractEventLoop, conn: Connection, sock: socket.socket) -> None:
        """The event loop takes the accepted socket (after the handshake, for TLS)."""
        if self.kind == "tls":
            ctx = self.server.tls.context_for_accept()
            coro = loop.connect_accepted_socket(lambda: conn, sock, ssl=ctx)
            # Kept for the log line of a failed handshake, when the socket is gone.
            try:
                where = f"addr={format_addr(sock.getpeername())} laddr={format_addr(sock.getsockname())}"
            except OSError:  # already reset by the peer
                where = "addr=?:0 laddr=?:0"
        else:
            coro = loop.connect_accepted_socket(lambda: conn, sock)
            where = ""
        task = loop.create_task(coro)
        task.add_done_callback(lambda t: self._made(sock, t, where))

    def _made(self, sock: socket.socket, task: asyncio.Task[Any], where: str = "") -> None:
        self.pending.pop(sock, None)
        if not task.cancelled() and task.exception() is not None:
            if self.kind == "tls":
                # Valkey's line for a failed handshake (connAccept's error).
                error = task.exception()
                assert error is not None
                self.server.log.warning(f"Error accepting a client connection: {openssl_text(error)} ({where})")
            sock.close()

    def close(self, unlink: bool = False) -> None:
        """Stop listening; ``unlink`` removes a unix socket's file too, as
        Valkey does at shutdown."""
        if self.loop is not None:
            self.loop.remove_reader(self.sock.fileno())
        self.sock.close()
        if unlink and self.kind == "unix":
            self.server.log.notice("Removing the unix socket file.")
            try:
                os.unlink(self.host)
            except OSError as e:
                self.server.log.warning(f"Error removing the unix socket file: {e.strerror}")

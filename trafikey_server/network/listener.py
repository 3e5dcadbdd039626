"""Listening sockets, accepted by the server itself.

The event loop could accept connections for us (``create_server``), but
it would then own each new connection until it gets round to announcing
it, which it cannot do while a long script holds the loop. Accepting here
keeps every connection in the server's hands from its first moment: a
connection accepted but not yet handed to the loop is in ``pending``, and
the busy-script loop (``scripting/busy.py``) can serve it.
"""

from __future__ import annotations

import asyncio
import socket
from typing import TYPE_CHECKING, Any

from .connection import Connection

if TYPE_CHECKING:
    from ..server import Server


class Listener:
    # What an accepted socket is served by; the busy-script loop, which sits
    # below the network code, accepts through it too.
    connection_class = Connection

    def __init__(self, server: Server, host: str, port: int, backlog: int) -> None:
        self.server = server
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        sock = socket.socket(family, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if family == socket.AF_INET6:
            sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
        sock.bind((host, port))
        sock.listen(backlog)
        sock.setblocking(False)
        self.sock = sock
        self.port: int = sock.getsockname()[1]
        # Accepted sockets whose Connection the loop has not yet announced.
        self.pending: dict[socket.socket, Any] = {}
        self.loop: asyncio.AbstractEventLoop | None = None

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

    def accept_ready(self) -> None:
        loop = self.loop
        assert loop is not None
        for _ in range(1000):  # what is waiting, within reason per turn
            sock = self.accept_one()
            if sock is None:
                return
            conn = Connection(self.server)
            self.pending[sock] = conn
            task = loop.create_task(loop.connect_accepted_socket(lambda conn=conn: conn, sock))
            task.add_done_callback(lambda t, sock=sock: self._made(sock, t))

    def _made(self, sock: socket.socket, task: asyncio.Task[Any]) -> None:
        self.pending.pop(sock, None)
        if not task.cancelled() and task.exception() is not None:
            sock.close()

    def close(self) -> None:
        if self.loop is not None:
            self.loop.remove_reader(self.sock.fileno())
        self.sock.close()

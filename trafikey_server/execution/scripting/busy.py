"""Serving other clients while a script runs too long (and while the files
load at start-up: ``Busy.poll``, persist/loading.py).

A script runs on the event loop's thread and nothing else may run while it
does: it is atomic. But a script that runs past ``busy-reply-threshold``
must not freeze the server: like Valkey, the server then answers other
clients — ``BUSY`` to almost everything, while ``SCRIPT KILL``,
``FUNCTION KILL`` and ``SHUTDOWN NOSAVE`` act — so a runaway script can be
stopped.

The event loop cannot run while the script holds its thread, so the Lua
count hook calls ``Busy.serve`` every so often, and ``serve`` does a small
event loop of its own: it polls the client sockets and the listening
sockets without waiting, reads what arrived and feeds it to each
connection's own parser (``Connection.data_received``), whose replies go out
through the connection's transport as usual. The dispatcher, seeing
``server.busy_run`` set, refuses what a busy server refuses. Connections
accepted meanwhile are served through a stand-in transport and handed to
the event loop when the script ends.

TLS connections are left to the event loop: their bytes on the socket are
records only the loop's SSL transport can read, so they, and connections
still in their handshake, wait for the script to end.
"""

from __future__ import annotations

import os
import select
import socket
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    import asyncio

    from ...services.client import Client
    from ...services.host import Transport
    from .engine import Run


class BusyConnection(Protocol):
    """A client's connection (network/connection.py), fed here by hand."""

    transport: Transport | None

    @property
    def client(self) -> Client | None: ...

    def connection_made(self, transport: Any) -> None: ...
    def connection_lost(self, exc: Exception | None) -> None: ...
    def data_received(self, data: bytes) -> None: ...


class BusyListener(Protocol):
    """A listening socket (network/listener.py)."""

    @property
    def kind(self) -> str: ...
    @property
    def pending(self) -> Mapping[socket.socket, BusyConnection]: ...

    def fileno(self) -> int: ...
    def accept_raw(self, transport: Callable[[socket.socket], object]) -> None: ...


class BusyHost(Protocol):
    """What the busy-script loop uses of the server (server.py)."""

    busy_run: Run | None
    stopping: asyncio.Event | None

    @property
    def connections(self) -> Mapping[int, BusyConnection]: ...
    @property
    def listeners(self) -> Sequence[BusyListener]: ...

    def flush_writes(self) -> None: ...


_READ = 1 << 16
_ROUNDS = 4


class RawTransport:
    """The few transport methods a Connection uses, over a plain socket,
    for a connection accepted while the event loop cannot run."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.closed = False

    def write(self, data: bytes) -> None:
        if self.closed:
            return
        self.sock.setblocking(True)
        try:
            self.sock.sendall(data)
        except OSError:
            self.closed = True
        finally:
            self.sock.setblocking(False)

    def close(self) -> None:
        self.closed = True

    def abort(self) -> None:
        self.closed = True

    def is_closing(self) -> bool:
        return self.closed

    def get_write_buffer_size(self) -> int:
        return 0

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        try:
            if name == "peername":
                return self.sock.getpeername()
            if name == "sockname":
                return self.sock.getsockname()
        except OSError:  # a peer already gone (not connected), as an event-loop transport gives None
            return default
        if name == "socket":
            return self.sock
        return default


class DirectWriter:
    """Stands in for an event-loop transport while the loop cannot run:
    uvloop sends what is written only on its next iteration, so replies
    are written to the socket here, at once. Used only when the transport
    has nothing buffered, so nothing can overtake earlier replies."""

    def __init__(self, fd: int, real: Transport) -> None:
        self.fd = fd
        self.real = real
        self.closing = False

    def write(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            try:
                n = os.write(self.fd, view)
            except BlockingIOError:
                select.select([], [self.fd], [], 1.0)
                continue
            except OSError:
                self.closing = True
                return
            view = view[n:]

    def close(self) -> None:
        self.closing = True

    def abort(self) -> None:
        self.closing = True

    def is_closing(self) -> bool:
        return self.closing

    def get_write_buffer_size(self) -> int:
        return 0

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return self.real.get_extra_info(name, default)


class Busy:
    def __init__(self, server: BusyHost) -> None:
        self.server = server

    def serve(self, run: Run) -> None:
        """One turn of the busy loop: serve what is ready, wait for nothing."""
        self.server.busy_run = run
        self.poll(run.caller)
        stopping = self.server.stopping
        if stopping is not None and stopping.is_set():
            run.killed = run.shutdown = True  # SHUTDOWN NOSAVE: the script ends so the server can

    def poll(self, caller: Client | None) -> None:
        """Serve what is ready on every connection but ``caller``'s, and
        accept what waits on the listeners, without waiting (also a turn of
        serving clients while the server loads its files, ``caller`` None)."""
        server = self.server
        # Replies queued for the end of the turn in which the script began
        # go out now, as Valkey writes pending replies while it processes
        # events during a busy script: a client waiting for one would never
        # send the request this loop is to answer.
        server.flush_writes()
        # Up to four rounds while something was ready, as Valkey's
        # processEventsWhileBlocked: a connection accepted in one is read
        # in the next, in the same turn.
        for _ in range(_ROUNDS):
            if not self._round(caller):
                break
        # What this turn answered goes out now, not a turn later (Valkey's
        # processEventsWhileBlocked runs its before-sleep writes too).
        server.flush_writes()

    def _round(self, caller: Client | None) -> bool:
        """One pass over what is ready; whether anything was."""
        server = self.server
        fds: dict[int, BusyConnection] = {}
        listeners: dict[int, BusyListener] = {}
        for lst in server.listeners:
            if lst.kind == "tls":
                continue
            listeners[lst.fileno()] = lst
            for sock, conn in list(lst.pending.items()):
                if conn.transport is None:
                    # Accepted, not yet announced by the loop: served raw until it is.
                    conn.connection_made(RawTransport(sock))
                if isinstance(conn.transport, RawTransport) and not conn.transport.closed:
                    fds[sock.fileno()] = conn
        for conn in list(server.connections.values()):
            c = conn.client
            t = conn.transport
            if c is None or c is caller or c.fd < 0 or c.closing or t is None or isinstance(t, RawTransport):
                continue
            if t.get_write_buffer_size():
                continue  # earlier replies still queued: this one waits for the script
            if t.get_extra_info("sslcontext") is not None:
                continue  # TLS: records for the loop's transport to read
            fds[c.fd] = conn
        try:
            ready, _, _ = select.select(list(fds) + list(listeners), [], [], 0)
        except (OSError, ValueError):
            return False
        for fd in ready:
            listening = listeners.get(fd)
            if listening is not None:
                listening.accept_raw(RawTransport)
                continue
            conn = fds[fd]
            try:
                data = os.read(fd, _READ)
            except BlockingIOError:
                continue
            except OSError:
                data = b""
            real = conn.transport
            if real is None:
                continue
            if not data:
                if isinstance(real, RawTransport):
                    real.closed = True
                    conn.connection_lost(None)
                else:
                    real.close()
                continue
            if isinstance(real, RawTransport):
                conn.data_received(data)
                if real.closed and conn.client is not None:
                    conn.connection_lost(None)
                continue
            c = conn.client
            assert c is not None  # a connection the loop announced (not raw)
            direct = DirectWriter(fd, real)
            conn.transport = c.transport = direct
            try:
                conn.data_received(data)
            finally:
                conn.transport = real
                if conn.client is not None:
                    conn.client.transport = real
            if direct.closing:
                real.close()
        # Raw connections closed by either side go for good: their sockets
        # close now (after the round, so that no number is reused within
        # it), and the loop, handed them at accept, finds nothing to serve.
        for lst in server.listeners:
            for sock, conn in list(lst.pending.items()):
                t = conn.transport
                if isinstance(t, RawTransport) and t.closed and sock.fileno() >= 0:
                    if conn.client is not None:
                        conn.connection_lost(None)
                    sock.close()
        return bool(ready)

    def done(self, run: Run) -> None:
        """The script ended: the event loop takes over again. Connections
        served raw meanwhile are announced by the loop in a moment
        (Connection.connection_made keeps their state)."""
        self.server.busy_run = None

"""What WAITAOF waits for: the local fsync of a client's writes.

Valkey compares a client's write offset (``woff``, the replication offset
after its last write) with the offset the AOF has fsynced. This server has
no replication stream, so the offsets count the writes logged instead:
``fed`` after each write (the writer's ``Client.woff``), ``written`` once
they are handed to the file, ``synced`` once an fsync covered them. So
``appendfsync always`` acknowledges at the end of the write's turn,
``everysec`` within a second, ``no`` only when something fsyncs (a
rewrite, a switch of policy), and a log turned on at run time once its
first rewrite is in. A WAITAOF that cannot be satisfied blocks
(services/blocking.py) and is answered when ``synced`` reaches it.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Protocol, cast

if TYPE_CHECKING:
    import asyncio

    from ...services.blocking import Blocking
    from ...services.client import Client

DISABLED = b"-ERR WAITAOF cannot be used when numlocal is set but appendonly is disabled.\r\n"


class AckHost(Protocol):
    """What the offsets use of the server (server.py)."""

    blocking: Blocking
    loop: asyncio.AbstractEventLoop | None


class AofAck:
    """The awaited type of a client blocked in WAITAOF: no value is of it.
    Its block state's ``data`` is (woff, numlocal, numreplicas)."""


def reply(acklocal: int) -> bytes:
    """WAITAOF's reply: the local copies, and the replicas (never any)."""
    return b"*2\r\n:%d\r\n:0\r\n" % acklocal


class AofOffsets:
    def __init__(self, server: AckHost) -> None:
        self.server = server
        self.fed = 0
        self.written = 0
        self.synced = 0
        self.waiters: set[Client] = set()
        self._lock = threading.Lock()

    def synced_to(self, offset: int) -> None:
        """An fsync covered the writes up to ``offset`` (any thread): the
        waiters are looked at on the event loop."""
        with self._lock:
            if offset <= self.synced:
                return
            self.synced = offset
        loop = self.server.loop
        if self.waiters and loop is not None:
            loop.call_soon_threadsafe(self.wake)

    def everything_synced(self) -> None:
        """The first base of a log turned on at run time holds every write."""
        self.written = self.fed
        self.synced_to(self.fed)

    def wake(self) -> None:
        """Answer the waiters ``synced`` now covers (their replica count
        is never reached: those keep waiting, their timeout reply updated)."""
        synced = self.synced
        for c in list(self.waiters):
            st = c.blocked
            if st is None or st.btype is not AofAck:
                self.waiters.discard(c)
                continue
            woff, _, numreplicas = cast("tuple[int, int, int]", st.data)
            if woff > synced:
                continue
            if numreplicas > 0:
                st.timeout_reply = reply(1)
                continue
            self.waiters.discard(c)
            self.server.blocking.answer(c, reply(1))

    def log_off(self) -> None:
        """appendonly turned off: a WAITAOF that counts on the local copy
        is refused, as Valkey refuses it then."""
        for c in list(self.waiters):
            st = c.blocked
            self.waiters.discard(c)
            if st is not None and st.btype is AofAck and cast("tuple[int, int, int]", st.data)[1]:
                self.server.blocking.answer(c, DISABLED)

"""CLIENT PAUSE: commands wait, they are not refused.

While a pause lasts, dispatch's fast path is switched off (the server
serves a copy of its table with an empty fast map, as limits.py does for
maxmemory, so the lookup dispatch already makes sends every request down
the full path) and the full path asks ``must_wait``. A request that
must wait is handed back to its connection, which keeps it, stops reading
and runs it, then whatever followed it, once the pause ends (timeout or
CLIENT UNPAUSE). Clients in MONITOR mode are never paused, as Valkey
exempts them with its replicas.

PAUSE WRITE holds what may write: write commands and those Valkey flags
may_replicate, except that EVAL, EVALSHA and FCALL are judged by their
script's flags (a ``no-writes`` script runs), as Valkey's getCommandFlags
does. Key expiry waits while any pause lasts: an expired key reads as
missing but stays stored until the pause ends.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol

from .limits import MemoryLimitHost, apply_maxmemory

if TYPE_CHECKING:
    from ..keyspace.db import Db
    from ..protocol.table import Command
    from .client import Client
    from .host import Peer
    from .observe import Observer


class PauseHost(MemoryLimitHost, Protocol):
    """What CLIENT PAUSE uses of the server (server.py)."""

    dbs: list[Db]
    loop: asyncio.AbstractEventLoop | None
    observer: Observer


# Commands whose script's flags say whether they write; other commands are
# held for their write or may_replicate flag (Command.may_replicate).
_SCRIPTS = frozenset((b"eval", b"evalsha", b"fcall", b"eval_ro", b"evalsha_ro", b"fcall_ro"))


class Pause:
    def __init__(self, server: PauseHost) -> None:
        self.server = server
        self.end = 0.0  # monotonic seconds; 0 while nothing is paused
        self.all = False
        self.timer: asyncio.TimerHandle | None = None
        self.waiting: list[Peer] = []
        # Whether a script command writes, judged from the script's flags
        # (None: its flags do not say). The scripting engine sits above this
        # layer, so it hands the judgement in when the server is built.
        self.script_writes: Callable[[bytes, list[bytes]], bool | None] = lambda name, argv: None

    def start(self, ms: int, pause_all: bool) -> None:
        """Valkey's pauseClientsByClient: a later end wins, and ALL is kept
        over WRITE until the pause ends."""
        end = time.monotonic() + ms / 1000
        self.all = pause_all or (self.all and self.end > 0)
        if end > self.end:
            self.end = end
            if self.timer is not None:
                self.timer.cancel()
            loop = self.server.loop or asyncio.get_event_loop()
            self.timer = loop.call_later(max(ms / 1000, 0.0), self.stop)
        self.hide_fast()
        for db in self.server.dbs:  # expiry waits with writes, as in Valkey
            db.expiry_paused = True

    def hide_fast(self) -> None:
        """Serve a copy of the current table without its fast map (also
        called when maxmemory picks another table during a pause)."""
        server = self.server
        if server.table.fast:
            server.table = server.table.with_fast({})

    def stop(self) -> None:
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None
        self.end = 0.0
        self.all = False
        server = self.server
        for db in server.dbs:
            db.expiry_paused = False
        apply_maxmemory(server, server.maxmemory)  # the table it serves unpaused
        waiting, self.waiting = self.waiting, []
        # As Valkey unblocks them: after the current command has answered.
        loop = server.loop or asyncio.get_event_loop()
        for conn in waiting:
            loop.call_soon(conn.resume)

    def must_wait(self, c: Client, cmd: Command, argv: list[bytes]) -> bool:
        if c in self.server.observer.monitors:
            return False
        if self.all:
            return True
        if self._writes(cmd, argv):
            return True
        if cmd.bname == b"exec" and c.multi:
            return any(self._writes(q, a) for q, a in c.multi)
        return False

    def _writes(self, cmd: Command, argv: list[bytes]) -> bool:
        """Valkey's is_may_replicate_command, with a script's flags in
        place of EVAL's and FCALL's own (getCommandFlags)."""
        name = (cmd.parent or cmd).bname
        if name in _SCRIPTS:
            w = self.script_writes(name, argv)
            if w is not None:
                return w
        return cmd.write or cmd.may_replicate

    def hold(self, conn: Peer) -> None:
        self.waiting.append(conn)

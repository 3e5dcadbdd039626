"""A client session: what one connection has chosen and is in the middle of.

Kept apart from the network code (``connection.py``) so that commands run the
same way for a socket, inside EXEC, or from a script: each gets a ``Client``
and nothing else.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from .resp import RESP2, Encoder

if TYPE_CHECKING:
    from .db import Db
    from .registry import Command
    from .server import Server


class Client:
    __slots__ = (
        "server", "id", "db", "r", "resp", "name", "lib_name", "lib_ver",
        "authenticated", "user", "multi", "multi_error", "watched", "watch_dirty",
        "closing", "close_after_reply", "addr", "laddr", "fd", "created",
        "last_interaction", "last_cmd", "transport", "no_evict", "no_touch",
        "in_exec", "in_script", "flags_extra", "tot_net_in", "tot_net_out",
        "tot_cmds",
    )

    def __init__(self, server: Server, id: int, addr: str = "", laddr: str = "", fd: int = -1) -> None:
        self.server = server
        self.id = id
        self.db: Db = server.dbs[0]
        self.r: Encoder = RESP2
        self.resp = 2
        self.name = b""
        self.lib_name = b""
        self.lib_ver = b""
        self.authenticated = not server.requires_auth()
        self.user = b"default"
        self.multi: list[tuple[Command, list[bytes]]] | None = None
        self.multi_error = False
        self.watched: list[tuple[Db, bytes]] = []
        self.watch_dirty = False
        self.closing = False
        self.close_after_reply = False
        self.addr = addr
        self.laddr = laddr
        self.fd = fd
        self.created = time.monotonic()
        self.last_interaction = self.created
        self.last_cmd = b"NULL"
        self.transport: Any = None
        self.no_evict = False
        self.no_touch = False
        self.in_exec = False
        self.in_script = False
        self.flags_extra = ""
        self.tot_net_in = 0
        self.tot_net_out = 0
        self.tot_cmds = 0

    def set_protocol(self, proto: int) -> None:
        from .resp import ENCODERS

        self.resp = proto
        self.r = ENCODERS[proto]

    def select(self, index: int) -> None:
        self.db = self.server.dbs[index]

    def unwatch(self) -> None:
        for db, key in self.watched:
            clients = db.watchers.get(key)
            if clients is not None:
                clients.discard(self)
                if not clients:
                    del db.watchers[key]
        self.watched = []
        self.watch_dirty = False

    def flag_multi(self) -> None:
        """An error while queueing dooms the transaction (EXEC will answer
        EXECABORT): like Valkey, drop what was queued and queue no more."""
        self.multi_error = True
        if self.multi:
            self.multi.clear()

    def discard_multi(self) -> None:
        self.multi = None
        self.multi_error = False
        self.unwatch()

"""A client session: what one connection has chosen and is in the middle of.

Kept apart from the network code (``connection.py``) so that commands run the
same way for a socket, inside EXEC, or from a script: each gets a ``Client``
and nothing else.
"""

from __future__ import annotations

from time import time
from typing import TYPE_CHECKING

from ..protocol.resp import ENCODERS, RESP2, Encoder

if TYPE_CHECKING:
    from ..keyspace.db import Db
    from ..protocol.table import Command
    from ..server import Server
    from .acl import User
    from .blocking import BlockState
    from .host import Transport
    from .tracking import TrackState


class Watch:
    """One WATCHed key, Valkey's ``watchedKey``. ``expired`` records that the
    key had already expired (but was still stored) when it was watched: its
    later deletion is then no change, and EXEC does not abort for it."""

    __slots__ = ("db", "key", "expired")

    def __init__(self, db: Db, key: bytes, expired: bool) -> None:
        self.db = db
        self.key = key
        self.expired = expired


class Client:
    __slots__ = (
        "server", "id", "db", "r", "resp", "name", "lib_name", "lib_ver",
        "authenticated", "user", "multi", "multi_error", "watched", "watch_dirty",
        "closing", "close_after_reply", "addr", "laddr", "fd", "ctime",
        "last_interaction", "last_cmd", "transport", "no_evict", "no_touch",
        "in_exec", "in_script", "flags_extra", "tot_net_in", "tot_net_out",
        "tot_cmds", "mstate", "watch_dbs", "exec_argv", "exec_queue", "exec_out",
        "out", "acl", "unrestricted", "channels", "patterns", "shard_channels",
        "subscriptions", "pushed", "blocked",
        "track", "hooks", "reply_off", "reply_skip", "reply_skip_next",
        "readonly", "import_source", "capa_redirect", "fast_map", "fast_name", "fast_cmd", "lua_debug",
        "mem_usage", "mem_bucket", "woff",
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
        # Valkey's c->flag.authenticated: set by AUTH / HELLO AUTH, or at
        # connection time when the default user takes no password.
        self.authenticated = not server.acl.auth_required()
        self.user = b"default"
        self.acl: User = server.acl.default
        # Dispatch's fast path: authenticated and allowed everything (acl.refresh).
        self.unrestricted = self.authenticated and self.acl.unrestricted
        self.multi: list[tuple[Command, list[bytes]]] | None = None
        self.multi_error = False
        # (db, key) -> Watch, in WATCH order.
        self.watched: dict[tuple[Db, bytes], Watch] = {}
        self.watch_dirty = False
        self.closing = False
        self.close_after_reply = False
        # SCRIPT DEBUG: 0 off, else how the next EVAL is debugged (scripting/debugger.py).
        self.lua_debug = 0
        self.addr = addr
        self.laddr = laddr
        self.fd = fd
        # Wall-clock seconds, as Valkey's ctime and last_interaction: CLIENT
        # LIST's age= and idle= tick at second boundaries, not per elapsed second.
        self.ctime = int(time())
        self.last_interaction = float(self.ctime)
        self.last_cmd = b"NULL"
        # Dispatch's last fast-path lookup: the table's fast map it was made
        # in, the name as sent and its command. A pipeline repeats one name,
        # and comparing it costs less than hashing it for the map again.
        self.fast_map: dict[bytes, Command] | None = None
        self.fast_name = b""
        self.fast_cmd: Command | None = None
        self.transport: Transport | None = None
        self.no_evict = False
        # Client memory (clientmem.py): the last figure measured, and the
        # eviction bucket the client is in (-1: none).
        self.mem_usage = 0
        self.mem_bucket = -1
        self.no_touch = False
        # The count of writes logged after this client's last one (WAITAOF: persist/acks.py).
        self.woff = 0
        self.readonly = False  # READONLY: shown as flag r; no cluster to route
        self.import_source = False  # CLIENT IMPORT-SOURCE ON: shown as flag I
        self.capa_redirect = False  # CLIENT CAPA redirect: shown as capa=r
        self.in_exec = False
        self.in_script = False
        self.flags_extra = ""
        self.tot_net_in = 0
        self.tot_net_out = 0
        self.tot_cmds = 0
        # Valkey 9 allocates a client's transaction state on its first MULTI
        # or WATCH and keeps it: CLIENT LIST shows multi=-1 until then, and
        # counts the per-database WATCH tables (created on the first WATCH in
        # a database, kept after UNWATCH) in tot-mem.
        self.mstate = False
        self.watch_dbs: set[int] = set()
        # While EXEC runs: its own arguments, the queue it runs and the
        # replies produced so far (CLIENT INFO inside EXEC reports them).
        self.exec_argv: list[bytes] | None = None
        self.exec_queue: list[tuple[Command, list[bytes]]] = []
        self.exec_out: list[bytes] = []
        # Replies produced earlier in the current read, not yet written:
        # Valkey's output buffer (obl=) for a pipelined CLIENT INFO / LIST.
        self.out: list[bytes] | None = None
        # Pub/sub (pubsub.py): what the client listens to, and the total, not
        # zero while the client is in pub/sub mode.
        self.channels: dict[bytes, None] = {}
        self.patterns: dict[bytes, None] = {}
        self.shard_channels: dict[bytes, None] = {}
        self.subscriptions = 0
        # Frames pushed to this client while it runs a request, sent after
        # that request's reply (Valkey's pending_push_messages).
        self.pushed: list[bytes] | None = None
        # What this client waits for while a blocking command holds it
        # (blocking.py), else None.
        self.blocked: BlockState | None = None
        # Client-side caching (tracking.py): the options, None until the
        # client first turns tracking on.
        self.track: TrackState | None = None
        # CLIENT REPLY OFF, and SKIP (for the request after the next one,
        # then for the next one: Valkey's reply_skip_next and reply_skip).
        self.reply_off = False
        self.reply_skip = False
        self.reply_skip_next = False
        # Set while tracking or CLIENT REPLY OFF|SKIP apply: such a client
        # leaves dispatch's fast path for the one that handles them
        # (tracking.refresh_hooks keeps ``unrestricted`` in step).
        self.hooks = False

    def push(self, payload: bytes) -> None:
        """Send out-of-band data (an encoded frame: a pub/sub message, a
        MONITOR line, ...) in Valkey's order with the client's own replies.

        While the client runs a request of its own (``out`` is set for the
        duration of its read), the frame follows that request's reply, and
        a request inside EXEC or a script counts as part of the EXEC or the
        script (the connection appends ``pushed`` after each top-level
        reply). Otherwise it goes to the connection now, behind whatever is
        still waiting there, under the output-buffer limit of the client's
        class."""
        if self.out is not None:
            pushed = self.pushed
            if pushed is None:
                self.pushed = [payload]
            else:
                pushed.append(payload)
            return
        if self.closing:
            return
        conn = self.server.connections.get(self.id)
        if conn is not None:
            conn.push(payload)

    def set_protocol(self, proto: int) -> None:
        self.resp = proto
        self.r = ENCODERS[proto]

    def select(self, index: int) -> None:
        self.db = self.server.dbs[index]

    def unwatch_keys(self) -> None:
        """Valkey's unwatchAllKeys: forget the keys, keep the dirty flag."""
        for db, key in self.watched:
            clients = db.watchers.get(key)
            if clients is not None:
                clients.pop(self, None)
                if not clients:
                    del db.watchers[key]
                    if not db.watchers:
                        db.refresh_signalled()
        self.watched = {}

    def unwatch(self) -> None:
        self.unwatch_keys()
        self.watch_dirty = False

    def touched(self) -> None:
        """A watched key changed (Valkey's touchWatchedKey): the transaction
        is doomed, so its queue and watches are dropped at once and later
        commands are no longer queued."""
        self.watch_dirty = True
        if self.multi:
            self.multi = []
        self.unwatch_keys()

    def discard_multi(self) -> None:
        self.multi = None
        self.multi_error = False
        self.unwatch()

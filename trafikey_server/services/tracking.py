"""Client-side caching: which clients may hold which keys, and telling them
when those keys change (Valkey's tracking.c).

A client that turns ``CLIENT TRACKING on`` is remembered against every key
its read-only commands read (the keys come from the command table's key
specs, as Valkey's call() takes them). The table is keyed by key name alone,
across databases, as Valkey keeps it: a write to ``k`` in any database
invalidates ``k`` for everyone who read a ``k``. A key's entry is dropped
when it is invalidated; the client reads it again to be told again.

BCAST clients are not remembered per key: they register prefixes, and every
key written under a prefix is collected and sent once per event-loop turn,
as Valkey sends them from beforeSleep.

The messages go to the client itself in RESP3 (``>2 invalidate [keys]``,
or a null for a flush), to the client it redirects to (a RESP3 push, or
for a RESP2 redirect client in Pub/Sub mode a message on
``__redis__:invalidate``), or nowhere (RESP2 without redirection). An
invalidation the current client caused for itself waits until its reply has
been sent (``pending``), as Valkey 7+ defers it; ``Client.push`` puts
every push to a client after the reply of the request it is running.

Nothing here runs unless a client tracks: the keyspace calls ``changed``
only while ``Db.signalled`` is set, and dispatch calls in only for clients
whose ``hooks`` flag is set and while ``clients`` is non-zero.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final, Protocol

from ..protocol.args import cstr
from ..protocol.keyspecs import request_keys
from .acl import refresh

if TYPE_CHECKING:
    import asyncio

    from ..keyspace.db import Db
    from ..protocol.table import Command
    from .client import Client
    from .config import Config


class TrackingHost(Protocol):
    """What client-side caching uses of the server (server.py)."""

    clients: dict[int, Client]
    config: Config
    dbs: list[Db]
    loop: asyncio.AbstractEventLoop | None


_INVALIDATE: Final = b">2\r\n$10\r\ninvalidate\r\n"
_RESP2_MESSAGE: Final = b"*3\r\n$7\r\nmessage\r\n$20\r\n__redis__:invalidate\r\n"
_NULLS: Final = {2: b"$-1\r\n", 3: b"_\r\n"}
# The read-only script commands: the keys of the commands a script calls are
# remembered, not the script's own key arguments (Valkey's call()).
_SCRIPT_RO: Final = frozenset((b"eval_ro", b"evalsha_ro", b"fcall_ro"))


class TrackState:
    """One client's tracking options (Valkey's tracking flags on the client)."""

    __slots__ = ("on", "bcast", "optin", "optout", "noloop", "caching", "redirect", "broken", "prefixes")

    def __init__(self) -> None:
        self.on = False
        self.bcast = False
        self.optin = False
        self.optout = False
        self.noloop = False
        # CLIENT CACHING yes|no given for the next command (or transaction).
        self.caching = False
        self.redirect = 0
        self.broken = False
        self.prefixes: dict[bytes, None] = {}


class Bcast:
    """A registered prefix: its clients, and the keys written under it since
    the last broadcast, each with the client that wrote it last (NOLOOP)."""

    __slots__ = ("clients", "keys")

    def __init__(self) -> None:
        self.clients: dict[Client, None] = {}
        self.keys: dict[bytes, Client | None] = {}


def _keys_array(keys: list[bytes]) -> bytes:
    return b"*%d\r\n" % len(keys) + b"".join(b"$%d\r\n%s\r\n" % (len(k), k) for k in keys)


def _id_order(cid: int) -> bytes:
    """Valkey stores client IDs in a radix tree under their in-memory
    (little-endian) bytes: invalidations go out in that order."""
    return cid.to_bytes(8, "little")


def overlap(a: bytes, b: bytes) -> bool:
    n = min(len(a), len(b))
    return a[:n] == b[:n]


class Tracking:
    def __init__(self, server: TrackingHost) -> None:
        self.server = server
        # key -> ids of the clients that may cache it.
        self.table: dict[bytes, dict[int, None]] = {}
        self.items = 0
        self.prefixes: dict[bytes, Bcast] = {}
        # Clients with tracking on (INFO tracking_clients).
        self.clients = 0
        # The client whose command is running, while it tracks (Valkey's
        # server.current_client as far as tracking needs it), and its own
        # keys' invalidations (None: a flush), sent once its command is done.
        self.current: Client | None = None
        self.pending: list[bytes | None] = []
        self._bcast_scheduled = False
        self._effort = 0

    # -- switching tracking on and off ---------------------------------------------------

    def enable(self, c: Client, redirect: int, bcast: bool, optin: bool, optout: bool, noloop: bool,
               prefixes: list[bytes]) -> None:
        t = c.track
        if t is None:
            t = c.track = TrackState()
        if not t.on:
            self.clients += 1
            if self.clients == 1:
                self._observe(True)
        t.on = True
        t.broken = False
        t.redirect = redirect
        t.bcast = bcast
        t.optin, t.optout, t.noloop = optin, optout, noloop
        if bcast:
            for p in prefixes or [b""]:
                bs = self.prefixes.get(p)
                if bs is None:
                    bs = self.prefixes[p] = Bcast()
                if c not in bs.clients:
                    bs.clients[c] = None
                    t.prefixes[p] = None
        refresh_hooks(c)

    def disable(self, c: Client) -> None:
        """Valkey's disableTracking: the client leaves its prefixes; its
        entries in the key table are dropped lazily, when those keys are
        next invalidated. The redirection is kept (GETREDIR aside), as
        Valkey keeps it, for invalidations still on their way."""
        t = c.track
        if t is None or not t.on:
            return
        for p in t.prefixes:
            bs = self.prefixes[p]
            bs.clients.pop(c, None)
            if not bs.clients:
                del self.prefixes[p]
        t.prefixes = {}
        t.on = t.broken = t.bcast = t.optin = t.optout = t.caching = t.noloop = False
        self.clients -= 1
        self._maybe_stop()
        refresh_hooks(c)

    def _maybe_stop(self) -> None:
        """With no client tracking, the keyspace stops telling us of writes
        once the last entry left by former trackers is gone (Valkey keeps
        them until their keys change)."""
        if not self.clients and not self.table:
            self._observe(False)

    def _observe(self, on: bool) -> None:
        for db in self.server.dbs:
            if on:
                db.observe(self.changed)
            else:
                db.unobserve(self.changed)

    def prefix_collision(self, c: Client, prefixes: list[bytes]) -> bytes | None:
        """Valkey's checkPrefixCollisionsOrReply: the error text, or None."""
        own = list(c.track.prefixes) if c.track is not None else []
        for i, p in enumerate(prefixes):
            for q in own:
                if overlap(q, p):
                    return (b"ERR Prefix '%s' overlaps with an existing prefix '%s'. "
                            b"Prefixes for a single client must not overlap." % (cstr(p), cstr(q)))
            for q in prefixes[i + 1:]:
                if overlap(p, q):
                    return (b"ERR Prefix '%s' overlaps with another provided prefix '%s'. "
                            b"Prefixes for a single client must not overlap." % (cstr(p), cstr(q)))
        return None

    # -- reads ----------------------------------------------------------------------------

    def after_call(self, cmd: Command, argv: list[bytes]) -> None:
        """A command ran (inside a script or a transaction too): remember the
        keys a read-only one read, for the client that sent the request."""
        cur = self.current
        if cur is None or not cmd.readonly or cmd.bname in _SCRIPT_RO:
            return
        t = cur.track
        if t is None or not t.on or t.bcast:
            return
        if t.caching if t.optout else (t.optin and not t.caching):
            return
        cid = cur.id
        table = self.table
        for key in request_keys(cmd, argv):
            ids = table.get(key)
            if ids is None:
                ids = table[key] = {}
            if cid not in ids:
                ids[cid] = None
                self.items += 1

    # -- writes ---------------------------------------------------------------------------

    def changed(self, key: bytes, by_client: bool) -> None:
        """A key was modified (``by_client``) or removed by expiry: Valkey's
        trackingInvalidateKey with BCAST collection."""
        if self.prefixes:
            self._collect(key, self.current if by_client else None)
        self.invalidate(key)

    def invalidate(self, key: bytes) -> None:
        ids = self.table.pop(key, None)
        if ids is None:
            return
        self.items -= len(ids)
        if not self.clients:
            self._maybe_stop()
        clients = self.server.clients
        cur = self.current
        for cid in sorted(ids, key=_id_order) if len(ids) > 1 else ids:
            target = clients.get(cid)
            if target is None:
                continue
            t = target.track
            if t is None or not t.on or t.bcast:
                continue
            if target is cur:
                if not t.noloop:
                    self.pending.append(key)
            else:
                self.send(target, _keys_array([key]))

    def flushed(self) -> None:
        """FLUSHDB / FLUSHALL: every tracking client is told that all its
        keys are gone (a null), and the table is emptied."""
        if self.clients:
            for c in list(self.server.clients.values()):
                t = c.track
                if t is not None and t.on:
                    if c is self.current:
                        self.pending.append(None)
                    else:
                        self.send(c, _NULLS[c.resp])
        self.table = {}
        self.items = 0
        self._maybe_stop()

    def _collect(self, key: bytes, by: Client | None) -> None:
        for prefix, bs in self.prefixes.items():
            if key.startswith(prefix):
                bs.keys[key] = by
                if not self._bcast_scheduled:
                    self._bcast_scheduled = True
                    loop = self.server.loop
                    if loop is not None:
                        loop.call_soon(self.broadcast)

    def broadcast_due(self) -> None:
        """At the end of a turn, before its writes (Valkey's beforeSleep
        broadcasts, then writes): the BCAST messages the turn's writes made."""
        if self._bcast_scheduled:
            self.broadcast()

    def broadcast(self) -> None:
        """The keys written under each prefix since the last turn, to every
        client of that prefix (less the ones it wrote itself, with NOLOOP)."""
        self._bcast_scheduled = False
        for prefix in sorted(self.prefixes):
            bs = self.prefixes.get(prefix)
            if bs is None or not bs.keys:
                continue
            keys = sorted(bs.keys)
            common = _keys_array(keys)
            for c in list(bs.clients):
                t = c.track
                if t is not None and t.noloop:
                    own = [k for k in keys if bs.keys[k] is not c]
                    if own:
                        self.send(c, _keys_array(own))
                else:
                    self.send(c, common)
            bs.keys = {}

    def limit(self) -> None:
        """tracking-table-max-keys: over the limit, keys are dropped from the
        table with an invalidation, as if they had changed; the effort grows
        each time one pass was not enough (Valkey's trackingLimitUsedSlots)."""
        limit = self.server.config.values.get("tracking-table-max-keys", 0)
        if not limit or len(self.table) <= limit:
            self._effort = 0
            return
        effort = 100 * (self._effort + 1)
        while effort > 0 and self.table:
            effort -= 1
            self.invalidate(next(iter(self.table)))
            if len(self.table) <= limit:
                self._effort = 0
                return
        self._effort += 1

    # -- delivery -------------------------------------------------------------------------

    def flush_pending(self, c: Client) -> None:
        """After the current client's reply: its own invalidations."""
        pending, self.pending = self.pending, []
        for key in pending:
            self.send(c, _keys_array([key]) if key is not None else _NULLS[c.resp])

    def send(self, c: Client, body: bytes) -> None:
        """Valkey's sendTrackingMessage: ``body`` is the RESP of the keys
        array (or of a null) as the tracking client ``c`` would read it."""
        t = c.track
        redirect = t.redirect if t is not None else 0
        if redirect:
            target = self.server.clients.get(redirect)
            if target is None:
                if t is not None:
                    t.broken = True
                if c.resp > 2:
                    self._push(c, b">2\r\n$21\r\ntracking-redir-broken\r\n:%d\r\n" % redirect)
                return
            if target.resp > 2:
                self._push(target, _INVALIDATE + body)
            elif _in_pubsub(target):
                self._push(target, _RESP2_MESSAGE + body)
            return
        if c.resp > 2:
            self._push(c, _INVALIDATE + body)

    def _push(self, c: Client, payload: bytes) -> None:
        """Every message leaves through the client's one push path, which
        puts it after the reply when c's own request is running."""
        c.push(payload)

    def client_gone(self, c: Client) -> None:
        self.disable(c)
        c.track = None


def refresh_hooks(c: Client) -> None:
    """Whether c's requests need dispatch's path for tracking and CLIENT
    REPLY; a client that does leaves the fast path (acl.refresh)."""
    t = c.track
    c.hooks = (t is not None and t.on) or c.reply_off or c.reply_skip or c.reply_skip_next
    refresh(c)


def _in_pubsub(c: Client) -> bool:
    """Whether c is in Pub/Sub mode (subscribed to anything)."""
    return c.subscriptions > 0



"""Commands that wait for a key: one layer for every blocking command.

A handler that finds nothing to take calls ``block`` with the keys it waits
for and the type of value that would satisfy it; ``block`` records the
client on each key (``Db.blocking``, in the order clients blocked) and
raises ``Blocked``, which dispatch answers with ``POSTPONED``: the
connection keeps the request and stops reading, the same hold CLIENT PAUSE
uses. Nothing is replied and no statistics are kept until the client is
unblocked, as in Valkey.

A key becomes *ready* when a value is added under it while someone waits
for it (``Db.add`` / ``Db.set`` of an absent key, SWAPDB), when a command
grows a value in place that readers wait on (XADD: ``Db.signal_ready``),
and, for the clients that block with ``nokey`` (XREADGROUP, whose group
goes with its key), when it is deleted, replaced or emptied: the database
appends it once to ``ready``. Dispatch calls ``serve`` after every
top-level command, so the clients are served after the command, the whole
transaction or the whole script that made the key ready, never in the
middle of one (Valkey's handleClientsBlockedOnKeys). Each ready key's
clients are served in the order they blocked: a client whose awaited type
matches the value is unblocked on all its keys and its request runs again,
now (through the connection, with every check of a fresh request: a pause
may hold it, an empty key may block it again, keeping its deadline); the
rest of its pipeline follows once the current event-loop turn is done.

Deadlines are on the server's clock (``clock.py``) in milliseconds: a
timer wakes the server for the nearest one while the clock runs, and
moving the test clock (TRAFIKEY.CLOCK) checks them at once. A client that
times out, or that CLIENT UNBLOCK releases, gets the command's timeout
reply (or the UNBLOCKED error) and goes on with its pipeline. Lists and
streams reuse all of this unchanged: they only call ``block`` with their
own value type and timeout reply.
"""

from __future__ import annotations

import heapq
from typing import TYPE_CHECKING, Final, NoReturn, Protocol

from ..util.errors import CommandError
from ..util.longdouble import parse as parse_long_double
from ..util.longdouble import times

if TYPE_CHECKING:
    import asyncio
    from collections.abc import Mapping

    from ..keyspace.db import Db
    from ..protocol.table import Table
    from ..util.clock import Clock
    from .client import Client
    from .host import Peer


class BlockingHost(Protocol):
    """What blocking commands use of the server (server.py)."""

    clock: Clock
    dbs: list[Db]
    loading: bool
    loop: asyncio.AbstractEventLoop | None
    table: Table

    @property
    def busy_run(self) -> object: ...
    @property
    def connections(self) -> Mapping[int, Peer]: ...

    def count_error(self, msg: bytes) -> None: ...


_LLONG_MAX: Final = (1 << 63) - 1
UNBLOCKED_ERR: Final = b"-UNBLOCKED client unblocked via CLIENT UNBLOCK\r\n"


class Blocked(Exception):
    """Raised by a handler that parked its client (see ``block``)."""


BLOCKED: Final = Blocked()


class Elsewhere:
    """The awaited type of a client parked while its command's work goes on
    elsewhere (MIGRATE's transfer) and not on a key: no value is of this
    type, and CLIENT UNBLOCK does not reach such a client, as Valkey holds
    the whole server for that work."""


class Delayed:
    """The awaited type of a client whose reply a fault rule holds back
    (TRAFIKEY.FAULT ... DELAY, ``delay``): its command has run and counted;
    the reply goes out at the deadline, and its next requests wait behind
    it as behind any blocked command. CLIENT UNBLOCK does not reach it: a
    slow network has no such lever."""


def parse_timeout(c: Client, arg: bytes) -> int:
    """A timeout in seconds (a long double, as Valkey's
    getTimeoutFromObjectOrReply reads it) as an absolute deadline in
    server-clock milliseconds, 0 for none."""
    if arg.isdigit() and len(arg) < 16:  # whole seconds, the common case: exact without long doubles
        t = int(arg) * 1000
        return t + c.server.clock.ms() if t else 0
    v = parse_long_double(arg)
    if v is None:
        raise CommandError(b"ERR timeout is not a float or out of range")
    ms = times(v, 1000)  # rounded as Valkey's long double product is
    if ms > _LLONG_MAX:
        raise CommandError(b"ERR timeout is out of range")
    if ms != ms or ms == float("-inf"):
        raise CommandError(b"ERR timeout is negative")
    ceil = int(-((-ms) // 1))  # exact for a Fraction
    if ceil < 0:
        raise CommandError(b"ERR timeout is negative")
    if ceil > 0:
        now = c.server.clock.ms()
        if ceil > _LLONG_MAX - now:
            raise CommandError(b"ERR timeout is out of range")
        ceil += now
    return ceil


def may_block(c: Client) -> bool:
    """False inside MULTI/EXEC, scripts and the replay of the append-only
    file (Valkey's deny_blocking): the command answers at once, as when its
    timeout has passed."""
    return not (c.in_exec or c.in_script or c.server.loading)


class BlockState:
    """What a blocked client waits for (Valkey's bstate)."""

    __slots__ = ("db", "keys", "btype", "deadline", "timeout_reply", "nokey", "data")

    def __init__(self, db: Db, keys: list[bytes], btype: type, deadline: int, timeout_reply: bytes,
                 nokey: bool = False, data: object = None) -> None:
        self.db = db
        self.keys = keys
        self.btype = btype
        self.deadline = deadline
        self.timeout_reply = timeout_reply
        # Served also when a key is deleted, overwritten or its value
        # changes type (Valkey's unblock_on_nokey: XREADGROUP, whose group
        # is then gone and which answers with the error its rerun finds).
        self.nokey = nokey
        # What the command settled when it blocked and reads again when it
        # runs again (``resumed``): XREAD's ``$`` as the IDs it stood for.
        self.data = data


class Blocking:
    def __init__(self, server: BlockingHost) -> None:
        self.server = server
        # Keys made ready since the last serve, each (db, key) once:
        # every Db appends here (Db.ready_sink), dispatch tests it after
        # each top-level command.
        self.ready: list[tuple[Db, bytes]] = []
        for db in server.dbs:
            db.ready_sink = self.ready
        self.clients: set[Client] = set()
        # (deadline, order, client) for clients with a deadline; stale
        # entries (client since unblocked or re-blocked) are skipped.
        self._deadlines: list[tuple[int, int, Client]] = []
        self._order = 0
        self._timer: asyncio.TimerHandle | None = None
        self._serving = False
        # The state of the client whose request is running again after a
        # key was ready: a second block keeps its deadline.
        self._rerun: dict[Client, BlockState] = {}
        # The client whose request runs again now: MONITOR saw it when it
        # blocked and is not told twice (observe.py).
        self.rerunning: Client | None = None

    # -- blocking ------------------------------------------------------------------

    def block(self, c: Client, keys: list[bytes], btype: type, deadline: int, timeout_reply: bytes,
              nokey: bool = False, data: object = None) -> NoReturn:
        """Park c on keys until one holds a ``btype`` value or the deadline
        (server-clock ms, 0 for none) passes; with ``nokey`` also when one
        is deleted or replaced. ``data`` is kept for the rerun (``resumed``)."""
        kept = self._rerun.get(c)
        if kept is not None:
            deadline = kept.deadline
        db = c.db
        unique = list(dict.fromkeys(keys))
        st = BlockState(db, unique, btype, deadline, timeout_reply, nokey, data)
        blocking = db.blocking
        for k in unique:
            waiting = blocking.get(k)
            if waiting is None:
                blocking[k] = [c]
            else:
                waiting.append(c)
        c.blocked = st
        self.clients.add(c)
        if deadline:
            self._order += 1
            heap = self._deadlines
            heapq.heappush(heap, (deadline, self._order, c))
            if len(heap) > 2 * len(self.clients) + 1024:  # entries of clients served long before their deadline
                self._deadlines = [e for e in heap if e[2].blocked is not None and e[2].blocked.deadline == e[0]]
                heapq.heapify(self._deadlines)
            self._arm()
        raise BLOCKED

    def delay(self, c: Client, reply: bytes, ms: int) -> None:
        """Hold c's reply for ``ms`` milliseconds of the server's clock (a
        frozen clock holds it until TRAFIKEY.CLOCK moves it that far): the
        deadline timers of blocked clients serve it, and the connection
        keeps c's next requests as it does behind a blocked one."""
        # A deadline is past once the clock is beyond it (``expire``).
        deadline = c.server.clock.ms() + ms - 1
        c.blocked = BlockState(c.db, [], Delayed, deadline, reply)
        self.clients.add(c)
        self._order += 1
        heapq.heappush(self._deadlines, (deadline, self._order, c))
        self._arm()

    def _release(self, c: Client) -> BlockState | None:
        """Take c off every key it waits for (Valkey's unblockClient)."""
        st = c.blocked
        if st is None:
            return None
        c.blocked = None
        self.clients.discard(c)
        blocking = st.db.blocking
        for k in st.keys:
            waiting = blocking.get(k)
            if waiting is not None:
                try:
                    waiting.remove(c)
                except ValueError:  # pragma: no cover
                    pass
                if not waiting:
                    del blocking[k]
        return st

    def resumed(self, c: Client) -> BlockState | None:
        """The state c blocked with, while its request runs again after a
        key was ready (None otherwise)."""
        return self._rerun.get(c) if self._rerun else None

    def forget(self, c: Client) -> None:
        """The client is gone (disconnect, CLIENT KILL)."""
        self._release(c)

    # -- serving -----------------------------------------------------------------

    def serve(self) -> None:
        """Valkey's handleClientsBlockedOnKeys: run every ready key's
        waiting clients, in the order they blocked, until no key is ready
        (a served command may make another key ready)."""
        if self._serving or self.server.busy_run is not None:
            # Not in the middle of a script past busy-reply-threshold, whose
            # caller still runs it (Valkey's isInsideYieldingLongCommand):
            # its keys are served once it ends.
            return
        self._serving = True
        try:
            while self.ready:
                batch = self.ready[:]
                del self.ready[:]
                for db, key in batch:
                    db.ready_keys.discard(key)
                    self._serve_key(db, key)
        finally:
            self._serving = False

    def _serve_key(self, db: Db, key: bytes) -> None:
        waiting = db.blocking.get(key)
        if not waiting:
            return
        # Only the clients waiting now: one that blocks again goes to the end.
        for c in waiting[:]:
            st = c.blocked
            if st is None or st.db is not db:
                continue
            v = db.get(key)
            if (v is None or type(v) is not st.btype) and not st.nokey:
                continue
            conn = self.server.connections.get(c.id)
            self._release(c)
            if conn is None:
                continue
            self._rerun[c] = st
            self.rerunning = c
            try:
                conn.run_unblocked()
            finally:
                self._rerun.pop(c, None)
                self.rerunning = None

    # -- ending a wait without the key ----------------------------------------

    def unblock(self, c: Client, error: bool) -> bool:
        """CLIENT UNBLOCK: the timeout reply, or the UNBLOCKED error (not
        for a client waiting on work done ``Elsewhere``)."""
        st = c.blocked
        if st is None or st.btype is Elsewhere or st.btype is Delayed:
            return False
        self._finish(c, UNBLOCKED_ERR if error else st.timeout_reply, error, rejected=error)
        return True

    def answer(self, c: Client, reply: bytes) -> None:
        """A client parked while its command's work went on elsewhere
        (MIGRATE's transfer) gets the command's reply now."""
        self._finish(c, reply, reply.startswith(b"-"))

    def _finish(self, c: Client, reply: bytes, error: bool, rejected: bool = False) -> None:
        """Answer a blocked client without running its command again,
        counting the call as Valkey's updateStatsOnUnblock does. The
        UNBLOCKED error comes outside any command's run, which Valkey 9.1
        counts as a rejected call, never a failed one."""
        self._release(c)
        cmd = self.server.table.lookup(c.last_cmd)
        if cmd is not None:
            cmd.calls += 1
            if rejected:
                cmd.rejected_calls += 1
        c.tot_cmds += 1
        if error:
            self.server.count_error(reply[1:-2])
        conn = self.server.connections.get(c.id)
        if conn is not None:
            conn.answer_unblocked(reply)

    def _arm(self) -> None:
        """A timer for the nearest deadline while the clock runs; a frozen
        clock moves only through TRAFIKEY.CLOCK, which calls ``expire``."""
        server = self.server
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        heap = self._deadlines
        while heap and heap[0][2].blocked is None:
            heapq.heappop(heap)
        if not heap or server.clock.frozen_ms is not None or server.loop is None:
            return
        delay = max(heap[0][0] + 1 - server.clock.ms(), 0) / 1000
        self._timer = server.loop.call_later(delay, self.expire)

    def expire(self) -> None:
        """Time out every client whose deadline has passed (Valkey's
        handleBlockedClientsTimeout), earliest first: a deadline is past
        once the clock is beyond it, as in Valkey."""
        self._timer = None
        heap = self._deadlines
        now = self.server.clock.ms()
        while heap and heap[0][0] < now:
            deadline, _, c = heapq.heappop(heap)
            st = c.blocked
            if st is None or st.deadline != deadline:
                continue
            if st.btype is Delayed:  # ran and counted already: only its reply is left
                self._release(c)
                conn = self.server.connections.get(c.id)
                if conn is not None:
                    conn.answer_unblocked(st.timeout_reply)
                continue
            self._finish(c, st.timeout_reply, False)
        self._arm()

    def clock_moved(self) -> None:
        if self._deadlines:
            self.expire()

    # -- INFO -----------------------------------------------------------------------

    def blocking_keys(self) -> int:
        return sum(len(db.blocking) for db in self.server.dbs)

    def blocking_keys_on_nokey(self) -> int:
        """Keys with at least one client that also wakes when the key goes
        (XREADGROUP)."""
        return sum(1 for db in self.server.dbs for waiting in db.blocking.values()
                   if any(c.blocked is not None and c.blocked.nokey for c in waiting))

    def in_timeout_table(self) -> int:
        return sum(1 for c in self.clients if c.blocked is not None and c.blocked.deadline)

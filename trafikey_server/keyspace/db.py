"""One logical database: keys, their values and their expiry times.

Expiry is kept in ``expires`` (key -> absolute ms) and checked lazily on
every lookup, as Valkey does. For the active sweep a min-heap of
``(when, key)`` lets the server find due keys without scanning or sampling:
when nothing is due the sweep costs one comparison. A heap entry whose key
has since been persisted, re-expired or deleted is simply skipped when
popped, and the heap is rebuilt when stale entries outnumber live ones.

Every change to a key goes through ``set``/``delete``/``touch`` and ends in
``_signal``, the one place that tells WATCH and the services listening
(``observers``: client tracking) of it. Writes test ``signalled`` alone,
which is false while no key is watched and nothing observes. A value added
under an absent key (``add``, or ``set`` of an absent key: Valkey's dbAdd) is
also where a key some client is blocked on becomes ready (``blocking.py``),
and where keyspace notifications raise ``new``; with nobody blocked and
notifications off that costs two tests. A key deleted, overwritten, expired,
flushed or swapped away is ready for the clients that wait to hear of that
(XREADGROUP, ``_gone``), and XADD signals its key on every entry
(``signal_ready``); each costs one test of ``blocking`` when nobody waits.

Each key's value sits in a ``KeyEntry`` beside its use (access.py: the LRU
clock, or the LFU field while ``lfu`` is set), as Valkey's object carries
its LRU field: a lookup of a live key finds the value and writes its use in
one place, where a second dict cost every GET a second lookup's cache
misses. ``peek`` reads without recording the use (Valkey's LOOKUP_NOTOUCH:
OBJECT); ``stored`` reads what is stored, live or not.

A write's side effects are carried by the write call, as Valkey's setKey,
dbDelete and notifyKeyspaceEvent carry them: ``notify`` raises an event
(testing itself whether notifications are on), ``modified`` signals an
in-place change and raises its event, ``members_removed`` deletes a value
its last member left. Strings are stored here too (``set_string``,
``add_string``, ``set_int``, ``unshare_string``): each write stores what
Valkey's object would be (values/string.py's rules: raw or embstr), and
the INCRBYFLOAT results that read as integers yet are embstr in Valkey
(``float_ints``) are this database's state, answered for by
``string_encoding``.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, Final, final

from ..util.errors import wrongtype
from ..values.hash import Hash
from ..values.string import EXPIRE_NEEDS_ROOM, SURELY_EMBSTR, is_int_text, rekeyed, stored
from ..values.zset import ZSet
from .access import Lfu

if TYPE_CHECKING:
    from ..services.client import Client, Watch
    from ..services.notify import Notify
    from ..util.clock import Clock


# A table of INCRBYFLOAT marks is pruned of stale ones at each power of two past this.
_PRUNE_AT: Final = 256


@final
class KeyEntry:
    """A key's value and its use (the LRU clock in seconds, or the LFU
    field: access.py), kept together as Valkey's object keeps them."""

    __slots__ = ("value", "lru")

    def __init__(self, value: Any, lru: int) -> None:
        self.value: Any = value
        self.lru: int = lru


class Db:
    __slots__ = ("id", "data", "expires", "_heap", "clock", "watchers", "avg_ttl", "on_expire", "events", "blocking",
                 "ready_keys", "ready_sink", "expired_count", "expiry_paused", "signalled", "observers",
                 "volatile", "_fheap", "on_fields_expire", "fields_expired", "lfu", "float_ints")

    def __init__(self, id: int, clock: Clock) -> None:
        self.id = id
        self.clock = clock
        # key -> its KeyEntry; ``in``, ``len`` and iteration read it as the keyspace.
        self.data: dict[bytes, KeyEntry] = {}
        self.expires: dict[bytes, int] = {}
        self._heap: list[tuple[int, bytes]] = []
        # key -> the clients watching it (in WATCH order) and their watch;
        # empty unless WATCH is in use.
        self.watchers: dict[bytes, dict[Client, Watch]] = {}
        # Told of every key removed by expiry (the append-only log writes a DEL).
        self.on_expire: Callable[[int, bytes], None] | None = None
        # Keyspace notifications (notify.py), None while they are off: the
        # new-key and expired events are raised here.
        self.events: Notify | None = None
        # key -> the clients blocked on it, in the order they blocked
        # (blocking.py); empty unless a blocking command waits.
        self.blocking: dict[bytes, list[Client]] = {}
        # Keys signalled ready and not yet served, and the server-wide list
        # they are appended to (Blocking.ready).
        self.ready_keys: set[bytes] = set()
        self.ready_sink: list[tuple[Db, bytes]] = []
        # Keys removed by expiry, lazy or active (INFO's expired_keys).
        self.expired_count = 0
        # While CLIENT PAUSE lasts an expired key reads as missing but
        # stays stored (Valkey pauses expiry with writes).
        self.expiry_paused = False
        # -- the change signal: whoever must hear of every change to a key --
        # Told of each change (key, False when expiry removed it): client
        # tracking is one while any client tracks (observe / unobserve).
        self.observers: tuple[Callable[[bytes, bool], None], ...] = ()
        # True while WATCH or an observer needs _signal (refresh_signalled).
        self.signalled = False
        # -- hash-field expiry --
        # Keys whose hash may hold fields with a TTL -> when the sweep is
        # to look at it next (its earliest field expiry, or earlier), with a
        # min-heap of the same (when, key) as the key expiry's: when no field
        # is due the sweep costs one comparison. A heap entry that no longer
        # matches ``volatile`` is skipped; a key no longer holding such a
        # hash is dropped when the sweep meets it. Empty unless HFE is used.
        self.volatile: dict[bytes, int] = {}
        self._fheap: list[tuple[int, bytes]] = []
        # Told of the fields the sweep reaped (the append-only log writes an
        # HDEL, and a DEL when the hash went with them).
        self.on_fields_expire: Callable[[int, bytes, list[bytes], bool], None] | None = None
        # Fields removed by expiry, by the sweep or by a write (INFO's expired_fields).
        self.fields_expired = 0
        # The LFU rules while an LFU maxmemory-policy is selected, else None
        # (each KeyEntry's ``lru`` is then the LFU field).
        self.lfu: Lfu | None = None
        # -- strings --
        # INCRBYFLOAT results that read as integers yet are embstr in
        # Valkey: key -> the stored value object; None while there are none
        # (string writes test that alone). A mark counts only while the key
        # still holds that very object, and every string write clears the
        # written key's mark first, so a stale mark is never mistaken for a
        # fresh one (CPython shares one-byte bytes objects, so identity
        # alone would not do). Stale marks are pruned as the table grows.
        # The marks go with the data: SWAPDB swaps them, a flush or a load
        # in place of the data drops them.
        self.float_ints: dict[bytes, bytes] | None = None

    # -- reads -------------------------------------------------------------

    def get(self, key: bytes) -> Any:
        """The live value of key, or None; an expired key is removed first.
        As in Valkey, a key lives through its expiry millisecond and is
        gone the one after."""
        r = self.data.get(key)
        if r is None:
            return None
        if self.expires and key in self.expires and self.expires[key] < self.clock.ms():
            self._expire(key)
            return None
        if self.lfu is None:
            r.lru = self.clock.lru
        else:
            r.lru = self.lfu.hit(r.lru)
        return r.value

    def peek(self, key: bytes) -> Any:
        """The live value of key without recording a use (LOOKUP_NOTOUCH)."""
        r = self.data.get(key)
        if r is None:
            return None
        if self.expires and key in self.expires and self.expires[key] < self.clock.ms():
            self._expire(key)
            return None
        return r.value

    def stored(self, key: bytes) -> Any:
        """What is stored under key, live or past its time, or None; no
        use recorded, nothing expired (the job core's row reads, the
        append-only log's effects, MEMORY's accounting)."""
        r = self.data.get(key)
        return None if r is None else r.value

    def values(self) -> Iterator[Any]:
        """Every stored value."""
        for r in self.data.values():
            yield r.value

    def items(self) -> Iterator[tuple[bytes, Any]]:
        """Every stored key and value (a save, a rewrite, MEMORY's count)."""
        for k, r in self.data.items():
            yield k, r.value

    def load_values(self, data: dict[bytes, Any]) -> None:
        """Values loaded in place of an empty database's (an RDB load, a
        named snapshot), each used now."""
        lru = self.clock.lru if self.lfu is None else self.lfu.fresh()
        self.data = {k: KeyEntry(v, lru) for k, v in data.items()}

    def use_field(self, key: bytes) -> int | None:
        """The key's LRU clock or LFU field (OBJECT IDLETIME and FREQ, eviction)."""
        r = self.data.get(key)
        return None if r is None else r.lru

    def set_use_field(self, key: bytes, field: int) -> None:
        """RESTORE's IDLETIME or FREQ, in place of the key's field."""
        self.data[key].lru = field

    # The typed reads repeat get()'s few lines instead of calling it: they
    # are the hottest calls in the server, and a call is most of their cost.

    def get_hash(self, key: bytes) -> Hash | None:
        r = self.data.get(key)
        if r is None:
            return None
        if self.expires and key in self.expires and self.expires[key] < self.clock.ms():
            self._expire(key)
            return None
        v = r.value
        if type(v) is Hash:
            if self.lfu is None:
                r.lru = self.clock.lru
            else:
                r.lru = self.lfu.hit(r.lru)
            return v
        raise wrongtype()

    def get_zset(self, key: bytes) -> ZSet | None:
        r = self.data.get(key)
        if r is None:
            return None
        if self.expires and key in self.expires and self.expires[key] < self.clock.ms():
            self._expire(key)
            return None
        v = r.value
        if type(v) is ZSet:
            if self.lfu is None:
                r.lru = self.clock.lru
            else:
                r.lru = self.lfu.hit(r.lru)
            return v
        raise wrongtype()

    def get_string(self, key: bytes) -> bytes | bytearray | None:
        r = self.string_entry(key)
        return None if r is None else r.value

    def string_entry(self, key: bytes) -> KeyEntry | None:
        """The entry of a live string, its use recorded (None if there is
        none; WRONGTYPE for another type): get_string's lookup, kept for a
        write in place (INCR) that needs no second one."""
        r = self.data.get(key)
        if r is None:
            return None
        if self.expires and key in self.expires and self.expires[key] < self.clock.ms():
            self._expire(key)
            return None
        v = r.value
        if type(v) is bytes or type(v) is bytearray:
            if self.lfu is None:
                r.lru = self.clock.lru
            else:
                r.lru = self.lfu.hit(r.lru)
            return r
        raise wrongtype()

    def exists(self, key: bytes) -> bool:
        return self.get(key) is not None

    def ttl_ms(self, key: bytes) -> int | None:
        """Absolute expiry of a live key, or None if it has none."""
        return self.expires.get(key)

    def __len__(self) -> int:
        return len(self.data)

    def live_keys(self) -> Iterator[bytes]:
        """Every key not past its expiry (expired ones are left for the sweep)."""
        if not self.expires:
            yield from list(self.data)
            return
        now = self.clock.ms()
        exp = self.expires
        for k in list(self.data):
            t = exp.get(k)
            if t is None or t >= now:
                yield k

    # -- writes ------------------------------------------------------------

    def set(self, key: bytes, value: Any, keep_ttl: bool = False) -> None:
        """Store value under key; like Valkey's setKey, drops any TTL unless
        keep_ttl. A key that was absent is added (dbAdd): clients blocked
        on it may be served."""
        if self.events:
            self.events.storing(self, key)
        waited = self.blocking and key in self.blocking
        added = waited and (key not in self.data or self.key_is_expired(key))
        r = self.data.get(key)
        if r is None:
            self.data[key] = KeyEntry(value, self.clock.lru if self.lfu is None else self.lfu.fresh())
        else:
            r.value = value
            r.lru = self.clock.lru if self.lfu is None else self.lfu.hit(r.lru)
        if type(value) is Hash and value.ttl is not None:
            self.track_fields(key, min(value.ttl.values()))
        if not keep_ttl and self.expires:
            self.expires.pop(key, None)
        if self.float_ints is not None:  # an INCRBYFLOAT mark is for the value it was made for
            self._forget_float_int(key)
        if self.signalled:
            self._signal(key)
        if waited:
            if added:
                self._ready(key)
            else:
                self._gone(key)  # overwritten: Valkey's dbSetValue signals the old value deleted

    def add(self, key: bytes, value: Any, signal: bool = True) -> None:
        """Store a value under a key known to be absent (no TTL to drop).
        Without ``signal`` the caller signals the change itself, or not at
        all when its call changed nothing (a bit write that created its key
        and then wrote nothing: Valkey's dbAdd alone tells no watcher)."""
        if self.events:
            self.events.emit(self, b"new", key)
        self.data[key] = KeyEntry(value, self.clock.lru if self.lfu is None else self.lfu.fresh())
        if type(value) is Hash and value.ttl is not None:
            self.track_fields(key, min(value.ttl.values()))
        if self.float_ints is not None:
            self._forget_float_int(key)
        if self.signalled and signal:
            self._signal(key)
        if self.blocking:
            self._ready(key)

    def _ready(self, key: bytes) -> None:
        """Valkey's signalKeyAsReady, from dbAdd: a key someone waits for
        now holds a value; it is queued once until served."""
        if key in self.blocking and key not in self.ready_keys:
            self.ready_keys.add(key)
            self.ready_sink.append((self, key))

    def signal_ready(self, key: bytes) -> None:
        """A value grew in place in a way waiting readers see (XADD: Valkey
        signals the key on every entry added, not only when it is created)."""
        if self.blocking:
            self._ready(key)

    def _gone(self, key: bytes) -> None:
        """Valkey's signalDeletedKeyAsReady: the value under key was deleted
        or replaced; ready only for clients that asked to hear of that."""
        waiting = self.blocking.get(key)
        if waiting and any(c.blocked is not None and c.blocked.nokey for c in waiting):
            self._ready(key)

    def signal_replaced(self, other: Db) -> None:
        """Valkey's scanDatabaseForDeletedKeys, before this database's data
        is swapped with ``other``'s (SWAPDB): each waited-for key that goes
        or changes type."""
        for key in list(self.blocking):
            v = self.stored(key)
            if v is not None and type(v) is not type(other.stored(key)):
                self._gone(key)

    def signal_all_ready(self) -> None:
        """Valkey's scanDatabaseForReadyKeys (SWAPDB): every waited-for key
        that now holds a value."""
        for key in list(self.blocking):
            if key in self.data:
                self._ready(key)

    def delete(self, key: bytes) -> bool:
        """Remove key if it is live; True if it was."""
        if self.get(key) is None:
            return False
        del self.data[key]
        if self.expires:
            self.expires.pop(key, None)
        if self.float_ints is not None:
            self._forget_float_int(key)
        if self.signalled:
            self._signal(key)
        if self.blocking:
            self._gone(key)
        return True

    def delete_stored(self, key: bytes) -> bool:
        """Valkey's dbDelete, as a STORE's empty result uses it: a key still
        stored goes even past its expiry (deleted, not expired, so its event
        is ``del``). Its heap entry is left stale, as a persist leaves it."""
        if key in self.expires and key in self.data:
            self.expires.pop(key)
        return self.delete(key)

    def store(self, key: bytes, value: Any, event: bytes) -> None:
        """A STORE command's result replaces whatever key held (setKey),
        then ``event``."""
        self.set(key, value)
        events = self.events
        if events is not None:
            events.emit(self, event, key)

    def delete_destination(self, key: bytes) -> bool:
        """A STORE command's empty result (ZUNIONSTORE, SINTERSTORE, SORT
        STORE, BITOP, GEOSEARCHSTORE ...): its destination deleted, as
        ``delete_stored``, and ``del`` raised if it was there."""
        if self.delete_stored(key):
            events = self.events
            if events is not None:
                events.emit(self, b"del", key)
            return True
        return False

    def replace(self, key: bytes, value: Any) -> None:
        """Put an equal copy in place of a live key's value (Valkey's
        dbReplaceValue, as dbUnshareStringValue uses it before an in-place
        edit): the TTL stays and nobody is told, the value being unchanged."""
        self.data[key].value = value

    # -- strings: what each write stores (values/string.py's rules) ----------

    def set_string(self, key: bytes, v: bytes | bytearray, event: bytes | None = b"set",
                   keep_ttl: bool = False) -> None:
        """Store a string under key, replacing any value (SET and its kin;
        Valkey's setKey, then ``event``): a client's bytes made raw where
        Valkey's object would be, the TTL dropped unless keep_ttl."""
        if len(key) + len(v) > SURELY_EMBSTR and type(v) is bytes:
            v = stored(key, v, key in self.expires and self.get(key) is not None)
        self.set(key, v, keep_ttl)
        if event is not None:
            events = self.events
            if events is not None:
                events.emit(self, event, key)

    def add_string(self, key: bytes, v: bytes | bytearray, event: bytes | None, signal: bool = True) -> None:
        """Store a string under a key known to be absent (Valkey's dbAdd),
        then ``event``. ``signal`` as for add()."""
        if type(v) is bytes and len(key) + len(v) > SURELY_EMBSTR:
            v = stored(key, v, False)
        self.add(key, v, signal)
        if event is not None:
            events = self.events
            if events is not None:
                events.emit(self, event, key)

    def set_int(self, key: bytes, text: bytes, entry: KeyEntry | None, event: bytes | None) -> None:
        """A counter's new integer text under key (INCR and its kin): in
        place of the value, TTL kept, in the ``entry`` string_entry just
        gave, else added; then ``event``. That entry was read live, so its
        use is recorded and nothing is due to expire: set()'s checks are spent."""
        if entry is not None:
            entry.value = text
            if self.float_ints is not None:
                self._forget_float_int(key)
            if self.signalled:
                self._signal(key)
            if self.blocking and key in self.blocking:
                self._gone(key)  # overwritten: as in set()
        else:
            self.add(key, text)
        if event is not None:
            events = self.events
            if events is not None:
                events.emit(self, event, key)

    def unshare_string(self, key: bytes, v: bytes | bytearray, signal: bool = True) -> bytearray:
        """The string under key as a bytearray stored there, for an edit in
        place (Valkey's dbUnshareStringValue: an edited string is raw). With
        ``signal`` it is stored as a write (set, TTL kept); without, put in
        place unheard, the edit being what is signalled (the bit commands)."""
        if type(v) is bytearray:
            return v
        b = bytearray(v)
        if signal:
            self.set(key, b, keep_ttl=True)
        else:
            self.data[key].value = b
            if self.float_ints is not None:
                self._forget_float_int(key)
        return b

    def mark_float_int(self, key: bytes) -> None:
        """The value under key, INCRBYFLOAT's integer-looking text, is
        embstr in Valkey, not int."""
        t = self.float_ints
        if t is None:
            t = self.float_ints = {}
        t[key] = self.data[key].value
        n = len(t)
        if n > _PRUNE_AT and n & (n - 1) == 0:
            # At each power of two: drop marks whose key holds something else.
            for k in [k for k, o in t.items() if self.stored(k) is not o]:
                del t[k]

    def _forget_float_int(self, key: bytes) -> None:
        t = self.float_ints
        if t is not None and t.pop(key, None) is not None and not t:
            self.float_ints = None

    def string_encoding(self, key: bytes, v: bytes | bytearray) -> bytes:
        """OBJECT ENCODING of the string v stored under key."""
        if type(v) is bytearray:
            return b"raw"
        if is_int_text(v) and not (self.float_ints is not None and self.float_ints.get(key) is v):
            return b"int"
        return b"embstr"

    def before_expire(self, key: bytes) -> None:
        """Call before giving key an expire: Valkey may re-create its value
        (an embstr under a long key has no room for one: it becomes raw)."""
        if len(key) >= EXPIRE_NEEDS_ROOM and key not in self.expires:
            v = self.stored(key)
            if type(v) is bytes and self.string_encoding(key, v) == b"embstr":
                self.set(key, bytearray(v), keep_ttl=True)

    def expire_at(self, key: bytes, when_ms: int) -> None:
        """A command gives the live key an expiry (EXPIRE, SET EX, GETEX
        ...): the value re-created if Valkey would, the expiry set, then
        ``expire`` raised."""
        self.before_expire(key)
        self.set_expire(key, when_ms)
        events = self.events
        if events is not None:
            events.emit(self, b"expire", key)

    def float_int(self, key: bytes, value: object) -> bool:
        """Whether value, under key, is INCRBYFLOAT's integer-looking text
        (embstr in Valkey): what a rename, move or copy carries along."""
        t = self.float_ints
        return t is not None and t.get(key) is value

    def place(self, key: bytes, value: Any, src_key: bytes, when: int | None, float_int: bool) -> None:
        """Store value, taken from src_key (RENAME, COPY, MOVE; the caller
        asks ``float_int`` of the source first), under key with the expiry
        ``when``, as Valkey's dbAdd + setExpire: a string is re-created with
        its new key embedded, and an INCRBYFLOAT mark goes along."""
        if value.__class__ is bytes and key != src_key:
            value = rekeyed(key, value)
        self.set(key, value)
        if float_int:
            self.mark_float_int(key)
        if when is not None:
            self.before_expire(key)
            self.set_expire(key, when)

    def touch(self, key: bytes) -> None:
        """Record an in-place change of the value under key."""
        if self.signalled:
            self._signal(key)

    # -- a write's side effects, in one call each ---------------------------

    def notify(self, event: bytes, key: bytes) -> None:
        """Valkey's notifyKeyspaceEvent: ``event`` for key, published if the
        configured classes take it. Free but for the call while
        notifications are off."""
        events = self.events
        if events is not None:
            events.emit(self, event, key)

    def modified(self, key: bytes, event: bytes) -> None:
        """A command changed the value under key in place: Valkey's
        signalModifiedKey, then its event."""
        if self.signalled:
            self._signal(key)
        events = self.events
        if events is not None:
            events.emit(self, event, key)

    def members_removed(self, key: bytes, value: object, event: bytes) -> bool:
        """Members left the value under key (ZREM, SREM, HDEL, the pops ...):
        the change is signalled and ``event`` raised; a value left empty is
        deleted and ``del`` raised after it, as Valkey's commands do. True
        when the key went."""
        events = self.events
        if value:
            if self.signalled:
                self._signal(key)
            if events is not None:
                events.emit(self, event, key)
            return False
        self.delete(key)
        if events is not None:
            events.emit(self, event, key)
            events.emit(self, b"del", key)
        return True

    def set_expire(self, key: bytes, when_ms: int) -> None:
        self.expires[key] = when_ms
        heapq.heappush(self._heap, (when_ms, key))
        if len(self._heap) > 2 * len(self.expires) + 1024:
            self._heap = [(t, k) for k, t in self.expires.items()]
            heapq.heapify(self._heap)
        if self.signalled:
            self._signal(key)

    def persist(self, key: bytes) -> bool:
        if self.expires.pop(key, None) is None:
            return False
        if self.signalled:
            self._signal(key)
        return True

    def clear(self) -> int:
        n = len(self.data)
        if self.watchers:
            self.touch_all(None)
        if self.blocking:  # Valkey's scanDatabaseForDeletedKeys
            for key in list(self.blocking):
                if key in self.data:
                    self._gone(key)
        self.data = {}
        self.expires = {}
        self._heap = []
        self.volatile = {}
        self._fheap = []
        self.float_ints = None
        return n

    def _expire(self, key: bytes) -> None:
        if self.expiry_paused:
            return
        self.expired_count += 1
        del self.data[key]
        del self.expires[key]
        if self.float_ints is not None:
            self._forget_float_int(key)
        if self.events:
            self.events.emit(self, b"expired", key)
        if self.on_expire is not None:
            self.on_expire(self.id, key)
        if self.signalled:
            self._signal(key, False)
        if self.blocking:
            self._gone(key)

    def key_is_expired(self, key: bytes) -> bool:
        """Stored but past its time (Valkey's keyIsExpired); nothing is removed."""
        t = self.expires.get(key)
        return t is not None and t < self.clock.ms()

    def refresh_signalled(self) -> None:
        """Writes call _signal only while someone listens."""
        self.signalled = bool(self.watchers or self.observers)

    def observe(self, f: Callable[[bytes, bool], None]) -> None:
        if f not in self.observers:
            self.observers += (f,)
            self.signalled = True

    def unobserve(self, f: Callable[[bytes, bool], None]) -> None:
        self.observers = tuple(x for x in self.observers if x != f)
        self.refresh_signalled()

    def _signal(self, key: bytes, by_client: bool = True) -> None:
        """Valkey's signalModifiedKey, called after the change (by a
        command, or by expiry when not ``by_client``): WATCH, then the observers."""
        self._touch_watchers(key)
        for f in self.observers:
            f(key, by_client)

    def _touch_watchers(self, key: bytes) -> None:
        """Valkey's touchWatchedKey."""
        watchers = self.watchers.get(key)
        if not watchers:
            return
        for c, w in list(watchers.items()):
            if w.expired:
                # Watched when already expired: its deletion is no change.
                if key not in self.data:
                    w.expired = False
                    continue
                if self.key_is_expired(key):
                    break  # Valkey stops at such a watcher while the key is stored
                # Overwritten with a live value. Valkey deletes the expired key
                # before every write (no change), then the write is a change;
                # writes here may skip that deletion, so count it directly.
            c.touched()

    def touch_all(self, replaced_with: Db | None) -> None:
        """Valkey's touchAllWatchedKeysInDb, before this database is emptied
        (FLUSHDB, FLUSHALL) or swapped with ``replaced_with`` (SWAPDB). Only
        keys stored on either side count; the clients are marked dirty but
        keep their watches, as in Valkey."""
        for key, watchers in list(self.watchers.items()):
            exists = key in self.data
            in_other = replaced_with is not None and key in replaced_with.data
            if not (exists or in_other):
                continue
            for c, w in list(watchers.items()):
                if w.expired:
                    if not in_other:
                        w.expired = False  # an expired key now deleted
                        continue
                    assert replaced_with is not None
                    if replaced_with.key_is_expired(key):
                        continue  # still expired
                elif not exists and replaced_with is not None and replaced_with.key_is_expired(key):
                    w.expired = True  # a missing key replaced by an expired one
                    continue
                c.watch_dirty = True

    # -- active expiry -------------------------------------------------------

    def sweep(self, now: int, budget: int) -> int:
        """Remove up to ``budget`` keys whose time has come; the number removed."""
        heap = self._heap
        exp = self.expires
        removed = 0
        while heap and heap[0][0] < now and removed < budget:
            when, key = heapq.heappop(heap)
            if exp.get(key) == when:
                self._expire(key)
                removed += 1
        return removed

    def track_fields(self, key: bytes, when: int) -> None:
        """A field of the hash under key now expires at ``when``."""
        cur = self.volatile.get(key)
        if cur is not None and cur <= when:
            return
        self.volatile[key] = when
        heapq.heappush(self._fheap, (when, key))
        if len(self._fheap) > 2 * len(self.volatile) + 1024:
            self._fheap = [(t, k) for k, t in self.volatile.items()]
            heapq.heapify(self._fheap)

    def drop_expired_fields(self, value: Any) -> None:
        """COPY's duplicate of a hash leaves out the fields past their time
        that still await the sweep, as Valkey's hash dup does; all of them
        leaves an empty hash, as there."""
        if type(value) is Hash and value.ttl is not None:
            now = self.clock.ms()
            for f in [f for f, t in value.ttl.items() if t < now]:
                value.drop(f)

    def swap_fields(self, other: Db) -> None:
        """SWAPDB: the field-expiry schedule goes with the data."""
        self.volatile, other.volatile = other.volatile, self.volatile
        self._fheap, other._fheap = other._fheap, self._fheap

    def has_field_ttls(self) -> bool:
        """Some hash here holds a field with a TTL."""
        return any(type(v) is Hash and v.ttl is not None for v in map(self.stored, list(self.volatile)))

    def count_volatile(self) -> int:
        """INFO's keys_with_volatile_items."""
        return sum(1 for v in map(self.stored, list(self.volatile)) if type(v) is Hash and v.ttl is not None)

    def find_volatile(self) -> None:
        """Rebuild the field-expiry schedule from the data (after a load)."""
        self.volatile = {k: min(v.ttl.values()) for k, v in self.items() if type(v) is Hash and v.ttl}
        self._fheap = [(t, k) for k, t in self.volatile.items()]
        heapq.heapify(self._fheap)

    def sweep_fields(self, now: int, budget: int) -> int:
        """Valkey's active field expiry: reap the fields past their time of
        the hashes that have TTLs, up to ``budget`` fields; each hash reaped
        raises ``hexpired`` (then ``del`` when it went empty). Keys under
        their own expiry wait for it."""
        removed = 0
        heap = self._fheap
        volatile = self.volatile
        while heap and heap[0][0] < now and removed < budget:
            when, key = heapq.heappop(heap)
            if volatile.get(key) != when:
                continue  # rescheduled since
            h = self.stored(key)
            if type(h) is not Hash or h.ttl is None or (key in self.expires and self.expires[key] < now):
                # Gone, or under its own expiry, which removes it whole.
                del volatile[key]
                continue
            fields = h.reap(now, budget - removed)
            nxt = h.next_expiry()
            if nxt is None:
                del volatile[key]
            else:
                volatile[key] = nxt
                heapq.heappush(heap, (nxt, key))
            if not fields:
                continue
            removed += len(fields)
            self.fields_expired += len(fields)
            gone = not h
            if gone:
                del self.data[key]
                self.expires.pop(key, None)
            if self.events:
                self.events.emit(self, b"hexpired", key)
                if gone:
                    self.events.emit(self, b"del", key)
            if self.on_fields_expire is not None:
                self.on_fields_expire(self.id, key, fields, gone)
            if self.signalled:
                self._signal(key, False)
            if gone and self.blocking:
                self._gone(key)
        return removed

    def set_lfu(self, lfu: Lfu | None) -> None:
        """An LFU policy selected (or left): every key's field starts over
        in the new form (Valkey reinterprets the old bits, which reads as
        noise until the keys are used again)."""
        if (lfu is None) != (self.lfu is None):
            fresh = self.clock.lru if lfu is None else lfu.fresh()
            for r in self.data.values():
                r.lru = fresh
        self.lfu = lfu

    def next_expiry(self) -> int | None:
        return self._heap[0][0] if self._heap else None

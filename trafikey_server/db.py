"""One logical database: keys, their values and their expiry times.

Expiry is kept in ``expires`` (key -> absolute ms) and checked lazily on
every lookup, as Valkey does. For the active sweep a min-heap of
``(when, key)`` lets the server find due keys without scanning or sampling:
when nothing is due the sweep costs one comparison. A heap entry whose key
has since been persisted, re-expired or deleted is simply skipped when
popped, and the heap is rebuilt when stale entries outnumber live ones.

Every change to a key goes through ``set``/``delete``/``touch`` so that WATCH
(and, later, anything else that must observe writes) sees all of them.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from .errors import wrongtype
from .types import Hash
from .zset import ZSet

if TYPE_CHECKING:
    from .clock import Clock


class Db:
    __slots__ = ("id", "data", "expires", "_heap", "clock", "watchers", "avg_ttl")

    def __init__(self, id: int, clock: Clock) -> None:
        self.id = id
        self.clock = clock
        self.data: dict[bytes, Any] = {}
        self.expires: dict[bytes, int] = {}
        self._heap: list[tuple[int, bytes]] = []
        # key -> set of clients watching it; empty unless WATCH is in use.
        self.watchers: dict[bytes, set[Any]] = {}

    # -- reads -------------------------------------------------------------

    def get(self, key: bytes) -> Any:
        """The live value of key, or None; an expired key is removed first.
        As in Valkey, a key lives through its expiry millisecond and is
        gone the one after."""
        v = self.data.get(key)
        if v is not None and self.expires and key in self.expires:
            if self.expires[key] < self.clock.ms():
                self._expire(key)
                return None
        return v

    def get_hash(self, key: bytes) -> Hash | None:
        v = self.get(key)
        if v is None or type(v) is Hash:
            return v
        raise wrongtype()

    def get_zset(self, key: bytes) -> ZSet | None:
        v = self.get(key)
        if v is None or type(v) is ZSet:
            return v
        raise wrongtype()

    def get_string(self, key: bytes) -> bytes | bytearray | None:
        v = self.get(key)
        if v is None:
            return None
        t = type(v)
        if t is bytes or t is bytearray:
            return v
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
        keep_ttl."""
        self.data[key] = value
        if not keep_ttl and self.expires:
            self.expires.pop(key, None)
        if self.watchers:
            self._signal(key)

    def add(self, key: bytes, value: Any) -> None:
        """Store a value under a key known to be absent (no TTL to drop)."""
        self.data[key] = value
        if self.watchers:
            self._signal(key)

    def delete(self, key: bytes) -> bool:
        """Remove key if it is live; True if it was."""
        if self.get(key) is None:
            return False
        del self.data[key]
        if self.expires:
            self.expires.pop(key, None)
        if self.watchers:
            self._signal(key)
        return True

    def touch(self, key: bytes) -> None:
        """Record an in-place change of the value under key."""
        if self.watchers:
            self._signal(key)

    def set_expire(self, key: bytes, when_ms: int) -> None:
        self.expires[key] = when_ms
        heapq.heappush(self._heap, (when_ms, key))
        if len(self._heap) > 2 * len(self.expires) + 1024:
            self._heap = [(t, k) for k, t in self.expires.items()]
            heapq.heapify(self._heap)
        if self.watchers:
            self._signal(key)

    def persist(self, key: bytes) -> bool:
        if self.expires.pop(key, None) is None:
            return False
        if self.watchers:
            self._signal(key)
        return True

    def clear(self) -> int:
        n = len(self.data)
        if self.watchers:
            for key in list(self.watchers):
                if key in self.data:
                    self._signal(key)
        self.data = {}
        self.expires = {}
        self._heap = []
        return n

    def _expire(self, key: bytes) -> None:
        del self.data[key]
        del self.expires[key]
        if self.watchers:
            self._signal(key)

    def _signal(self, key: bytes) -> None:
        clients = self.watchers.get(key)
        if clients:
            for c in clients:
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

    def next_expiry(self) -> int | None:
        return self._heap[0][0] if self._heap else None

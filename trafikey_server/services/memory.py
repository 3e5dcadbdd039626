"""Used memory as Valkey counts it, and eviction (Valkey's evict.c).

``used_memory`` is a fixed base (what an empty Valkey 9.1 reports,
``BASE``), the main and expires hashtables' slots, and the dataset: the sum
of each key's estimate (``estimate``, the figure MEMORY USAGE gives). INFO
memory, MEMORY STATS, MEMORY USAGE and every maxmemory decision read these
same numbers.

How the dataset total is kept depends on whether a limit is set. With
maxmemory 0 nothing is tracked: INFO and MEMORY STATS add the estimates up
when asked, and keep the sum until the next write or expiry (the server's
write counter and key count say when it is stale), so writes pay nothing
for a figure nobody may read. While a limit is set every change to a key
reaches ``Memory`` through the database's change signal (an observer that
marks the key dirty: one set insertion per write), and the total is settled
(the dirty keys re-estimated) before each decision, so a decision reads the
dataset exactly as the last write left it. A database whose dict was
replaced (FLUSHALL, SWAPDB, a load) or whose key count disagrees with what
was tracked is counted again from scratch.

Eviction is Valkey's performEvictions: while used memory is over the limit,
pick a key by the policy (a pool of 16 candidates fed with
maxmemory-samples keys per database for the LRU, LFU and TTL policies, a
random key from the next database for the random ones), delete it, raise
``evicted``, count it, log UNLINK (DEL without lazyfree-lazy-eviction), and
go on until enough is freed, the keys run out (the command is refused as
OOM) or the tenacity's time is up (the rest is left to a follow-up pass on
the event loop, Valkey's eviction time proc).
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any, Protocol

from ..keyspace.access import Lfu, idle_ms
from ..util.rand import rng
from ..values.record import alloc_size, sds_size
from ..values.registry import of
from .config import register_apply

if TYPE_CHECKING:
    import asyncio
    from collections.abc import Callable

    from ..keyspace.db import Db
    from ..util.clock import Clock
    from .clientmem import ClientMemory
    from .config import Config
    from .host import AppendLog


class MemoryHost(Protocol):
    """What memory accounting and eviction use of the server (server.py)."""

    client_memory: ClientMemory
    clock: Clock
    config: Config
    dbs: list[Db]
    dirty: int
    loading: bool
    loop: asyncio.AbstractEventLoop | None
    maxmemory: int
    memory: Memory

    @property
    def aof(self) -> AppendLog | None: ...
    @property
    def busy_run(self) -> object: ...


# used_memory_startup of an empty valkey-server 9.1 (measured): the base
# every figure starts from, so that limits copied from a Valkey setup mean
# the same here.
BASE = 998544
# What a key adds to the main hashtable, and to the expires one, on Valkey
# 9.1 (measured: MEMORY STATS' overhead.hashtable.main / .expires per key).
MAIN_SLOT = 32
EXPIRES_SLOT = 16
# MEMORY USAGE's default sample count, used for every estimate kept here.
SAMPLES = 5
# Valkey's EVPOOL_SIZE.
POOL_SIZE = 16

EVICT_OK, EVICT_RUNNING, EVICT_FAIL = 0, 1, 2


def estimate(key: bytes, value: object, samples: int = SAMPLES) -> int:
    """Bytes Valkey would spend on the key and its value: the object with
    its embedded key, and for a collection the average of the first
    ``samples`` elements times their number, as objectComputeSize samples."""
    head = alloc_size(16 + 8 + sds_size(len(key)))
    vt = of(value)
    return head if vt is None else head + vt.memory(value, samples)


def _time_limit_us(tenacity: int) -> float:
    """evictionTimeLimitUs: linear to 500 µs up to tenacity 10, then 15%
    more per step, no limit at 100."""
    if tenacity <= 10:
        return 50.0 * tenacity
    if tenacity < 100:
        return 500.0 * 1.15 ** (tenacity - 10)
    return float("inf")


class _Sampler:
    """Random keys of a dict, cheaply: picks from a snapshot of its keys,
    taken again once it has served a good part of its length or the dict
    has grown or shrunk by a quarter (a Python dict has no random access;
    Valkey's dictGetSomeKeys reads buckets)."""

    __slots__ = ("keys", "served")

    def __init__(self) -> None:
        self.keys: list[bytes] = []
        self.served = 0

    def sample(self, src: dict[bytes, Any], k: int) -> list[bytes]:
        n = len(src)
        if not n:
            return []
        keys = self.keys
        if self.served > len(keys) // 2 + 16 or abs(n - len(keys)) > len(keys) // 4:
            keys = self.keys = list(src)
            self.served = 0
        self.served += k
        if n <= k:
            return list(src)
        found: list[bytes]
        if len(keys) <= k:
            found = [key for key in keys if key in src]
            if found:
                return found
            # A small snapshot of keys all gone since: take it again.
            keys = self.keys = list(src)
            self.served = k
        found = []
        for _ in range(2):
            # Spread picks: the dict's order is the order of writes, which
            # a run of neighbours would mirror (Valkey's buckets are hashed).
            found = [key for key in (keys[int(rng.random() * len(keys))] for _ in range(k)) if key in src]
            if found:
                return found
            # Only keys gone since the snapshot: take it again.
            keys = self.keys = list(src)
            self.served = k
        return found


class Memory:
    """The dataset total, and evictions."""

    def __init__(self, server: MemoryHost) -> None:
        self.server = server
        self.tracking = False
        # Per database while tracking: key -> its estimate, the keys changed
        # since the last settle, the dict the estimates were taken from.
        self.sizes: list[dict[bytes, int]] = []
        self.dirty: list[set[bytes]] = []
        self.sources: list[dict[bytes, Any] | None] = []
        self._observers: list[Callable[[bytes, bool], None]] = []
        self.total = 0
        self._cache: tuple[int, int, int] = (-1, -1, 0)
        self.evicted_keys = 0
        self.pool: list[tuple[int, int, bytes]] = []
        self.samplers: dict[tuple[int, bool], _Sampler] = {}
        self.next_db = 0
        self.exceeded_since = 0.0
        self.exceeded_total_us = 0
        self.proc_scheduled = False
        # The last check's verdict: over the limit with nothing to evict
        # (Valkey's pre_command_oom_state, which scripts' first writes read).
        self.oom = False
        self.peak = BASE

    # -- the dataset ----------------------------------------------------------

    def start(self) -> None:
        """A limit is set: track every change from now on."""
        if self.tracking:
            return
        self.tracking = True
        dbs = self.server.dbs
        self.sizes = [{} for _ in dbs]
        self.dirty = [set() for _ in dbs]
        self.sources = [None for _ in dbs]
        self._observers = []
        for i, db in enumerate(dbs):
            mark = self.dirty[i].add

            def observer(key: bytes, by_client: bool, mark: Callable[[bytes], None] = mark) -> None:
                mark(key)

            self._observers.append(observer)
            db.observe(observer)
        self.total = 0

    def stop(self) -> None:
        if not self.tracking:
            return
        self.tracking = False
        for db, observer in zip(self.server.dbs, self._observers, strict=True):
            db.unobserve(observer)
        self._observers = []
        self.sizes, self.dirty, self.sources = [], [], []

    def _recount(self, i: int, db: Db) -> None:
        sizes = self.sizes[i]
        self.total -= sum(sizes.values())
        sizes = self.sizes[i] = {k: estimate(k, v) for k, v in db.items()}
        self.total += sum(sizes.values())
        self.sources[i] = db.data
        self.dirty[i].clear()

    def settle(self) -> None:
        """Bring the tracked total up to date with the changes signalled."""
        for i, db in enumerate(self.server.dbs):
            if db.data is not self.sources[i]:
                self._recount(i, db)
                continue
            dirty = self.dirty[i]
            sizes = self.sizes[i]
            if dirty:
                total = self.total
                for key in dirty:
                    total -= sizes.pop(key, 0)
                    v = db.stored(key)
                    if v is not None:
                        size = sizes[key] = estimate(key, v)
                        total += size
                self.total = total
                dirty.clear()
            if len(sizes) != len(db.data):
                self._recount(i, db)

    def dataset(self) -> int:
        if self.tracking:
            self.settle()
            return self.total
        server = self.server
        keys = sum(len(db.data) for db in server.dbs)
        dirty, count, total = self._cache
        if dirty == server.dirty and count == keys:
            return total
        total = sum(estimate(k, v) for db in server.dbs for k, v in db.items())
        self._cache = (server.dirty, keys, total)
        return total

    def overhead(self) -> int:
        """The base, the hashtables' slots and what clients hold that used
        memory counts (used_memory_overhead; clientmem.ClientMemory.held)."""
        server = self.server
        return (BASE + sum(MAIN_SLOT * len(db.data) + EXPIRES_SLOT * len(db.expires) for db in server.dbs)
                + server.client_memory.held())

    def used(self) -> int:
        used = self.overhead() + self.dataset()
        if used > self.peak:
            self.peak = used
        return used

    # -- evictions -------------------------------------------------------------

    def perform_evictions(self) -> int:
        """performEvictions: OK when under the limit (or after freeing
        enough), RUNNING when the time ran out first, FAIL when over it with
        nothing to evict."""
        server = self.server
        maxmemory = server.maxmemory
        if not maxmemory or server.loading or server.busy_run is not None:
            return EVICT_OK
        used = self.used()
        if used <= maxmemory:
            return self._metrics(EVICT_OK)
        values = server.config.values
        policy = values["maxmemory-policy"]
        if policy == "noeviction":
            return self._metrics(EVICT_FAIL)
        limit_us = _time_limit_us(values["maxmemory-eviction-tenacity"])
        t0 = time.perf_counter()
        tofree = used - maxmemory
        freed = 0
        n = 0
        result = EVICT_OK
        while freed < tofree:
            pick = self._pick(policy)
            if pick is None:
                result = EVICT_FAIL
                break
            self._evict(pick[0], pick[1], values["lazyfree-lazy-eviction"])
            n += 1
            now_used = self.used()
            freed = used - now_used
            if n % 16 == 0 and (time.perf_counter() - t0) * 1e6 > limit_us:
                result = EVICT_RUNNING
                self._schedule()
                break
        return self._metrics(result)

    def _metrics(self, result: int) -> int:
        """total_eviction_exceeded_time / current_eviction_exceeded_time."""
        if result != EVICT_OK:
            if not self.exceeded_since:
                self.exceeded_since = time.monotonic()
        elif self.exceeded_since:
            self.exceeded_total_us += int((time.monotonic() - self.exceeded_since) * 1e6)
            self.exceeded_since = 0.0
        return result

    def reset_stats(self) -> None:
        """CONFIG RESETSTAT: evicted_keys and the exceeded times."""
        self.evicted_keys = 0
        self.exceeded_total_us = 0
        self.exceeded_since = 0.0

    def exceeded_us(self) -> tuple[int, int]:
        current = int((time.monotonic() - self.exceeded_since) * 1e6) if self.exceeded_since else 0
        return self.exceeded_total_us + current, current

    def _schedule(self) -> None:
        """Valkey's eviction time proc: keep evicting from the event loop
        until under the limit or out of keys."""
        loop = self.server.loop
        if self.proc_scheduled or loop is None:
            return
        self.proc_scheduled = True
        loop.call_soon(self._proc)

    def _proc(self) -> None:
        self.proc_scheduled = False
        if self.perform_evictions() == EVICT_RUNNING:
            self._schedule()

    def after_limit_set(self) -> None:
        """CONFIG SET maxmemory: evictions start at once, from the loop."""
        if self.server.maxmemory:
            self._schedule()

    def _evict(self, db: Db, key: bytes, lazy: bool) -> None:
        server = self.server
        if key not in db.data:  # an expiry without its key: nothing to free
            db.expires.pop(key, None)
            return
        db.delete_stored(key)
        self.evicted_keys += 1
        db.notify(b"evicted", key)
        aof = server.aof
        if aof is not None:
            aof.alone(db.id, [b"UNLINK" if lazy else b"DEL", key])

    def _pick(self, policy: str) -> tuple[Db, bytes] | None:
        dbs = self.server.dbs
        allkeys = policy.startswith("allkeys")
        if policy.endswith("random"):
            for _ in range(len(dbs)):
                self.next_db = (self.next_db + 1) % len(dbs)
                db = dbs[self.next_db]
                src = db.data if allkeys else db.expires
                if src:
                    keys = self._sampler(db.id, allkeys).sample(src, 1)
                    if keys:
                        return db, keys[0]
            return None
        samples = self.server.config.values["maxmemory-samples"]
        pool = self.pool
        clock = self.server.clock
        lfu = policy.endswith("lfu")
        ttl = policy == "volatile-ttl"
        while True:
            total = 0
            for db in dbs:
                src = db.data if allkeys else db.expires
                if not src:
                    continue
                total += len(src)
                for key in self._sampler(db.id, allkeys).sample(src, samples):
                    if ttl:
                        score = (1 << 64) - db.expires[key]
                    elif lfu:
                        assert db.lfu is not None
                        score = 255 - db.lfu.counter(db.use_field(key))
                    else:
                        score = idle_ms(clock, db.use_field(key))
                    self._pool_insert(score, db.id, key)
            if not total:
                return None
            while pool:
                _, dbid, key = pool.pop()
                db = dbs[dbid]
                if key in (db.data if allkeys else db.expires):
                    return db, key
            # Only ghosts in the pool: sample again.

    def _pool_insert(self, score: int, dbid: int, key: bytes) -> None:
        """evictionPoolPopulate's insertion: the pool is kept in ascending
        order; a full pool drops its worst candidate, or the newcomer when
        it is worse than all of them."""
        pool = self.pool
        k = 0
        while k < len(pool) and pool[k][0] < score:
            k += 1
        if k == 0 and len(pool) >= POOL_SIZE:
            return
        pool.insert(k, (score, dbid, key))
        if len(pool) > POOL_SIZE:
            pool.pop(0)

    def forget_samples(self) -> None:
        """A re-seeding (CONFIG SET seed): the key snapshots and the pool of
        candidates drawn before it go, so the picks after it repeat those
        of a server given the same seed and keyspace."""
        self.samplers = {}
        self.pool = []
        self.next_db = 0

    def _sampler(self, dbid: int, allkeys: bool) -> _Sampler:
        s = self.samplers.get((dbid, allkeys))
        if s is None:
            s = self.samplers[(dbid, allkeys)] = _Sampler()
        return s

    # -- the policy ------------------------------------------------------------

    def apply_policy(self) -> None:
        """An LFU policy makes every database keep LFU counters (access.py)."""
        server = self.server
        values = server.config.values
        lfu = None
        if "lfu" in values["maxmemory-policy"]:
            lfu = Lfu(server.clock, values["lfu-log-factor"], values["lfu-decay-time"])
        for db in server.dbs:
            db.set_lfu(lfu)
        self.pool = []


def _apply_policy(server: MemoryHost, value: str) -> None:
    server.memory.apply_policy()


register_apply("maxmemory-policy", _apply_policy)

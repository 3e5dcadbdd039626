"""Client memory as Valkey counts it, and client eviction (maxmemory-clients).

A client's memory is what Valkey's getClientMemoryUsage adds up: the client
and its 16 KiB reply buffer, the query buffer, the current request's
arguments, the transaction state, the subscriptions, the tracking prefixes
and the output not yet sent. The sizes are Valkey 9.1's (measured on its
allocator); the hashtables behind subscriptions and tracking prefixes grow
with Valkey's hash seed, so theirs are estimates of the right magnitude.

Eviction follows Valkey's evictClients: evictable clients (normal and
pub/sub ones, not CLIENT NO-EVICT) sit in buckets by powers of two of their
memory, from 32 KiB up; while the memory of all normal and pub/sub clients
reaches the limit, clients go from the largest bucket down, oldest in a
bucket first. While a limit is set, a client is measured where its memory
changes (after a read, and before the turn's writes); every client is
measured once a second in any case, for INFO. Without a limit the request
path pays nothing.

Used memory (memory.py) counts of client buffers what no read or write
boundary decides (``held``): the input of a request still open past
``BIG_ARG``, and the output the transport holds once over its high-water
mark (the writes have outrun the reader). Below those, what a client holds
depends on how the bytes fell into reads and writes, and a seeded server's
evictions must repeat; above them, a stalled request or a reader that does
not read evicts keys, as in Valkey.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, NamedTuple, Protocol

from .kill import close_now

if TYPE_CHECKING:
    from ..util.log import Log
    from .client import Client
    from .config import Config
    from .host import Peer

# The reply buffer of a new connection (16 KiB plus allocator slack), and
# what the client struct and that buffer cost before any request.
REPLY_BUFFER = 16392
BASE_MEMORY = 16976
POINTER = 8
# Valkey 9.1's sizes for transaction state: a queue slot (multiCmd), a
# watched key (watchedKey with its list node), a per-database hashtable of
# watched keys and one of its 64-byte buckets (7 keys each).
MULTI_CMD = 32
WATCHED_KEY = 80
HASHTABLE = 80
BUCKET = 64
# A subscription kind's hashtable once it holds anything, and the first
# tracking prefix's tree with what each further one adds (estimates).
SUBS_TABLE = 240
PREFIX_TREE = 252
PREFIX_NODE = 12
# Output past the reply buffer is a list of blocks: 16 KiB asked for, which
# with its header the allocator rounds to 20 KiB, all of it counted and
# filled; and each block's list node and header (listNode + clientReplyBlock).
REPLY_BLOCK = 20464
REPLY_NODE = 40
# A bulk this long is read into a query buffer of its own, allocated whole
# when its length is read (PROTO_MBULK_BIG_ARG).
BIG_ARG = 32 * 1024
# Bucket i holds clients of up to 2**(15+i) bytes; the last, all larger.
_MIN_LOG = 15
_MAX_LOG = 33
_BUCKETS = 1 + _MAX_LOG - _MIN_LOG
# The smallest limit Valkey applies, so that a bad setting cannot cut off
# every connection.
_MIN_LIMIT = 128 * 1024

Queue = list[tuple[object, list[bytes]]]


class ClientMemoryHost(Protocol):
    """What client memory uses of the server (server.py)."""

    clients: dict[int, Client]
    config: Config
    log: Log
    maxmemory: int

    @property
    def connections(self) -> Mapping[int, Peer]: ...


def output(unsent: int) -> tuple[int, int, int]:
    """Unsent output as Valkey holds it: (obl, oll, omem), the reply buffer
    filled first, the rest in list blocks, each counted whole."""
    obl = min(unsent, REPLY_BUFFER)
    rest = unsent - obl
    if not rest:
        return obl, 0, 0
    oll = -(-rest // REPLY_BLOCK)
    return obl, oll, (REPLY_BLOCK + REPLY_NODE) * oll


def queued(queue: Queue) -> int:
    """multi-mem: a queued command's argument bytes plus a pointer per argument."""
    return sum(sum(map(len, args)) + POINTER * len(args) for _, args in queue)


def _slots(n: int) -> int:
    """Valkey's queue array: 2 slots for the first command, doubled when full."""
    return 0 if n == 0 else max(2, 1 << (n - 1).bit_length())


def _buckets(n: int) -> int:
    """A Valkey hashtable's buckets for n entries (7 per bucket, a power of two)."""
    return 0 if n == 0 else 1 << (-(-n // 7) - 1).bit_length()


def transaction(c: Client, queue: Queue, multi_mem: int) -> int:
    """What Valkey 9.1 counts for a client's transaction state
    (multiStateMemOverhead): the queued arguments, the queue's slots, one
    entry per watched key, an array of per-database table pointers once the
    client has watched, and each database's table (kept, empty, after
    UNWATCH). A table's bucket count is exact up to 7 keys per database and
    an estimate beyond (Valkey's depends on its hash seed)."""
    mem = multi_mem + MULTI_CMD * _slots(len(queue)) + WATCHED_KEY * len(c.watched)
    if c.watch_dbs:
        per_db: dict[int, int] = {}
        for db, _ in c.watched:
            per_db[db.id] = per_db.get(db.id, 0) + 1
        mem += POINTER * len(c.server.dbs)
        for dbid in c.watch_dbs:
            mem += HASHTABLE + BUCKET * _buckets(per_db.get(dbid, 0))
    return mem


def listening(c: Client) -> int:
    """pubsubMemOverhead and the tracking prefixes' tree."""
    mem = 0
    if c.subscriptions:
        for kind in (c.channels, c.patterns, c.shard_channels):
            if kind:
                mem += SUBS_TABLE + BUCKET * (_buckets(len(kind)) - 1)
    t = c.track
    if t is not None and t.prefixes:
        mem += PREFIX_TREE + PREFIX_NODE * (len(t.prefixes) - 1)
    return mem


class Buffers(NamedTuple):
    """A client's buffers and memory as CLIENT LIST shows them."""

    qbuf: int
    qbuf_free: int
    argv_mem: int
    multi_mem: int
    obl: int
    oll: int
    omem: int
    tot_mem: int


def buffers(c: Client, peer: Peer | None, argv: list[bytes] | None = None, here: int = 0,
            argv_ptrs: int = -1) -> Buffers:
    """A client's buffers and memory (getClientMemoryUsage). ``argv`` is
    the request it holds (its argument pointers counted for ``argv_ptrs``
    of them, all by default), else the arguments of a request it is still
    sending; ``here`` is output it has produced that its connection does
    not hold yet (the caller's own replies so far)."""
    argv_mem = sum(map(len, argv)) if argv else 0
    if argv_ptrs < 0:
        argv_ptrs = len(argv) if argv else 0
    queue = queue_of(c)
    multi_mem = queued(queue)
    unsent = here
    qbuf = qalloc = 0
    if peer is not None:
        qbuf, qalloc, args, args_len = peer.query_buffer()
        if argv is None:  # a request still being read holds the arguments read so far
            argv_mem += args_len
            argv_ptrs += args
        unsent += peer.unsent()
    obl, oll, omem = output(unsent)
    tot = (BASE_MEMORY + argv_mem + POINTER * argv_ptrs + transaction(c, queue, multi_mem) + listening(c)
           + qalloc + omem)
    return Buffers(qbuf, qalloc - qbuf, argv_mem, multi_mem, obl, oll, omem, tot)


def queue_of(c: Client) -> Queue:
    """The commands in the transaction state: the MULTI queue, or while EXEC
    runs the queue it runs (Valkey frees it only afterwards)."""
    if c.in_exec:
        return c.exec_queue  # type: ignore[return-value]
    return c.multi or []  # type: ignore[return-value]


def limit_of(maxmemory_clients: int, maxmemory: int) -> int:
    """The eviction limit in bytes, 0 for none (getClientEvictionLimit): a
    percentage applies to maxmemory, and only while that is set."""
    if maxmemory_clients < 0:
        if not maxmemory:
            return 0
        actual = int(maxmemory * -maxmemory_clients / 100)
    elif maxmemory_clients > 0:
        actual = maxmemory_clients
    else:
        return 0
    return max(actual, _MIN_LIMIT)


class ClientMemory:
    """The memory of normal and pub/sub clients (INFO's mem_clients_normal)
    and the buckets eviction takes clients from."""

    def __init__(self, server: ClientMemoryHost) -> None:
        self.server = server
        self.limit = 0
        self.total = 0  # of the clients last measured
        self.evicted = 0
        self.buckets: list[dict[Client, None]] = [{} for _ in range(_BUCKETS)]
        # What used memory counts of clients (``held``): the input of open
        # requests past BIG_ARG, and the connections whose transport is over
        # its high-water mark.
        self.inputs: dict[Client, int] = {}
        self.writers: dict[Client, Peer] = {}
        # The client's CLIENT LIST line for the log (set by the server).
        self.describe: Callable[[Client], str] = lambda c: f"id={c.id} addr={c.addr}"

    def configure(self) -> None:
        """maxmemory-clients or maxmemory changed: every client is placed
        again, then as many evicted as the new limit takes."""
        values = self.server.config.values
        self.limit = limit_of(values["maxmemory-clients"], self.server.maxmemory)
        self.refresh()
        self.evict()

    def refresh(self) -> None:
        """Every client measured again (the once-a-second sweep)."""
        for c in list(self.server.clients.values()):
            self.update(c)

    def update(self, c: Client) -> None:
        """Measure c again and move it to its bucket
        (updateClientMemUsageAndBucket); a client that cannot be evicted is
        measured for INFO only. A caller whose output grew checks the
        output-buffer limit first (limits.measure)."""
        if c.closing:
            self.forget(c)
            return
        peer = self.server.connections.get(c.id)
        mem = buffers(c, peer).tot_mem
        self.total += mem - c.mem_usage
        c.mem_usage = mem
        if not self.limit or c.no_evict or peer is None:
            self._unbucket(c)
            return
        i = max(mem.bit_length(), _MIN_LOG)
        i = min(i, _MAX_LOG) - _MIN_LOG
        if i != c.mem_bucket:
            self._unbucket(c)
            self.buckets[i][c] = None
            c.mem_bucket = i

    def _unbucket(self, c: Client) -> None:
        if c.mem_bucket >= 0:
            self.buckets[c.mem_bucket].pop(c, None)
            c.mem_bucket = -1

    def forget(self, c: Client) -> None:
        """c is gone: its memory no longer counts."""
        self.total -= c.mem_usage
        c.mem_usage = 0
        self._unbucket(c)
        self.inputs.pop(c, None)
        self.writers.pop(c, None)

    def hold_input(self, c: Client, nbytes: int) -> None:
        """After a read: the query buffer and arguments of c's open request,
        counted in used memory while past BIG_ARG."""
        if nbytes > BIG_ARG:
            self.inputs[c] = nbytes
        elif self.inputs:
            self.inputs.pop(c, None)

    def writing(self, c: Client, conn: Peer, over: bool) -> None:
        """c's transport went over its high-water mark, or back under its
        low one: its unsent output counts in used memory meanwhile."""
        if over:
            self.writers[c] = conn
        else:
            self.writers.pop(c, None)

    def held(self) -> int:
        """What used memory counts of client buffers (the module's note):
        open requests' input past BIG_ARG, and the output past the reply
        buffer of transports over their high-water mark."""
        total = sum(self.inputs.values()) if self.inputs else 0
        for conn in self.writers.values():
            transport = conn.transport
            if transport is not None:
                total += output(transport.get_write_buffer_size())[2]
        return total

    def evict(self) -> None:
        """Close clients, largest bucket first, until the clients' memory is
        under the limit (evictClients); their unsent output is dropped."""
        limit = self.limit
        if not limit or self.total < limit:
            return
        log = self.server.log
        for bucket in reversed(self.buckets):
            while bucket and self.total >= limit:
                c = next(iter(bucket))
                log.notice(f"Evicting client: {self.describe(c)}")
                self.evicted += 1
                close_now(c)  # the server forgets it (client_disconnected)
            if self.total < limit:
                return
        log.warning("Over client maxmemory after evicting all evictable clients")

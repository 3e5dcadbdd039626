"""The stream type's structure: entries by ID, consumer groups, their
pending entries and consumers, as Valkey's stream.h keeps them.

An ID is one Python int, ``ms << 64 | seq``: comparisons, bisection and
hashing are then single operations, and the 128-bit order is the int
order. ``fmt_id`` gives Valkey's ``ms-seq`` text.

Entries live in nodes as Valkey's radix tree holds them (t_stream.c): each
node is keyed by its first entry's ID (the primary ID) and holds the body
of the listpack Valkey would hold, byte for byte: the primary entry
(live count, deleted count, the primary fields) then each entry as flags,
ID deltas, fields or only values when they are the primary's, and its
element count. A node closes where streamAppendItem closes it (its bytes
or its entry count reach stream-node-max-bytes / -entries), a deletion
only flags an entry until its node has no live entry left, and a trim
removes whole nodes first: so XLEN after ``~`` trims, XINFO's node count
and the RDB form are Valkey's, and an entry costs its listpack bytes plus
its ID (8 bytes while its parts fit 32 bits) and offset (4 bytes) in
per-node arrays, not Python objects. Entries are decoded when read.

Pending entries lists (``Pel``) are dicts that keep their IDs sorted, so
the range walks of XPENDING, XCLAIM and XAUTOCLAIM bisect.

This module is the structure and its API (t_stream.c's streamAppendItem,
streamTrim, iterators, the NACK and consumer records), then the type's
record (RDB, AOF rewrite, COPY, digest, memory); the commands that use it,
their argument rules and their replies live in ``commands/stream.py`` and
``commands/stream_group.py``.
"""

from __future__ import annotations

import struct
from array import array
from bisect import bisect_left, bisect_right, insort
from collections.abc import Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Final, TypeVar, overload

from mypy_extensions import mypyc_attr

from ..protocol.rdbformat import RdbError, encode_len, encode_string
from ..protocol.resp import bulks
from ..util import native
from ..util.parsing import LLONG_MAX, int64
from . import listpack as lp
from .listpack import SMALL_INT_ENC, enc_int, enc_str, read, read_int, skip
from .record import ValueHost, ValueType, alloc_size

if TYPE_CHECKING:
    from ..protocol.rdbformat import Reader


SEQ_BITS: Final = 64
SEQ_MASK: Final = (1 << 64) - 1
MAX_ID: Final = (1 << 128) - 1
# A group's entries_read when it cannot be known (SCG_INVALID_ENTRIES_READ).
INVALID_ENTRIES_READ: Final = -1


def make_id(ms: int, seq: int) -> int:
    return ms << SEQ_BITS | seq


def id_ms(sid: int) -> int:
    return sid >> SEQ_BITS


def id_seq(sid: int) -> int:
    return sid & SEQ_MASK


def fmt_id(sid: int) -> bytes:
    """Valkey's text of an ID: ``ms-seq``."""
    return b"%d-%d" % (sid >> SEQ_BITS, sid & SEQ_MASK)


def entry_reply(sid: int, fields: list[bytes]) -> bytes:
    """An entry as XRANGE and XREAD reply it: ``[id, [field, value, ...]]``.
    One format for the ID and, for the common one-field entry, for the
    whole reply: it runs once per entry of every read."""
    text = b"%d-%d" % (sid >> 64, sid & SEQ_MASK)
    if len(fields) == 2:
        f, v = fields
        return b"*2\r\n$%d\r\n%s\r\n*2\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n" % (len(text), text, len(f), f, len(v), v)
    return b"*2\r\n$%d\r\n%s\r\n" % (len(text), text) + bulks(fields)


# The compiled entry reply (values/cstream.pyx), when built: the same bytes
# as entry_reply over Node.entry, written from the listpack in one pass.
_k: Final = native.load("values.cstream")
# Bound once: a C static when compiled, where ``_k.name`` is a lookup on the module at every call.
_entry_reply: Final = _k.entry_reply if _k is not None else None
_append_entry: Final = _k.append_entry if _k is not None else None
_node_entries: Final = _k.node_entries if _k is not None else None


# Entry flags (STREAM_ITEM_FLAG_*).
F_DELETED: Final = 1
F_SAMEFIELDS: Final = 2
# STREAM_LISTPACK_MAX_SIZE: a node's byte bound whatever the configuration.
LISTPACK_MAX_SIZE: Final = 1 << 30
_U64: Final = (1 << 64) - 1
_SHORT: Final = 1 << 61
# The table as a name of this module: a C static when compiled, where the
# imported name is looked up on its module at every use.
_SMALL_INT_ENC: Final = SMALL_INT_ENC
_T = TypeVar("_T")


@mypyc_attr(native_class=False)
class Pel(dict[int, "Nack"]):
    """A pending entries list: ID -> Nack, kept with its IDs sorted so the
    range walks of XPENDING, XCLAIM and XAUTOCLAIM bisect instead of
    sorting. Every write goes through the methods below."""

    __slots__ = ("_ids",)

    def __init__(self) -> None:
        super().__init__()
        self._ids: list[int] = []

    def __setitem__(self, sid: int, nack: Nack) -> None:
        if sid not in self:
            ids = self._ids
            if not ids or ids[-1] < sid:
                ids.append(sid)
            else:
                insort(ids, sid)
        dict.__setitem__(self, sid, nack)

    def __delitem__(self, sid: int) -> None:
        dict.__delitem__(self, sid)
        ids = self._ids
        del ids[bisect_left(ids, sid)]

    @overload
    def pop(self, sid: int, /) -> Nack: ...
    @overload
    def pop(self, sid: int, default: Nack, /) -> Nack: ...
    @overload
    def pop(self, sid: int, default: _T, /) -> Nack | _T: ...

    def pop(self, sid: int, *default: object) -> object:
        nack = dict.pop(self, sid, None)
        if nack is not None:
            ids = self._ids
            del ids[bisect_left(ids, sid)]
            return nack
        if default:
            return default[0]
        raise KeyError(sid)

    def setdefault(self, sid: int, nack: Nack) -> Nack:
        if sid not in self:
            self[sid] = nack
        return dict.__getitem__(self, sid)

    def update(self, other: Mapping[int, Nack] | Iterable[tuple[int, Nack]] = (), /) -> None:  # type: ignore[override]
        for k, v in dict(other).items():
            self[k] = v

    def clear(self) -> None:
        dict.clear(self)
        self._ids.clear()

    def popitem(self) -> tuple[int, Nack]:
        sid = self._ids[-1]
        nack = dict.pop(self, sid)
        self._ids.pop()
        return sid, nack

    def ids(self, start: int = 0, end: int = MAX_ID, rev: bool = False) -> list[int]:
        """The pending IDs within [start, end], ascending (descending when rev)."""
        ids = self._ids
        out = ids[bisect_left(ids, start):bisect_right(ids, end)]
        if rev:
            out.reverse()
        return out

    def after(self, sid: int, count: int) -> list[int]:
        """At most count IDs at or above sid, ascending (XAUTOCLAIM's walk)."""
        ids = self._ids
        i = bisect_left(ids, sid)
        return ids[i:i + count]

    def first(self) -> int | None:
        return self._ids[0] if self._ids else None

    def last(self) -> int | None:
        return self._ids[-1] if self._ids else None


class Nack:
    """A delivered, unacknowledged entry of a group (streamNACK): shared by
    the group's PEL and its consumer's."""

    __slots__ = ("delivery_time", "delivery_count", "consumer")

    def __init__(self, delivery_time: int, delivery_count: int, consumer: Consumer) -> None:
        self.delivery_time = delivery_time
        self.delivery_count = delivery_count
        self.consumer = consumer


class Consumer:
    """A consumer of a group: its name, its seen and active times (server
    clock, ms) and its own pending entries (ID -> the group's Nack)."""

    __slots__ = ("name", "seen_time", "active_time", "pel")

    def __init__(self, name: bytes, now: int) -> None:
        self.name = name
        self.seen_time = now
        # -1 until the consumer first reads or claims something, as Valkey.
        self.active_time = -1
        self.pel: Pel = Pel()

    def pending(self, start: int = 0, end: int = MAX_ID) -> list[int]:
        """The IDs this consumer has pending within [start, end], ascending."""
        return self.pel.ids(start, end)


class Group:
    """A consumer group (streamCG): the last delivered ID, the entries-read
    counter (INVALID_ENTRIES_READ when unknown), the PEL (ID -> Nack) and
    the consumers by name."""

    __slots__ = ("last_id", "entries_read", "pel", "consumers")

    def __init__(self, last_id: int, entries_read: int) -> None:
        self.last_id = last_id
        self.entries_read = entries_read
        self.pel: Pel = Pel()
        self.consumers: dict[bytes, Consumer] = {}

    def pending(self, start: int = 0, end: int = MAX_ID) -> list[int]:
        """The group's pending IDs within [start, end], ascending."""
        return self.pel.ids(start, end)

    def consumer_names(self) -> list[bytes]:
        """Consumer names in Valkey's order (its radix tree: bytewise)."""
        return sorted(self.consumers)


class Node:
    """One radix-tree node of a stream: ``key`` is its primary ID, ``body``
    the listpack's elements (without header and end byte) exactly as
    Valkey's, ``nele`` their count, ``live``/``dead`` the primary entry's
    counters, ``fields`` the primary fields. ``ids`` holds each entry's
    ms above the primary's and its seq (32-bit words while they fit, else
    64-bit: an ID is ``base + (ids[2i] << 64 | ids[2i+1])``) and ``offs``
    the offset of its flags element in ``body``, so bisection and deletion
    need no decoding."""

    __slots__ = ("key", "kms", "kseq", "base", "body", "nele", "live", "dead", "fields", "head", "ids", "offs")

    def __init__(self, key: int, fields: tuple[bytes, ...]) -> None:
        self.key = key
        self.kms = key >> 64  # the primary ID's halves, for the deltas an append writes
        self.kseq = key & _U64
        self.fields = fields
        self.live = 0
        self.dead = 0
        self.body = bytearray()
        self.nele = 0
        self.head = 0  # bytes of the live and deleted counters in body
        self.base = key >> 64 << 64
        self.ids = array("I")
        self.offs = array("I")

    def __len__(self) -> int:
        """Entries in the node, deleted ones included."""
        return len(self.offs)

    def id_at(self, i: int) -> int:
        ids = self.ids
        return self.base + (ids[2 * i] << 64 | ids[2 * i + 1])

    def push_id(self, sid: int) -> None:
        ids = self.ids
        dms, seq = (sid - self.base) >> 64, sid & _U64
        if ids.typecode == "I" and (dms > 0xFFFFFFFF or seq > 0xFFFFFFFF):
            ids = self.ids = array("Q", ids)
        ids.append(dms)
        ids.append(seq)

    def index(self, sid: int) -> int:
        """The position of the first entry whose ID is >= sid."""
        ids = self.ids
        sid -= self.base
        lo, hi = 0, len(self.offs)
        while lo < hi:
            mid = (lo + hi) >> 1
            if (ids[2 * mid] << 64 | ids[2 * mid + 1]) < sid:
                lo = mid + 1
            else:
                hi = mid
        return lo

    def deleted_at(self, i: int) -> bool:
        return bool(self.body[self.offs[i]] & F_DELETED)

    def set_counts(self, live: int, dead: int) -> None:
        """lpReplaceInteger of the primary entry's counters: a counter
        whose encoding widens or narrows moves every entry."""
        new = enc_int(live) + enc_int(dead)
        d = len(new) - self.head
        self.body[0:self.head] = new
        self.head = len(new)
        self.live = live
        self.dead = dead
        if d:
            self.offs = array("I", [o + d for o in self.offs])

    def lp_bytes(self) -> int:
        """lpBytes: the whole listpack's size."""
        return lp.LP_HDR + len(self.body) + 1

    def entry(self, i: int) -> list[bytes]:
        """The field and value bytes of entry i, flat."""
        body = self.body
        p = self.offs[i]
        flags = body[p]
        # Skip the flags and the two ID deltas (mostly 7- or 13-bit ints).
        p += 2
        b = body[p]
        p = p + 2 if b < 0x80 else p + 3 if 0xC0 <= b < 0xE0 else skip(body, p)
        b = body[p]
        p = p + 2 if b < 0x80 else p + 3 if 0xC0 <= b < 0xE0 else skip(body, p)
        out: list[bytes] = []
        if flags & F_SAMEFIELDS:
            for f in self.fields:
                b = body[p]
                if 0x80 <= b < 0xC0:  # a string of up to 63 bytes
                    n = b & 0x3F
                    out.append(f)
                    out.append(bytes(body[p + 1:p + 1 + n]))
                    p += n + 2
                else:
                    v, p = read(body, p)
                    out.append(f)
                    out.append(v)
            return out
        nf, p = read_int(body, p)
        for _ in range(2 * nf):
            b = body[p]
            if 0x80 <= b < 0xC0:
                n = b & 0x3F
                out.append(bytes(body[p + 1:p + 1 + n]))
                p += n + 2
            else:
                v, p = read(body, p)
                out.append(v)
        return out

    def entry_reply(self, i: int, sid: int) -> bytes:
        """Entry i's reply (``entry_reply``), its ID ``sid``."""
        if _entry_reply is not None:
            out: bytes = _entry_reply(self.body, self.offs[i], self.fields, sid >> 64, sid & _U64)
            return out
        return entry_reply(sid, self.entry(i))

    def blob(self) -> bytes:
        """The whole listpack, as RDB carries it."""
        return lp.blob(self.body, self.nele)

    def shrink(self) -> None:
        """lpShrinkToFit when the node closes: drop growth slack."""
        self.body = bytearray(self.body)
        self.ids = array(self.ids.typecode, self.ids)
        self.offs = array("I", self.offs)

    def copy(self) -> Node:
        n = Node(self.key, self.fields)
        n.live, n.dead, n.nele, n.head = self.live, self.dead, self.nele, self.head
        n.body = bytearray(self.body)
        n.ids = array(self.ids.typecode, self.ids)
        n.offs = array("I", self.offs)
        return n


def new_node(sid: int, fields: list[bytes]) -> Node:
    """A node whose primary entry is the entry sid with these fields."""
    names = tuple(fields[0::2])
    node = Node(sid, names)
    nf = len(names)
    parts = [enc_int(1), enc_int(0), enc_int(nf)]
    parts += [enc_str(f) for f in names]
    parts.append(enc_int(0))
    node.head = len(parts[0]) + len(parts[1])
    node.body = bytearray(b"".join(parts))
    node.nele = nf + 4
    node.live = 1
    return node


def node_from_listpack(key: int, blob: bytes) -> Node:
    """A node from a listpack Valkey wrote (RDB): its entries indexed.
    Raises ValueError for a listpack that is not a stream node."""
    if len(blob) < 7 or int.from_bytes(blob[0:4], "little") != len(blob) or blob[-1] != 0xFF:
        raise ValueError("stream listpack size or terminator does not match")
    body = bytearray(blob[lp.LP_HDR:-1])
    end = len(body)
    live, p = read_int(body, 0)
    dead, p = read_int(body, p)
    head = p
    nf, p = read_int(body, p)
    names = []
    for _ in range(nf):
        f, p = read(body, p)
        names.append(f)
    zero, p = read_int(body, p)
    if zero != 0 or live < 0 or dead < 0 or nf < 0:
        raise ValueError("bad stream primary entry")
    node = Node(key, tuple(names))
    node.body = body
    node.head = head
    node.live = live
    node.dead = dead
    numele = 4 + nf
    kms, kseq = key >> 64, key & _U64
    offs = node.offs
    prev = key - 1
    seen_live = seen_dead = 0
    while p < end:
        offs.append(p)
        # Flags, ID deltas and counts are mostly 7-bit integers (two bytes
        # with their back length), strings mostly short: read those inline.
        b = body[p]
        if b < 0x80:
            flags = b
            p += 2
        else:
            flags, p = read_int(body, p)
        b = body[p]
        if b < 0x80:
            dms = b
            p += 2
        else:
            dms, p = read_int(body, p)
        b = body[p]
        if b < 0x80:
            dseq = b
            p += 2
        else:
            dseq, p = read_int(body, p)
        sid = ((kms + dms) & _U64) << 64 | ((kseq + dseq) & _U64)
        if sid <= prev:
            raise ValueError("stream entry IDs out of order in a node")
        prev = sid
        node.push_id(sid)
        if flags & F_SAMEFIELDS:
            k = nf
            extra = 3
        else:
            n, p = read_int(body, p)
            k = 2 * n
            extra = 4
        for _ in range(k):
            b = body[p]
            if b < 0x80:
                p += 2
            elif b < 0xC0:
                p += (b & 0x3F) + 2
            else:
                p = skip(body, p)
        b = body[p]
        if b < 0x80:
            count = b
            p += 2
        else:
            count, p = read_int(body, p)
        if count != k + extra:
            raise ValueError("bad stream entry element count")
        numele += k + extra + 1
        if flags & F_DELETED:
            seen_dead += 1
        else:
            seen_live += 1
    if p != end:
        raise ValueError("stream listpack entries overrun its end")
    if seen_live != live or seen_dead != dead:
        raise ValueError("stream node counters do not match its entries")
    if not len(offs):
        raise ValueError("empty stream node")
    node.nele = numele
    return node


def append_entry(node: Node, dms: int, ms: int, seq: int, fields: list[bytes], same: bool) -> int:
    """The entry's elements, ID parts and offset written into its node
    (cstream.append_entry's pure twin); the elements written."""
    dseq = seq - node.kseq
    body = node.body
    node.offs.append(len(body))
    ids = node.ids
    if (dms <= 0xFFFFFFFF and seq <= 0xFFFFFFFF) or ids.typecode == "Q":
        ids.append(dms)
        ids.append(seq)
    else:
        node.push_id(ms << 64 | seq)
    if same:
        if len(fields) == 2:
            small = _SMALL_INT_ENC
            part = [b"\x02\x01", small[dms] if -4096 <= dms <= 4095 else enc_int(int64(dms)),
                    small[dseq] if -4096 <= dseq <= 4095 else enc_int(int64(dseq)),
                    enc_str(fields[1]), b"\x04\x01"]
            count = 4
        else:
            count = len(fields) // 2 + 3
            part = [b"\x02\x01", enc_int(int64(dms)), enc_int(int64(dseq))]
            part += [enc_str(v) for v in fields[1::2]]
            part.append(enc_int(count))
    else:
        count = len(fields) + 4
        part = [b"\x00\x01", enc_int(int64(dms)), enc_int(int64(dseq)), enc_int(len(fields) // 2)]
        part += [enc_str(v) for v in fields]
        part.append(enc_int(count))
    body += b"".join(part)
    return count + 1


class Stream:
    """A stream: its entries in ID order in Valkey's nodes, with Valkey's
    bookkeeping: the last ID ever given, the greatest deleted ID, the count
    of entries ever added, and the groups by name."""

    __slots__ = ("_keys", "_nodes", "_len", "_first", "_rax", "last_ms", "last_seq", "max_deleted_id",
                 "entries_added", "groups")

    def __init__(self) -> None:
        # The nodes' primary IDs (for bisection) and the nodes, in order.
        self._keys: list[int] = []
        self._nodes: list[Node] = []
        self._len = 0
        self._first = 0
        self._rax = 0  # radix-tree-nodes, 0 until computed for the current nodes
        # The last ID ever given, as its halves: XADD's generated ID needs
        # no 128-bit arithmetic (``last_id`` is the one int).
        self.last_ms = 0
        self.last_seq = 0
        self.max_deleted_id = 0
        self.entries_added = 0
        self.groups: dict[bytes, Group] = {}

    def __len__(self) -> int:
        return self._len

    @property
    def last_id(self) -> int:
        """The last ID ever given (XADD's floor), as one int."""
        return self.last_ms << 64 | self.last_seq

    @last_id.setter
    def last_id(self, sid: int) -> None:
        self.last_ms = sid >> 64
        self.last_seq = sid & _U64

    @property
    def first_id(self) -> int:
        """The recorded first entry ID (XINFO's recorded-first-entry-id):
        the first live entry's, 0 when empty, kept as Valkey keeps it
        (set by the first add, by deletions and trims of the first entry,
        read from the file on load)."""
        return self._first

    @first_id.setter
    def first_id(self, sid: int) -> None:
        self._first = sid

    def edge_id(self, first: bool = True, skip_tombstones: bool = True) -> int:
        """streamGetEdgeID: the first (or last) entry's ID, deleted entries
        included unless skip_tombstones; MAX_ID (first) or 0 (last) when
        there is none."""
        nodes = self._nodes if first else reversed(self._nodes)
        for node in nodes:
            if skip_tombstones and not node.live:
                continue
            body, offs = node.body, node.offs
            idx = range(len(offs)) if first else range(len(offs) - 1, -1, -1)
            for i in idx:
                if not skip_tombstones or not body[offs[i]] & F_DELETED:
                    return node.id_at(i)
        return MAX_ID if first else 0

    def add(self, sid: int, fields: list[bytes], node_limits: tuple[int, int]) -> None:
        """Append an entry whose ID is above ``last_id`` (``append`` by the
        ID as one int)."""
        self.append(sid >> 64, sid & _U64, fields, node_limits)

    def append(self, ms: int, seq: int, fields: list[bytes], node_limits: tuple[int, int]) -> None:
        """Append the entry ``ms-seq``, above ``last_id`` (the caller checks
        and counts: ``last_id`` and ``entries_added`` are set here).
        ``node_limits`` is (stream-node-max-bytes, stream-node-max-entries)
        as configured when the entry is added: it decides where a node of
        entries closes, which XTRIM ~ and XINFO see."""
        nodes = self._nodes
        node = nodes[-1] if nodes else None
        if node is not None:
            max_bytes, max_entries = node_limits
            if max_bytes == 0 or max_bytes > LISTPACK_MAX_SIZE:
                max_bytes = LISTPACK_MAX_SIZE
            size = 7 + len(node.body)
            for f in fields:
                size += len(f)
            if size >= max_bytes or (max_entries and node.live + node.dead >= max_entries):
                node.shrink()
                node = None
        if node is None:
            sid = ms << 64 | seq
            node = new_node(sid, fields)
            nodes.append(node)
            self._keys.append(sid)
            self._rax = 0
            same = True
        else:
            live = node.live
            if live < 127:  # the counter stays one byte: lpReplaceInteger in place
                node.body[0] = live + 1
                node.live = live + 1
            else:
                node.set_counts(live + 1, node.dead)
            names = node.fields
            if len(names) == 1:
                same = len(fields) == 2 and fields[0] == names[0]
            else:
                same = len(fields) == 2 * len(names) and tuple(fields[0::2]) == names
        dms = ms - node.kms
        written = 0
        if _append_entry is not None and dms <= 0xFFFFFFFF and seq <= 0xFFFFFFFF:
            written = _append_entry(node.body, node.ids, node.offs, dms, seq, node.kseq, fields, same)
        if written == 0:
            written = append_entry(node, dms, ms, seq, fields, same)
        node.nele += written
        self._len += 1
        if self._len == 1:
            self._first = ms << 64 | seq
        self.last_ms = ms
        self.last_seq = seq
        added = self.entries_added + 1
        # The first test is on a short integer when compiled; LLONG_MAX is not one.
        self.entries_added = added if added < _SHORT or added <= LLONG_MAX else int64(added)

    def _locate(self, sid: int) -> tuple[int, int] | None:
        """(node position, entry position) of the live entry sid, or None."""
        j = bisect_right(self._keys, sid) - 1
        if j < 0:
            return None
        node = self._nodes[j]
        i = node.index(sid)
        if i == len(node.offs) or node.id_at(i) != sid or node.deleted_at(i):
            return None
        return j, i

    def get(self, sid: int) -> list[bytes] | None:
        at = self._locate(sid)
        if at is None:
            return None
        return self._nodes[at[0]].entry(at[1])

    def range(self, start: int, end: int, rev: bool = False) -> Iterator[tuple[int, list[bytes]]]:
        """The entries with start <= ID <= end, ascending (descending when
        rev); the stream must not change while the iterator is used."""
        for sid, node, i in self.spans(start, end, rev):
            yield sid, node.entry(i)

    def spans(self, start: int, end: int, rev: bool = False) -> Iterator[tuple[int, Node, int]]:
        """``range`` without decoding: each entry's ID, node and place in
        it, for a reader that takes the entry from the node itself
        (``Node.entry_reply``)."""
        if start > end or not self._len:
            return
        keys, nodes = self._keys, self._nodes
        if not rev:
            j = max(bisect_right(keys, start) - 1, 0)
            for k in range(j, len(nodes)):
                node = nodes[k]
                if node.key > end:
                    return
                if not node.live:
                    continue
                body, offs, ids, base = node.body, node.offs, node.ids, node.base
                i = node.index(start) if node.key < start else 0
                n = len(offs)
                while i < n:
                    sid = base + (ids[2 * i] << 64 | ids[2 * i + 1])
                    if sid > end:
                        return
                    if not body[offs[i]] & F_DELETED:
                        yield sid, node, i
                    i += 1
        else:
            j = bisect_right(keys, end) - 1
            for k in range(j, -1, -1):
                node = nodes[k]
                if not node.live:
                    continue
                body, offs, ids, base = node.body, node.offs, node.ids, node.base
                i = node.index(end + 1) - 1
                while i >= 0:
                    sid = base + (ids[2 * i] << 64 | ids[2 * i + 1])
                    if sid < start:
                        return
                    if not body[offs[i]] & F_DELETED:
                        yield sid, node, i
                    i -= 1

    def range_replies(self, start: int, end: int, count: int, rev: bool) -> tuple[list[bytes], int]:
        """XRANGE's replies of the live entries within [start, end], in
        order (reversed when rev), at most ``count`` of them (0: all), and
        how many were written. Compiled, one kernel call writes a node's
        run of entries (cstream.node_entries); pure, each entry is written
        from ``spans``."""
        out: list[bytes] = []
        n = 0
        if _node_entries is None:
            for sid, node, i in self.spans(start, end, rev):
                out.append(node.entry_reply(i, sid))
                n += 1
                if n == count:
                    break
            return out, n
        if start > end or not self._len:
            return out, 0
        keys, nodes = self._keys, self._nodes
        lim = start if rev else end
        lim_ms, lim_seq = lim >> 64, lim & _U64
        if not rev:
            j = max(bisect_right(keys, start) - 1, 0)
            stop, step = len(nodes), 1
        else:
            j = bisect_right(keys, end) - 1
            stop, step = -1, -1
        for k in range(j, stop, step):
            node = nodes[k]
            if not rev and node.key > end:
                break
            if not node.live:
                continue
            if rev:
                i = node.index(end + 1) - 1
            else:
                i = node.index(start) if node.key < start else 0
            chunk, got, passed = _node_entries(node.body, node.offs, node.ids, node.fields, node.kms, i, rev,
                                               lim_ms, lim_seq, count - n if count else 0)
            if got:
                out.append(chunk)
                n += got
            if passed or (count and n == count):
                break
        return out, n

    def ids(self, start: int = 0, end: int = MAX_ID, rev: bool = False) -> Iterator[int]:
        """The live IDs within [start, end] in order (reversed when rev),
        without decoding the entries."""
        for node, i in self._positions(start, end, rev):
            yield node.id_at(i)

    def _positions(self, start: int, end: int, rev: bool) -> Iterator[tuple[Node, int]]:
        """(node, position) of each live entry within [start, end]."""
        if start > end or not self._len:
            return
        keys, nodes = self._keys, self._nodes
        if not rev:
            for k in range(max(bisect_right(keys, start) - 1, 0), len(nodes)):
                node = nodes[k]
                if node.key > end:
                    return
                body, offs = node.body, node.offs
                for i in range(node.index(start) if node.key < start else 0, len(offs)):
                    if node.id_at(i) > end:
                        return
                    if not body[offs[i]] & F_DELETED:
                        yield node, i
        else:
            for k in range(bisect_right(keys, end) - 1, -1, -1):
                node = nodes[k]
                body, offs = node.body, node.offs
                for i in range(node.index(end + 1) - 1, -1, -1):
                    if node.id_at(i) < start:
                        return
                    if not body[offs[i]] & F_DELETED:
                        yield node, i

    def delete(self, sid: int) -> bool:
        """Remove one entry (streamIteratorRemoveEntry: flagged deleted, its
        node dropped once it holds no live entry); False when there is
        none with that ID. The recorded first ID follows (as XDEL keeps
        it); the caller keeps ``max_deleted_id``."""
        at = self._locate(sid)
        if at is None:
            return False
        j, i = at
        node = self._nodes[j]
        node.body[node.offs[i]] |= F_DELETED
        if node.live == 1:
            del self._nodes[j]
            del self._keys[j]
            self._rax = 0
        else:
            node.set_counts(node.live - 1, node.dead + 1)
        self._len -= 1
        if not self._len:
            self._first = 0
        elif sid == self._first:
            self._first = self.edge_id()
        return True

    def trim(self, maxlen: int | None, minid: int | None, approx: bool, limit: int) -> int:
        """Remove entries from the head (streamTrim): down to ``maxlen``
        entries, or those below ``minid``. With ``approx`` only whole nodes
        go; whole nodes go while at most ``limit`` entries (0: no limit)
        are removed. Returns how many entries were removed."""
        nodes = self._nodes
        deleted = 0
        k = 0
        while k < len(nodes):
            if maxlen is not None and self._len <= maxlen:
                break
            node = nodes[k]
            entries = node.live
            if limit and deleted + entries > limit:
                break
            if maxlen is not None:
                remove = self._len - entries >= maxlen
            else:
                assert minid is not None
                remove = node.id_at(len(node.offs) - 1) < minid
            if remove:
                self._len -= entries
                deleted += entries
                k += 1
                continue
            if approx:
                break
            body, offs = node.body, node.offs
            gone = 0
            for i in range(len(offs)):
                if maxlen is not None:
                    if self._len <= maxlen:
                        break
                elif minid is not None and node.id_at(i) >= minid:
                    break
                if not body[offs[i]] & F_DELETED:
                    body[offs[i]] |= F_DELETED
                    gone += 1
                    self._len -= 1
            deleted += gone
            node.set_counts(node.live - gone, node.dead + gone)
            break
        if k:
            del nodes[:k]
            del self._keys[:k]
            self._rax = 0
        if not self._len:
            self._first = 0
        elif deleted:
            self._first = self.edge_id()
        return deleted

    # -- what XINFO, the type's record and RDB use -------------------------------

    def node_count(self) -> int:
        """XINFO STREAM's radix-tree-keys: the nodes."""
        return len(self._nodes)

    def rax_nodes(self) -> int:
        """XINFO STREAM's radix-tree-nodes: the nodes of the radix tree over
        the 16-byte big-endian primary IDs, as Valkey's rax lays them out
        (kept until the nodes change)."""
        if not self._rax:
            self._rax = rax_node_count([k.to_bytes(16, "big") for k in self._keys])
        return self._rax

    def nodes(self) -> list[Node]:
        """The nodes in ID order (read-only use: RDB, MEMORY USAGE)."""
        return self._nodes

    def append_node(self, node: Node) -> None:
        """Add a node loaded from a file after the last one (RDB load);
        its primary ID must be above every key already there."""
        if self._keys and node.key <= self._keys[-1]:
            raise ValueError("stream nodes out of order")
        self._keys.append(node.key)
        self._nodes.append(node)
        self._rax = 0
        self._len += node.live
        if self._len == node.live:
            self._first = self.edge_id()

    def estimate_entries_read(self, sid: int) -> int:
        """streamEstimateDistanceFromFirstEverEntry as Valkey 9.1 has it: the
        entries-read counter of ``sid`` counted from the first entry ever
        added, or INVALID_ENTRIES_READ when a deletion after ``sid`` or its
        place make it unknown."""
        added = self.entries_added
        if not added:
            return 0
        last = self.last_id
        if not self._len and sid <= last:
            return added
        md = self.max_deleted_id
        if sid and sid < md:  # fragmented between sid and the last ID
            return INVALID_ENTRIES_READ
        if sid == last:
            return added
        if sid > last:
            return INVALID_ENTRIES_READ
        first = self._first
        if not md or md < first:
            if sid < first:
                return int64(added - self._len)
            if sid == first:
                return int64(added - self._len + 1)
        return INVALID_ENTRIES_READ

    def range_has_tombstones(self, start: int = 0, end: int = MAX_ID) -> bool:
        """streamRangeHasTombstones as Valkey 9.1 has it: whether the
        greatest deleted ID lies within [start, end] of a non-empty stream
        (a deletion before the first entry counts too)."""
        md = self.max_deleted_id
        if not self._len or not md:
            return False
        return start <= md <= end

    def copy(self) -> Stream:
        """A deep copy, groups, consumers and pending entries included."""
        out = Stream()
        out._nodes = [n.copy() for n in self._nodes]
        out._keys = list(self._keys)
        out._len = self._len
        out._first = self._first
        out.last_id = self.last_id
        out.max_deleted_id = self.max_deleted_id
        out.entries_added = self.entries_added
        for name, g in self.groups.items():
            ng = Group(g.last_id, g.entries_read)
            for cname, c in g.consumers.items():
                nc = Consumer(c.name, c.seen_time)
                nc.active_time = c.active_time
                ng.consumers[cname] = nc
            for sid, nack in g.pel.items():
                nn = Nack(nack.delivery_time, nack.delivery_count, ng.consumers[nack.consumer.name])
                ng.pel[sid] = nn
                nn.consumer.pel[sid] = nn
            out.groups[name] = ng
        return out


def rax_node_count(keys: list[bytes]) -> int:
    """The node count of Valkey's rax holding these keys (sorted, distinct,
    none a prefix of another): the head, every branching point, every
    child of a branching point and every leaf, a run of single-child
    steps being one compressed node."""
    return 1 + _rax_below(keys, 0) if keys else 1


def _rax_below(keys: list[bytes], depth: int) -> int:
    # Nodes under the node at ``depth`` that the keys (sharing their first
    # ``depth`` bytes) pass through.
    if len(keys) == 1:
        return 0 if depth == len(keys[0]) else 1
    first, last = keys[0], keys[-1]
    d = depth
    while first[d] == last[d]:
        d += 1
    count = 1 if d > depth else 0
    start = 0
    for i in range(1, len(keys) + 1):
        if i == len(keys) or keys[i][d] != keys[start][d]:
            count += 1 + _rax_below(keys[start:i], d + 1)
            start = i
    return count


# -- the type's record ----------------------------------------------------------

# The stream type's record (see ``record.py``): a ``stream.Stream``, in
# Valkey's one encoding, ``stream``.
#
# The RDB form is Valkey's RDB_TYPE_STREAM_LISTPACKS_3 (rdb.c rdbSaveObject):
# the nodes as their listpacks, byte for byte (each keyed by its primary ID
# in 16 big-endian bytes), the length, the last, first and greatest deleted
# IDs, the entries-added counter, then each group with its last ID, its
# entries-read counter, its PEL with delivery times and counts, and its
# consumers with seen and active times and the IDs they hold. The two older
# forms load as Valkey loads them: without first/deleted IDs and counters
# (LISTPACKS: derived as rdbLoadObject derives them) and without active times
# (LISTPACKS_2: the seen time).

T_STREAM_LISTPACKS, T_STREAM_LISTPACKS_2, T_STREAM_LISTPACKS_3 = 15, 19, 21
_MS: Final = struct.Struct("<q")


def _encoding(v: Stream) -> bytes:
    return b"stream"


def _copy(v: Stream) -> Stream:
    return v.copy()


def _memory(v: Stream, samples: int) -> int:
    """objectComputeSize for a stream: the stream struct, the radix tree,
    the listpacks (the first ``samples`` measured, the rest estimated from
    them, the last one as allocated) and the groups' PELs and consumers."""
    nodes = v.nodes()
    size = 16 + 96 + 48 * v.rax_nodes()
    if nodes:
        # The open (last) node holds its preallocation until it closes.
        last = alloc_size(max(nodes[-1].lp_bytes(), 4096))
        sample = nodes[:samples] if samples else nodes
        lps = sum(alloc_size(n.lp_bytes()) for n in sample)
        if len(nodes) <= len(sample):
            size += lps - alloc_size(nodes[-1].lp_bytes()) + last
        else:
            size += lps // len(sample) * (len(nodes) - 1) + last
    for g in v.groups.values():
        size += 80 + 48 * (1 + len(g.pel)) + 24 * len(g.pel)
        for c in g.consumers.values():
            size += 40 + len(c.name) + 48 * (1 + len(c.pel))
    return size


def _digest(v: Stream) -> bytes:
    """The entries only (IDs, fields and values), as Valkey's digest of a
    stream: groups and counters do not enter it."""
    parts = [b"x"]
    for sid, fields in v.range(0, MAX_ID):
        parts.append(fmt_id(sid))
        parts.extend(b"%d:" % len(f) + f for f in fields)
    return b"\0".join(parts)


def _raw_id(sid: int) -> bytes:
    return sid.to_bytes(16, "big")


def _id_lens(sid: int) -> bytes:
    return encode_len(sid >> 64) + encode_len(sid & _U64)


def _rdb_save(v: Stream) -> tuple[int, bytes]:
    nodes = v.nodes()
    parts = [encode_len(len(nodes))]
    for node in nodes:
        parts.append(encode_string(_raw_id(node.key)))
        parts.append(encode_string(node.blob()))
    parts.append(encode_len(len(v)))
    parts.append(_id_lens(v.last_id))
    parts.append(_id_lens(v.first_id))
    parts.append(_id_lens(v.max_deleted_id))
    parts.append(encode_len(v.entries_added & _U64))
    parts.append(encode_len(len(v.groups)))
    for name in sorted(v.groups):
        g = v.groups[name]
        parts.append(encode_string(name))
        parts.append(_id_lens(g.last_id))
        parts.append(encode_len(g.entries_read & _U64))
        parts.append(encode_len(len(g.pel)))
        for sid in g.pel.ids():
            nack = g.pel[sid]
            parts.append(_raw_id(sid) + _MS.pack(nack.delivery_time) + encode_len(nack.delivery_count & _U64))
        parts.append(encode_len(len(g.consumers)))
        for cname in g.consumer_names():
            c = g.consumers[cname]
            parts.append(encode_string(cname) + _MS.pack(c.seen_time) + _MS.pack(c.active_time))
            parts.append(encode_len(len(c.pel)))
            parts.extend(_raw_id(sid) for sid in c.pel.ids())
    return T_STREAM_LISTPACKS_3, b"".join(parts)


def _read_id(r: Reader) -> int:
    return r.plain_len() << 64 | r.plain_len()


def _rdb_load(r: Reader, t: int, key: bytes, server: ValueHost, has_ttl: bool) -> Stream:
    s = Stream()
    for _ in range(r.plain_len()):
        raw = r.string()
        if len(raw) != 16:
            raise RdbError(f"key {key!r}: stream node key entry is not the size of a stream ID")
        blob = r.string()
        try:
            s.append_node(node_from_listpack(int.from_bytes(raw, "big"), blob))
        except (ValueError, IndexError) as e:
            raise RdbError(f"key {key!r}: stream listpack integrity check failed ({e})") from None
    length = r.plain_len()
    if length != len(s):
        raise RdbError(f"key {key!r}: stream length {length} does not match its nodes' {len(s)} entries")
    s.last_id = _read_id(r)
    if t >= T_STREAM_LISTPACKS_2:
        s.first_id = _read_id(r)
        s.max_deleted_id = _read_id(r)
        s.entries_added = int64(r.plain_len())
    else:
        s.entries_added = len(s)
        s.first_id = s.edge_id()  # MAX_ID when there is no entry, as Valkey
    for _ in range(r.plain_len()):
        name = r.string()
        last = _read_id(r)
        if t >= T_STREAM_LISTPACKS_2:
            read = r.plain_len()
            entries_read = int64(read)
        else:
            entries_read = s.estimate_entries_read(last)
        if name in s.groups:
            raise RdbError(f"Duplicated consumer group name {name!r} (key {key!r})")
        g = Group(last, entries_read)
        s.groups[name] = g
        # A global PEL entry's owner until its consumer's PEL names it.
        unowned = Consumer(b"", 0)
        for _ in range(r.plain_len()):
            sid = int.from_bytes(r.take(16), "big")
            when = _MS.unpack(r.take(8))[0]
            count = int64(r.plain_len())
            if sid in g.pel:
                raise RdbError(f"Duplicated global PEL entry loading stream consumer group (key {key!r})")
            g.pel[sid] = Nack(when, count, unowned)
        for _ in range(r.plain_len()):
            cname = r.string()
            if cname in g.consumers:
                raise RdbError(f"Duplicate stream consumer detected. (key {key!r})")
            c = Consumer(cname, _MS.unpack(r.take(8))[0])
            c.active_time = _MS.unpack(r.take(8))[0] if t >= T_STREAM_LISTPACKS_3 else c.seen_time
            g.consumers[cname] = c
            for _ in range(r.plain_len()):
                sid = int.from_bytes(r.take(16), "big")
                nack = g.pel.get(sid)
                if nack is None:
                    raise RdbError(f"Consumer entry not found in group global PEL (key {key!r})")
                if sid in c.pel:
                    raise RdbError(f"Duplicated consumer PEL entry loading a stream consumer group (key {key!r})")
                nack.consumer = c
                c.pel[sid] = nack
        if any(n.consumer is unowned for n in g.pel.values()):
            raise RdbError(f"Stream CG PEL entry without consumer (key {key!r})")
    return s


def _aof_rewrite(key: bytes, v: Stream) -> Iterator[list[bytes]]:
    """rewriteStreamObject: XADD per entry (XADD MAXLEN 0 of a dummy entry
    for an empty stream), XSETID with the counters, then per group XGROUP
    CREATE ... ENTRIESREAD, XCLAIM ... FORCE per pending entry, and XGROUP
    CREATECONSUMER for consumers holding nothing."""
    if len(v):
        for sid, fields in v.range(0, MAX_ID):
            yield [b"XADD", key, fmt_id(sid), *fields]
    else:
        yield [b"XADD", key, b"MAXLEN", b"0", b"0-1", b"x", b"y"]
    yield [b"XSETID", key, fmt_id(v.last_id), b"ENTRIESADDED", b"%d" % v.entries_added,
           b"MAXDELETEDID", fmt_id(v.max_deleted_id)]
    for name in sorted(v.groups):
        g = v.groups[name]
        yield [b"XGROUP", b"CREATE", key, name, fmt_id(g.last_id), b"ENTRIESREAD", b"%d" % g.entries_read]
        for cname in g.consumer_names():
            c = g.consumers[cname]
            if not c.pel:
                yield [b"XGROUP", b"CREATECONSUMER", key, name, cname]
                continue
            for sid in c.pel.ids():
                nack = c.pel[sid]
                yield [b"XCLAIM", key, name, cname, b"0", fmt_id(sid), b"TIME", b"%d" % nack.delivery_time,
                       b"RETRYCOUNT", b"%d" % nack.delivery_count, b"JUSTID", b"FORCE"]


STREAM: Final = ValueType(
    name=b"stream",
    classes=(Stream,),
    encodings=(b"stream",),
    encoding=_encoding,
    copy=_copy,
    memory=_memory,
    digest=_digest,
    rdb_save=_rdb_save,
    rdb_types=(T_STREAM_LISTPACKS, T_STREAM_LISTPACKS_2, T_STREAM_LISTPACKS_3),
    rdb_load=_rdb_load,
    aof_rewrite=_aof_rewrite,
)

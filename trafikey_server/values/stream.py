"""The stream type's structure: entries by ID, consumer groups, their
pending entries and consumers, as Valkey's stream.h keeps them.

An ID is one Python int, ``ms << 64 | seq``: comparisons, bisection and
hashing are then single operations, and the 128-bit order is the int
order. ``fmt_id`` gives Valkey's ``ms-seq`` text.

This module is the structure and its API only (t_stream.c's
streamAppendItem, streamTrim, iterators, the NACK and consumer records);
the commands that use it, their argument rules and their replies live in
``commands/``, and the type's record (RDB, AOF rewrite, COPY, digest,
memory) beside it.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Iterator

SEQ_BITS = 64
SEQ_MASK = (1 << 64) - 1
MAX_ID = (1 << 128) - 1
# A group's entries_read when it cannot be known (SCG_INVALID_ENTRIES_READ).
INVALID_ENTRIES_READ = -1


def make_id(ms: int, seq: int) -> int:
    return ms << SEQ_BITS | seq


def id_ms(sid: int) -> int:
    return sid >> SEQ_BITS


def id_seq(sid: int) -> int:
    return sid & SEQ_MASK


def fmt_id(sid: int) -> bytes:
    """Valkey's text of an ID: ``ms-seq``."""
    return b"%d-%d" % (sid >> SEQ_BITS, sid & SEQ_MASK)


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
        self.pel: dict[int, Nack] = {}

    def pending(self, start: int = 0, end: int = MAX_ID) -> list[int]:
        """The IDs this consumer has pending within [start, end], ascending."""
        return sorted(i for i in self.pel if start <= i <= end)


class Group:
    """A consumer group (streamCG): the last delivered ID, the entries-read
    counter (INVALID_ENTRIES_READ when unknown), the PEL (ID -> Nack) and
    the consumers by name."""

    __slots__ = ("last_id", "entries_read", "pel", "consumers")

    def __init__(self, last_id: int, entries_read: int) -> None:
        self.last_id = last_id
        self.entries_read = entries_read
        self.pel: dict[int, Nack] = {}
        self.consumers: dict[bytes, Consumer] = {}

    def pending(self, start: int = 0, end: int = MAX_ID) -> list[int]:
        """The group's pending IDs within [start, end], ascending."""
        return sorted(i for i in self.pel if start <= i <= end)

    def consumer_names(self) -> list[bytes]:
        """Consumer names in Valkey's order (its radix tree: bytewise)."""
        return sorted(self.consumers)


class Stream:
    """A stream: its entries in ID order, each a flat list of field and
    value bytes, with Valkey's bookkeeping: the last ID ever given, the
    greatest deleted ID, the count of entries ever added, and the groups
    by name."""

    __slots__ = ("_ids", "_entries", "last_id", "max_deleted_id", "entries_added", "groups")

    def __init__(self) -> None:
        self._ids: list[int] = []
        self._entries: dict[int, list[bytes]] = {}
        self.last_id = 0
        self.max_deleted_id = 0
        self.entries_added = 0
        self.groups: dict[bytes, Group] = {}

    def __len__(self) -> int:
        return len(self._ids)

    @property
    def first_id(self) -> int:
        """The first live entry's ID, 0 when empty."""
        return self._ids[0] if self._ids else 0

    def add(self, sid: int, fields: list[bytes], node_limits: tuple[int, int]) -> None:
        """Append an entry whose ID is above ``last_id`` (the caller checks
        and counts: ``last_id`` and ``entries_added`` are set here).
        ``node_limits`` is (stream-node-max-bytes, stream-node-max-entries)
        as configured when the entry is added: it decides where a node of
        entries closes, which XTRIM ~ and XINFO see."""
        self._ids.append(sid)
        self._entries[sid] = fields
        self.last_id = sid
        self.entries_added += 1

    def get(self, sid: int) -> list[bytes] | None:
        return self._entries.get(sid)

    def range(self, start: int, end: int, rev: bool = False) -> Iterator[tuple[int, list[bytes]]]:
        """The entries with start <= ID <= end, ascending (descending when
        rev); the stream must not change while the iterator is used."""
        lo = bisect_left(self._ids, start)
        hi = bisect_right(self._ids, end)
        ids = self._ids[lo:hi]
        if rev:
            ids.reverse()
        entries = self._entries
        for sid in ids:
            yield sid, entries[sid]

    def delete(self, sid: int) -> bool:
        """Remove one entry; False when there is none with that ID. The
        caller keeps ``max_deleted_id``."""
        if self._entries.pop(sid, None) is None:
            return False
        del self._ids[bisect_left(self._ids, sid)]
        return True

    def trim(self, maxlen: int | None, minid: int | None, approx: bool, limit: int) -> int:
        """Remove entries from the head (streamTrim): down to ``maxlen``
        entries, or those below ``minid``. With ``approx`` only whole nodes
        go, and at most ``limit`` entries (0: no limit) are removed.
        Returns how many entries were removed."""
        ids = self._ids
        if maxlen is not None:
            n = max(0, len(ids) - maxlen)
        else:
            assert minid is not None
            n = bisect_left(ids, minid)
        if limit and n > limit:
            n = limit if not approx else 0
        for sid in ids[:n]:
            del self._entries[sid]
        del ids[:n]
        return n

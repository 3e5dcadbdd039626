"""The hash type: ``Hash``, its field expiry, and its record (see
``record.py``), in Valkey's listpack or hashtable encoding (``Hash.big``).

Handlers test ``type(v) is Hash``: an exact type check is the cheapest
dispatch Python has. What the server knows of the type beyond its commands
(its TYPE name, encodings, persistence, ...) is its record, at the end,
listed in ``registry.py``; the commands are ``commands/hash.py``.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Iterator
from itertools import islice
from typing import TYPE_CHECKING, Final

from mypy_extensions import mypyc_attr

from ..protocol.rdbformat import (
    T_HASH,
    T_HASH_2,
    T_HASH_LISTPACK,
    T_HASH_ZIPLIST,
    T_HASH_ZIPMAP,
    encode_len,
    encode_string,
    listpack_entries,
    pairs,
    ziplist_entries,
    zipmap_entries,
)
from .listpack import blob, enc_str
from .record import ITEMS_PER_CMD, ValueHost, ValueType, alloc_size, sds_size

if TYPE_CHECKING:
    from ..protocol.rdbformat import Reader


@mypyc_attr(native_class=False)
class Hash(dict[bytes, bytes]):
    """A hash: field -> value. ``big`` records Valkey's one-way switch from
    listpack to hashtable encoding, which OBJECT ENCODING reports.

    ``ttl`` maps the fields that carry an expiry to its absolute time in ms,
    and is None while no field has one, so a plain hash pays nothing. As
    in Valkey, a field past its time stays stored (HLEN counts it) until
    the active sweep reaps it or a write overwrites it; every read hides
    it. A field gets a TTL only in the hashtable encoding."""

    __slots__ = ("big", "ttl")

    def __init__(self) -> None:
        super().__init__()
        self.big = False
        self.ttl: dict[bytes, int] | None = None

    def is_expired(self, field: bytes, now: int) -> bool:
        """A stored field past its time (Valkey's entryIsExpired)."""
        ttl = self.ttl
        if ttl is None:
            return False
        t = ttl.get(field)
        return t is not None and t < now

    def live_get(self, field: bytes, now: int) -> bytes | None:
        """The field's value unless it is absent or past its time."""
        v = self.get(field)
        if v is not None and self.ttl is not None:
            t = self.ttl.get(field)
            if t is not None and t < now:
                return None
        return v

    def live_items(self, now: int) -> list[tuple[bytes, bytes]]:
        """Every field and value not past its time, in stored order."""
        ttl = self.ttl
        if ttl is None:
            return list(self.items())
        return [(f, v) for f, v in self.items() if not (f in ttl and ttl[f] < now)]

    def drop(self, field: bytes) -> bytes | None:
        """Delete a stored field (expired or not) with its TTL."""
        v = self.pop(field, None)
        if v is not None and self.ttl is not None and self.ttl.pop(field, None) is not None and not self.ttl:
            self.ttl = None
        return v

    def set_ttl(self, field: bytes, when: int) -> None:
        if self.ttl is None:
            self.ttl = {}
        self.ttl[field] = when
        self.big = True

    def clear_ttl(self, field: bytes) -> bool:
        """Persist a field; True if it had a TTL."""
        ttl = self.ttl
        if ttl is None or ttl.pop(field, None) is None:
            return False
        if not ttl:
            self.ttl = None
        return True

    def next_expiry(self) -> int | None:
        """The earliest field time, None when no field has one. A call, not
        a read of ``ttl`` after ``reap``: the type checker keeps a narrowed
        attribute across calls, and compiled code trusts it."""
        ttl = self.ttl
        return min(ttl.values()) if ttl else None

    def reap(self, now: int, budget: int) -> list[bytes]:
        """Delete up to ``budget`` fields past their time (the active sweep)."""
        ttl = self.ttl
        if ttl is None:
            return []
        due = [f for f, t in ttl.items() if t < now][:budget]
        for f in due:
            self.drop(f)
        return due


STRING_TYPES: Final = (bytes, bytearray)


# -- the type's record ----------------------------------------------------------


def _encoding(v: Hash) -> bytes:
    return b"hashtable" if v.big else b"listpack"


def _copy(v: Hash) -> Hash:
    h = Hash()
    h.update(v)
    h.big = v.big
    if v.ttl is not None:
        h.ttl = dict(v.ttl)
    return h


def _memory(v: Hash, samples: int) -> int:
    items = list(islice(v.items(), samples))
    per = sum(alloc_size(sds_size(len(f))) + alloc_size(sds_size(len(x))) + 16 for f, x in items) / max(len(items), 1)
    return 64 + int(per * len(v))


def _digest(v: Hash) -> bytes:
    ttl = v.ttl
    if ttl is not None:
        return b"h" + b"\0".join(k + b"\1" + bytes(x) + b"\2%d" % ttl.get(k, -1) for k, x in sorted(v.items()))
    return b"h" + b"\0".join(k + b"\1" + bytes(x) for k, x in sorted(v.items()))


def _rdb_save(v: Hash) -> tuple[int, bytes]:
    """A listpack hash as Valkey writes it (its listpack, fields and values
    alternating); a hashtable one field by field; one with field TTLs as
    Valkey 9 does, RDB_TYPE_HASH_2: each field and value followed by its
    expiry in ms as 8 little-endian bytes, -1 for none."""
    if v.ttl is not None:
        ttl = v.ttl
        parts = [encode_len(len(v))]
        for f, x in v.items():
            parts.append(encode_string(f))
            parts.append(encode_string(bytes(x)))
            parts.append(struct.pack("<q", ttl.get(f, -1)))
        return T_HASH_2, b"".join(parts)
    if not v.big:
        body = b"".join(enc_str(f) + enc_str(bytes(x)) for f, x in v.items())
        return T_HASH_LISTPACK, encode_string(blob(body, 2 * len(v)))
    parts = [encode_len(len(v))]
    for f, x in v.items():
        parts.append(encode_string(f))
        parts.append(encode_string(x))
    return T_HASH, b"".join(parts)


def _make(fields: Iterable[tuple[bytes, bytes]], big: bool) -> Hash | None:
    h = Hash()
    h.big = big
    for f, v in fields:
        h[f] = v
    return h if h else None  # Valkey drops an empty hash on load


def _rdb_load(r: Reader, t: int, key: bytes, server: ValueHost, has_ttl: bool) -> Hash | None:
    entries, value = server.hash_limits
    if t == T_HASH:
        n = r.plain_len()
        fields = [(r.string(), r.string()) for _ in range(n)]
        return _make(fields, n > entries or any(len(f) > value or len(v) > value for f, v in fields))
    if t == T_HASH_2:
        # Fields already past their time are dropped, as Valkey's load drops them.
        n = r.plain_len()
        fields = []
        ttls: dict[bytes, int] = {}
        now = server.clock.ms()
        for _ in range(n):
            f, v = r.string(), r.string()
            when = struct.unpack("<q", r.take(8))[0]
            if when != -1:
                if when < now:
                    continue
                ttls[f] = when
            fields.append((f, v))
        h = _make(fields, bool(ttls) or len(fields) > entries or any(len(f) > value or len(v) > value
                                                                     for f, v in fields))
        if h is not None and ttls:
            h.ttl = ttls
        return h
    if t == T_HASH_ZIPMAP:
        # Valkey converts a zipmap by its count and its longest field or value.
        hp = pairs(zipmap_entries(r.string()), "hash", key, unique="Hash zipmap with dup elements, or big length")
        return _make(hp, len(hp) > entries or any(len(f) > value or len(v) > value for f, v in hp))
    if t == T_HASH_ZIPLIST:
        hp = pairs(ziplist_entries(r.string(), "Hash ziplist"), "hash", key,
                   unique="Hash ziplist integrity check failed.")
    else:
        hp = pairs(listpack_entries(r.string()), "hash", key)
    return _make(hp, len(hp) > entries)


def _aof_rewrite(key: bytes, v: Hash) -> Iterator[list[bytes]]:
    """The fields without TTL in HSET batches, then each field with one as
    Valkey 9 writes it: HSETEX key PXAT when FIELDS 1 field value."""
    ttl = v.ttl
    items = list(v.items()) if ttl is None else [(f, x) for f, x in v.items() if f not in ttl]
    for i in range(0, len(items), ITEMS_PER_CMD):
        argv = [b"HSET", key]
        for f, val in items[i:i + ITEMS_PER_CMD]:
            argv += (f, bytes(val))
        yield argv
    if ttl is not None:
        for f, when in ttl.items():
            yield [b"HSETEX", key, b"PXAT", b"%d" % when, b"FIELDS", b"1", f, bytes(v[f])]


HASH: Final = ValueType(
    name=b"hash",
    classes=(Hash,),
    encodings=(b"listpack", b"hashtable"),
    encoding=_encoding,
    copy=_copy,
    memory=_memory,
    digest=_digest,
    rdb_save=_rdb_save,
    rdb_types=(T_HASH, T_HASH_2, T_HASH_LISTPACK, T_HASH_ZIPLIST, T_HASH_ZIPMAP),
    rdb_load=_rdb_load,
    aof_rewrite=_aof_rewrite,
    listpack_limits=("hash_limits", "hash-max-listpack-entries", "hash-max-listpack-value"),
)

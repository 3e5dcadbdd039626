"""The hash type's record (see ``valuetype.py``): a ``types.Hash``, in
Valkey's listpack or hashtable encoding (``Hash.big``)."""

from __future__ import annotations

import struct
from collections.abc import Iterable, Iterator
from itertools import islice
from typing import TYPE_CHECKING, Any

from ..protocol.rdbformat import (
    T_HASH,
    T_HASH_2,
    T_HASH_LISTPACK,
    T_HASH_ZIPLIST,
    encode_len,
    encode_string,
    listpack_entries,
    pairs,
    ziplist_entries,
)
from .hash import Hash
from .listpack import blob, enc_str
from .record import ITEMS_PER_CMD, ValueType, alloc_size, sds_size

if TYPE_CHECKING:
    from ..keyspace.db import Db
    from ..protocol.rdbformat import Reader


def _encoding(db: Db, key: bytes, v: Hash) -> bytes:
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


def _rdb_load(r: Reader, t: int, key: bytes, server: Any, has_ttl: bool) -> Hash | None:
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
    items = (listpack_entries if t == T_HASH_LISTPACK else ziplist_entries)(r.string())
    hp = pairs(items, "hash", key)
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


HASH = ValueType(
    name=b"hash",
    classes=(Hash,),
    encodings=(b"listpack", b"hashtable"),
    encoding=_encoding,
    copy=_copy,
    memory=_memory,
    digest=_digest,
    rdb_save=_rdb_save,
    rdb_types=(T_HASH, T_HASH_2, T_HASH_LISTPACK, T_HASH_ZIPLIST),
    rdb_load=_rdb_load,
    aof_rewrite=_aof_rewrite,
    listpack_limits=("hash_limits", "hash-max-listpack-entries", "hash-max-listpack-value"),
)

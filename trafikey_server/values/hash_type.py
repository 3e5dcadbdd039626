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
    RdbError,
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
    return h


def _memory(v: Hash, samples: int) -> int:
    items = list(islice(v.items(), samples))
    per = sum(alloc_size(sds_size(len(f))) + alloc_size(sds_size(len(x))) + 16 for f, x in items) / max(len(items), 1)
    return 64 + int(per * len(v))


def _digest(v: Hash) -> bytes:
    return b"h" + b"\0".join(k + b"\1" + bytes(x) for k, x in sorted(v.items()))


def _rdb_save(v: Hash) -> tuple[int, bytes]:
    """A listpack hash as Valkey writes it (its listpack, fields and values
    alternating); a hashtable one field by field."""
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
        n = r.plain_len()
        fields = []
        for _ in range(n):
            f, v = r.string(), r.string()
            ttl = struct.unpack("<q", r.take(8))[0]
            if ttl != -1:
                raise RdbError(f"key {key!r}: a hash field with a TTL ({f!r}); this server "
                               "does not keep per-field expiry")
            fields.append((f, v))
        return _make(fields, n > entries or any(len(f) > value or len(v) > value for f, v in fields))
    items = (listpack_entries if t == T_HASH_LISTPACK else ziplist_entries)(r.string())
    hp = pairs(items, "hash", key)
    return _make(hp, len(hp) > entries)


def _aof_rewrite(key: bytes, v: Hash) -> Iterator[list[bytes]]:
    items = list(v.items())
    for i in range(0, len(items), ITEMS_PER_CMD):
        argv = [b"HSET", key]
        for f, val in items[i:i + ITEMS_PER_CMD]:
            argv += (f, bytes(val))
        yield argv


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

"""The sorted set type's record (see ``valuetype.py``): a ``zset.ZSet``, in
Valkey's listpack or skiplist encoding (``ZSet.big``)."""

from __future__ import annotations

import math
from collections.abc import Iterator
from itertools import islice
from typing import TYPE_CHECKING, Any

from ..protocol.rdbformat import (
    LISTPACK_SAFE,
    PACK_DOUBLE,
    T_ZSET,
    T_ZSET_2,
    T_ZSET_LISTPACK,
    T_ZSET_ZIPLIST,
    UNPACK_DOUBLE,
    RdbError,
    encode_len,
    encode_string,
    listpack_entries,
    pairs,
    parse_score,
    ziplist_entries,
)
from ..util.floats import format_double
from .listpack import blob, enc_str
from .record import ITEMS_PER_CMD, ValueType, alloc_size, sds_size
from .zset import Index, ZSet

if TYPE_CHECKING:
    from ..keyspace.db import Db
    from ..protocol.rdbformat import Reader


def _encoding(db: Db, key: bytes, v: ZSet) -> bytes:
    return b"skiplist" if v.big else b"listpack"


def _copy(v: ZSet) -> ZSet:
    # Scores and members are immutable: the copy shares them, and the index
    # is built from pairs already in order (one linear pass, no re-sorting).
    out = ZSet()
    out.scores = dict(v.scores)
    out.index = Index(v.index)
    out.big = v.big
    return out


def _memory(v: ZSet, samples: int) -> int:
    members = list(islice(v.scores, samples))
    per = sum(alloc_size(sds_size(len(m))) + 8 + 48 for m in members) / max(len(members), 1)
    return 128 + int(per * len(v))


def _digest(v: ZSet) -> bytes:
    return b"z" + b"\0".join(m + b"\1" + repr(s).encode() for m, s in sorted(v.scores.items()))


def _rdb_save(v: ZSet) -> tuple[int, bytes]:
    """A listpack sorted set as Valkey writes it (members and scores, lowest
    first, a score as its shortest text); a skiplist member by member."""
    if not v.big:
        body = b"".join(enc_str(m) + enc_str(format_double(s)) for s, m in v.index)
        return T_ZSET_LISTPACK, encode_string(blob(body, 2 * len(v)))
    parts = [encode_len(len(v))]
    # Highest first, as Valkey writes a skiplist: a loader inserting at
    # the head then builds the list in order.
    for score, member in reversed(v.index):
        parts.append(encode_string(member))
        parts.append(PACK_DOUBLE(score))
    return T_ZSET_2, b"".join(parts)


def _make(members: list[tuple[bytes, float]], big: bool) -> ZSet | None:
    z = ZSet()
    z.big = big
    for m, s in members:
        z.add(m, s)
    return z if z else None  # Valkey drops an empty sorted set on load


def _rdb_load(r: Reader, t: int, key: bytes, server: Any, has_ttl: bool) -> ZSet | None:
    entries, value = server.zset_limits
    if t in (T_ZSET_2, T_ZSET):
        n = r.plain_len()
        members = []
        maxlen = total = 0
        for _ in range(n):
            m = r.string()
            if t == T_ZSET_2:
                s = UNPACK_DOUBLE(r.take(8))[0]
                if math.isnan(s):
                    raise RdbError(f"key {key!r}: a sorted set score is NaN")
            else:
                k = r.byte()
                s = (math.nan if k == 253 else math.inf if k == 254 else -math.inf if k == 255
                     else parse_score(r.take(k)))
            members.append((m, s))
            maxlen = max(maxlen, len(m))
            total += len(m)
        return _make(members, not (n <= entries and maxlen <= value and total < LISTPACK_SAFE))
    items = (listpack_entries if t == T_ZSET_LISTPACK else ziplist_entries)(r.string())
    zp = [(m, parse_score(s)) for m, s in pairs(items, "sorted set", key)]
    return _make(zp, len(zp) > entries)


def _score_text(s: float) -> bytes:
    if s.is_integer() and abs(s) < 2**53:
        return b"%d" % s
    return repr(s).encode()


def _aof_rewrite(key: bytes, v: ZSet) -> Iterator[list[bytes]]:
    items = list(v.index)
    for i in range(0, len(items), ITEMS_PER_CMD):
        argv = [b"ZADD", key]
        for s, m in items[i:i + ITEMS_PER_CMD]:
            argv += (_score_text(s), m)
        yield argv


ZSET = ValueType(
    name=b"zset",
    classes=(ZSet,),
    encodings=(b"listpack", b"skiplist"),
    encoding=_encoding,
    copy=_copy,
    memory=_memory,
    digest=_digest,
    rdb_save=_rdb_save,
    rdb_types=(T_ZSET, T_ZSET_2, T_ZSET_LISTPACK, T_ZSET_ZIPLIST),
    rdb_load=_rdb_load,
    aof_rewrite=_aof_rewrite,
    listpack_limits=("zset_limits", "zset-max-listpack-entries", "zset-max-listpack-value"),
)

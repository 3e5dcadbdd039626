"""The stream type's record (see ``record.py``): a ``stream.Stream``, in
Valkey's one encoding, ``stream``.

The RDB form is Valkey's RDB_TYPE_STREAM_LISTPACKS_3 (rdb.c rdbSaveObject):
the nodes as their listpacks, byte for byte (each keyed by its primary ID
in 16 big-endian bytes), the length, the last, first and greatest deleted
IDs, the entries-added counter, then each group with its last ID, its
entries-read counter, its PEL with delivery times and counts, and its
consumers with seen and active times and the IDs they hold. The two older
forms load as Valkey loads them: without first/deleted IDs and counters
(LISTPACKS: derived as rdbLoadObject derives them) and without active times
(LISTPACKS_2: the seen time).
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from ..protocol.rdbformat import RdbError, encode_len, encode_string
from ..util.parsing import int64
from .record import ValueType, alloc_size
from .stream import (
    MAX_ID,
    Consumer,
    Group,
    Nack,
    Stream,
    fmt_id,
    node_from_listpack,
)

if TYPE_CHECKING:
    from ..keyspace.db import Db
    from ..protocol.rdbformat import Reader

T_STREAM_LISTPACKS, T_STREAM_LISTPACKS_2, T_STREAM_LISTPACKS_3 = 15, 19, 21
_U64 = (1 << 64) - 1
_MS = struct.Struct("<q")


def _encoding(db: Db, key: bytes, v: Stream) -> bytes:
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


def _rdb_load(r: Reader, t: int, key: bytes, server: Any, has_ttl: bool) -> Stream:
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
            raise RdbError(f"key {key!r}: duplicated consumer group name {name!r}")
        g = Group(last, entries_read)
        s.groups[name] = g
        for _ in range(r.plain_len()):
            sid = int.from_bytes(r.take(16), "big")
            when = _MS.unpack(r.take(8))[0]
            count = int64(r.plain_len())
            if sid in g.pel:
                raise RdbError(f"key {key!r}: duplicated global PEL entry loading stream consumer group")
            g.pel[sid] = Nack(when, count, None)  # type: ignore[arg-type]
        for _ in range(r.plain_len()):
            cname = r.string()
            if cname in g.consumers:
                raise RdbError(f"key {key!r}: duplicate stream consumer detected")
            c = Consumer(cname, _MS.unpack(r.take(8))[0])
            c.active_time = _MS.unpack(r.take(8))[0] if t >= T_STREAM_LISTPACKS_3 else c.seen_time
            g.consumers[cname] = c
            for _ in range(r.plain_len()):
                sid = int.from_bytes(r.take(16), "big")
                nack = g.pel.get(sid)
                if nack is None:
                    raise RdbError(f"key {key!r}: consumer entry not found in group global PEL")
                if sid in c.pel:
                    raise RdbError(f"key {key!r}: duplicated consumer PEL entry loading a stream consumer group")
                nack.consumer = c
                c.pel[sid] = nack
        if any(n.consumer is None for n in g.pel.values()):
            raise RdbError(f"key {key!r}: stream CG PEL entry without consumer")
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


STREAM = ValueType(
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

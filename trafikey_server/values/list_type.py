"""The list type: ``List``, a deque (O(1) at both ends), and its record (see
``record.py``), in Valkey's listpack or quicklist encoding (``List.big``).

Valkey keeps a small list as one listpack and converts it to a quicklist
when a write would pass ``list-max-listpack-size`` (a count when positive,
a byte limit of 4k..64k when negative), and back when a removal leaves it
at half the limit (t_list.c listTypeTryConversion). The listpack's size is
computed from the elements while the list is small, the only time it is
consulted, so no running total is kept on the hot path.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any

from ..protocol.rdbformat import (
    T_LIST,
    T_LIST_QUICKLIST,
    T_LIST_QUICKLIST_2,
    T_LIST_ZIPLIST,
    RdbError,
    encode_len,
    encode_string,
    listpack_entries,
    ziplist_entries,
)
from ..util.parsing import to_int
from .record import ITEMS_PER_CMD, ValueType, alloc_size

if TYPE_CHECKING:
    from ..keyspace.db import Db
    from ..protocol.rdbformat import Reader

_SIZE_LEVELS = (4096, 8192, 16384, 32768, 65536)
_SAFETY = 8192  # SIZE_SAFETY_LIMIT: a count-limited node's byte bound
_UINT_MAX = (1 << 32) - 1
_NO_SIZE = 1 << 64


class List(deque):  # type: ignore[type-arg]
    """A list: bytes elements, head at index 0. ``big`` is True in the
    quicklist encoding."""

    __slots__ = ("big",)

    def __init__(self, items: Iterable[bytes] = ()) -> None:
        super().__init__(items)
        self.big = False


def node_limit(fill: int) -> tuple[int, int]:
    """quicklistNodeLimit: (byte limit, count limit) of one node for fill."""
    if fill >= 0:
        return _NO_SIZE, 1 if fill == 0 else fill
    return _SIZE_LEVELS[min(-fill - 1, len(_SIZE_LEVELS) - 1)], _UINT_MAX


def exceeds(fill: int, size: int, count: int) -> bool:
    """quicklistNodeExceedsLimit."""
    sz, cnt = node_limit(fill)
    if sz != _NO_SIZE:
        return size > sz
    return size > _SAFETY or count > cnt


def entry_size(e: bytes) -> int:
    """Bytes one element takes in a listpack, back-length included."""
    n = len(e)
    v = to_int(e) if n <= 20 else None
    if v is not None:
        if 0 <= v <= 127:
            size = 1
        elif -4096 <= v <= 4095:
            size = 2
        elif -32768 <= v <= 32767:
            size = 3
        elif -(1 << 23) <= v < (1 << 23):
            size = 4
        elif -(1 << 31) <= v < (1 << 31):
            size = 5
        else:
            size = 9
    elif n < 64:
        size = 1 + n
    elif n < 4096:
        size = 2 + n
    else:
        size = 5 + n
    return size + (1 if size < 128 else 2 if size < 16384 else 3 if size < 2097152 else 4 if size < 268435456 else 5)


def lp_bytes(items: Iterable[bytes]) -> int:
    return 7 + sum(entry_size(e) for e in items)


def grow(lst: List, fill: int, added: Iterable[bytes], count: int) -> None:
    """listTypeTryConversionAppend: a listpack that the new elements (their
    raw lengths, as Valkey adds them up) would push past the limit becomes
    a quicklist, before they are added."""
    if not lst.big and exceeds(fill, lp_bytes(lst) + sum(len(e) for e in added), len(lst) + count):
        lst.big = True


def shrink(lst: List, fill: int) -> None:
    """listTypeTryConversion(SHRINKING): a quicklist that now fits in half
    of one node goes back to a listpack."""
    if lst.big:
        _to_listpack(lst, fill, 2)


def _to_listpack(lst: List, fill: int, div: int) -> None:
    sz, cnt = node_limit(fill)
    if sz != _NO_SIZE:
        large = sz
        sz //= div
    else:
        large = _SAFETY
        sz = _SAFETY if div == 1 else (1 << 64) // div
    cnt //= div
    n = len(lst)
    if n > cnt or 7 + 2 * n > sz:
        return
    total = 7
    for e in lst:
        if len(e) > large:  # a plain node of its own: never one packed node
            return
        total += entry_size(e)
        if total > sz:
            return
    # A count-limited quicklist is one node only while within the safety bound.
    if fill >= 0 and total > _SAFETY:
        return
    lst.big = False


def loaded(items: list[bytes], fill: int) -> List | None:
    """A list as Valkey holds it after loading: quicklist, converted to a
    listpack when it fits one node (LIST_CONV_AUTO)."""
    if not items:
        return None
    lst = List(items)
    lst.big = True
    _to_listpack(lst, fill, 1)
    return lst


def _encoding(db: Db, key: bytes, v: List) -> bytes:
    return b"quicklist" if v.big else b"listpack"


def _copy(v: List) -> List:
    out = List(v)
    out.big = v.big
    return out


def _memory(v: List, samples: int) -> int:
    if not v.big:
        return alloc_size(lp_bytes(v))
    sample = list(v)[:samples] if samples else list(v)
    per = sum(entry_size(e) for e in sample) / max(len(sample), 1)
    return 48 + int(per * len(v)) + 32 * (1 + len(v) // 128)


def _digest(v: List) -> bytes:
    return b"l" + b"".join(b"%d:" % len(e) + e for e in v)


def _rdb_save(v: List) -> tuple[int, bytes]:
    return T_LIST, encode_len(len(v)) + b"".join(encode_string(e) for e in v)


def _rdb_load(r: Reader, t: int, key: bytes, server: Any, has_ttl: bool) -> List | None:
    fill = server.list_limits[0]
    if t == T_LIST:
        n = r.plain_len()
        return loaded([r.string() for _ in range(n)], fill)
    if t == T_LIST_ZIPLIST:
        return loaded(ziplist_entries(r.string()), fill)
    nodes = r.plain_len()
    items: list[bytes] = []
    for _ in range(nodes):
        if t == T_LIST_QUICKLIST_2:
            container = r.plain_len()
            blob = r.string()
            if container == 1:  # PLAIN: the element itself
                items.append(blob)
            elif container == 2:
                items += listpack_entries(blob)
            else:
                raise RdbError(f"key {key!r}: unknown quicklist node container {container}")
        else:
            items += ziplist_entries(r.string())
    return loaded(items, fill)


def _aof_rewrite(key: bytes, v: List) -> Iterator[list[bytes]]:
    items = list(v)
    for i in range(0, len(items), ITEMS_PER_CMD):
        yield [b"RPUSH", key, *items[i:i + ITEMS_PER_CMD]]


LIST = ValueType(
    name=b"list",
    classes=(List,),
    encodings=(b"listpack", b"quicklist"),
    encoding=_encoding,
    copy=_copy,
    memory=_memory,
    digest=_digest,
    rdb_save=_rdb_save,
    rdb_types=(T_LIST, T_LIST_ZIPLIST, T_LIST_QUICKLIST, T_LIST_QUICKLIST_2),
    rdb_load=_rdb_load,
    aof_rewrite=_aof_rewrite,
    listpack_limits=("list_limits", "list-max-listpack-size", "list-compress-depth"),
)

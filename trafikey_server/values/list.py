"""The list type: ``List``, a deque (O(1) at both ends), and its record (see
``record.py``), in Valkey's listpack or quicklist encoding (``List.big``).

Valkey keeps a small list as one listpack and converts it to a quicklist
when a write would pass ``list-max-listpack-size`` (a count when positive,
a byte limit of 4k..64k when negative), and back when a removal leaves it
at half the limit (t_list.c listTypeTryConversion). The listpack's byte
size is kept while the list is small (``List.size``, updated by each
write), so the growing check costs nothing per element already there.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Iterator
from itertools import islice
from typing import TYPE_CHECKING, Final

from mypy_extensions import mypyc_attr

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
from .listpack import blob, enc_str
from .record import ITEMS_PER_CMD, ValueHost, ValueType, alloc_size

if TYPE_CHECKING:
    from ..protocol.rdbformat import Reader

# Indexed by a variable: a variable-length tuple type, or each index builds
# the tuple anew when compiled (commands/list.py says why).
_SIZE_LEVELS: Final[tuple[int, ...]] = (4096, 8192, 16384, 32768, 65536)
_SAFETY: Final = 8192  # SIZE_SAFETY_LIMIT: a count-limited node's byte bound
_UINT_MAX: Final = (1 << 32) - 1
_NO_SIZE: Final = 1 << 64


@mypyc_attr(native_class=False)
class List(deque[bytes]):
    """A list: bytes elements, head at index 0. ``big`` is True in the
    quicklist encoding; ``nodes`` then follows Valkey's quicklist nodes as
    [count, listpack bytes, plain] (None once a middle write made them
    unknown), because only a quicklist of one node goes back to a listpack.
    The writes that move elements at the ends go through the methods below,
    so the nodes follow them; nothing is kept while the list is small."""

    __slots__ = ("big", "nodes", "fill", "size")

    def __init__(self, items: Iterable[bytes] = ()) -> None:
        super().__init__(items)
        self.big = False
        self.nodes: deque[list[int]] | None = None
        self.fill = -2
        # The listpack's bytes while the list is one (not kept once big).
        self.size = lp_bytes(self)

    def quicklist_nodes(self) -> list[list[int]]:
        """The quicklist's nodes, [count, listpack bytes, plain] each: those
        followed, or (once a middle write lost them) the ones pushing every
        element in turn would make."""
        if self.nodes is not None:
            return list(self.nodes)
        nodes: deque[list[int]] = deque()
        for e in self:
            _node_push(nodes, self.fill, e, False)
        return list(nodes)

    def push(self, items: list[bytes], head: bool) -> None:
        if head:
            self.extendleft(items)
        else:
            self.extend(items)
        if not self.big:
            self.size += sum(entry_size(e) for e in items)
            return
        nodes = self.nodes
        if nodes is not None:
            for e in items:
                _node_push(nodes, self.fill, e, head)

    def take(self, k: int, head: bool) -> list[bytes]:
        if k == 1:  # a plain pop: no bound method, no comprehension
            out = [self.popleft() if head else self.pop()]
        else:
            take = self.popleft if head else self.pop
            out = [take() for _ in range(k)]
        if not self.big:
            size = 0
            for e in out:  # a loop, not a generator: compiled, sum() of one would be a frame
                size += entry_size(e)
            self.size -= size
            return out
        nodes = self.nodes
        if nodes is not None:
            for e in out:
                node = nodes[0] if head else nodes[-1]
                node[0] -= 1
                node[1] -= entry_size(e)
                if not node[0]:
                    if head:
                        nodes.popleft()
                    else:
                        nodes.pop()
        return out

    def removed_at(self, positions: list[int], size: int) -> None:
        """Elements of ``size`` listpack bytes each were deleted at these
        positions (ascending, in the list before the deletion): each
        leaves its node, an emptied node goes (quicklistDelIndex)."""
        if not self.big:
            self.size -= size * len(positions)
            return
        nodes = self.nodes
        if nodes is None:
            return
        out: deque[list[int]] = deque()
        start = 0
        k = 0
        for node in nodes:
            end = start + node[0]
            while k < len(positions) and positions[k] < end:
                node[0] -= 1
                node[1] -= size
                k += 1
            if node[0]:
                out.append(node)
            start = end
        self.nodes = out

    def _node_at(self, i: int) -> list[int] | None:
        nodes = self.nodes
        if not self.big or nodes is None:
            return None
        for node in nodes:
            if i < node[0]:
                return node
            i -= node[0]
        return None

    def replaced_at(self, i: int, old: bytes, new: bytes) -> None:
        """LSET's quicklistReplaceEntry, where it stays in the node."""
        if not self.big:
            self.size += entry_size(new) - entry_size(old)
            return
        node = self._node_at(i)
        if node is None:
            return
        large = _large(self.fill, len(new))
        if not node[2] and not large:
            node[1] += entry_size(new) - entry_size(old)
        elif node[2] and large:
            node[1] = len(new)
        else:
            self.nodes = None

    def inserted_at(self, i: int, new: bytes) -> None:
        """LINSERT next to position i (before the insertion): into that
        element's node when it has room (_quicklistInsert), else the nodes
        are no longer followed."""
        if not self.big:
            self.size += entry_size(new)
            return
        node = self._node_at(i)
        if node is None:
            return
        n = len(new)
        if node[2] or _large(self.fill, n) or exceeds(self.fill, node[1] + n + _OVERHEAD, node[0] + 1):
            self.nodes = None
            return
        node[0] += 1
        node[1] += entry_size(new)



_OVERHEAD: Final = 8  # SIZE_ESTIMATE_OVERHEAD


def _large(fill: int, n: int) -> bool:
    """isLargeElement: an element that gets a plain node of its own."""
    sz, _ = node_limit(fill)
    return n > (_SAFETY if sz == _NO_SIZE else sz)


def _node_push(nodes: deque[list[int]], fill: int, e: bytes, head: bool) -> None:
    """quicklistPushHead/Tail: into the end node when it has room
    (_quicklistNodeAllowInsert), else into a new node. The limits are
    worked out here rather than through ``node_limit``, ``_large`` and
    ``exceeds``: this runs for every element pushed onto a quicklist, and
    node_limit's tuple holds a bound past 64 bits, an object when compiled.
    ``sz`` is the byte bound (SIZE_SAFETY_LIMIT for a count-limited fill),
    ``cnt`` the count bound (0: none)."""
    n = len(e)
    if fill >= 0:  # one assignment each: a tuple assignment builds its tuple when compiled
        sz = _SAFETY
        cnt = fill if fill else 1
    else:
        sz = _SIZE_LEVELS[min(-fill - 1, len(_SIZE_LEVELS) - 1)]
        cnt = 0
    if n > sz:  # isLargeElement
        node = [1, n, 1]
    else:
        end = (nodes[0] if head else nodes[-1]) if nodes else None
        if end is not None and not end[2]:
            if end[1] + n + _OVERHEAD <= sz and (cnt == 0 or end[0] < cnt):
                end[0] += 1
                end[1] += entry_size(e)
                return
        node = [1, 7 + entry_size(e), 0]
    if head:
        nodes.appendleft(node)
    else:
        nodes.append(node)


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
    if not lst.big and exceeds(fill, lst.size + sum(len(e) for e in added), len(lst) + count):
        lst.big = True
        # quicklistAppendListpack: the listpack becomes the one node.
        lst.nodes = deque([[len(lst), lst.size, 0]]) if lst else deque()
        lst.fill = fill


def shrink(lst: List, fill: int) -> None:
    """listTypeTryConversion(SHRINKING): a quicklist that now fits in half
    of one node goes back to a listpack."""
    if lst.big:
        _to_listpack(lst, fill, 2)


def _to_listpack(lst: List, fill: int, div: int) -> None:
    nodes = lst.nodes
    if nodes is not None:
        if len(nodes) != 1 or nodes[0][2]:
            return
        sz, cnt = node_limit(fill)
        if sz != _NO_SIZE:
            sz //= div
        if nodes[0][1] > sz or nodes[0][0] > cnt // div:
            return
        lst.big = False
        lst.size = nodes[0][1]
        lst.nodes = None
        return
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
    lst.size = total
    lst.nodes = None


def loaded(items: list[bytes], fill: int, nodes: deque[list[int]] | None = None) -> List | None:
    """A list as Valkey holds it after loading: a quicklist (the file's
    nodes, or pushed element by element), converted to a listpack when it
    is one node within the limit (LIST_CONV_AUTO)."""
    if not items:
        return None
    lst = List(items)
    lst.big = True
    lst.fill = fill
    if nodes is None:
        nodes = deque()
        for e in items:
            _node_push(nodes, fill, e, False)
    lst.nodes = nodes
    _to_listpack(lst, fill, 1)
    return lst


def _encoding(v: List) -> bytes:
    return b"quicklist" if v.big else b"listpack"


def _copy(v: List) -> List:
    # Built around __init__, which would measure every element again for a
    # size the copy takes as it is.
    out = List.__new__(List)
    deque.__init__(out, v)
    out.big = v.big
    out.fill = v.fill
    out.size = v.size
    out.nodes = None if v.nodes is None else deque([list(n) for n in v.nodes])
    return out


def _memory(v: List, samples: int) -> int:
    if not v.big:
        return alloc_size(v.size)
    sample = list(islice(v, samples)) if samples else list(v)
    per = sum(entry_size(e) for e in sample) / max(len(sample), 1)
    return 48 + int(per * len(v)) + 32 * (1 + len(v) // 128)


def _digest(v: List) -> bytes:
    return b"l" + b"".join(b"%d:" % len(e) + e for e in v)


def _rdb_save(v: List) -> tuple[int, bytes]:
    """Valkey's quicklist form: node by node, a listpack (container 2) or
    one large element on its own (1); a listpack list is one node. Nodes
    forgotten after a write in the middle are laid out again as pushes at
    the tail would lay them (Valkey's own layout is then not known)."""
    items = list(v)
    if not items:
        return T_LIST_QUICKLIST_2, encode_len(0)
    if not v.big:
        counts = [(len(items), 0)]
    else:
        nodes = v.nodes
        if nodes is None:
            nodes = deque()
            for e in items:
                _node_push(nodes, v.fill, e, False)
        counts = [(node[0], node[2]) for node in nodes]
    parts = [encode_len(len(counts))]
    i = 0
    for count, plain in counts:
        part = items[i:i + count]
        i += count
        if plain:
            parts.append(b"\x01" + encode_string(part[0]))
        else:
            parts.append(b"\x02" + encode_string(blob(b"".join(enc_str(e) for e in part), count)))
    return T_LIST_QUICKLIST_2, b"".join(parts)


def _rdb_load(r: Reader, t: int, key: bytes, server: ValueHost, has_ttl: bool) -> List | None:
    fill = server.list_limits[0]
    if t == T_LIST:
        n = r.plain_len()
        return loaded([r.string() for _ in range(n)], fill)
    if t == T_LIST_ZIPLIST:
        # Valkey's loader leaves this form a quicklist, whatever its size.
        entries = ziplist_entries(r.string(), "List ziplist")
        if not entries:
            return None
        lst = List(entries)
        lst.big = True
        lst.fill = fill
        lst.nodes = deque()
        for e in entries:
            _node_push(lst.nodes, fill, e, False)
        return lst
    count = r.plain_len()
    items: list[bytes] = []
    nodes: deque[list[int]] = deque()
    for _ in range(count):
        if t == T_LIST_QUICKLIST_2:
            container = r.plain_len()
            if container not in (1, 2):
                raise RdbError(f"Quicklist integrity check failed. (key {key!r}: node container {container})")
            blob = r.string()
            if not blob:  # refused by Valkey's loader, whatever the container
                raise RdbError(f"Quicklist integrity check failed. (key {key!r}: an empty node)")
            if container == 1:  # PLAIN: the element itself
                items.append(blob)
                nodes.append([1, len(blob), 1])
                continue
            part = listpack_entries(blob)
        else:
            part = ziplist_entries(r.string())
        if part:  # Valkey skips an empty node
            items += part
            nodes.append([len(part), lp_bytes(part), 0])
    return loaded(items, fill, nodes)


def _aof_rewrite(key: bytes, v: List) -> Iterator[list[bytes]]:
    items = list(v)
    for i in range(0, len(items), ITEMS_PER_CMD):
        yield [b"RPUSH", key, *items[i:i + ITEMS_PER_CMD]]


LIST: Final = ValueType(
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

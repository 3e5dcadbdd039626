"""The sorted set: a dict member -> score beside an ordered index.

The index is a ``SortedList`` of ``(score, member)`` pairs, which orders
exactly as Valkey does (by score, then by member bytes), so ZADD, ZREM, the
pops, ranks and range reads cost O(log n) and nothing copies the set. When the
compiled kernel values/cindex.pyx is built, its ``ScoreIndex`` takes the
place of SortedList (``Index``, chosen once at import): the same methods and
answers, with each comparison done on C doubles and memcmp.

Ranges are resolved to *spans*: half-open index intervals ``[lo, hi)`` of the
index, found by bisection. Everything Valkey's range commands do (counting,
reading with LIMIT, deleting) is then arithmetic on the span plus one
``islice``.

``big`` mirrors Valkey's one-way listpack -> skiplist switch. It is more than
a label for OBJECT ENCODING: the two encodings answer a few requests
differently and we reproduce both. A listpack stores an integral score as an
integer, so a ``-0`` score reads back as ``0`` there but stays ``-0`` in a
skiplist; and a negative LIMIT offset yields nothing on a listpack but counts
back from the end of the range on a skiplist.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Iterator
from itertools import islice
from math import inf, nextafter
from typing import TYPE_CHECKING, Final, Protocol, cast

from sortedcontainers import SortedList

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
from ..util import native
from ..util.floats import format_double
from .listpack import blob, enc_str
from .record import ITEMS_PER_CMD, ValueHost, ValueType, alloc_size, sds_size

if TYPE_CHECKING:
    from ..protocol.rdbformat import Reader


Entry = tuple[float, bytes]  # (score, member), the order of the index


class ScoreIndex(Protocol):
    """What a sorted set asks of its ordered index: the part of
    sortedcontainers' SortedList it uses, which the compiled kernel's
    ``ScoreIndex`` (values/cindex.pyx) implements alike. A bisection key
    may be a bare ``(score,)``, which sorts before every ``(score, m)``."""

    def add(self, value: Entry, /) -> None: ...
    def remove(self, value: Entry, /) -> None: ...
    def index(self, value: Entry, /) -> int: ...
    def pop(self, index: int = -1, /) -> Entry: ...
    def clear(self) -> None: ...
    def bisect_left(self, key: Entry | tuple[float], /) -> int: ...
    def bisect_right(self, key: Entry | tuple[float], /) -> int: ...
    def islice(self, start: int | None = None, stop: int | None = None, reverse: bool = False) -> Iterator[Entry]: ...
    def __len__(self) -> int: ...
    def __getitem__(self, index: int, /) -> Entry: ...
    def __delitem__(self, index: int | slice, /) -> None: ...
    def __iter__(self) -> Iterator[Entry]: ...
    def __reversed__(self) -> Iterator[Entry]: ...


_k: Final = native.load("values.cindex")
# The ordered index class: built empty or from (score, member) pairs. The
# kernel is loaded by name (util/native.py), so its type is stated here.
class IndexClass(Protocol):
    def __call__(self, iterable: Iterable[Entry] = ..., /) -> ScoreIndex: ...


Index: Final = cast(IndexClass, SortedList if _k is None else _k.ScoreIndex)

# Lex range bound kinds: Valkey's shared.minstring ("-") and maxstring ("+"),
# or a real string given as "[x" (inclusive) or "(x" (exclusive).
LEX_MIN: Final = -1
LEX_STR: Final = 0
LEX_MAX: Final = 1

LexBound = tuple[int, bytes, bool]  # (kind, value, exclusive)


def lex_gte_min(m: bytes, b: LexBound) -> bool:
    kind, v, ex = b
    if kind:
        return kind == LEX_MIN
    return m > v if ex else m >= v


def lex_lte_max(m: bytes, b: LexBound) -> bool:
    kind, v, ex = b
    if kind:
        return kind == LEX_MAX
    return m < v if ex else m <= v


def lex_range_empty(lo: LexBound, hi: LexBound) -> bool:
    """Valkey's up-front test for a lex range that can hold nothing.

    "-" and "+" compare below/above every string and equal only to
    themselves; both count as exclusive."""
    if lo[0] or hi[0]:
        if lo[0] == hi[0]:
            return True  # "-" .. "-" or "+" .. "+"
        return lo[0] == LEX_MAX or hi[0] == LEX_MIN
    if lo[1] != hi[1]:
        return lo[1] > hi[1]
    return lo[2] or hi[2]


class ZSet:
    __slots__ = ("scores", "index", "big")

    def __init__(self) -> None:
        self.scores: dict[bytes, float] = {}
        self.index: ScoreIndex = Index()
        self.big = False

    def __len__(self) -> int:
        return len(self.scores)

    # -- single members ------------------------------------------------------

    def add(self, member: bytes, score: float) -> bool:
        """Insert or re-score; True if the member is new.

        A listpack keeps an integral score as an integer, so -0 is stored
        (and later read back) as 0 while the set is small."""
        if score == 0.0 and not self.big:
            score = 0.0
        old = self.scores.get(member)
        if old is not None:
            if old == score:
                return False
            self.index.remove((old, member))
            self.index.add((score, member))
            self.scores[member] = score
            return False
        self.scores[member] = score
        self.index.add((score, member))
        return True

    def remove(self, member: bytes) -> bool:
        old = self.scores.pop(member, None)
        if old is None:
            return False
        self.index.remove((old, member))
        return True

    def pop_min(self) -> tuple[float, bytes]:
        """The lowest (score, member), taken out: the index's own pair, not a copy."""
        pair = self.index.pop(0)
        del self.scores[pair[1]]
        return pair

    def pop_max(self) -> tuple[float, bytes]:
        pair = self.index.pop()
        del self.scores[pair[1]]
        return pair

    def rank(self, member: bytes) -> int | None:
        """0-based position in ascending order, or None if absent."""
        score = self.scores.get(member)
        if score is None:
            return None
        return self.index.index((score, member))

    # -- encoding --------------------------------------------------------------

    def grow(self, size_hint: int, len_hint: int, max_entries: int, max_value: int) -> None:
        """Valkey's zsetTypeMaybeConvert: switch to a skiplist when a write
        is about to bring more entries, or a longer member, than a listpack
        may hold. Valkey decides on the request's size, not on the result."""
        if not self.big and (size_hint > max_entries or len_hint > max_value):
            self.big = True

    # -- spans -----------------------------------------------------------------

    def score_span(self, lo: float, lo_ex: bool, hi: float, hi_ex: bool) -> tuple[int, int]:
        """Index interval of the members whose score lies in the range.

        Exclusive bounds become inclusive ones on the adjacent double, so a
        bisection on ``(score,)`` (which sorts before every ``(score, m)``)
        finds each edge."""
        index = self.index
        n = len(index)
        if lo_ex:
            start = n if lo == inf else index.bisect_left((nextafter(lo, inf),))
        else:
            start = index.bisect_left((lo,))
        if hi_ex:
            stop = index.bisect_left((hi,))
        else:
            stop = n if hi == inf else index.bisect_left((nextafter(hi, inf),))
        return start, max(start, stop)

    def lex_span(self, lo: LexBound, hi: LexBound, reverse: bool = False) -> tuple[int, int]:
        """Index interval of the members in a lex range.

        Lex ranges are meant for sets whose scores are all equal; then the
        members are in byte order and two bisections find the span. When
        scores differ, Valkey's listpack walks linearly (from the head when
        reading forward, from the tail when reading backward) and we walk the
        same way; a listpack is small by definition. A skiplist with mixed
        scores gives an answer that depends on its random levels; there we
        settle for a binary search."""
        index = self.index
        n = len(index)
        if n == 0 or lex_range_empty(lo, hi):
            return 0, 0
        if not lex_gte_min(index[-1][1], lo) or not lex_lte_max(index[0][1], hi):
            return 0, 0
        s = index[0][0]
        if s == index[-1][0]:
            return self._lex_bisect(s, lo, hi)
        if not self.big:
            return self._lex_walk(lo, hi, reverse)
        start = _partition(index, 0, n, lambda m: not lex_gte_min(m, lo))
        stop = _partition(index, start, n, lambda m: lex_lte_max(m, hi))
        return start, stop

    def _lex_bisect(self, s: float, lo: LexBound, hi: LexBound) -> tuple[int, int]:
        index = self.index
        n = len(index)
        kind, v, ex = lo
        if kind:
            start = 0 if kind == LEX_MIN else n
        else:
            start = index.bisect_right((s, v)) if ex else index.bisect_left((s, v))
        kind, v, ex = hi
        if kind:
            stop = n if kind == LEX_MAX else 0
        else:
            stop = index.bisect_left((s, v)) if ex else index.bisect_right((s, v))
        return start, max(start, stop)

    def _lex_walk(self, lo: LexBound, hi: LexBound, reverse: bool) -> tuple[int, int]:
        index = self.index
        n = len(index)
        if not reverse:
            i = 0
            while i < n and not lex_gte_min(index[i][1], lo):
                i += 1
            j = i
            while j < n and lex_lte_max(index[j][1], hi):
                j += 1
            return i, j
        j = n - 1
        while j >= 0 and not lex_lte_max(index[j][1], hi):
            j -= 1
        i = j
        while i >= 0 and lex_gte_min(index[i][1], lo):
            i -= 1
        return i + 1, j + 1

    def window(self, start: int, stop: int, reverse: bool, offset: int, count: int) -> tuple[int, int]:
        """The part of span ``[start, stop)`` a ``LIMIT offset count`` selects,
        as an index interval (read backwards when reverse).

        A negative offset is Valkey's accident, reproduced: a listpack skips
        forever and returns nothing, while a skiplist's "nth in range" lookup
        counts a negative n back from the far end of the range, then reads
        onward to the range's end in the requested direction."""
        if start >= stop or count == 0:
            return 0, 0
        if offset < 0:
            if not self.big:
                return 0, 0
            if reverse:
                # Valkey looks up element (-offset - 1) from the range's start
                # and reads backwards to that start.
                first = start - offset - 1
                if first >= stop:
                    return 0, 0
                a, b = start, first + 1
            else:
                first = stop + offset
                if first < start:
                    return 0, 0
                a, b = first, stop
        elif reverse:
            b = stop - offset
            if b <= start:
                return 0, 0
            a = start
        else:
            a = start + offset
            if a >= stop:
                return 0, 0
            b = stop
        if 0 < count < b - a:
            if reverse:
                a = b - count
            else:
                b = a + count
        return a, b

    def items(self, start: int, stop: int, reverse: bool = False) -> Iterator[tuple[float, bytes]]:
        """``(score, member)`` pairs of index interval ``[start, stop)``."""
        return self.index.islice(start, stop, reverse)

    def remove_span(self, start: int, stop: int) -> int:
        """Delete index interval ``[start, stop)``; the number removed."""
        n = stop - start
        if n <= 0:
            return 0
        index = self.index
        scores = self.scores
        if n == len(index):
            scores.clear()
            index.clear()
            return n
        for _, member in index.islice(start, stop):
            del scores[member]
        del index[start:stop]
        return n


def _partition(index: ScoreIndex, lo: int, hi: int, pred: Callable[[bytes], bool]) -> int:
    """First position in ``[lo, hi)`` whose member fails ``pred``, assuming
    pred holds on a prefix (a binary search, like a skiplist descent)."""
    while lo < hi:
        mid = (lo + hi) // 2
        if pred(index[mid][1]):
            lo = mid + 1
        else:
            hi = mid
    return lo


# -- the type's record ----------------------------------------------------------

# What the server knows of a ``ZSet`` beyond its commands, in Valkey's
# listpack or skiplist encoding (``ZSet.big``).

def _encoding(v: ZSet) -> bytes:
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


def _rdb_load(r: Reader, t: int, key: bytes, server: ValueHost, has_ttl: bool) -> ZSet | None:
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
    if t == T_ZSET_LISTPACK:
        found = pairs(listpack_entries(r.string()), "sorted set", key)
    else:
        found = pairs(ziplist_entries(r.string(), "Zset ziplist"), "sorted set", key,
                      unique="Zset ziplist integrity check failed.")
    zp = [(m, parse_score(s)) for m, s in found]
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


ZSET: Final = ValueType(
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

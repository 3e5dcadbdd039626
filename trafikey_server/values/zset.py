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

from collections.abc import Callable, Iterable, Iterator
from math import inf, nextafter
from typing import Protocol, cast

from sortedcontainers import SortedList

from ..util import native

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


_k = native.load("values.cindex")
# The ordered index class: built empty or from (score, member) pairs. The
# kernel is loaded by name (util/native.py), so its type is stated here.
class IndexClass(Protocol):
    def __call__(self, iterable: Iterable[Entry] = ..., /) -> ScoreIndex: ...


Index = cast(IndexClass, SortedList if _k is None else _k.ScoreIndex)

# Lex range bound kinds: Valkey's shared.minstring ("-") and maxstring ("+"),
# or a real string given as "[x" (inclusive) or "(x" (exclusive).
LEX_MIN = -1
LEX_STR = 0
LEX_MAX = 1

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
        score, member = self.index.pop(0)
        del self.scores[member]
        return score, member

    def pop_max(self) -> tuple[float, bytes]:
        score, member = self.index.pop()
        del self.scores[member]
        return score, member

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

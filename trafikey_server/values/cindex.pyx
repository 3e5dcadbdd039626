"""The sorted set's ordered index, compiled: ``ScoreIndex``.

It stands in for sortedcontainers' ``SortedList`` of ``(score, member)``
pairs (values/zset.py picks one at import) and answers the part of that API
the sorted set uses, with the same results. Why: re-scoring a large set spends
most of its time in SortedList's bisections, each step a Python rich
comparison of two tuples. Here a step compares two C doubles and, only on a
tie, the member bytes with memcmp (a shorter prefix first): the order of
Python's tuples of (float, bytes), which is also Valkey's order. As with the
tuples, -0.0 and 0.0 compare equal; NaN never reaches the index.

Layout, like SortedList's: a list of blocks, each a C array of scores beside a
C array of member references, kept between LOAD/2 and 2*LOAD entries (so an
insert or a delete moves a few kilobytes at most, with memmove). A Fenwick tree
over the block sizes turns positions into (block, offset) and back in
O(log blocks). Pairs are built as tuples only when read.
"""

from cpython.list cimport PyList_GET_SIZE
from cpython.ref cimport Py_XDECREF, Py_XINCREF, PyObject
from libc.stdlib cimport free, malloc, realloc
from libc.string cimport memcmp, memcpy, memmove

cdef extern from "Python.h":
    char *_bytes_str "PyBytes_AS_STRING" (PyObject *o) nogil
    Py_ssize_t _bytes_len "PyBytes_GET_SIZE" (PyObject *o) nogil

cdef Py_ssize_t LOAD = 256


cdef inline int _mcmp(PyObject *a, PyObject *b) noexcept:
    """Bytes order: memcmp on the common length, then the shorter first."""
    cdef Py_ssize_t la = _bytes_len(a)
    cdef Py_ssize_t lb = _bytes_len(b)
    cdef int r = memcmp(_bytes_str(a), _bytes_str(b), la if la < lb else lb)
    if r:
        return r
    return (la > lb) - (la < lb)


cdef inline int _cmp(double s1, PyObject *m1, double s2, PyObject *m2) noexcept:
    """(s1, m1) against (s2, m2); a NULL member is a ``(score,)`` key, which
    sorts before every pair of its score (only ever passed as m1)."""
    if s1 < s2:
        return -1
    if s1 > s2:
        return 1
    if m1 == NULL:
        return -1
    return _mcmp(m1, m2)


cdef class _Block:
    """A run of consecutive pairs: scores and members in two C arrays (the
    members' references owned here; bytes hold none, so no cycle passes
    through a block).

    ``s`` and ``m`` point ``head`` slots into their allocations: a deletion
    at the front (ZPOPMIN, a trim from the low end) moves the start instead
    of the rest of the block, and an insertion at the front takes a slot
    back; the room is given back (compacted) when the block must grow."""
    cdef double *s
    cdef PyObject **m
    cdef Py_ssize_t n
    cdef Py_ssize_t cap  # slots from s onward
    cdef Py_ssize_t head  # free slots before s

    def __cinit__(self) -> None:
        self.s = NULL
        self.m = NULL
        self.n = 0
        self.cap = 0
        self.head = 0

    def __dealloc__(self) -> None:
        cdef Py_ssize_t i
        for i in range(self.n):
            Py_XDECREF(self.m[i])
        if self.s != NULL:
            free(self.s - self.head)
            free(self.m - self.head)

    cdef void compact(self) noexcept:
        """Move the pairs back to the start of their allocations."""
        cdef Py_ssize_t h = self.head
        if h == 0:
            return
        memmove(self.s - h, self.s, self.n * sizeof(double))
        memmove(self.m - h, self.m, self.n * sizeof(PyObject *))
        self.s -= h
        self.m -= h
        self.cap += h
        self.head = 0

    cdef int resize(self, Py_ssize_t cap) except -1:
        self.compact()
        cdef double *p = <double *>realloc(self.s, cap * sizeof(double))
        if p == NULL:
            raise MemoryError()
        self.s = p
        cdef PyObject **q = <PyObject **>realloc(self.m, cap * sizeof(PyObject *))
        if q == NULL:
            raise MemoryError()
        self.m = q
        self.cap = cap
        return 0

    cdef inline int reserve(self, Py_ssize_t need) except -1:
        if need > self.cap:
            if need <= self.cap + self.head:
                self.compact()
            else:
                self.resize(need + (need >> 2) + 4)
        return 0

    cdef inline Py_ssize_t size(self) noexcept:
        return self.n

    cdef Py_ssize_t left(self, double s, PyObject *m) noexcept:
        """First offset whose pair is not below the key."""
        cdef Py_ssize_t lo = 0, hi = self.n, mid
        while lo < hi:
            mid = (lo + hi) >> 1
            if _cmp(s, m, self.s[mid], self.m[mid]) > 0:
                lo = mid + 1
            else:
                hi = mid
        return lo

    cdef Py_ssize_t right(self, double s, PyObject *m) noexcept:
        """First offset whose pair is above the key."""
        cdef Py_ssize_t lo = 0, hi = self.n, mid
        while lo < hi:
            mid = (lo + hi) >> 1
            if _cmp(s, m, self.s[mid], self.m[mid]) < 0:
                hi = mid
            else:
                lo = mid + 1
        return lo

    cdef int insert(self, Py_ssize_t i, double s, object m) except -1:
        if i == 0 and self.head > 0:
            self.s -= 1
            self.m -= 1
            self.head -= 1
            self.cap += 1
        else:
            self.reserve(self.n + 1)
            memmove(self.s + i + 1, self.s + i, (self.n - i) * sizeof(double))
            memmove(self.m + i + 1, self.m + i, (self.n - i) * sizeof(PyObject *))
        self.s[i] = s
        Py_XINCREF(<PyObject *>m)
        self.m[i] = <PyObject *>m
        self.n += 1
        return 0

    cdef int delete(self, Py_ssize_t a, Py_ssize_t b) noexcept:
        """Drop offsets [a, b)."""
        cdef Py_ssize_t i
        for i in range(a, b):
            Py_XDECREF(self.m[i])  # a bytes object's release calls back into nothing
        if a == 0:  # from the front: the start moves, nothing else does
            self.s += b
            self.m += b
            self.head += b
            self.cap -= b
        else:
            memmove(self.s + a, self.s + b, (self.n - b) * sizeof(double))
            memmove(self.m + a, self.m + b, (self.n - b) * sizeof(PyObject *))
        self.n -= b - a
        return 0

    cdef int extend(self, _Block other, Py_ssize_t a, Py_ssize_t b) except -1:
        """Append other's offsets [a, b)."""
        cdef Py_ssize_t i
        self.reserve(self.n + b - a)
        memcpy(self.s + self.n, other.s + a, (b - a) * sizeof(double))
        memcpy(self.m + self.n, other.m + a, (b - a) * sizeof(PyObject *))
        for i in range(a, b):
            Py_XINCREF(other.m[i])
        self.n += b - a
        return 0

    cdef tuple pair(self, Py_ssize_t i):
        return (self.s[i], <object>self.m[i])


cdef class ScoreIndex:
    """An ordered multiset of ``(score, member)`` pairs (float, bytes) with
    SortedList's methods as the sorted set calls them."""

    cdef list blocks
    cdef Py_ssize_t n
    cdef Py_ssize_t *fen  # 1-based Fenwick tree of block sizes
    cdef Py_ssize_t fcap

    def __cinit__(self) -> None:
        self.blocks = []
        self.n = 0
        self.fen = NULL
        self.fcap = 0

    def __init__(self, iterable=None) -> None:
        cdef Py_ssize_t i, k
        cdef _Block b
        cdef double s
        cdef object m
        self.blocks = []
        self.n = 0
        if iterable is None:
            return
        items = sorted(iterable)
        k = len(items)
        i = 0
        while i < k:
            b = _Block()
            b.reserve(min(LOAD, k - i))
            while i < k and b.n < LOAD:
                m = _split(items[i], &s)
                b.insert(b.n, s, m)
                i += 1
            self.blocks.append(b)
        self.n = k
        self._rebuild()

    def __dealloc__(self) -> None:
        free(self.fen)

    # -- the Fenwick tree ------------------------------------------------------

    cdef int _rebuild(self) except -1:
        cdef Py_ssize_t nb = PyList_GET_SIZE(self.blocks), i, j
        cdef Py_ssize_t *p
        if nb + 1 > self.fcap:
            p = <Py_ssize_t *>realloc(self.fen, (nb + 1 + (nb >> 1) + 4) * sizeof(Py_ssize_t))
            if p == NULL:
                raise MemoryError()
            self.fen = p
            self.fcap = nb + 1 + (nb >> 1) + 4
        self.fen[0] = 0
        for i in range(1, nb + 1):
            self.fen[i] = (<_Block>self.blocks[i - 1]).size()
        for i in range(1, nb + 1):
            j = i + (i & -i)
            if j <= nb:
                self.fen[j] += self.fen[i]
        return 0

    cdef inline void _bump(self, Py_ssize_t bi, Py_ssize_t delta) noexcept:
        cdef Py_ssize_t nb = PyList_GET_SIZE(self.blocks)
        cdef Py_ssize_t i = bi + 1
        while i <= nb:
            self.fen[i] += delta
            i += i & -i

    cdef Py_ssize_t _before(self, Py_ssize_t bi) noexcept:
        """Entries in the blocks before block bi."""
        cdef Py_ssize_t t = 0, i = bi
        while i > 0:
            t += self.fen[i]
            i -= i & -i
        return t

    cdef Py_ssize_t _locate(self, Py_ssize_t pos, Py_ssize_t *off) noexcept:
        """Block holding position pos (0 <= pos < n), and the offset in it."""
        cdef Py_ssize_t nb = PyList_GET_SIZE(self.blocks), k = 0, bit = 1
        if pos < (<_Block>self.blocks[0]).size():
            off[0] = pos
            return 0
        while bit * 2 <= nb:
            bit *= 2
        while bit:
            if k + bit <= nb and self.fen[k + bit] <= pos:
                k += bit
                pos -= self.fen[k]
            bit >>= 1
        off[0] = pos
        return k

    # -- finding pairs ------------------------------------------------------------

    cdef Py_ssize_t _block_left(self, double s, PyObject *m) noexcept:
        """First block whose last pair is not below the key (nb if none)."""
        cdef Py_ssize_t lo = 0, hi = PyList_GET_SIZE(self.blocks), mid, last
        cdef _Block b
        while lo < hi:
            mid = (lo + hi) >> 1
            b = <_Block>self.blocks[mid]
            last = b.size() - 1
            if _cmp(s, m, b.s[last], b.m[last]) > 0:
                lo = mid + 1
            else:
                hi = mid
        return lo

    cdef Py_ssize_t _block_right(self, double s, PyObject *m) noexcept:
        """First block whose last pair is above the key (nb if none)."""
        cdef Py_ssize_t lo = 0, hi = PyList_GET_SIZE(self.blocks), mid, last
        cdef _Block b
        while lo < hi:
            mid = (lo + hi) >> 1
            b = <_Block>self.blocks[mid]
            last = b.size() - 1
            if _cmp(s, m, b.s[last], b.m[last]) < 0:
                hi = mid
            else:
                lo = mid + 1
        return lo

    cdef Py_ssize_t _find(self, object value, Py_ssize_t *off) except -2:
        """Block and offset of the leftmost pair equal to value, or -1."""
        cdef double s
        cdef object m
        m = _split(value, &s)
        cdef Py_ssize_t bi = self._block_left(s, <PyObject *>m)
        if bi == PyList_GET_SIZE(self.blocks):
            return -1
        cdef _Block b = <_Block>self.blocks[bi]
        cdef Py_ssize_t i = b.left(s, <PyObject *>m)
        if b.s[i] != s or _mcmp(<PyObject *>m, b.m[i]) != 0:
            return -1
        off[0] = i
        return bi

    cdef Py_ssize_t _bisect(self, tuple key, bint right) except -1:
        cdef double s = key[0]
        cdef object m
        cdef PyObject *mp = NULL
        cdef Py_ssize_t bi, nb = PyList_GET_SIZE(self.blocks)
        cdef _Block b
        if len(key) == 2:
            m = key[1]
            if type(m) is not bytes:
                raise TypeError("a member must be bytes")
            mp = <PyObject *>m
        elif len(key) != 1:
            raise TypeError("a key is (score,) or (score, member)")
        bi = self._block_right(s, mp) if right else self._block_left(s, mp)
        if bi == nb:
            return self.n
        b = <_Block>self.blocks[bi]
        return self._before(bi) + (b.right(s, mp) if right else b.left(s, mp))

    # -- changing -----------------------------------------------------------------

    cdef int _fix(self, Py_ssize_t bi) except -1:
        """Keep block bi between LOAD/2 and 2*LOAD entries (merging it into a
        neighbour, or splitting it); the tree is rebuilt when blocks change."""
        cdef _Block b = <_Block>self.blocks[bi], nxt
        cdef Py_ssize_t size = b.size(), half
        if size > 2 * LOAD:
            half = size >> 1
            nxt = _Block()
            nxt.extend(b, half, size)
            b.delete(half, size)
            b.resize(half + (half >> 2) + 4)  # the split-off half's room goes back
            self.blocks.insert(bi + 1, nxt)
            self._rebuild()
        elif size == 0:
            del self.blocks[bi]
            self._rebuild()
        elif size < (LOAD >> 1) and PyList_GET_SIZE(self.blocks) > 1:
            if bi == PyList_GET_SIZE(self.blocks) - 1:
                bi -= 1
                b = <_Block>self.blocks[bi]
            nxt = <_Block>self.blocks[bi + 1]
            b.extend(nxt, 0, nxt.size())
            del self.blocks[bi + 1]
            self._rebuild()
            if b.size() > 2 * LOAD:
                self._fix(bi)
        return 0

    def add(self, value) -> None:
        cdef double s
        cdef object m
        m = _split(value, &s)
        cdef Py_ssize_t nb = PyList_GET_SIZE(self.blocks), bi, i
        cdef _Block b
        if nb == 0:
            b = _Block()
            b.insert(0, s, m)
            self.blocks.append(b)
            self.n = 1
            self._rebuild()
            return
        bi = self._block_right(s, <PyObject *>m)
        if bi == nb:
            bi = nb - 1
            b = <_Block>self.blocks[bi]
            i = b.size()
        else:
            b = <_Block>self.blocks[bi]
            i = b.right(s, <PyObject *>m)
        b.insert(i, s, m)
        self.n += 1
        self._bump(bi, 1)
        if b.size() > 2 * LOAD:
            self._fix(bi)

    cdef int _delete_at(self, Py_ssize_t bi, Py_ssize_t i) except -1:
        cdef _Block b = <_Block>self.blocks[bi]
        b.delete(i, i + 1)
        self.n -= 1
        self._bump(bi, -1)
        if b.size() < (LOAD >> 1):
            self._fix(bi)
        return 0

    def remove(self, value) -> None:
        cdef Py_ssize_t off = 0
        cdef Py_ssize_t bi = self._find(value, &off)
        if bi < 0:
            raise ValueError(f"{value!r} not in list")
        self._delete_at(bi, off)

    def index(self, value) -> int:
        cdef Py_ssize_t off = 0
        cdef Py_ssize_t bi = self._find(value, &off)
        if bi < 0:
            raise ValueError(f"{value!r} is not in list")
        return self._before(bi) + off

    cdef Py_ssize_t _pos(self, Py_ssize_t i) except -1:
        if i < 0:
            i += self.n
        if i < 0 or i >= self.n:
            raise IndexError("list index out of range")
        return i

    def pop(self, Py_ssize_t index=-1) -> tuple:
        cdef Py_ssize_t off = 0, bi
        if self.n == 0:
            raise IndexError("pop index out of range")
        bi = self._locate(self._pos(index), &off)
        out = (<_Block>self.blocks[bi]).pair(off)
        self._delete_at(bi, off)
        return out

    def clear(self) -> None:
        self.blocks = []
        self.n = 0

    def __delitem__(self, index) -> None:
        cdef Py_ssize_t start, stop, step, off = 0, bi, k
        cdef _Block b
        if not isinstance(index, slice):
            bi = self._locate(self._pos(index), &off)
            self._delete_at(bi, off)
            return
        start, stop, step = index.indices(self.n)
        if step != 1:
            keep = list(self)
            del keep[index]
            self.__init__(keep)
            return
        if stop <= start:
            return
        if start == 0 and stop == self.n:
            self.clear()
            return
        # Cut [start, stop) block by block, then drop empty blocks and mend
        # the sizes around the cut.
        bi = self._locate(start, &off)
        k = stop - start
        first = bi
        while k:
            b = <_Block>self.blocks[bi]
            step = min(k, b.size() - off)
            b.delete(off, off + step)
            k -= step
            off = 0
            bi += 1
        self.n -= stop - start
        self.blocks = [x for x in self.blocks if (<_Block>x).n]
        self._rebuild()
        if self.blocks:
            self._fix(min(first, PyList_GET_SIZE(self.blocks) - 1))
            if first > 0 and first - 1 < PyList_GET_SIZE(self.blocks):
                self._fix(first - 1)

    # -- reading ----------------------------------------------------------------

    def bisect_left(self, tuple key) -> int:
        return self._bisect(key, False)

    def bisect_right(self, tuple key) -> int:
        return self._bisect(key, True)

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, index):
        cdef Py_ssize_t off = 0, bi, start, stop, step
        if isinstance(index, slice):
            start, stop, step = index.indices(self.n)
            if step == 1:
                return self._slice(start, stop, False) if start < stop else []
            return list(self)[index]
        bi = self._locate(self._pos(index), &off)
        return (<_Block>self.blocks[bi]).pair(off)

    cdef list _slice(self, Py_ssize_t start, Py_ssize_t stop, bint reverse):
        """Pairs of positions [start, stop), 0 <= start < stop <= n."""
        cdef list out = []
        cdef Py_ssize_t off = 0, bi, k = stop - start, i, j
        cdef _Block b
        if reverse:
            bi = self._locate(stop - 1, &off)
            while k:
                b = <_Block>self.blocks[bi]
                i = off
                j = 0 if off + 1 <= k else off + 1 - k
                while i >= j:
                    out.append(b.pair(i))
                    i -= 1
                k -= off + 1 - j
                bi -= 1
                if bi >= 0:
                    off = (<_Block>self.blocks[bi]).size() - 1
            return out
        bi = self._locate(start, &off)
        while k:
            b = <_Block>self.blocks[bi]
            j = min(b.size(), off + k)
            for i in range(off, j):
                out.append(b.pair(i))
            k -= j - off
            off = 0
            bi += 1
        return out

    def islice(self, start=None, stop=None, bint reverse=False):
        """Like SortedList.islice: positions [start, stop) clipped to the
        index, read backwards when reverse, as an iterator."""
        a, b, _ = slice(start, stop).indices(self.n)
        if a >= b:
            return iter(())
        return iter(self._slice(a, b, reverse))

    def __iter__(self):
        return iter(self._slice(0, self.n, False)) if self.n else iter(())

    def __reversed__(self):
        return iter(self._slice(0, self.n, True)) if self.n else iter(())

    def __repr__(self) -> str:
        return f"ScoreIndex({list(self)!r})"

    def __reduce__(self):
        return (ScoreIndex, (list(self),))

    def __copy__(self):
        return ScoreIndex(self)

    def __deepcopy__(self, memo):
        # Scores and members are immutable: a copy shares them, as a deep
        # copy of the pairs would.
        return ScoreIndex(self)


cdef inline object _split(object value, double *s):
    """The member of a (score, member) pair, its score into s."""
    if type(value) is not tuple or len(<tuple>value) != 2:
        raise TypeError("a pair is a (score, member) tuple")
    m = (<tuple>value)[1]
    if type(m) is not bytes:
        raise TypeError("a member must be bytes")
    s[0] = (<tuple>value)[0]
    return m

# cython: cdivision=True, initializedcheck=False
"""The compiled request reader: every complete request of a read in one C
pass, with Valkey's framing checked on the way.

The pure fast path (network/connection.py) asks hiredis for the requests one
``gets()`` at a time and then scans each read again with regexes and a count
of CRs, because hiredis neither checks the framing Valkey requires nor
refuses lengths Valkey refuses. This reader does both in the one pass that
splits the requests.

It takes only what it can be certain is well framed: ``*N`` with N from 1
to INT_MAX, then N times ``$len`` with len from 0 to proto-max-bulk-len,
every number in canonical decimal (no sign, no leading zero), every header
line and every bulk ended by CRLF. At the first byte that is anything else
(an inline request, ``*0``, a lone CR, a long or odd number, a bulk without
its CRLF...) it stops: ``feed`` returns the bytes from the start of that
request, and the connection hands them to the exact parser
(protocol/parser.py), which answers as Valkey does. Nothing of that request
has been returned, so nothing of it runs, however the bytes were cut into
reads. Since every number it takes has at most 19 digits, no header line it
waits on can grow without bound.

A request cut by the end of a read is kept from its start in a buffer that
grows geometrically, with the position reached and the arguments read so
far: the next read gives it what it still lacks, parsing goes on where it
stopped, and the requests after it are parsed in the read itself. A large
request arriving in many reads costs linear time.
"""

from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize, PyBytes_GET_SIZE
from cpython.mem cimport PyMem_Free, PyMem_Realloc
from libc.string cimport memcpy, memmove

# What _parse saw at the position it returns.
cdef enum:
    INT_MAX = 2147483647  # the largest count Valkey takes
    # What an open request takes from a read at a time while its next item
    # is a header line: more than the longest line this reader takes ('$',
    # 19 digits, CRLF), and many small arguments at once.
    CHUNK = 1024
    NEED = 0   # the input ends before the request does (or right at a boundary)
    STOP = 1   # a byte this reader does not take: the exact parser decides


cdef class Reader:
    cdef char *buf            # the open request, from its first byte
    cdef Py_ssize_t size      # bytes in buf
    cdef Py_ssize_t cap       # bytes allocated
    cdef Py_ssize_t pos       # in buf: where parsing goes on (an item's start)
    cdef long long left       # bulks still to read in the open request; 0 between requests
    cdef long long bulk       # the length of the bulk being read, -1 before its header
    cdef list argv            # the open request's arguments so far
    # True between requests (nothing buffered): the connection then sends a
    # read that does not start a multibulk straight to the exact parser.
    cdef readonly bint idle

    def __cinit__(self):
        self.buf = NULL
        self.size = self.cap = self.pos = 0
        self.left = 0
        self.bulk = -1
        self.argv = None
        self.idle = True

    def __dealloc__(self):
        PyMem_Free(self.buf)

    cpdef Py_ssize_t len(self):
        """The bytes read and not yet made into arguments: the query buffer."""
        return self.size - self.pos

    def open_args(self):
        """The arguments of the open request read so far: (count, bytes)."""
        if self.argv is None or not self.size:
            return 0, 0
        return len(self.argv), sum([len(a) for a in self.argv])

    cpdef long long open_bulk(self):
        """The length of the bulk being read (its header read, its bytes
        not all in), -1 when none is."""
        return self.bulk if self.size and self.left else -1

    cdef int _reserve(self, Py_ssize_t need) except -1:
        cdef Py_ssize_t cap = self.cap if self.cap else 4096
        cdef char *p
        if need <= self.cap:
            return 0
        while cap < need:
            cap *= 2
        p = <char *>PyMem_Realloc(self.buf, cap)
        if p == NULL:
            raise MemoryError()
        self.buf = p
        self.cap = cap
        return 0

    cdef void _reset(self):
        self.size = self.pos = 0
        self.left = 0
        self.bulk = -1
        self.argv = None
        self.idle = True
        if self.cap > 65536:  # a large request is done: give its buffer back
            PyMem_Free(self.buf)
            self.buf = NULL
            self.cap = 0

    cdef int _parse(self, const unsigned char *p, Py_ssize_t n, Py_ssize_t *at, Py_ssize_t *start,
                    list out, long long max_bulk) except -1:
        """Parse p[at:n], appending each complete request to out. Returns
        NEED or STOP; ``at`` is left where the next parse goes on (the start
        of an item not complete yet), ``start`` where the open request began."""
        cdef Py_ssize_t i = at[0]
        cdef Py_ssize_t j
        cdef long long v, bulk
        cdef unsigned char c
        while True:
            if self.left == 0:
                start[0] = i
                if i >= n:
                    at[0] = i
                    return NEED
                if p[i] != 42:  # '*'
                    at[0] = i
                    return STOP
                j = i + 1
                if j >= n:
                    at[0] = i
                    return NEED
                c = p[j]
                if c < 49 or c > 57:  # the count starts with 1-9
                    at[0] = i
                    return STOP
                v = c - 48
                j += 1
                while j < n:
                    c = p[j]
                    if c < 48 or c > 57:
                        break
                    v = v * 10 + (c - 48)
                    if v > INT_MAX:
                        at[0] = i
                        return STOP
                    j += 1
                if j + 1 >= n:
                    at[0] = i
                    return NEED
                if p[j] != 13 or p[j + 1] != 10:
                    at[0] = i
                    return STOP
                i = j + 2
                self.left = v
                self.bulk = -1
                self.argv = []
            while self.left:
                bulk = self.bulk
                if bulk < 0:
                    if i >= n:
                        at[0] = i
                        return NEED
                    if p[i] != 36:  # '$'
                        at[0] = i
                        return STOP
                    j = i + 1
                    if j >= n:
                        at[0] = i
                        return NEED
                    c = p[j]
                    if c < 48 or c > 57:
                        at[0] = i
                        return STOP
                    v = c - 48
                    j += 1
                    if v:
                        while j < n:
                            c = p[j]
                            if c < 48 or c > 57:
                                break
                            if v > (max_bulk - (c - 48)) / 10:
                                at[0] = i
                                return STOP
                            v = v * 10 + (c - 48)
                            j += 1
                    if v > max_bulk:
                        at[0] = i
                        return STOP
                    if j + 1 >= n:
                        at[0] = i
                        return NEED
                    if p[j] != 13 or p[j + 1] != 10:  # also a leading zero ("$01")
                        at[0] = i
                        return STOP
                    i = j + 2
                    bulk = self.bulk = v
                if n - i - 2 < bulk:
                    at[0] = i
                    return NEED
                if p[i + bulk] != 13 or p[i + bulk + 1] != 10:
                    at[0] = i
                    return STOP
                self.argv.append(PyBytes_FromStringAndSize(<const char *>p + i, bulk))
                i += bulk + 2
                self.bulk = -1
                self.left -= 1
            out.append(self.argv)
            self.argv = None

    def feed(self, bytes data, long long max_bulk, list out):
        """Append every request the read completes to ``out``. Returns None,
        or, when the reader stopped at a byte it does not take, the bytes from
        the start of the request that holds it to the end of the read: they
        belong to the exact parser (the reader is then empty again)."""
        cdef const unsigned char *p = <const unsigned char *>PyBytes_AS_STRING(data)
        cdef Py_ssize_t n = PyBytes_GET_SIZE(data)
        cdef Py_ssize_t at = 0, start = 0, off = 0, take
        cdef int r
        if self.size:
            # A request is open: it takes from the read only what it still
            # lacks (the rest of a bulk, or a header line's worth), so the
            # requests after it are parsed where they are, never copied.
            while True:
                if self.left and self.bulk >= 0:
                    take = self.pos + self.bulk + 2 - self.size
                else:
                    take = CHUNK
                if take > n - off:
                    take = n - off
                self._reserve(self.size + take)
                memcpy(self.buf + self.size, p + off, take)
                self.size += take
                off += take
                at = self.pos
                start = 0
                r = self._parse(<const unsigned char *>self.buf, self.size, &at, &start, out, max_bulk)
                if r == STOP:
                    rest = PyBytes_FromStringAndSize(self.buf + start, self.size - start) + data[off:]
                    self._reset()
                    return rest
                if start:
                    # The open request is done, and the bytes from ``start``
                    # on came from this read: go on there, in place.
                    at = off - (self.size - at)
                    start = off - (self.size - start)
                    self.size = self.pos = 0
                    break
                self.pos = at
                if off == n:
                    return None
        r = self._parse(p, n, &at, &start, out, max_bulk)
        if r == STOP:
            self._reset()
            return data if start == 0 else data[start:]
        if start < n:  # a request left open: keep it from its start
            self._reserve(n - start)
            memcpy(self.buf, p + start, n - start)
            self.size = n - start
            self.pos = at - start
            self.idle = False
        else:
            self._reset()
        return None

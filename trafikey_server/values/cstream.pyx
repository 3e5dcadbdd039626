"""A stream entry's reply, read straight from its node's listpack.

XRANGE and XREAD spent most of each entry decoding the listpack into a list
of bytes objects (one per field and value, ints formatted back to text)
and then formatting that list into RESP. Here one pass over the listpack
writes the RESP reply into one buffer: no object per field. The pure path
stays in values/stream.py (``Node.entry`` and ``entry_reply``), and
tests/values/test_cstream.py holds the two to the same bytes over entries
of every encoding Valkey's listpack has.
"""

from cpython.bytearray cimport PyByteArray_AS_STRING, PyByteArray_GET_SIZE
from cpython.bytes cimport PyBytes_FromStringAndSize
from cpython.mem cimport PyMem_Free, PyMem_Malloc, PyMem_Realloc
from libc.stdint cimport int64_t, uint64_t
from libc.string cimport memcpy

cdef enum:
    F_SAMEFIELDS = 2  # values/stream.py


cdef struct Out:
    char *p
    Py_ssize_t n
    Py_ssize_t cap


cdef int _room(Out *o, Py_ssize_t more) except -1:
    cdef Py_ssize_t cap
    cdef char *q
    if o.n + more <= o.cap:
        return 0
    cap = o.cap * 2
    if cap < o.n + more:
        cap = o.n + more + 64
    q = <char *>PyMem_Realloc(o.p, cap)
    if q == NULL:
        raise MemoryError()
    o.p = q
    o.cap = cap
    return 0


cdef int _put(Out *o, const char *s, Py_ssize_t n) except -1:
    _room(o, n)
    memcpy(o.p + o.n, s, n)
    o.n += n
    return 0


cdef Py_ssize_t _udec(char *buf, Py_ssize_t end, uint64_t v) noexcept:
    """v in decimal in buf, ending before ``end``; the index it starts at."""
    cdef Py_ssize_t i = end
    while True:
        i -= 1
        buf[i] = <char>(48 + v % 10)
        v //= 10
        if v == 0:
            return i


cdef Py_ssize_t _id_text(char *buf, uint64_t ms, uint64_t seq) noexcept:
    """``ms-seq`` at the end of buf[0:48]; the index it starts at."""
    cdef Py_ssize_t i = _udec(buf, 48, seq) - 1
    buf[i] = 45
    return _udec(buf, i, ms)


cdef int _head(Out *o, char kind, Py_ssize_t n) except -1:
    """``*n\\r\\n`` or ``$n\\r\\n``."""
    cdef char buf[24]
    cdef Py_ssize_t i = _udec(buf, 24, <uint64_t>n)
    _room(o, 27)
    o.p[o.n] = kind
    memcpy(o.p + o.n + 1, buf + i, 24 - i)
    o.n += 25 - i
    o.p[o.n] = 13
    o.p[o.n + 1] = 10
    o.n += 2
    return 0


cdef int _bulk(Out *o, const char *s, Py_ssize_t n) except -1:
    _head(o, 36, n)
    _room(o, n + 2)
    memcpy(o.p + o.n, s, n)
    o.n += n
    o.p[o.n] = 13
    o.p[o.n + 1] = 10
    o.n += 2
    return 0


cdef int _int_bulk(Out *o, int64_t v) except -1:
    cdef char buf[24]
    cdef Py_ssize_t i
    cdef uint64_t u = <uint64_t>v
    if v < 0:
        u = (~u) + 1
    i = _udec(buf, 24, u)
    if v < 0:
        i -= 1
        buf[i] = 45
    return _bulk(o, buf + i, 24 - i)


cdef Py_ssize_t _element(const unsigned char *b, Py_ssize_t p, Py_ssize_t end, int64_t *iv,
                         Py_ssize_t *soff, Py_ssize_t *slen) except -1:
    """Decode the listpack element at p: a string (its offset and length)
    or an integer (``slen`` -1); the offset of the next element."""
    cdef unsigned char c
    cdef Py_ssize_t size, bl
    cdef uint64_t u
    cdef int k, j
    if p >= end:
        raise ValueError("listpack element past the end")
    c = b[p]
    slen[0] = -1
    if c < 0x80:
        iv[0] = c
        size = 1
    elif c < 0xC0:
        soff[0] = p + 1
        slen[0] = c & 0x3F
        size = 1 + slen[0]
    elif c < 0xE0:
        if p + 1 >= end:
            raise ValueError("listpack element past the end")
        u = ((c & 0x1F) << 8) | b[p + 1]
        iv[0] = <int64_t>u - 8192 if u >= 4096 else <int64_t>u
        size = 2
    elif c < 0xF0:
        if p + 1 >= end:
            raise ValueError("listpack element past the end")
        soff[0] = p + 2
        slen[0] = ((c & 0x0F) << 8) | b[p + 1]
        size = 2 + slen[0]
    elif c == 0xF0:
        if p + 4 >= end:
            raise ValueError("listpack element past the end")
        soff[0] = p + 5
        slen[0] = <Py_ssize_t>(b[p + 1] | (b[p + 2] << 8) | (b[p + 3] << 16) | (<uint64_t>b[p + 4] << 24))
        size = 5 + slen[0]
    else:
        if c == 0xF1:
            k = 2
        elif c == 0xF2:
            k = 3
        elif c == 0xF3:
            k = 4
        elif c == 0xF4:
            k = 8
        else:
            raise ValueError(f"bad listpack entry encoding 0x{c:02x}")
        if p + k >= end:
            raise ValueError("listpack element past the end")
        u = 0
        for j in range(k):
            u |= (<uint64_t>b[p + 1 + j]) << (8 * j)
        if k < 8 and u >> (8 * k - 1):
            u |= (~(<uint64_t>0)) << (8 * k)  # sign-extend
        iv[0] = <int64_t>u
        size = 1 + k
    if size <= 127:
        bl = 1
    elif size < 16383:
        bl = 2
    elif size < 2097151:
        bl = 3
    elif size < 268435455:
        bl = 4
    else:
        bl = 5
    if p + size + bl > end:
        raise ValueError("listpack element past the end")
    return p + size + bl


cdef int _value(Out *o, const unsigned char *b, Py_ssize_t *p, Py_ssize_t end) except -1:
    """The element at p[0] as a bulk string, moving p[0] past it."""
    cdef int64_t iv = 0
    cdef Py_ssize_t soff = 0, slen = 0
    p[0] = _element(b, p[0], end, &iv, &soff, &slen)
    if slen < 0:
        return _int_bulk(o, iv)
    return _bulk(o, <const char *>b + soff, slen)


cdef int64_t _int(const unsigned char *b, Py_ssize_t *p, Py_ssize_t end) except? -1:
    cdef int64_t iv = 0
    cdef Py_ssize_t soff = 0, slen = 0
    p[0] = _element(b, p[0], end, &iv, &soff, &slen)
    if slen >= 0:
        raise ValueError("listpack integer expected")
    return iv


def entry_reply(bytearray body, Py_ssize_t p, tuple fields, uint64_t ms, uint64_t seq):
    """``[id, [field, value, ...]]`` of the entry whose flags element is at
    p in the node's listpack ``body``; ``fields`` are the node's primary
    fields, the ID is ``ms-seq``."""
    cdef Py_ssize_t end = PyByteArray_GET_SIZE(body)
    cdef const unsigned char *b = <const unsigned char *>PyByteArray_AS_STRING(body)
    cdef Out o
    cdef char buf[48]
    cdef Py_ssize_t i, k, nf
    cdef int64_t flags
    cdef bytes f
    if end == 0:
        raise ValueError("empty listpack")
    o.n = 0
    o.cap = 128
    o.p = <char *>PyMem_Malloc(o.cap)
    if o.p == NULL:
        raise MemoryError()
    try:
        flags = _int(b, &p, end)
        _int(b, &p, end)  # the ms and seq deltas: the caller gives the ID
        _int(b, &p, end)
        i = _id_text(buf, ms, seq)
        _put(&o, b"*2\r\n", 4)
        _bulk(&o, buf + i, 48 - i)
        if flags & F_SAMEFIELDS:
            nf = len(fields)
            _head(&o, 42, 2 * nf)
            for k in range(nf):
                f = <bytes>fields[k]
                _bulk(&o, f, len(f))
                _value(&o, b, &p, end)
        else:
            nf = _int(b, &p, end)
            if nf < 0:
                raise ValueError("negative field count")
            _head(&o, 42, 2 * nf)
            for k in range(2 * nf):
                _value(&o, b, &p, end)
        return PyBytes_FromStringAndSize(o.p, o.n)
    finally:
        PyMem_Free(o.p)

"""A stream's entries written in C: their replies, read straight from the
node's listpack, and a new entry's elements appended to it.

XRANGE and XREAD spent most of each entry decoding the listpack into a list
of bytes objects (one per field and value, ints formatted back to text)
and then formatting that list into RESP. Here one pass over the listpack
writes the RESP reply into one buffer: no object per field, and one call
per node for a range (``node_entries``). XADD's entry is encoded into the
node's body in place (``append_entry``). The pure path stays in
values/stream.py (``Node.entry``, ``entry_reply``, ``append_entry``), and
tests/values/test_cstream.py holds the two to the same bytes over entries
of every encoding Valkey's listpack has.
"""

from cpython cimport array
from cpython.bytearray cimport PyByteArray_AS_STRING, PyByteArray_GET_SIZE, PyByteArray_Resize
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize, PyBytes_GET_SIZE
from cpython.mem cimport PyMem_Free, PyMem_Malloc, PyMem_Realloc
from libc.stdint cimport int64_t, uint64_t
from libc.string cimport memcpy

cdef enum:
    F_DELETED = 1  # values/stream.py
    F_SAMEFIELDS = 2


cdef struct Out:
    char *p
    Py_ssize_t n
    Py_ssize_t cap


cdef int _open(Out *o, Py_ssize_t cap) except -1:
    """An empty buffer of cap bytes (the caller frees o.p)."""
    o.n = 0
    o.cap = cap
    o.p = <char *>PyMem_Malloc(cap)
    if o.p == NULL:
        raise MemoryError()
    return 0


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


cdef int _entry(Out *o, const unsigned char *b, Py_ssize_t p, Py_ssize_t end, tuple fields, uint64_t ms,
                uint64_t seq) except -1:
    """Write ``[id, [field, value, ...]]`` of the entry whose flags element
    is at p (entry_reply's terms)."""
    cdef char buf[48]
    cdef Py_ssize_t i, k, nf
    cdef int64_t flags
    cdef bytes f
    flags = _int(b, &p, end)
    _int(b, &p, end)  # the ms and seq deltas: the caller gives the ID
    _int(b, &p, end)
    i = _id_text(buf, ms, seq)
    _put(o, b"*2\r\n", 4)
    _bulk(o, buf + i, 48 - i)
    if flags & F_SAMEFIELDS:
        nf = len(fields)
        _head(o, 42, 2 * nf)
        for k in range(nf):
            f = <bytes>fields[k]
            _bulk(o, f, len(f))
            _value(o, b, &p, end)
    else:
        nf = _int(b, &p, end)
        if nf < 0:
            raise ValueError("negative field count")
        _head(o, 42, 2 * nf)
        for k in range(2 * nf):
            _value(o, b, &p, end)
    return 0


def entry_reply(bytearray body, Py_ssize_t p, tuple fields, uint64_t ms, uint64_t seq):
    """``[id, [field, value, ...]]`` of the entry whose flags element is at
    p in the node's listpack ``body``; ``fields`` are the node's primary
    fields, the ID is ``ms-seq``."""
    cdef Py_ssize_t end = PyByteArray_GET_SIZE(body)
    cdef Out o
    if end == 0:
        raise ValueError("empty listpack")
    _open(&o, 128)
    try:
        _entry(&o, <const unsigned char *>PyByteArray_AS_STRING(body), p, end, fields, ms, seq)
        return PyBytes_FromStringAndSize(o.p, o.n)
    finally:
        PyMem_Free(o.p)


def node_entries(bytearray body, array.array offs, array.array ids, tuple fields, uint64_t kms, Py_ssize_t i,
                 bint rev, uint64_t lim_ms, uint64_t lim_seq, Py_ssize_t count):
    """XRANGE's replies of one node's live entries, from position i on
    (back towards 0 when rev), while their IDs are within the limit (at
    most ``lim_ms-lim_seq`` going forward, at least it going back) and
    until ``count`` are written (0: no bound): ``(replies, written,
    passed)``, ``passed`` when an ID beyond the limit stopped the walk. An
    entry's ID is ``kms + ids[2i]`` and ``ids[2i+1]``, as Node keeps it;
    Stream.range_replies walks the nodes."""
    cdef Py_ssize_t end = PyByteArray_GET_SIZE(body)
    cdef Py_ssize_t n = len(offs)
    cdef const unsigned char *b = <const unsigned char *>PyByteArray_AS_STRING(body)
    cdef bint wide = ids.ob_descr.typecode == b'Q'
    cdef Py_ssize_t written = 0, off
    cdef bint passed = False
    cdef uint64_t ms, seq
    cdef Out o
    if offs.ob_descr.typecode != b'I' or (not wide and ids.ob_descr.typecode != b'I') or len(ids) < 2 * n:
        raise ValueError("stream node arrays of an unknown shape")
    _open(&o, 256)
    try:
        while 0 <= i < n:
            if wide:
                ms = kms + ids.data.as_ulonglongs[2 * i]
                seq = ids.data.as_ulonglongs[2 * i + 1]
            else:
                ms = kms + ids.data.as_uints[2 * i]
                seq = ids.data.as_uints[2 * i + 1]
            if (ms > lim_ms or (ms == lim_ms and seq > lim_seq)) if not rev else (
                    ms < lim_ms or (ms == lim_ms and seq < lim_seq)):
                passed = True
                break
            off = offs.data.as_uints[i]
            if off >= end:
                raise ValueError("entry offset past the listpack")
            if not b[off] & F_DELETED:
                _entry(&o, b, off, end, fields, ms, seq)
                written += 1
                if written == count:
                    break
            i += -1 if rev else 1
        return PyBytes_FromStringAndSize(o.p, o.n), written, passed
    finally:
        PyMem_Free(o.p)


# -- appending an entry ------------------------------------------------------------------------------


cdef bint _ll(const unsigned char *p, Py_ssize_t n, int64_t *out) noexcept:
    """string2ll (util/cbits.pyx): the canonical 64-bit integer the text
    spells, as lpStringToInt64 decides whether a listpack stores a string
    as an integer."""
    cdef Py_ssize_t i = 0
    cdef uint64_t v = 0, limit = 9223372036854775807ULL
    cdef unsigned char ch
    if n == 0 or n > 20:
        return False
    if n == 1 and p[0] == 48:
        out[0] = 0
        return True
    if p[0] == 45:
        if n == 1:
            return False
        i = 1
        limit += 1
    if not (49 <= p[i] <= 57):
        return False
    while i < n:
        ch = p[i]
        if ch < 48 or ch > 57 or v > (limit - (ch - 48)) // 10:
            return False
        v = v * 10 + (ch - 48)
        i += 1
    out[0] = -<int64_t>v if p[0] == 45 else <int64_t>v
    return True


cdef inline Py_ssize_t _int_size(int64_t v) noexcept:
    if 0 <= v <= 127:
        return 2
    if -4096 <= v <= 4095:
        return 3
    if -32768 <= v <= 32767:
        return 4
    if -8388608 <= v <= 8388607:
        return 5
    if -2147483648 <= v <= 2147483647:
        return 6
    return 10


cdef Py_ssize_t _put_int(unsigned char *q, int64_t v) noexcept:
    """lpEncodeIntegerGetType's smallest encoding of v, back length
    included (listpack.py's enc_int); the bytes written."""
    cdef uint64_t u = <uint64_t>v
    cdef Py_ssize_t size = _int_size(v), k
    if size == 2:
        q[0] = <unsigned char>v
    elif size == 3:
        u &= 0x1FFF
        q[0] = <unsigned char>(0xC0 | (u >> 8))
        q[1] = <unsigned char>(u & 0xFF)
    else:
        q[0] = <unsigned char>(0xED + size) if size < 10 else 0xF4  # 0xF1..0xF3: 16, 24, 32 bits
        for k in range(1, size - 1):
            q[k] = <unsigned char>(u & 0xFF)
            u >>= 8
    q[size - 1] = <unsigned char>(size - 1)
    return size


cdef inline Py_ssize_t _backlen_size(Py_ssize_t n) noexcept:
    if n <= 127:
        return 1
    if n < 16383:
        return 2
    if n < 2097151:
        return 3
    if n < 268435455:
        return 4
    return 5


cdef Py_ssize_t _str_size(const unsigned char *s, Py_ssize_t n, int64_t *iv, bint *is_int) noexcept:
    """The bytes lpAppend writes for the string s: an integer's when it
    spells one, else a string's."""
    is_int[0] = n <= 20 and _ll(s, n, iv)
    if is_int[0]:
        return _int_size(iv[0])
    if n < 64:
        return n + 2
    if n < 4096:
        return n + 2 + _backlen_size(n + 2)
    return n + 5 + _backlen_size(n + 5)


cdef Py_ssize_t _put_str(unsigned char *q, const unsigned char *s, Py_ssize_t n) noexcept:
    """A string element (listpack.py's enc_str past its integer case)."""
    cdef Py_ssize_t h, total, b, k
    if n < 64:
        q[0] = <unsigned char>(0x80 | n)
        memcpy(q + 1, s, n)
        q[n + 1] = <unsigned char>(n + 1)
        return n + 2
    if n < 4096:
        q[0] = <unsigned char>(0xE0 | (n >> 8))
        q[1] = <unsigned char>(n & 0xFF)
        h = 2
    else:
        q[0] = 0xF0
        q[1] = <unsigned char>(n & 0xFF)
        q[2] = <unsigned char>((n >> 8) & 0xFF)
        q[3] = <unsigned char>((n >> 16) & 0xFF)
        q[4] = <unsigned char>((n >> 24) & 0xFF)
        h = 5
    memcpy(q + h, s, n)
    total = n + h
    b = _backlen_size(total)
    q += total
    # lpEncodeBacklen: the size 7 bits a byte, highest first, each byte after the first flagged.
    for k in range(b):
        q[k] = <unsigned char>(((total >> (7 * (b - 1 - k))) & 127) | (128 if k else 0))
    return total + b


def append_entry(bytearray body, array.array ids, array.array offs, uint64_t dms, uint64_t seq,
                 uint64_t kseq, list fields, bint same):
    """Stream.append's write of one entry into its node: the listpack
    elements at the end of ``body``, the ID parts in ``ids`` and the
    entry's offset in ``offs``. The elements written, or 0 when the entry
    is left to the pure code (an ID part past 32 bits, or a node whose
    arrays are not 32-bit words); nothing is changed then."""
    cdef Py_ssize_t nf = len(fields), start, first, i, total, at, nids, noffs
    cdef int64_t d = <int64_t>(seq - kseq)  # int64() of the delta, as the pure code wraps it
    cdef int64_t iv
    cdef bint is_int
    cdef object f
    cdef const unsigned char *s
    cdef unsigned char *q
    cdef Py_ssize_t n, count
    if dms > 0xFFFFFFFF or seq > 0xFFFFFFFF or ids.ob_descr.typecode != b'I' or offs.ob_descr.typecode != b'I':
        return 0
    for i in range(nf):
        if type(fields[i]) is not bytes:
            return 0
    if same:
        first, count = 1, nf // 2 + 3
        total = 2 + _int_size(<int64_t>dms) + _int_size(d) + _int_size(count)
    else:
        first, count = 0, nf + 4
        total = 2 + _int_size(<int64_t>dms) + _int_size(d) + _int_size(nf // 2) + _int_size(count)
    i = first
    while i < nf:
        f = fields[i]
        total += _str_size(<const unsigned char *>PyBytes_AS_STRING(f), PyBytes_GET_SIZE(f), &iv, &is_int)
        i += 1 if not same else 2
    start = PyByteArray_GET_SIZE(body)
    if start > 0xFFFFFFFF:
        return 0
    nids = len(ids)
    noffs = len(offs)
    array.resize_smart(ids, nids + 2)
    array.resize_smart(offs, noffs + 1)
    PyByteArray_Resize(body, start + total)
    ids.data.as_uints[nids] = <unsigned int>dms
    ids.data.as_uints[nids + 1] = <unsigned int>seq
    offs.data.as_uints[noffs] = <unsigned int>start
    q = <unsigned char *>PyByteArray_AS_STRING(body) + start
    q[0] = 2 if same else 0  # the flags: F_SAMEFIELDS or none
    q[1] = 1
    at = 2
    at += _put_int(q + at, <int64_t>dms)
    at += _put_int(q + at, d)
    if not same:
        at += _put_int(q + at, nf // 2)
    i = first
    while i < nf:
        f = fields[i]
        s = <const unsigned char *>PyBytes_AS_STRING(f)
        n = PyBytes_GET_SIZE(f)
        _str_size(s, n, &iv, &is_int)
        at += _put_int(q + at, iv) if is_int else _put_str(q + at, s, n)
        i += 1 if not same else 2
    at += _put_int(q + at, count)
    return count + 1

"""Byte-level algorithms compiled: population count, MurmurHash64A (and
PFADD with it, over dense registers and sparse opcodes; the test of an HLL
value), string2ll and string2d's plain case.

The first two are loops over bytes that Python can only run through big
integers: BITCOUNT of a 12 KB string built an integer of the whole slice to
count its bits, and each PFADD element hashed word by word in
arbitrary-precision arithmetic masked back to 64 bits. Here each is a loop
over C words. The two parses are read on every INCR and every score, and
reaching ``int`` or ``float`` through a call on the type cost more than the
parse. The pure code they stand in for stays where it was
(commands/bitmap.py's ``_popcount``, values/hyperloglog.py's ``murmur64a``,
``pat_len`` and ``_dense_set``, util/parsing.py's ``_to_int``,
util/floats.py's ``parse_double``), and tests/util/test_cbits.py holds the
two to the same answers.
"""

from cpython.bytearray cimport PyByteArray_AS_STRING, PyByteArray_GET_SIZE, PyByteArray_Resize
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_GET_SIZE
from libc.math cimport isfinite
from libc.stdint cimport uint64_t
from libc.string cimport memcpy, memmove

cdef extern from *:
    """
    #include <stdint.h>
    #include <string.h>
    #if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
    __attribute__((target("popcnt")))
    static uint64_t tk_popcnt_hw(const unsigned char *p, Py_ssize_t words) {
        uint64_t n = 0, w;
        for (Py_ssize_t i = 0; i < words; i++) {
            memcpy(&w, p + 8 * i, 8);
            n += (uint64_t)__builtin_popcountll(w);
        }
        return n;
    }
    static int tk_has_popcnt(void) {
        __builtin_cpu_init();
        return __builtin_cpu_supports("popcnt");
    }
    #else
    static uint64_t tk_popcnt_hw(const unsigned char *p, Py_ssize_t words) { (void)p; (void)words; return 0; }
    static int tk_has_popcnt(void) { return 0; }
    #endif
    """
    uint64_t tk_popcnt_hw(const unsigned char *p, Py_ssize_t words) nogil
    double PyOS_string_to_double(const char *s, char **endptr, void *overflow_exception) except? -1.0
    int tk_has_popcnt() nogil

# The machine's popcnt instruction when it has one (checked once, at import):
# four to six times the SWAR loop's speed over a long string.
cdef bint _HW = tk_has_popcnt()

cdef uint64_t _M = 0xC6A4A7935BD1E995ULL
cdef uint64_t _SEED = 0xADC83B19ULL
cdef int _P = 14
cdef int _Q = 50


cdef inline uint64_t _ones(uint64_t x) noexcept nogil:
    # SWAR: for machines without popcnt, and for the short ends of a range.
    x = x - ((x >> 1) & 0x5555555555555555ULL)
    x = (x & 0x3333333333333333ULL) + ((x >> 2) & 0x3333333333333333ULL)
    x = (x + (x >> 4)) & 0x0F0F0F0F0F0F0F0FULL
    return (x * 0x0101010101010101ULL) >> 56


cdef inline uint64_t _word(const unsigned char *p) noexcept nogil:
    # Little endian whatever the machine, as Valkey's endian-neutral hash reads.
    return (<uint64_t>p[0] | (<uint64_t>p[1] << 8) | (<uint64_t>p[2] << 16) | (<uint64_t>p[3] << 24)
            | (<uint64_t>p[4] << 32) | (<uint64_t>p[5] << 40) | (<uint64_t>p[6] << 48)
            | (<uint64_t>p[7] << 56))


cdef inline int _view(object v, const unsigned char **p, Py_ssize_t *n) except -1:
    """A bytes or bytearray's data and size, read in place."""
    if type(v) is bytes:
        p[0] = <const unsigned char *>PyBytes_AS_STRING(v)
        n[0] = PyBytes_GET_SIZE(v)
    elif type(v) is bytearray:
        p[0] = <const unsigned char *>PyByteArray_AS_STRING(v)
        n[0] = PyByteArray_GET_SIZE(v)
    else:
        raise TypeError("bytes or bytearray expected")
    return 0


def popcount(object v, Py_ssize_t lo, Py_ssize_t hi):
    """Set bits among bits lo..hi of a bytes or bytearray (inclusive, bit 0
    the high bit of byte 0). The string is read in place: a typed
    memoryview's buffer request cost more than counting 100,000 bits."""
    cdef Py_ssize_t s = lo >> 3
    cdef Py_ssize_t e = hi >> 3
    cdef Py_ssize_t i = s
    cdef uint64_t n = 0
    cdef const unsigned char *p
    cdef Py_ssize_t size
    _view(v, &p, &size)
    if lo < 0 or lo > hi or e >= size:
        raise ValueError("bit range outside the string")
    with nogil:
        if _HW and e + 1 - i >= 64:
            n += tk_popcnt_hw(p + i, (e + 1 - i) >> 3)
            i += ((e + 1 - i) >> 3) << 3
        while i + 8 <= e + 1:
            n += _ones(_word(p + i))
            i += 8
        while i <= e:
            n += _ones(p[i])
            i += 1
    n -= _ones(p[s] & (0xFF00 >> (lo & 7)) & 0xFF)  # bits before lo
    n -= _ones(p[e] & (0xFF >> ((hi & 7) + 1)))  # bits after hi
    return n


cdef uint64_t _murmur(const unsigned char *data, Py_ssize_t n) noexcept nogil:
    cdef uint64_t h = _SEED ^ (<uint64_t>n * _M)
    cdef uint64_t k
    cdef Py_ssize_t i = 0
    cdef Py_ssize_t tail = n & 7
    cdef Py_ssize_t j
    while i + 8 <= n:
        k = _word(data + i) * _M
        k ^= k >> 47
        h = (h ^ (k * _M)) * _M
        i += 8
    if tail:
        k = 0
        for j in range(tail - 1, -1, -1):
            k = (k << 8) | data[i + j]
        h = (h ^ k) * _M
    h ^= h >> 47
    h *= _M
    return h ^ (h >> 47)


def murmur64a(const unsigned char[::1] data):
    """MurmurHash64A with Valkey's HyperLogLog seed."""
    if data.shape[0] == 0:
        return _murmur(NULL, 0)
    return _murmur(&data[0], data.shape[0])


def pat_len(bytes ele):
    """hllPatLen: the register an element falls in, and the length of the
    0...01 run after the index bits (1 to Q + 1)."""
    cdef uint64_t h = _murmur(<const unsigned char *>(<char *>ele), len(ele))
    cdef uint64_t x = (h >> _P) | (1ULL << _Q)
    cdef int count = 1
    while not (x & 1):
        x >>= 1
        count += 1
    return <Py_ssize_t>(h & ((1 << _P) - 1)), count



cdef inline int _pat(const unsigned char *ele, Py_ssize_t n, Py_ssize_t *index) noexcept nogil:
    cdef uint64_t h = _murmur(ele, n)
    cdef uint64_t x = (h >> _P) | (1ULL << _Q)
    cdef int count = 1
    while not (x & 1):
        x >>= 1
        count += 1
    index[0] = <Py_ssize_t>(h & ((1 << _P) - 1))
    return count


def hll_encoding(object v):
    """isHLLObjectOrReply's test of a string value: its encoding byte (0
    dense, 1 sparse) when it holds an HLL, else -1. Compiled Python read the
    magic and the encoding of a bytes-or-bytearray through generic calls, a
    thousand instructions on every PFADD and PFCOUNT."""
    cdef const unsigned char *p
    cdef Py_ssize_t n
    if type(v) is not bytes and type(v) is not bytearray:
        return -1
    _view(v, &p, &n)
    if n < 16 or p[0] != b'H' or p[1] != b'Y' or p[2] != b'L' or p[3] != b'L':
        return -1
    if p[4] == 1:
        return 1
    if p[4] == 0 and n == 16 + (1 << _P) * 6 // 8:
        return 0
    return -1


def dense_add(bytearray v, list elements):
    """PFADD into a dense HLL (16-byte header, then 16,384 six-bit
    registers): each element hashed and its register raised, in place; the
    number of registers raised. The pure loop (values/hyperloglog.py's
    ``_dense_set`` over ``pat_len``) made a tuple and two generic byte
    reads per element."""
    cdef unsigned char *r
    cdef Py_ssize_t i, index, pos, at
    cdef int count, fb, cur
    cdef Py_ssize_t updated = 0
    cdef object e
    if PyByteArray_GET_SIZE(v) != 16 + (1 << _P) * 6 // 8:
        raise ValueError("not a dense HLL")
    for e in elements:
        if type(e) is not bytes:
            raise TypeError("bytes expected")
    r = <unsigned char *>PyByteArray_AS_STRING(v) + 16
    for i in range(len(elements)):
        e = elements[i]
        count = _pat(<const unsigned char *>PyBytes_AS_STRING(e), PyBytes_GET_SIZE(e), &index)
        pos = index * 6
        at = pos >> 3
        fb = pos & 7
        if fb <= 2:
            cur = (r[at] >> fb) & 63
        else:
            cur = ((r[at] >> fb) | (r[at + 1] << (8 - fb))) & 63
        if count > cur:
            if fb <= 2:
                r[at] = <unsigned char>((r[at] & ~(63 << fb)) | (count << fb))
            else:
                r[at] = <unsigned char>((r[at] & ((1 << fb) - 1)) | ((count << fb) & 0xFF))
                r[at + 1] = <unsigned char>((r[at + 1] & ~(63 >> (8 - fb))) | (count >> (8 - fb)))
            updated += 1
    return updated


cdef Py_ssize_t _SPARSE_MAX_VALUE = 32


cdef inline Py_ssize_t _run(unsigned char *seq, Py_ssize_t at, int op, bint zero, Py_ssize_t n) noexcept:
    """One opcode for a run of n registers left of or right of the edited
    one: a shorter VAL of the old value, or a ZERO / XZERO; the bytes written."""
    if not zero:
        seq[at] = <unsigned char>((op & 0xFC) | (n - 1))
        return 1
    if n > 64:
        seq[at] = <unsigned char>(0x40 | ((n - 1) >> 8))
        seq[at + 1] = <unsigned char>((n - 1) & 0xFF)
        return 2
    seq[at] = <unsigned char>(n - 1)
    return 1


cdef int _merge(bytearray v, unsigned char *p, Py_ssize_t prev, Py_ssize_t end) except -2:
    """Step 4 of hllSparseSet: from the opcode before the edited one, five
    steps merging adjacent VALs of one value that fit one opcode; then the
    string cut to its end and its cached count marked stale."""
    cdef Py_ssize_t q = prev if prev >= 0 else 16
    cdef int left = 5
    cdef int b, nb, n
    while q < end and left:
        left -= 1
        b = p[q]
        if not (b & 0x80):
            q += 2 if b & 0x40 else 1
            continue
        if q + 1 < end and (p[q + 1] & 0x80):
            nb = p[q + 1]
            if not ((b ^ nb) & 0x7C):
                n = (b & 3) + (nb & 3) + 2
                if n <= 4:
                    p[q + 1] = <unsigned char>((b & 0xFC) | (n - 1))
                    memmove(p + q, p + q + 1, end - q - 1)
                    end -= 1
                    continue
        q += 1
    if end != PyByteArray_GET_SIZE(v):
        PyByteArray_Resize(v, end)
        p = <unsigned char *>PyByteArray_AS_STRING(v)
    p[15] |= 0x80
    return 1


cdef int _sparse_set(bytearray v, Py_ssize_t index, int count, Py_ssize_t max_bytes) except -2:
    """hllSparseSet on a well-formed sparse value, in place: 1 raised, 0
    not, 2 when Valkey would promote instead (nothing changed)."""
    cdef unsigned char *p = <unsigned char *>PyByteArray_AS_STRING(v)
    cdef Py_ssize_t size = PyByteArray_GET_SIZE(v)
    cdef Py_ssize_t pos = 16
    cdef Py_ssize_t prev = -1
    cdef Py_ssize_t first = 0
    cdef Py_ssize_t span = 0
    cdef Py_ssize_t oplen = 1
    cdef Py_ssize_t last, seqlen, delta
    cdef int op = 0
    cdef int new
    cdef bint zero
    cdef unsigned char seq[5]
    if count > _SPARSE_MAX_VALUE:
        return 2
    while pos < size:
        op = p[pos]
        oplen = 1
        if op & 0x80:
            span = (op & 3) + 1
        elif op & 0x40:
            span = (((op & 0x3F) << 8) | p[pos + 1]) + 1
            oplen = 2
        else:
            span = (op & 0x3F) + 1
        if index <= first + span - 1:
            break
        prev = pos
        pos += oplen
        first += span
    if pos >= size:
        raise ValueError("the runs do not cover the register")
    last = first + span - 1
    new = 0x80 | ((count - 1) << 2)
    zero = not (op & 0x80)
    if not zero:
        if ((op >> 2) & 31) + 1 >= count:
            return 0
        if span == 1:
            p[pos] = <unsigned char>new
            return _merge(v, p, prev, size)
    elif oplen == 1 and span == 1:
        p[pos] = <unsigned char>new
        return _merge(v, p, prev, size)
    seqlen = 0
    if index != first:
        seqlen += _run(seq, seqlen, op, zero, index - first)
    seq[seqlen] = <unsigned char>new
    seqlen += 1
    if index != last:
        seqlen += _run(seq, seqlen, op, zero, last - index)
    delta = seqlen - oplen
    if delta > 0 and size + delta > max_bytes:
        return 2
    if delta > 0:
        PyByteArray_Resize(v, size + delta)
        p = <unsigned char *>PyByteArray_AS_STRING(v)
    if delta != 0:
        memmove(p + pos + seqlen, p + pos + oplen, size - pos - oplen)
    memcpy(p + pos, seq, seqlen)
    return _merge(v, p, prev, size + delta)


def sparse_add(bytearray v, list elements, Py_ssize_t max_bytes):
    """PFADD's edits of a sparse HLL, opcode by opcode as Valkey makes them,
    in place: (registers raised, elements taken), fewer taken than given
    when the next would promote the value to dense. None, v untouched, when
    its runs do not cover the 16,384 registers exactly (a corrupted value:
    the pure edits then follow Valkey's reading of it). The pure edits
    parsed and rewrote the whole string on every PFADD, a hundred and fifty
    microseconds each before the value turns dense."""
    cdef const unsigned char *p = <const unsigned char *>PyByteArray_AS_STRING(v)
    cdef Py_ssize_t n = PyByteArray_GET_SIZE(v)
    cdef Py_ssize_t i = 16
    cdef Py_ssize_t covered = 0
    cdef Py_ssize_t k, index
    cdef Py_ssize_t updated = 0
    cdef int r, count
    cdef object e
    if n < 16 or p[4] != 1:
        return None
    while i < n:
        if p[i] & 0x80:
            covered += (p[i] & 3) + 1
            i += 1
        elif p[i] & 0x40:
            if i + 1 >= n:
                return None
            covered += (((p[i] & 0x3F) << 8) | p[i + 1]) + 1
            i += 2
        else:
            covered += (p[i] & 0x3F) + 1
            i += 1
    if covered != 1 << _P:
        return None
    for e in elements:
        if type(e) is not bytes:
            raise TypeError("bytes expected")
    for k in range(len(elements)):
        e = elements[k]
        count = _pat(<const unsigned char *>PyBytes_AS_STRING(e), PyBytes_GET_SIZE(e), &index)
        r = _sparse_set(v, index, count, max_bytes)
        if r == 2:
            return updated, k
        updated += r
    return updated, len(elements)


def string2ll(object b):
    """Valkey's string2ll over a bytes or bytearray: the integer, or None
    where Valkey refuses it (empty, over 20 bytes, a sign but ``-``, a
    leading zero, any other byte, past signed 64 bits). Every INCR reads its
    counter through this; ``int(b)`` cost more than the rest of the parse."""
    cdef const unsigned char *p
    cdef Py_ssize_t n, i = 0
    cdef uint64_t v = 0, limit = 9223372036854775807ULL
    cdef unsigned char ch
    _view(b, &p, &n)
    if n == 0 or n > 20:
        return None
    if n == 1 and p[0] == 48:
        return 0
    if p[0] == 45:  # '-'
        i = 1
        limit += 1  # 2^63
        if n == 1:
            return None
    if not (49 <= p[i] <= 57):  # a first digit of 1 to 9: no leading zero
        return None
    while i < n:
        ch = p[i]
        if ch < 48 or ch > 57:
            return None
        if v > (limit - (ch - 48)) // 10:
            return None
        v = v * 10 + (ch - 48)
        i += 1
    if p[0] == 45:
        return -<object>v
    return v


def string2d(object b):
    """The plain case of Valkey's string2d, as util/floats.py's
    ``parse_double`` reads it: a bytes literal that parses whole to a finite
    nonzero double (correctly rounded, the parse float() itself calls). None
    for anything else (signs of space, ``inf``, ``nan``, zero, a range
    error, no number at all), which the pure code then decides."""
    cdef const char *s
    cdef char *end
    cdef Py_ssize_t n
    cdef double x
    cdef char first, last
    if type(b) is not bytes:
        return None
    n = PyBytes_GET_SIZE(b)
    if n == 0:
        return None
    s = PyBytes_AS_STRING(b)
    first = s[0]
    last = s[n - 1]
    if not (48 <= first <= 57 or first == 45 or first == 43 or first == 46):
        return None
    if not (48 <= last <= 57 or last == 46):
        return None
    try:
        x = PyOS_string_to_double(s, &end, NULL)
    except ValueError:
        return None
    if end != s + n or x == 0.0 or not isfinite(x):
        return None
    return x

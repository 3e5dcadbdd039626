"""Bit-level algorithms compiled: population count and MurmurHash64A.

Both are loops over bytes that Python can only run through big integers:
BITCOUNT of a 12 KB string built an integer of the whole slice to count its
bits, and each PFADD element hashed word by word in arbitrary-precision
arithmetic masked back to 64 bits. Here each is a loop over C words. The pure
code they stand in for stays where it was (commands/bitmap.py's
``_popcount``, values/hyperloglog.py's ``murmur64a`` and ``pat_len``), and
tests/util/test_cbits.py holds the two to the same answers.
"""

from cpython.bytearray cimport PyByteArray_AS_STRING, PyByteArray_GET_SIZE
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_GET_SIZE
from libc.stdint cimport uint64_t

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
    if type(v) is bytes:
        p = <const unsigned char *>PyBytes_AS_STRING(v)
        size = PyBytes_GET_SIZE(v)
    elif type(v) is bytearray:
        p = <const unsigned char *>PyByteArray_AS_STRING(v)
        size = PyByteArray_GET_SIZE(v)
    else:
        raise TypeError("bytes or bytearray expected")
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

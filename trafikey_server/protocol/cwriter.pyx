"""Replies of many bulk strings, written in C.

An array reply of n strings built in Python is n small bytes objects for
the headers and n concatenations before the join (LRANGE 0 99 spent most of
its time there). Here the reply's size is summed first and each part copied
once into the one bytes object returned. The pure code stays in
protocol/resp.py (``bulk_run``, ``bulks``) and commands/zset.py
(``_with_scores``), and tests/protocol/test_cwriter.py holds the two to the
same bytes.
"""

from cpython.bytearray cimport PyByteArray_AS_STRING, PyByteArray_GET_SIZE
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize, PyBytes_GET_SIZE
from cpython.float cimport PyFloat_AS_DOUBLE
from libc.stdint cimport int64_t, uint64_t
from libc.string cimport memcpy


cdef inline Py_ssize_t _digits(uint64_t v) noexcept:
    cdef Py_ssize_t n = 1
    while v >= 10:
        v //= 10
        n += 1
    return n


cdef inline char *_dec(char *p, uint64_t v) noexcept:
    """v in decimal at p; the end."""
    cdef Py_ssize_t n = _digits(v)
    cdef Py_ssize_t i = n
    while i:
        i -= 1
        p[i] = <char>(48 + v % 10)
        v //= 10
    return p + n


cdef inline char *_head(char *p, char kind, Py_ssize_t n) noexcept:
    p[0] = kind
    p = _dec(p + 1, <uint64_t>n)
    p[0] = 13
    p[1] = 10
    return p + 2


cdef inline char *_bulk(char *p, const char *s, Py_ssize_t n) noexcept:
    p = _head(p, 36, n)
    memcpy(p, s, n)
    p[n] = 13
    p[n + 1] = 10
    return p + n + 2


cdef inline bint _view(object o, const char **s, Py_ssize_t *n):
    """A bytes or bytearray's data and size; False for anything else."""
    if type(o) is bytes:
        s[0] = PyBytes_AS_STRING(o)
        n[0] = PyBytes_GET_SIZE(o)
        return True
    if type(o) is bytearray:
        s[0] = PyByteArray_AS_STRING(o)
        n[0] = PyByteArray_GET_SIZE(o)
        return True
    return False


cdef object _run(object items, bint header):
    cdef Py_ssize_t count = len(items)
    cdef Py_ssize_t total = 0
    cdef Py_ssize_t i, n
    cdef const char *s
    cdef bytes out
    cdef char *p
    if header:
        total = 3 + _digits(<uint64_t>count)
    for i in range(count):
        if not _view(items[i], &s, &n):
            return None
        total += n + 5 + _digits(<uint64_t>n)
    out = PyBytes_FromStringAndSize(NULL, total)
    p = PyBytes_AS_STRING(out)
    if header:
        p = _head(p, 42, count)
    for i in range(count):
        _view(items[i], &s, &n)
        p = _bulk(p, s, n)
    return out


def bulk_run(object items):
    """Bulk strings back to back, from a list or tuple of bytes or
    bytearrays; None when an item is anything else (the caller's pure code
    answers then)."""
    if type(items) is not list and type(items) is not tuple:
        return None
    return _run(items, False)


def bulks(object items):
    """``*n`` and the run of bulk strings (``bulk_run``'s terms)."""
    if type(items) is not list and type(items) is not tuple:
        return None
    return _run(items, True)


def pairs2(list pairs, object fmt):
    """ZRANGE ... WITHSCORES in RESP2: ``*2n`` then member and score bulks
    of each ``(score, member)``. A score that is a nonzero integer below
    2^53 is written here; any other goes through ``fmt`` (Valkey's
    d2string, util/floats.py). None when a pair is not (float, bytes)."""
    cdef Py_ssize_t count = len(pairs)
    cdef Py_ssize_t total = 3 + _digits(<uint64_t>(2 * count))
    cdef Py_ssize_t i, n, tn
    cdef const char *s
    cdef const char *ts
    cdef double d
    cdef int64_t iv
    cdef uint64_t u
    cdef list texts = [None] * count
    cdef object pair, score, text
    cdef bytes out
    cdef char *p
    for i in range(count):
        pair = pairs[i]
        if type(pair) is not tuple or len(<tuple>pair) != 2:
            return None
        score = (<tuple>pair)[0]
        if type(score) is not float or not _view((<tuple>pair)[1], &s, &n):
            return None
        d = PyFloat_AS_DOUBLE(score)
        if d != 0.0 and -9007199254740992.0 < d < 9007199254740992.0 and d == <double><int64_t>d:
            iv = <int64_t>d
            u = <uint64_t>(-iv) if iv < 0 else <uint64_t>iv
            tn = _digits(u) + (1 if iv < 0 else 0)
        else:
            text = fmt(score)
            if type(text) is not bytes:
                return None
            texts[i] = text
            tn = PyBytes_GET_SIZE(text)
        total += n + 5 + _digits(<uint64_t>n) + tn + 5 + _digits(<uint64_t>tn)
    out = PyBytes_FromStringAndSize(NULL, total)
    p = PyBytes_AS_STRING(out)
    p = _head(p, 42, 2 * count)
    for i in range(count):
        pair = pairs[i]
        _view((<tuple>pair)[1], &s, &n)
        p = _bulk(p, s, n)
        text = texts[i]
        if text is None:
            iv = <int64_t>PyFloat_AS_DOUBLE((<tuple>pair)[0])
            u = <uint64_t>(-iv) if iv < 0 else <uint64_t>iv
            tn = _digits(u) + (1 if iv < 0 else 0)
            p = _head(p, 36, tn)
            if iv < 0:
                p[0] = 45
                p += 1
            p = _dec(p, u)
            p[0] = 13
            p[1] = 10
            p += 2
        else:
            ts = PyBytes_AS_STRING(text)
            p = _bulk(p, ts, PyBytes_GET_SIZE(text))
    return out


def integer(long long n):
    """The integer reply ``:n\\r\\n`` (resp.integer past its table of small
    ones): one allocation, where ``b":%d\\r\\n" % n`` runs bytes formatting."""
    cdef char buf[24]
    cdef char *p = buf
    cdef uint64_t v
    p[0] = 58
    p += 1
    if n < 0:
        p[0] = 45
        p += 1
        v = <uint64_t>(-(n + 1)) + 1
    else:
        v = <uint64_t>n
    p = _dec(p, v)
    p[0] = 13
    p[1] = 10
    return PyBytes_FromStringAndSize(buf, p + 2 - buf)


def bulk(object o):
    """A bulk string reply of a bytes or bytearray, in one allocation (None
    for anything else: resp.bulk formats it)."""
    cdef const char *s
    cdef Py_ssize_t n
    if not _view(o, &s, &n):
        return None
    cdef bytes out = PyBytes_FromStringAndSize(NULL, _digits(<uint64_t>n) + n + 5)
    _bulk(PyBytes_AS_STRING(out), s, n)
    return out


def stream_id(uint64_t ms, uint64_t seq):
    """The bulk reply of the stream ID ``ms-seq`` (XADD's answer) in one
    allocation, where Python formats the text and then the bulk."""
    cdef char buf[64]
    cdef Py_ssize_t n = _digits(ms) + 1 + _digits(seq)
    cdef char *p = _head(buf, 36, n)
    p = _dec(p, ms)
    p[0] = 45
    p = _dec(p + 1, seq)
    p[0] = 13
    p[1] = 10
    return PyBytes_FromStringAndSize(buf, p + 2 - buf)

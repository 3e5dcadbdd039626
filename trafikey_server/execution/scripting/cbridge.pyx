"""The Lua call bridge's two conversions, compiled: a script's command
arguments into strings, and the command's encoded reply back into Lua values.

Every ``server.call`` pays for both, and in Python each is a loop of small
steps (a type test per argument; a line search, an ``int()`` and a slice per
reply element) that the job core's twin scripts repeat a dozen times a job.
Here they walk the argument tuple and the reply buffer in C; the Lua tables
are still made by lupa's ``table_from`` (and the prelude's ``array`` for
arrays holding RESP3 nulls), exactly as engine.py's pure code makes them,
and everything rare (doubles, formatting a non-integral number, an integer
too long for C) goes through the same Python calls the pure code makes.
engine.py's ``_argv``, ``decode`` and ``_parse`` are the reference: a
hypothesis test (tests/commands/scripting/test_cbridge.py) holds the two alike.
"""

from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize, PyBytes_GET_SIZE
from cpython.float cimport PyFloat_AS_DOUBLE
from cpython.list cimport PyList_New, PyList_SET_ITEM
from cpython.long cimport PyLong_AsDouble, PyLong_FromLongLong
from cpython.ref cimport Py_INCREF
from cpython.tuple cimport PyTuple_GET_ITEM, PyTuple_GET_SIZE
from libc.stdint cimport uint64_t
from libc.stdio cimport snprintf
from libc.string cimport memchr, memcpy

from ...util.floats import format_double

cdef bytes NO_ARGS = b"ERR Please specify at least one argument for this call"
cdef bytes BAD_ARG = b"ERR Command arguments must be strings or integers"
# (double)(LLONG_MAX / 2): the bound of Valkey's double2ll
cdef double LL_HALF = float((2**63 - 1) // 2)

cdef object _array = None  # the prelude's array(...), set by the engine that owns it


def set_array(fn):
    """The prelude's ``array``: a table of exactly n slots, for arrays
    holding RESP3 nulls (engine.py keeps the same function as _ARRAY)."""
    global _array
    _array = fn


cdef bytes number_arg(double d):
    """A Lua number as a command argument (engine._number_arg)."""
    cdef uint64_t bits
    cdef char buf[32]
    cdef int n
    if d != d:
        memcpy(&bits, &d, 8)
        return b"-nan" if bits >> 63 else b"nan"
    if -LL_HALF <= d <= LL_HALF and d == <double>(<long long>d):
        n = snprintf(buf, 32, b"%lld", <long long>d)
        return PyBytes_FromStringAndSize(buf, n)
    return format_double(d)


def argv(tuple args):
    """A script's command arguments as strings, or the refusal's text
    (engine._argv)."""
    cdef Py_ssize_t i, n = PyTuple_GET_SIZE(args)
    cdef object a
    cdef list out = []
    if n == 0:
        return NO_ARGS
    for i in range(n):
        a = <object>PyTuple_GET_ITEM(args, i)
        if type(a) is bytes:
            out.append(a)
        elif type(a) is int:
            out.append(number_arg(PyLong_AsDouble(a)))
        elif type(a) is float:
            out.append(number_arg(PyFloat_AS_DOUBLE(a)))
        else:
            return BAD_ARG
    return out


cdef Py_ssize_t crlf(const char *p, Py_ssize_t pos, Py_ssize_t end) except -1:
    """Where the next CRLF from pos starts (bytes.index(b"\\r\\n", pos))."""
    cdef const char *q
    while pos < end:
        q = <const char *>memchr(p + pos, 13, end - pos)
        if q == NULL:
            break
        pos = q - p
        if pos + 1 < end and p[pos + 1] == 10:
            return pos
        pos += 1
    raise ValueError("subsection not found")


cdef object int_at(bytes buf, const char *p, Py_ssize_t start, Py_ssize_t stop):
    """int(buf[start:stop]): digits in C, anything else (a sign other than
    one minus, blanks, more than 18 digits) as Python reads it."""
    cdef Py_ssize_t i = start
    cdef long long v = 0
    cdef bint neg = False
    if i < stop and p[i] == 45:
        neg = True
        i += 1
    if i == stop or stop - i > 18:
        return int(buf[start:stop])
    while i < stop:
        if p[i] < 48 or p[i] > 57:
            return int(buf[start:stop])
        v = v * 10 + (p[i] - 48)
        i += 1
    return PyLong_FromLongLong(-v if neg else v)


cdef Py_ssize_t count_at(bytes buf, const char *p, Py_ssize_t start, Py_ssize_t stop) except? -2:
    """An aggregate's or a bulk's length, as a C number (int() of the header)."""
    cdef object v = int_at(buf, p, start, stop)
    return v


cdef bytes error_text(bytes msg):
    """engine._error_text: the text of an error table."""
    cdef Py_ssize_t nul, sp
    cdef bytes code, rest
    nul = msg.find(b"\0")
    if nul >= 0:
        msg = msg[:nul]
    sp = msg.find(b" ")
    if sp < 0:
        return b"ERR " + msg
    code = msg[:sp]
    rest = msg[sp + 1:]
    return code + b" " + rest.strip(b"\r\n")


def decode(bytes reply, table_from):
    """A command's encoded reply as the Lua value a script receives:
    (0, value), (1, status text) or (2, error text) (engine.decode)."""
    cdef const char *p = PyBytes_AS_STRING(reply)
    cdef Py_ssize_t size = PyBytes_GET_SIZE(reply)
    if size == 0:  # reply[0] in the pure code
        raise IndexError("index out of range")
    cdef char t = p[0]
    cdef Py_ssize_t start
    cdef Py_ssize_t pos = 0
    if t == 36:  # $
        if size < 2:
            raise IndexError("index out of range")
        if p[1] == 45:
            return 0, False
        start = crlf(p, 0, size) + 2
        return 0, reply[start:size - 2]
    if t == 58:  # :
        return 0, int_at(reply, p, 1, size - 2)
    if t == 43:  # +
        return 1, reply[1:size - 2]
    if t == 45:  # -
        return 2, reply[1:size - 2]
    return 0, parse(reply, p, size, &pos, table_from)


cdef object parse(bytes buf, const char *p, Py_ssize_t size, Py_ssize_t *at, table_from):
    """One RESP value at at[0], converted as Valkey's redisProtocolToLuaType
    does (engine._parse); at[0] moves past it."""
    cdef Py_ssize_t pos = at[0]
    if pos >= size:  # a truncated aggregate: buf[pos] in the pure code
        raise IndexError("index out of range")
    cdef char t = p[pos]
    cdef Py_ssize_t end = crlf(p, pos, size)
    cdef Py_ssize_t nxt = end + 2
    cdef Py_ssize_t n, i, stop
    cdef bint holes
    cdef list items
    cdef dict m
    cdef object k, v
    cdef bytes body
    if t == 36:  # $
        n = count_at(buf, p, pos + 1, end)
        if n < 0:
            at[0] = nxt
            return False
        stop = nxt + n
        at[0] = stop + 2
        if stop > size:
            stop = size
        if nxt > size:
            nxt = size
        return PyBytes_FromStringAndSize(p + nxt, stop - nxt)
    if t == 58:  # :
        at[0] = nxt
        return int_at(buf, p, pos + 1, end)
    if t == 42:  # *
        n = count_at(buf, p, pos + 1, end)
        at[0] = nxt
        if n < 0:
            return False
        items = PyList_New(n)
        holes = False
        for i in range(n):
            v = parse(buf, p, size, at, table_from)
            if v is None:
                holes = True
            Py_INCREF(v)
            PyList_SET_ITEM(items, i, v)
        if holes and _array is not None and n <= 7000:
            # RESP3 nulls: an array part of exactly n slots, as lua_createtable(n, 0), so that # finds the same border
            return _array(*items)
        return table_from(items)
    if t == 43:  # +
        at[0] = nxt
        return table_from({b"ok": buf[pos + 1:end]})
    if t == 45:  # -
        at[0] = nxt
        return table_from({b"err": error_text(buf[pos + 1:end])})
    if t == 37:  # % map
        n = count_at(buf, p, pos + 1, end)
        at[0] = nxt
        m = {}
        for i in range(n):
            k = parse(buf, p, size, at, table_from)
            v = parse(buf, p, size, at, table_from)
            m[k] = v
        return table_from({b"map": table_from(m)})
    if t == 126:  # ~ set
        n = count_at(buf, p, pos + 1, end)
        at[0] = nxt
        m = {}
        for i in range(n):
            k = parse(buf, p, size, at, table_from)
            m[k] = True
        return table_from({b"set": table_from(m)})
    if t == 95:  # _ null
        at[0] = nxt
        return None
    if t == 35:  # # boolean
        at[0] = nxt
        return end - pos - 1 == 1 and p[pos + 1] == 116
    if t == 44:  # , double
        at[0] = nxt
        return table_from({b"double": float(buf[pos + 1:end])})
    if t == 40:  # ( big number
        at[0] = nxt
        return table_from({b"big_number": buf[pos + 1:end]})
    if t == 61:  # = verbatim
        n = count_at(buf, p, pos + 1, end)
        body = buf[nxt:nxt + n]
        at[0] = nxt + n + 2
        return table_from({b"verbatim_string": table_from({b"format": body[:3], b"string": body[4:]})})
    raise ValueError(f"unexpected reply type {chr(<unsigned char>t)!r}")

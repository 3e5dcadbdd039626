"""server.call and server.pcall as Lua C functions, as Valkey has them.

Through lupa, every ``server.call`` a script makes crosses a generic bridge
twice: lupa turns the Lua arguments into a Python tuple (growing it one
argument at a time, with a keyword dictionary beside it) and the Python
result back into Lua values, and the pure path then decodes the command's
encoded reply into Python values for lupa to convert again. The twin
scripts of the job core make a dozen calls a job, and the profiles in
bench/README.md put most of their cost there.

Here the two functions are C functions of the Lua state, as in Valkey:
they read the arguments off the Lua stack into the command's argv, call the
engine's ``run_argv`` (the same checks and ``dispatch.call`` the pure path
makes), and push the reply onto the Lua stack straight from its encoded
bytes, as Valkey's redisProtocolToLuaType does. The Lua C API comes from
lupa's own extension (it exports it), found with dlsym; the functions reach
the Lua state through ``package.loadlib`` on this module, which exports
``trafikey_bridge_open`` for that. engine.py's ``_argv``, ``decode`` and
``_parse`` stay the reference: tests/commands/scripting/test_cbridge.py runs
the same arguments and replies through both and compares what Lua sees.
"""

from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize, PyBytes_GET_SIZE
from cpython.ref cimport PyObject
from libc.stdint cimport uint64_t
from libc.stdio cimport snprintf
from libc.string cimport memchr, memcpy, strlen

from ...util.floats import format_double


cdef extern from "<dlfcn.h>" nogil:
    void *dlopen(const char *filename, int flags)
    void *dlsym(void *handle, const char *symbol)
    int RTLD_NOW
    int RTLD_NOLOAD


cdef extern from *:
    """
    typedef struct lua_State lua_State;
    """
    ctypedef struct lua_State:
        pass


ctypedef int (*CFunction)(lua_State *) noexcept nogil
ctypedef int (*StateInt)(lua_State *) noexcept nogil
ctypedef void (*StateIntVoid)(lua_State *, int) noexcept nogil
ctypedef int (*StateIntInt)(lua_State *, int) noexcept nogil
ctypedef const char *(*ToLString)(lua_State *, int, size_t *) noexcept nogil
ctypedef double (*ToNumber)(lua_State *, int) noexcept nogil
ctypedef void *(*ToUserdata)(lua_State *, int) noexcept nogil
ctypedef void (*StateVoid)(lua_State *) noexcept nogil
ctypedef void (*PushNumber)(lua_State *, double) noexcept nogil
ctypedef void (*PushLString)(lua_State *, const char *, size_t) noexcept nogil
ctypedef void (*PushPointer)(lua_State *, void *) noexcept nogil
ctypedef void (*PushCClosure)(lua_State *, CFunction, int) noexcept nogil
ctypedef void (*CreateTable)(lua_State *, int, int) noexcept nogil
ctypedef void (*RawSetI)(lua_State *, int, int) noexcept nogil


cdef struct LuaApi:
    StateInt gettop
    StateIntVoid settop
    StateIntInt type
    ToLString tolstring
    ToNumber tonumber
    ToUserdata touserdata
    StateVoid pushnil
    PushNumber pushnumber
    PushLString pushlstring
    StateIntVoid pushboolean
    PushPointer pushlightuserdata
    PushCClosure pushcclosure
    CreateTable createtable
    RawSetI rawseti
    StateIntVoid rawset
    StateIntInt checkstack
    StateInt error


cdef LuaApi lua
cdef bint bound = False

cdef enum:  # Lua 5.1's constants (lua.h)
    T_NIL = 0
    T_NUMBER = 3
    T_STRING = 4
    UPVALUE1 = -10003  # lua_upvalueindex(1): LUA_GLOBALSINDEX - 1

cdef bytes NO_ARGS = b"ERR Please specify at least one argument for this call"
cdef bytes BAD_ARG = b"ERR Command arguments must be strings or integers"
# (double)(LLONG_MAX / 2): the bound of Valkey's double2ll
cdef double LL_HALF = float((2**63 - 1) // 2)


cdef void *need(void *handle, const char *name) except NULL:
    cdef void *p = dlsym(handle, name)
    if p == NULL:
        raise LookupError(name.decode())
    return p


def bind(str lupa_path):
    """Find the Lua C API in lupa's extension (already loaded): True when
    every function is there, else False and the engine keeps lupa's bridge."""
    global bound
    if bound:
        return True
    cdef void *h = dlopen(lupa_path.encode(), RTLD_NOW | RTLD_NOLOAD)
    if h == NULL:
        return False
    try:
        lua.gettop = <StateInt>need(h, b"lua_gettop")
        lua.settop = <StateIntVoid>need(h, b"lua_settop")
        lua.type = <StateIntInt>need(h, b"lua_type")
        lua.tolstring = <ToLString>need(h, b"lua_tolstring")
        lua.tonumber = <ToNumber>need(h, b"lua_tonumber")
        lua.touserdata = <ToUserdata>need(h, b"lua_touserdata")
        lua.pushnil = <StateVoid>need(h, b"lua_pushnil")
        lua.pushnumber = <PushNumber>need(h, b"lua_pushnumber")
        lua.pushlstring = <PushLString>need(h, b"lua_pushlstring")
        lua.pushboolean = <StateIntVoid>need(h, b"lua_pushboolean")
        lua.pushlightuserdata = <PushPointer>need(h, b"lua_pushlightuserdata")
        lua.pushcclosure = <PushCClosure>need(h, b"lua_pushcclosure")
        lua.createtable = <CreateTable>need(h, b"lua_createtable")
        lua.rawseti = <RawSetI>need(h, b"lua_rawseti")
        lua.rawset = <StateIntVoid>need(h, b"lua_rawset")
        lua.checkstack = <StateIntInt>need(h, b"lua_checkstack")
        lua.error = <StateInt>need(h, b"lua_error")
    except LookupError:
        return False
    bound = True
    return True


# -- opening: the engine's run_argv as the upvalue of two C closures -----------------------

cdef dict _pending = {}
cdef long _next_id = 0


def register(run_argv):
    """A number for Lua to open the bridge with (``trafikey_bridge_open``).
    The caller keeps ``run_argv`` alive as long as its Lua state: the
    closures hold it as a plain pointer."""
    global _next_id
    _next_id += 1
    _pending[_next_id] = run_argv
    return _next_id


cdef void *take(double key) noexcept with gil:
    cdef object fn = _pending.pop(<long>key, None)
    if fn is None:
        return NULL
    return <void *>fn  # borrowed: the engine holds it


cdef public int trafikey_bridge_open(void *state) noexcept nogil:
    """open(number) -> call, pcall: the bridge's two C closures over the
    run_argv registered under that number (nil if there is none)."""
    cdef lua_State *L = <lua_State *>state
    cdef void *target = take(lua.tonumber(L, 1))
    if target == NULL:
        lua.pushnil(L)
        return 1
    lua.pushlightuserdata(L, target)
    lua.pushcclosure(L, server_call, 1)
    lua.pushlightuserdata(L, target)
    lua.pushcclosure(L, server_pcall, 1)
    return 2


# -- the calls -----------------------------------------------------------------------------

cdef int server_call(lua_State *L) noexcept nogil:
    cdef int n = call_with_gil(L, False)
    if n < 0:
        return lua.error(L)  # the error table is on the stack; no Python frame is left to unwind
    return n


cdef int server_pcall(lua_State *L) noexcept nogil:
    cdef int n = call_with_gil(L, True)
    if n < 0:
        return lua.error(L)
    return n


cdef int call_with_gil(lua_State *L, bint protected) noexcept with gil:
    """Run the command the arguments name: the number of values pushed, or
    -1 with the error table to raise on top of the stack."""
    cdef object run_argv = <object><PyObject *>lua.touserdata(L, UPVALUE1)
    cdef object result
    try:
        result = run_argv(lua_argv(L))
        lua.settop(L, 0)  # Valkey pops the arguments too: the reply has the stack's room
        if type(result) is bytes:
            return push_reply(L, <bytes>result, protected)
        kind, text = result
        push_error(L, error_text(text), kind == 2)
        return 1 if protected else -1
    except BaseException as e:  # a bug, reported to the script as the pure path's lupa reports it
        lua.settop(L, 0)
        push_error(L, b"ERR " + str(e).encode(), False)
        return -1


cdef object lua_argv(lua_State *L):
    """The arguments on the stack as a command's argv, or the refusal's text
    (engine._argv, given what lupa makes of each Lua value)."""
    cdef int i, t, n = lua.gettop(L)
    cdef size_t size
    cdef const char *s
    cdef list out
    if n == 0:
        return NO_ARGS
    out = [None] * n
    for i in range(n):
        t = lua.type(L, i + 1)
        if t == T_STRING:
            s = lua.tolstring(L, i + 1, &size)
            out[i] = PyBytes_FromStringAndSize(s, <Py_ssize_t>size)
        elif t == T_NUMBER:
            out[i] = number_arg(lua.tonumber(L, i + 1))
        else:
            return BAD_ARG
    return out


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


# -- replies into Lua values ---------------------------------------------------------------

cdef inline void push_bytes(lua_State *L, bytes b):
    lua.pushlstring(L, PyBytes_AS_STRING(b), <size_t>PyBytes_GET_SIZE(b))


cdef inline void set_field(lua_State *L, const char *name, bytes value):
    """t[name] = value on the table at the top, as table_from sets it (rawset)."""
    lua.pushlstring(L, name, strlen(name))
    push_bytes(L, value)
    lua.rawset(L, -3)


cdef void push_error(lua_State *L, bytes text, bint from_command):
    """The error table server.call raises: {err = text}, and the mark that
    keeps an error the command already counted out of the statistics."""
    lua.createtable(L, 0, 0)
    set_field(L, b"err", text)
    if from_command:
        lua.pushlstring(L, b"ignore_error_stats_update", 25)
        lua.pushboolean(L, 1)
        lua.rawset(L, -3)


cdef int push_reply(lua_State *L, bytes reply, bint protected) except? -2:
    """A command's encoded reply as the value server.call returns (1), or
    the error it raises (-1, on the stack): engine.decode and _api_call."""
    cdef const char *p = PyBytes_AS_STRING(reply)
    cdef Py_ssize_t size = PyBytes_GET_SIZE(reply)
    cdef Py_ssize_t pos = 0
    if size < 3:
        raise IndexError("index out of range")
    cdef char t = p[0]
    if t == 43:  # + a status: {ok = text}
        lua.createtable(L, 0, 0)
        set_field(L, b"ok", reply[1:size - 2])
        return 1
    if t == 45:  # - an error reply
        push_error(L, error_text(reply[1:size - 2]), True)
        return 1 if protected else -1
    if t == 36 and p[1] == 45:  # $-1
        lua.pushboolean(L, 0)
        return 1
    push_value(L, reply, p, size, &pos)
    return 1


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


cdef long long int_at(bytes buf, const char *p, Py_ssize_t start, Py_ssize_t stop) except? -1:
    """int(buf[start:stop]) as a C number: digits in C, anything else (a sign
    other than one minus, blanks, more than 18 digits) as Python reads it."""
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
    return -v if neg else v


cdef bytes error_text(bytes msg):
    """engine._error_text: the text of an error table."""
    cdef Py_ssize_t nul, sp
    nul = msg.find(b"\0")
    if nul >= 0:
        msg = msg[:nul]
    sp = msg.find(b" ")
    if sp < 0:
        return b"ERR " + msg
    return msg[:sp] + b" " + msg[sp + 1:].strip(b"\r\n")


cdef void push_value(lua_State *L, bytes buf, const char *p, Py_ssize_t size, Py_ssize_t *at) except *:
    """Push the RESP value at at[0] as Valkey's redisProtocolToLuaType
    converts it (engine._parse); at[0] moves past it."""
    cdef Py_ssize_t pos = at[0]
    if pos >= size:  # a truncated aggregate: buf[pos] in the pure code
        raise IndexError("index out of range")
    if not lua.checkstack(L, 4):
        raise MemoryError("reached lua stack limit")
    cdef char t = p[pos]
    cdef Py_ssize_t end = crlf(p, pos, size)
    cdef Py_ssize_t nxt = end + 2
    cdef long long n, i
    cdef Py_ssize_t stop
    cdef bytes body
    if t == 36:  # $
        n = int_at(buf, p, pos + 1, end)
        if n < 0:
            at[0] = nxt
            lua.pushboolean(L, 0)
            return
        stop = nxt + n
        at[0] = stop + 2
        if stop > size:
            stop = size
        if nxt > size:
            nxt = size
        lua.pushlstring(L, p + nxt, <size_t>(stop - nxt))
        return
    if t == 58:  # :
        at[0] = nxt
        lua.pushnumber(L, <double>int_at(buf, p, pos + 1, end))
        return
    if t == 42:  # *  (a table of exactly n slots, as lua_createtable(n, 0): # finds Valkey's border)
        n = int_at(buf, p, pos + 1, end)
        at[0] = nxt
        if n < 0:
            lua.pushboolean(L, 0)
            return
        lua.createtable(L, <int>n if n < 0x7fffffff else 0, 0)
        for i in range(n):
            push_value(L, buf, p, size, at)
            lua.rawseti(L, -2, <int>(i + 1))
        return
    if t == 43:  # +
        at[0] = nxt
        lua.createtable(L, 0, 0)
        set_field(L, b"ok", buf[pos + 1:end])
        return
    if t == 45:  # -
        at[0] = nxt
        push_error(L, error_text(buf[pos + 1:end]), False)
        return
    if t == 37 or t == 126:  # % map, ~ set: {map = {k = v}}, {set = {k = true}}
        n = int_at(buf, p, pos + 1, end)
        at[0] = nxt
        lua.createtable(L, 0, 0)
        if t == 37:
            lua.pushlstring(L, b"map", 3)
        else:
            lua.pushlstring(L, b"set", 3)
        lua.createtable(L, 0, <int>n)  # sized first, as Valkey: pairs() walks it in Valkey's order
        for i in range(n):
            push_value(L, buf, p, size, at)
            if t == 37:
                push_value(L, buf, p, size, at)
            else:
                lua.pushboolean(L, 1)
            if lua.type(L, -2) == T_NIL:  # a null key: no entry (Lua refuses nil as a key)
                lua.settop(L, -3)
            else:
                lua.rawset(L, -3)
        lua.rawset(L, -3)
        return
    if t == 95:  # _ null
        at[0] = nxt
        lua.pushnil(L)
        return
    if t == 35:  # # boolean
        at[0] = nxt
        lua.pushboolean(L, end - pos - 1 == 1 and p[pos + 1] == 116)
        return
    if t == 44:  # , double
        at[0] = nxt
        lua.createtable(L, 0, 0)
        lua.pushlstring(L, b"double", 6)
        lua.pushnumber(L, float(buf[pos + 1:end]))
        lua.rawset(L, -3)
        return
    if t == 40:  # ( big number
        at[0] = nxt
        lua.createtable(L, 0, 0)
        set_field(L, b"big_number", buf[pos + 1:end])
        return
    if t == 61:  # = verbatim
        n = int_at(buf, p, pos + 1, end)
        body = buf[nxt:nxt + n]
        at[0] = nxt + n + 2
        lua.createtable(L, 0, 0)
        lua.pushlstring(L, b"verbatim_string", 15)
        lua.createtable(L, 0, 0)
        set_field(L, b"format", body[:3])
        set_field(L, b"string", body[4:])
        lua.rawset(L, -3)
        return
    if t == 124:  # | attribute: read past its pairs, the reply is what follows
        n = int_at(buf, p, pos + 1, end)
        at[0] = nxt
        for i in range(2 * n):
            push_value(L, buf, p, size, at)
            lua.settop(L, -2)
        push_value(L, buf, p, size, at)
        return
    raise ValueError(f"unexpected reply type {chr(<unsigned char>t)!r}")


# -- for the tests: the two conversions alone, as Lua functions ---------------------------

cdef public int trafikey_bridge_argv(void *state) noexcept nogil:
    """argv(...) -> a table of the argv server.call would run, or the
    refusal's text."""
    cdef lua_State *L = <lua_State *>state
    argv_with_gil(L)
    return 1


cdef void argv_with_gil(lua_State *L) noexcept with gil:
    cdef object argv = lua_argv(L)
    cdef Py_ssize_t i
    lua.settop(L, 0)
    if type(argv) is bytes:
        push_bytes(L, <bytes>argv)
        return
    lua.createtable(L, <int>len(argv), 0)
    for i in range(len(argv)):
        push_bytes(L, <bytes>argv[i])
        lua.rawseti(L, -2, <int>(i + 1))


cdef public int trafikey_bridge_decode(void *state) noexcept nogil:
    """decode(reply, protected) -> what server.call (or pcall) gives a script
    for that encoded reply; raises as server.call raises."""
    cdef lua_State *L = <lua_State *>state
    cdef int n = decode_with_gil(L)
    if n < 0:
        return lua.error(L)
    return n


cdef int decode_with_gil(lua_State *L) noexcept with gil:
    cdef size_t size
    cdef const char *s = lua.tolstring(L, 1, &size)
    cdef bint protected = lua.type(L, 2) > T_NIL  # nil or none: as server.call
    cdef bytes reply
    try:
        if s == NULL:
            raise TypeError("a reply is a string")
        reply = PyBytes_FromStringAndSize(s, <Py_ssize_t>size)
        lua.settop(L, 0)
        return push_reply(L, reply, protected)
    except BaseException as e:
        lua.settop(L, 0)
        push_error(L, b"ERR " + str(e).encode(), False)
        return -1

"""Lua scripting against Valkey 9.1.2, byte for byte, in RESP2 and RESP3.

EVAL/EVALSHA/EVAL_RO/EVALSHA_RO, SCRIPT, FUNCTION, FCALL/FCALL_RO: the
conversion of values both ways, the server API, the sandbox, error texts
with their " script: on @user_script:N." suffix, shebang flags, FUNCTION
libraries, error statistics and a runaway script (BUSY, SCRIPT/FUNCTION
KILL, SHUTDOWN NOSAVE) on servers of its own.

What cannot be compared byte for byte, and why:

* Lua tables with several string keys: the order `pairs` walks them in
  depends on the string hash, and Valkey's Lua hashes strings with
  murmur32 where stock Lua 5.1 does not. So a returned ``{map=...}`` or
  ``{set=...}`` with several entries, a RESP3 map from ``redis.call``
  (HGETALL, CONFIG GET) re-encoded, and listings of library tables are
  compared as sorted contents.
* FUNCTION LIST with several libraries (or a library with several
  functions): Valkey keeps them in dicts seeded at random per process.
* Addresses in ``tostring(table)``/``tostring(function)``: only the prefix.
* Valkey 9.1.2 aborts (assertion) on ``server.log`` called while a library
  loads, so that is not asked of it.
* The cjson/cmsgpack/struct/bit libraries have their own tests.
"""

from __future__ import annotations

import time

import pytest
from helpers.resp_wire import Wire, encode
from helpers.servers import start_trafikey, start_valkey
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

FUNCTION_HEALTH = [HealthCheck.function_scoped_fixture]


@pytest.fixture
def sp(pair23):
    """A pair in RESP2 and RESP3 with no scripts and no libraries."""
    pair23.check("SCRIPT", "FLUSH")
    pair23.check("FUNCTION", "FLUSH")
    return pair23


@pytest.fixture
def sp2(pair):
    pair.check("SCRIPT", "FLUSH")
    pair.check("FUNCTION", "FLUSH")
    return pair


def ev(pair, body: str, *args: object, keys: int = 0) -> bytes:
    return pair.check("EVAL", body, keys, *args)


def check_each(pair, bodies: list[str]) -> None:
    for body in bodies:
        ev(pair, body)


# -- RESP parsing, for what is compared as contents ------------------------------------------


def parse(buf: bytes, pos: int = 0, any_order: bool = False):  # type: ignore[no-untyped-def]
    """One RESP2/RESP3 reply as (value, next position); maps and sets (and
    with ``any_order`` arrays too) become sorted tuples so their order does
    not matter."""
    t = buf[pos : pos + 1]
    end = buf.index(b"\r\n", pos)
    head = buf[pos + 1 : end]
    nxt = end + 2
    if t in b"$=":
        n = int(head)
        if n < 0:
            return ("null",), nxt
        return (t, buf[nxt : nxt + n]), nxt + n + 2
    if t in b"*~%":
        n = int(head)
        if n < 0:
            return ("null",), nxt
        items = []
        for _ in range(2 * n if t == b"%" else n):
            v, nxt = parse(buf, nxt, any_order)
            items.append(v)
        if t == b"%":
            pairs = sorted(zip(items[::2], items[1::2], strict=True), key=repr)
            return (t, tuple(pairs)), nxt
        if t == b"~" or any_order:
            return (t, tuple(sorted(items, key=repr))), nxt
        return (t, tuple(items)), nxt
    return (t, head), nxt


def contents(reply: bytes, any_order: bool = False):  # type: ignore[no-untyped-def]
    value, end = parse(reply, 0, any_order)
    assert end == len(reply), reply
    return value


def assert_same_contents(pair, *args: object, any_order: bool = False):  # type: ignore[no-untyped-def]
    v, t = pair.both(*args)
    assert contents(t, any_order) == contents(v, any_order), f"{args!r}\n valkey:   {v!r}\n trafikey: {t!r}"
    return v


def flat_pairs_sorted(reply: bytes) -> list:
    """A RESP2 flat array of key/value pairs (a map encoded for RESP2), as sorted pairs."""
    _, items = contents(reply)
    return sorted(zip(items[::2], items[1::2], strict=True), key=repr)


# -- Lua values to RESP ---------------------------------------------------------------------

RETURNS = [
    "1", "-1", "0", "3.99", "-3.99", "1e20", "-1e20", "2^53+1", "2^63", "-2^63", "2^64", "0/0", "1/0", "-1/0",
    "-0.0", "0.5", "'hello'", "''", "'a\\0b\\r\\nc'", "true", "false", "nil", "", "{}", "{1,2,3}", "{1,nil,3}",
    "{nil,2}", "{1,{2,{3,'x'}},false,true}", "{1,2,3,a=5}", "{a=5}", "{[1.5]=1}", "{[2]='x'}",
    "{ok='fine'}", "{ok='fi\\r\\nne'}", "{ok=''}", "{ok=1}", "{err='bad'}", "{err='My bad'}", "{err='bad\\r\\nx'}",
    "{err=''}", "{err=1}", "{err='x', ok='y'}", "{ok='y', double=1}", "{double=3.5}", "{double='3.5'}",
    "{double=0/0}", "{double=1/0}", "{double=-1/0}", "{double=1e300}", "{double=-0.0}", "{double=2}",
    "{double=1e15}", "{double=0.1}", "{double=123456789.125}", "{big_number='123456789012345678901234567890'}",
    "{big_number='1\\r\\n2'}", "{big_number=12}", "{verbatim_string={format='txt', string='hello'}}",
    "{verbatim_string={format='mkd', string='a\\r\\nb'}}", "{verbatim_string={format='txt'}}",
    "{verbatim_string={format='', string='e'}}", "{verbatim_string={format='ab', string='e'}}",
    "{verbatim_string={format='long', string='e'}}", "{verbatim_string={format=1, string='e'}}",
    "{verbatim_string={string='x'}}", "{verbatim_string='x'}", "{map={a=1}}", "{map={}}", "{map=5}",
    "{map={a={1,2}}}", "{map={[1]=2}}", "{map={a={map={b=true}}}}", "{set={a=true}}", "{set={}}", "{set={[7]=true}}",
    "{set={x=false}}", "{map={a=1}, set={b=true}}", "{1, {ok='x'}, {err='y'}}", "{1, {double=1.5}, {big_number='5'}}",
    "{1, {map={k='v'}}, {set={s=true}}}", "function() end", "coroutine.create(function() end)", "{function() end, 2}",
    "{1, function() end, 2}", "1, 2", "{1, 2}, 3", "redis", "KEYS", "{false}", "{true, nil, true}",
]


@pytest.mark.parametrize("setresp", ["", "redis.setresp(3) "], ids=["lua_resp2", "lua_resp3"])
def test_lua_values_to_resp(sp, setresp: str) -> None:
    """Every Lua type as a script's result, for either protocol of the
    client and of the script (booleans depend on both)."""
    for expr in RETURNS:
        ev(sp, f"{setresp}return {expr}")


def test_returned_maps_and_sets_several_keys(sp) -> None:
    """Several keys: compared as contents (the order is the string hash's)."""
    for body in ["return {map={a=1, b='x', c={1,2}, d=true}}", "return {set={a=true, b=true, c=true, d=true}}",
                 "redis.setresp(3) return {map={a=1, b=false, c={double=2.5}}}",
                 "return {1, {map={x=1, y=2, z=3}}, {set={p=true, q=true}}}"]:
        # a RESP2 client gets maps and sets as arrays: any order there too
        assert_same_contents(sp, "EVAL", body, 0, any_order=True)


def test_nesting_limits(sp) -> None:
    """Deep tables are encoded; the reply parser's C-stack bound is far deeper."""
    check_each(sp, [
        "local t = {} local c = t for i = 1, 100 do c[1] = {} c = c[1] end return t",
        "local t = {} local c = t for i = 1, 7000 do c[1] = {} c = c[1] end local ok = pcall(function() return t end) "
        "return 1",
    ])


_LUA_ATOMS = st.one_of(
    st.integers(-(2**62), 2**62).map(str),
    st.sampled_from(["0.5", "-2.25", "1e300", "-1e-300", "2^63", "-2^63", "0/0", "1/0", "-1/0", "-0.0", "3.99"]),
    st.text(alphabet="abc xyz\r\n\0\\'\"", max_size=6).map(lambda s: repr(s.encode()).lstrip("b")
                                                              .replace("\\x00", "\\0")),
    st.sampled_from(["true", "false", "nil"]),
    st.sampled_from(["{ok='s'}", "{err='E r'}", "{double=0.25}", "{big_number='99'}", "{map={k=1}}", "{set={m=true}}",
                     "{verbatim_string={format='txt', string='v'}}"]),
)


def _lua_value(depth: int = 3):  # type: ignore[no-untyped-def]
    if depth == 0:
        return _LUA_ATOMS
    return st.one_of(
        _LUA_ATOMS,
        st.lists(st.deferred(lambda: _lua_value(depth - 1)), max_size=4).map(lambda xs: "{" + ", ".join(xs) + "}"),
        st.deferred(lambda: _lua_value(depth - 1)).map(lambda x: "{map={key=" + (x if x != "nil" else "1") + "}}"),
    )


@settings(max_examples=250, deadline=None, suppress_health_check=FUNCTION_HEALTH)
@given(value=_lua_value(), resp3=st.booleans())
def test_random_nested_values(pair23, value: str, resp3: bool) -> None:
    """Random nested Lua values (holes, error/status/double tables, single-key
    maps and sets) rendered as Lua source and returned."""
    ev(pair23, ("redis.setresp(3) " if resp3 else "") + "return " + value)


# -- server replies to Lua and back ----------------------------------------------------------

SERVER_REPLIES = [
    "return redis.call('HGETALL', 'h1')",
    "return redis.call('HGETALL', 'nokey')",
    "local r = redis.call('HGETALL', 'h1') return type(r)",
    "return redis.call('ZSCORE', 'z', 'm1')",
    "return redis.call('ZSCORE', 'z', 'm0')",
    "return redis.call('ZSCORE', 'z', 'nope')",
    "return type(redis.call('ZSCORE', 'z', 'm1'))",
    "return redis.call('ZRANGE', 'z', 0, -1, 'WITHSCORES')",
    "return redis.call('ZMSCORE', 'z', 'm1', 'nope', 'm2')",
    "return redis.call('ZINCRBY', 'z', 1, 'm1')",
    "return redis.call('ZPOPMIN', 'zz')",
    "return redis.call('GET', 'nokey')",
    "return type(redis.call('GET', 'nokey'))",
    "return {redis.call('GET', 'nokey')}",
    "return redis.call('GET', 's')",
    "return redis.call('SET', 'x', 1)",
    "return type(redis.call('SET', 'x', 1))",
    "return redis.call('SET', 'x', 1).ok",
    "return redis.call('SET', 'x', 1, 'GET')",
    "return redis.call('SET', 'x', 1, 'NX')",
    "return redis.call('PING')",
    "return redis.call('PING', 'hi')",
    "return redis.call('ECHO', 'a\\r\\nb')",
    "return redis.call('INCR', 'n')",
    "return redis.call('INCRBYFLOAT', 'f', '1.5')",
    "return redis.call('HMGET', 'h1', 'a', 'zz')",
    "return {redis.call('HMGET', 'h1', 'a', 'zz')[2] == nil}",
    "return #redis.call('HMGET', 'h1', 'zz', 'zz', 'a')",
    "return redis.call('EXISTS', 'h1', 's', 'nokey')",
    "return redis.call('TYPE', 'z')",
    "return redis.call('OBJECT', 'ENCODING', 'h1')",
    "return redis.call('TTL', 's')",
    "return redis.call('DEL', 'nokey')",
    "return redis.call('HEXISTS', 'h1', 'a')",
    "return redis.call('COMMAND', 'GETKEYS', 'SET', 'k', 'v')",
    "return redis.pcall('INCR', 's')",
    "return type(redis.pcall('INCR', 's'))",
    "return redis.pcall('INCR', 's').err",
    "return redis.pcall('HSET', 's', 'a', 'b')",
    "return {redis.pcall('INCR', 's'), redis.pcall('GET', 'nokey'), 1}",
    "local r = redis.call('ZRANGE', 'z', 0, -1, 'WITHSCORES') return {type(r[2]), r[2]}",
]


@pytest.mark.parametrize("setresp", ["", "redis.setresp(3) ", "redis.setresp(2) "],
                         ids=["default", "setresp3", "setresp2"])
def test_server_replies_into_lua_and_back(sp, setresp: str) -> None:
    """Command replies of every RESP2/RESP3 type decoded into Lua (nil
    bulk -> false, errors and statuses as tables, RESP3 doubles, maps,
    sets, nulls, booleans) and encoded again for the client."""
    sp.check("HSET", "h1", "a", "1")
    sp.check("ZADD", "z", "1.5", "m1", "2", "m2", "-inf", "m0")
    sp.check("ZADD", "zz", "1e-5", "x")
    sp.check("SET", "s", "val")
    for body in SERVER_REPLIES:
        ev(sp, setresp + body)


def test_server_maps_several_fields(sp) -> None:
    """RESP3 maps from redis.call with several fields: compared as contents."""
    sp.check("HSET", "h", "a", "1", "b", "2", "c", "3")
    body = "redis.setresp(3) return redis.call('HGETALL', 'h')"
    v, t = sp.both("EVAL", body, 0)
    if v.startswith(b"*"):  # RESP2 client: the map went out as a flat array
        assert flat_pairs_sorted(t) == flat_pairs_sorted(v)
    else:
        assert contents(t) == contents(v)
    ev(sp, "redis.setresp(3) local m = redis.call('HGETALL', 'h').map return {m.a, m.b, m.c, m.d}")
    ev(sp, "redis.setresp(3) local n = 0 for k, v in pairs(redis.call('HGETALL', 'h').map) do n = n + 1 end "
           "return n")


def test_resp3_special_values_from_lua(sp) -> None:
    """RESP3 booleans, nulls and doubles decoded into Lua, then inspected."""
    sp.check("ZADD", "z", "2.5", "m")
    check_each(sp, [
        "redis.setresp(3) local d = redis.call('ZSCORE', 'z', 'm') return {type(d), d.double, tostring(d.double)}",
        "redis.setresp(3) local d = redis.call('ZSCORE', 'z', 'nope') return {d == nil, type(d)}",
        "redis.setresp(3) local r = redis.call('GET', 'nope') return tostring(r)",
        "redis.setresp(2) local r = redis.call('GET', 'nope') return tostring(r)",
        "redis.setresp(3) return redis.call('HELLO') == nil",
    ])


_ARG_NUMBERS = st.one_of(
    st.integers(-(2**70), 2**70).map(str),
    st.floats(allow_nan=False, allow_infinity=False).map(repr),
    st.sampled_from(["0/0", "-(0/0)", "1/0", "-1/0", "-0.0", "2^62", "-2^62", "2^62+2048", "2^63", "1/3", "1e-320",
                     "123456.789e-20", "0.1", "5e-324"]),
)


@settings(max_examples=300, deadline=None, suppress_health_check=FUNCTION_HEALTH)
@given(expr=_ARG_NUMBERS)
def test_random_number_arguments(pair, expr: str) -> None:
    """Lua numbers as command arguments: integers when double2ll takes
    them, else fpconv_dtoa's shortest form (NaN keeps its sign); and as
    Lua prints them."""
    ev(pair, f"return {{redis.call('ECHO', {expr}), tostring({expr})}}")


_RAISE = st.sampled_from([
    "error({v})", "error({v}, 0)", "error({v}, 2)", "return {{pcall(error, {v})}}", "return {{pcall(error, {v}, 0)}}",
    "local function f() error({v}) end\nreturn f()", "return redis.call('ECHO', {v})",
    "return {{redis.pcall('ECHO', {v})}}", "return redis.status_reply({v})", "return redis.error_reply({v})",
])


@settings(max_examples=150, deadline=None, suppress_health_check=FUNCTION_HEALTH)
@given(value=_lua_value(2), how=_RAISE)
def test_random_error_values(pair, value: str, how: str) -> None:
    """Random values raised as errors, caught by pcall, or handed to the API."""
    ev(pair, how.format(v=value))


@settings(max_examples=60, deadline=None, suppress_health_check=FUNCTION_HEALTH)
@given(value=st.binary(max_size=20))
def test_random_string_arguments(pair, value: bytes) -> None:
    """Binary strings through KEYS/ARGV and redis.call, and back."""
    pair.check("EVAL", "redis.call('SET', KEYS[1], ARGV[1]) return {redis.call('GET', KEYS[1]), #ARGV[1]}",
               1, value or b"k", value)


# -- errors -------------------------------------------------------------------------------------

CALL_REFUSALS = [
    "redis.{f}()",
    "redis.{f}('nosuch')",
    "redis.{f}('')",
    "redis.{f}(1)",
    "redis.{f}('GET')",
    "redis.{f}('GET', 'a', 'b')",
    "redis.{f}('get')",
    "redis.{f}('SET', 'a')",
    "redis.{f}('CONFIG')",
    "redis.{f}('CONFIG', 'GET')",
    "redis.{f}('CONFIG', 'nosuch')",
    "redis.{f}('config', 'NoSuch', 'x')",
    "redis.{f}('OBJECT', 'nosuch')",
    "redis.{f}('SCRIPT', 'nosuch')",
    "redis.{f}('FUNCTION', 'nosuch')",
    "redis.{f}('SCRIPT', 'LOAD')",
    "redis.{f}('SCRIPT', 'LOAD', 'return 1')",
    "redis.{f}('SCRIPT', 'FLUSH')",
    "redis.{f}('FUNCTION', 'FLUSH')",
    "redis.{f}('EVAL', 'return 1', 0)",
    "redis.{f}('EVALSHA', 'x', 0)",
    "redis.{f}('FCALL', 'f', 0)",
    "redis.{f}('MULTI')",
    "redis.{f}('EXEC')",
    "redis.{f}('WATCH', 'x')",
    "redis.{f}('CLIENT', 'ID')",
    "redis.{f}('CLIENT', 'KILL', 'ID', '999')",
    "redis.{f}('HELLO', '3')",
    "redis.{f}('AUTH', 'x')",
    "redis.{f}('SHUTDOWN')",
    "redis.{f}('QUIT')",
    "redis.{f}('RESET')",
    "redis.{f}('DEBUG', 'SLEEP', 0)",
    "redis.{f}('CONFIG', 'SET', 'maxmemory', '0')",
    "redis.{f}('SELECT', 'x')",
    "redis.{f}('SELECT', 99)",
    "redis.{f}('SET', 'k', 'v', 'EX', 'x')",
    "redis.{f}('ECHO', true)",
    "redis.{f}('ECHO', nil)",
    "redis.{f}('ECHO', 'a', nil)",
    "redis.{f}('ECHO', {{}})",
    "redis.{f}('ECHO', redis.call)",
    "redis.{f}('INCR', 's')",
    "redis.{f}('HSET', 's', 'a', 'b')",
]


@pytest.mark.parametrize("fn", ["call", "pcall"])
def test_call_refusals_and_errors(sp, fn: str) -> None:
    """Every refusal of a script's command and every command error: raised
    (with the script's line) by redis.call, returned by redis.pcall."""
    sp.check("SET", "s", "text")
    for tmpl in CALL_REFUSALS:
        ev(sp, "return " + tmpl.format(f=fn))
        ev(sp, "\nlocal r = " + tmpl.format(f=fn) + "\nreturn r")


def test_read_only_refusals(sp) -> None:
    sp.check("SET", "k", "v")
    for body in ["return redis.call('SET', 'k', 'v')", "return redis.pcall('SET', 'k', 'v')",
                 "return redis.pcall('FLUSHALL')", "return redis.call('GET', 'k')", "return redis.call('nosuch')",
                 "return redis.pcall('SET')", "return redis.pcall('CONFIG', 'SET', 'maxmemory', '0')",
                 "return redis.pcall('PING')"]:
        sp.check("EVAL_RO", body, 0)
        sp.check("EVAL", "#!lua flags=no-writes\n" + body, 0)


ERRORS = [
    "error('x')",
    "return error('x')",
    "error('x', 0)",
    "error('x', 2)",
    "error('a\\nb')",
    "error('abc\\n', 0)",
    "error({err='My Error'})",
    "error({err='ERR My Error'})",
    "error({err='x'}, 0)",
    "error({err='abc\\r\\n'})",
    "error({err='\\r\\nabc'})",
    "error({err=5})",
    "error({err=true})",
    "error({err=''})",
    "error({})",
    "error()",
    "error(nil)",
    "error(12)",
    "error(true)",
    "error({err='x', source='foo', line=7})",
    "error(setmetatable({}, {__index=function() return 'zz' end}))",
    "error(setmetatable({}, {__newindex=function() error('x') end}))",
    "error(redis.error_reply('My Err'))",
    "error(string.rep('x', 200))",
    "error(string.rep('x', 200), 0)",
    "local x = nil; return x.y",
    "return 1 + {}",
    "return #nil",
    "return ('x')()",
    "local t = {} t[nil] = 1",
    "local function f(n) return f(n) + 1 end return f(1)",
    "local function f(n) if n == 0 then error('deep') end return f(n-1) end return f(3)",
    "return redis.call('INCR', 's')",
    "return redis.call('nosuch')",
    "return math.random(0)",
    "return math.random(1, 2, 3)",
    "return math.random('x')",
    "return string.rep()",
    "return assert(false)",
    "return assert(false, 'msg')",
    "return assert(nil, {err='tbl'})",
    "return tostring()",
    "local t = setmetatable({}, {__metatable = 1}) local x = setmetatable(t, {})",
    "local x = setmetatable(redis, {})",
    "local x = setmetatable(1, {})",
    "local x = rawset({}, nil, 1)",
    "local x = rawset()",
    "local x = rawget({})",
    "local x = loadstring(nil)",
    "local x = load('return 1')",
    "local x = coroutine.resume(1)",
    "local x = type()",
    "local x = getmetatable()",
    "local x = next()",
    "for k in pairs(nil) do end",
    "local x = xpcall()",
    "local f = coroutine.wrap(function() return redis.call('nosuch') end); return f()",
    "local f = coroutine.wrap(function() error('x') end); return f()",
    "local x = coroutine.create(1)", "local x = coroutine.create(string.len)", "local x = coroutine.wrap(redis.call)",
    "local co = coroutine.wrap(function() error({err='E x'}) end) return co()",
    "local f = loadstring('x = 1'); return f()",
    "local f = loadstring('return zz'); return f()",
    "local f = loadstring('error(\"x\")'); return f()",
    "local f = loadstring('\\n\\nerror(\"x\")', 'chunk'); return f()",
    "local mt = {} mt.__index = function(t, k) return mt.nosuch.x end local t = setmetatable({}, mt) return t.a",
]


def test_script_errors(sp) -> None:
    """Errors that end a script: their text, the " script: on <source>:<line>."
    suffix, with the line of a C function's caller."""
    sp.check("SET", "s", "text")
    for body in ERRORS:
        ev(sp, body)


def test_error_line_numbers(sp) -> None:
    """Lines: tail calls of API functions keep the script's line; nested
    functions report their own; a shebang line counts."""
    check_each(sp, [
        "\n\nlocal x = nil\nreturn x.y",
        "local function f()\n  return redis.call('nosuch')\nend\nreturn f()",
        "local function f()\n  local r = redis.call('nosuch')\n  return r\nend\nlocal x = f()\nreturn x",
        "local function f()\n  error('boom')\nend\n\nreturn f()",
        "local function f()\n  error({err='boom'})\nend\n\nreturn f()",
        "local function g()\n  return redis.call('INCR', 's')\nend\nlocal function f()\n  return g()\nend\nreturn f()",
        "\nreturn redis.call('INCR', 's')",
        "\n\n\nreturn redis.sha1hex()",
        "#!lua\nreturn redis.call('nosuch')",
        "#!lua\n\nerror('x')",
        "#!lua flags=no-writes\n\n\nreturn redis.call('SET', 'a', 1)",
        "#!lua\nreturn (",
        "return (",
        "\n\nlocal x = 1 +",
        "x = = 1",
        "return 'unfinished",
        "for i = 1 do end",
    ])


def test_c_strings(sp) -> None:
    """Valkey reads error texts, statuses, flag and engine names as C
    strings: they end at a NUL. Bulk strings and script bodies do not."""
    check_each(sp, [
        "error('a\\0b')", "error({err='a\\0b'})", "return {ok='a\\0b'}", "return {err='a\\0b'}",
        "return redis.error_reply('a\\0b')", "return redis.error_reply('-a\\0b c')",
        "return redis.status_reply('a\\0b')", "return redis.error_reply('a\\0b').err",
        "return redis.pcall('CONFIG', 'x\\0y')",
        "return redis.call('CONFIG', 'x\\0y')", "local e = redis.pcall('CONFIG', 'x\\0y') return {e.err, type(e.err)}",
        "local ok, e = pcall(redis.call, 'CONFIG', 'x\\0y') return e", "return {big_number='1\\0 2'}",
        "return {verbatim_string={format='t\\0t', string='a\\0b'}}", "return 'a\\0b'", "return redis.sha1hex('a\\0b')",
        "local f, e = loadstring('x = = 1', 'a\\0b') return e", "local f = loadstring('error(\"x\")', 'a\\0b') f()",
        "error({err='x', source='s\\0t', line=3})", "local f = loadstring('\\n\\nerror({err=\"x\"})', 's\\0t') f()",
        "return 'a\0b'", "return 1 -- \0 comment", "#!lua\0\nreturn 1", "return '\0", "return \0",
        '#!lua flags="no-writes\\x00x"\nreturn redis.call("SET", "k", 1)', '#!lua flags="bad\\x00x"\nreturn 1',
        '#!"lua\\x00zz"\nreturn 1', '#!lua "flags\\x00=no-writes"\nreturn 1',
    ])
    rf = "redis.register_function"
    for cmd in [
        ("FUNCTION", "LOAD", "F\0OO", "#!lua name=x\n" + rf + "('x', function() end)"),
        ("FUNCTION", "LOAD", "F\r\nOO", "#!lua name=x\n" + rf + "('x', function() end)"), ("FUNCTION", "LIST", "W\0X"),
        ("FUNCTION", "LOAD", '#!"l\\x00ua" name=x\n' + rf + '("x", function() end)'),
        ("FUNCTION", "LOAD", '#!lua "na\\x00me=x"\n' + rf + '("x", function() end)'),
        ("FUNCTION", "LOAD", "#!lua name=x\nlocal x = 'a\0b' + 1"),
        ("FUNCTION", "LOAD", "#!lua name=x\n" + rf + "('x\\0y', function() end)"),
        ("FUNCTION", "LOAD", "#!lua name=x\n" + rf + "{function_name='x', callback=function() end, "
                                                     "flags={'no-writes\\0zz'}}"),
        ("FUNCTION", "LIST"),
        ("FUNCTION", "LOAD", "#!lua name=y\n" + rf + "{function_name='y', callback=function() end, "
                                                     "description='d\\0e'}"),
        ("FUNCTION", "LIST", "LIBRARYNAME", "y"),
        ("FUNCTION", "LOAD", '#!"lua\\x00x" name=z\n' + rf + '("z", function() end)'),
        ("FUNCTION", "LIST", "WITHCODE", "LIBRARYNAME", "z"),
        ("FUNCTION", "LOAD", "#!lua name=w\n" + rf + "('w', function() return {err='E a\\0b'} end)"), ("FCALL", "w", 0),
    ]:
        sp.check(*cmd)


def test_pcall_and_xpcall(sp) -> None:
    """pcall catches an error table as its message (Valkey's luaRedisPcall);
    xpcall's handler and coroutine.resume see the table."""
    sp.check("SET", "k", "v")
    check_each(sp, [
        "local ok, e = pcall(redis.call, 'INCR', 'k'); return {tostring(ok), e}",
        "local ok, e = pcall(redis.call, 'INCR', 'k'); return type(e)",
        "local ok, e = pcall(redis.call, 'nosuch'); return {tostring(ok), e}",
        "local ok, e = pcall(redis.call, 'GET'); return e",
        "local ok, e = pcall(redis.call); return e",
        "local ok, e = pcall(function() error('boom') end); return {tostring(ok), e}",
        "local ok, e = pcall(function() error({err='boom'}) end); return {tostring(ok), e}",
        "local ok, e = pcall(function() error({x='boom'}) end); return type(e)",
        "local ok, e = pcall(function() error(5) end); return {tostring(ok), e}",
        "local ok, e = pcall(function() error() end); return {tostring(ok), type(e)}",
        "local ok, e = pcall(function() local x = nil; return x.y end); return {tostring(ok), e}",
        "return {pcall(error)}",
        "return {pcall(error, nil)}",
        "return {pcall(error, {err=1})}",
        "return {pcall(error, {err=true})}",
        "return select('#', pcall(error, {}))",
        "local ok, e = pcall(error, setmetatable({}, {__index=function() return 'zz' end})); return e",
        "return {pcall(function() return 1, nil, 3 end)}",
        "return select('#', pcall(function() return 1, nil, 3 end))",
        "return {pcall()}",
        "return {pcall(1)}",
        "local ok, e = pcall(math.random, 0); return e",
        "local ok, e = pcall(function() return math.random(0) end); return e",
        "local ok, e = pcall(string.rep); return e",
        "local ok, e = pcall(redis.sha1hex); return e",
        "local ok, e = pcall(redis.setresp, 4); return e",
        "local ok, e = pcall(redis.error_reply, 'x'); return e",
        "local ok, e = pcall(type); return e",
        "local ok, e = pcall(setmetatable, 1); return e",
        "local ok, e = pcall(rawset, _G, 'x', 1); return e",
        "return {xpcall(function() error('x') end, function(e) return 'H:' .. e end)}",
        "return {xpcall(function() error({err='x'}) end, function(e) return type(e) end)}",
        "return {xpcall(function() return 1, 2 end, function() end)}",
        "return {xpcall(function() error('x') end, nil)}",
        "local ok, e = xpcall(function() redis.call('nosuch') end, function(e) return e end); "
        "return {tostring(ok), type(e)}",
        "local ok, e = xpcall(function() redis.call('nosuch') end, function(e) return e end); return e",
        "return {xpcall(function() return redis.call('nosuch') end, function(e) return e.err end)}",
        "local co = coroutine.create(function() return redis.call('nosuch') end); local ok, e = coroutine.resume(co); "
        "return {tostring(ok), type(e)}",
        "local co = coroutine.create(function() return redis.call('nosuch') end); local ok, e = coroutine.resume(co); "
        "return e",
        "local co = coroutine.create(function() return zzz end); return {coroutine.resume(co)}",
        "local ok, e = pcall(coroutine.wrap(function() return redis.call('nosuch') end)); return type(e)",
    ])


# -- the server API ---------------------------------------------------------------------------


def test_api_functions(sp) -> None:
    check_each(sp, [
        "return redis.sha1hex('')", "return redis.sha1hex('abc')", "return redis.sha1hex(1)",
        "return redis.sha1hex(1.5)", "return redis.sha1hex({})", "return redis.sha1hex(nil)",
        "return redis.sha1hex('a', 'b')", "return redis.sha1hex()", "return server.sha1hex('x')",
        "return redis.error_reply('My Err')", "return redis.error_reply('-My Err')", "return redis.error_reply('')",
        "return redis.error_reply('-')", "return redis.error_reply('x\\r\\ny')", "return redis.error_reply(1)",
        "return redis.error_reply()", "return redis.error_reply('a', 'b')", "return redis.error_reply('My Err').err",
        "return redis.error_reply('-ERR\\r\\n')", "return redis.error_reply('NOSPACE')",
        "return redis.status_reply('Fine')", "return redis.status_reply(1)", "return redis.status_reply()",
        "return redis.status_reply('a\\r\\nb')", "return redis.status_reply('x').ok",
        "return redis.log(redis.LOG_WARNING, 'hello', 1, 2.5, nil, {}, 'x')",
        "return redis.log(0, 'debug')", "return redis.log('3', 'string level')", "return redis.log(3.9, 'x')",
        "return redis.log()", "return redis.log(1)", "return redis.log('x', 'y')", "return redis.log(9, 'y')",
        "return redis.log(-1, 'y')", "return {redis.LOG_DEBUG, redis.LOG_VERBOSE, redis.LOG_NOTICE, redis.LOG_WARNING}",
        "return redis.setresp(2)", "return redis.setresp('3')", "return redis.setresp(3.7)", "return redis.setresp()",
        "return redis.setresp(4)", "return redis.setresp(nil)", "return redis.setresp(2, 3)",
        "return redis.set_repl(redis.REPL_ALL)", "return redis.set_repl(redis.REPL_NONE)",
        "return redis.set_repl(redis.REPL_AOF)", "return redis.set_repl(redis.REPL_REPLICA)", "return redis.set_repl()",
        "return redis.set_repl(9)", "return redis.set_repl(-1)", "return redis.set_repl(1, 2)",
        "return {redis.REPL_NONE, redis.REPL_AOF, redis.REPL_SLAVE, redis.REPL_REPLICA, redis.REPL_ALL}",
        "return {redis.REDIS_VERSION, redis.REDIS_VERSION_NUM, redis.VALKEY_VERSION, redis.VALKEY_VERSION_NUM, "
        "redis.SERVER_NAME, server.SERVER_NAME}",
        "return {redis.breakpoint(), type(redis.debug), redis.debug('x'), redis.replicate_commands()}",
        "return redis.acl_check_cmd('get', 'x')", "return redis.acl_check_cmd('set')",
        "return redis.acl_check_cmd('config', 'get')", "return redis.acl_check_cmd('config', 'nosuch')",
        "return redis.acl_check_cmd('nosuch')", "return redis.acl_check_cmd()", "return redis.acl_check_cmd({})",
        "return redis == server", "return redis.nosuch", "return type(redis.call)", "return type(math.random)",
        "return tostring(redis.call):sub(1, 12)",
        "local r = {} for k in pairs(redis) do r[#r+1] = k end table.sort(r) return r",
        "local r = {} for k, v in pairs(redis) do r[#r+1] = k .. ':' .. type(v) end table.sort(r) return r",
    ])


def test_math_random_after_randomseed(sp) -> None:
    """Valkey's own generator (lrand48): the same sequences after a seed,
    whatever the seed's form (luaL_checkint truncates to a C int)."""
    check_each(sp, [
        "math.randomseed(42); return {tostring(math.random()), math.random(100), math.random(-5, 5)}",
        "math.randomseed(-1); return {tostring(math.random()), math.random(2^31)}",
        "math.randomseed(2^32 + 7); return tostring(math.random())",
        "math.randomseed('9'); return tostring(math.random())",
        "math.randomseed(3.9); return tostring(math.random())",
        "math.randomseed(-3.9); return tostring(math.random())",
        "math.randomseed(1); return math.random(2^32 + 5)",
        "math.randomseed(1); return math.random(3.7)",
        "math.randomseed(1); local t = {} for i = 1, 50 do t[i] = math.random(1000) end return t",
        "math.randomseed(1); return math.random(1, 0)",
        "math.randomseed(0); return {math.random(0x7fffffff), math.random(-2^31, 2^31 - 1)}",
        "return math.randomseed()", "return math.random(nil)", "return math.random({})",
        "return math.random(redis.call)", "math.randomseed(5); return math.random('7')",
    ])


def test_keys_and_argv(sp) -> None:
    sp.check("EVAL", "return KEYS", 2, "a", "b", "c")
    sp.check("EVAL", "return ARGV", 2, "a", "b", "c")
    sp.check("EVAL", "return {#KEYS, #ARGV}", 0)
    sp.check("EVAL", "KEYS[1] = 'x'; return KEYS", 0)
    sp.check("EVAL", "table.insert(KEYS, 'z'); return KEYS", 1, "a")
    sp.check("EVAL", "return {KEYS[1], ARGV[1], ARGV[2]}", 1, b"\x00\xff", b"", b"\r\n")
    # KEYS and ARGV of one call are not left for the next
    sp.check("EVAL", "return {#KEYS, #ARGV}", 0)


# -- the sandbox ------------------------------------------------------------------------------


def test_sandbox_globals(sp) -> None:
    """What exists and what does not (9.0 dropped getfenv/setfenv/newproxy)."""
    check_each(sp, [f"return type({name})" for name in [
        "io", "os", "loadfile", "dofile", "require", "print", "package", "debug", "module", "newproxy", "gcinfo",
        "getfenv", "setfenv", "_G", "__server__err__handler", "__redis__err__handler", "bit", "cjson", "cmsgpack",
        "struct", "collectgarbage", "unpack", "string.dump", "math.pow", "table.getn", "string.gfind", "math.mod",
        "coroutine.running", "os.clock", "os.time", "os.exit", "os.getenv", "string.format", "load", "loadstring",
        "select", "rawequal", "python", "KEYS",
    ]] + [
        "return _VERSION",
        "local r = {} for k in pairs(_G) do r[#r+1] = k end table.sort(r) return r",
        "local r = {} for k, v in pairs(_G) do r[#r+1] = k .. ':' .. type(v) end table.sort(r) return r",
        *[f"local r = {{}} for k in pairs({lib}) do r[#r+1] = k end table.sort(r) return r"
          for lib in ["string", "math", "table", "os", "coroutine"]],
        "return tostring(os.clock() >= 0)",
        "return collectgarbage('count') > 0",
        "return gcinfo() > 0",
        "return tostring(_G):sub(1, 7)",
    ])


def test_sandbox_read_only(sp) -> None:
    """Globals and library tables are read-only, whichever way they are reached."""
    check_each(sp, [
        "x = 1", "KEYS = 1", "_G.x = 1", "rawset(_G, 'x', 1)", "local x = rawset(_G, 'x', 1)", "return rawget(_G, 'x')",
        "redis.call = 1", "redis.x = 1", "rawset(redis, 'x', 1)", "string.x = 1", "math.random = 1",
        "table.insert = nil", "os.clock = nil", "coroutine.x = nil", "cjson.x = 1", "setmetatable(_G, {})",
        "local x = setmetatable(string, {})", "getmetatable('').__index = {}", "getmetatable('').foo = 1",
        "getmetatable(_G).__index = nil", "local t = {}; t.x = 1; return t.x",
        "local t = setmetatable({}, {}); return type(getmetatable(t))", "return setmetatable(KEYS, {}) == KEYS",
        "return rawget(_G, 'redis') == redis", "return rawget(redis, 'call') == redis.call",
        "return rawget(string, 'rep') == string.rep", "return rawget(_G, 'string') == string",
        "return rawget(_G, 'nosuch')", "return next(redis) ~= nil", "return next({})", "return rawequal(_G, _G)",
        "return #_G", "return _G.redis == redis", "return _G._G == _G", "return _G.x", "return _G.nosuch",
        "return _G[{}]", "return _G[true]", "return _G[1]", "return zzz", "return redis.nosuch", "return string.nosuch",
        "return getmetatable(_G)", "return type(getmetatable(_G))", "return type(getmetatable(_G).__index)",
        "return type(getmetatable(redis))", "return type(getmetatable(string))", "return type(getmetatable(''))",
        "return getmetatable('').__index == string", "return type(getmetatable(redis.call))",
        "local r = {} for k, v in pairs(getmetatable(_G)) do r[#r+1] = k .. '=' .. type(v) end return r",
        "local r = {} for k, v in pairs(getmetatable('')) do r[#r+1] = k .. '=' .. type(v) end return r",
        "return ('x'):rep(3)", "local s = 'abc' return s:upper()", "return ('%d'):format(7)",
    ])


def test_sandbox_loadstring_and_coroutines(sp) -> None:
    """Code compiled at run time gets the same protected globals; Valkey
    reads precompiled chunks as text; coroutines may call the server."""
    check_each(sp, [
        "local f = loadstring('return 1+1'); return f()",
        "local f = loadstring('return redis.call(\"PING\")'); return f()",
        "local f, e = loadstring('return ('); return e",
        "local f, e = loadstring('return (', 'chunk'); return e",
        "local f, e = loadstring('return (', '=chunk'); return e",
        "local f, e = loadstring('return (', '@file'); return e",
        "local f = loadstring(string.dump(function() return 1 end)); return f()",
        "local f, e = loadstring(string.dump(function() return 1 end)); return type(f)",
        "local f, e = loadstring('\\27Lua'); return {type(f), e}",
        "return loadstring(1)",
        "local f = load(function() return nil end); return type(f)",
        "local i = 0; local f = load(function() i = i + 1; if i == 1 then return 'return 5' end end); return f()",
        "local i = 0; local f, e = load(function() i = i + 1; if i == 1 then return '\\27Lua' end end); "
        "return {type(f), e}",
        "local i = 0; local f, e = load(function() i = i + 1; if i == 1 then return 'return (' end end, 'nm'); "
        "return e",
        "local co = coroutine.create(function(a) local b = coroutine.yield(a + 1); return redis.call('SET', 'k', b) "
        "end); local _, x = coroutine.resume(co, 1); local _, y = coroutine.resume(co, 'v'); return {x, y}",
        "local co = coroutine.wrap(function() coroutine.yield(redis.call('PING')) end); return co()",
        "local co = coroutine.create(function() return redis.call('GET', 'k') end); "
        "local ok, e = coroutine.resume(co); return {tostring(ok), e}",
        "local co = coroutine.create(function() end); coroutine.resume(co); return {coroutine.resume(co)}",
        "return coroutine.running()",
        "local co = coroutine.create(function() return coroutine.status(coroutine.running()) end) "
        "return {coroutine.resume(co)}",
    ])


# -- shebangs and read-only calls ------------------------------------------------------------

SHEBANGS = [
    "#!lua\nreturn 1", "#!lua \nreturn 1", "#!lua flags=\nreturn 1", "#!lua flags=no-writes,allow-oom\nreturn 1",
    "#!lua flags=no-writes flags=allow-oom\nreturn 1", "#!lua flags=no-writes,,allow-oom\nreturn 1",
    "#!lua flags=no-writes,\nreturn 1", "#!lua flags=NO-WRITES\nreturn 1", "#!lua foo=bar\nreturn 1",
    "#!lua name=x\nreturn 1", "#!lua flags=bad\nreturn 1", "#!lua", "#!", "#!\nreturn 1", "#!py\nreturn 1",
    "#!py flags=bad\nreturn 1", "#!LUA\nreturn 1", "#!Lua flags=no-writes\nreturn 1", "#! lua\nreturn 1",
    "#!  \nreturn 1", "#!lua\treturn 1\n", "#!lua\r\nreturn 1", "#!lua flags=no-writes\r\nreturn 1", "#\nreturn 1",
    "#!/usr/bin/lua\nreturn 1", "#!lua flags=no-cluster\nreturn 1", "#!lua flags=allow-stale\nreturn 1",
    "#!lua flags=allow-oom\nreturn 1", "#!lua \"flags=no-writes\"\nreturn 1", "#!lua flags=\"no-writes\"\nreturn 1",
    "#!lua flags='no-writes'\nreturn 1", "#!lua flags=no-writes\x00x\nreturn 1", "#!lua \"unbalanced\nreturn 1",
    "#!lua \"a\"b\nreturn 1", "#!lua\x0bflags=no-writes\nreturn 1", "#!lua \"\\x66lags=no-writes\"\nreturn 1",
    "#!lua flags=allow-cross-slot-keys\nreturn redis.call('SET', KEYS[1], 'x')",
    "#!lua flags=no-writes\nreturn redis.call('SET', KEYS[1], 'x')",
    "#!lua flags=no-writes\nreturn redis.pcall('SET', KEYS[1], 'x')",
    "#!lua\nreturn redis.call('SET', KEYS[1], 'x')",
]


def test_shebangs(sp) -> None:
    for body in SHEBANGS:
        sp.check("EVAL", body, 1, "k")
        sp.check("EVAL_RO", body, 1, "k")
        sp.check("SCRIPT", "LOAD", body)
    # The shebang's flags come with the script: EVALSHA_RO of a writing script.
    for body in ["#!lua\nreturn 1", "#!lua flags=no-writes\nreturn 2", "return 3"]:
        sha = sp.check("SCRIPT", "LOAD", body).split(b"\r\n")[1]
        sp.check("EVALSHA_RO", sha, 0)
        sp.check("EVALSHA", sha, 0)


# -- SCRIPT and the script cache -------------------------------------------------------------


def test_script_commands(sp) -> None:
    sha = "e0e1f9fabfc9d4800c877a703b823ac0578ff8db"  # return 1
    for cmd in [
        ("SCRIPT", "EXISTS", sha), ("SCRIPT", "SHOW", sha), ("EVALSHA", sha, 0), ("EVALSHA_RO", sha, 0),
        ("SCRIPT", "LOAD", "return 1"), ("SCRIPT", "LOAD", "return 1"),
        ("SCRIPT", "EXISTS", sha, sha.upper(), "x", "", sha[:-1] + "X"),
        ("SCRIPT", "SHOW", sha), ("SCRIPT", "SHOW", sha.upper()), ("SCRIPT", "SHOW", "x"), ("SCRIPT", "SHOW"),
        ("SCRIPT", "SHOW", "a", "b"), ("EVALSHA", sha, 0), ("EVALSHA", sha.upper(), 0), ("EVALSHA_RO", sha, 0),
        ("EVALSHA", sha[:-1] + "X", 0), ("EVALSHA", "short", 0), ("EVALSHA", "short", "x"), ("EVALSHA", "short", 5),
        ("EVALSHA", "short", -1), ("EVALSHA", sha, 5), ("EVALSHA", sha[:-1] + "X", 5), ("EVALSHA", sha, "x"),
        ("EVALSHA", sha, -1), ("EVALSHA_RO", "nosuch", 0), ("EVALSHA",), ("EVALSHA", sha),
        ("SCRIPT", "LOAD", "return ("), ("SCRIPT", "LOAD", "#!lua flags=bad\nreturn 1"), ("SCRIPT", "LOAD", "#!lua"),
        ("SCRIPT", "LOAD", "#!py\nreturn 1"), ("SCRIPT", "LOAD"), ("SCRIPT", "LOAD", "a", "b"), ("SCRIPT", "EXISTS"),
        ("SCRIPT", "FLUSH", "foo"), ("SCRIPT", "FLUSH", "sync", "x"), ("SCRIPT", "FLUSH", "SYNC"),
        ("SCRIPT", "EXISTS", sha), ("EVAL", "return 1", 0), ("SCRIPT", "EXISTS", sha), ("SCRIPT", "SHOW", sha),
        ("SCRIPT", "FLUSH", "async"), ("SCRIPT", "EXISTS", sha), ("SCRIPT", "FLUSH"),
        ("SCRIPT", "KILL"), ("SCRIPT", "KILL", "x"), ("SCRIPT", "HELP"), ("SCRIPT", "HELP", "x"),
        ("SCRIPT", "NOSUCH"), ("SCRIPT",), ("script", "help"),
        ("EVAL", "return 1", "x"), ("EVAL", "return 1", -1), ("EVAL", "return 1", 1), ("EVAL", "return 1", "1.0"),
        ("EVAL", "return 1", " 1"), ("EVAL", "return 1", "99999999999999999999"), ("EVAL", "return (", "x"),
        ("EVAL", "return (", 5), ("EVAL", "#!lua flags=bad\nreturn 1", "x"), ("EVAL",), ("EVAL", "return 1"),
        ("EVAL_RO", "return 1", -1), ("EVAL", "return 1", 0, "extra", "args"),
    ]:
        sp.check(*cmd)


def test_script_and_select(sp) -> None:
    """A script's SELECT lasts for the script only; the caller stays in its db."""
    sp.check("SET", "a", "db0")
    ev(sp, "redis.call('SELECT', 1); redis.call('SET', 'a', 'db1'); return redis.call('GET', 'a')")
    sp.check("GET", "a")
    sp.check("SELECT", "1")
    sp.check("GET", "a")
    ev(sp, "return redis.call('GET', 'a')")
    ev(sp, "redis.call('SELECT', 0); return redis.call('GET', 'a')")
    sp.check("GET", "a")
    sp.check("SELECT", "0")


def test_time_stands_still_in_a_script(sp) -> None:
    """TIME and key expiry see the moment the script started."""
    spin = "local t = os.clock() while os.clock() - t < 0.03 do end "
    check_each(sp, [
        "redis.call('SET', 'k', 'v', 'PX', 5) " + spin + "return {redis.call('GET', 'k'), redis.call('EXISTS', 'k'), "
        "redis.call('PTTL', 'k')}",
        "redis.call('SET', 'k', 'v', 'PX', 1000) " + spin + "return {redis.call('PTTL', 'k'), redis.call('TTL', 'k')}",
        "local a = redis.call('TIME') " + spin + "local b = redis.call('TIME') return {a[1] == b[1], a[2] == b[2]}",
        "local a = redis.call('PEXPIRETIME', 'k') " + spin + "return a - redis.call('PEXPIRETIME', 'k')",
    ])


def test_eval_in_multi(sp) -> None:
    for cmd in [("MULTI",), ("EVAL", "return redis.call('SET', 'm', 1)", 0), ("EVAL", "return redis.call('nosuch')", 0),
                ("EVAL", "return (", 0), ("EVAL", "return 1", "x"), ("EVAL", "return redis.call('GET', 'm')", 0),
                ("EXEC",), ("MULTI",), ("EVALSHA", "e0e1f9fabfc9d4800c877a703b823ac0578ff8db", 0),
                ("SCRIPT", "LOAD", "return 1"), ("EVALSHA", "e0e1f9fabfc9d4800c877a703b823ac0578ff8db", 0),
                ("FCALL", "nosuch", 0), ("EXEC",), ("MULTI",), ("EVAL", "x", "y"), ("EVAL",), ("EXEC",),
                ("MULTI",), ("EVAL_RO", "return redis.call('SET', 'm', 2)", 0), ("EXEC",)]:
        sp.check(*cmd)


def test_error_statistics(sp2) -> None:
    """INFO errorstats: refusals counted when the command is refused, error
    replies inside a returned value counted unless flagged, codes taken as
    Valkey's afterErrorReply takes them."""
    sp = sp2
    sp.check("CONFIG", "RESETSTAT")
    sp.check("SET", "str", "x")
    for body in [
        "return {err='x'}", "return {err='NOSPACEATALL'}", "return {err='LONGCODEXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXX y'}",
        "return {1, {err='NESTED a'}, {err='NESTED b'}}", "return {err='IGN a', ignore_error_stats_update=true}",
        "return {err='IGN2 a', ignore_error_stats_update=1}", "error({err='IGN3 a', ignore_error_stats_update=true})",
        "return {map={k={err='INMAP x'}}}", "local e = redis.pcall('nosuch'); e.ignore_error_stats_update = false; "
        "return e", "error('x')", "error({err='NOSP'})", "return redis.call('nosuch')", "return redis.pcall('nosuch')",
        "return redis.call('INCR', 'str')", "return redis.pcall('INCR', 'str')",
        "local r = redis.pcall('INCR', 'str') return 1", "local r = redis.pcall() return 1", "return redis.pcall()",
        "return redis.call({})", "return redis.pcall('CONFIG', 'nosuch')", "return redis.log()", "return (",
        "return redis.error_reply('OTHER y')",
    ]:
        ev(sp, body)
    sp.check("EVALSHA", "f" * 40, 0)
    sp.check("EVAL_RO", "return redis.call('SET', 'a', 1)", 0)
    sp.check("EVAL_RO", "return redis.pcall('SET', 'a', 1)", 0)
    sp.check("INFO", "errorstats")


def _info_fields(reply: bytes, *names: str) -> list[bytes]:
    lines = reply.split(b"\r\n")
    return [line for line in lines if line.split(b":", 1)[0].decode(errors="replace") in names]


def _commandstats(reply: bytes) -> dict[bytes, bytes]:
    """cmdstat_<name> -> its calls, rejected and failed counts (not the times)."""
    out = {}
    for line in reply.split(b"\r\n"):
        if line.startswith(b"cmdstat_"):
            name, rest = line.split(b":", 1)
            fields = dict(kv.split(b"=") for kv in rest.split(b","))
            out[name] = b"%s/%s/%s" % (fields[b"calls"], fields[b"rejected_calls"], fields[b"failed_calls"])
    return out


def test_command_statistics(sp2) -> None:
    """INFO commandstats: a script's commands are counted (refusals as
    rejected calls), and EVAL/FCALL fail when their reply holds an error."""
    sp = sp2
    sp.check("SET", "str", "x")
    sp.check("FUNCTION", "LOAD", "#!lua name=l\nredis.register_function('f', function() return {err='x'} end)\n"
                                 "redis.register_function('g', function() return redis.call('PING') end)")
    for args in [
        ("EVAL", "return redis.pcall('nosuch')", 0), ("EVAL", "local x = redis.pcall('GET') return 1", 0),
        ("EVAL", "return redis.pcall('INCR', 'str')", 0), ("EVAL", "local x = redis.pcall('INCR', 'str') return 1", 0),
        ("EVAL", "return {err='IGN', ignore_error_stats_update=true}", 0), ("EVAL", "return {1, {err='y'}}", 0),
        ("EVAL", "error({err='IGN', ignore_error_stats_update=true})", 0), ("EVAL", "return redis.pcall()", 0),
        ("EVAL", "return (", 0), ("EVAL", "return 1", 0), ("EVAL", "redis.call('SET', 'a', 1) return 1", 0),
        ("EVAL_RO", "return redis.pcall('SET', 'a', 1)", 0), ("EVALSHA", "x", 0), ("FCALL", "f", 0), ("FCALL", "g", 0),
        ("FCALL", "nosuch", 0), ("EVAL", "return redis.pcall('CLIENT', 'ID')", 0),
    ]:
        sp.check("CONFIG", "RESETSTAT")
        sp.check(*args)
        v, t = sp.both("INFO", "commandstats")
        assert _commandstats(t) == _commandstats(v), args
        sp.check("INFO", "errorstats")


def test_script_cache_and_info_counters(sp2) -> None:
    """EVAL keeps at most 500 scripts (oldest evicted first), SCRIPT LOAD's
    are kept; INFO counts scripts, libraries, functions and evictions."""
    sp = sp2
    sp.check("CONFIG", "RESETSTAT")
    sp.check("SCRIPT", "LOAD", "return 'loaded'")
    sp.check("EVAL", "return 'promoted'", 0)
    sp.check("SCRIPT", "LOAD", "return 'promoted'")
    for i in range(505):
        sp.v.call("EVAL", f"return {i}", 0)
        sp.t.call("EVAL", f"return {i}", 0)
    sp.check("EVAL", "return 'kept'", 0)
    shas = [sp.check("SCRIPT", "LOAD", s).split(b"\r\n")[1] for s in ["return 'loaded'", "return 'promoted'"]]
    sp.check("SCRIPT", "EXISTS", *shas)
    sp.check("EVALSHA", "4ca238f611c9d0ae4e9a75a5dbac22aedc379801", 0)  # return 5: evicted
    sp.check("FUNCTION", "LOAD", "#!lua name=l\nredis.register_function('a', function() end)\n"
                                 "redis.register_function('B', function() end)")
    for section, names in [("memory", ("number_of_cached_scripts", "number_of_functions", "number_of_libraries")),
                           ("stats", ("evicted_scripts",))]:
        v, t = sp.both("INFO", section)
        assert _info_fields(t, *names) == _info_fields(v, *names) and len(_info_fields(v, *names)) == len(names)
    sp.check("CONFIG", "RESETSTAT")
    sp.check("SCRIPT", "FLUSH")
    sp.check("FUNCTION", "FLUSH")
    for section, names in [("memory", ("number_of_cached_scripts", "number_of_functions", "number_of_libraries")),
                           ("stats", ("evicted_scripts",))]:
        v, t = sp.both("INFO", section)
        assert _info_fields(t, *names) == _info_fields(v, *names) and len(_info_fields(v, *names)) == len(names)


# -- FUNCTION and FCALL ----------------------------------------------------------------------

LIB = """#!lua name=mylib
local function helper(x) return string.upper(x) end
local counter = 0
redis.register_function('echo_keys', function(keys, args) return {keys, args} end)
redis.register_function{function_name='ro_get', callback=function(keys, args)
  return redis.call('GET', keys[1]) end, flags={'no-writes'}, description='reads a key'}
redis.register_function{function_name='writer', callback=function(keys, args)
  return redis.call('SET', keys[1], args[1]) end}
redis.register_function('up', function(keys, args) return helper(args[1]) end)
redis.register_function('count', function() counter = counter + 1 return counter end)
redis.register_function('fail', function() return redis.call('nosuch') end)
redis.register_function('boom', function() error('boom') end)
redis.register_function('err_table', function() error({err='MY x'}) end)
redis.register_function('keys_global', function() return KEYS end)
redis.register_function('api', function() return {type(redis.breakpoint), type(redis.debug),
  type(redis.replicate_commands), type(redis.setresp), type(redis.register_function), redis.REPL_ALL,
  rawget(_G, '__server__err__handler'), rawget(_G, 'KEYS'), type(_G)} end)
redis.register_function('resp3', function() redis.setresp(3) return {true, false, redis.call('ZSCORE', 'z', 'm')} end)
redis.register_function('late', function() return redis.register_function('x', function() end) end)
"""


def test_function_library_and_fcall(sp) -> None:
    sp.check("ZADD", "z", "1.5", "m")
    for cmd in [
        ("FUNCTION", "LOAD", LIB), ("FUNCTION", "LOAD", LIB), ("FCALL", "echo_keys", 2, "a", "b", "c", "d"),
        ("FCALL", "echo_keys", 0), ("FCALL", "ECHO_KEYS", 0), ("FCALL_RO", "ro_get", 1, "k"),
        ("FCALL", "writer", 1, "k", "v"), ("FCALL_RO", "ro_get", 1, "k"), ("FCALL_RO", "writer", 1, "k", "v"),
        ("FCALL", "up", 0, "abc"),
        ("FCALL", "count", 0), ("FCALL", "count", 0), ("FCALL", "fail", 0), ("FCALL", "boom", 0),
        ("FCALL", "err_table", 0), ("FCALL", "keys_global", 0), ("FCALL", "api", 0), ("FCALL", "resp3", 0),
        ("FCALL", "late", 0), ("FCALL", "nosuch", 0), ("FCALL_RO", "nosuch", 0), ("FCALL", "count", "x"),
        ("FCALL", "count", -1), ("FCALL", "count", 5), ("FCALL", "count"), ("FCALL",), ("FCALL_RO", "count", 0),
        ("FUNCTION", "LOAD", "REPLACE", LIB), ("FCALL", "count", 0),
        ("FUNCTION", "STATS"), ("FUNCTION", "STATS", "x"), ("FUNCTION", "DELETE", "MYLIB"),
        ("FUNCTION", "DELETE", "mylib"), ("FUNCTION", "DELETE", "mylib"), ("FCALL", "count", 0),
        ("FUNCTION", "DELETE"), ("FUNCTION", "DELETE", "a", "b"), ("FUNCTION", "STATS"),
    ]:
        sp.check(*cmd)


def test_function_list(sp) -> None:
    """FUNCTION LIST: its RESP2/RESP3 shapes for one library with one
    function, WITHCODE, LIBRARYNAME (case-insensitive glob) and the refusals;
    several libraries compared as contents."""
    one = "#!lua name=lib1\nredis.register_function{function_name='f1', callback=function() end, " \
          "flags={'no-writes', 'allow-stale', 'allow-oom', 'no-cluster', 'allow-cross-slot-keys'}, description='d'}"
    two = "#!lua name=lib2\nredis.register_function('f2', function() end)"
    for cmd in [
        ("FUNCTION", "LIST"), ("FUNCTION", "LOAD", one), ("FUNCTION", "LIST"), ("FUNCTION", "LIST", "WITHCODE"),
        ("FUNCTION", "LOAD", two), ("FUNCTION", "LIST", "LIBRARYNAME", "lib1"),
        ("FUNCTION", "LIST", "LIBRARYNAME", "LIB2", "WITHCODE"), ("FUNCTION", "LIST", "withcode", "libraryname", "*2"),
        ("FUNCTION", "LIST", "LIBRARYNAME", "nomatch"), ("FUNCTION", "LIST", "LIBRARYNAME"),
        ("FUNCTION", "LIST", "WITHCODE", "WITHCODE"), ("FUNCTION", "LIST", "LIBRARYNAME", "x", "LIBRARYNAME", "y"),
        ("FUNCTION", "LIST", "FOO"), ("FUNCTION", "STATS"),
    ]:
        sp.check(*cmd)
    assert_same_contents(sp, "FUNCTION", "LIST", any_order=True)
    assert_same_contents(sp, "FUNCTION", "LIST", "WITHCODE", "LIBRARYNAME", "lib*", any_order=True)


def _lib(name: str, body: str) -> str:
    return f"#!lua name={name}\n{body}"


def _ok(name: str) -> str:
    return f"redis.register_function('f_{name}', function() return 1 end)"


def _rf(args: str) -> str:
    return "redis.register_function" + args


# (library name, code after its first line)
LOAD_CODE = [
    ("c1", "return ("), ("c2", ""), ("c3", "local x = 1"),
    ("r1", "local x = math.floor(1.5)\n" + _ok("r1")), ("r2", "local x = string"), ("r3", "redis.call('PING')"),
    ("r4", "redis.setresp(3)"), ("r5", "local x = _G"), ("r6", "local x = KEYS"), ("r7", "x = 1"),
    ("r8", "redis.x = 1"), ("r9", "local t = nil; t.x = 1"), ("r10", "error('x')"), ("r11", "local x = redis.sha1hex"),
    ("r12", "local x = redis.error_reply"), ("r13", "local x = redis.pcall"), ("r14", "local x = redis.REPL_ALL"),
    ("r15", "local x = redis.breakpoint"), ("r16", "local x = redis.acl_check_cmd"),
    ("r17", "redis.register_function = 1"),
    ("v1", "local x = {redis.log, redis.LOG_NOTICE, redis.REDIS_VERSION, redis.VALKEY_VERSION_NUM, redis.SERVER_NAME}"),
    ("g1", _rf("()")), ("g2", _rf("('a')")), ("g3", _rf("('a', 1)")), ("g4", _rf("('a', function() end, 3)")),
    ("g5", _rf("('a b', function() end)")), ("g6", _rf("('', function() end)")),
    ("g7", _rf("(1.5, function() end)")), ("g8", _rf("({}, function() end)")),
    ("g9", _rf("('n9', function() end)\n") + _rf("('n9', function() end)")),
    ("g10", _rf("('n10', function() end)\n") + _rf("('b a', function() end)")),
    ("g11", _rf("('n11', function() end) local x = 1 + {}")),
    ("h1", _rf("{function_name='a'}")), ("h2", _rf("{callback=function() end}")),
    ("h3", _rf("{function_name='a', callback=function() end, flags={'bad'}}")),
    ("h4", _rf("{function_name='a', callback=function() end, flags='no-writes'}")),
    ("h5", _rf("{function_name='a', callback=function() end, foo=1}")),
    ("h6", _rf("{function_name='a', callback=function() end, description={}}")),
    ("h7", _rf("{function_name={}, callback=function() end}")), ("h8", _rf("{function_name='a', callback=5}")),
    ("h9", _rf("{[1]='a', callback=function() end}")),
    ("h10", _rf("{function_name='a', callback=function() end, flags={1}}")),
    ("h11", _rf("{function_name='a', callback=function() end, flags={{}}}")),
    ("h12", _rf("{function_name='a b', callback=function() end}")),
    ("h13", _rf("{FUNCTION_NAME='fn13', CALLBACK=function() end, Flags={'No-Writes'}, DESCRIPTION=13.5}")),
    ("h14", _rf("{function_name=14, callback=function() end, description=redis.LOG_WARNING}")),
    ("h15", _rf("('fn15', redis.log)")),
    ("h16", "local rf = redis.register_function\nrf('fn16', function() return 16 end)"),
    ("mylib", _ok("dup")), ("other", _ok("dup")), ("other2", _ok("DUP")), ("mylib", _ok("dup2")),
]

METADATA = [
    _ok("nometa"), "", "#!lua", "#!lua name=", "#!lua\nx", "#!lua name=b-1\nx", "#!lua name=a name=b\nx",
    "#!lua NAME=upper\n" + _ok("upper"), "#!lua name=q foo=bar\nx", "#!lua name=q flags=no-writes\nx",
    "#!py name=q\nx", "#! name=q\nx", "#!\nx", "#!LUA name=engcase\n" + _ok("engcase"),
    "#!lua\tname=tab\n" + _ok("tab"), "#!lua name=cr\r\n" + _ok("cr"), "#!lua name=sp \n" + _ok("sp"),
    '#!lua "name=quoted"\n' + _ok("quoted"), '#!lua name="q2"\n' + _ok("q2"), '#!lua "unbalanced\nx',
    "#!lua name=q5 name\nx", "#!lua name=q6=x\nx", "#!lua name=nul\x00\nx",
]


def test_function_load_refusals(sp) -> None:
    """Metadata, compile and registration errors, in Valkey's order of checks;
    what a library sees while it loads; REPLACE; function name collisions
    (in any case)."""
    for code in METADATA:
        sp.check("FUNCTION", "LOAD", code)
    for name, body in LOAD_CODE:
        sp.check("FUNCTION", "LOAD", _lib(name, body))
    for cmd in [
        ("FUNCTION", "LOAD", "REPLACE", _lib("mylib", _ok("dup2"))), ("FCALL", "f_dup2", 0), ("FCALL", "f_dup", 0),
        ("FUNCTION", "LOAD", "REPLACE", _lib("mylib", "return (")), ("FCALL", "f_dup2", 0),
        ("FUNCTION", "LOAD", "REPLACE", _lib("other9", _ok("dup2"))), ("FCALL", "fn13", 0), ("FCALL", "14", 0),
        ("FCALL", "fn15", 0), ("FCALL", "fn16", 0), ("FUNCTION", "LOAD"), ("FUNCTION", "LOAD", "REPLACE"),
        ("FUNCTION", "LOAD", "FOO", _lib("z1", _ok("z1"))),
        ("FUNCTION", "LOAD", "REPLACE", "REPLACE", _lib("z2", _ok("z2"))),
        ("FUNCTION", "LOAD", "replace", _lib("z3", _ok("z3"))), ("FUNCTION", "LIST", "LIBRARYNAME", "h13"),
        ("FUNCTION", "LIST", "LIBRARYNAME", "h14"), ("FUNCTION", "LIST", "LIBRARYNAME", "v1"),
        ("FUNCTION", "FLUSH", "foo"), ("FUNCTION", "FLUSH", "sync", "x"), ("FUNCTION", "FLUSH", "ASYNC"),
        ("FUNCTION", "FLUSH", "sync"), ("FUNCTION", "KILL"), ("FUNCTION", "KILL", "x"), ("FUNCTION", "HELP"),
        ("FUNCTION", "HELP", "x"), ("FUNCTION", "NOSUCH"), ("FUNCTION",), ("FUNCTION", "STATS"),
    ]:
        sp.check(*cmd)


@pytest.mark.slow
def test_function_load_timeout(sp2) -> None:
    """A library's code may run 500 ms at FUNCTION LOAD, and no more."""
    for body in ["while true do end", "local function f() while true do end end\nf()"]:
        sp2.check("FUNCTION", "LOAD", "#!lua name=slow\n" + body)
    sp2.check("FUNCTION", "LIST")


# -- a runaway script ------------------------------------------------------------------------


def _busy_servers():  # type: ignore[no-untyped-def]
    return start_valkey("--busy-reply-threshold", "50"), start_trafikey("--busy-reply-threshold", "50")


def _start(proc, *args: object) -> Wire:  # type: ignore[no-untyped-def]
    w = Wire(proc.port)
    w.send_raw(encode(*args))  # type: ignore[arg-type]
    return w


@pytest.mark.slow
def test_busy_script_kill_and_shutdown() -> None:
    """A script running past busy-reply-threshold: other clients (already
    connected or connecting meanwhile) get BUSY, SCRIPT KILL / FUNCTION KILL
    act on their own kind only, the caller gets Valkey's error, a script that
    wrote is UNKILLABLE, and SHUTDOWN NOSAVE ends the server without a word
    to the caller. Math.random from a fresh server is compared first."""
    servers = _busy_servers()
    try:
        replies: list[list[object]] = []
        for proc in servers:
            out: list[object] = []
            w = Wire(proc.port)
            # a fresh server: Valkey's generator state from its start
            out.append(w.call("EVAL", "return {tostring(math.random()), math.random(10), math.random(5, 8)}", 0))
            out.append(w.call("FUNCTION", "LOAD",
                              "#!lua name=busy\nredis.register_function('spin', function() while true do end end)"))
            other = Wire(proc.port)

            # EVAL: BUSY to an existing and to a new connection; the wrong KILL; SCRIPT KILL
            caller = _start(proc, "EVAL", "local i = 0 while true do i = i + 1 end", 0)
            time.sleep(0.3)
            late = Wire(proc.port)
            for cmd in [("PING",), ("GET", "x"), ("FUNCTION", "KILL"), ("FUNCTION", "STATS"), ("MULTI",), ("PING",),
                        ("EXEC",)]:
                out.append(other.call(*cmd))
            out.append(late.call("PING"))
            out.append(late.call("SCRIPT", "KILL"))
            out.append(caller.read_reply())
            out.append(other.call("PING"))
            out.append(late.call("SCRIPT", "KILL"))
            out.append(caller.call("GET", "x"))

            # FCALL: FUNCTION KILL, not SCRIPT KILL; FUNCTION STATS answers
            caller = _start(proc, "FCALL", "spin", 0)
            time.sleep(0.3)
            out.append(other.call("PING"))
            out.append(other.call("SCRIPT", "KILL"))
            stats = other.call("FUNCTION", "STATS")
            out.append(stats.split(b"duration_ms")[0])
            out.append(other.call("FUNCTION", "KILL"))
            out.append(caller.read_reply())
            out.append(other.call("FUNCTION", "KILL"))

            # a killed script cannot be saved by pcall across lines (the line it is on ends normally), nor
            # by spinning in a coroutine
            caller = _start(proc, "EVAL", "local ok = pcall(function() while true do end end) return ok", 0)
            time.sleep(0.3)
            out.append(other.call("SCRIPT", "KILL"))
            out.append(caller.read_reply())
            for body in ["pcall(function() while true do end end)\nreturn 'after'",
                         "while true do\n pcall(function() while true do end end)\nend",
                         "local co = coroutine.wrap(function() while true do end end) co()",
                         "local co = coroutine.create(function() while true do end end) return {coroutine.resume(co)}",
                         "local t = {} for i = 1, 1e12 do t[i % 10] = i end"]:
                caller = _start(proc, "EVAL", body, 0)
                time.sleep(0.25)
                out.append(other.call("SCRIPT", "KILL"))
                out.append(caller.read_reply())
            out.append(other.call("PING"))

            # a script that wrote is unkillable; SHUTDOWN NOSAVE ends the server
            caller = _start(proc, "EVAL", "redis.call('SET', 'x', 1) while true do end", 0)
            time.sleep(0.3)
            out.append(other.call("SCRIPT", "KILL"))
            out.append(other.call("FUNCTION", "KILL"))
            other.send_raw(encode("SHUTDOWN", "NOSAVE"))
            out.append(other.read_until_closed())
            out.append(caller.read_until_closed())
            proc.proc.wait(10)
            out.append(proc.proc.returncode)
            replies.append(out)
        v, t = replies
        for i, (a, b) in enumerate(zip(v, t, strict=True)):
            assert b == a, f"step {i}\n valkey:   {a!r}\n trafikey: {b!r}"
    finally:
        for proc in servers:
            proc.stop()


@pytest.mark.parametrize("call", [
    ("EVAL_RO", "return redis.call('publish', 'ch', 'm')", "0"),
    ("EVAL_RO", "return redis.pcall('spublish', 'ch', 'm')", "0"),
    ("EVAL", "#!lua flags=no-writes\nreturn redis.call('publish', 'ch', 'm')", "0"),
    ("EVAL", "return redis.call('publish', 'ch', 'm')", "0"),
])
def test_read_only_scripts_may_not_publish(sp, call: tuple[str, ...]) -> None:
    """A read-only script treats may-replicate commands (PUBLISH, SPUBLISH)
    as writes and is refused them, as Valkey's scriptVerifyWriteCommandAllow."""
    sp.check(*call)
    sp.check("FUNCTION", "LOAD", "#!lua name=lib\nserver.register_function{function_name='pub', "
             "callback=function() return server.call('publish', 'ch', 'm') end, flags={'no-writes'}}")
    sp.check("FCALL_RO", "pub", "0")
    sp.check("FCALL", "pub", "0")

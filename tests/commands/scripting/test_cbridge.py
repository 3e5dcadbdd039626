"""server.call in C (execution/scripting/cbridge.pyx) against the pure
bridge in engine.py: the same random RESP2/RESP3 replies and script
arguments go through both, and what a script would see is compared exactly.

The module's two conversions are opened as Lua functions of a state of
their own (``trafikey_bridge_decode``, ``trafikey_bridge_argv``), as the
engine opens server.call itself; the pure side is engine.py's ``decode``
and ``_argv`` as ``_api_call`` and ``_api_pcall`` use them, given what lupa
hands Python. A value is compared from the Lua side: a Lua function writes
out every table (its `#` border, then its keys in a fixed order, with the
type and exact text of every value), so tables that differ only in what `#`
finds when a RESP3 null leaves a hole are told apart, as a script would.
"""

from __future__ import annotations

import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from lupa import lua51

from trafikey_server.execution.dispatch import execute
from trafikey_server.execution.scripting import engine
from trafikey_server.server import Server
from trafikey_server.services.client import Client
from trafikey_server.services.config import parse_args
from trafikey_server.util import native

cbridge = native.load("execution.scripting.cbridge")
pytestmark = pytest.mark.skipif(
    cbridge is None,
    reason="the cbridge kernel is not built (python3 setup.py build_ext --inplace) or TRAFIKEY_PURE_PYTHON is set",
)

LUA = lua51.LuaRuntime(encoding=None, unpack_returned_tuples=True, register_eval=False, register_builtins=False)
TABLE_FROM = LUA.table_from
# As the prelude's array(...): a table of exactly its arguments, nils kept.
ARRAY = LUA.eval("function(...) return {...} end")
# As the prelude's hashed(k, v, ...): a table of those pairs (DUMP sorts
# entries, so the order a sized table would give does not matter here).
HASHED = LUA.eval("function(...) local t = {} for i = 1, select('#', ...), 2 do "
                  "t[(select(i, ...))] = (select(i + 1, ...)) end return t end")
DUMP = LUA.eval(r"""
function(v)
    local out = {}
    local function dump(v)
        local t = type(v)
        if t == "table" then
            -- entries in the order of their text: tables as keys have no other
            local entries = {}
            for k, x in pairs(v) do
                local saved = out
                out = {" ["}
                dump(k)
                out[#out + 1] = "]="
                dump(x)
                entries[#entries + 1] = table.concat(out)
                out = saved
            end
            table.sort(entries)
            out[#out + 1] = "{#" .. #v .. table.concat(entries) .. "}"
        elseif t == "string" then
            out[#out + 1] = string.format("%q", v)
        elseif t == "number" then
            out[#out + 1] = "n" .. string.format("%.17g", v)
        else
            out[#out + 1] = t .. ":" .. tostring(v)
        end
    end
    dump(v)
    return table.concat(out)
end
""")
# (raised?, what a script sees) of a Lua function called under pcall
SEEN = LUA.eval("function(dump, f, ...) local ok, v = pcall(f, ...) return not ok, dump(v) end")


def _opened(name: str) -> Any:
    assert cbridge is not None
    assert cbridge.bind(lua51.__file__)
    f = LUA.eval("package.loadlib")(cbridge.__file__.encode(), name.encode())
    assert not isinstance(f, tuple), f  # (nil, message, where): not loaded
    return f


C_DECODE = _opened("trafikey_bridge_decode") if cbridge is not None else None
C_ARGV = _opened("trafikey_bridge_argv") if cbridge is not None else None

_text = st.binary(max_size=12).filter(lambda b: b"\r" not in b and b"\n" not in b)
_bulk = st.binary(max_size=20)


def _bulk_of(b: bytes) -> bytes:
    return b"$%d\r\n%s\r\n" % (len(b), b)


_integers = st.integers(-2**63, 2**63 - 1).map(lambda n: b":%d\r\n" % n)
_scalars = st.one_of(
    _bulk.map(_bulk_of),
    st.just(b"$-1\r\n"),
    _integers,
    _text.map(lambda t: b"+" + t + b"\r\n"),
    _text.map(lambda t: b"-" + t + b"\r\n"),
    st.sampled_from([b"-ERR no\0such\r\n", b"-WRONGTYPE Operation against a key\r\n", b"-NOSPACE\r\n"]),
    st.just(b"_\r\n"),
    st.sampled_from([b"#t\r\n", b"#f\r\n"]),
    st.floats(allow_nan=False).map(lambda d: b"," + repr(d).encode() + b"\r\n"),
    st.sampled_from([b",inf\r\n", b",-inf\r\n", b",nan\r\n", b",1e300\r\n", b",-0\r\n"]),
    st.integers(-10**40, 10**40).map(lambda n: b"(%d\r\n" % n),
    st.tuples(st.sampled_from([b"txt", b"mkd"]), _bulk).map(
        lambda p: b"=%d\r\n%s:%s\r\n" % (len(p[1]) + 4, p[0], p[1])),
)
# A map's or a set's keys: values Python's dict keeps apart as Lua's tables
# do (the pure path keys a dict: 1 and true, 0 and false are one key there).
_keys = st.one_of(_bulk.map(_bulk_of), _integers, _text.map(lambda t: b"+" + t + b"\r\n"))


def _aggregates(children: st.SearchStrategy[bytes]) -> st.SearchStrategy[bytes]:
    return st.one_of(
        st.lists(children, max_size=6).map(lambda xs: b"*%d\r\n" % len(xs) + b"".join(xs)),
        st.just(b"*-1\r\n"),
        st.lists(st.tuples(_keys, children), max_size=4).map(
            lambda ps: b"%%%d\r\n" % len(ps) + b"".join(k + v for k, v in ps)),
        st.lists(_keys, max_size=4).map(lambda xs: b"~%d\r\n" % len(xs) + b"".join(xs)),
    )


REPLIES = st.recursive(_scalars, _aggregates, max_leaves=25)


def _pure(reply: bytes, protected: bool) -> tuple[bool, bytes]:
    """engine.decode's value as _api_call (raising) or _api_pcall gives it."""
    saved = engine._ARRAY, engine._HASHED
    engine._ARRAY, engine._HASHED = ARRAY, HASHED  # as the engine sets them from its prelude
    try:
        kind, v = engine.decode(reply, TABLE_FROM)
    finally:
        engine._ARRAY, engine._HASHED = saved
    if kind == 1:
        v = TABLE_FROM({b"ok": v})
    elif kind == 2:
        v = TABLE_FROM({b"err": engine._error_text(v), b"ignore_error_stats_update": True})
        return not protected, DUMP(v)
    return False, DUMP(v)


def _compiled(reply: bytes, protected: bool) -> tuple[bool, bytes]:
    raised, seen = SEEN(DUMP, C_DECODE, reply, protected or None)
    return bool(raised), seen


@settings(max_examples=300, deadline=None)
@given(reply=REPLIES, protected=st.booleans())
def test_reply_seen_alike(reply: bytes, protected: bool) -> None:
    assert _compiled(reply, protected) == _pure(reply, protected), reply


def test_reply_examples() -> None:
    """A few values written out by hand, so the comparison cannot pass on
    two paths that agree on something wrong."""
    assert _compiled(b"$3\r\nabc\r\n", False) == (False, b'"abc"')
    assert _compiled(b"$-1\r\n", False) == (False, b"boolean:false")
    assert _compiled(b":-12\r\n", False) == (False, b"n-12")
    assert _compiled(b"+OK\r\n", False) == (False, b'{#0 ["ok"]="OK"}')
    err = b'{#0 ["err"]="ERR boom" ["ignore_error_stats_update"]=boolean:true}'
    assert _compiled(b"-ERR boom\r\n", True) == (False, err)
    assert _compiled(b"-ERR boom\r\n", False)[0] is True
    assert _compiled(b"*3\r\n:1\r\n_\r\n$1\r\nx\r\n", False) == (False, b'{#3 [n1]=n1 [n3]="x"}')
    assert _compiled(b"%1\r\n$1\r\nk\r\n#t\r\n", False) == (False, b'{#0 ["map"]={#0 ["k"]=boolean:true}}')


def test_malformed_replies_alike() -> None:
    """Replies no command writes: where the pure path raises, the C one
    raises a Lua error, and neither reads past the buffer."""
    for reply in (b"|1\r\n+a\r\n:1\r\n", b"*1\r\n>1\r\n+x\r\n", b"*2\r\n:1\r\n", b"", b"$", b"*1\r\n$5\r\nab",
                  b"*99999999999\r\n", b":99999999999999999999\r\n"):
        raised, seen = SEEN(DUMP, C_DECODE, reply, True)
        try:
            pure = _pure(reply, True)
        except (IndexError, ValueError, OverflowError):
            assert raised, reply
            assert seen.startswith(b'{#0 ["err"]="ERR '), seen
        else:
            assert (bool(raised), seen) == pure, reply
    # A null key (no command writes one): no entry, where Lua would refuse a nil key.
    assert SEEN(DUMP, C_DECODE, b"%1\r\n_\r\n:1\r\n", True) == (False, b'{#0 ["map"]={#0}}')


# What a script can pass: strings, numbers, booleans, nil, and tables.
_doubles = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([-0.0, math.nan, -math.nan, 2.0**62, 2.0**62 + 2048, -(2.0**62), 2.0**63, 1e15 + 0.5, 0.1]),
)
ARGS = st.lists(st.one_of(
    st.binary(max_size=10),
    st.integers(-2**53, 2**53),
    _doubles,
    st.booleans(),
    st.none(),
    st.just(TABLE_FROM([b"t"])),
), max_size=8).map(tuple)

# Both conversions of the same Lua values: the C one reads the Lua stack,
# the pure one takes what lupa makes of them (as lupa calls _api_call).
BOTH = LUA.eval("function(c, p, ...) return c(...), p(...) end")


def _pure_argv(*args: Any) -> Any:
    return engine._argv(args)


def _argv_alike(args: tuple[Any, ...]) -> None:
    compiled, pure = BOTH(C_ARGV, _pure_argv, *args)
    if not isinstance(compiled, bytes):
        compiled = [compiled[i] for i in range(1, len(compiled) + 1)]
    assert compiled == pure, args


@settings(max_examples=300, deadline=None)
@given(args=ARGS)
def test_argv_alike(args: tuple[Any, ...]) -> None:
    _argv_alike(args)


def test_argv_examples() -> None:
    neg = -math.nan if math.copysign(1.0, -math.nan) < 0 else math.copysign(math.nan, -1.0)
    for args in ((b"SET", b"k", neg), (b"SET", b"k", math.nan), (b"SET", b"k", -0.0), (), (b"GET", None),
                 (b"SET", 2.0**63), (b"SET", 0.1), (b"X",) * 5000):
        _argv_alike(args)
    compiled, _ = BOTH(C_ARGV, _pure_argv, b"INCRBY", b"k", 3, 2.5, -0.0)
    assert [compiled[i] for i in range(1, 6)] == [b"INCRBY", b"k", b"3", b"2.5", b"0"]


def test_a_server_runs_scripts_through_the_c_bridge() -> None:
    """Built, the engine's server.call is the C one (a failed bind would
    quietly keep lupa's bridge), and it runs commands end to end."""
    s = Server(parse_args(["--save", ""]))
    assert s.scripting.c_bridge
    c = Client(s, s.next_client_id())
    body = (b"redis.call('hset', KEYS[1], 'f', ARGV[1]) "
            b"local ok, e = pcall(redis.call, 'incr', KEYS[1]) "
            b"return {redis.call('hmget', KEYS[1], 'f', 'g'), e, redis.pcall('nosuch')}")
    assert execute(c, [b"EVAL", body, b"1", b"h", b"v"]) == (
        b"*3\r\n*2\r\n$1\r\nv\r\n$-1\r\n"
        b"$65\r\nWRONGTYPE Operation against a key holding the wrong kind of value\r\n"
        b"-ERR Unknown command called from script\r\n")

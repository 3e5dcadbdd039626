"""The compiled call bridge (execution/scripting/cbridge.pyx) against the
pure one in engine.py: the same random RESP2/RESP3 replies and script
arguments go through both, and what a script would see is compared exactly.

A reply's Lua value is compared from the Lua side: a Lua function writes out
every table (its `#` border, then its keys in a fixed order, with the type
and exact text of every value), so a table made by ``table_from`` and one
made by the prelude's ``array`` (which differ only in what `#` finds when a
RESP3 null leaves a hole) are told apart, as a script would tell them apart.
"""

from __future__ import annotations

import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from lupa import lua51

from trafikey_server.execution.scripting import engine
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

_text = st.binary(max_size=12).filter(lambda b: b"\r" not in b and b"\n" not in b)
_bulk = st.binary(max_size=20)


def _bulk_of(b: bytes) -> bytes:
    return b"$%d\r\n%s\r\n" % (len(b), b)


_scalars = st.one_of(
    _bulk.map(_bulk_of),
    st.just(b"$-1\r\n"),
    st.integers(-2**70, 2**70).map(lambda n: b":%d\r\n" % n),
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


def _aggregates(children: st.SearchStrategy[bytes]) -> st.SearchStrategy[bytes]:
    return st.one_of(
        st.lists(children, max_size=6).map(lambda xs: b"*%d\r\n" % len(xs) + b"".join(xs)),
        st.just(b"*-1\r\n"),
        st.lists(st.tuples(children, children), max_size=4).map(
            lambda ps: b"%%%d\r\n" % len(ps) + b"".join(k + v for k, v in ps)),
        st.lists(children, max_size=4).map(lambda xs: b"~%d\r\n" % len(xs) + b"".join(xs)),
    )


REPLIES = st.recursive(_scalars, _aggregates, max_leaves=25)


def _seen(decoder: Any, reply: bytes) -> tuple[int, str]:
    kind, value = decoder(reply, TABLE_FROM)
    return kind, DUMP(value)


def _outcome(fn: Any, *args: Any) -> tuple[str, Any]:
    try:
        return "ok", fn(*args)
    except Exception as e:  # the same refusal on both paths, text and class
        return type(e).__name__, str(e)


@settings(max_examples=200, deadline=None)
@given(reply=REPLIES, with_array=st.booleans())
def test_decode_matches_pure(reply: bytes, with_array: bool) -> None:
    array = ARRAY if with_array else None
    saved = engine._ARRAY
    engine._ARRAY = array
    cbridge.set_array(array)
    try:
        pure = _outcome(_seen, engine.decode, reply)
        compiled = _outcome(_seen, cbridge.decode, reply)
    finally:
        engine._ARRAY = saved
        cbridge.set_array(saved)
    assert compiled == pure, reply


def test_decode_malformed_alike() -> None:
    for reply in (b"|1\r\n+a\r\n:1\r\n", b"*1\r\n>1\r\n+x\r\n", b"*2\r\n:1\r\n", b"", b"$", b"*1\r\n$5\r\nab"):
        assert _outcome(_seen, cbridge.decode, reply) == _outcome(_seen, engine.decode, reply), reply


# What lupa hands Python for a script's arguments: strings, numbers (int
# when integral), booleans, nil, and tables or functions (other objects).
_doubles = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([-0.0, math.nan, -math.nan, 2.0**62, 2.0**62 + 2048, -(2.0**62), 2.0**63, 1e15 + 0.5, 0.1]),
)
ARGS = st.lists(st.one_of(
    st.binary(max_size=10),
    st.integers(-2**53, 2**53),
    _doubles.filter(lambda d: d != d or d in (math.inf, -math.inf) or d != int(d)),
    _doubles.filter(lambda d: d == d and d not in (math.inf, -math.inf) and d == int(d)).map(int),
    st.booleans(),
    st.none(),
    st.just(TABLE_FROM([b"t"])),
), max_size=8).map(tuple)


@settings(max_examples=200, deadline=None)
@given(args=ARGS)
def test_argv_matches_pure(args: tuple[Any, ...]) -> None:
    assert cbridge.argv(args) == engine._argv(args)


def test_argv_signed_nan_alike() -> None:
    neg = -math.nan if math.copysign(1.0, -math.nan) < 0 else math.copysign(math.nan, -1.0)
    for args in ((b"SET", b"k", neg), (b"SET", b"k", math.nan), (b"SET", b"k", -0.0)):
        assert cbridge.argv(args) == engine._argv(args)

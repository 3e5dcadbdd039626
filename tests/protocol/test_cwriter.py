"""The compiled reply writer (protocol/cwriter.pyx) against RESP's own rules.

``bulks``/``bulk_run`` (LRANGE, SMEMBERS, MGET, ...) and ZRANGE's RESP2
WITHSCORES reply are written by the kernel when it is built. Every item
length (empty, one header digit, past the pure code's 1,024-byte table),
bytes and bytearray items, lists and tuples, and scores of every kind
(integral on both sides of 2^53, negative, zero and minus zero, fractions,
infinities) must give the bytes RESP defines, with the score text of
``format_double`` (Valkey's d2string); an input the kernel does not take is
handed back (None) for the pure code to answer.
"""

from __future__ import annotations

import importlib
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from trafikey_server.util import native
from trafikey_server.util.floats import format_double

if "protocol.cwriter" not in native.built():
    pytest.skip("the protocol.cwriter kernel is not built (python3 setup.py build_ext --inplace)",
                allow_module_level=True)
cwriter = importlib.import_module("trafikey_server.protocol.cwriter")


def _bulk(b: bytes | bytearray) -> bytes:
    return b"$" + str(len(b)).encode() + b"\r\n" + bytes(b) + b"\r\n"


item = st.one_of(st.binary(max_size=20), st.binary(min_size=1000, max_size=1100),
                 st.binary(max_size=20).map(bytearray))


@settings(max_examples=300, deadline=None)
@given(st.lists(item, max_size=40), st.booleans())
def test_bulks_are_resp(items: list[bytes | bytearray], as_tuple: bool) -> None:
    seq = tuple(items) if as_tuple else items
    run = b"".join(map(_bulk, items))
    assert cwriter.bulk_run(seq) == run
    assert cwriter.bulks(seq) == b"*" + str(len(items)).encode() + b"\r\n" + run


def test_what_it_does_not_take_is_handed_back() -> None:
    assert cwriter.bulks([b"a", "b"]) is None
    assert cwriter.bulk_run([b"a", memoryview(b"b")]) is None
    assert cwriter.bulks(iter([b"a"])) is None
    assert cwriter.pairs2([(1.0, "m")], format_double) is None
    assert cwriter.pairs2([(1, b"m")], format_double) is None


score = st.one_of(
    st.integers(-(2**60), 2**60).map(float),
    st.sampled_from([0.0, -0.0, 1.0, -1.0, 2.0**53, -(2.0**53), 2.0**53 - 1, 2.0**63, math.inf, -math.inf,
                     0.1, 1.5, -2.5e-300, 1e300]),
    st.floats(allow_nan=False),
)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(score, st.binary(max_size=12)), max_size=30))
def test_scored_pairs_are_resp2(pairs: list[tuple[float, bytes]]) -> None:
    expected = b"*" + str(2 * len(pairs)).encode() + b"\r\n" + b"".join(
        _bulk(m) + _bulk(format_double(s)) for s, m in pairs)
    assert cwriter.pairs2(pairs, format_double) == expected


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.integers(-2**63, 2**63 - 1), st.sampled_from([0, -1, 9, 10, -10, 2**63 - 1, -2**63])))
def test_integer_is_resp_integer(n: int) -> None:
    assert cwriter.integer(n) == b":" + str(n).encode() + b"\r\n"


def test_integer_refuses_past_64_bits() -> None:
    for n in (2**63, -2**63 - 1):
        with pytest.raises(OverflowError):
            cwriter.integer(n)


@settings(max_examples=300, deadline=None)
@given(item)
def test_bulk_is_resp_bulk(b: bytes | bytearray) -> None:
    assert cwriter.bulk(b) == _bulk(b)


def test_bulk_hands_back_what_it_does_not_take() -> None:
    for o in (memoryview(b"x"), "x", 1, None):
        assert cwriter.bulk(o) is None

"""The compiled bit kernels (util/cbits.pyx) against the pure code they stand in for.

BITCOUNT counts with ``popcount``, PFADD hashes with ``pat_len`` (and sets
dense registers with ``dense_add``), PFADD and PFCOUNT test a value with
``hll_encoding``, every integer argument is read by
``string2ll`` and every plain score by ``string2d`` when the kernel is built;
the pure ``_popcount`` (commands/bitmap.py), ``murmur64a``/``pat_len``/
``_dense_set``/``hll_encoding`` (values/hyperloglog.py), ``_to_int`` (util/parsing.py) and
``parse_double`` (util/floats.py, run from its source) answer otherwise. Every
length, alignment and bit range is covered here, including the word-sized
loop's edges; the replies themselves are held to Valkey's by the command tests.
"""

from __future__ import annotations

import importlib
import importlib.util
from pathlib import Path
from types import ModuleType

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from trafikey_server.commands.bitmap import _popcount
from trafikey_server.util import floats as floats_module
from trafikey_server.util import native
from trafikey_server.util.parsing import _to_int
from trafikey_server.values import hyperloglog as hll

if "util.cbits" not in native.built():
    pytest.skip("the util.cbits kernel is not built (python3 setup.py build_ext --inplace)",
                allow_module_level=True)
cbits = importlib.import_module("trafikey_server.util.cbits")


@settings(max_examples=400, deadline=None)
@given(st.binary(min_size=1, max_size=300), st.data())  # past 64 bytes: the popcnt loop
def test_popcount_agrees_on_every_range(v: bytes, data: st.DataObject) -> None:
    total = len(v) * 8
    lo = data.draw(st.integers(0, total - 1))
    hi = data.draw(st.integers(lo, total - 1))
    assert cbits.popcount(v, lo, hi) == _popcount(v, lo, hi)
    assert cbits.popcount(bytearray(v), lo, hi) == _popcount(bytearray(v), lo, hi)


def test_popcount_of_a_large_string_by_hand() -> None:
    v = b"\x5a" * 12_500 + b"\xff"  # 4 bits a byte, then 8
    assert cbits.popcount(v, 0, len(v) * 8 - 1) == 12_500 * 4 + 8
    assert cbits.popcount(v, 1, 6) == 4  # 0101 1010: bits 1..6 are 101101


@settings(max_examples=400, deadline=None)
@given(st.binary(max_size=40))
def test_the_hash_agrees_at_every_length(ele: bytes) -> None:
    assert cbits.murmur64a(ele) == hll.murmur64a(ele)
    assert cbits.pat_len(ele) == hll.pat_len(ele)


def test_pat_len_stays_in_range() -> None:
    for i in range(2_000):
        index, count = cbits.pat_len(b"element:%d" % i)
        assert 0 <= index < hll.REGISTERS
        assert 1 <= count <= hll.Q + 1


# Integer texts at Valkey's edges: signs, leading zeros, 19 and 20 digits,
# the signed 64-bit limits and one past each.
_EDGES = [b"", b"0", b"-0", b"00", b"01", b"-", b"+1", b" 1", b"1 ", b"1_0", b"12a", b"-01", b"9" * 18, b"9" * 19,
          b"9223372036854775807", b"9223372036854775808", b"-9223372036854775808", b"-9223372036854775809",
          b"18446744073709551616", b"-" + b"1" * 19, b"1" * 20, b"1" * 21, b"\xd9\xa3", b"\x00"]


@pytest.mark.parametrize("text", _EDGES)
def test_string2ll_agrees_at_the_edges(text: bytes) -> None:
    assert cbits.string2ll(text) == _to_int(text)
    assert cbits.string2ll(bytearray(text)) == _to_int(bytearray(text))


def test_string2ll_edges_by_hand() -> None:
    assert cbits.string2ll(b"9223372036854775807") == 2**63 - 1
    assert cbits.string2ll(b"-9223372036854775808") == -(2**63)
    assert cbits.string2ll(b"9223372036854775808") is None
    assert cbits.string2ll(b"-0") is None
    assert cbits.string2ll(b"007") is None


@settings(max_examples=600, deadline=None)
@given(st.one_of(st.integers(-(2**64), 2**64).map(lambda n: b"%d" % n),
                 st.binary(max_size=22),
                 st.text("-0123456789", max_size=21).map(str.encode)))
def test_string2ll_agrees_on_any_bytes(text: bytes) -> None:
    assert cbits.string2ll(text) == _to_int(text)


def _dense(registers: list[int]) -> bytearray:
    """A dense HLL value holding these registers (the header's cache stale)."""
    v = bytearray(b"HYLL" + bytes(12)) + bytearray(hll.DENSE_BYTES)
    for i, r in enumerate(registers):
        hll._dense_set(v, i, r)
    return v


@settings(max_examples=150, deadline=None)
@given(st.integers(0, 51), st.dictionaries(st.integers(0, hll.REGISTERS - 1), st.integers(0, 51), max_size=300),
       st.lists(st.binary(max_size=24), max_size=60))
def test_dense_add_raises_the_registers_pure_code_raises(fill: int, some: dict[int, int],
                                                         elements: list[bytes]) -> None:
    registers = [fill] * hll.REGISTERS
    for i, r in some.items():
        registers[i] = r
    ours = _dense(registers)
    theirs = bytearray(ours)
    raised = 0
    for e in elements:
        index, count = hll.pat_len(e)
        raised += hll._dense_set(theirs, index, count)
    assert cbits.dense_add(ours, elements) == raised
    assert ours == theirs


def test_dense_add_reaches_every_register_edge() -> None:
    """Elements landing on the last register and on registers that straddle
    two bytes, from empty: each raised once, then never again."""
    v = _dense([0] * hll.REGISTERS)
    elements = [b"e:%d" % i for i in range(20_000)]
    pure = bytearray(v)
    for e in elements:
        hll._dense_set(pure, *hll.pat_len(e))
    first = cbits.dense_add(v, elements)
    assert v == pure and first > 10_000
    assert cbits.dense_add(v, elements) == 0


def test_dense_add_refuses_what_is_not_dense() -> None:
    with pytest.raises(ValueError):
        cbits.dense_add(hll.new_sparse(), [b"a"])
    with pytest.raises(TypeError):
        cbits.dense_add(_dense([0] * hll.REGISTERS), ["a"])


def _pure_floats() -> ModuleType:
    """util/floats.py run from its source with no kernel: the reference."""
    source = Path(native.PACKAGE_DIR) / "util" / "floats.py"  # a compiled module's __file__ is its build's
    spec = importlib.util.spec_from_file_location("trafikey_server.util.floats_reference", source)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    mod._k = None
    return mod


_PURE_FLOATS = _pure_floats()
_FLOAT_EDGES = [b"1", b"-1", b"+1", b".5", b"5.", b"-.5", b"1e5", b"1E+05", b"1e-310", b"1e-400", b"1e400", b"-1e400",
                b"0", b"-0", b"0.0", b"0e10", b"inf", b"-inf", b"+infinity", b"nan", b" 1", b"1 ", b"1_0", b"1\x00",
                b"0x10", b"1e", b"e1", b"-", b".", b"", b"123456789012345678901234567890", b"2.5e-324", b"4.9e-324",
                b"1.7976931348623157e308", b"1.7976931348623159e308", b"\xd9\xa3", b"1.5", b"13.361389"]


@pytest.mark.parametrize("text", _FLOAT_EDGES)
def test_string2d_answers_only_what_the_pure_parse_accepts(text: bytes) -> None:
    x = cbits.string2d(text)
    assert x is None or x == _PURE_FLOATS.parse_double(text)
    assert _PURE_FLOATS.parse_double(text) == floats_module.parse_double(text)


def test_string2d_takes_the_plain_literals() -> None:
    for text in (b"1", b"-2.5", b"13.361389", b"1e-310", b".5", b"5.", b"+7"):
        assert cbits.string2d(text) == float(text)
    for text in (b"0", b"-0.0", b"inf", b"nan", b"1e400", b" 1", b"1_0", b"1\x00"):
        assert cbits.string2d(text) is None


@settings(max_examples=600, deadline=None)
@given(st.one_of(st.floats(allow_nan=False).map(lambda f: repr(f).encode()),
                 st.integers(-(2**70), 2**70).map(lambda n: b"%d" % n),
                 st.text("0123456789+-.eE_ inaf", max_size=14).map(str.encode),
                 st.binary(max_size=12)))
def test_string2d_agrees_with_the_pure_parse(text: bytes) -> None:
    x = cbits.string2d(text)
    assert x is None or x == _PURE_FLOATS.parse_double(text)
    assert floats_module.parse_double(text) == _PURE_FLOATS.parse_double(text)


def _hll_shapes() -> list[object]:
    dense = _dense([3] * hll.REGISTERS)
    sparse = hll.new_sparse()
    out: list[object] = [b"", b"HYLL", bytes(sparse), sparse, bytes(dense), dense, dense[:-1], dense + b"\0",
                         b"HYLL\x02" + bytes(11), b"HYLX\x01" + bytes(11), b"HYLL\x00" + bytes(11),
                         b"HYLL\x01" + bytes(10), b"hyll\x01" + bytes(11), "HYLL\x01" + "\0" * 11, 7, None]
    return out


@pytest.mark.parametrize("v", _hll_shapes(), ids=repr)
def test_hll_encoding_tells_what_the_pure_test_tells(v: object) -> None:
    if type(v) not in (bytes, bytearray):
        assert cbits.hll_encoding(v) == -1
        return
    assert cbits.hll_encoding(v) == hll.hll_encoding(v)  # type: ignore[arg-type]


def test_hll_encoding_names_each_encoding() -> None:
    assert cbits.hll_encoding(hll.new_sparse()) == hll.SPARSE
    assert cbits.hll_encoding(_dense([0] * hll.REGISTERS)) == hll.DENSE
    assert cbits.hll_encoding(b"HYLL\x00" + bytes(11)) == -1


def _pfadd_batches(kernel: bool, batches: list[list[bytes]], max_bytes: int) -> list[object]:
    """Each batch through sparse_add (the kernel's or the pure one) until the
    value would turn dense: the answers and the value after each."""
    v = hll.new_sparse()
    seen: list[object] = []
    for batch in batches:
        done = cbits.sparse_add(v, batch, max_bytes) if kernel else hll.sparse_add(v, batch, max_bytes)
        seen.append((done, bytes(v)))
        if done is None or done[1] < len(batch):
            break
    return seen


@settings(max_examples=200, deadline=None)
@given(st.lists(st.lists(st.integers(0, 4_000).map(lambda i: b"e:%d" % i), min_size=1, max_size=12),
                max_size=120),
       st.sampled_from([20, 40, 100, 300, 3000]))
def test_sparse_add_edits_the_opcodes_the_pure_edits_make(batches: list[list[bytes]], max_bytes: int) -> None:
    """Valkey's sparse edits byte for byte (splits, merges of equal VALs,
    XZERO and ZERO runs) and the element at which each would promote."""
    assert _pfadd_batches(True, batches, max_bytes) == _pfadd_batches(False, batches, max_bytes)


def test_sparse_add_runs_until_the_value_turns_dense() -> None:
    elements = [b"element:%012d" % i for i in range(5_000)]
    ours, theirs = hll.new_sparse(), hll.new_sparse()
    taken = 0
    while taken < len(elements):
        batch = elements[taken:taken + 7]
        done = cbits.sparse_add(ours, batch, 3000)
        assert done == hll.sparse_add(theirs, batch, 3000)
        assert ours == theirs
        assert done is not None
        taken += done[1]
        if done[1] < len(batch):
            break
    assert 1_000 < taken < 5_000 and len(ours) <= 3000
    assert ours[15] & 0x80  # the cached count marked stale


def test_sparse_add_leaves_what_is_not_a_whole_sparse_value() -> None:
    whole = hll.new_sparse()
    short = bytearray(b"HYLL\x01" + bytes(11) + b"\x7f")  # an XZERO cut short
    under = bytearray(b"HYLL\x01" + bytes(11) + b"\x7f\xfe")  # 16383 registers
    dense = _dense([0] * hll.REGISTERS)
    for v in (short, under, dense):
        before = bytes(v)
        assert cbits.sparse_add(v, [b"a"], 3000) is None and hll.sparse_add(v, [b"a"], 3000) is None
        assert v == before
    assert cbits.sparse_add(whole, [b"a"], 3000) == (1, 1)
    with pytest.raises(TypeError):
        cbits.sparse_add(hll.new_sparse(), ["a"], 3000)

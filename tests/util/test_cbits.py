"""The compiled bit kernels (util/cbits.pyx) against the pure code they stand in for.

BITCOUNT counts with ``popcount`` and PFADD hashes with ``pat_len`` when the
kernel is built; the pure ``_popcount`` (commands/bitmap.py) and
``murmur64a``/``pat_len`` (values/hyperloglog.py) answer otherwise. Every
length, alignment and bit range is covered here, including the word-sized
loop's edges; the replies themselves are held to Valkey's by the command tests.
"""

from __future__ import annotations

import importlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from trafikey_server.commands.bitmap import _popcount
from trafikey_server.util import native
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

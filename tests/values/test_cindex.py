"""The compiled sorted-set index (values/cindex.pyx) against SortedList.

values/zset.py uses ``ScoreIndex`` in place of sortedcontainers' SortedList
of ``(score, member)`` pairs when the kernel is built, so both must answer
every call the sorted set makes identically: same pairs, in the same order,
with the same sign of zero, and the same exceptions. The same random
operation sequences drive both; sets grow past many blocks and shrink back to
empty. Results are compared by repr, which tells -0.0 from 0.0.
"""

from __future__ import annotations

import copy
import importlib
import random
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sortedcontainers import SortedList

from trafikey_server.util import native

if "values.cindex" not in native.built():
    pytest.skip("the values.cindex kernel is not built (python3 setup.py build_ext --inplace)",
                allow_module_level=True)
ScoreIndex = importlib.import_module("trafikey_server.values.cindex").ScoreIndex

INF = float("inf")
# Few scores and short members over a small alphabet: many ties, members that
# are prefixes of each other, both zeros and both infinities.
SCORES = st.sampled_from([-INF, -2.5, -1.0, -0.0, 0.0, 1e-300, 1.0, 3.0, INF]) | st.floats(
    allow_nan=False, width=64)
MEMBERS = st.binary(max_size=3).map(lambda b: bytes(x % 4 * 85 for x in b))  # 0x00 0x55 0xaa 0xff
PAIRS = st.tuples(SCORES, MEMBERS)
POS = st.integers(-3000, 3000)
OPT = st.none() | POS


def bulk(seed: int, k: int) -> list[tuple[float, bytes]]:
    """k pairs from a seed: large sets without hypothesis drawing each one."""
    rng = random.Random(seed)
    scores = [-INF, -0.0, 0.0, 1.0, INF] + [rng.uniform(-5, 5) for _ in range(10)]
    return [(rng.choice(scores), bytes(rng.choice(b"ab\x00") for _ in range(rng.randrange(4))))
            for _ in range(k)]


OPS = st.one_of(
    st.tuples(st.just("add"), PAIRS),
    st.tuples(st.just("bulk"), st.integers(0, 2**32), st.integers(0, 2600)),
    st.tuples(st.just("remove_at"), POS),
    st.tuples(st.just("remove"), PAIRS),
    st.tuples(st.just("pop"), st.sampled_from([None, 0, -1]) | POS),
    st.tuples(st.just("index_at"), POS),
    st.tuples(st.just("index"), PAIRS),
    st.tuples(st.just("bisect_left"), PAIRS | SCORES.map(lambda s: (s,))),
    st.tuples(st.just("bisect_right"), PAIRS | SCORES.map(lambda s: (s,))),
    st.tuples(st.just("getitem"), POS),
    st.tuples(st.just("slice"), OPT, OPT),
    st.tuples(st.just("islice"), OPT, OPT, st.booleans()),
    st.tuples(st.just("delslice"), OPT, OPT),
    st.tuples(st.just("delitem"), POS),
    st.tuples(st.just("rebuild")),
    st.tuples(st.just("clear")),
)


def apply(idx: Any, op: tuple[Any, ...]) -> Any:
    name = op[0]
    if name == "add":
        return idx.add(op[1])
    if name == "bulk":
        for p in bulk(op[1], op[2]):
            idx.add(p)
        return None
    if name == "remove_at":  # an element present (the reference's pair at that position)
        return idx.remove(idx[op[1] % len(idx)]) if len(idx) else None
    if name == "remove":
        return idx.remove(op[1])
    if name == "pop":
        return idx.pop() if op[1] is None else idx.pop(op[1])
    if name == "index_at":
        return idx.index(idx[op[1] % len(idx)]) if len(idx) else None
    if name == "index":
        return idx.index(op[1])
    if name == "bisect_left":
        return idx.bisect_left(op[1])
    if name == "bisect_right":
        return idx.bisect_right(op[1])
    if name == "getitem":
        return idx[op[1]]
    if name == "slice":
        return idx[op[1]:op[2]]
    if name == "islice":
        return list(idx.islice(op[1], op[2], op[3]))
    if name == "delslice":
        del idx[op[1]:op[2]]
        return None
    if name == "delitem":
        del idx[op[1]]
        return None
    if name == "clear":
        return idx.clear()
    raise AssertionError(name)


def outcome(idx: Any, op: tuple[Any, ...]) -> str:
    try:
        return repr(apply(idx, op))
    except (IndexError, ValueError) as e:
        return type(e).__name__


@settings(max_examples=300, deadline=None)
@given(start=st.lists(PAIRS, max_size=40), ops=st.lists(OPS, max_size=40))
def test_same_answers_as_sortedlist(start: list[tuple[float, bytes]], ops: list[tuple[Any, ...]]) -> None:
    ref = SortedList(start)
    idx = ScoreIndex(start)
    for op in ops:
        if op[0] == "rebuild":  # construction from another index, and copies
            idx = copy.deepcopy(ScoreIndex(idx)) if len(idx) % 2 else copy.copy(idx)
            continue
        assert outcome(idx, op) == outcome(ref, op), op
        assert len(idx) == len(ref) and bool(idx) == bool(ref)
        assert repr(list(idx)) == repr(list(ref))
        assert repr(list(reversed(idx))) == repr(list(reversed(ref)))


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 2**32), k=st.integers(1025, 6000))
def test_drain_many_blocks(seed: int, k: int) -> None:
    """A set spanning many blocks emptied by pops from both ends, removes and
    slice deletes, checking positions on the way down."""
    pairs = bulk(seed, k)
    ref, idx = SortedList(pairs), ScoreIndex()
    for p in pairs:
        idx.add(p)
    rng = random.Random(seed)
    while ref:
        n = len(ref)
        i = rng.randrange(n)
        assert repr(idx[i]) == repr(ref[i]) and idx.index(ref[i]) == ref.index(ref[i])
        what = rng.randrange(4)
        if what == 0:
            assert repr(idx.pop(0)) == repr(ref.pop(0))
        elif what == 1:
            assert repr(idx.pop()) == repr(ref.pop())
        elif what == 2:
            idx.remove(ref[i])
            ref.remove(ref[i])
        else:
            j = min(n, i + rng.randrange(700))
            del idx[i:j]
            del ref[i:j]
        a, b = sorted(rng.randrange(-n, n + 1) for _ in range(2))
        assert repr(list(idx.islice(a, b, True))) == repr(list(ref.islice(a, b, True)))
    assert len(idx) == 0 and list(idx) == [] and not idx


def test_zero_signs_and_refusals() -> None:
    """(0.0, m) and (-0.0, m) are equal pairs: a remove of either takes the
    leftmost, as SortedList's does; a member that is not bytes is refused."""
    for idx in (SortedList(), ScoreIndex()):
        idx.add((0.0, b"a"))
        idx.add((-0.0, b"a"))
        idx.add((-0.0, b""))
        idx.remove((-0.0, b"a"))
        assert repr(list(idx)) == "[(-0.0, b''), (-0.0, b'a')]"
    with pytest.raises(TypeError):
        ScoreIndex().add((1.0, "text"))


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 2**32), k=st.integers(600, 3000))
def test_front_pops_then_front_adds_and_growth(seed: int, k: int) -> None:
    """A block's front deletions move its start (ZPOPMIN's path); adds at
    the front take those slots back, and growth gives them back to the end
    (the block compacts): the order, positions and copies stay right through
    every mix of the three."""
    rng = random.Random(seed)
    pairs = [(float(i), b"m%d" % i) for i in range(k)]
    ref, idx = SortedList(pairs), ScoreIndex()
    for p in pairs:
        idx.add(p)
    low = -1
    for _ in range(8):
        for _ in range(rng.randrange(1, k // 4)):  # pops from the front
            if ref:
                assert repr(idx.pop(0)) == repr(ref.pop(0))
        for _ in range(rng.randrange(0, 300)):  # adds below everything: at the front
            p = (float(low), b"n%d" % low)
            low -= 1
            idx.add(p)
            ref.add(p)
        for _ in range(rng.randrange(0, 600)):  # adds anywhere: growth and splits
            p = (rng.uniform(low, k), b"r%d" % rng.randrange(10**9))
            idx.add(p)
            ref.add(p)
        assert len(idx) == len(ref)
        if ref:
            i = rng.randrange(len(ref))
            assert repr(idx[i]) == repr(ref[i]) and idx.index(ref[i]) == ref.index(ref[i])
        assert repr(list(idx)) == repr(list(ref))
        assert repr(list(copy.copy(idx))) == repr(list(ref))

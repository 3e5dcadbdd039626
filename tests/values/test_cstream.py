"""The compiled entry reply (values/cstream.pyx) against the pure one.

XRANGE and XREADGROUP write each entry with ``Node.entry_reply``: from the
listpack in one pass when the kernel is built, else ``entry_reply`` over
``Node.entry``. Streams of every listpack encoding a field or value can take
(7-bit, 13-bit, 16/24/32/64-bit integers, 6-bit, 12-bit and 32-bit strings,
the empty string), with entries that share the node's primary fields and
entries that do not, IDs up to 2**64 - 1, are read both ways here and must
give the same bytes; the replies themselves are held to Valkey's by the
command tests.
"""

from __future__ import annotations

import importlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from trafikey_server.util import native
from trafikey_server.values.stream import MAX_ID, Stream, append_entry, entry_reply, make_id, new_node

if "values.cstream" not in native.built():
    pytest.skip("the values.cstream kernel is not built (python3 setup.py build_ext --inplace)",
                allow_module_level=True)
cstream = importlib.import_module("trafikey_server.values.cstream")

_INTS = [0, 1, 127, 128, 4095, 4096, -1, -4096, -4097, 32767, -32768, 32768, 8388607, -8388608, 8388608,
         2**31 - 1, -(2**31), 2**31, 2**63 - 1, -(2**63)]
value = st.one_of(
    st.sampled_from(_INTS).map(lambda v: b"%d" % v),
    st.integers(-(2**63), 2**63 - 1).map(lambda v: b"%d" % v),
    st.binary(max_size=70),
    st.sampled_from([0, 63, 64, 4094, 4095, 4096, 70000]).map(lambda n: b"x" * n),
    st.sampled_from([b"007", b"-0", b"+1", b"1.5", b" 1", b"9223372036854775808"]),
)
name = st.one_of(st.sampled_from([b"f", b"g", b"field"]), st.binary(max_size=8))
entry = st.lists(st.tuples(name, value), min_size=1, max_size=4)


def _both(s: Stream) -> None:
    count = 0
    for sid, node, i in s.spans(0, MAX_ID):
        fast = cstream.entry_reply(node.body, node.offs[i], node.fields, sid >> 64, sid & (2**64 - 1))
        assert fast == entry_reply(sid, node.entry(i))
        assert node.entry_reply(i, sid) == fast
        count += 1
    assert count == len(s)


@settings(max_examples=300, deadline=None)
@given(st.lists(entry, min_size=1, max_size=30), st.sampled_from([(4096, 100), (200, 5), (0, 3), (1, 1)]),
       st.sampled_from([0, 1, 2**32, 2**48 + 7, 2**64 - 40]), st.data())
def test_every_entry_reads_the_same_both_ways(entries: list[list[tuple[bytes, bytes]]],
                                              limits: tuple[int, int], ms0: int, data: st.DataObject) -> None:
    s = Stream()
    ms, seq = ms0, 0
    primary = entries[0]
    for pairs in entries:
        if data.draw(st.booleans()):  # the node's primary fields again, new values
            pairs = [(f, v) for (f, _), (_, v) in zip(primary, pairs + primary, strict=False)]
        fields = [x for pair in pairs for x in pair]
        step = data.draw(st.sampled_from([0, 1, 5000, 2**33]))
        if ms + step >= 2**64:
            step = 0
        if step:
            ms, seq = ms + step, 0
        else:
            seq += data.draw(st.sampled_from([1, 2, 300, 2**40]))
        s.add(make_id(ms, seq), fields, limits)
    _both(s)
    ids = [sid for sid, _, _ in s.spans(0, MAX_ID)]
    for sid in data.draw(st.lists(st.sampled_from(ids), max_size=len(ids) // 2)):
        s.delete(sid)  # flagged, or a node gone with its last live entry
    _both(s)
    bounds = st.sampled_from([0, MAX_ID, *ids]).flatmap(lambda b: st.sampled_from([b, b - 1, b + 1]))
    for _ in range(5):
        start, end = sorted((data.draw(bounds), data.draw(bounds)))
        start, end = max(start, 0), min(end, MAX_ID)
        count, rev = data.draw(st.sampled_from([0, 1, 2, 3, 10])), data.draw(st.booleans())
        # What the pure path answers: each live entry in range from spans, decoded and written.
        want = [entry_reply(sid, node.entry(i)) for sid, node, i in s.spans(start, end, rev)]
        want = want[:count] if count else want
        got, n = s.range_replies(start, end, count, rev)
        assert (b"".join(got), n) == (b"".join(want), len(want))


def test_a_bad_encoding_is_refused_not_read() -> None:
    s = Stream()
    s.add(make_id(1, 1), [b"f", b"v"], (4096, 100))
    node = next(s.spans(0, MAX_ID))[1]
    body = bytearray(node.body)
    p = node.offs[0]
    with pytest.raises(ValueError):
        cstream.entry_reply(body[:p + 3], p, node.fields, 1, 1)  # cut inside the entry
    body[p] = 0xF9  # no listpack encoding
    with pytest.raises(ValueError):
        cstream.entry_reply(body, p, node.fields, 1, 1)


# -- appending: cstream.append_entry against the pure append_entry ------------------------------------

_KSEQ = [0, 1, 5000, 2**32, 2**63, 2**64 - 40]


@settings(max_examples=400, deadline=None)
@given(entry, entry, st.integers(0, 2**32 - 1) | st.sampled_from([0, 127, 128, 4095, 4096, 2**32 - 1]),
       st.integers(0, 2**32 - 1) | st.sampled_from([0, 1, 4095, 4096, 2**32 - 1]), st.sampled_from(_KSEQ),
       st.sampled_from([0, 2**40]))
def test_an_appended_entry_is_written_the_same_both_ways(primary: list[tuple[bytes, bytes]],
                                                         pairs: list[tuple[bytes, bytes]], dms: int, seq: int,
                                                         kseq: int, kms: int) -> None:
    first = [b for p in primary for b in p]
    fields = [b for p in pairs for b in p]
    fast = new_node(make_id(kms, kseq), first)
    pure = fast.copy()
    for same in (False, True):
        if same and len(fields) != len(first):
            continue
        if same:  # the primary's names, this entry's values
            fields = [b for i, p in enumerate(pairs) for b in (first[2 * i], p[1])]
        n = cstream.append_entry(fast.body, fast.ids, fast.offs, dms, seq, fast.kseq, fields, same)
        assert n == append_entry(pure, dms, kms + dms, seq, fields, same)
        assert (bytes(fast.body), list(fast.ids), list(fast.offs)) == (bytes(pure.body), list(pure.ids),
                                                                       list(pure.offs))


def test_append_entry_leaves_wide_ids_to_the_pure_code() -> None:
    node = new_node(make_id(0, 0), [b"f", b"v"])
    before = (bytes(node.body), list(node.ids), list(node.offs))
    assert cstream.append_entry(node.body, node.ids, node.offs, 2**32, 0, 0, [b"f", b"v"], True) == 0
    assert cstream.append_entry(node.body, node.ids, node.offs, 0, 2**32, 0, [b"f", b"v"], True) == 0
    node.push_id(make_id(2**40, 0))  # the node's ID parts widen to 64-bit words
    before = (bytes(node.body), list(node.ids), list(node.offs))
    assert cstream.append_entry(node.body, node.ids, node.offs, 1, 1, 0, [b"f", b"v"], True) == 0
    assert (bytes(node.body), list(node.ids), list(node.offs)) == before

"""The stream's counters through the commands, against Valkey 9.1.2: the
recorded first ID, the greatest deleted ID and entries-added after
deletions and trims, and the consumer-group lag and entries-read that the
structure's tombstone test and entries-read estimate decide (a deletion
before the first entry still counts; an ID below the greatest deleted one
has no known counter)."""

from __future__ import annotations

import pytest

BASE = ["XADD s 1-0 f v", "XADD s 2-0 f v", "XADD s 3-0 f v", "XADD s 4-0 f v"]



def after_base(*lines: str) -> list[str]:
    return [*BASE, *lines]


CASES = {
    "trimmed-without-deletions": after_base("XGROUP CREATE s g 1-0 ENTRIESREAD 1", "XTRIM s MAXLEN 0",
                                            "XADD s 10-0 f v"),
    "trimmed-to-one": after_base("XGROUP CREATE s g 1-0 ENTRIESREAD 1", "XTRIM s MAXLEN 1"),
    "deletion-before-first": after_base("XDEL s 2-0", "XGROUP CREATE s g 1-0 ENTRIESREAD 1", "XTRIM s MAXLEN 1"),
    "deletion-ahead": after_base("XDEL s 2-0", "XGROUP CREATE s g 1-0 ENTRIESREAD 1"),
    "deletion-behind": after_base("XDEL s 2-0", "XGROUP CREATE s g 3-0 ENTRIESREAD 3"),
    "emptied-then-added": after_base("XDEL s 2-0", "XGROUP CREATE s g 3-0 ENTRIESREAD 3", "XTRIM s MAXLEN 0",
                                     "XADD s 10-0 f v"),
    "group-below-deleted": after_base("XDEL s 3-0", "XGROUP CREATE s g 2-0", "XTRIM s MAXLEN 0", "XADD s 10-0 f v"),
    "created-at-first": after_base("XTRIM s MAXLEN 2", "XGROUP CREATE s g 3-0"),
    "created-before-first": after_base("XTRIM s MAXLEN 2", "XGROUP CREATE s g 2-0"),
    "created-mid": after_base("XGROUP CREATE s g 2-0"),
    "created-at-last-of-empty": after_base("XTRIM s MAXLEN 0", "XGROUP CREATE s g 3-0"),
    "first-deleted": after_base("XDEL s 1-0", "XGROUP CREATE s g 0"),
    "all-deleted": after_base("XDEL s 1-0 2-0 3-0 4-0", "XGROUP CREATE s g 0", "XADD s 5-0 f v"),
    "read-past-trimmed-head": after_base("XGROUP CREATE s g 0 ENTRIESREAD 0", "XTRIM s MAXLEN 2"),
    "minid-leaves-tombstones": ["CONFIG SET stream-node-max-entries 3", *BASE, "XADD s 5-0 f v", "XDEL s 3-0",
                                "XTRIM s MINID 3-0", "XGROUP CREATE s g 0", "CONFIG SET stream-node-max-entries 100"],
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_counters_and_lag(pair, name: str) -> None:  # type: ignore[no-untyped-def]
    for p in (pair.v, pair.t):
        p.call("DEL", "s")
    for line in CASES[name]:
        pair.check(*line.split())
    pair.check("XINFO", "STREAM", "s")
    pair.check("XINFO", "GROUPS", "s")
    pair.check("XLEN", "s")
    pair.check("XRANGE", "s", "-", "+")
    pair.check("XADD", "s", "20-0", "f", "v")
    pair.check("XINFO", "GROUPS", "s")
    pair.check("XREADGROUP", "GROUP", "g", "c", "COUNT", "1", "STREAMS", "s", ">")
    pair.check("XINFO", "GROUPS", "s")
    pair.check("XDEL", "s", "20-0")
    pair.check("XINFO", "GROUPS", "s")
    pair.check("XINFO", "STREAM", "s")

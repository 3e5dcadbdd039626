"""Consumer groups' entries-read and lag against Valkey 9.1 over random
histories: appends with gaps, deletions, trims by length and ID, groups
created and moved at arbitrary IDs with and without ENTRIESREAD, reads,
and XSETID rewriting the counters. XINFO GROUPS after every step must be
Valkey's, byte for byte (its counter and lag rules around deleted and
trimmed entries are subtle: these histories pin them)."""

from __future__ import annotations

import random

import pytest
from helpers.pair import Pair


def _history(rng: random.Random) -> list[tuple[str, ...]]:
    nxt = 1
    out: list[tuple[str, ...]] = []
    for _ in range(50):
        k = rng.random()
        if k < 0.35:
            for _ in range(rng.randint(1, 3)):
                out.append(("XADD", "s", f"{nxt}-0", "f", "v"))
                nxt += rng.randint(1, 2)
        elif k < 0.5:
            out.append(("XDEL", "s", *[f"{rng.randint(1, nxt)}-0" for _ in range(rng.randint(1, 3))]))
        elif k < 0.55:
            out.append(("XTRIM", "s", "MAXLEN", str(rng.randint(0, 5))))
        elif k < 0.6:
            out.append(("XTRIM", "s", "MINID", str(rng.randint(0, nxt))))
        elif k < 0.75:
            sub = rng.choice(("CREATE", "SETID"))
            at = rng.choice(["0", "$", f"{rng.randint(0, nxt)}-0"])
            extra = ("ENTRIESREAD", str(rng.randint(-1, nxt))) if rng.random() < 0.4 else ()
            mk = ("MKSTREAM",) if sub == "CREATE" else ()
            out.append(("XGROUP", sub, "s", rng.choice("abcd"), at, *mk, *extra))
        elif k < 0.95:
            out.append(("XREADGROUP", "GROUP", rng.choice("abcd"), "c", "COUNT", str(rng.randint(1, 4)),
                        "STREAMS", "s", ">"))
        else:
            out.append(("XSETID", "s", f"{nxt}-0", "ENTRIESADDED", str(rng.randint(0, 40)),
                        "MAXDELETEDID", f"{rng.randint(0, nxt)}-0"))
        out.append(("XINFO", "GROUPS", "s"))
    return out


@pytest.mark.parametrize("seed", range(12))
def test_entries_read_and_lag_over_random_histories(pair: Pair, seed: int) -> None:
    for step in _history(random.Random(seed)):
        pair.check(*step)

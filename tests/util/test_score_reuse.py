"""Scores written again: a score's text is kept once written (util/floats.py),
so a second read of the same scores, and a read after the table has been
emptied, must still answer exactly as Valkey does."""

from __future__ import annotations

import random

from trafikey_server.util import floats


def test_scores_read_twice_and_past_the_table_answer_as_valkey(pair23) -> None:
    rnd = random.Random(7)
    scores = ["1.5", "-2.25", "0.1", "3.141592653589793", "1e-7", "-1e+300", "123456.789"]
    scores += [repr(rnd.uniform(-1e9, 1e9)) for _ in range(40)]
    args: list[object] = []
    for i, s in enumerate(scores):
        args += [s, f"m{i}"]
    pair23.check("ZADD", "z", *args)
    first = pair23.check("ZRANGE", "z", 0, -1, "WITHSCORES")
    assert pair23.check("ZRANGE", "z", 0, -1, "WITHSCORES") == first
    # Fill the table past its size so it is emptied, then read again.
    many = [repr(rnd.uniform(0, 1)) for _ in range(floats._WRITTEN_MAX + 10)]
    for start in range(0, len(many), 500):
        chunk = many[start:start + 500]
        pair23.check("ZADD", "big", *[x for j, s in enumerate(chunk) for x in (s, f"b{start + j}")])
    pair23.check("ZRANGE", "big", 0, -1, "WITHSCORES")  # more scores than the table holds
    assert pair23.check("ZRANGE", "z", 0, -1, "WITHSCORES") == first
    assert pair23.check("ZSCORE", "z", "m3") == pair23.check("ZSCORE", "z", "m3")

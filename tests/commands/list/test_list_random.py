"""Seeded random list workloads against Valkey: every reply byte for byte,
and OBJECT ENCODING after each step while the workload moves elements at
the ends, removes (LREM) or replaces (LSET) them: the quicklist-to-listpack
conversion depends on Valkey's quicklist nodes, which these writes keep
known. (LINSERT into a full node splits it; encodings after that are not
compared.)"""

from __future__ import annotations

import random

import pytest

FILLS = ["-2", "-1", "4", "16", "0"]


def _step(rng: random.Random, ops: list[str]) -> list[str]:
    def el() -> str:
        return rng.choice(["a", "b", str(rng.randint(0, 10**6)), "x" * rng.choice([1, 50, 300, 1200, 9000])])

    op = rng.choice(ops)
    if op in ("RPUSH", "LPUSH"):
        return [op, "l"] + [el() for _ in range(rng.randint(1, 20))]
    if op in ("LPOP", "RPOP"):
        return [op, "l", str(rng.randint(1, 15))]
    if op == "LREM":
        return [op, "l", str(rng.randint(-3, 3)), rng.choice(["a", "b"])]
    if op == "LTRIM":
        return [op, "l", str(rng.randint(0, 5)), str(rng.randint(-5, -1))]
    if op == "LINSERT":
        return [op, "l", rng.choice(["BEFORE", "AFTER"]), rng.choice(["a", "b"]), el()]
    if op == "LMOVE":
        return [op, "l", "l", rng.choice(["LEFT", "RIGHT"]), rng.choice(["LEFT", "RIGHT"])]
    return [op, "l", str(rng.randint(-5, 5)), el()]


@pytest.mark.parametrize("fill", FILLS)
@pytest.mark.parametrize("seed", [1, 2])
def test_random_workload_with_encodings(pair, fill: str, seed: int) -> None:
    rng = random.Random(seed)
    pair.check("CONFIG", "SET", "list-max-listpack-size", fill)
    try:
        for _ in range(250):
            pair.check(*_step(rng, ["RPUSH", "LPUSH", "LPOP", "RPOP", "LREM", "LTRIM", "LSET", "LMOVE"]))
            pair.check("OBJECT", "ENCODING", "l")
        pair.check("LRANGE", "l", "0", "-1")
    finally:
        pair.check("CONFIG", "SET", "list-max-listpack-size", "-2")


@pytest.mark.parametrize("seed", [3, 4])
def test_random_workload_with_linsert(pair23, seed: int) -> None:
    rng = random.Random(seed)
    for _ in range(300):
        pair23.check(*_step(rng, ["RPUSH", "LPUSH", "LPOP", "RPOP", "LREM", "LTRIM", "LSET", "LINSERT", "LMOVE"]))
        pair23.check("LRANGE", "l", "0", "-1")

"""GEOSEARCH against Valkey over random points, byte for byte.

Points are drawn all over the valid range, with extra weight near the poles'
latitude limit (+-85.05112878) and near the antimeridian, where the cell
arithmetic wraps and the neighbour cells are dropped or repeated. Searches
mix BYRADIUS and BYBOX (small and huge), ASC, DESC or no order, COUNT with
and without ANY (ANY decides which members are read first: the cells' order
and each cell's score order must be Valkey's) and every WITH option. A few
members share coordinates so that equal distances meet COUNT's partial sort.
Each reply must be the same bytes as Valkey's, as must the set a
GEOSEARCHSTORE leaves.
"""

from __future__ import annotations

import random
from typing import Any

import pytest

LAT_MAX = 85.05112878


def _coord(rng: random.Random) -> tuple[str, str]:
    kind = rng.random()
    if kind < 0.2:
        lat = rng.choice((-1, 1)) * (LAT_MAX - rng.random() * 3)
        lon = rng.uniform(-180, 180)
    elif kind < 0.4:
        lon = rng.choice((-1, 1)) * (180 - rng.random() * 3)
        lat = rng.uniform(-LAT_MAX, LAT_MAX)
    elif kind < 0.5:
        lon = rng.uniform(-2, 2)
        lat = rng.uniform(-2, 2)
    else:
        lon = rng.uniform(-180, 180)
        lat = rng.uniform(-LAT_MAX, LAT_MAX)
    return repr(lon), repr(lat)


def _load(pair: Any, rng: random.Random, key: str, n: int) -> list[tuple[str, str]]:
    pts = [_coord(rng) for _ in range(n)]
    for k in range(0, n, 4):
        if k + 1 < n:
            pts[k + 1] = pts[k]  # some members share their position
    args: list[str] = ["GEOADD", key]
    for j, (lon, lat) in enumerate(pts):
        args += [lon, lat, f"m{j}"]
    pair.check(*args)
    return pts


def _query(rng: random.Random, key: str, pts: list[tuple[str, str]]) -> list[str]:
    q = ["GEOSEARCH", key]
    if rng.random() < 0.3:
        q += ["FROMMEMBER", f"m{rng.randrange(len(pts))}"]
    else:
        q += ["FROMLONLAT", *_coord(rng)]
    unit = rng.choice(("m", "km", "mi", "ft"))
    scale = {"m": 1000.0, "km": 1.0, "mi": 0.621371, "ft": 3280.84}[unit]
    big = rng.random() < 0.15
    if rng.random() < 0.5:
        km = rng.uniform(10, 6000) if big else rng.uniform(1, 800)
        q += ["BYRADIUS", f"{km * scale:.3f}", unit]
    else:
        w = rng.uniform(10, 9000) if big else rng.uniform(1, 1500)
        h = rng.uniform(10, 9000) if big else rng.uniform(1, 1500)
        q += ["BYBOX", f"{w * scale:.3f}", f"{h * scale:.3f}", unit]
    order = rng.choice(("", "ASC", "DESC"))
    if order:
        q.append(order)
    if rng.random() < 0.5:
        q += ["COUNT", str(rng.randint(1, 12))]
        if rng.random() < 0.4:
            q.append("ANY")
    for opt in ("WITHDIST", "WITHCOORD", "WITHHASH"):
        if rng.random() < 0.4:
            q.append(opt)
    return q


@pytest.mark.parametrize("size", [100, 600], ids=["listpack", "skiplist"])
def test_random_geosearch(pair, size: int) -> None:
    rng = random.Random(9100 + size)
    pts = _load(pair, rng, "pts", size)
    pair.check("OBJECT", "ENCODING", "pts")
    found = 0
    for _ in range(300):
        found += pair.check(*_query(rng, "pts", pts)) != b"*0\r\n"
    assert found > 100  # the searches do find members, not only empty replies


def test_random_geosearch_resp3(pair23) -> None:
    rng = random.Random(77)
    pts = _load(pair23, rng, "pts", 300)
    for _ in range(100):
        pair23.check(*_query(rng, "pts", pts))


def test_random_geosearchstore_and_georadius(pair) -> None:
    rng = random.Random(4242)
    pts = _load(pair, rng, "pts", 400)
    for _ in range(100):
        q = [w for w in _query(rng, "pts", pts) if not w.startswith("WITH")]
        if rng.random() < 0.5:
            q.append("STOREDIST")
        pair.check("GEOSEARCHSTORE", "dst", *q[1:])
        pair.check("ZRANGE", "dst", "0", "-1", "WITHSCORES")
        lon, lat = _coord(rng)
        r = [f"{rng.uniform(1, 3000):.2f}", "km", "WITHDIST", "ASC", "COUNT", str(rng.randint(1, 20))]
        pair.check("GEORADIUS", "pts", lon, lat, *r)
        pair.check("GEORADIUSBYMEMBER_RO", "pts", f"m{rng.randrange(len(pts))}", *r)

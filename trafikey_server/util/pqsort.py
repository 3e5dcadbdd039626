"""Valkey's partial quicksort (pqsort.c, after the BSD qsort).

A search with COUNT n smaller than its number of matches sorts only enough
to put the n first ones in place. The sort is not stable, so which of
several equally distant members make the cut, and in which order, depends on
the algorithm's exact sequence of swaps: the median-of-three pivots (ninther
above 40 elements), the three-way partition that parks equal keys at both
ends, the insertion sort below 7 elements, and the skipping of partitions
outside the requested range. This replays that sequence on a Python list.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def pqsort(items: list[T], cmp: Callable[[T, T], int], lo: int, hi: int) -> None:
    """Sort ``items`` in place so that positions ``lo..hi`` (inclusive) hold
    what a full sort would put there."""
    _sort(items, 0, len(items), cmp, lo, hi)


def _med3(v: list[T], a: int, b: int, c: int, cmp: Callable[[T, T], int]) -> int:
    if cmp(v[a], v[b]) < 0:
        if cmp(v[b], v[c]) < 0:
            return b
        return c if cmp(v[a], v[c]) < 0 else a
    if cmp(v[b], v[c]) > 0:
        return b
    return a if cmp(v[a], v[c]) < 0 else c


def _vecswap(v: list[T], a: int, b: int, n: int) -> None:
    for k in range(n):
        v[a + k], v[b + k] = v[b + k], v[a + k]


def _sort(v: list[T], a: int, n: int, cmp: Callable[[T, T], int], lo: int, hi: int) -> None:
    while True:
        if n < 7:
            for pm in range(a + 1, a + n):
                pl = pm
                while pl > a and cmp(v[pl - 1], v[pl]) > 0:
                    v[pl], v[pl - 1] = v[pl - 1], v[pl]
                    pl -= 1
            return
        pm = a + n // 2
        if n > 7:
            pl = a
            pn = a + n - 1
            if n > 40:
                d = n // 8
                pl = _med3(v, pl, pl + d, pl + 2 * d, cmp)
                pm = _med3(v, pm - d, pm, pm + d, cmp)
                pn = _med3(v, pn - 2 * d, pn - d, pn, cmp)
            pm = _med3(v, pl, pm, pn, cmp)
        v[a], v[pm] = v[pm], v[a]
        pa = pb = a + 1
        pc = pd = a + n - 1
        pivot = v[a]
        while True:
            while pb <= pc:
                r = cmp(v[pb], pivot)
                if r > 0:
                    break
                if r == 0:
                    v[pa], v[pb] = v[pb], v[pa]
                    pa += 1
                pb += 1
            while pb <= pc:
                r = cmp(v[pc], pivot)
                if r < 0:
                    break
                if r == 0:
                    v[pc], v[pd] = v[pd], v[pc]
                    pd -= 1
                pc -= 1
            if pb > pc:
                break
            v[pb], v[pc] = v[pc], v[pb]
            pb += 1
            pc -= 1
        pn = a + n
        r = min(pa - a, pb - pa)
        _vecswap(v, a, pb - r, r)
        r = min(pd - pc, pn - pd - 1)
        _vecswap(v, pb, pn - r, r)
        r = pb - pa
        if r > 1 and not (hi < a or lo >= a + r):
            _sort(v, a, r, cmp, lo, hi)
        r = pd - pc
        if r <= 1:
            return
        a = pn - r
        n = r
        if hi < a or lo >= a + n:
            return

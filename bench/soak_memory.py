"""The soak's memory verdict, apart from the soak so a test can check it.

Why a least-squares slope over the second half: single RSS samples jump by
an arena or a resized dict at a time, so comparing two samples says little;
a fitted slope over many samples ignores the jumps and catches steady
growth. The first half is warm-up, while the keyspace fills to its bound.
"""

from __future__ import annotations

from typing import Any


def slope_per_s(points: list[tuple[float, int]]) -> float:
    """Least-squares slope of (t, rss) in bytes per second."""
    n = len(points)
    if n < 2:
        return 0.0
    mt = sum(p[0] for p in points) / n
    mr = sum(p[1] for p in points) / n
    den = sum((p[0] - mt) ** 2 for p in points)
    return sum((p[0] - mt) * (p[1] - mr) for p in points) / den if den else 0.0


def memory_verdict(samples: list[tuple[float, int]], max_growth_mib: float) -> tuple[dict[str, Any], bool]:
    """The figures and the verdict: the second half's least-squares RSS slope,
    projected over that half, within the bound (at least three samples)."""
    half = [p for p in samples if p[0] >= samples[-1][0] / 2]
    slope = slope_per_s(half)
    span = half[-1][0] - half[0][0] if len(half) > 1 else 0.0
    growth = slope * span
    memory = {
        "samples": len(samples),
        "rss_start_mib": round(samples[0][1] / 2**20, 2),
        "rss_mid_mib": round(half[0][1] / 2**20, 2),
        "rss_end_mib": round(samples[-1][1] / 2**20, 2),
        "rss_max_mib": round(max(p[1] for p in samples) / 2**20, 2),
        "second_half_min_mib": round(min(p[1] for p in half) / 2**20, 2),
        "second_half_max_mib": round(max(p[1] for p in half) / 2**20, 2),
        "second_half_slope_mib_per_min": round(slope * 60 / 2**20, 4),
        "second_half_projected_growth_mib": round(growth / 2**20, 3),
        "bound_mib": max_growth_mib,
    }
    return memory, len(half) >= 3 and growth <= max_growth_mib * 2**20

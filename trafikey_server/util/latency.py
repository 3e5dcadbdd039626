"""Per-command latency histograms, as Valkey's HdrHistogram reports them.

Valkey records each call's duration (microseconds, times 1000: nanoseconds,
clamped to 1 ns .. 1 s) in an HdrHistogram of 2 significant digits, and
reports it two ways: LATENCY HISTOGRAM walks it with a logarithmic iterator
(base 2 from 1024 ns) and INFO latencystats asks for percentiles. Durations
here are whole microseconds, so a histogram is kept as a count per duration
(``record``) and both reports are computed from it with HdrHistogram's own
bucket arithmetic (2 significant digits: 256 sub-buckets, the first 256
values exact, then ranges of 2**bucket values).
"""

from __future__ import annotations

MIN_NS = 1
MAX_NS = 1_000_000_000
# The last index of a histogram whose highest trackable value is 1 s.
_TOP = (255 << 22) + (1 << 22) - 1


def _bucket(v: int) -> int:
    return max(0, (v | 255).bit_length() - 8)


def lowest_equivalent(v: int) -> int:
    b = _bucket(v)
    return (v >> b) << b


def highest_equivalent(v: int) -> int:
    b = _bucket(v)
    return ((v >> b) << b) + (1 << b) - 1


def _ns(us: int) -> int:
    return min(max(us * 1000, MIN_NS), MAX_NS)


def _level_label(us: int) -> int:
    """The LATENCY HISTOGRAM bucket (in µs, as Valkey labels it) a call of
    ``us`` falls in: the first reporting level 1024 * 2**k whose
    HdrHistogram slot holds the value or lies above it."""
    v = lowest_equivalent(_ns(us))
    level = 1024
    while level <= (1 << 29):
        if v <= level:
            return highest_equivalent(level) // 1000
        level <<= 1
    return _TOP // 1000


_LABELS = [_level_label(us) for us in range(4096)]


def label(us: int) -> int:
    return _LABELS[us] if us < 4096 else _level_label(us)


def cdf(hist: dict[int, int]) -> list[tuple[int, int]]:
    """(bucket µs, calls up to it) for each bucket that holds calls: Valkey's
    fillCommandCDF."""
    per: dict[int, int] = {}
    for us, n in hist.items():
        lb = label(us)
        per[lb] = per.get(lb, 0) + n
    out = []
    total = 0
    for lb in sorted(per):
        total += per[lb]
        out.append((lb, total))
    return out


def percentile(hist: dict[int, int], p: float) -> int:
    """hdr_value_at_percentile, in nanoseconds."""
    total = sum(hist.values())
    want = max(int((min(p, 100.0) / 100) * total + 0.5), 1)
    seen = 0
    for us in sorted(hist):
        seen += hist[us]
        if seen >= want:
            v = _ns(us)
            return lowest_equivalent(v) if p == 0.0 else highest_equivalent(v)
    return 0

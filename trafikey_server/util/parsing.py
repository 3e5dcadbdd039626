"""Argument parsing with Valkey's acceptance rules.

Valkey's ``string2ll`` is stricter than Python's ``int``: no sign but ``-``,
no spaces, no leading zeros, no ``_`` separators, and only within signed
64 bits. Everything that takes an integer argument goes through here so the
same bytes are accepted or refused as Valkey would.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final

from . import native
from .errors import CommandError, not_integer

LLONG_MAX: Final = 2**63 - 1
LLONG_MIN: Final = -(2**63)


def int64(v: int) -> int:
    """v as a C 64-bit integer holds it: wrapped into the signed range, as
    a counter Valkey increments past its end (or an unsigned one it
    replies as a long long) reads."""
    return (v + 2**63) % 2**64 - 2**63


def _to_int(b: bytes | bytearray) -> int | None:
    """Valkey's string2ll: the integer, or None if Valkey would refuse it."""
    n = len(b)
    if 0 < n < 19 and b.isdigit():  # the common case: a small non-negative number
        return int(b) if b[0] != 48 or n == 1 else None
    if n == 0 or n > 20:
        return None
    c = b[0]
    if c == 48:  # '0'
        return 0 if n == 1 else None
    if c == 45:  # '-'
        if n == 1 or not (49 <= b[1] <= 57):
            return None
    elif not (49 <= c <= 57):
        return None
    if n > 1 and not b[1:].isdigit():
        return None
    v = int(b)
    if v > LLONG_MAX or v < LLONG_MIN:
        return None
    return v


# The compiled parse (util/cbits.pyx) when built, with the same answers: a
# bound name rather than a wrapper, so neither path pays a call more.
_k: Final = native.load("util.cbits")
to_int: Final[Callable[[bytes | bytearray], int | None]] = _k.string2ll if _k is not None else _to_int


def parse_int(b: bytes, err: bytes | None = None) -> int:
    v = to_int(b)
    if v is None:
        raise CommandError(err) if err is not None else not_integer()
    return v


def index_span(n: int, start: int, end: int) -> tuple[int, int]:
    """An inclusive ``start``..``end`` index request over ``n`` elements
    (negative indexes count from the end), clamped as Valkey's range
    commands clamp it (LRANGE, LTRIM, ZRANGE, ZREMRANGEBYRANK ...): the
    half-open ``(first, stop)``, ``(0, 0)`` when nothing is in range."""
    if start < 0:
        start += n
    if end < 0:
        end += n
    if start < 0:
        start = 0
    if start > end or start >= n:
        return 0, 0
    if end >= n:
        end = n - 1
    return start, end + 1

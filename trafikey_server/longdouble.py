"""INCRBYFLOAT's arithmetic: C ``long double`` (x87, 64-bit significand).

Valkey parses both operands with ``strtold``, adds them in long double, and
prints the sum with ``%.17Lf`` before trimming trailing zeros. That is why
``INCRBYFLOAT k 0.1`` then ``0.2`` reads back ``0.3`` on Valkey, where a
double would give ``0.30000000000000004``. Python has no long double, so the
values are kept as exact ``Fraction``s and rounded to the 64-bit significand
(ties to even) after every operation, which reproduces the C results exactly.
Only INCRBYFLOAT and HINCRBYFLOAT come here; speed is not the point.
"""

from __future__ import annotations

import re
from fractions import Fraction

from .errors import NOT_FLOAT_MSG, CommandError

_MANT = 64
_MIN_EXP = -16382  # smallest normal exponent (value = m * 2**(e - 63))
_MAX = Fraction((1 << _MANT) - 1) * Fraction(2) ** (16383 - 63)
_INF = float("inf")

_DEC = re.compile(rb"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?")
_HEX = re.compile(rb"[+-]?0[xX]([0-9a-fA-F]+\.?[0-9a-fA-F]*|\.[0-9a-fA-F]+)([pP][+-]?\d+)?")
_INFS = {b"inf", b"infinity"}

MAX_CHARS = 5 * 1024

NAN_OR_INF_MSG = b"ERR increment would produce NaN or Infinity"


def _round(x: Fraction) -> Fraction | float:
    """x rounded to the nearest long double (ties to even); inf on overflow."""
    if x == 0:
        return x
    neg = x < 0
    a = -x if neg else x
    n, d = a.numerator, a.denominator
    e = n.bit_length() - d.bit_length()
    if Fraction(n, d) < Fraction(2) ** e:
        e -= 1
    # a is in [2**e, 2**(e+1)); keep 64 significant bits, fewer when subnormal.
    e = max(e, _MIN_EXP)
    shift = _MANT - 1 - e
    scaled = a * (Fraction(2) ** shift)
    q, r = divmod(scaled.numerator, scaled.denominator)
    twice = 2 * r
    if twice > scaled.denominator or (twice == scaled.denominator and q & 1):
        q += 1
    out = Fraction(q) / (Fraction(2) ** shift)
    if out > _MAX:
        return -_INF if neg else _INF
    return -out if neg else out


def parse(b: bytes) -> Fraction | float | None:
    """Valkey's string2ld: strtold on the whole string; None where refused
    (spaces, junk, NaN, and values that overflow or underflow to zero)."""
    if not b or len(b) >= MAX_CHARS or b[0] in b" \t\n\r\v\f":
        return None
    body = b.lstrip(b"+-")
    if body.lower() in _INFS:
        return -_INF if b[0] == 45 else _INF
    m = _HEX.fullmatch(b)
    if m is not None:
        digits = m.group(1)
        whole, _, frac = digits.partition(b".")
        mant = int((whole + frac) or b"0", 16)
        exp = int(m.group(2)[1:]) if m.group(2) else 0
        exact = Fraction(mant) * Fraction(2) ** (exp - 4 * len(frac))
    elif _DEC.fullmatch(b) is not None:
        exact = abs(Fraction(b.decode()))
    else:
        return None
    if b[0] == 45:
        exact = -exact
    v = _round(exact)
    if isinstance(v, float) or (v == 0 and exact != 0):
        return None  # ERANGE: overflow to HUGE_VAL or underflow to zero
    return v


def format(v: Fraction) -> bytes:
    """``%.17Lf`` with trailing zeros (and a bare dot) removed."""
    neg = v < 0
    scaled = abs(v) * 10**17
    q, r = divmod(scaled.numerator, scaled.denominator)
    twice = 2 * r
    if twice > scaled.denominator or (twice == scaled.denominator and q & 1):
        q += 1
    digits = str(q).rjust(18, "0")
    s = (digits[:-17] + "." + digits[-17:]).rstrip("0").rstrip(".")
    if neg and s != "0":
        s = "-" + s
    return s.encode()


def incr_by_float(current: bytes | None, incr: bytes) -> bytes:
    """The new value of a string holding ``current`` after adding ``incr``."""
    value = Fraction(0) if current is None else parse(current)
    by = parse(incr)
    if value is None or by is None:
        raise CommandError(NOT_FLOAT_MSG)
    if isinstance(value, float) or isinstance(by, float):
        raise CommandError(NAN_OR_INF_MSG)
    total = _round(value + by)
    if isinstance(total, float):
        raise CommandError(NAN_OR_INF_MSG)
    return format(total)

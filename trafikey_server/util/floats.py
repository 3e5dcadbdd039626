"""Doubles as Valkey 9 reads and writes them.

Valkey prints a double score (d2string) as the integer it holds when its
magnitude is at most LLONG_MAX/2, and otherwise with fpconv_dtoa: Grisu2
digits laid out plain (``0.001``, ``123.5``) or in exponent notation
(``1.5e-7``, ``1e+21``). Grisu2 is *not* the shortest round-trip algorithm:
it works in 64-bit fixed point with a safety margin of one unit at each end
of the rounding interval, so now and then it emits a 17th digit where 16
would do, or a neighbouring last digit (720889748556924.2 prints as
``720889748556924.3``, 1e23 as ``99999999999999990000000``). Python's repr
cannot reproduce that, so we run the same algorithm with Python ints.

Parsing follows the fast_float rules Valkey 9 uses: decimal or inf/infinity
with an optional sign, the whole string and nothing else, no NaN, no hex,
and out-of-range literals (overflow to infinity, underflow to zero) refused.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import Final

from . import native

_INF: Final = float("inf")
_NINF: Final = -_INF
# (double)(LLONG_MAX / 2): the bound of double2ll, the integer-printing path.
_LL_HALF: Final = float((2**63 - 1) // 2)

_BITS: Final = struct.Struct("<Q").unpack
_PACK: Final = struct.Struct("<d").pack
_FRAC_MASK: Final = (1 << 52) - 1
_HIDDEN: Final = 1 << 52
_M64: Final = (1 << 64) - 1
_HALF: Final = 1 << 63


# -- the cached powers of ten ---------------------------------------------------
#
# Grisu2 scales the number by one of 87 powers of ten, 10**-348, 10**-340, ...
# 10**340, each held as a 64-bit significand rounded to nearest. They are
# mathematical constants, so we compute them exactly instead of keeping a table.


def _pow10_fp(k: int) -> tuple[int, int]:
    """10**k as (f, e), f a 64-bit integer with its top bit set, f * 2**e ~= 10**k."""
    if k >= 0:
        num, den = 10**k, 1
    else:
        num, den = 1, 10**-k
    # Pick e so that num / den / 2**e lies in [2**63, 2**64), then round.
    e = num.bit_length() - den.bit_length() - 64
    while True:
        n, d = (num, den << e) if e >= 0 else (num << -e, den)
        f, r = divmod(n, d)
        if f >> 64:
            e += 1
        elif not f >> 63:
            e -= 1
        else:
            break
    if 2 * r >= d:
        f += 1
        if f >> 64:
            f >>= 1
            e += 1
    return f, e


_FIRST_POWER: Final = -348
_POWERS: Final = [_pow10_fp(_FIRST_POWER + 8 * i) for i in range(87)]


def _pick_power(ue: int) -> tuple[int, int, int, int]:
    """The cached power fpconv picks for a boundary with binary exponent ue.

    fpconv starts from a logarithm estimate and steps until the product's
    exponent lands in [-60, -32]; the window is wider than one step, so where
    it starts decides which of two valid powers it takes. We replay that walk.
    Returns (significand, shift, decimal exponent, mask): the digit loop
    works on the product as a fixed-point number with ``shift`` fraction bits.
    """
    approx = int(-(ue + 87) * 0.30102999566398114)
    idx = int((approx - _FIRST_POWER) / 8)
    while True:
        current = ue + _POWERS[idx][1] + 64
        if current < -60:
            idx += 1
        elif current > -32:
            idx -= 1
        else:
            f, _ = _POWERS[idx]
            return f, -current, _FIRST_POWER + 8 * idx, (1 << -current) - 1


# Boundaries' binary exponents run from -1137 (smallest subnormal) to 960.
_UE_MIN, _UE_MAX = -1140, 970
_SCALE: Final = [_pick_power(ue) for ue in range(_UE_MIN, _UE_MAX + 1)]

# The largest p with 10**p <= 2**t, for t in [_T_MIN, 31]: where the digit
# search starts (see _grisu2).
_T_MIN: Final = -80


def _floor_log10_pow2(t: int) -> int:
    if t >= 0:
        return len(str(1 << t)) - 1
    j = 0
    while 10**j < (1 << -t):
        j += 1
    return -j


_LOG10_POW2: Final = [_floor_log10_pow2(t) for t in range(_T_MIN, 32)]
_TENS: Final = [10**i for i in range(40)]


def _grisu2(bits: int) -> tuple[str, int]:
    """Digits D and exponent K (value ~= D * 10**K) of a positive finite
    double's bit pattern, exactly as fpconv's Grisu2 produces them.

    fpconv generates digits of the upper boundary one at a time and stops at
    the first (coarsest) position where the rest of the boundary fits in the
    interval. The remainder only grows as the position gets coarser, so we
    search for that position (a few probes instead of up to 17 rounds of
    digit arithmetic), then take all the digits with one division.
    """
    e = bits >> 52
    if e:
        f = (bits & _FRAC_MASK) | _HIDDEN
        s = 11
        ue = e - 1086
        half = 1024
    else:
        f = bits
        s = 64 - f.bit_length()
        ue = -1074 - s
        half = 1 << (s - 1)
    # The double and its two rounding boundaries (halfway to each neighbour,
    # the lower one nearer at a power of two), normalised to 64 bits with a
    # common exponent as fpconv's normalize and get_normalized_boundaries
    # leave them; then fpconv's rounded 64x64 -> high-64 multiply by the
    # cached power, with one unit of safety margin off each boundary.
    c, sh, k, mask = _SCALE[ue - _UE_MIN]
    w = f << s
    upper = ((w + half) * c + _HALF >> 64) - 1
    lower = ((w - (half >> 1 if f == _HIDDEN else half)) * c + _HALF >> 64) + 1
    wfrac = upper - (w * c + _HALF >> 64)
    delta = upper - lower

    if upper & mask <= delta:
        # Position 0 fits. fpconv's integer loop tests "<=" where its
        # fraction loop tests "<", so this holds even when a remainder equal
        # to delta failed every fractional position: then p >= 0 regardless.
        p = 0
        while p < 9 and upper % (_TENS[p + 1] << sh) <= delta:
            p += 1
    else:
        # Somewhere below 0: lo fits (the interval is wider than 10**lo),
        # hi does not. Most doubles stop within two places of lo, short
        # decimals much higher, so probe upward twice, then bisect.
        lo = _LOG10_POW2[delta.bit_length() - 1 - sh - _T_MIN]
        hi = 0
        probes = 0
        while hi - lo > 1:
            mid = lo + 1 if probes < 2 else (lo + hi) >> 1
            probes += 1
            t = _TENS[-mid]
            if (upper * t) & mask < delta * t:
                lo = mid
            else:
                hi = mid
        p = lo

    if p >= 0:
        unit = _TENS[p] << sh
        n, rem = divmod(upper, unit)
    else:
        t = _TENS[-p]
        scaled = upper * t
        unit = 1 << sh
        n, rem = scaled >> sh, scaled & mask
        delta *= t
        wfrac = (wfrac * t) & _M64
    # fpconv's round_digit: move the last digit down toward the double itself
    # while that stays inside the interval and gets closer.
    while rem < wfrac and delta - rem >= unit and (rem + unit < wfrac or wfrac - rem > rem + unit - wfrac):
        n -= 1
        rem += unit
    return str(n), p - k


def _layout(digits: str, k: int, neg: bool) -> str:
    """fpconv's emit_digits: plain when the number is short enough, otherwise
    exponent notation with at most 18 characters of mantissa (17 if negative)."""
    n = len(digits)
    exp = abs(k + n - 1)
    if k >= 0:
        if exp < n + 7:
            return digits + "0" * k
    elif k > -7 or exp < 4:
        offset = n + k
        if offset <= 0:
            return "0." + "0" * -offset + digits
        return digits[:offset] + "." + digits[offset:]
    # fpconv's quirk: the sign of the exponent follows the truncated mantissa,
    # its magnitude the full one.
    nd = min(n, 18 - neg)
    head = digits[0] + "." + digits[1:nd] if nd > 1 else digits[0]
    return head + ("e-" if k + nd - 1 < 0 else "e+") + str(exp)


# Non-integral doubles already written: Grisu2 in Python costs microseconds a
# score, and a range read (ZRANGE ... WITHSCORES, the job core's listings)
# writes the same scores again and again. Only finite non-integral values
# are kept, so no two keys that compare equal (0 and -0, NaN) can meet here;
# the table is emptied when full.
_WRITTEN: Final[dict[float, bytes]] = {}
_WRITTEN_MAX: Final = 4096


def format_double(x: float) -> bytes:
    """A double as Valkey's d2string writes it (score replies, RESP3 doubles)."""
    if x.is_integer() and -_LL_HALF <= x <= _LL_HALF:
        if x:
            return b"%d" % x
        return b"-0" if _BITS(_PACK(x))[0] >> 63 else b"0"
    text = _WRITTEN.get(x)
    if text is not None:
        return text
    if x != x:
        return b"nan"
    if x == _INF:
        return b"inf"
    if x == _NINF:
        return b"-inf"
    bits = _BITS(_PACK(x))[0]
    if bits >> 63:
        digits, k = _grisu2(bits & ~_HALF)
        text = ("-" + _layout(digits, k, True)).encode()
    else:
        digits, k = _grisu2(bits)
        text = _layout(digits, k, False).encode()
    if len(_WRITTEN) >= _WRITTEN_MAX:
        _WRITTEN.clear()
    _WRITTEN[x] = text
    return text


# The compiled parse (util/cbits.pyx), when built: a finite nonzero literal
# read as float() reads it, without the call through the float type.
_k: Final = native.load("util.cbits")
_string2d: Final[Callable[[bytes], float | None] | None] = None if _k is None else _k.string2d
_SPACE: Final = b" \t\n\v\f\r"
_INF_WORDS: Final = (b"inf", b"+inf", b"-inf", b"infinity", b"+infinity", b"-infinity")


def parse_double(b: bytes) -> float | None:
    """A score or weight as Valkey's string2d reads it, or None where Valkey
    refuses it; callers pick the error text, which differs between commands.

    Python's float() is correctly rounded like fast_float, so it gives the
    same value; what differs is what it accepts: surrounding whitespace and
    digit-group underscores (refused by Valkey) and out-of-range literals,
    which it turns into inf or 0 where Valkey reports a range error.
    """
    if _string2d is not None:  # the compiled parse answers every finite nonzero literal
        x = _string2d(b)
        if x is not None:
            return x
    if b.isdigit() and len(b) < 16:  # the common case: a plain integral score
        return float(int(b))
    if not b or b[0] in _SPACE or b[-1] in _SPACE:
        return None
    try:
        x = float(b)
    except ValueError:
        return None
    # 95 is "_": given bytes, bytes.__contains__ first tries the argument as
    # an index and formats the TypeError it then drops (a third of GEOADD).
    if x != x or 95 in b:
        return None
    if x == _INF or x == _NINF:
        if b.lower() not in _INF_WORDS:
            return None  # a finite literal that overflowed
    elif not x and b.lower().partition(b"e")[0].strip(b"+-.0"):
        return None  # a nonzero literal that underflowed to zero
    return x

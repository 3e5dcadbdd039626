"""Doubles as Valkey 9 reads and writes them.

Valkey 9 prints a double that holds an integer of magnitude up to
LLONG_MAX/2 as that integer, and any other in its shortest round-trip digits
laid out by the grisu "fpconv" rules: plain when the number is short enough,
exponent notation (``1.5e-7``, ``1e+21``) otherwise. The digits come
from our rendering of the same Grisu2 algorithm (see below).
"""

from __future__ import annotations

import math
import struct

_INF = float("inf")
_LL_HALF = float((2**63 - 1) // 2)


# -- Grisu2, as Valkey's fpconv_dtoa runs it ------------------------------------
#
# Valkey's digits come from Grisu2, which is not always the shortest
# round-trip form and sometimes ends on a different last digit than Python's
# repr (720889748556924.2 prints as 720889748556924.3). To be byte-exact we run
# the same algorithm: 64-bit "diy-fp" arithmetic with one cached power of ten,
# whose table is computed here from exact integers.

_M64 = (1 << 64) - 1
_HIDDEN = 1 << 52


def _cached_power(k: int) -> tuple[int, int]:
    """10**k as a 64-bit significand f and binary exponent e, rounded to nearest."""
    if k >= 0:
        n = 10**k
        shift = n.bit_length() - 64
        if shift >= 0:
            f = (n + (1 << (shift - 1))) >> shift if shift > 0 else n
            e = shift
        else:
            f, e = n << -shift, shift
    else:
        d = 10 ** (-k)
        s = 64 + d.bit_length() - 1
        f = ((1 << s) + d // 2) // d
        while f >= (1 << 64):
            s -= 1
            f = ((1 << s) + d // 2) // d
        while f < (1 << 63):
            s += 1
            f = ((1 << s) + d // 2) // d
        e = -s
    if f >> 64:
        f >>= 1
        e += 1
    return f, e


_POWERS = [_cached_power(-348 + 8 * i) for i in range(87)]
_TENS = [10**i for i in range(19, -1, -1)]


def _mul(af: int, ae: int, bf: int, be: int) -> tuple[int, int]:
    lo = 0xFFFFFFFF
    ah, al, bh, bl = af >> 32, af & lo, bf >> 32, bf & lo
    ah_bl, al_bh, al_bl, ah_bh = ah * bl, al * bh, al * bl, ah * bh
    tmp = (ah_bl & lo) + (al_bh & lo) + (al_bl >> 32) + (1 << 31)
    return (ah_bh + (ah_bl >> 32) + (al_bh >> 32) + (tmp >> 32)) & _M64, ae + be + 64


def _round_digit(digits: list[int], delta: int, rem: int, kappa: int, frac: int) -> None:
    while rem < frac and delta - rem >= kappa and (
        ((rem + kappa) & _M64) < frac or frac - rem > ((rem + kappa) & _M64) - frac
    ):
        digits[-1] -= 1
        rem = (rem + kappa) & _M64


def grisu2(d: float) -> tuple[str, int]:
    """Digits D and exponent K with d ~= D * 10**K, as fpconv produces them."""
    bits = struct.unpack("<Q", struct.pack("<d", d))[0]
    f = bits & (_HIDDEN - 1)
    e = (bits >> 52) & 0x7FF
    if e:
        f += _HIDDEN
        e -= 1075
    else:
        e = -1074
    # boundaries
    uf, ue = (f << 1) + 1, e - 1
    while not uf & (_HIDDEN << 1):
        uf <<= 1
        ue -= 1
    uf <<= 10
    ue -= 10
    ls = 2 if f == _HIDDEN else 1
    lf, le = (f << ls) - 1, e - ls
    lf <<= le - ue
    le = ue
    # normalize w
    wf, we = f, e
    while not wf & _HIDDEN:
        wf <<= 1
        we -= 1
    wf <<= 11
    we -= 11
    approx = int(-(ue + 87) * 0.30102999566398114)
    idx = int((approx + 348) / 8)
    while True:
        cur = ue + _POWERS[idx][1] + 64
        if cur < -60:
            idx += 1
        elif cur > -32:
            idx -= 1
        else:
            break
    k = -348 + idx * 8
    cf, ce = _POWERS[idx]
    wf, we = _mul(wf, we, cf, ce)
    uf, ue = _mul(uf, ue, cf, ce)
    lf, le = _mul(lf, le, cf, ce)
    lf += 1
    uf -= 1
    K = -k
    wfrac = uf - wf
    delta = uf - lf
    sh = -ue
    one = 1 << sh
    part1 = uf >> sh
    part2 = uf & (one - 1)
    digits: list[int] = []
    kappa = 10
    i = 10
    while kappa > 0:
        div = _TENS[i]
        i += 1
        digit = part1 // div
        if digit or digits:
            digits.append(digit)
        part1 -= digit * div
        kappa -= 1
        tmp = (part1 << sh) + part2
        if tmp <= delta:
            K += kappa
            _round_digit(digits, delta, tmp, (div << sh) & _M64, wfrac)
            return "".join(map(str, digits)), K
    u = 18
    while True:
        part2 *= 10
        delta *= 10
        kappa -= 1
        digit = part2 >> sh
        if digit or digits:
            digits.append(digit)
        part2 &= one - 1
        if part2 < delta:
            K += kappa
            _round_digit(digits, delta, part2, one, (wfrac * _TENS[u]) & _M64)
            return "".join(map(str, digits)), K
        u -= 1


_CACHE: dict[float, bytes] = {}


def format_double(x: float) -> bytes:
    if x != x:
        return b"nan"
    if x == _INF:
        return b"inf"
    if x == -_INF:
        return b"-inf"
    if x == 0.0:
        return b"-0" if math.copysign(1.0, x) < 0 else b"0"
    if x.is_integer() and -_LL_HALF <= x <= _LL_HALF:
        return b"%d" % int(x)
    cached = _CACHE.get(x)
    if cached is not None:
        return cached
    digits, k = grisu2(-x if x < 0 else x)
    neg = x < 0
    n = len(digits)
    exp = abs(k + n - 1)
    if k >= 0 and exp < n + 7:
        s = digits + "0" * k
    elif k < 0 and (k > -7 or exp < 4):
        offset = n + k
        if offset <= 0:
            s = "0." + "0" * (-offset) + digits
        else:
            s = digits[:offset] + "." + digits[offset:]
    else:
        n = min(n, 18 - neg)
        e = k + n - 1 if n == len(digits) else k + len(digits) - 1
        s = digits[0] + ("." + digits[1:n] if n > 1 else "") + "e" + ("-" if e < 0 else "+") + str(abs(e))
    out = ("-" + s if neg else s).encode()
    if len(_CACHE) >= 65536:
        _CACHE.clear()
    _CACHE[x] = out
    return out


def parse_double(b: bytes) -> float | None:
    """Valkey's string-to-double rules: no spaces, no NaN, the whole string.

    Returns None where Valkey would refuse the value; callers pick the error
    text, which differs between commands.
    """
    if not b:
        return None
    c = b[0]
    if c in b" \t\n\r\v\f" or b[-1] in b" \t\n\r\v\f":
        return None
    try:
        x = float(b)
    except ValueError:
        return None
    if x != x:
        return None
    if b"_" in b:
        # Python accepts digit separators; C's strtod does not.
        return None
    if math.isinf(x):
        low = b.lower().lstrip(b"+-")
        if low not in (b"inf", b"infinity"):
            # A finite literal that overflowed: strtod reports ERANGE.
            return None
    elif x == 0.0 and b.lower().partition(b"e")[0].strip(b"+-.0"):
        # A nonzero literal that underflowed to zero: ERANGE too.
        return None
    return x

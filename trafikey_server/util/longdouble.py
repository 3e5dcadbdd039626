"""INCRBYFLOAT's arithmetic: C ``long double`` (x87, 64-bit significand).

Valkey parses both operands with ``strtold``, adds them in long double, and
prints the sum with ``%.17Lf`` before trimming trailing zeros. That is why
``INCRBYFLOAT k 0.1`` then ``0.2`` reads back ``0.3`` on Valkey, where a
double would give ``0.30000000000000004``. Python has no long double, so the
values are kept as exact ``Fraction``s and rounded to the 64-bit significand
(ties to even, subnormals on their fixed grid) after every operation, which
reproduces the C results exactly. Only INCRBYFLOAT and HINCRBYFLOAT come
here; exactness matters more than speed, but no input may make the exact
arithmetic blow up: exponents far outside the long double range are decided
from the digit count alone, before any big power is computed.
"""

from __future__ import annotations

import re
from fractions import Fraction

from .errors import NOT_FLOAT_MSG, CommandError

_MANT = 64
_MIN_EXP = -16382  # smallest normal binary exponent
_MAX_EXP = 16383  # largest binary exponent
_MAX = Fraction(((1 << _MANT) - 1) << (_MAX_EXP - 63))
_INF = float("inf")

# strtold's decimal and hexadecimal forms, after an optional single sign.
_DEC = re.compile(rb"(\d*)(?:\.(\d*))?(?:[eE]([+-]?\d+))?")
_HEX = re.compile(rb"0[xX]([0-9a-fA-F]*)(?:\.([0-9a-fA-F]*))?(?:[pP]([+-]?\d+))?")
_INFS = (b"inf", b"infinity")

# Valkey copies the argument into a buffer of this size and refuses longer.
MAX_CHARS = 5 * 1024

NAN_OR_INF_MSG = b"ERR increment would produce NaN or Infinity"

# Decimal exponents (of the leading digit) past these are out of range for
# any long double: above ~1.19e4932 or below half the smallest subnormal
# (~3.6e-4951). Between them the exact value is computed and rounded.
_DEC_OVER = 4933
_DEC_UNDER = -4953
# The same for binary exponents.
_BIN_OVER = _MAX_EXP + 1
_BIN_UNDER = _MIN_EXP - 63 - 2


# Python refuses int <-> str conversions past 4300 digits by default (a
# process-wide guard we leave alone), and a long double can need ~5000:
# convert in chunks below the limit instead.
_CHUNK = 4000
_CHUNK_POW: int = 10**_CHUNK


def _int_of(digits: bytes) -> int:
    if len(digits) <= _CHUNK:
        return int(digits)
    head, tail = digits[:-_CHUNK], digits[-_CHUNK:]
    return _int_of(head) * _CHUNK_POW + int(tail)


def _str_of(n: int) -> str:
    if n < _CHUNK_POW:
        return str(n)
    head, tail = divmod(n, _CHUNK_POW)
    return _str_of(head) + str(tail).rjust(_CHUNK, "0")


def _exponent(exp: bytes | None) -> int:
    """An exponent's value, clamped far outside every range that matters
    (it may have thousands of digits)."""
    if not exp:
        return 0
    neg = exp[:1] == b"-"
    digits = exp.lstrip(b"+-").lstrip(b"0") or b"0"
    v = int(digits) if len(digits) <= 18 else 10**18
    return -v if neg else v


def _round(x: Fraction, subnormal: bool = True) -> Fraction | float:
    """x rounded to the nearest long double (ties to even); +-inf on
    overflow. With subnormal=False the significand keeps 64 bits whatever
    the exponent (the first of glibc's two roundings of hex input)."""
    if x == 0:
        return x
    neg = x < 0
    a = -x if neg else x
    n, d = a.numerator, a.denominator
    e = n.bit_length() - d.bit_length()
    # a is in [2**e, 2**(e+1)) after this correction.
    if (n << -e if e < 0 else n) < (d << e if e > 0 else d):
        e -= 1
    if subnormal:
        e = max(e, _MIN_EXP)  # subnormals keep fewer bits
    shift = _MANT - 1 - e
    if shift >= 0:
        q, r = divmod(n << shift, d)
        den = d
    else:
        q, r = divmod(n, d << -shift)
        den = d << -shift
    twice = 2 * r
    if twice > den or (twice == den and q & 1):
        q += 1
    out = Fraction(q << -shift) if shift < 0 else Fraction(q, 1 << shift)
    if out > _MAX:
        return -_INF if neg else _INF
    return -out if neg else out


def _exact_dec(whole: bytes, frac: bytes, exp: bytes | None) -> Fraction | float | None:
    digits = (whole + frac).lstrip(b"0")
    if not digits:
        return Fraction(0)
    e10 = _exponent(exp) - len(frac)
    lead = e10 + len(digits) - 1  # decimal exponent of the leading digit
    if lead > _DEC_OVER:
        return _INF
    if lead < _DEC_UNDER:
        return None  # underflows to zero
    mant = _int_of(digits)
    return Fraction(mant * 10**e10) if e10 >= 0 else Fraction(mant, 10**-e10)


def _exact_hex(whole: bytes, frac: bytes, exp: bytes | None) -> Fraction | float | None:
    mant = int((whole + frac) or b"0", 16)
    if mant == 0:
        return Fraction(0)
    e2 = _exponent(exp) - 4 * len(frac)
    lead = e2 + mant.bit_length() - 1
    if lead > _BIN_OVER:
        return _INF
    if lead < _BIN_UNDER:
        return None
    exact = Fraction(mant << e2) if e2 >= 0 else Fraction(mant, 1 << -e2)
    if lead < _MIN_EXP:
        # glibc rounds a hex significand to 64 bits before fitting it to
        # the subnormal grid: a second rounding, seen when the first lands
        # exactly halfway (e.g. 0x1.0000000000000001p-16446 reads as 0).
        return _round(exact, subnormal=False)
    return exact


def parse(b: bytes) -> Fraction | float | None:
    """Valkey's string2ld: strtold over the whole string.

    The value as an exact Fraction, +-inf for an infinity literal, or None
    where Valkey refuses it: empty, too long, leading space, trailing junk,
    NaN, and finite literals that overflow or underflow to zero (ERANGE).
    A result that is merely subnormal is accepted, as strtold returns it.
    """
    if not b or len(b) >= MAX_CHARS or b[0] in b" \t\n\r\v\f":
        return None
    neg = b[0] == 45  # '-'
    body = b[1:] if b[0] in b"+-" else b
    if body.lower() in _INFS:
        return -_INF if neg else _INF
    m = _HEX.fullmatch(body)
    if m is not None:
        whole, frac = m.group(1), m.group(2) or b""
        if not whole and not frac:
            return None  # "0x" alone: strtold reads the "0" and stops
        exact = _exact_hex(whole, frac, m.group(3))
    else:
        m = _DEC.fullmatch(body)
        if m is None:
            return None
        whole, frac = m.group(1), m.group(2) or b""
        if not whole and not frac:
            return None
        exact = _exact_dec(whole, frac, m.group(3))
    if exact is None or isinstance(exact, float):
        return None  # ERANGE: out of range either way
    v = _round(-exact if neg else exact)
    if isinstance(v, float) or (v == 0 and exact != 0):
        return None
    return v


def times(v: Fraction | float, k: int) -> Fraction | float:
    """v * k in long double: the exact product rounded to the nearest long
    double (an infinity stays one). Blocking commands turn their seconds to
    milliseconds so."""
    if isinstance(v, float):
        return v * k
    return _round(v * k)


def format(v: Fraction) -> bytes:
    """``%.17Lf`` with trailing zeros (and a bare dot) removed; "-0" is "0"."""
    neg = v < 0
    a = -v if neg else v
    q, r = divmod(a.numerator * 10**17, a.denominator)
    twice = 2 * r
    if twice > a.denominator or (twice == a.denominator and q & 1):
        q += 1
    digits = _str_of(q).rjust(18, "0")
    s = (digits[:-17] + "." + digits[-17:]).rstrip("0").rstrip(".")
    if neg and s != "0":
        s = "-" + s
    return s.encode()


def incr_by_float(current: bytes | None, incr: bytes) -> bytes:
    """The new text of a value holding ``current`` (None: absent) after
    adding ``incr``; raises Valkey's errors."""
    value = Fraction(0) if current is None else parse(current)
    by = parse(incr)
    if value is None or by is None:
        raise CommandError(NOT_FLOAT_MSG)
    if isinstance(value, float) or isinstance(by, float):
        # An infinity operand: any sum is infinite or NaN.
        raise CommandError(NAN_OR_INF_MSG)
    total = _round(value + by)
    if isinstance(total, float):
        raise CommandError(NAN_OR_INF_MSG)
    return format(total)

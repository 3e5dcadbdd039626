"""Doubles as Valkey 9 reads and writes them.

Valkey 9 prints a double that holds an integer of magnitude up to
LLONG_MAX/2 as that integer, and any other in its shortest round-trip digits
laid out by the grisu "fpconv" rules: plain when the number is short enough,
exponent notation (``1.5e-7``, ``1e+21``) otherwise. Python's ``repr``
finds the same shortest digits; we only redo the layout.
"""

from __future__ import annotations

import math

_INF = float("inf")
_LL_HALF = float((2**63 - 1) // 2)


def _digits(x: float) -> tuple[str, int]:
    """Shortest digits D and exponent K with abs(x) == D * 10**K."""
    r = repr(abs(x))
    mant, _, exp = r.partition("e")
    whole, _, frac = mant.partition(".")
    if frac == "0":
        frac = ""
    digits = whole + frac
    k = (int(exp) if exp else 0) - len(frac)
    stripped = digits.lstrip("0")
    digits = stripped.rstrip("0")
    k += len(stripped) - len(digits)
    return digits, k


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
    digits, k = _digits(x)
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
    return ("-" + s if neg else s).encode()


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

"""Glob patterns as Valkey's stringmatchlen reads them (KEYS, SCAN MATCH, ...).

A pattern is translated once into a Python regular expression and cached, so
matching many keys against one pattern runs in C. The translation follows
Valkey's byte-by-byte walk, including its quirks: an unterminated ``[``
class takes the rest of the pattern, a reversed range ``[z-a]`` is swapped,
``a-]`` inside a class is a range ending at ``]`` (the class goes on), and a
trailing lone backslash is a literal backslash.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import lru_cache

_DOT = b"."


def _class(pattern: bytes, i: int, n: int) -> tuple[bytes, int]:
    """The regex for the class opening at pattern[i] == '[', and the index
    just past it."""
    i += 1
    negate = i < n and pattern[i] == 0x5E  # '^'
    if negate:
        i += 1
    members = bytearray()
    while True:
        if i >= n:
            break
        ch = pattern[i]
        if ch == 0x5C and n - i >= 2:  # backslash: next byte literal
            i += 1
            members.append(pattern[i])
        elif ch == 0x5D:  # ']'
            i += 1
            break
        elif n - i >= 3 and pattern[i + 1] == 0x2D:  # 'a-z'
            lo, hi = ch, pattern[i + 2]
            if lo > hi:
                lo, hi = hi, lo
            members.extend(range(lo, hi + 1))
            i += 2
        else:
            members.append(ch)
        i += 1
    chosen = set(members)
    if negate:
        chosen = set(range(256)) - chosen
    if not chosen:
        return b"(?!)", i
    if len(chosen) == 256:
        return _DOT, i
    return b"[" + b"".join(b"\\x%02x" % b for b in sorted(chosen)) + b"]", i


@lru_cache(maxsize=256)
def _compile(pattern: bytes) -> re.Pattern[bytes]:
    out: list[bytes] = []
    i = 0
    n = len(pattern)
    while i < n:
        ch = pattern[i]
        if ch == 0x2A:  # '*': a run of stars is one
            while i < n and pattern[i] == 0x2A:
                i += 1
            out.append(b".*")
            continue
        if ch == 0x3F:  # '?'
            out.append(_DOT)
        elif ch == 0x5B:  # '['
            part, i = _class(pattern, i, n)
            out.append(part)
            continue
        elif ch == 0x5C and n - i >= 2:
            i += 1
            out.append(re.escape(pattern[i : i + 1]))
        else:
            out.append(re.escape(pattern[i : i + 1]))
        i += 1
    return re.compile(b"".join(out), re.DOTALL)


def match(pattern: bytes, s: bytes) -> bool:
    """True if s matches the glob pattern (case-sensitive).

    Valkey's walk never starts on an empty string, so "" matches only the
    empty pattern; its callers treat a lone "*" as "everything" first."""
    if pattern == b"*":
        return True
    if not s:
        return not pattern
    return _compile(bytes(pattern)).fullmatch(s) is not None


def matcher(pattern: bytes) -> Callable[[bytes], bool]:
    """A fast predicate for many strings against one pattern."""
    if pattern == b"*":
        return lambda s: True
    fm = _compile(bytes(pattern)).fullmatch
    empty = not pattern
    return lambda s: fm(s) is not None if s else empty

"""Glob patterns as Valkey's ``stringmatchlen`` reads them (KEYS, SCAN MATCH, ...).

A pattern is translated once into a Python regular expression and cached, so
matching many keys against one pattern runs in C. The translation follows
Valkey's byte-by-byte walk, quirks included:

- ``[`` opens a class that ``]`` closes only after at least zero members:
  ``[]`` is an empty class (matches nothing) and ``[^]`` matches any byte; an
  unterminated class takes the rest of the pattern as members.
- ``x-y`` inside a class is a range even when ``y`` is ``]`` (the class then
  goes on), a reversed range is swapped, and the bounds compare as C's signed
  ``char``: bytes 0x80-0xff sort *below* 0x00, so ``[a-\\xff]`` is the range
  -1..97.
- ``\\`` escapes the next byte, in or out of a class; a lone trailing
  backslash is a literal backslash.
- A run of ``*`` is one star. A star is tried only against non-empty rests,
  which cannot change a result because what follows a star always consumes
  a byte.
- Valkey stops recursing past 1000 nested stars: a pattern needing more than
  1000 stars followed by something else never matches.
- The empty string matches only the empty pattern; callers that treat ``*``
  as "everything" (KEYS, SCAN, HSCAN, ZSCAN) do so before matching.

Valkey's matcher gives up on a star as soon as the rest of the pattern failed
at every later position (``skipLongerMatches``), which keeps it polynomial.
Python's backtracking ``re`` would be exponential on patterns like
``*a*a*a*a*b``, so each star but the last is compiled as an atomic group
that takes the leftmost place its segment fits. That is the same answer: a
segment preceded by a star can always absorb extra bytes, so the leftmost
place is never worse than a later one.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import lru_cache
from typing import Final

_ANY: Final = b"."
_NOTHING: Final = b"(?!)"
_MAX_NESTING: Final = 1000
_STAR: Final = None  # token for a run of stars


def _signed(b: int) -> int:
    """A byte as C's (signed) char compares it."""
    return b - 256 if b >= 128 else b


def _class(pattern: bytes, i: int, n: int) -> tuple[bytes, int]:
    """The regex for the class opening at pattern[i] == '[', and the index
    just past it (Valkey's walk, one member at a time)."""
    i += 1
    negate = i < n and pattern[i] == 0x5E  # '^'
    if negate:
        i += 1
    members: set[int] = set()
    while True:
        if i >= n:  # unterminated: the class ends with the pattern
            break
        ch = pattern[i]
        if ch == 0x5C and n - i >= 2:  # backslash: the next byte, literally
            i += 1
            members.add(pattern[i])
        elif ch == 0x5D:  # ']'
            i += 1
            break
        elif n - i >= 3 and pattern[i + 1] == 0x2D:  # 'a-z'
            lo, hi = _signed(ch), _signed(pattern[i + 2])
            if lo > hi:
                lo, hi = hi, lo
            members.update(b for b in range(256) if lo <= _signed(b) <= hi)
            i += 2
        else:
            members.add(ch)
        i += 1
    if negate:
        members = set(range(256)) - members
    if not members:
        return _NOTHING, i
    if len(members) == 256:
        return _ANY, i
    return b"[" + b"".join(b"\\x%02x" % b for b in sorted(members)) + b"]", i


def _tokens(pattern: bytes) -> list[bytes | None]:
    """The pattern as one regex piece per byte-consuming element, with
    ``_STAR`` for each run of stars."""
    out: list[bytes | None] = []
    i = 0
    n = len(pattern)
    while i < n:
        ch = pattern[i]
        if ch == 0x2A:  # '*'
            while i < n and pattern[i] == 0x2A:
                i += 1
            out.append(_STAR)
            continue
        if ch == 0x3F:  # '?'
            out.append(_ANY)
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
    return out


@lru_cache(maxsize=256)
def _compile(pattern: bytes) -> re.Pattern[bytes] | None:
    """The compiled pattern, or None if it can never match a non-empty string."""
    segments: list[list[bytes]] = [[]]
    for tok in _tokens(pattern):
        if tok is _STAR:
            segments.append([])
        else:
            segments[-1].append(tok)
    stars = len(segments) - 1
    last = segments[-1]
    if stars - (0 if last else 1) > _MAX_NESTING:
        return None
    out = [b"".join(segments[0])]
    if stars:
        for seg in segments[1:-1]:
            out.append(b"(?>.*?" + b"".join(seg) + b")")
        out.append(b".*" + b"".join(last))
    return re.compile(b"".join(out), re.DOTALL)


def match(pattern: bytes, s: bytes) -> bool:
    """True if s matches the glob pattern (case-sensitive)."""
    if pattern == b"*":
        return True
    if not s:
        return not pattern
    rx = _compile(bytes(pattern))
    return rx is not None and rx.fullmatch(s) is not None


def _never(s: bytes) -> bool:
    return False


def matcher(pattern: bytes) -> Callable[[bytes], bool]:
    """A fast predicate for many strings against one pattern."""
    if pattern == b"*":
        return lambda s: True
    rx = _compile(bytes(pattern))
    if rx is None:
        return _never
    fm = rx.fullmatch
    if not pattern:
        return lambda s: not s
    return lambda s: bool(s) and fm(s) is not None

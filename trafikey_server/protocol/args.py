"""A small cursor over a request's arguments.

Valkey's handlers walk ``c->argv`` with an index and compare option words
with ``strcasecmp`` (which stops at a NUL byte), and read numbers with
``getLongLongFromObjectOrReply`` and friends, whose error texts clients
match on. ``Args`` packages those habits once, so a handler reads
``a.word()`` / ``a.int()`` in the order Valkey reads its arguments (the
order decides which error a bad request gets) instead of retyping
parse-or-raise lines.
"""

from __future__ import annotations

import builtins

from ..util.errors import NOT_FLOAT_MSG, CommandError, syntax
from ..util.floats import parse_double
from ..util.parsing import to_int


def cstr(arg: bytes) -> bytes:
    """An argument as C string functions (and a ``%s`` in Valkey's replies)
    see it: up to its first NUL. (``0 in arg`` is a memchr; ``find`` would
    be a method call by name on every argument read.)"""
    if 0 in arg:
        return arg[:arg.index(0)]
    return arg


def error_text(arg: bytes) -> bytes:
    """An argument as ``addReplyErrorFormat``'s ``%s`` prints it: up to its
    first NUL, with CR and LF as spaces (either would end the error line)."""
    return cstr(arg).replace(b"\r", b" ").replace(b"\n", b" ")


def word(arg: bytes) -> bytes:
    """An option word as ``strcasecmp`` compares it: cut at its first NUL,
    lowercased."""
    if 0 in arg:
        arg = arg[:arg.index(0)]
    return arg.lower()


class Args:
    """``argv`` from ``pos`` on. Every reader advances the cursor; a missing
    argument is Valkey's syntax error unless the caller names another."""

    __slots__ = ("argv", "pos")

    def __init__(self, argv: list[bytes], pos: int = 1) -> None:
        self.argv = argv
        self.pos = pos

    def __bool__(self) -> bool:
        return self.pos < len(self.argv)

    def left(self) -> int:
        return len(self.argv) - self.pos

    def peek_word(self) -> bytes:
        """The next argument as an option word, without consuming it
        (``b""`` at the end)."""
        return word(self.argv[self.pos]) if self.pos < len(self.argv) else b""

    def next(self, err: bytes | None = None) -> bytes:
        """The next argument as sent."""
        if self.pos >= len(self.argv):
            raise CommandError(err) if err is not None else syntax()
        v = self.argv[self.pos]
        self.pos += 1
        return v

    def word(self, err: bytes | None = None) -> bytes:
        """The next argument as an option word (see ``word``)."""
        return word(self.next(err))

    def rest(self) -> list[bytes]:
        """Everything not yet read; the cursor moves to the end."""
        v = self.argv[self.pos:]
        self.pos = len(self.argv)
        return v

    def int(self, err: bytes = b"ERR value is not an integer or out of range", missing: bytes | None = None) -> int:
        """The next argument as Valkey's string2ll reads it."""
        v = to_int(self.next(missing))
        if v is None:
            raise CommandError(err)
        return v

    def float(self, err: bytes = NOT_FLOAT_MSG, missing: bytes | None = None) -> float:
        """The next argument as Valkey's string2d reads it (NaN refused)."""
        v = parse_double(self.next(missing))
        if v is None or v != v:
            raise CommandError(err)
        return v

    def count(self, lo: builtins.int, err: bytes, missing: bytes | None = None) -> builtins.int:
        """An integer that must be at least ``lo`` (COUNT, numkeys): a
        non-integer and an integer out of range get the same ``err``, as in
        the Valkey commands that read counts with getRangeLongFromObjectOrReply."""
        v = to_int(self.next(missing))
        if v is None or v < lo:
            raise CommandError(err)
        return v


def mpop_args(argv: list[bytes], numkeys_at: int, ends: tuple[bytes, bytes]) -> tuple[list[bytes], bool, int]:
    """The arguments LMPOP, BLMPOP, ZMPOP and BZMPOP share, read in Valkey's
    order: numkeys, the keys, one of the two ``ends`` words (LEFT|RIGHT,
    MIN|MAX) and an optional COUNT. Answers the keys, whether the second
    end was named, and the count (1 when not given)."""
    a = Args(argv, numkeys_at)
    numkeys = a.count(1, b"ERR numkeys should be greater than 0")
    where_at = numkeys_at + numkeys + 1
    if where_at >= len(argv):
        raise syntax()
    a.pos = where_at
    end = a.word()
    if end not in ends:
        raise syntax()
    count = -1
    while a:
        if count == -1 and a.peek_word() == b"count" and a.left() > 1:
            a.pos += 1
            count = a.count(1, b"ERR count should be greater than 0")
        else:
            raise syntax()
    return argv[numkeys_at + 1:where_at], end == ends[1], 1 if count == -1 else count

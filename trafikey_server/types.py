"""The value types a key can hold, and their names as TYPE reports them.

A string is ``bytes`` (or ``bytearray`` once APPEND/SETRANGE grew it in
place, which Valkey reports as the ``raw`` encoding); a hash is ``Hash``; a
sorted set is ``ZSet`` (see ``zset.py``). Handlers test ``type(v) is X``:
exact type checks are the cheapest dispatch Python has.
"""

from __future__ import annotations

from .zset import ZSet


class Hash(dict):  # type: ignore[type-arg]
    """A hash: field -> value. ``big`` records Valkey's one-way switch from
    listpack to hashtable encoding, which OBJECT ENCODING reports."""

    __slots__ = ("big",)

    def __init__(self) -> None:
        super().__init__()
        self.big = False


STRING_TYPES = (bytes, bytearray)


def type_name(v: object) -> bytes:
    t = type(v)
    if t is bytes or t is bytearray:
        return b"string"
    if t is Hash:
        return b"hash"
    if t is ZSet:
        return b"zset"
    return b"none"

"""The hash's class, and the classes of strings.

A string is ``bytes`` (or ``bytearray`` once APPEND/SETRANGE grew it in
place, which Valkey reports as the ``raw`` encoding); a hash is ``Hash``; a
sorted set is ``ZSet`` (see ``zset.py``). Handlers test ``type(v) is X``:
exact type checks are the cheapest dispatch Python has. What the server
knows of each type beyond its commands (its TYPE name, encodings,
persistence, ...) is its record in ``valuetypes.py``.
"""

from __future__ import annotations


class Hash(dict):  # type: ignore[type-arg]
    """A hash: field -> value. ``big`` records Valkey's one-way switch from
    listpack to hashtable encoding, which OBJECT ENCODING reports."""

    __slots__ = ("big",)

    def __init__(self) -> None:
        super().__init__()
        self.big = False


STRING_TYPES = (bytes, bytearray)

"""The hash's class, and the classes of strings.

A string is ``bytes`` (or ``bytearray`` once APPEND/SETRANGE grew it in
place, which Valkey reports as the ``raw`` encoding); a hash is ``Hash``; a
sorted set is ``ZSet`` (see ``zset.py``). Handlers test ``type(v) is X``:
exact type checks are the cheapest dispatch Python has. What the server
knows of each type beyond its commands (its TYPE name, encodings,
persistence, ...) is its record in ``valuetypes.py``.
"""

from __future__ import annotations


class Hash(dict[bytes, bytes]):
    """A hash: field -> value. ``big`` records Valkey's one-way switch from
    listpack to hashtable encoding, which OBJECT ENCODING reports.

    ``ttl`` maps the fields that carry an expiry to its absolute time in ms,
    and is None while no field has one, so a plain hash pays nothing. As
    in Valkey, a field past its time stays stored (HLEN counts it) until
    the active sweep reaps it or a write overwrites it; every read hides
    it. A field gets a TTL only in the hashtable encoding."""

    __slots__ = ("big", "ttl")

    def __init__(self) -> None:
        super().__init__()
        self.big = False
        self.ttl: dict[bytes, int] | None = None

    def is_expired(self, field: bytes, now: int) -> bool:
        """A stored field past its time (Valkey's entryIsExpired)."""
        ttl = self.ttl
        if ttl is None:
            return False
        t = ttl.get(field)
        return t is not None and t < now

    def live_get(self, field: bytes, now: int) -> bytes | None:
        """The field's value unless it is absent or past its time."""
        v = self.get(field)
        if v is not None and self.ttl is not None:
            t = self.ttl.get(field)
            if t is not None and t < now:
                return None
        return v

    def live_items(self, now: int) -> list[tuple[bytes, bytes]]:
        """Every field and value not past its time, in stored order."""
        ttl = self.ttl
        if ttl is None:
            return list(self.items())
        return [(f, v) for f, v in self.items() if not (f in ttl and ttl[f] < now)]

    def drop(self, field: bytes) -> bytes | None:
        """Delete a stored field (expired or not) with its TTL."""
        v = self.pop(field, None)
        if v is not None and self.ttl is not None and self.ttl.pop(field, None) is not None and not self.ttl:
            self.ttl = None
        return v

    def set_ttl(self, field: bytes, when: int) -> None:
        if self.ttl is None:
            self.ttl = {}
        self.ttl[field] = when
        self.big = True

    def clear_ttl(self, field: bytes) -> bool:
        """Persist a field; True if it had a TTL."""
        ttl = self.ttl
        if ttl is None or ttl.pop(field, None) is None:
            return False
        if not ttl:
            self.ttl = None
        return True

    def reap(self, now: int, budget: int) -> list[bytes]:
        """Delete up to ``budget`` fields past their time (the active sweep)."""
        ttl = self.ttl
        if ttl is None:
            return []
        due = [f for f, t in ttl.items() if t < now][:budget]
        for f in due:
            self.drop(f)
        return due


STRING_TYPES = (bytes, bytearray)

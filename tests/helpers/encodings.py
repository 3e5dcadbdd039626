"""OBJECT ENCODING of a string key compared between the two servers."""

from __future__ import annotations

EMBSTR, RAW = b"$6\r\nembstr\r\n", b"$3\r\nraw\r\n"


def assert_encodings_agree(pair, key: str, had_expire: bool = False) -> None:
    """OBJECT ENCODING of key on both servers must be the same, with one
    exception. The Valkey under test is built with libc malloc, and under a
    key of 108 to 111 bytes, whether an expire attached to an existing
    embstr fits in place depends on the heap's state (what malloc gives
    back): Valkey then usually answers raw, sometimes embstr, for the very
    same commands. trafikey answers raw; only that pair is let through, for
    a key that has or had an expire (``had_expire``: PERSIST leaves the
    reallocated object behind)."""
    v, t = pair.both("OBJECT", "ENCODING", key)
    if (v == EMBSTR and t == RAW and 108 <= len(key) <= 111
            and (had_expire or pair.v.call("TTL", key) != b":-1\r\n")):
        return
    assert t == v, (key[:12], v, t)

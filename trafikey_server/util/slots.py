"""Cluster hash slots, computed as Valkey Cluster computes them.

A key's slot is CRC16 (XMODEM: polynomial 0x1021, initial value 0) of the
key, or of its hash tag, modulo 16384. The hash tag is what lies between
the first ``{`` and the first ``}`` after it, when that is not empty; so
``emq:{orders}:pending`` and ``emq:{orders}:job:7`` share a slot, and a
queue whose keys all carry one tag lives on one cluster node.

The server is never a cluster, but with ``cluster-slot-checks yes`` it
refuses a request whose keys a cluster would refuse (CROSSSLOT), so that
a layout which breaks on Valkey Cluster breaks in tests first.
"""

from __future__ import annotations

from collections.abc import Iterable

SLOTS = 16384
CROSSSLOT = b"CROSSSLOT Keys in request don't hash to the same slot"


def _table() -> list[int]:
    out = []
    for byte in range(256):
        crc = byte << 8
        for _ in range(8):
            crc = ((crc << 1) ^ 0x1021) if crc & 0x8000 else (crc << 1)
        out.append(crc & 0xFFFF)
    return out


_CRC = _table()


def crc16(data: bytes) -> int:
    crc = 0
    table = _CRC
    for b in data:
        crc = ((crc << 8) & 0xFFFF) ^ table[((crc >> 8) ^ b) & 0xFF]
    return crc


def hash_part(key: bytes) -> bytes:
    """The part of key that is hashed: its non-empty hash tag, or all of it."""
    start = key.find(b"{")
    if start >= 0:
        end = key.find(b"}", start + 1)
        if end > start + 1:
            return key[start + 1 : end]
    return key


def keyslot(key: bytes) -> int:
    return crc16(hash_part(key)) & (SLOTS - 1)


def same_slot(keys: Iterable[bytes]) -> bool:
    """True when every key hashes to one slot (vacuously for no keys).

    Tags are compared before any CRC is computed: keys of one queue share
    their tag, so the common case costs no hashing at all."""
    first: bytes | None = None
    slot = -1
    for key in keys:
        part = hash_part(key)
        if first is None:
            first = part
            continue
        if part == first:
            continue
        if slot < 0:
            slot = keyslot(first)
        if crc16(part) & (SLOTS - 1) != slot:
            return False
    return True


def pattern_slot(pattern: bytes) -> int:
    """The one slot every key a glob pattern can match lies in, or -1 when
    the keys may be spread (Valkey's patternHashSlot). A wildcard, a class
    or an escape before a closed hash tag could put the tag anywhere; an
    empty tag ``{}`` means the whole key is hashed, which a pattern with a
    wildcard cannot pin down either."""
    tag = -1  # where the first "{" is; -2 after an empty tag
    for i, ch in enumerate(pattern):
        if ch in b"*?[\\":
            return -1
        if tag == -1 and ch == 0x7B:  # {
            tag = i
        elif tag >= 0 and ch == 0x7D:  # }
            if i == tag + 1:
                tag = -2
            else:
                return crc16(pattern[tag + 1:i]) & (SLOTS - 1)
    return crc16(pattern) & (SLOTS - 1)

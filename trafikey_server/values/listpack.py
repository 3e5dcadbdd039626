"""Listpack elements as Valkey's listpack.c lays them out: the encoders the
stream nodes append with, and the readers that decode them in place.

A stream keeps each node as the listpack body Valkey would hold (its
entries, without the 6-byte header and the end byte), so a node's byte
size, its RDB form and its boundaries are Valkey's by construction.
"""

from __future__ import annotations

from typing import Final

from ..util.parsing import to_int

LP_HDR: Final = 6  # total bytes (u32) + number of elements (u16)
NUMELE_UNKNOWN: Final = 65535
_U64: Final = 1 << 64


def backlen(n: int) -> bytes:
    """lpEncodeBacklen: an element's size, 7 bits a byte, highest first,
    every byte after the first flagged."""
    if n <= 127:
        return bytes((n,))
    if n < 16383:
        return bytes((n >> 7, (n & 127) | 128))
    if n < 2097151:
        return bytes((n >> 14, ((n >> 7) & 127) | 128, (n & 127) | 128))
    if n < 268435455:
        return bytes((n >> 21, ((n >> 14) & 127) | 128, ((n >> 7) & 127) | 128, (n & 127) | 128))
    return bytes((n >> 28, ((n >> 21) & 127) | 128, ((n >> 14) & 127) | 128,
                  ((n >> 7) & 127) | 128, (n & 127) | 128))


def enc_int(v: int) -> bytes:
    """lpAppendInteger: the smallest integer encoding, back length included."""
    if -4096 <= v <= 4095:
        return SMALL_INT_ENC[v]
    return _enc_int(v)


def _enc_int(v: int) -> bytes:
    if 0 <= v <= 127:
        return bytes((v, 1))
    if -4096 <= v <= 4095:
        u = v & 0x1FFF
        return bytes((0xC0 | (u >> 8), u & 0xFF, 2))
    if -32768 <= v <= 32767:
        return b"\xf1" + (v & 0xFFFF).to_bytes(2, "little") + b"\x03"
    if -(1 << 23) <= v < (1 << 23):
        return b"\xf2" + (v & 0xFFFFFF).to_bytes(3, "little") + b"\x04"
    if -(1 << 31) <= v < (1 << 31):
        return b"\xf3" + (v & 0xFFFFFFFF).to_bytes(4, "little") + b"\x05"
    return b"\xf4" + (v & 0xFFFFFFFFFFFFFFFF).to_bytes(8, "little") + b"\x09"


# The encodings of -4096..4095, indexed by the value itself (negative
# values wrap to the end), so the common stream deltas and counters are one
# lookup.
SMALL_INT_ENC: Final[tuple[bytes, ...]] = (tuple(_enc_int(v) for v in range(4096))
                                           + tuple(_enc_int(v) for v in range(-4096, 0)))


# Every one-byte bytes, indexed by its value.
_BYTE: Final[tuple[bytes, ...]] = tuple(bytes((i,)) for i in range(256))


def enc_str(s: bytes) -> bytes:
    """lpAppend of a string: an integer encoding when the text is a
    canonical 64-bit integer (lpStringToInt64), else a string encoding."""
    n = len(s)
    if n <= 20:
        v = to_int(s)
        if v is not None:
            return enc_int(v)
    if n < 64:  # one-byte parts from a table: bytes((x,)) is a call through the type
        return _BYTE[0x80 | n] + s + _BYTE[n + 1]
    if n < 4096:
        return _BYTE[0xE0 | (n >> 8)] + _BYTE[n & 0xFF] + s + backlen(n + 2)
    return b"\xf0" + n.to_bytes(4, "little") + s + backlen(n + 5)


def read(lp: bytes | bytearray, p: int) -> tuple[bytes, int]:
    """The element at p as Valkey prints it, and the offset of the next."""
    b = lp[p]
    if b < 0x80:
        return b"%d" % b, p + 2
    if b < 0xC0:
        n = b & 0x3F
        return bytes(lp[p + 1:p + 1 + n]), p + 2 + n
    v, q = read_int_or_str(lp, p)
    return (b"%d" % v if isinstance(v, int) else v), q


def read_int(lp: bytes | bytearray, p: int) -> tuple[int, int]:
    """An element Valkey wrote as an integer, and the offset of the next."""
    b = lp[p]
    if b < 0x80:
        return b, p + 2
    v, q = read_int_or_str(lp, p)
    if not isinstance(v, int):
        v = int(v)
    return v, q


def read_int_or_str(lp: bytes | bytearray, p: int) -> tuple[int | bytes, int]:
    b = lp[p]
    if b < 0x80:
        return b, p + 2
    if b < 0xC0:
        n = b & 0x3F
        return bytes(lp[p + 1:p + 1 + n]), p + 2 + n
    if b < 0xE0:
        v = ((b & 0x1F) << 8) | lp[p + 1]
        return (v - 8192 if v >= 4096 else v), p + 3
    if b < 0xF0:
        n = ((b & 0x0F) << 8) | lp[p + 1]
        return bytes(lp[p + 2:p + 2 + n]), p + 2 + n + len(backlen(n + 2))
    if b == 0xF0:
        n = int.from_bytes(lp[p + 1:p + 5], "little")
        return bytes(lp[p + 5:p + 5 + n]), p + 5 + n + len(backlen(n + 5))
    k = _INT_WIDTH.get(b)
    if k is None:
        raise ValueError(f"bad listpack entry encoding 0x{b:02x}")
    return int.from_bytes(lp[p + 1:p + 1 + k], "little", signed=True), p + 2 + k


def skip(lp: bytes | bytearray, p: int) -> int:
    """The offset of the element after the one at p."""
    b = lp[p]
    if b < 0x80:
        return p + 2
    if b < 0xC0:
        return p + 2 + (b & 0x3F)
    if b < 0xE0:
        return p + 3
    return read_int_or_str(lp, p)[1]


_INT_WIDTH: Final = {0xF1: 2, 0xF2: 3, 0xF3: 4, 0xF4: 8}


def blob(body: bytes | bytearray, numele: int) -> bytes:
    """The whole listpack (header, body, end byte) of a body of numele elements."""
    total = LP_HDR + len(body) + 1
    return total.to_bytes(4, "little") + min(numele, NUMELE_UNKNOWN).to_bytes(2, "little") + bytes(body) + b"\xff"

"""The RDB format's encodings of values: lengths, strings (integer and LZF
forms), doubles, listpacks and ziplists, and the type bytes.

Each value type's module in ``values/`` (``string``, ``hash``, ``zset``, ...)
writes and reads its own values with these; ``persist/rdb.py`` frames the file around
them (header, aux fields, databases, expiry, checksum).
"""

from __future__ import annotations

import math
import struct
from collections.abc import Iterator
from contextlib import contextmanager

from ..util.parsing import to_int

# Value types.
T_STRING, T_LIST, T_SET, T_ZSET, T_HASH, T_ZSET_2 = 0, 1, 2, 3, 4, 5
T_HASH_ZIPMAP, T_ZSET_ZIPLIST, T_HASH_ZIPLIST = 9, 12, 13
T_HASH_LISTPACK, T_ZSET_LISTPACK, T_HASH_2 = 16, 17, 22
T_LIST_ZIPLIST, T_LIST_QUICKLIST, T_LIST_QUICKLIST_2 = 10, 14, 18
_ENC_INT8, _ENC_INT16, _ENC_INT32, _ENC_LZF = 0, 1, 2, 3
_INT32 = (-(2**31), 2**31 - 1)
PACK_DOUBLE = struct.Struct("<d").pack
UNPACK_DOUBLE = struct.Struct("<d").unpack_from

# Valkey's bounds for the listpack encodings, applied as it applies them.
LISTPACK_SAFE = 1 << 30


class RdbError(Exception):
    """A file that cannot be loaded; the message says why and where."""


class Truncated(RdbError):
    pass


# -- writing ----------------------------------------------------------------------


def encode_len(n: int) -> bytes:
    if n < 64:
        return bytes((n,))
    if n < 16384:
        return bytes((0x40 | (n >> 8), n & 0xFF))
    if n <= 0xFFFFFFFF:
        return b"\x80" + n.to_bytes(4, "big")
    return b"\x81" + n.to_bytes(8, "big")


# Whether encode_string compresses as Valkey's rdbcompression does: on only
# while a DUMP payload is written (files are written uncompressed).
_lzf = False


@contextmanager
def compressing(on: bool) -> Iterator[None]:
    """encode_string LZF-compresses within this block when on."""
    global _lzf
    before = _lzf
    _lzf = on
    try:
        yield
    finally:
        _lzf = before


def encode_string(s: bytes | bytearray) -> bytes:
    """A string, integer-encoded when Valkey's rdbTryIntegerEncoding would
    (a canonical integer of at most 11 characters that fits 32 bits)."""
    n = len(s)
    if _lzf and n > 20:
        return encode_string_lzf(s)
    if n <= 11 and n:
        v = to_int(bytes(s))
        if v is not None and _INT32[0] <= v <= _INT32[1]:
            if -128 <= v <= 127:
                return b"\xc0" + v.to_bytes(1, "little", signed=True)
            if -32768 <= v <= 32767:
                return b"\xc1" + v.to_bytes(2, "little", signed=True)
            return b"\xc2" + v.to_bytes(4, "little", signed=True)
    return encode_len(n) + bytes(s)


def encode_string_lzf(s: bytes | bytearray) -> bytes:
    """A string as Valkey's rdbSaveRawString writes it with rdbcompression
    on: integer-encoded as ``encode_string``, else LZF-compressed when over
    20 bytes and compression saves at least 4 of them, else raw."""
    n = len(s)
    if n > 20:
        packed = lzf_compress(bytes(s), n - 4)
        if packed is not None:
            return b"\xc3" + encode_len(len(packed)) + encode_len(n) + packed
        return encode_len(n) + bytes(s)
    return encode_string(s)


_LZF_MAX_OFF = 1 << 13
_LZF_MAX_REF = (1 << 8) + (1 << 3)
_LZF_MAX_LIT = 1 << 5


def lzf_compress(d: bytes, out_len: int) -> bytes | None:
    """liblzf's compressor with Valkey's settings (a 2**16-slot hash of the
    next three bytes, the "very fast" rehash of two positions after a
    match), so the output is the bytes Valkey writes; None when the result
    would not fit in out_len bytes. The hash table starts empty, where
    Valkey's starts with whatever its stack held: for a few inputs its
    output can differ from this one (both decompress alike)."""
    n = len(d)
    if n < 3 or out_len <= 0:
        return None
    htab: dict[int, int] = {}
    out = bytearray(1)  # the first literal run's header
    lit = 0
    ip = 0
    hval = (d[0] << 8) | d[1]
    end2 = n - 2
    while ip < end2:
        hval = ((hval << 8) | d[ip + 2]) & 0xFFFFFFFF
        slot = ((hval >> 8) - hval * 5) & 0xFFFF
        ref = htab.get(slot, 0)
        htab[slot] = ip
        off = ip - ref - 1
        if ref > 0 and off < _LZF_MAX_OFF and d[ref + 2] == d[ip + 2] and d[ref] == d[ip] \
                and d[ref + 1] == d[ip + 1]:
            length = 2
            maxlen = min(n - ip - 2, _LZF_MAX_REF)
            op = len(out)
            if op + 4 >= out_len and op - (not lit) + 4 >= out_len:
                return None
            if lit:
                out[op - lit - 1] = lit - 1
            else:
                del out[-1]
            mismatch = False
            if maxlen > 16:
                for _ in range(16):
                    length += 1
                    if d[ref + length] != d[ip + length]:
                        mismatch = True
                        break
            if not mismatch:
                length += 1
                while length < maxlen and d[ref + length] == d[ip + length]:
                    length += 1
            length -= 2
            ip += 1
            if length < 7:
                out.append((off >> 8) + (length << 5))
            else:
                out.append((off >> 8) + (7 << 5))
                out.append(length - 7)
            out.append(off & 0xFF)
            lit = 0
            out.append(0)
            ip += length + 1
            if ip >= end2:
                break
            ip -= 2
            hval = (d[ip] << 8) | d[ip + 1]
            for _ in range(2):
                hval = ((hval << 8) | d[ip + 2]) & 0xFFFFFFFF
                htab[((hval >> 8) - hval * 5) & 0xFFFF] = ip
                ip += 1
        else:
            if len(out) >= out_len:
                return None
            lit += 1
            out.append(d[ip])
            ip += 1
            if lit == _LZF_MAX_LIT:
                out[len(out) - lit - 1] = lit - 1
                lit = 0
                out.append(0)
    if len(out) + 3 > out_len:
        return None
    while ip < n:
        lit += 1
        out.append(d[ip])
        ip += 1
        if lit == _LZF_MAX_LIT:
            out[len(out) - lit - 1] = lit - 1
            lit = 0
            out.append(0)
    if lit:
        out[len(out) - lit - 1] = lit - 1
    else:
        del out[-1]
    return bytes(out)


# -- reading ----------------------------------------------------------------------


class Reader:
    __slots__ = ("d", "p", "n")

    def __init__(self, data: bytes) -> None:
        self.d = data
        self.p = 0
        self.n = len(data)

    def take(self, k: int) -> bytes:
        p = self.p
        if p + k > self.n:
            raise Truncated(f"unexpected end of file at offset {self.n} (needed {k} bytes at {p}): "
                            "the file is truncated")
        self.p = p + k
        return self.d[p:p + k]

    def byte(self) -> int:
        p = self.p
        if p >= self.n:
            raise Truncated(f"unexpected end of file at offset {p}: the file is truncated")
        self.p = p + 1
        return self.d[p]

    def length(self) -> tuple[int, bool]:
        """A length, or (encoding, True) for a specially encoded string."""
        b = self.byte()
        kind = b >> 6
        if kind == 0:
            return b & 0x3F, False
        if kind == 1:
            return ((b & 0x3F) << 8) | self.byte(), False
        if kind == 3:
            return b & 0x3F, True
        if b == 0x80:
            return int.from_bytes(self.take(4), "big"), False
        if b == 0x81:
            return int.from_bytes(self.take(8), "big"), False
        raise RdbError(f"unknown length encoding 0x{b:02x} at offset {self.p - 1}")

    def plain_len(self) -> int:
        n, enc = self.length()
        if enc:
            raise RdbError(f"an encoded string where a length was expected at offset {self.p - 1}")
        return n

    def string(self) -> bytes:
        n, enc = self.length()
        if not enc:
            return self.take(n)
        if n == _ENC_INT8:
            return b"%d" % int.from_bytes(self.take(1), "little", signed=True)
        if n == _ENC_INT16:
            return b"%d" % int.from_bytes(self.take(2), "little", signed=True)
        if n == _ENC_INT32:
            return b"%d" % int.from_bytes(self.take(4), "little", signed=True)
        if n == _ENC_LZF:
            at = self.p
            clen = self.plain_len()
            ulen = self.plain_len()
            out = lzf_decompress(self.take(clen), ulen)
            if len(out) != ulen:
                raise RdbError(f"LZF data at offset {at} decompresses to {len(out)} bytes, "
                               f"not the {ulen} announced")
            return out
        raise RdbError(f"unknown string encoding {n} at offset {self.p - 1}")


def lzf_decompress(src: bytes, ulen: int) -> bytes:
    """LZF, the compression Valkey applies to strings over 20 bytes."""
    out = bytearray()
    i = 0
    n = len(src)
    try:
        while i < n:
            ctrl = src[i]
            i += 1
            if ctrl < 32:
                out += src[i:i + ctrl + 1]
                i += ctrl + 1
                continue
            length = ctrl >> 5
            if length == 7:
                length += src[i]
                i += 1
            ref = len(out) - ((ctrl & 0x1F) << 8) - src[i] - 1
            i += 1
            length += 2
            if ref < 0:
                raise RdbError("LZF back reference before the start of the data")
            if ref + length <= len(out):
                out += out[ref:ref + length]
            else:
                for k in range(length):
                    out.append(out[ref + k])
    except IndexError:
        raise RdbError("LZF data ends inside a sequence") from None
    if len(out) > ulen:
        raise RdbError("LZF data longer than announced")
    return bytes(out)


def listpack_entries(blob: bytes) -> list[bytes]:
    """The entries of a listpack, each as Valkey would print it."""
    if len(blob) < 7:
        raise RdbError("listpack shorter than its header")
    total = int.from_bytes(blob[0:4], "little")
    if total != len(blob) or blob[-1] != 0xFF:
        raise RdbError("listpack size or terminator does not match")
    out: list[bytes] = []
    p = 6
    end = len(blob) - 1
    while p < end:
        b = blob[p]
        if b < 0x80:
            out.append(b"%d" % b)
            size = 1
        elif b < 0xC0:
            n = b & 0x3F
            out.append(blob[p + 1:p + 1 + n])
            size = 1 + n
        elif b < 0xE0:
            v = ((b & 0x1F) << 8) | blob[p + 1]
            out.append(b"%d" % (v - 8192 if v >= 4096 else v))
            size = 2
        elif b < 0xF0:
            n = ((b & 0x0F) << 8) | blob[p + 1]
            out.append(blob[p + 2:p + 2 + n])
            size = 2 + n
        elif b == 0xF0:
            n = int.from_bytes(blob[p + 1:p + 5], "little")
            out.append(blob[p + 5:p + 5 + n])
            size = 5 + n
        elif b in (0xF1, 0xF2, 0xF3, 0xF4):
            k = {0xF1: 2, 0xF2: 3, 0xF3: 4, 0xF4: 8}[b]
            out.append(b"%d" % int.from_bytes(blob[p + 1:p + 1 + k], "little", signed=True))
            size = 1 + k
        else:
            raise RdbError(f"bad listpack entry encoding 0x{b:02x}")
        back = 1 if size < 128 else 2 if size < 16384 else 3 if size < 2097152 else 4 if size < 268435456 else 5
        p += size + back
    if p != end:
        raise RdbError("listpack entries overrun its end")
    return out


def zipmap_entries(blob: bytes) -> list[bytes]:
    """The fields and values, in turn, of a zipmap (hashes in files from
    Redis before 2.6): a count byte, then each field and value as a length
    (one byte below 254, else 254 and four bytes) and its bytes, a value
    followed by its unused bytes; 255 ends it."""
    n = len(blob)

    def length(p: int) -> tuple[int, int]:
        if p >= n:
            raise RdbError("zipmap ends without its terminator")
        b = blob[p]
        if b < 254:
            return b, p + 1
        if b == 254:
            if p + 5 > n:
                raise RdbError("zipmap length runs past its end")
            return int.from_bytes(blob[p + 1:p + 5], "little"), p + 5
        return -1, p + 1

    out: list[bytes] = []
    p = 1
    while True:
        klen, p = length(p)
        if klen < 0:
            break
        if p + klen > n:
            raise RdbError("zipmap field runs past its end")
        field = blob[p:p + klen]
        vlen, p = length(p + klen)
        if vlen < 0 or p >= n:
            raise RdbError("zipmap field without a value")
        free = blob[p]
        p += 1
        if p + vlen + free > n:
            raise RdbError("zipmap value runs past its end")
        out.append(field)
        out.append(blob[p:p + vlen])
        p += vlen + free
    if p != n:
        raise RdbError("zipmap has bytes after its terminator")
    return out


def ziplist_entries(blob: bytes, label: str = "Ziplist") -> list[bytes]:
    """The entries of a ziplist (files from Redis before 7), checked as
    Valkey's ziplistValidateIntegrity checks one deeply (a ziplist is
    always converted on load, so always deeply): the byte count, the tail
    offset and the entry count of its header, each entry's record of the
    previous one's length, and no entry past the end. Refused in Valkey's
    words, ``label`` naming the ziplist ("Hash ziplist", ...)."""
    broken = f"{label} integrity check failed."
    n = len(blob)
    if n < 11 or blob[-1] != 0xFF or int.from_bytes(blob[0:4], "little") != n:
        raise RdbError(broken)
    tail = int.from_bytes(blob[4:8], "little")
    count = int.from_bytes(blob[8:10], "little")
    out: list[bytes] = []
    p = 10
    end = n - 1
    prev_len = 0
    last = 10
    while p < end:
        start = p
        if blob[p] == 0xFE:
            if p + 5 > end:
                raise RdbError(broken)
            recorded = int.from_bytes(blob[p + 1:p + 5], "little")
            p += 5
        else:
            recorded = blob[p]
            p += 1
        if recorded != prev_len or p >= end:
            raise RdbError(broken)
        b = blob[p]
        kind = b >> 6
        if kind == 0:
            size, head = b & 0x3F, 1
        elif kind == 1:
            size, head = ((b & 0x3F) << 8) | blob[p + 1], 2
        elif kind == 2:
            size, head = int.from_bytes(blob[p + 1:p + 5], "big"), 5
        else:
            size, head = 0, 1
            k = {0xC0: 2, 0xD0: 4, 0xE0: 8, 0xF0: 3, 0xFE: 1}.get(b)
            if k is not None:
                size = k
            elif not 0xF1 <= b <= 0xFD:
                raise RdbError(broken)
        if p + head + size > end:
            raise RdbError(broken)
        if kind < 3:
            out.append(blob[p + head:p + head + size])
        elif size:
            out.append(b"%d" % int.from_bytes(blob[p + 1:p + 1 + size], "little", signed=True))
        else:
            out.append(b"%d" % ((b & 0x0F) - 1))
        p += head + size
        prev_len = p - start
        last = start
    if p != end or tail != last or (count != 0xFFFF and count != len(out)):
        raise RdbError(broken)
    return out


def parse_score(text: bytes) -> float:
    try:
        v = float(text)
    except ValueError:
        raise RdbError(f"bad sorted set score {text!r}") from None
    if math.isnan(v):
        raise RdbError("a sorted set score is NaN")
    return v


def pairs(items: list[bytes], what: str, key: bytes, unique: str = "") -> list[tuple[bytes, bytes]]:
    """Fields (members) and values in turn, as pairs; ``unique`` (the
    refusal's words) refuses a field twice or one without a value, as
    Valkey's deep check of a ziplist or zipmap does."""
    if len(items) % 2:
        raise RdbError(unique or f"{what} under key {key!r} has an odd number of entries")
    if unique and len(set(items[0::2])) != len(items) // 2:
        raise RdbError(unique)
    return list(zip(items[0::2], items[1::2], strict=True))

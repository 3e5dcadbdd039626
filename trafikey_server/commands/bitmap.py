"""Bitmap commands: SETBIT, GETBIT, BITCOUNT, BITPOS, BITOP, BITFIELD and
BITFIELD_RO.

A bitmap is a string value; an edited one is a ``bytearray`` stored in
place (Valkey's dbUnshareStringValue makes it raw even when the edit
changes nothing). Bit ``n`` is bit ``7 - n % 8`` of byte ``n // 8``, so the
string read as a big-endian integer holds the bits in order. Counting and
searching run in C over whole slices (``int.bit_count``; a search compares
64 KiB chunks with a run of the byte it skips, then strips the chunk that
differs), never byte by byte in Python.

A write that changes nothing (SETBIT of the bit already there, BITFIELD
whose writes all failed or stored the old value, BITOP with nothing to
store and nothing to delete) is neither signalled, notified nor logged,
as Valkey propagates only a call that made the dataset dirty; those
handlers log themselves (their AOF rule logs nothing).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Final

from ..execution.persist.aof import propagate
from ..protocol.args import word
from ..protocol.resp import ONE, ZERO, array_header, integer
from ..util import native
from ..util.errors import CommandError, not_integer, syntax, wrongtype
from ..util.parsing import int64, to_int

if TYPE_CHECKING:
    from ..keyspace.db import Db
    from ..services.client import Client

_BAD_OFFSET: Final = b"ERR bit offset is not an integer or out of range"
_BAD_BIT: Final = b"ERR bit is not an integer or out of range"
_BAD_TYPE: Final = b"ERR Invalid bitfield type. Use something like i16 u8. Note that u64 is not supported but i64 is."

# What a search for a set / a clear bit skips, a chunk at a time.
_CHUNK: Final = 1 << 16
_ZEROS: Final = bytes(_CHUNK)
_ONES: Final = b"\xff" * _CHUNK
_INVERT: Final = bytes(255 - i for i in range(256))


def _offset(c: Client, arg: bytes, bits: int = 0) -> int:
    """Valkey's getBitOffsetFromArgument: a bit offset, or with ``bits``
    (BITFIELD) ``#n`` for n fields of that width. The product wraps as the
    C multiplication does; the result must address a byte below
    proto-max-bulk-len."""
    hashed = bits > 0 and arg[:1] == b"#"
    v = to_int(arg[1:] if hashed else arg)
    if v is None:
        raise CommandError(_BAD_OFFSET)
    if hashed:
        v = int64(v * bits)
    if v < 0 or v >> 3 >= c.server.max_bulk:
        raise CommandError(_BAD_OFFSET)
    return v


def _read_string(c: Client, key: bytes) -> bytes | bytearray | None:
    """lookupKeyRead then checkType: a miss is notified."""
    db = c.db
    v = db.get(key)
    if v is None:
        db.notify(b"keymiss", key)
        return None
    t = type(v)
    if t is not bytes and t is not bytearray:
        raise wrongtype()
    return v


def _for_write(db: Db, key: bytes, nbytes: int) -> tuple[bytearray, bool]:
    """Valkey's lookupStringForBitCommand: the value under key as a
    bytearray at least ``nbytes`` long (created or zero-padded), and
    whether that created or grew it."""
    v = db.get(key)
    if v is None:
        b = bytearray(nbytes)
        db.add_string(key, b, None, signal=False)  # signalled with the write, if one is made
        return b, True
    t = type(v)
    if t is bytearray:
        b = v
    elif t is bytes:
        # Made raw in place: no change a watcher or a tracker hears of.
        b = db.unshare_string(key, v, signal=False)
    else:
        raise wrongtype()
    if len(b) < nbytes:
        b.extend(bytes(nbytes - len(b)))
        return b, True
    return b, False


def _changed(c: Client, argv: list[bytes], key: bytes, changes: int) -> None:
    """After SETBIT or BITFIELD made ``changes`` writes: signal the key,
    raise ``setbit``, count and log the call; with none, undo the dirty
    count the dispatcher adds for every write command."""
    server = c.server
    if not changes:
        server.dirty -= 1
        return
    db = c.db
    db.modified(key, b"setbit")
    server.dirty += changes - 1
    propagate(c, [argv])


# -- SETBIT / GETBIT ------------------------------------------------------------------


def setbit(c: Client, argv: list[bytes]) -> bytes:
    offset = _offset(c, argv[2])
    on = to_int(argv[3])
    if on is None or on & ~1:
        raise CommandError(_BAD_BIT)
    key = argv[1]
    byte = offset >> 3
    b, grown = _for_write(c.db, key, byte + 1)
    mask = 0x80 >> (offset & 7)
    old = b[byte] & mask
    changed = grown or bool(old) != on
    if changed:
        b[byte] = (b[byte] | mask) if on else (b[byte] & ~mask)
    _changed(c, argv, key, int(changed))
    return ONE if old else ZERO


def getbit(c: Client, argv: list[bytes]) -> bytes:
    offset = _offset(c, argv[2])
    v = _read_string(c, argv[1])
    byte = offset >> 3
    if v is None or byte >= len(v):
        return ZERO
    return ONE if v[byte] & (0x80 >> (offset & 7)) else ZERO


# -- BITCOUNT / BITPOS ------------------------------------------------------------------


def _unit(arg: bytes) -> bool:
    """BIT or BYTE: True for BIT."""
    w = word(arg)
    if w == b"bit":
        return True
    if w == b"byte":
        return False
    raise syntax()


def _int(arg: bytes) -> int:
    v = to_int(arg)
    if v is None:
        raise not_integer()
    return v


def _clamp(start: int, end: int, total: int) -> tuple[int, int]:
    if start < 0:
        start += total
    if end < 0:
        end += total
    if start < 0:
        start = 0
    if end < 0:
        end = 0
    if end >= total:
        end = total - 1
    return start, end


def _popcount(v: bytes | bytearray, lo: int, hi: int) -> int:
    """Set bits among bits lo..hi (inclusive) of v."""
    s, e = lo >> 3, hi >> 3
    with memoryview(v) as m:
        n = int.from_bytes(m[s:e + 1], "big").bit_count()
    head = v[s] & (0xFF00 >> (lo & 7)) & 0xFF  # bits before lo
    tail = v[e] & (0xFF >> ((hi & 7) + 1))  # bits after hi
    return n - head.bit_count() - tail.bit_count()


# The compiled count (util/cbits.pyx), when built: the same answers as _popcount.
_k: Final = native.load("util.cbits")
_count: Final[Callable[[bytes | bytearray, int, int], int]] = _popcount if _k is None else _k.popcount


def bitcount(c: Client, argv: list[bytes]) -> bytes:
    n = len(argv)
    if n > 5:
        raise syntax()
    if n == 2:
        v = _read_string(c, argv[1])
        if v is None or not v:
            return ZERO
        return integer(_count(v, 0, len(v) * 8 - 1))
    start = _int(argv[2])
    isbit = _unit(argv[4]) if n == 5 else False
    end = _int(argv[3]) if n >= 4 else 0
    v = _read_string(c, argv[1])
    total = 0 if v is None else len(v)
    if n < 4:
        end = total - 1
    if start < 0 and end < 0 and start > end:
        return ZERO
    if v is None:
        return ZERO
    if isbit:
        start, end = _clamp(start, end, total * 8)
        if start > end:
            return ZERO
        return integer(_count(v, start, end))
    start, end = _clamp(start, end, total)
    if start > end:
        return ZERO
    return integer(_count(v, start * 8, end * 8 + 7))


def _skip(v: bytes | bytearray, lo: int, hi: int, run: bytes) -> int:
    """The first byte of v[lo:hi] that is not ``run``'s byte, or -1."""
    i = lo
    while i < hi:
        j = min(i + _CHUNK, hi)
        chunk = v[i:j]
        if chunk != run[:j - i]:
            return j - len(chunk.lstrip(run[:1]))
        i = j
    return -1


def _first(v: bytes | bytearray, lo: int, hi: int, bit: int) -> int:
    """The first bit equal to ``bit`` among bits lo..hi of v, or -1."""
    s, e = lo >> 3, hi >> 3
    flip = 0 if bit else 0xFF
    m = 0xFF >> (lo & 7)
    if s == e:
        m &= (0xFF << (7 - (hi & 7))) & 0xFF
    x = (v[s] ^ flip) & m
    if x:
        return s * 8 + 8 - x.bit_length()
    if s == e:
        return -1
    if e > s + 1:
        j = _skip(v, s + 1, e, _ZEROS if bit else _ONES)
        if j >= 0:
            return j * 8 + 8 - (v[j] ^ flip).bit_length()
    x = (v[e] ^ flip) & (0xFF << (7 - (hi & 7))) & 0xFF
    if x:
        return e * 8 + 8 - x.bit_length()
    return -1


def bitpos(c: Client, argv: list[bytes]) -> bytes:
    bit = to_int(argv[2])
    if bit is None:
        raise not_integer()
    if bit != 0 and bit != 1:
        raise CommandError(b"ERR The bit argument must be 1 or 0.")
    n = len(argv)
    if n > 6:
        raise syntax()
    isbit = False
    end_given = n >= 5
    if n >= 4:
        start = _int(argv[3])
        if n == 6:
            isbit = _unit(argv[5])
        end = _int(argv[4]) if end_given else 0
    v = _read_string(c, argv[1])
    if v is None:
        return integer(-1) if bit else ZERO
    total = len(v)
    if n == 3:
        start, end = 0, total - 1
    elif isbit:
        start, end = _clamp(start, end, total * 8)
    else:
        start, end = _clamp(start, end if end_given else total - 1, total)
    if start > end:
        return integer(-1)
    lo, hi = (start, end) if isbit else (start * 8, end * 8 + 7)
    pos = _first(v, lo, hi, bit)
    if pos < 0 and not bit and not end_given:
        # No clear bit: past the string's end, the bitmap reads as zeros.
        pos = hi + 1
    return integer(pos)


# -- BITOP --------------------------------------------------------------------------------


def bitop(c: Client, argv: list[bytes]) -> bytes:
    op = word(argv[1])
    if op not in (b"and", b"or", b"xor", b"not"):
        raise syntax()
    if op == b"not" and len(argv) != 4:
        raise CommandError(b"ERR BITOP NOT must be called with a single source key.")
    srcs: list[bytes | bytearray | None] = [_read_string(c, k) for k in argv[3:]]
    maxlen = max((len(s) for s in srcs if s is not None), default=0)
    db = c.db
    dest = argv[2]
    if not maxlen:
        # Valkey's dbDelete: a destination still stored goes even past its
        # expiry, and the event is ``del``, not ``expired``.
        changed = db.delete_destination(dest)
        _changed_bitop(c, argv, changed)
        return ZERO
    if op == b"not":
        res = bytearray(srcs[0].translate(_INVERT))  # type: ignore[union-attr]
    else:
        # Little-endian, so a shorter string reads as zero-padded at its end.
        ints = [int.from_bytes(s, "little") if s is not None else 0 for s in srcs]
        acc = ints[0]
        if op == b"and":
            for x in ints[1:]:
                acc &= x
        elif op == b"or":
            for x in ints[1:]:
                acc |= x
        else:
            for x in ints[1:]:
                acc ^= x
        res = bytearray(acc.to_bytes(maxlen, "little"))
    db.set_string(dest, res, b"set")
    _changed_bitop(c, argv, True)
    return integer(maxlen)


def _changed_bitop(c: Client, argv: list[bytes], changed: bool) -> None:
    if not changed:
        c.server.dirty -= 1
        return
    propagate(c, [argv])


# -- BITFIELD ----------------------------------------------------------------------------

_GET, _SET, _INCRBY = 0, 1, 2
_WRAP, _SAT, _FAIL = 0, 1, 2
_OVERFLOWS: Final = {b"wrap": _WRAP, b"sat": _SAT, b"fail": _FAIL}
_OPS: Final = {b"get": (_GET, 2), b"set": (_SET, 3), b"incrby": (_INCRBY, 3)}


def _field_type(arg: bytes) -> tuple[bool, int]:
    """Valkey's getBitfieldTypeFromArgument: (signed, bits); i1..i64,
    u1..u63 (the sign letter case-sensitive)."""
    sign = arg[:1]
    if sign != b"i" and sign != b"u":
        raise CommandError(_BAD_TYPE)
    bits = to_int(arg[1:])
    signed = sign == b"i"
    if bits is None or bits < 1 or bits > (64 if signed else 63):
        raise CommandError(_BAD_TYPE)
    return signed, bits


def _get_field(v: bytes | bytearray, offset: int, bits: int, signed: bool) -> int:
    """The field at offset, bits past the string's end reading as zeros."""
    s = offset >> 3
    e = (offset + bits - 1) >> 3
    chunk = v[s:e + 1]
    width = e - s + 1
    x = int.from_bytes(chunk, "big") << (8 * (width - len(chunk)))
    x = (x >> (width * 8 - (offset & 7) - bits)) & ((1 << bits) - 1)
    if signed and x >> (bits - 1):
        x -= 1 << bits
    return x


def _set_field(b: bytearray, offset: int, bits: int, value: int) -> None:
    s = offset >> 3
    e = (offset + bits - 1) >> 3
    width = e - s + 1
    shift = width * 8 - (offset & 7) - bits
    mask = ((1 << bits) - 1) << shift
    x = int.from_bytes(b[s:e + 1], "big")
    x = (x & ~mask) | ((value << shift) & mask)
    b[s:e + 1] = x.to_bytes(width, "big")


def _overflowed(total: int, bits: int, signed: bool, owtype: int) -> tuple[bool, int]:
    """Whether total fits the field, and what to store (wrapped or
    saturated) when it does not."""
    if signed:
        lo, hi = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    else:
        lo, hi = 0, (1 << bits) - 1
    if lo <= total <= hi:
        return False, total
    if owtype == _SAT:
        return True, hi if total > hi else lo
    wrapped = total & ((1 << bits) - 1)
    if signed and wrapped >> (bits - 1):
        wrapped -= 1 << bits
    return True, wrapped


def _bitfield(c: Client, argv: list[bytes], ro: bool) -> bytes:
    ops: list[tuple[int, int, int, bool, int, int]] = []  # opcode, offset, value, signed, bits, owtype
    owtype = _WRAP
    readonly = True
    highest = 0
    n = len(argv)
    j = 2
    while j < n:
        remargs = n - j - 1
        sub = word(argv[j])
        op = _OPS.get(sub)
        if op is None or remargs < op[1]:
            if sub == b"overflow" and remargs >= 1:
                ow = _OVERFLOWS.get(word(argv[j + 1]))
                if ow is None:
                    raise CommandError(b"ERR Invalid OVERFLOW type specified")
                owtype = ow
                j += 2
                continue
            raise syntax()
        opcode = op[0]
        signed, bits = _field_type(argv[j + 1])
        offset = _offset(c, argv[j + 2], bits)
        value = 0
        if opcode != _GET:
            readonly = False
            highest = max(highest, offset + bits - 1)
            value = _int(argv[j + 3])
        ops.append((opcode, offset, value, signed, bits, owtype))
        j += 1 + op[1]
    key = argv[1]
    out = [array_header(len(ops))]
    if readonly:
        v = _read_string(c, key)
        for _, offset, _, signed, bits, _ in ops:
            out.append(integer(0 if v is None else _get_field(v, offset, bits, signed)))
        if not ro:
            c.server.dirty -= 1
        return b"".join(out)
    if ro:
        raise CommandError(b"ERR BITFIELD_RO only supports the GET subcommand")
    b, grown = _for_write(c.db, key, (highest >> 3) + 1)
    changes = 0
    null = c.r.null
    for opcode, offset, value, signed, bits, ow in ops:
        if opcode == _GET:
            out.append(integer(_get_field(b, offset, bits, signed)))
            continue
        old = _get_field(b, offset, bits, signed)
        if opcode == _INCRBY:
            over, new = _overflowed(old + value, bits, signed, ow)
            reply = new
        else:
            # An unsigned field reads the value as the C cast to uint64 does.
            over, new = _overflowed(value if signed else value & 0xFFFFFFFFFFFFFFFF, bits, signed, ow)
            reply = old
        if over and ow == _FAIL:
            out.append(null)
            continue
        out.append(integer(reply))
        _set_field(b, offset, bits, new)
        if grown or old != new:
            changes += 1
    _changed(c, argv, key, changes)
    return b"".join(out)


def bitfield(c: Client, argv: list[bytes]) -> bytes:
    return _bitfield(c, argv, False)


def bitfield_ro(c: Client, argv: list[bytes]) -> bytes:
    return _bitfield(c, argv, True)

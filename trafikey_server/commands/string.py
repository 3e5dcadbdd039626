"""String commands.

A string value is ``bytes`` or ``bytearray``; what each write stores, so
that OBJECT ENCODING reads Valkey's encoding off the value, is the string
type's rules (``values/string.py``), applied by the keyspace's string writes
(``Db.set_string``, ``Db.add_string`` ...).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from ..protocol.resp import EMPTY_BULK, OK, ONE, ZERO, array_header, bulk, integer
from ..util.errors import CommandError, not_integer, syntax, wrongtype
from ..util.longdouble import incr_by_float
from ..util.parsing import LLONG_MAX, LLONG_MIN, parse_int, to_int
from ..values.string import LcsTable, is_int_text, lcs_walk

if TYPE_CHECKING:
    from ..keyspace.db import Db
    from ..services.client import Client

_OVERFLOW: Final = b"ERR increment or decrement would overflow"
# Within these a counter is a short integer when compiled, and so are the
# bounds: the overflow test against LLONG_MAX/MIN (boxed) runs only beyond.
_SAFE_HI: Final = 1 << 61
_SAFE_LO: Final = -(1 << 61)
_TOO_BIG: Final = b"ERR string exceeds maximum allowed size (proto-max-bulk-len)"

# -- option parsing -----------------------------------------------------------------

# Option bits, in the spirit of Valkey's parseExtendedCommandArgumentsOrReply.
_NX, _XX, _GET, _KEEPTTL, _PERSIST, _EX, _PX, _EXAT, _PXAT, _IFEQ = (1 << i for i in range(10))
_ANY_EXPIRE: Final = _EX | _PX | _EXAT | _PXAT
_EXPIRE_BITS: Final = {b"ex": _EX, b"px": _PX, b"exat": _EXAT, b"pxat": _PXAT}


def option(b: bytes) -> bytes:
    """An option word as Valkey compares it: case-folded, and cut at a NUL
    byte, since the comparison runs on the C string."""
    if 0 in b:
        b = b[: b.index(b"\0")]
    return b.lower()


def _parse_flags(argv: list[bytes], is_set: bool) -> tuple[int, bytes | None, bytes | None]:
    """The option loop of SET (from argv[3]) or GETEX (from argv[2]): the
    flags, the expire argument and the IFEQ comparison value."""
    flags = 0
    expire: bytes | None = None
    ifeq: bytes | None = None
    n = len(argv)
    j = 3 if is_set else 2
    while j < n:
        opt = option(argv[j])
        has_next = j + 1 < n
        bit = _EXPIRE_BITS.get(opt)
        if bit is not None:
            if not has_next or flags & (_KEEPTTL | _PERSIST | (_ANY_EXPIRE & ~bit)):
                raise syntax()
            flags |= bit
            expire = argv[j + 1]
            j += 1
        elif is_set and opt == b"nx" and not flags & (_XX | _IFEQ):
            flags |= _NX
        elif is_set and opt == b"xx" and not flags & (_NX | _IFEQ):
            flags |= _XX
        elif is_set and opt == b"ifeq" and has_next and not flags & (_NX | _XX | _IFEQ):
            flags |= _IFEQ
            ifeq = argv[j + 1]
            j += 1
        elif is_set and opt == b"get":
            flags |= _GET
        elif is_set and opt == b"keepttl" and not flags & _ANY_EXPIRE:
            flags |= _KEEPTTL
        elif not is_set and opt == b"persist" and not flags & _ANY_EXPIRE:
            flags |= _PERSIST
        else:
            raise syntax()
        j += 1
    return flags, expire, ifeq


def _invalid_expire(name: bytes) -> CommandError:
    return CommandError(b"ERR invalid expire time in '%s' command" % option(name))


def _expire_ms(c: Client, relative: bool, seconds: bool, arg: bytes, name: bytes) -> int:
    """The absolute expiry in ms (Valkey's getExpireMillisecondsOrReply):
    must be positive, and must not overflow once scaled and offset."""
    v = parse_int(arg)
    if v <= 0 or (seconds and v > LLONG_MAX // 1000):
        raise _invalid_expire(name)
    if seconds:
        v *= 1000
    if relative:
        v += c.db.clock.ms()
        if v > LLONG_MAX:
            raise _invalid_expire(name)
    return v


def _flags_expire_ms(c: Client, flags: int, arg: bytes, name: bytes) -> int:
    return _expire_ms(c, bool(flags & (_EX | _PX)), bool(flags & (_EX | _EXAT)), arg, name)


def _bulk_or_null(c: Client, v: bytes | bytearray | None) -> bytes:
    return c.r.null if v is None else b"$%d\r\n%s\r\n" % (len(v), v)


# -- GET / SET family -------------------------------------------------------------


def get(c: Client, argv: list[bytes]) -> bytes:
    v = c.db.get_string(argv[1])
    if v is None:
        c.db.notify(b"keymiss", argv[1])
        return c.r.null
    return bulk(v)  # bytes or bytearray: the compiled writer takes both in one allocation


def set(c: Client, argv: list[bytes]) -> bytes:
    db = c.db
    key = argv[1]
    if len(argv) == 3:
        db.set_string(key, argv[2])
        return OK
    flags, expire_arg, ifeq = _parse_flags(argv, True)
    when = _flags_expire_ms(c, flags, expire_arg, b"set") if expire_arg is not None else None
    old = db.get(key)
    if old is None and flags & _GET:  # GET reads the key first
        db.notify(b"keymiss", key)
    is_string = old is None or type(old) is bytes or type(old) is bytearray
    if flags & _GET and not is_string:
        raise wrongtype()
    if flags & _IFEQ:
        if old is not None and not is_string:
            raise wrongtype()
        abort = old is None or old != ifeq
    elif flags & _NX:
        abort = old is not None
    elif flags & _XX:
        abort = old is None
    else:
        abort = False
    reply = _bulk_or_null(c, old) if flags & _GET else OK
    if abort:
        return reply if flags & _GET else c.r.null
    if when is not None and not flags & (_EX | _PX) and when <= db.clock.ms():
        # Already past: Valkey deletes an existing key instead of storing.
        # (A relative time is never past: Valkey measures it from the
        # command's start, so a clock tick during the command cannot void it.)
        if old is not None:
            db.delete(key)
            db.notify(b"expired", key)
        return reply
    _set_with_expire(db, key, argv[2], bool(flags & _KEEPTTL), when)
    return reply


def _set_with_expire(db: Db, key: bytes, value: bytes, keep_ttl: bool, when: int | None) -> None:
    """SET's (and MSETEX's) write of one key: the value with its ``set``
    event, then the new expiry with its ``expire`` event. With an expiry to
    set the old one is kept until then, as Valkey does."""
    db.set_string(key, value, b"set", keep_ttl or when is not None)
    if when is not None:
        db.expire_at(key, when)


def setnx(c: Client, argv: list[bytes]) -> bytes:
    db = c.db
    if db.get(argv[1]) is not None:
        return ZERO
    db.add_string(argv[1], argv[2], b"set")
    return ONE


def _setex(c: Client, argv: list[bytes], seconds: bool) -> bytes:
    when = _expire_ms(c, True, seconds, argv[2], argv[0])
    db = c.db
    db.set_string(argv[1], argv[3], b"set", keep_ttl=True)
    db.expire_at(argv[1], when)
    return OK


def setex(c: Client, argv: list[bytes]) -> bytes:
    return _setex(c, argv, True)


def psetex(c: Client, argv: list[bytes]) -> bytes:
    return _setex(c, argv, False)


def mget(c: Client, argv: list[bytes]) -> bytes:
    db = c.db
    null = c.r.null
    out = [array_header(len(argv) - 1)]
    for key in argv[1:]:
        v = db.get(key)
        t = type(v)
        out.append(b"$%d\r\n%s\r\n" % (len(v), v) if t is bytes or t is bytearray else null)
        if v is None:
            db.notify(b"keymiss", key)
    return b"".join(out)


def _wrong_mset(argv: list[bytes]) -> CommandError:
    return CommandError(b"ERR wrong number of arguments for '%s' command" % argv[0].lower())


def mset(c: Client, argv: list[bytes]) -> bytes:
    if len(argv) % 2 == 0:
        raise _wrong_mset(argv)
    db = c.db
    for i in range(1, len(argv), 2):
        db.set_string(argv[i], argv[i + 1])
    return OK


_INT_MAX: Final = (1 << 31) - 1


def _msetex_args(argv: list[bytes]) -> tuple[int, int, int, bytes | None]:
    """MSETEX numkeys key value ... [NX|XX] [EX|PX|EXAT|PXAT s|KEEPTTL]:
    the key count, the flags, where the expire argument is (0: none) and
    the argument. An option may repeat; a conflicting one is a syntax
    error, and so is a missing value or a trailing word."""
    n = to_int(argv[1])
    if n is None or n <= 0 or n > _INT_MAX:
        raise CommandError(b"ERR invalid numkeys value or out of range")
    if n > (len(argv) - 2) // 2:
        raise syntax()
    flags = 0
    at = 0
    j = 2 + 2 * n
    while j < len(argv):
        opt = option(argv[j])
        bit = _EXPIRE_BITS.get(opt)
        if bit is not None:
            if j + 1 >= len(argv) or flags & (_KEEPTTL | (_ANY_EXPIRE & ~bit)):
                raise syntax()
            flags |= bit
            at = j + 1
            j += 1
        elif opt == b"nx" and not flags & _XX:
            flags |= _NX
        elif opt == b"xx" and not flags & _NX:
            flags |= _XX
        elif opt == b"keepttl" and not flags & _ANY_EXPIRE:
            flags |= _KEEPTTL
        else:
            raise syntax()
        j += 1
    return n, flags, at, argv[at] if at else None


def msetex(c: Client, argv: list[bytes]) -> bytes:
    """Sets every pair or none (NX: none of the keys may exist, XX: all
    must), giving each the same expire. An expire already past is stored
    as it is, left for expiry to remove, as Valkey 9.1 does."""
    n, flags, _, expire_arg = _msetex_args(argv)
    when = _flags_expire_ms(c, flags, expire_arg, b"msetex") if expire_arg is not None else None
    db = c.db
    keys = argv[2 : 2 + 2 * n : 2]
    if flags & _NX:
        if any(db.get(k) is not None for k in keys):
            return ZERO
    elif flags & _XX:
        if not all(db.get(k) is not None for k in keys):
            return ZERO
    keep = bool(flags & _KEEPTTL)
    for i in range(2, 2 + 2 * n, 2):
        _set_with_expire(db, argv[i], argv[i + 1], keep, when)
    return ONE


def msetnx(c: Client, argv: list[bytes]) -> bytes:
    if len(argv) % 2 == 0:
        raise _wrong_mset(argv)
    db = c.db
    for i in range(1, len(argv), 2):
        if db.get(argv[i]) is not None:
            return ZERO
    for i in range(1, len(argv), 2):
        # A key named twice is overwritten by its last value, as in Valkey.
        db.set_string(argv[i], argv[i + 1])
    return ONE


def delifeq(c: Client, argv: list[bytes]) -> bytes:
    db = c.db
    v = db.get_string(argv[1])  # a write's lookup: no keymiss event
    if v is None or v != argv[2]:
        return ZERO
    db.delete(argv[1])
    db.notify(b"del", argv[1])
    return ONE


def getset(c: Client, argv: list[bytes]) -> bytes:
    db = c.db
    old = db.get_string(argv[1])
    if old is None:
        db.notify(b"keymiss", argv[1])
    reply = _bulk_or_null(c, old)
    db.set_string(argv[1], argv[2])
    return reply


def getdel(c: Client, argv: list[bytes]) -> bytes:
    db = c.db
    old = db.get_string(argv[1])
    if old is None:
        db.notify(b"keymiss", argv[1])
        return c.r.null
    reply = b"$%d\r\n%s\r\n" % (len(old), old)
    db.delete(argv[1])
    db.notify(b"del", argv[1])
    return reply


def getex(c: Client, argv: list[bytes]) -> bytes:
    flags, expire_arg, _ = _parse_flags(argv, False)
    when = _flags_expire_ms(c, flags, expire_arg, b"getex") if expire_arg is not None else None
    db = c.db
    key = argv[1]
    v = db.get_string(key)
    if v is None:
        db.notify(b"keymiss", key)
        return c.r.null
    reply = b"$%d\r\n%s\r\n" % (len(v), v)
    if when is not None:
        if not flags & (_EX | _PX) and when <= db.clock.ms():
            db.delete(key)
            db.notify(b"expired", key)
        else:
            db.expire_at(key, when)
    elif flags & _PERSIST:
        if db.persist(key):
            db.notify(b"persist", key)
    return reply


# -- in-place edits -------------------------------------------------------------------


def _check_length(c: Client, size: int, more: int) -> None:
    if size + more > c.server.max_bulk:
        raise CommandError(_TOO_BIG)


def append(c: Client, argv: list[bytes]) -> bytes:
    db = c.db
    key = argv[1]
    more = argv[2]
    v = db.get_string(key)
    if v is None:
        db.add_string(key, more, b"append")
        return integer(len(more))
    _check_length(c, len(v), len(more))
    b = v if type(v) is bytearray else db.unshare_string(key, v)
    b += more
    db.modified(key, b"append")
    return integer(len(b))


def strlen(c: Client, argv: list[bytes]) -> bytes:
    v = c.db.get_string(argv[1])
    if v is None:
        c.db.notify(b"keymiss", argv[1])
    return ZERO if v is None else integer(len(v))


def getrange(c: Client, argv: list[bytes]) -> bytes:
    start = parse_int(argv[2])
    end = parse_int(argv[3])
    v = c.db.get_string(argv[1])
    if v is None:
        c.db.notify(b"keymiss", argv[1])
        return EMPTY_BULK
    n = len(v)
    if start < 0 and end < 0 and start > end:
        return EMPTY_BULK
    if start < 0:
        start = max(n + start, 0)
    if end < 0:
        end = max(n + end, 0)
    if end >= n:
        end = n - 1
    if n == 0 or start > end:
        return EMPTY_BULK
    part = v[start : end + 1]
    return b"$%d\r\n%s\r\n" % (len(part), part)


def substr(c: Client, argv: list[bytes]) -> bytes:
    return getrange(c, argv)


def setrange(c: Client, argv: list[bytes]) -> bytes:
    offset = parse_int(argv[2])
    if offset < 0:
        raise CommandError(b"ERR offset is out of range")
    val = argv[3]
    db = c.db
    key = argv[1]
    v = db.get_string(key)
    if v is None:
        if not val:
            return ZERO
        _check_length(c, offset, len(val))
        b = bytearray(offset + len(val))
        b[offset:] = val
        db.add_string(key, b, b"setrange")
        return integer(len(b))
    if not val:
        return integer(len(v))
    _check_length(c, offset, len(val))
    b = v if type(v) is bytearray else db.unshare_string(key, v)
    if offset > len(b):
        b.extend(bytes(offset - len(b)))
    b[offset : offset + len(val)] = val
    db.modified(key, b"setrange")
    return integer(len(b))


# -- counters -------------------------------------------------------------------------


def _incr(c: Client, key: bytes, by: int) -> bytes:
    db = c.db
    entry = db.string_entry(key)
    cur = 0
    if entry is not None:
        n = to_int(entry.value)
        if n is None:
            raise not_integer()
        cur = n
    new = cur + by
    if not _SAFE_LO < new < _SAFE_HI and (new > LLONG_MAX or new < LLONG_MIN):
        raise CommandError(_OVERFLOW)
    db.set_int(key, b"%d" % new, entry, b"incrby")
    return integer(new)


def incr(c: Client, argv: list[bytes]) -> bytes:
    return _incr(c, argv[1], 1)


def decr(c: Client, argv: list[bytes]) -> bytes:
    return _incr(c, argv[1], -1)


def incrby(c: Client, argv: list[bytes]) -> bytes:
    return _incr(c, argv[1], parse_int(argv[2]))


def decrby(c: Client, argv: list[bytes]) -> bytes:
    by = parse_int(argv[2])
    if by == LLONG_MIN:
        raise CommandError(b"ERR decrement would overflow")
    return _incr(c, argv[1], -by)


def incrbyfloat(c: Client, argv: list[bytes]) -> bytes:
    db = c.db
    key = argv[1]
    v = db.get_string(key)
    text = incr_by_float(None if v is None else bytes(v), argv[2])
    if v is None:
        db.add_string(key, text, None)
    else:
        db.set_string(key, text, None, keep_ttl=True)
    if is_int_text(text):
        db.mark_float_int(key)
    db.notify(b"incrbyfloat", key)
    return b"$%d\r\n%s\r\n" % (len(text), text)


# -- LCS --------------------------------------------------------------------------------

_LCS_TYPES: Final = b"ERR The specified keys must contain string values"
_LCS_BOTH: Final = b"ERR If you want both the length and indexes, please just use IDX."
_LCS_LONG: Final = b"ERR String too long for LCS"
_LCS_MEMORY: Final = b"ERR Insufficient memory, transient memory for LCS exceeds proto-max-bulk-len"
_UINT32_MAX: Final = (1 << 32) - 1


def lcs(c: Client, argv: list[bytes]) -> bytes:
    """Valkey reads both keys (a missing one is the empty string), then the
    options; its limit on the table's size (4 bytes a cell, up to
    proto-max-bulk-len) is kept so the same requests are refused."""
    db = c.db
    va = db.get(argv[1])
    if va is None:
        db.notify(b"keymiss", argv[1])
    vb = db.get(argv[2])
    if vb is None:
        db.notify(b"keymiss", argv[2])
    if (va is not None and type(va) is not bytes and type(va) is not bytearray) or (
            vb is not None and type(vb) is not bytes and type(vb) is not bytearray):
        raise CommandError(_LCS_TYPES)
    a: bytes | bytearray = va if va is not None else b""
    b: bytes | bytearray = vb if vb is not None else b""
    getlen = getidx = withmatchlen = False
    minmatchlen = 0
    j = 3
    n = len(argv)
    while j < n:
        opt = option(argv[j])
        if opt == b"idx":
            getidx = True
        elif opt == b"len":
            getlen = True
        elif opt == b"withmatchlen":
            withmatchlen = True
        elif opt == b"minmatchlen" and j + 1 < n:
            minmatchlen = max(parse_int(argv[j + 1]), 0)
            j += 1
        else:
            raise syntax()
        j += 1
    if getlen and getidx:
        raise CommandError(_LCS_BOTH)
    if len(a) >= _UINT32_MAX - 1 or len(b) >= _UINT32_MAX - 1:
        raise CommandError(_LCS_LONG)
    if (len(a) + 1) * (len(b) + 1) * 4 > c.server.max_bulk:
        raise CommandError(_LCS_MEMORY)
    table = LcsTable(a, b, keep_rows=not getlen)
    if getlen:
        return integer(table.length(len(b)))
    common, ranges = lcs_walk(a, b, table, minmatchlen)
    if not getidx:
        return b"$%d\r\n%s\r\n" % (len(common), common)
    items = []
    for a_start, a_end, b_start, b_end in ranges:
        part = b"*2\r\n:%d\r\n:%d\r\n*2\r\n:%d\r\n:%d\r\n" % (a_start, a_end, b_start, b_end)
        if withmatchlen:
            items.append(b"*3\r\n" + part + integer(a_end - a_start + 1))
        else:
            items.append(b"*2\r\n" + part)
    return b"".join((c.r.map_header(2), b"$7\r\nmatches\r\n", array_header(len(items)), *items,
                     b"$3\r\nlen\r\n", integer(len(common))))

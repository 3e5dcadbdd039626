"""String commands.

A string value is ``bytes`` (Valkey's int/embstr/raw by length) or a
``bytearray`` once APPEND/SETRANGE changed it in place (Valkey's raw). The
integer commands store the decimal text, as Valkey's shared integers print.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..errors import CommandError, not_integer, syntax, wrongtype
from ..longdouble import incr_by_float
from ..parsing import LLONG_MAX, LLONG_MIN, parse_int, to_int
from ..resp import EMPTY_BULK, OK, ONE, ZERO, array_header, bulk, integer

if TYPE_CHECKING:
    from ..client import Client

_OVERFLOW = CommandError(b"ERR increment or decrement would overflow")
_MAX_BULK = 512 * 1024 * 1024
_TOO_BIG = b"ERR string exceeds maximum allowed size (proto-max-bulk-len)"

# option bits, as in Valkey's parseExtendedStringArgumentsOrReply
_NX, _XX, _GET, _KEEPTTL, _PERSIST, _EX, _PX, _EXAT, _PXAT, _IFEQ = (1 << i for i in range(10))
_ANY_EXPIRE = _EX | _PX | _EXAT | _PXAT


def _invalid_expire(name: bytes) -> CommandError:
    return CommandError(b"ERR invalid expire time in '%s' command" % name.lower())


def _parse_flags(argv: list[bytes], is_set: bool) -> tuple[int, bytes | None, bytes | None]:
    """Valkey's option loop: the flags, the expire argument, the IFEQ value."""
    flags = 0
    expire: bytes | None = None
    ifeq: bytes | None = None
    start = 3 if is_set else 2
    n = len(argv)
    j = start
    while j < n:
        opt = argv[j].lower()
        nxt = argv[j + 1] if j + 1 < n else None
        if is_set and opt == b"nx" and not flags & (_XX | _IFEQ):
            flags |= _NX
        elif is_set and opt == b"xx" and not flags & (_NX | _IFEQ):
            flags |= _XX
        elif is_set and opt == b"ifeq" and nxt is not None and not flags & (_NX | _XX):
            flags |= _IFEQ
            ifeq = nxt
            j += 1
        elif is_set and opt == b"get":
            flags |= _GET
        elif is_set and opt == b"keepttl" and not flags & (_PERSIST | _ANY_EXPIRE):
            flags |= _KEEPTTL
        elif not is_set and opt == b"persist" and not flags & (_KEEPTTL | _ANY_EXPIRE):
            flags |= _PERSIST
        elif opt in _EXPIRE_BITS and nxt is not None and not flags & (
            _KEEPTTL | _PERSIST | (_ANY_EXPIRE & ~_EXPIRE_BITS[opt])
        ):
            flags |= _EXPIRE_BITS[opt]
            expire = nxt
            j += 1
        else:
            raise syntax()
        j += 1
    return flags, expire, ifeq


_EXPIRE_BITS = {b"ex": _EX, b"px": _PX, b"exat": _EXAT, b"pxat": _PXAT}


def _expire_ms(c: Client, flags: int, arg: bytes, name: bytes) -> int:
    """The absolute expiry in ms (getExpireMillisecondsOrReply)."""
    v = parse_int(arg)
    seconds = bool(flags & (_EX | _EXAT))
    if v <= 0 or (seconds and v > LLONG_MAX // 1000):
        raise _invalid_expire(name)
    if seconds:
        v *= 1000
    if flags & (_EX | _PX):
        v += c.db.clock.ms()
        if v > LLONG_MAX:
            raise _invalid_expire(name)
    return v


def _string_or_null(c: Client, v: bytes | bytearray | None) -> bytes:
    return c.r.null if v is None else bulk(v)


def get(c: Client, argv: list[bytes]) -> bytes:
    v = c.db.get_string(argv[1])
    if v is None:
        return c.r.null
    return b"$%d\r\n%s\r\n" % (len(v), v)


def set(c: Client, argv: list[bytes]) -> bytes:
    db = c.db
    if len(argv) == 3:
        db.set(argv[1], argv[2])
        return OK
    flags, expire_arg, ifeq = _parse_flags(argv, True)
    when = _expire_ms(c, flags, expire_arg, b"set") if expire_arg is not None else None
    key = argv[1]
    old = db.get(key)
    if (flags & (_GET | _IFEQ)) and old is not None and type(old) is not bytes and type(old) is not bytearray:
        raise wrongtype()
    if flags & _NX:
        abort = old is not None
    elif flags & _XX:
        abort = old is None
    elif flags & _IFEQ:
        abort = old is None or old != ifeq
    else:
        abort = False
    if abort:
        return _string_or_null(c, old) if flags & _GET else c.r.null
    db.set(key, argv[2], keep_ttl=bool(flags & _KEEPTTL))
    if when is not None:
        db.set_expire(key, when)
    if flags & _GET:
        return _string_or_null(c, old)
    return OK


def setnx(c: Client, argv: list[bytes]) -> bytes:
    if c.db.get(argv[1]) is not None:
        return ZERO
    c.db.add(argv[1], argv[2])
    return ONE


def _setex(c: Client, argv: list[bytes], unit_ms: int) -> bytes:
    v = parse_int(argv[2])
    if v <= 0 or (unit_ms == 1000 and v > LLONG_MAX // 1000):
        raise _invalid_expire(argv[0])
    when = v * unit_ms + c.db.clock.ms()
    if when > LLONG_MAX:
        raise _invalid_expire(argv[0])
    c.db.set(argv[1], argv[3])
    c.db.set_expire(argv[1], when)
    return OK


def setex(c: Client, argv: list[bytes]) -> bytes:
    return _setex(c, argv, 1000)


def psetex(c: Client, argv: list[bytes]) -> bytes:
    return _setex(c, argv, 1)


def mget(c: Client, argv: list[bytes]) -> bytes:
    db = c.db
    null = c.r.null
    out = [array_header(len(argv) - 1)]
    for key in argv[1:]:
        v = db.get(key)
        t = type(v)
        out.append(b"$%d\r\n%s\r\n" % (len(v), v) if t is bytes or t is bytearray else null)  # type: ignore[arg-type]
    return b"".join(out)


def _wrong_mset(argv: list[bytes]) -> CommandError:
    return CommandError(b"ERR wrong number of arguments for '%s' command" % argv[0].lower())


def mset(c: Client, argv: list[bytes]) -> bytes:
    if len(argv) % 2 == 0:
        raise _wrong_mset(argv)
    db = c.db
    for i in range(1, len(argv), 2):
        db.set(argv[i], argv[i + 1])
    return OK


def msetnx(c: Client, argv: list[bytes]) -> bytes:
    if len(argv) % 2 == 0:
        raise _wrong_mset(argv)
    db = c.db
    for i in range(1, len(argv), 2):
        if db.get(argv[i]) is not None:
            return ZERO
    for i in range(1, len(argv), 2):
        db.set(argv[i], argv[i + 1])
    return ONE


def getset(c: Client, argv: list[bytes]) -> bytes:
    old = c.db.get_string(argv[1])
    c.db.set(argv[1], argv[2])
    return _string_or_null(c, old)


def getdel(c: Client, argv: list[bytes]) -> bytes:
    old = c.db.get_string(argv[1])
    if old is None:
        return c.r.null
    c.db.delete(argv[1])
    return bulk(old)


def getex(c: Client, argv: list[bytes]) -> bytes:
    flags, expire_arg, _ = _parse_flags(argv, False)
    when = _expire_ms(c, flags, expire_arg, b"getex") if expire_arg is not None else None
    db = c.db
    key = argv[1]
    v = db.get_string(key)
    if v is None:
        return c.r.null
    reply = bulk(v)
    if when is not None:
        if when <= db.clock.ms():
            db.delete(key)
        else:
            db.set_expire(key, when)
    elif flags & _PERSIST:
        db.persist(key)
    return reply


def append(c: Client, argv: list[bytes]) -> bytes:
    db = c.db
    key = argv[1]
    v = db.get_string(key)
    if v is None:
        db.add(key, argv[2])
        return integer(len(argv[2]))
    if len(v) + len(argv[2]) > _MAX_BULK:
        raise CommandError(_TOO_BIG)
    if type(v) is not bytearray:
        v = bytearray(v)
        db.set(key, v, keep_ttl=True)
    v += argv[2]
    db.touch(key)
    return integer(len(v))


def strlen(c: Client, argv: list[bytes]) -> bytes:
    v = c.db.get_string(argv[1])
    return ZERO if v is None else integer(len(v))


def getrange(c: Client, argv: list[bytes]) -> bytes:
    start = parse_int(argv[2])
    end = parse_int(argv[3])
    v = c.db.get_string(argv[1])
    if v is None:
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
    return bulk(v[start : end + 1])


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
        if offset + len(val) > _MAX_BULK:
            raise CommandError(_TOO_BIG)
        new = bytearray(offset + len(val))
        new[offset:] = val
        db.add(key, new)
        return integer(len(new))
    if not val:
        return integer(len(v))
    if offset + len(val) > _MAX_BULK:
        raise CommandError(_TOO_BIG)
    if type(v) is not bytearray:
        v = bytearray(v)
        db.set(key, v, keep_ttl=True)
    if offset > len(v):
        v.extend(bytes(offset - len(v)))
    v[offset : offset + len(val)] = val
    db.touch(key)
    return integer(len(v))


# -- counters ----------------------------------------------------------------


def _incr(c: Client, key: bytes, by: int) -> bytes:
    db = c.db
    v = db.get_string(key)
    if v is None:
        cur = 0
    else:
        cur = to_int(bytes(v)) if len(v) <= 20 else None  # type: ignore[assignment]
        if cur is None:
            raise not_integer()
    new = cur + by
    if new > LLONG_MAX or new < LLONG_MIN:
        raise _OVERFLOW
    text = b"%d" % new
    if v is None:
        db.add(key, text)
    else:
        db.set(key, text, keep_ttl=True)
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
    """Computed in emulated x87 long double, as Valkey does (see longdouble)."""
    db = c.db
    key = argv[1]
    v = db.get_string(key)
    text = incr_by_float(None if v is None else bytes(v), argv[2])
    if v is None:
        db.add(key, text)
    else:
        db.set(key, text, keep_ttl=True)
    return bulk(text)

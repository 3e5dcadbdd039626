"""Generic key commands: existence, type, expiry, renaming, copying, SCAN, OBJECT.

Expiry follows Valkey's expireGenericCommand: options are parsed before the
time, the time is checked for overflow before the key is looked up, and a
time already in the past deletes the key (and still answers 1).
"""

from __future__ import annotations

import copy as _copy
import heapq
import random
from typing import TYPE_CHECKING, Any

from ..errors import CommandError, not_integer, syntax
from ..glob import matcher
from ..parsing import LLONG_MAX, parse_int, to_int
from ..resp import OK, ONE, ZERO, bulk, bulks, integer, status
from ..types import Hash, type_name
from .hash import parse_cursor

if TYPE_CHECKING:
    from ..client import Client
    from ..db import Db

_NO_SUCH_KEY = CommandError(b"ERR no such key")
_SAME = CommandError(b"ERR source and destination objects are the same")
_DB_RANGE = CommandError(b"ERR DB index is out of range")
_MINUS_TWO = b":-2\r\n"
_MINUS_ONE = b":-1\r\n"


def del_(c: Client, argv: list[bytes]) -> bytes:
    db = c.db
    n = 0
    for key in argv[1:]:
        if db.delete(key):
            n += 1
    return integer(n)


globals()["del"] = del_


def unlink(c: Client, argv: list[bytes]) -> bytes:
    return del_(c, argv)


def exists(c: Client, argv: list[bytes]) -> bytes:
    get = c.db.get
    return integer(sum(1 for key in argv[1:] if get(key) is not None))


def touch(c: Client, argv: list[bytes]) -> bytes:
    return exists(c, argv)


def type(c: Client, argv: list[bytes]) -> bytes:
    return status(type_name(c.db.get(argv[1])))


def keys(c: Client, argv: list[bytes]) -> bytes:
    pattern = argv[1]
    if pattern == b"*":
        return bulks(list(c.db.live_keys()))
    m = matcher(pattern)
    return bulks([k for k in c.db.live_keys() if m(k)])


def randomkey(c: Client, argv: list[bytes]) -> bytes:
    live = list(c.db.live_keys())
    if not live:
        return c.r.null
    return bulk(random.choice(live))


# -- expiry ------------------------------------------------------------------

_NX, _XX, _GT, _LT = 1, 2, 4, 8
_EXPIRE_FLAGS = {b"nx": _NX, b"xx": _XX, b"gt": _GT, b"lt": _LT}


def _expire_flags(argv: list[bytes]) -> int:
    flags = 0
    for opt in argv[3:]:
        bit = _EXPIRE_FLAGS.get(opt.lower())
        if bit is None:
            raise CommandError(b"ERR Unsupported option " + opt)
        flags |= bit
    if flags & _NX and flags & (_XX | _GT | _LT):
        raise CommandError(b"ERR NX and XX, GT or LT options at the same time are not compatible")
    if flags & _GT and flags & _LT:
        raise CommandError(b"ERR GT and LT options at the same time are not compatible")
    return flags


def _expire(c: Client, argv: list[bytes], unit_ms: int, relative: bool) -> bytes:
    flags = _expire_flags(argv) if len(argv) > 3 else 0
    when = parse_int(argv[2])
    name = argv[0].lower()
    if unit_ms == 1000:
        if when > LLONG_MAX // 1000 or when < -(LLONG_MAX // 1000):
            raise CommandError(b"ERR invalid expire time in '%s' command" % name)
        when *= 1000
    db = c.db
    now = db.clock.ms()
    if relative:
        if when > LLONG_MAX - now:
            raise CommandError(b"ERR invalid expire time in '%s' command" % name)
        when += now
    key = argv[1]
    if db.get(key) is None:
        return ZERO
    if flags:
        cur = db.ttl_ms(key)
        if flags & _NX and cur is not None:
            return ZERO
        if flags & _XX and cur is None:
            return ZERO
        if flags & _GT and (cur is None or when <= cur):
            return ZERO
        if flags & _LT and cur is not None and when >= cur:
            return ZERO
    if when <= now:
        db.delete(key)
    else:
        db.set_expire(key, when)
    return ONE


def expire(c: Client, argv: list[bytes]) -> bytes:
    return _expire(c, argv, 1000, True)


def pexpire(c: Client, argv: list[bytes]) -> bytes:
    return _expire(c, argv, 1, True)


def expireat(c: Client, argv: list[bytes]) -> bytes:
    return _expire(c, argv, 1000, False)


def pexpireat(c: Client, argv: list[bytes]) -> bytes:
    return _expire(c, argv, 1, False)


def _ttl(c: Client, key: bytes, ms: bool) -> bytes:
    db = c.db
    if db.get(key) is None:
        return _MINUS_TWO
    when = db.ttl_ms(key)
    if when is None:
        return _MINUS_ONE
    left = max(when - db.clock.ms(), 0)
    return integer(left if ms else (left + 500) // 1000)


def ttl(c: Client, argv: list[bytes]) -> bytes:
    return _ttl(c, argv[1], False)


def pttl(c: Client, argv: list[bytes]) -> bytes:
    return _ttl(c, argv[1], True)


def _expiretime(c: Client, key: bytes, ms: bool) -> bytes:
    db = c.db
    if db.get(key) is None:
        return _MINUS_TWO
    when = db.ttl_ms(key)
    if when is None:
        return _MINUS_ONE
    return integer(when if ms else (when + 500) // 1000)


def expiretime(c: Client, argv: list[bytes]) -> bytes:
    return _expiretime(c, argv[1], False)


def pexpiretime(c: Client, argv: list[bytes]) -> bytes:
    return _expiretime(c, argv[1], True)


def persist(c: Client, argv: list[bytes]) -> bytes:
    db = c.db
    if db.get(argv[1]) is None:
        return ZERO
    return ONE if db.persist(argv[1]) else ZERO


# -- renaming, copying, moving -------------------------------------------------


def _move_key(src_db: Db, src: bytes, dst_db: Db, dst: bytes, value: Any) -> None:
    when = src_db.ttl_ms(src)
    src_db.delete(src)
    dst_db.set(dst, value)
    if when is not None:
        dst_db.set_expire(dst, when)


def _rename(c: Client, argv: list[bytes], nx: bool) -> bytes:
    db = c.db
    src, dst = argv[1], argv[2]
    value = db.get(src)
    if value is None:
        raise _NO_SUCH_KEY
    if src == dst:
        return ZERO if nx else OK
    if db.get(dst) is not None:
        if nx:
            return ZERO
        db.delete(dst)
    _move_key(db, src, db, dst, value)
    return ONE if nx else OK


def rename(c: Client, argv: list[bytes]) -> bytes:
    return _rename(c, argv, False)


def renamenx(c: Client, argv: list[bytes]) -> bytes:
    return _rename(c, argv, True)


def _db_index(c: Client, b: bytes) -> Db:
    """getIntFromObjectOrReply then selectDb."""
    v = to_int(b)
    if v is None or v > 2**31 - 1 or v < -(2**31):
        raise not_integer()
    dbs = c.server.dbs
    if v < 0 or v >= len(dbs):
        raise _DB_RANGE
    return dbs[v]


def _clone(value: Any) -> Any:
    t = value.__class__
    if t is bytes:
        return value
    if t is bytearray:
        return bytearray(value)
    if t is Hash:
        h = Hash()
        h.update(value)
        h.big = value.big
        return h
    return _copy.deepcopy(value)


def copy(c: Client, argv: list[bytes]) -> bytes:
    src, dst = argv[1], argv[2]
    dst_db = c.db
    replace = False
    i = 3
    n = len(argv)
    while i < n:
        opt = argv[i].lower()
        if opt == b"replace":
            replace = True
        elif opt == b"db" and i + 1 < n:
            dst_db = _db_index(c, argv[i + 1])
            i += 1
        else:
            raise syntax()
        i += 1
    db = c.db
    if src == dst and dst_db is db:
        raise _SAME
    value = db.get(src)
    if value is None:
        return ZERO
    if dst_db.get(dst) is not None:
        if not replace:
            return ZERO
        dst_db.delete(dst)
    when = db.ttl_ms(src)
    dst_db.set(dst, _clone(value))
    if when is not None:
        dst_db.set_expire(dst, when)
    return ONE


def move(c: Client, argv: list[bytes]) -> bytes:
    db = c.db
    dst_db = _db_index(c, argv[2])
    if dst_db is db:
        raise _SAME
    key = argv[1]
    value = db.get(key)
    if value is None:
        return ZERO
    if dst_db.get(key) is not None:
        return ZERO
    _move_key(db, key, dst_db, key, value)
    return ONE


# -- SCAN --------------------------------------------------------------------

_TYPE_NAMES = frozenset((b"string", b"list", b"set", b"zset", b"hash", b"stream"))
_CURSOR_MASK = (1 << 62) - 1


def _cursor_of(key: bytes) -> int:
    """A key's fixed place in our SCAN order. Python's bytes hash is stable
    for the life of the process, which is all a cursor needs; ordering by it
    means a key present for the whole scan is always reached."""
    return (hash(key) & _CURSOR_MASK) + 1


def scan(c: Client, argv: list[bytes]) -> bytes:
    cursor = parse_cursor(argv[1])
    count = 10
    pattern: bytes | None = None
    want_type: bytes | None = None
    i = 2
    n = len(argv)
    while i < n:
        opt = argv[i].lower()
        if opt == b"count" and n - i >= 2:
            v = to_int(argv[i + 1])
            if v is None:
                raise not_integer()
            if v < 1:
                raise syntax()
            count = v
        elif opt == b"match" and n - i >= 2:
            pattern = argv[i + 1]
        elif opt == b"type" and n - i >= 2:
            want_type = argv[i + 1].lower()
            if want_type not in _TYPE_NAMES:
                raise CommandError(b"ERR unknown type name '%s'" % argv[i + 1])
        elif opt == b"novalues":
            raise CommandError(b"ERR NOVALUES option can only be used in HSCAN")
        elif opt == b"noscores":
            raise CommandError(b"ERR NOSCORES option can only be used in ZSCAN")
        else:
            raise syntax()
        i += 2
    db = c.db
    pending = [(h, k) for k in db.live_keys() if (h := _cursor_of(k)) >= cursor]
    batch = heapq.nsmallest(count + 1, pending)
    nxt = 0
    if len(batch) > count:
        nxt = batch[count][0]
        batch = batch[:count]
    m = matcher(pattern) if pattern is not None and pattern != b"*" else None
    out: list[bytes] = []
    data = db.data
    for _, k in batch:
        if m is not None and not m(k):
            continue
        if want_type is not None and type_name(data[k]) != want_type:
            continue
        out.append(k)
    cur = b"%d" % nxt
    return b"*2\r\n$%d\r\n%s\r\n" % (len(cur), cur) + bulks(out)


# -- OBJECT ------------------------------------------------------------------


def _embstr_room(key: bytes) -> int:
    """The longest value Valkey 9 embeds in one allocation with its key
    (measured on fresh keys: the key's sds header grows at 32 bytes). A value
    written over a key that already had a TTL gets 8 bytes less there; we
    do not track that history."""
    k = len(key)
    return 112 - (k - 1 if k < 32 else k + 1)


def _encoding(v: Any, key: bytes) -> bytes:
    t = v.__class__
    if t is bytes:
        if len(v) <= 20 and to_int(v) is not None:
            return b"int"
        return b"embstr" if len(v) <= _embstr_room(key) else b"raw"
    if t is bytearray:
        return b"raw"
    if t is Hash:
        return b"hashtable" if v.big else b"listpack"
    return b"skiplist" if getattr(v, "big", False) else b"listpack"


def object_encoding(c: Client, argv: list[bytes]) -> bytes:
    db = c.db
    key = argv[2]
    v = db.get(key)
    if v is None:
        return c.r.null
    return bulk(_encoding(v, key))


def object_refcount(c: Client, argv: list[bytes]) -> bytes:
    # Valkey 9 answers 1 for every value it stores (even small integers).
    return c.r.null if c.db.get(argv[2]) is None else ONE


def object_idletime(c: Client, argv: list[bytes]) -> bytes:
    # Access times are not tracked: every key reads as just used.
    return c.r.null if c.db.get(argv[2]) is None else ZERO


_NO_LFU = (
    b"ERR An LFU maxmemory policy is not selected, access frequency not tracked. "
    b"Please note that when switching between policies at runtime LRU and LFU data "
    b"will take some time to adjust."
)


def object_freq(c: Client, argv: list[bytes]) -> bytes:
    if c.db.get(argv[2]) is None:
        return c.r.null
    raise CommandError(_NO_LFU)


_OBJECT_HELP = (
    b"OBJECT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    b"ENCODING <key>",
    b"    Return the kind of internal representation used in order to store the value",
    b"    associated with a <key>.",
    b"FREQ <key>",
    b"    Return the access frequency index of the <key>. The returned integer is",
    b"    proportional to the logarithm of the recent access frequency of the key.",
    b"IDLETIME <key>",
    b"    Return the idle time of the <key>, that is the approximated number of",
    b"    seconds elapsed since the last access to the key.",
    b"REFCOUNT <key>",
    b"    Return the number of references of the value associated with the specified",
    b"    <key>.",
    b"HELP",
    b"    Print this help.",
)


def object_help(c: Client, argv: list[bytes]) -> bytes:
    return b"*%d\r\n" % len(_OBJECT_HELP) + b"".join(b"+" + line + b"\r\n" for line in _OBJECT_HELP)


def object(c: Client, argv: list[bytes]) -> bytes:
    # Reached only as bare OBJECT (arity), which the dispatcher refuses first.
    raise CommandError(b"ERR wrong number of arguments for 'object' command")

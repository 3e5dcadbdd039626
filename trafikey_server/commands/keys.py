"""Generic key commands: existence, type, expiry, renaming, copying, SCAN, OBJECT.

Expiry follows Valkey's expireGenericCommand: options are parsed before the
time, the time is checked for overflow before the key is looked up, and a
time already in the past deletes the key (and still answers 1).

SCAN takes a snapshot of the database's keys (a list of references in dict
order: one C-speed copy) when an iteration starts at cursor 0, and the
cursor names that snapshot and a position in it. So a full iteration
returns every key present from its first call to its last, whatever is
inserted or deleted meanwhile, and never returns a key twice; any number of
iterations may run at once, from any connection. A key added during the
iteration is not returned; a deleted one is skipped (expired keys met on
the way are removed, as Valkey's SCAN does). A call visits at most ten
times COUNT snapshot entries, as Valkey bounds its own work, so a snapshot
full of deleted keys may give short or empty pages with a non-zero cursor.
A retried call gets the same page again. A database that fits in one reply
is returned whole, with cursor 0 and no snapshot.

Snapshots are kept for the iterations in progress, up to 64 of them and 50
million key references in all, the least recently used going first; one
is dropped as soon as its iteration ends. A cursor whose snapshot is gone
(or that belongs to another database, or to one flushed or swapped since,
or was made up) starts the iteration over: keys may then come twice, but none present throughout is missed.
Limits of the scheme: more than 64 iterations interleaved at once (or too
many over a huge keyspace) restart one another; retrying the call that
ended an iteration starts a new one; and a snapshot keeps the names of keys
deleted meanwhile in memory until it is dropped.

OBJECT IDLETIME and OBJECT FREQ read the key's use as the keyspace records
it (keyspace/access.py): seconds of the LRU clock since its last lookup, or
the decayed LFU counter; each refuses as Valkey does under the other kind
of policy.
"""

from __future__ import annotations

from itertools import islice
from typing import TYPE_CHECKING, Any

from ..keyspace.access import idle_ms
from ..protocol.args import cstr
from ..protocol.resp import OK, ONE, ZERO, bulk, bulks, integer, status
from ..util.errors import CommandError, not_integer, syntax
from ..util.glob import matcher
from ..util.parsing import LLONG_MAX, parse_int, to_int
from ..util.rand import rng
from ..values.registry import BY_NAME, of, type_name
from .hash import parse_cursor
from .string import option

if TYPE_CHECKING:
    from ..keyspace.db import Db
    from ..services.client import Client

_NO_SUCH_KEY = b"ERR no such key"
_SAME = b"ERR source and destination objects are the same"
_DB_RANGE = b"ERR DB index is out of range"
_INT_RANGE = b"ERR value is out of range, value must between -2147483648 and 2147483647"
_MINUS_TWO = b":-2\r\n"
_MINUS_ONE = b":-1\r\n"


# -- existence and type ------------------------------------------------------------


def del_(c: Client, argv: list[bytes]) -> bytes:
    db = c.db
    n = 0
    for key in argv[1:]:
        if db.delete(key):
            n += 1
            db.notify(b"del", key)
    return integer(n)


globals()["del"] = del_


def unlink(c: Client, argv: list[bytes]) -> bytes:
    return del_(c, argv)


def exists(c: Client, argv: list[bytes]) -> bytes:
    """Valkey looks the keys up without counting a use (LOOKUP_NOTOUCH);
    TOUCH is the same count with the use."""
    return _count(c, argv, c.db.peek)


def _count(c: Client, argv: list[bytes], get: Any) -> bytes:
    n = 0
    for key in argv[1:]:
        if get(key) is not None:
            n += 1
        else:
            c.db.notify(b"keymiss", key)
    return integer(n)


def touch(c: Client, argv: list[bytes]) -> bytes:
    return _count(c, argv, c.db.get)


def type(c: Client, argv: list[bytes]) -> bytes:
    v = c.db.peek(argv[1])  # LOOKUP_NOTOUCH
    if v is None:
        c.db.notify(b"keymiss", argv[1])
    return status(type_name(v))


def keys(c: Client, argv: list[bytes]) -> bytes:
    pattern = argv[1]
    live = list(c.db.live_keys())
    if pattern == b"*":
        return bulks(live)
    m = matcher(pattern)
    return bulks([k for k in live if m(k)])


def randomkey(c: Client, argv: list[bytes]) -> bytes:
    """A uniformly chosen live key. Picking the n-th key of the dict costs
    O(n) in C; an expired pick is removed (as Valkey's dbRandomKey does) and
    another drawn, and a database of mostly expired keys falls back to one
    pass over the live ones."""
    db = c.db
    data = db.data
    for _ in range(16):
        if not data:
            return c.r.null
        key = next(islice(data, rng.randrange(len(data)), None))
        if db.get(key) is not None:
            return bulk(key)
        data = db.data
    live = list(db.live_keys())
    return bulk(rng.choice(live)) if live else c.r.null


# -- expiry ------------------------------------------------------------------------

_NX, _XX, _GT, _LT = 1, 2, 4, 8
_EXPIRE_FLAGS = {b"nx": _NX, b"xx": _XX, b"gt": _GT, b"lt": _LT}


def _expire_flags(argv: list[bytes]) -> int:
    flags = 0
    for opt in argv[3:]:
        bit = _EXPIRE_FLAGS.get(option(opt))
        if bit is None:
            raise CommandError(b"ERR Unsupported option " + cstr(opt))
        flags |= bit
    if flags & _NX and flags & (_XX | _GT | _LT):
        raise CommandError(b"ERR NX and XX, GT or LT options at the same time are not compatible")
    if flags & _GT and flags & _LT:
        raise CommandError(b"ERR GT and LT options at the same time are not compatible")
    return flags


def _invalid_expire(argv: list[bytes]) -> CommandError:
    return CommandError(b"ERR invalid expire time in '%s' command" % argv[0].lower())


def _expire(c: Client, argv: list[bytes], seconds: bool, relative: bool) -> bytes:
    flags = _expire_flags(argv) if len(argv) > 3 else 0
    when = parse_int(argv[2])
    if seconds:
        # C's LLONG_MIN / 1000 truncates toward zero.
        if when > LLONG_MAX // 1000 or when < -(LLONG_MAX // 1000):
            raise _invalid_expire(argv)
        when *= 1000
    db = c.db
    now = db.clock.ms()
    if relative:
        if when > LLONG_MAX - now:
            raise _invalid_expire(argv)
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
        # No expire counts as an infinite one: never less, always greater.
        if flags & _GT and (cur is None or when <= cur):
            return ZERO
        if flags & _LT and cur is not None and when >= cur:
            return ZERO
    if when <= now:
        db.delete(key)
        db.notify(b"expired", key)
    else:
        db.expire_at(key, when)
    return ONE


def expire(c: Client, argv: list[bytes]) -> bytes:
    return _expire(c, argv, True, True)


def pexpire(c: Client, argv: list[bytes]) -> bytes:
    return _expire(c, argv, False, True)


def expireat(c: Client, argv: list[bytes]) -> bytes:
    return _expire(c, argv, True, False)


def pexpireat(c: Client, argv: list[bytes]) -> bytes:
    return _expire(c, argv, False, False)


def _ttl(c: Client, key: bytes, ms: bool, absolute: bool) -> bytes:
    """Valkey's ttlGenericCommand: -2 no key, -1 no expire, else the time
    left (or the deadline), never below 0, seconds rounded to nearest."""
    db = c.db
    if db.peek(key) is None:  # LOOKUP_NOTOUCH
        db.notify(b"keymiss", key)
        return _MINUS_TWO
    when = db.ttl_ms(key)
    if when is None:
        return _MINUS_ONE
    left = when if absolute else when - db.clock.ms()
    if left < 0:
        left = 0
    return integer(left if ms else (left + 500) // 1000)


def ttl(c: Client, argv: list[bytes]) -> bytes:
    return _ttl(c, argv[1], False, False)


def pttl(c: Client, argv: list[bytes]) -> bytes:
    return _ttl(c, argv[1], True, False)


def expiretime(c: Client, argv: list[bytes]) -> bytes:
    return _ttl(c, argv[1], False, True)


def pexpiretime(c: Client, argv: list[bytes]) -> bytes:
    return _ttl(c, argv[1], True, True)


def persist(c: Client, argv: list[bytes]) -> bytes:
    db = c.db
    if db.get(argv[1]) is None:
        return ZERO
    if not db.persist(argv[1]):
        return ZERO
    db.notify(b"persist", argv[1])
    return ONE


# -- renaming, copying, moving -------------------------------------------------------


def _rename(c: Client, argv: list[bytes], nx: bool) -> bytes:
    db = c.db
    src, dst = argv[1], argv[2]
    value = db.get(src)
    if value is None:
        raise CommandError(_NO_SUCH_KEY)
    if src == dst:
        return ZERO if nx else OK
    if db.get(dst) is not None:
        if nx:
            return ZERO
        db.delete(dst)
    when = db.ttl_ms(src)
    marked = db.float_int(src, value)
    db.delete(src)
    db.place(dst, value, src, when, marked)
    db.notify(b"rename_from", src)
    db.notify(b"rename_to", dst)
    return ONE if nx else OK


def rename(c: Client, argv: list[bytes]) -> bytes:
    return _rename(c, argv, False)


def renamenx(c: Client, argv: list[bytes]) -> bytes:
    return _rename(c, argv, True)


def _db_index(c: Client, b: bytes) -> Db:
    """getIntFromObjectOrReply (a C int), then selectDb's range check."""
    v = to_int(b)
    if v is None:
        raise not_integer()
    if v > 2**31 - 1 or v < -(2**31):
        raise CommandError(_INT_RANGE)
    dbs = c.server.dbs
    if v < 0 or v >= len(dbs):
        raise CommandError(_DB_RANGE)
    return dbs[v]


def _clone(value: Any) -> Any:
    """A copy that shares nothing mutable with value (COPY's dup functions)."""
    return of(value).copy(value)  # type: ignore[union-attr]


def copy(c: Client, argv: list[bytes]) -> bytes:
    src, dst = argv[1], argv[2]
    db = c.db
    dst_db = db
    replace = False
    i = 3
    n = len(argv)
    while i < n:
        opt = option(argv[i])
        if opt == b"replace":
            replace = True
        elif opt == b"db" and i + 1 < n:
            dst_db = _db_index(c, argv[i + 1])
            i += 1
        else:
            raise syntax()
        i += 1
    if src == dst and dst_db is db:
        raise CommandError(_SAME)
    value = db.get(src)
    if value is None:
        db.notify(b"keymiss", src)
        return ZERO
    if dst_db.get(dst) is not None:
        if not replace:
            return ZERO
        dst_db.delete(dst)
    clone = _clone(value)
    db.drop_expired_fields(clone)
    dst_db.place(dst, clone, src, db.ttl_ms(src), db.float_int(src, clone))
    dst_db.notify(b"copy_to", dst)
    return ONE


def move(c: Client, argv: list[bytes]) -> bytes:
    db = c.db
    dst_db = _db_index(c, argv[2])
    if dst_db is db:
        raise CommandError(_SAME)
    key = argv[1]
    value = db.get(key)
    if value is None:
        return ZERO
    if dst_db.get(key) is not None:
        return ZERO
    when = db.ttl_ms(key)
    marked = db.float_int(key, value)
    db.delete(key)
    dst_db.place(key, value, key, when, marked)
    db.notify(b"move_from", key)
    dst_db.notify(b"move_to", key)
    return ONE


# -- SCAN ------------------------------------------------------------------------------

# The names Valkey knows (a type not served here matches nothing), and any served type.
_TYPE_NAMES = frozenset((b"string", b"list", b"set", b"zset", b"hash", b"stream"))
# Snapshots kept for iterations in progress: at most this many, and at most
# this many key references in all (8 bytes each), least recently used
# dropped first. An abandoned iteration is simply the first to go.
_MAX_SNAPSHOTS = 64
_MAX_SNAPSHOT_REFS = 50_000_000
_OFFSET_BITS = 32
_OFFSET_MASK = (1 << _OFFSET_BITS) - 1
_MAX_ID = 1 << 30  # keeps every cursor below 2**62


class _Snapshot:
    """The keys of one database when an iteration began, in dict order."""

    __slots__ = ("db", "data_id", "keys")

    def __init__(self, db: Db) -> None:
        self.db = db
        self.data_id = id(db.data)  # FLUSHDB and SWAPDB replace the dict
        self.keys = list(db.data)


# Iterations in progress, by id, least recently used first; [next id, refs].
_snapshots: dict[int, _Snapshot] = {}
_state = [1, 0]


def _drop(sid: int) -> None:
    snap = _snapshots.pop(sid, None)
    if snap is not None:
        _state[1] -= len(snap.keys)


def _new_snapshot(db: Db) -> tuple[int, _Snapshot]:
    sid = _state[0]
    _state[0] = sid + 1 if sid + 1 < _MAX_ID else 1
    _drop(sid)  # an id come round again after 2**30 iterations
    snap = _snapshots[sid] = _Snapshot(db)
    _state[1] += len(snap.keys)
    while len(_snapshots) > 1 and (len(_snapshots) > _MAX_SNAPSHOTS or _state[1] > _MAX_SNAPSHOT_REFS):
        _drop(next(iter(_snapshots)))
    return sid, snap


def _resume(db: Db, cursor: int) -> tuple[int, _Snapshot, int]:
    """The iteration a cursor continues: its id, snapshot and offset. A
    cursor we do not know (dropped, from another database, or made up)
    starts a new iteration from the beginning."""
    sid, offset = cursor >> _OFFSET_BITS, cursor & _OFFSET_MASK
    snap = _snapshots.get(sid)
    if snap is None or snap.db is not db or snap.data_id != id(db.data) or offset > len(snap.keys):
        sid, snap = _new_snapshot(db)
        return sid, snap, 0
    del _snapshots[sid]
    _snapshots[sid] = snap  # now the most recently used
    return sid, snap, offset


def _scan_options(argv: list[bytes]) -> tuple[int, bytes | None, bytes | None]:
    """COUNT, MATCH and TYPE, in Valkey's order of checks."""
    count = 10
    pattern: bytes | None = None
    want_type: bytes | None = None
    i = 2
    n = len(argv)
    while i < n:
        opt = option(argv[i])
        more = n - i >= 2
        if opt == b"count" and more:
            v = to_int(argv[i + 1])
            if v is None:
                raise not_integer()
            if v < 1:
                raise syntax()
            count = v
            i += 2
        elif opt == b"match" and more:
            pattern = argv[i + 1]
            i += 2
        elif opt == b"type" and more:
            name = cstr(argv[i + 1])
            want_type = name.lower()
            if want_type not in _TYPE_NAMES and want_type not in BY_NAME:
                raise CommandError(b"ERR unknown type name '%s'" % name)
            i += 2
        elif opt == b"novalues":
            raise CommandError(b"ERR NOVALUES option can only be used in HSCAN")
        elif opt == b"noscores":
            raise CommandError(b"ERR NOSCORES option can only be used in ZSCAN")
        else:
            raise syntax()
    return count, pattern, want_type


def scan(c: Client, argv: list[bytes]) -> bytes:
    cursor = parse_cursor(argv[1])
    count, pattern, want_type = _scan_options(argv)
    db = c.db
    m = matcher(pattern) if pattern is not None and pattern != b"*" else None
    get = db.get
    out: list[bytes] = []

    def visit(k: bytes) -> bool:
        v = get(k)  # None if deleted since, or expired (and now removed)
        if v is None:
            return False
        if (m is None or m(k)) and (want_type is None or type_name(v) == want_type):
            out.append(k)
        return True

    nxt = 0
    if cursor == 0 and len(db.data) <= count:
        # Everything fits in one reply: no iteration to remember.
        for k in list(db.data):
            visit(k)
    else:
        if cursor == 0:
            sid, snap = _new_snapshot(db)
            pos = 0
        else:
            sid, snap, pos = _resume(db, cursor)
        keys = snap.keys
        total = len(keys)
        sampled = 0
        budget = count * 10
        while pos < total and sampled < count and budget:
            if visit(keys[pos]):
                sampled += 1
            budget -= 1
            pos += 1
        if pos < total:
            nxt = (sid << _OFFSET_BITS) | pos
        else:
            _drop(sid)
    cur = b"%d" % nxt
    return b"*2\r\n$%d\r\n%s\r\n" % (len(cur), cur) + bulks(out)


# -- OBJECT ----------------------------------------------------------------------------


def value_encoding(c: Client, key: bytes, v: Any) -> bytes:
    """OBJECT ENCODING's answer for a stored value (DEBUG OBJECT's too)."""
    if v.__class__ is bytes or v.__class__ is bytearray:
        return c.db.string_encoding(key, v)  # an INCRBYFLOAT mark is the keyspace's
    return of(v).encoding(v)  # type: ignore[union-attr]


def object_encoding(c: Client, argv: list[bytes]) -> bytes:
    v = c.db.peek(argv[2])
    if v is None:
        return c.r.null
    return bulk(value_encoding(c, argv[2], v))


def object_refcount(c: Client, argv: list[bytes]) -> bytes:
    # Valkey 9 embeds the key in every stored value, so none is shared.
    return c.r.null if c.db.peek(argv[2]) is None else ONE


_LFU_SELECTED = (
    b"ERR An LFU maxmemory policy is selected, idle time not tracked. Please note that when "
    b"switching between policies at runtime LRU and LFU data will take some time to adjust."
)
_NO_LFU = (
    b"ERR An LFU maxmemory policy is not selected, access frequency not tracked. "
    b"Please note that when switching between policies at runtime LRU and LFU data "
    b"will take some time to adjust."
)


def object_idletime(c: Client, argv: list[bytes]) -> bytes:
    """estimateObjectIdleTime in seconds; the lookup does not count as a
    use (LOOKUP_NOTOUCH)."""
    db = c.db
    if db.peek(argv[2]) is None:
        return c.r.null
    if db.lfu is not None:
        raise CommandError(_LFU_SELECTED)
    return integer(idle_ms(db.clock, db.use_field(argv[2])) // 1000)


def object_freq(c: Client, argv: list[bytes]) -> bytes:
    """LFUDecrAndReturn: the counter as decayed now, nothing stored."""
    db = c.db
    if db.peek(argv[2]) is None:
        return c.r.null
    if db.lfu is None:
        raise CommandError(_NO_LFU)
    return integer(db.lfu.counter(db.use_field(argv[2])))


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
_OBJECT_HELP_REPLY = b"*%d\r\n" % len(_OBJECT_HELP) + b"".join(b"+" + line + b"\r\n" for line in _OBJECT_HELP)


def object_help(c: Client, argv: list[bytes]) -> bytes:
    return _OBJECT_HELP_REPLY


def object(c: Client, argv: list[bytes]) -> bytes:
    # Reached only as bare OBJECT (arity), which the dispatcher refuses first.
    raise CommandError(b"ERR wrong number of arguments for 'object' command")

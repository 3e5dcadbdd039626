"""Hash-field expiry: HSETEX, HGETEX, HGETDEL, H[P]EXPIRE[AT], H[P]TTL,
H[P]EXPIRETIME and HPERSIST, as Valkey 9.1 answers them.

A field's TTL lives in ``Hash.ttl`` (see ``values/hash.py``); giving one to
a field moves the hash to the hashtable encoding for good, as Valkey's
hashTypeSetExpire converts a listpack before it stores an expiry. A field
past its time is hidden from every read but stays stored until the active
sweep (``Db.sweep_fields``) reaps it or a write overwrites it.

Each write logs its own effect (``propagate``), as Valkey rewrites the
command vector: a time already past becomes HDEL of the fields it deleted,
a relative time the absolute HPEXPIREAT / HSETEX ... PXAT, HGETEX the
HPEXPIREAT, HPERSIST or HDEL it amounts to.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..execution.persist.aof import propagate
from ..protocol.args import cstr, word
from ..protocol.resp import ONE, ZERO, array_header, integer
from ..util.errors import CommandError, not_integer, syntax
from ..util.parsing import LLONG_MAX, to_int
from ..values.hash import Hash

if TYPE_CHECKING:
    from ..keyspace.db import Db
    from ..services.client import Client

_NUMFIELDS = b"ERR numfields should be greater than 0 and match the provided number of fields"

# Option bits of the HSETEX / HGETEX option loop.
_NX, _XX, _FNX, _FXX, _KEEPTTL, _PERSIST, _EX, _PX, _EXAT, _PXAT = (1 << i for i in range(10))
_ANY_EXPIRE = _EX | _PX | _EXAT | _PXAT
_EXPIRE_BITS = {b"ex": _EX, b"px": _PX, b"exat": _EXAT, b"pxat": _PXAT}

# HEXPIRE's conditions.
_C_NX, _C_XX, _C_GT, _C_LT = 1, 2, 4, 8
_CONDITIONS = {b"nx": _C_NX, b"xx": _C_XX, b"gt": _C_GT, b"lt": _C_LT}


def _fields_at(argv: list[bytes], start: int) -> int:
    """Where the first FIELDS word is, looking from ``start`` up to the
    last argument but one (Valkey's scan for the block); 0 if none."""
    for i in range(start, len(argv) - 1):
        if word(argv[i]) == b"fields":
            return i
    return 0


def _numfields(arg: bytes) -> int:
    n = to_int(arg)
    if n is None:
        raise not_integer()
    return n


def _options(argv: list[bytes], stop: int, for_set: bool) -> tuple[int, int]:
    """The options of HSETEX (``for_set``) or HGETEX, argv[2:stop]: Valkey's
    extended-argument loop, each conflict a syntax error. The flags, and
    where the (last) expiry argument is, 0 if none."""
    flags = 0
    expire = 0
    j = 2
    while j < stop:
        opt = word(argv[j])
        bit = _EXPIRE_BITS.get(opt)
        if bit is not None:
            if j + 1 >= stop or flags & (_KEEPTTL | _PERSIST | (_ANY_EXPIRE & ~bit)):
                raise syntax()
            flags |= bit
            expire = j + 1
            j += 1
        elif for_set and opt == b"nx" and not flags & _XX:
            flags |= _NX
        elif for_set and opt == b"xx" and not flags & _NX:
            flags |= _XX
        elif for_set and opt == b"fnx" and not flags & _FXX:
            flags |= _FNX
        elif for_set and opt == b"fxx" and not flags & _FNX:
            flags |= _FXX
        elif for_set and opt == b"keepttl" and not flags & _ANY_EXPIRE:
            flags |= _KEEPTTL
        elif not for_set and opt == b"persist" and not flags & _ANY_EXPIRE:
            flags |= _PERSIST
        else:
            raise syntax()
        j += 1
    return flags, expire


def _invalid_expire(argv: list[bytes]) -> CommandError:
    return CommandError(b"ERR invalid expire time in '%s' command" % cstr(argv[0]).lower())


def _unix_ms(argv: list[bytes], arg: bytes, base: int, seconds: bool) -> int:
    """Valkey's convertExpireArgumentToUnixTime: a non-negative integer,
    scaled and offset by ``base`` without overflow."""
    when = to_int(arg)
    if when is None:
        raise not_integer()
    if when < 0:
        raise _invalid_expire(argv)
    if seconds:
        if when > LLONG_MAX // 1000:
            raise _invalid_expire(argv)
        when *= 1000
    if when > LLONG_MAX - base:
        raise _invalid_expire(argv)
    return when + base


def _emit(db: Db, *events: bytes, key: bytes) -> None:
    if db.events:
        for e in events:
            db.events.emit(db, e, key)


def _drop_if_empty(c: Client, key: bytes, h: Hash) -> None:
    """A hash left with no stored field goes, with Valkey's ``del`` event."""
    if not h:
        c.db.delete(key)
        _emit(c.db, b"del", key=key)


def _track(c: Client, key: bytes, h: Hash, when: int | None) -> None:
    """Tell the database a field of the hash under key expires at ``when``."""
    if h.ttl is not None and when is not None:
        c.db.track_fields(key, when)


# -- HSETEX --------------------------------------------------------------------------


def hsetex(c: Client, argv: list[bytes]) -> bytes:
    fi = _fields_at(argv, 0)
    n = 0
    flags = 0
    at = 0
    if fi:
        flags, at = _options(argv, fi, True)
        n = _numfields(argv[fi + 1])
        fi += 2
    if not n or n > LLONG_MAX // 2 or n * 2 != len(argv) - fi:
        raise CommandError(_NUMFIELDS)
    key = argv[1]
    db = c.db
    h = db.get_hash(key)
    if (flags & _NX and h is not None) or (flags & _XX and h is None):
        return ZERO
    now = db.clock.ms()
    when: int | None = None
    past = False
    if not flags & _KEEPTTL and at:
        when = _unix_ms(argv, argv[at], 0 if flags & (_EXAT | _PXAT) else now, bool(flags & (_EX | _EXAT)))
        past = when <= now
    pairs = [(argv[i], argv[i + 1]) for i in range(fi, len(argv), 2)]
    if flags & (_FNX | _FXX):
        if h is not None:
            for f, _ in pairs:
                live = h.live_get(f, now) is not None
                if (flags & _FNX and live) or (flags & _FXX and not live):
                    return ZERO
        elif flags & _FXX:
            return ZERO
    if h is None:
        h = Hash()
        db.add(key, h)
    deleted: list[bytes] = []
    overwritten: list[bytes] = []
    if past:
        for f, _ in pairs:
            if h.drop(f) is not None:
                deleted.append(f)
        db.fields_expired += len(pairs)  # Valkey counts every field named
        if deleted:
            propagate(c, [[b"HDEL", key, *deleted]])
    else:
        entries, value = c.server.hash_limits
        for f, v in pairs:
            if not h.big and (when is not None or len(f) > value or len(v) > value):
                h.big = True
            t = h.ttl.get(f) if h.ttl is not None else None
            if t is not None and t < now:
                overwritten.append(f)
                h.clear_ttl(f)
                t = None
            h[f] = v
            if when is not None:
                h.set_ttl(f, when)
            elif t is not None and not flags & _KEEPTTL:
                h.clear_ttl(f)
            if not h.big and len(h) > entries:
                h.big = True
        _track(c, key, h, when)
        db.fields_expired += len(overwritten)
        effects = []
        if flags & _KEEPTTL and overwritten:
            # The replay would keep a TTL the field had lost: delete it first.
            effects.append([b"HDEL", key, *overwritten])
        effects.append(_hsetex_logged(argv, fi, flags, at, when))
        propagate(c, effects)
    if deleted or not past:
        db.touch(key)
    if overwritten:
        _emit(db, b"hexpired", key=key)
    _emit(db, b"hset", key=key)
    if at:
        _emit(db, b"hexpire", key=key)
    if past:
        _emit(db, b"hexpired", key=key)
    _drop_if_empty(c, key, h)
    return ONE


def _hsetex_logged(argv: list[bytes], fi: int, flags: int, at: int, when: int | None) -> list[bytes]:
    """HSETEX as Valkey rewrites it for the log: FNX / FXX left out and a
    relative or seconds expiry (the one that counted) as PXAT, or as sent."""
    if not flags & (_FNX | _FXX | _EX | _PX | _EXAT):
        return argv
    out: list[bytes] = []
    i = 0
    opts_end = fi - 2
    while i < opts_end:
        a = argv[i]
        if i >= 2 and word(a) in (b"fnx", b"fxx"):
            i += 1
            continue
        if when is not None and not flags & _PXAT and i + 1 == at:
            out += [b"PXAT", b"%d" % when]
            i += 2
            continue
        out.append(a)
        i += 1
    return out + argv[opts_end:]


# -- HGETEX --------------------------------------------------------------------------


def hgetex(c: Client, argv: list[bytes]) -> bytes:
    fi = _fields_at(argv, 0)
    n = -1
    flags = 0
    at = 0
    if fi:
        flags, at = _options(argv, fi, False)
        n = _numfields(argv[fi + 1])
        fi += 2
    if not n or n != len(argv) - fi:
        raise CommandError(_NUMFIELDS)
    key = argv[1]
    db = c.db
    h = db.get_hash(key)
    if h is None and db.events:
        db.events.emit(db, b"keymiss", key)
    now = db.clock.ms()
    when = 0
    mode = b""
    if flags & _PERSIST:
        mode = b"persist"
    elif at:
        when = _unix_ms(argv, argv[at], 0 if flags & (_EXAT | _PXAT) else now, bool(flags & (_EX | _EXAT)))
        mode = b"expired" if when <= now else b"expire"
    null = c.r.null
    out = [array_header(n)]
    changed: list[bytes] = []
    for f in argv[fi:]:
        v = h.live_get(f, now) if h is not None else None
        out.append(null if v is None else b"$%d\r\n%s\r\n" % (len(v), v))
        if h is None or v is None or not mode:
            continue
        if mode == b"expired":
            h.drop(f)
            db.fields_expired += 1
            changed.append(f)
        elif mode == b"expire":
            h.big = True
            h.set_ttl(f, when)
            changed.append(f)
        elif h.clear_ttl(f):
            changed.append(f)
    if changed:
        assert h is not None
        if mode == b"expired":
            propagate(c, [[b"HDEL", key, *changed]])
            _emit(db, b"hexpired", key=key)
        elif mode == b"expire":
            propagate(c, [[b"HPEXPIREAT", key, b"%d" % when, b"FIELDS", b"%d" % len(changed), *changed]])
            _track(c, key, h, when)
            _emit(db, b"hexpire", key=key)
        else:
            propagate(c, [[b"HPERSIST", key, b"FIELDS", b"%d" % len(changed), *changed]])
            _emit(db, b"hpersist", key=key)
        db.touch(key)
        _drop_if_empty(c, key, h)
    return b"".join(out)


# -- HGETDEL -------------------------------------------------------------------------


def _fields_block(argv: list[bytes]) -> int:
    """The ``FIELDS numfields`` of HGETDEL, HPERSIST and the TTL reads: the
    word (else a syntax error), then the count."""
    if word(argv[2]) != b"fields":
        raise syntax()
    return _numfields(argv[3])


def hgetdel(c: Client, argv: list[bytes]) -> bytes:
    n = _fields_block(argv)
    if n <= 0 or n != len(argv) - 4:
        raise CommandError(_NUMFIELDS)
    key = argv[1]
    db = c.db
    h = db.get_hash(key)
    null = c.r.null
    out = [array_header(n)]
    if h is None:
        return out[0] + null * n
    now = db.clock.ms()
    deleted: list[bytes] = []
    for f in argv[4:]:
        v = h.live_get(f, now)
        if v is None:
            out.append(null)
            continue
        out.append(b"$%d\r\n%s\r\n" % (len(v), v))
        h.drop(f)
        deleted.append(f)
    if deleted:
        propagate(c, [argv])  # logged as sent, as Valkey logs it
        db.touch(key)
        _emit(db, b"hdel", key=key)
        _drop_if_empty(c, key, h)
    return b"".join(out)


# -- HEXPIRE and friends ---------------------------------------------------------------


def _conditions(argv: list[bytes], stop: int) -> int:
    flags = 0
    for opt in argv[3:stop]:
        bit = _CONDITIONS.get(word(opt))
        if bit is None:
            raise CommandError(b"ERR Unsupported option " + cstr(opt))
        flags |= bit
    if flags & _C_NX and flags & (_C_XX | _C_GT | _C_LT):
        raise CommandError(b"ERR NX and XX, GT or LT options at the same time are not compatible")
    if flags & _C_GT and flags & _C_LT:
        raise CommandError(b"ERR GT and LT options at the same time are not compatible")
    return flags


def _set_expire(h: Hash, f: bytes, when: int, flags: int, now: int) -> int:
    """Valkey's hashTypeSetExpire for one field: -2 absent, 0 condition
    failed, 1 set, 2 deleted at once (a time already past)."""
    if h.live_get(f, now) is None:
        return -2
    past = when <= now
    if not h.big:
        # A listpack field has no TTL: XX and GT fail.
        if flags & (_C_XX | _C_GT):
            return 0
        if past:
            h.drop(f)
            return 2
        h.big = True
    cur = h.ttl.get(f) if h.ttl is not None else None
    if flags:
        if flags & _C_NX and cur is not None:
            return 0
        if flags & _C_XX and cur is None:
            return 0
        if flags & _C_GT and (cur is None or when <= cur):
            return 0
        if flags & _C_LT and cur is not None and when >= cur:
            return 0
    if past:
        h.drop(f)
        return 2
    h.set_ttl(f, when)
    return 1


def _hexpire(c: Client, argv: list[bytes], relative: bool, seconds: bool) -> bytes:
    fi = _fields_at(argv, 3)
    n = 0
    flags = 0
    if fi:
        flags = _conditions(argv, fi)
        n = _numfields(argv[fi + 1])
        fi += 2
    if not n or n != len(argv) - fi:
        raise CommandError(_NUMFIELDS)
    db = c.db
    now = db.clock.ms()
    when = _unix_ms(argv, argv[2], now if relative else 0, seconds)
    key = argv[1]
    h = db.get_hash(key)
    out = [array_header(n)]
    if h is None:
        return out[0] + b":-2\r\n" * n
    deleted: list[bytes] = []
    updated = 0
    for f in argv[fi:]:
        r = _set_expire(h, f, when, flags, now)
        if r == 1:
            updated += 1
        elif r == 2:
            deleted.append(f)
        out.append(integer(r))
    if deleted or updated:
        if deleted:
            db.fields_expired += len(deleted)
            propagate(c, [[b"HDEL", key, *deleted]])
            _emit(db, b"hexpired", key=key)
        else:
            t = argv[2] if not relative and not seconds else b"%d" % when
            propagate(c, [[b"HPEXPIREAT", key, t, *argv[3:]]])
            _emit(db, b"hexpire", key=key)
        _track(c, key, h, when)
        db.touch(key)
        _drop_if_empty(c, key, h)
    return b"".join(out)


def hexpire(c: Client, argv: list[bytes]) -> bytes:
    return _hexpire(c, argv, True, True)


def hpexpire(c: Client, argv: list[bytes]) -> bytes:
    return _hexpire(c, argv, True, False)


def hexpireat(c: Client, argv: list[bytes]) -> bytes:
    return _hexpire(c, argv, False, True)


def hpexpireat(c: Client, argv: list[bytes]) -> bytes:
    return _hexpire(c, argv, False, False)


# -- HPERSIST --------------------------------------------------------------------------


def hpersist(c: Client, argv: list[bytes]) -> bytes:
    n = _fields_block(argv)
    if not n or n != len(argv) - 4:
        raise CommandError(_NUMFIELDS)
    key = argv[1]
    db = c.db
    h = db.get_hash(key)
    out = [array_header(n)]
    if h is None:
        return out[0] + b":-2\r\n" * n
    now = db.clock.ms()
    changes = 0
    for f in argv[4:]:
        if h.live_get(f, now) is None:
            out.append(b":-2\r\n")
        elif h.clear_ttl(f):
            changes += 1
            out.append(ONE)
        else:
            out.append(b":-1\r\n")
    if changes:
        propagate(c, [argv])
        _emit(db, b"hpersist", key=key)
        db.touch(key)
    return b"".join(out)


# -- HTTL and friends -------------------------------------------------------------------


def _httl(c: Client, argv: list[bytes], relative: bool, seconds: bool) -> bytes:
    n = _fields_block(argv)
    if not n or n != len(argv) - 4:
        raise syntax()
    db = c.db
    h = db.get_hash(argv[1])
    out = [array_header(n)]
    if h is None:
        if db.events:
            db.events.emit(db, b"keymiss", argv[1])
        return out[0] + b":-2\r\n" * n
    now = db.clock.ms()
    base = now if relative else 0
    for f in argv[4:]:
        if h.live_get(f, now) is None:
            out.append(b":-2\r\n")
            continue
        t = h.ttl.get(f) if h.ttl is not None else None
        if t is None:
            out.append(b":-1\r\n")
            continue
        left = max(t - base, 0)
        out.append(integer(left if not seconds else (left + 500) // 1000))
    return b"".join(out)


def httl(c: Client, argv: list[bytes]) -> bytes:
    return _httl(c, argv, True, True)


def hpttl(c: Client, argv: list[bytes]) -> bytes:
    return _httl(c, argv, True, False)


def hexpiretime(c: Client, argv: list[bytes]) -> bytes:
    return _httl(c, argv, False, True)


def hpexpiretime(c: Client, argv: list[bytes]) -> bytes:
    return _httl(c, argv, False, False)

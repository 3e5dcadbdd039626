"""Hash commands, hash-field expiry (HSETEX, HGETEX, HGETDEL,
H[P]EXPIRE[AT], H[P]TTL, H[P]EXPIRETIME, HPERSIST) as Valkey 9.1 answers
them, and the SCAN-family argument rules HSCAN and ZSCAN share.

A ``Hash`` is a dict, so fields keep insertion order, an update keeps a
field's place and a delete closes the gap: exactly a Valkey listpack's
order. That makes HGETALL, HKEYS, HVALS and HSCAN on a small hash equal to
Valkey's byte for byte. Once ``big`` (Valkey's hashtable encoding), Valkey's
order is its hash table's and nothing can match it; ours stays insertion
order.

``big`` follows Valkey's hashTypeTryConversion / hashTypeSet rules: a write
that brings more than hash-max-listpack-entries fields (counted on the
request, duplicates included) or any field or value longer than
hash-max-listpack-value bytes switches it, and it never switches back.

A field's TTL lives in ``Hash.ttl`` (see ``values/hash.py``); giving one to
a field moves the hash to the hashtable encoding for good, as Valkey's
hashTypeSetExpire converts a listpack before it stores an expiry. A field
past its time is hidden from every read but stays stored until the active
sweep (``Db.sweep_fields``) reaps it or a write overwrites it (its
``hexpired`` then comes with the write's event).

Each field-expiry write logs its own effect (``propagate``), as Valkey
rewrites the command vector: a time already past becomes HDEL of the fields
it deleted, a relative time the absolute HPEXPIREAT / HSETEX ... PXAT,
HGETEX the HPEXPIREAT, HPERSIST or HDEL it amounts to.

A write's side effects are the database's (``Db.notify``, ``Db.modified``,
``Db.members_removed``): each handler names its events in Valkey's order,
and a hash its last field left goes with ``del`` after them.
"""

from __future__ import annotations

from collections.abc import Iterable
from itertools import islice
from typing import TYPE_CHECKING, Final

from ..execution.persist.aof import propagate
from ..protocol.args import cstr, word
from ..protocol.resp import EMPTY_ARRAY, OK, ONE, ZERO, array_header, bulk, bulks, integer
from ..services.limits import beyond_output_limit
from ..util.errors import CommandError, not_float, not_integer, syntax, wrong_args
from ..util.glob import matcher
from ..util.longdouble import incr_by_float
from ..util.longdouble import parse as parse_long_double
from ..util.parsing import LLONG_MAX, LLONG_MIN, to_int
from ..util.rand import rng
from ..values.hash import Hash

if TYPE_CHECKING:
    from collections.abc import Callable

    from ..keyspace.db import Db
    from ..services.client import Client


EMPTY_SCAN: Final = b"*2\r\n$1\r\n0\r\n*0\r\n"
_ULLONG_MAX: Final = 2**64 - 1
_HALF: Final = LLONG_MAX // 2


def _for_write(c: Client, key: bytes) -> Hash:
    """The hash under key, created empty if absent (hashTypeLookupWriteOrCreate)."""
    h = c.db.get_hash(key)
    if h is None:
        h = Hash()
        c.db.add(key, h)
    return h


def _set_one(c: Client, h: Hash, field: bytes, val: bytes) -> None:
    """hashTypeSet of one field (HSETNX, HINCRBY*): a field or value longer
    than hash-max-listpack-value, or one field too many, converts the hash."""
    if not h.big:
        entries, value = c.server.hash_limits
        if len(field) > value or len(val) > value:
            h.big = True
        h[field] = val
        if len(h) > entries:
            h.big = True
    else:
        h[field] = val


# -- writes --------------------------------------------------------------------------


def hset(c: Client, argv: list[bytes]) -> bytes:
    n = len(argv)
    if n % 2:
        raise wrong_args(argv[0])
    key = argv[1]
    db = c.db
    h = db.get_hash(key)
    if h is None:
        h = Hash()
        db.add(key, h)
    before = len(h)
    revived = 0
    if h.ttl is not None:
        revived = _clear_field_ttls(db, h, argv)
    if h.big:
        if n == 4:
            h[argv[2]] = argv[3]
        else:
            for i in range(2, n, 2):
                h[argv[i]] = argv[i + 1]
    else:
        entries, value = c.server.hash_limits
        if (n - 2) // 2 > entries or max(map(len, argv[2:])) > value:  # hashTypeTryConversion
            h.big = True
        if n == 4:
            h[argv[2]] = argv[3]
        else:
            for i in range(2, n, 2):
                h[argv[i]] = argv[i + 1]
        if len(h) > entries:
            h.big = True
    if revived:
        db.notify(b"hexpired", key)
    db.modified(key, b"hset")
    # HMSET is HSET with the old reply; Valkey tells them apart by name.
    if argv[0][1:2] in b"sS":
        return integer(len(h) - before + revived)
    return OK


hmset = hset


def _clear_field_ttls(db: Db, h: Hash, argv: list[bytes]) -> int:
    """HSET drops the TTL of each field it writes; a field already past its
    time counts as created (Valkey overwrites it as if it had expired):
    how many were."""
    ttl = h.ttl
    assert ttl is not None
    now = db.clock.ms()
    expired = 0
    for i in range(2, len(argv), 2):
        t = ttl.pop(argv[i], None)
        if t is not None and t < now:
            expired += 1
    if not ttl:
        h.ttl = None
    db.fields_expired += expired
    return expired


def _overwrite_expired(c: Client, key: bytes, h: Hash, field: bytes) -> tuple[int | None, bool]:
    """Before a computed write (HSETNX, HINCRBY*): a field past its time
    loses its TTL and reads as absent, the write overwriting it in place
    (its ``hexpired`` comes with the write): (None, True); otherwise the
    field's TTL, which the write keeps, and False."""
    ttl = h.ttl
    if ttl is None:
        return None, False
    t = ttl.get(field)
    if t is not None and t < c.db.clock.ms():
        h.clear_ttl(field)
        c.db.fields_expired += 1
        c.db.notify(b"hexpired", key)
        return None, True
    return t, False


def hsetnx(c: Client, argv: list[bytes]) -> bytes:
    key = argv[1]
    h = _for_write(c, key)
    if h.ttl is not None and h.is_expired(argv[2], c.db.clock.ms()):
        _overwrite_expired(c, key, h, argv[2])
    elif argv[2] in h:
        return ZERO
    _set_one(c, h, argv[2], argv[3])
    c.db.modified(key, b"hset")
    return ONE


def hdel(c: Client, argv: list[bytes]) -> bytes:
    key = argv[1]
    db = c.db
    h = db.get_hash(key)
    if h is None:
        return ZERO
    deleted = 0
    now = db.clock.ms() if h.ttl is not None else 0
    for f in argv[2:]:
        if h.ttl is not None and h.is_expired(f, now):
            continue  # hidden: Valkey's delete does not find it
        if h.drop(f) is not None:
            deleted += 1
            if not h:
                break
    if deleted:
        db.members_removed(key, h, b"hdel")
    return integer(deleted)


def hincrby(c: Client, argv: list[bytes]) -> bytes:
    incr = to_int(argv[3])
    if incr is None:
        raise not_integer()
    key = argv[1]
    h = _for_write(c, key)
    ttl, gone = _overwrite_expired(c, key, h, argv[2]) if h.ttl is not None else (None, False)
    cur = None if gone else h.get(argv[2])
    old: int | None
    if cur is None:
        old = 0
    else:
        old = to_int(cur)
        if old is None:
            raise CommandError(b"ERR hash value is not an integer")
    new = old + incr
    if new > LLONG_MAX or new < LLONG_MIN:
        raise CommandError(b"ERR increment or decrement would overflow")
    _set_one(c, h, argv[2], b"%d" % new)
    if ttl is not None:
        h.set_ttl(argv[2], ttl)
    c.db.modified(key, b"hincrby")
    return integer(new)


def hincrbyfloat(c: Client, argv: list[bytes]) -> bytes:
    """HINCRBYFLOAT: INCRBYFLOAT's long double arithmetic, with the hash
    variant's own checks and texts: the increment is refused before the key
    is looked up (an infinite one with "value is NaN or Infinity"), and a
    field that is not a number is "hash value is not a float"."""
    incr = argv[3]
    by = parse_long_double(incr)
    if by is None:
        raise not_float()
    if isinstance(by, float):  # parse gives a float only for an infinity
        raise CommandError(b"ERR value is NaN or Infinity")
    key = argv[1]
    h = _for_write(c, key)
    ttl, gone = _overwrite_expired(c, key, h, argv[2]) if h.ttl is not None else (None, False)
    cur = None if gone else h.get(argv[2])
    if cur is not None and parse_long_double(cur) is None:
        raise CommandError(b"ERR hash value is not a float")
    new = incr_by_float(cur, incr)
    _set_one(c, h, argv[2], new)
    if ttl is not None:
        h.set_ttl(argv[2], ttl)
    c.db.modified(key, b"hincrbyfloat")
    return bulk(new)


# -- reads ---------------------------------------------------------------------------


def hget(c: Client, argv: list[bytes]) -> bytes:
    h = c.db.get_hash(argv[1])
    if h is None:
        c.db.notify(b"keymiss", argv[1])
        return c.r.null
    v = h.get(argv[2]) if h.ttl is None else h.live_get(argv[2], c.db.clock.ms())
    return c.r.null if v is None else b"$%d\r\n%s\r\n" % (len(v), v)


def hmget(c: Client, argv: list[bytes]) -> bytes:
    h = c.db.get_hash(argv[1])
    if h is None:
        c.db.notify(b"keymiss", argv[1])
    null = c.r.null
    out = [array_header(len(argv) - 2)]
    get = (h if h is not None else {}).get
    now = c.db.clock.ms() if h is not None and h.ttl is not None else 0
    for f in argv[2:]:
        v = get(f) if not now else h.live_get(f, now)  # type: ignore[union-attr]
        out.append(null if v is None else b"$%d\r\n%s\r\n" % (len(v), v))
    return b"".join(out)


def hexists(c: Client, argv: list[bytes]) -> bytes:
    h = c.db.get_hash(argv[1])
    if h is None:
        c.db.notify(b"keymiss", argv[1])
    if h is not None and h.ttl is not None:
        return ZERO if h.live_get(argv[2], c.db.clock.ms()) is None else ONE
    return ONE if h is not None and argv[2] in h else ZERO


def hlen(c: Client, argv: list[bytes]) -> bytes:
    h = c.db.get_hash(argv[1])
    if h is None:
        c.db.notify(b"keymiss", argv[1])
    return ZERO if h is None else integer(len(h))


def hstrlen(c: Client, argv: list[bytes]) -> bytes:
    h = c.db.get_hash(argv[1])
    if h is None:
        c.db.notify(b"keymiss", argv[1])
    v = None if h is None else h.get(argv[2]) if h.ttl is None else h.live_get(argv[2], c.db.clock.ms())
    return ZERO if v is None else integer(len(v))


def hgetall(c: Client, argv: list[bytes]) -> bytes:
    h = c.db.get_hash(argv[1])
    if h is None:
        c.db.notify(b"keymiss", argv[1])
        return c.r.map_header(0)
    if h.ttl is not None:
        return c.r.bulk_map(h.live_items(c.db.clock.ms()))
    return c.r.bulk_map(h.items())


def hkeys(c: Client, argv: list[bytes]) -> bytes:
    h = c.db.get_hash(argv[1])
    if h is None:
        c.db.notify(b"keymiss", argv[1])
    if h is not None and h.ttl is not None:
        return bulks([f for f, _ in h.live_items(c.db.clock.ms())])
    return EMPTY_ARRAY if h is None else bulks(list(h))


def hvals(c: Client, argv: list[bytes]) -> bytes:
    h = c.db.get_hash(argv[1])
    if h is None:
        c.db.notify(b"keymiss", argv[1])
    if h is not None and h.ttl is not None:
        return bulks([v for _, v in h.live_items(c.db.clock.ms())])
    return EMPTY_ARRAY if h is None else bulks(list(h.values()))


# -- HRANDFIELD ------------------------------------------------------------------------


def random_count_args(argv: list[bytes], word: bytes) -> tuple[int, bool]:
    """The ``count [WITHVALUES|WITHSCORES]`` of HRANDFIELD and ZRANDMEMBER,
    checked in Valkey's order and with its texts."""
    n = to_int(argv[2])
    if n is None:
        raise not_integer()
    if n == LLONG_MIN:
        raise CommandError(
            b"ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807"
        )
    if len(argv) > 4 or (len(argv) == 4 and argv[3].lower() != word):
        raise syntax()
    withvalues = len(argv) == 4
    if withvalues and not -_HALF <= n <= _HALF:
        # Twice the count must still fit a long.
        raise CommandError(b"ERR value is out of range")
    return n, withvalues


def hrandfield(c: Client, argv: list[bytes]) -> bytes:
    if len(argv) < 3:
        h = c.db.get_hash(argv[1])
        if h is None:
            c.db.notify(b"keymiss", argv[1])
            return c.r.null
        if h.ttl is not None:
            live = h.live_items(c.db.clock.ms())
            return bulk(rng.choice(live)[0]) if live else c.r.null
        return bulk(next(islice(iter(h), rng.randrange(len(h)), None)))
    count, withvalues = random_count_args(argv, b"withvalues")
    h = c.db.get_hash(argv[1])
    if h is None:
        c.db.notify(b"keymiss", argv[1])
    if h is None or count == 0:
        return EMPTY_ARRAY
    if count < 0 and not c.in_script and beyond_output_limit(c, -count, 12 if withvalues else 6):
        return b""  # closed without a reply
    picks = _random_items(h, count, c.db.clock.ms())
    if not withvalues:
        return bulks([f for f, _ in picks])
    if c.resp == 2:
        return bulks([x for pair in picks for x in pair])
    out = [array_header(len(picks))]
    for f, v in picks:
        out.append(b"*2\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n" % (len(f), f, len(v), v))
    return b"".join(out)


def _random_items(h: Hash, count: int, now: int) -> list[tuple[bytes, bytes]]:
    """Valkey's pick rules: a negative count (or 1) draws with repetition; a
    count covering the hash returns all of it in order; otherwise distinct
    fields, which a listpack yields in its own order and a hashtable in none."""
    items = h.live_items(now)
    n = len(items)
    if not n:
        return []
    if count < 0 or count == 1:
        return [items[rng.randrange(n)] for _ in range(abs(count))]
    if count >= n:
        return items
    picks = rng.sample(range(n), count)
    if not h.big:
        picks.sort()
    return [items[i] for i in picks]


# -- HSCAN, and the SCAN rules shared with ZSCAN -----------------------------------------


def parse_cursor(b: bytes) -> int:
    """Valkey's string2ull on the C string: a plain non-negative integer, or
    else whatever ``strtoull`` takes whole (spaces first, a sign, leading
    zeros; a minus wraps around)."""
    nul = b.find(b"\0")
    if nul >= 0:
        b = b[:nul]
    v = to_int(b)
    if v is not None:
        if v < 0:
            raise CommandError(b"ERR invalid cursor")
        return v
    s = b.lstrip(b" \t\n\r\x0b\x0c")
    neg = s[:1] == b"-"
    if s[:1] in (b"+", b"-"):
        s = s[1:]
    if not s or not s.isdigit() or int(s) > _ULLONG_MAX:
        raise CommandError(b"ERR invalid cursor")
    v = int(s)
    return (-v) & _ULLONG_MAX if neg else v


def parse_scan_options(argv: list[bytes], kind: bytes) -> tuple[int, bytes | None, bool]:
    """COUNT, MATCH, NOVALUES (hashes) and NOSCORES (sorted sets), parsed
    after the key was found, as Valkey's scanGenericCommand does."""
    count = 10
    pattern: bytes | None = None
    only_keys = False
    i = 3
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
            i += 2
        elif opt == b"match" and n - i >= 2:
            pattern = argv[i + 1]
            i += 2
        elif opt == b"novalues":
            if kind != b"hash":
                raise CommandError(b"ERR NOVALUES option can only be used in HSCAN")
            only_keys = True
            i += 1
        elif opt == b"noscores":
            if kind != b"zset":
                raise CommandError(b"ERR NOSCORES option can only be used in ZSCAN")
            only_keys = True
            i += 1
        else:
            raise syntax()
    return count, pattern, only_keys


def pattern_matcher(pattern: bytes | None) -> Callable[[bytes], bool] | None:
    """A MATCH filter, or None when everything matches ("*" is no filter)."""
    if pattern is None or pattern == b"*":
        return None
    return matcher(pattern)


def hscan(c: Client, argv: list[bytes]) -> bytes:
    cursor = parse_cursor(argv[2])
    h = c.db.get_hash(argv[1])
    if h is None:
        c.db.notify(b"keymiss", argv[1])
        return EMPTY_SCAN
    count, pattern, only_keys = parse_scan_options(argv, b"hash")
    match = pattern_matcher(pattern)
    if h.ttl is not None:
        # Fields past their time are skipped, as Valkey's scan skips them.
        live = h.live_items(c.db.clock.ms())
        stop = cursor + count
        chosen: Iterable[tuple[bytes, bytes]] = live[cursor:stop]
        nxt = stop if stop < len(live) else 0
    elif not h.big:
        # A listpack is returned whole in one call, cursor 0.
        chosen = h.items()
        nxt = 0
    else:
        # Our cursor is a position in the hash's insertion order. Valkey's
        # guarantee (every field present for the whole scan is returned)
        # holds while nothing is deleted; a delete can shift a field past
        # the cursor. Skipping to the position costs O(cursor), in C.
        stop = cursor + count
        chosen = islice(h.items(), cursor, stop)
        nxt = stop if stop < len(h) else 0
    items: list[bytes] = []
    for f, v in chosen:
        if match is not None and not match(f):
            continue
        items.append(f)
        if not only_keys:
            items.append(v)
    cur = b"%d" % nxt
    return b"*2\r\n$%d\r\n%s\r\n" % (len(cur), cur) + bulks(items)


# -- field expiry ---------------------------------------------------------------

_NUMFIELDS: Final = b"ERR numfields should be greater than 0 and match the provided number of fields"

# Option bits of the HSETEX / HGETEX option loop.
_NX, _XX, _FNX, _FXX, _KEEPTTL, _PERSIST, _EX, _PX, _EXAT, _PXAT = (1 << i for i in range(10))
_ANY_EXPIRE: Final = _EX | _PX | _EXAT | _PXAT
_EXPIRE_BITS: Final = {b"ex": _EX, b"px": _PX, b"exat": _EXAT, b"pxat": _PXAT}

# HEXPIRE's conditions.
_C_NX, _C_XX, _C_GT, _C_LT = 1, 2, 4, 8
_CONDITIONS: Final = {b"nx": _C_NX, b"xx": _C_XX, b"gt": _C_GT, b"lt": _C_LT}


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
        db.notify(b"hset", key)
        db.notify(b"hexpire", key)  # a past time is an expiry given
        if deleted or not h:
            # The fields went, and the key with them if they were all it
            # held (or it was created for them).
            db.members_removed(key, h, b"hexpired")
        else:
            db.notify(b"hexpired", key)  # nothing was deleted: no change to signal
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
        if overwritten:
            db.notify(b"hexpired", key)
        if at:
            db.notify(b"hset", key)
            db.modified(key, b"hexpire")
        else:
            db.modified(key, b"hset")
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
    if h is None:
        db.notify(b"keymiss", key)
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
            db.members_removed(key, h, b"hexpired")
        elif mode == b"expire":
            propagate(c, [[b"HPEXPIREAT", key, b"%d" % when, b"FIELDS", b"%d" % len(changed), *changed]])
            _track(c, key, h, when)
            db.modified(key, b"hexpire")
        else:
            propagate(c, [[b"HPERSIST", key, b"FIELDS", b"%d" % len(changed), *changed]])
            db.modified(key, b"hpersist")
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
        db.members_removed(key, h, b"hdel")
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
    if deleted:  # a time already past: every field found went at once
        db.fields_expired += len(deleted)
        propagate(c, [[b"HDEL", key, *deleted]])
        _track(c, key, h, when)
        db.members_removed(key, h, b"hexpired")
    elif updated:
        t = argv[2] if not relative and not seconds else b"%d" % when
        propagate(c, [[b"HPEXPIREAT", key, t, *argv[3:]]])
        _track(c, key, h, when)
        db.modified(key, b"hexpire")
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
        db.modified(key, b"hpersist")
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
        db.notify(b"keymiss", argv[1])
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

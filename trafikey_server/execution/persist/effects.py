"""A write command's effect, as the plain commands that reproduce it.

The log never holds a command whose replay would depend on when it is
replayed, on the process or on the caller: a relative expiry is logged as
its absolute time, INCRBYFLOAT as the value it left, a script or a job-core
verb as the commands it wrote (those are fed by their inner calls and by
``Plan.apply``, not here). A rule sees the request, its reply and the
keyspace just after the call, and returns the commands to log; a command
with no rule is logged as it was sent, which is right for every write
whose replay is deterministic (INCRBY, HSET, ZADD, ZUNIONSTORE...).

The rules follow what Valkey 9.1 propagates (t_string.c, expire.c,
t_hash.c): SET with an expiry as ``SET ... PXAT``, GETEX as PEXPIREAT or
PERSIST, an expiry already in the past as DEL, HINCRBYFLOAT as HSET.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from ...protocol.args import word

if TYPE_CHECKING:
    from ...services.client import Client

Effects = list[list[bytes]]
Rule = Callable[["Client", list[bytes], bytes], Effects]

_ZERO = b":0\r\n"
NOTHING: Effects = []


def _string_state(c: Client, key: bytes) -> Effects:
    """SET key value [PXAT when]: what the key holds now, or DEL when the
    write left no key (an expiry already past)."""
    db = c.db
    v = db.stored(key)
    if v is None:
        return [[b"DEL", key]]
    when = db.expires.get(key)
    if when is None:
        return [[b"SET", key, bytes(v)]]
    return [[b"SET", key, bytes(v), b"PXAT", b"%d" % when]]


def _is_null(reply: bytes) -> bool:
    return reply in (b"$-1\r\n", b"_\r\n", b"*-1\r\n")


def _set(c: Client, argv: list[bytes], reply: bytes) -> Effects:
    # Without GET a null reply means NX/XX refused the write. With GET the
    # reply cannot tell; logging the state then is harmless (it is the
    # state the key is in).
    if _is_null(reply) and not any(a.lower() == b"get" for a in argv[3:]):
        return NOTHING
    return _string_state(c, argv[1])


def _setnx(c: Client, argv: list[bytes], reply: bytes) -> Effects:
    return NOTHING if reply == _ZERO else _string_state(c, argv[1])


def _state(c: Client, argv: list[bytes], reply: bytes) -> Effects:
    return _string_state(c, argv[1])


def _unless_zero(c: Client, argv: list[bytes], reply: bytes) -> Effects:
    """DEL, UNLINK, HDEL, ZREM...: a zero reply changed nothing."""
    return NOTHING if reply == _ZERO else [argv]


def _unless_null(c: Client, argv: list[bytes], reply: bytes) -> Effects:
    return NOTHING if _is_null(reply) else [argv]


def _expire(c: Client, argv: list[bytes], reply: bytes) -> Effects:
    if reply == _ZERO:
        return NOTHING
    key = argv[1]
    when = c.db.expires.get(key)
    if key not in c.db.data:
        return [[b"DEL", key]]
    if when is None:  # pragma: no cover - an expiry command that set none
        return [argv]
    return [[b"PEXPIREAT", key, b"%d" % when]]


def _getdel(c: Client, argv: list[bytes], reply: bytes) -> Effects:
    return NOTHING if _is_null(reply) else [[b"DEL", argv[1]]]


def _getex(c: Client, argv: list[bytes], reply: bytes) -> Effects:
    if _is_null(reply) or len(argv) == 2:
        return NOTHING
    key = argv[1]
    db = c.db
    if key not in db.data:
        return [[b"DEL", key]]
    if argv[2].lower() == b"persist":
        return [[b"PERSIST", key]]
    when = db.expires.get(key)
    return NOTHING if when is None else [[b"PEXPIREAT", key, b"%d" % when]]


def _delifeq(c: Client, argv: list[bytes], reply: bytes) -> Effects:
    return NOTHING if reply == _ZERO else [[b"DEL", argv[1]]]


_EXPIRE_WORDS = (b"ex", b"px", b"exat", b"pxat")


def _msetex(c: Client, argv: list[bytes], reply: bytes) -> Effects:
    """As sent, but with the expire that took effect (the last one named)
    as PXAT and its absolute time, unless it was PXAT already, as Valkey
    logs it. When several expires were named Valkey rewrites only the last
    and logs a request it then refuses to replay (EX 100 PXAT ...): the
    others are left out here, so the log replays."""
    if reply == _ZERO:
        return NOTHING
    j = start = 2 + 2 * int(argv[1])
    at = []
    while j < len(argv):
        if word(argv[j]) in _EXPIRE_WORDS:
            at.append(j)
            j += 1
        j += 1
    if not at or (len(at) == 1 and word(argv[at[0]]) == b"pxat"):
        return [argv]
    when = c.db.expires.get(argv[2])
    if when is None:  # pragma: no cover - an expire was given to every key
        return [argv]
    if len(at) == 1:
        out = list(argv)
        out[at[0]] = b"PXAT"
        out[at[0] + 1] = b"%d" % when
        return [out]
    skip = {k for i in at for k in (i, i + 1)}
    return [argv[:start] + [a for k, a in enumerate(argv[start:], start) if k not in skip] + [b"PXAT", b"%d" % when]]


def _incrbyfloat(c: Client, argv: list[bytes], reply: bytes) -> Effects:
    v = c.db.stored(argv[1])
    return [[b"SET", argv[1], bytes(v), b"KEEPTTL"]]


def _hash_field(c: Client, argv: list[bytes], value: bytes) -> Effects:
    """A computed hash write as the value it left: HSET, or HSETEX ... PXAT
    when the field keeps a TTL (Valkey's rewrite of HINCRBY* on a hash with
    field TTLs)."""
    h = c.db.stored(argv[1])
    t = h.ttl.get(argv[2]) if h.ttl is not None else None
    if t is None:
        return [[b"HSET", argv[1], argv[2], value]]
    return [[b"HSETEX", argv[1], b"PXAT", b"%d" % t, b"FIELDS", b"1", argv[2], value]]


def _hincrbyfloat(c: Client, argv: list[bytes], reply: bytes) -> Effects:
    return _hash_field(c, argv, bytes(c.db.stored(argv[1])[argv[2]]))


def _hincrby(c: Client, argv: list[bytes], reply: bytes) -> Effects:
    """As sent, unless the hash has field TTLs: then as its result."""
    if c.db.stored(argv[1]).ttl is None:
        return [argv]
    return _hash_field(c, argv, bytes(c.db.stored(argv[1])[argv[2]]))


def _hsetnx(c: Client, argv: list[bytes], reply: bytes) -> Effects:
    """HSET on a hash with field TTLs (the field may be gone on replay)."""
    if reply == _ZERO:
        return NOTHING
    if c.db.stored(argv[1]).ttl is None:
        return [argv]
    return [[b"HSET", *argv[1:]]]


def _nothing(c: Client, argv: list[bytes], reply: bytes) -> Effects:
    """A write whose effects were logged as they happened (a job-core verb
    through its plan) or that changes no data."""
    return NOTHING


def _zpop(c: Client, argv: list[bytes], reply: bytes) -> Effects:
    return NOTHING if reply in (b"*0\r\n", b"$-1\r\n", b"*-1\r\n", b"_\r\n") else [argv]


def _popped_key(reply: bytes) -> tuple[bytes, int]:
    """The key heading a blocking or multi-key pop's reply (``*N`` then
    the key's bulk), and the offset just after it."""
    head = reply.index(b"\r\n") + 2
    eol = reply.index(b"\r\n", head)
    n = int(reply[head + 1:eol])
    start = eol + 2
    return reply[start:start + n], start + n + 2


def _bzpop(c: Client, argv: list[bytes], reply: bytes) -> Effects:
    """BZPOPMIN / BZPOPMAX are logged as the ZPOPMIN / ZPOPMAX they did,
    as Valkey propagates them."""
    if _is_null(reply):
        return NOTHING
    key, _ = _popped_key(reply)
    return [[b"ZPOPMAX" if argv[0].lower() == b"bzpopmax" else b"ZPOPMIN", key]]


def _zmpop(c: Client, argv: list[bytes], reply: bytes) -> Effects:
    """ZMPOP / BZMPOP: ZPOPMIN or ZPOPMAX of the key they popped from,
    with the number of members taken."""
    if _is_null(reply):
        return NOTHING
    key, at = _popped_key(reply)
    count = reply[at + 1:reply.index(b"\r\n", at)]
    # MIN/MAX is read at its position, after the keys.
    numkeys_at = 2 if argv[0].lower() == b"bzmpop" else 1
    top = word(argv[numkeys_at + int(argv[numkeys_at]) + 1]) == b"max"
    return [[b"ZPOPMAX" if top else b"ZPOPMIN", key, count]]


def _blpop(c: Client, argv: list[bytes], reply: bytes) -> Effects:
    """BLPOP / BRPOP are logged as the LPOP / RPOP they did."""
    if _is_null(reply):
        return NOTHING
    key, _ = _popped_key(reply)
    return [[b"RPOP" if argv[0].lower() == b"brpop" else b"LPOP", key]]


def _lmpop(c: Client, argv: list[bytes], reply: bytes) -> Effects:
    """LMPOP / BLMPOP: LPOP or RPOP of the key they popped from, with the
    number of elements taken."""
    if _is_null(reply):
        return NOTHING
    key, at = _popped_key(reply)
    count = reply[at + 1:reply.index(b"\r\n", at)]
    numkeys_at = 2 if argv[0].lower() == b"blmpop" else 1
    right = word(argv[numkeys_at + int(argv[numkeys_at]) + 1]) == b"right"
    return [[b"RPOP" if right else b"LPOP", key, count]]


def _blmove(c: Client, argv: list[bytes], reply: bytes) -> Effects:
    """BLMOVE / BRPOPLPUSH that moved an element are logged as LMOVE /
    RPOPLPUSH."""
    if _is_null(reply):
        return NOTHING
    if argv[0].lower() == b"brpoplpush":
        return [[b"RPOPLPUSH", argv[1], argv[2]]]
    return [[b"LMOVE", *argv[1:5]]]


def _linsert(c: Client, argv: list[bytes], reply: bytes) -> Effects:
    return NOTHING if reply in (_ZERO, b":-1\r\n") else [argv]
def _bulk_items(reply: bytes) -> list[bytes]:
    """The bulk strings of a flat array or set reply."""
    out = []
    at = reply.index(b"\r\n") + 2
    while at < len(reply):
        eol = reply.index(b"\r\n", at)
        n = int(reply[at + 1:eol])
        out.append(reply[eol + 2:eol + 2 + n])
        at = eol + 4 + n
    return out


def _spop(c: Client, argv: list[bytes], reply: bytes) -> Effects:
    """SPOP is logged as the SREM of what it popped, in batches of 1024; a
    count that took the whole set as DEL (UNLINK under lazyfree), as
    Valkey's spopWithCountCommand propagates it."""
    if _is_null(reply) or reply in (b"*0\r\n", b"~0\r\n"):
        return NOTHING
    key = argv[1]
    if len(argv) == 2:
        return [[b"SREM", key, _bulk_items(b"*1\r\n" + reply)[0]]]
    if key not in c.db.data:
        return [[b"UNLINK" if c.server.config.values["lazyfree-lazy-server-del"] else b"DEL", key]]
    popped = _bulk_items(reply)
    return [[b"SREM", key, *popped[i:i + 1024]] for i in range(0, len(popped), 1024)]


RULES: dict[bytes, Rule] = {
    b"set": _set,
    b"setnx": _setnx,
    b"setex": _state,
    b"psetex": _state,
    b"getset": _state,
    b"getdel": _getdel,
    b"getex": _getex,
    b"msetex": _msetex,
    b"delifeq": _delifeq,
    b"incrbyfloat": _incrbyfloat,
    b"msetnx": _unless_zero,
    b"del": _unless_zero,
    b"unlink": _unless_zero,
    b"renamenx": _unless_zero,
    b"copy": _unless_zero,
    b"move": _unless_zero,
    b"persist": _unless_zero,
    b"expire": _expire,
    b"pexpire": _expire,
    b"expireat": _expire,
    b"pexpireat": _expire,
    b"hsetnx": _hsetnx,
    b"hdel": _unless_zero,
    b"hincrby": _hincrby,
    b"hincrbyfloat": _hincrbyfloat,
    # Hash-field expiry logs itself: relative times as absolute, times
    # already past as HDEL of the fields they deleted (commands/hash.py).
    b"hsetex": _nothing,
    b"hgetex": _nothing,
    b"hgetdel": _nothing,
    b"hexpire": _nothing,
    b"hpexpire": _nothing,
    b"hexpireat": _nothing,
    b"hpexpireat": _nothing,
    b"hpersist": _nothing,
    b"zrem": _unless_zero,
    b"zremrangebyrank": _unless_zero,
    b"zremrangebyscore": _unless_zero,
    b"zremrangebylex": _unless_zero,
    b"zpopmin": _zpop,
    b"zpopmax": _zpop,
    b"bzpopmin": _bzpop,
    b"bzpopmax": _bzpop,
    b"zmpop": _zmpop,
    b"bzmpop": _zmpop,
    b"zincrby": _unless_null,
    b"lpushx": _unless_zero,
    b"rpushx": _unless_zero,
    b"lpop": _zpop,
    b"rpop": _zpop,
    b"blpop": _blpop,
    b"brpop": _blpop,
    b"lmpop": _lmpop,
    b"blmpop": _lmpop,
    b"lmove": _unless_null,
    b"rpoplpush": _unless_null,
    b"blmove": _blmove,
    b"brpoplpush": _blmove,
    b"linsert": _linsert,
    b"lrem": _unless_zero,
    # Stream writes that log other commands log them from their handlers
    # (commands/stream.py: XADD with its ID and an exact trim, XREADGROUP,
    # XCLAIM and XAUTOCLAIM as XCLAIM ... FORCE JUSTID and XGROUP SETID,
    # XGROUP DELCONSUMER when a consumer went).
    b"xadd": _nothing,
    b"xtrim": _nothing,
    b"xreadgroup": _nothing,
    b"xclaim": _nothing,
    b"xautoclaim": _nothing,
    b"xdel": _unless_zero,
    b"xack": _unless_zero,
    b"xgroup|destroy": _unless_zero,
    b"xgroup|createconsumer": _unless_zero,
    b"xgroup|delconsumer": _nothing,  # its reply counts pending entries, not the change
    b"sadd": _unless_zero,
    b"srem": _unless_zero,
    b"smove": _unless_zero,
    b"spop": _spop,
    b"sort": _nothing,  # logs itself when STORE wrote (commands/sort.py)
    # Logged as sent by their handlers, only when they changed the keyspace
    # (commands/bitmap.py).
    b"setbit": _nothing,
    b"bitfield": _nothing,
    b"bitop": _nothing,
    b"restore": _nothing,  # logs itself: an absolute TTL, or the deletion (commands/dump.py)
    b"restore-asking": _nothing,
    b"migrate": _nothing,  # logs the DEL of what the target took (commands/migrate.py)
    b"pfadd": _unless_zero,
    b"pfdebug": _nothing,  # logs itself when it turned a value dense (commands/hyperloglog.py)
    # Geo writes log themselves when they changed the keyspace
    # (commands/geo.py): GEOADD as the ZADD it became, a search with
    # STORE as sent.
    b"geoadd": _nothing,
    b"georadius": _nothing,
    b"georadiusbymember": _nothing,
    b"geosearchstore": _nothing,
    b"cluster|flushslot": _nothing,
    # A named snapshot's restore rewrites the log's base instead (Aof.rebase).
    b"trafikey.snapshot|restore": _nothing,
}


def rule_for(name: bytes) -> Rule | None:
    """The rule of a command (None: log it as sent). Job-core verbs write
    through plans, which log themselves."""
    if name.startswith(b"emq."):
        return _nothing
    return RULES.get(name)

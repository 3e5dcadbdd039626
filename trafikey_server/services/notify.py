"""Keyspace notifications: Valkey's notifyKeyspaceEvent.

``notify-keyspace-events`` picks event classes (``g`` generic, ``$``
string, ``h`` hash, ``z`` sorted set, ``x`` expired, ``n`` new key, ...)
and the channel forms (``K``: ``__keyspace@<db>__:<key>`` carries the
event name, ``E``: ``__keyevent@<db>__:<event>`` carries the key). Every
write publishes its events through the pub/sub service, in the order
Valkey publishes them, so a subscriber cannot tell the servers apart.

Cost when unused: the option's value is kept as an integer, and every
``Db`` carries ``events`` (this service, or None while no event would ever
be published). A write site calls ``db.notify(event, key)`` (or
``Db.modified``, ``Db.members_removed``, a string write given its event),
which tests ``db.events`` and does nothing more; the per-command path gains
nothing. The event's class is looked up from its
name (each event name belongs to one class in Valkey), so a write site
names the event alone.

The database itself reports the two events no command names: ``new`` when
a key is added (Valkey's dbAdd) and ``expired`` when lazy or active expiry
removes one. ``keymiss`` is raised by the read commands, where Valkey's
lookup is a read (a write that finds no key raises nothing); a read that
hits pays nothing for it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from ..keyspace.db import Db
    from .pubsub import PubSub


class NotifyHost(Protocol):
    """What the notifications use of the server (server.py)."""

    dbs: list[Db]
    pubsub: PubSub


# Valkey's NOTIFY_* bits (server.h).
KEYSPACE = 1 << 0  # K
KEYEVENT = 1 << 1  # E
GENERIC = 1 << 2  # g
STRING = 1 << 3  # $
LIST = 1 << 4  # l
SET = 1 << 5  # s
HASH = 1 << 6  # h
ZSET = 1 << 7  # z
EXPIRED = 1 << 8  # x
EVICTED = 1 << 9  # e
STREAM = 1 << 10  # t
KEY_MISS = 1 << 11  # m (not part of A)
MODULE = 1 << 13  # d
NEW = 1 << 14  # n (not part of A)
ALL = GENERIC | STRING | LIST | SET | HASH | ZSET | EXPIRED | EVICTED | STREAM | MODULE

_LETTERS = {
    "A": ALL, "g": GENERIC, "$": STRING, "l": LIST, "s": SET, "h": HASH, "z": ZSET,
    "x": EXPIRED, "e": EVICTED, "K": KEYSPACE, "E": KEYEVENT, "t": STREAM,
    "m": KEY_MISS, "d": MODULE, "n": NEW,
}
# keyspaceEventsFlagsToString's order: the classes (or A), then K, E, m.
_CLASS_ORDER = ((GENERIC, "g"), (STRING, "$"), (LIST, "l"), (SET, "s"), (HASH, "h"), (ZSET, "z"),
                (EXPIRED, "x"), (EVICTED, "e"), (STREAM, "t"), (MODULE, "d"), (NEW, "n"))
_TAIL_ORDER = ((KEYSPACE, "K"), (KEYEVENT, "E"), (KEY_MISS, "m"))

INVALID = "Invalid event class character. Use 'Ag$lshzxeKEtmdn'."

# Each event name belongs to one class: a write site names the event only.
KINDS: dict[bytes, int] = {
    b"new": NEW, b"expired": EXPIRED, b"evicted": EVICTED, b"keymiss": KEY_MISS,
    b"del": GENERIC, b"expire": GENERIC, b"persist": GENERIC, b"rename_from": GENERIC,
    b"rename_to": GENERIC, b"move_from": GENERIC, b"move_to": GENERIC, b"copy_to": GENERIC,
    b"restore": GENERIC,
    b"set": STRING, b"setrange": STRING, b"append": STRING, b"incrby": STRING, b"incrbyfloat": STRING,
    b"setbit": STRING,
    b"pfadd": STRING,
    b"lpush": LIST, b"rpush": LIST, b"lpop": LIST, b"rpop": LIST, b"linsert": LIST, b"lset": LIST,
    b"lrem": LIST, b"ltrim": LIST, b"sortstore": LIST,
    b"hset": HASH, b"hdel": HASH, b"hincrby": HASH, b"hincrbyfloat": HASH,
    b"hexpire": HASH, b"hexpired": HASH, b"hpersist": HASH,
    b"zadd": ZSET, b"zincr": ZSET, b"zrem": ZSET, b"zremrangebyscore": ZSET, b"zremrangebyrank": ZSET,
    b"zremrangebylex": ZSET, b"zpopmin": ZSET, b"zpopmax": ZSET, b"zunionstore": ZSET,
    b"zinterstore": ZSET, b"zdiffstore": ZSET, b"zrangestore": ZSET,
    b"georadiusstore": ZSET, b"geosearchstore": ZSET,
    b"sadd": SET, b"srem": SET, b"spop": SET, b"sinterstore": SET, b"sunionstore": SET, b"sdiffstore": SET,
    b"xadd": STREAM, b"xtrim": STREAM, b"xdel": STREAM, b"xsetid": STREAM, b"xgroup-create": STREAM,
    b"xgroup-createconsumer": STREAM, b"xgroup-delconsumer": STREAM, b"xgroup-destroy": STREAM,
    b"xgroup-setid": STREAM,
}


def parse_flags(text: str) -> int:
    """keyspaceEventsStringToFlags; ValueError for a letter Valkey refuses."""
    flags = 0
    for ch in text:
        bit = _LETTERS.get(ch)
        if bit is None:
            raise ValueError(INVALID)
        flags |= bit
    return flags


def flags_text(flags: int) -> str:
    """keyspaceEventsFlagsToString: what CONFIG GET shows. With A, Valkey
    leaves ``n`` out of the text although the flag stays on."""
    if flags & ALL == ALL:
        out = "A"
    else:
        out = "".join(ch for bit, ch in _CLASS_ORDER if flags & bit)
    return out + "".join(ch for bit, ch in _TAIL_ORDER if flags & bit)


class Notify:
    """The notification service of one server (``server.notify``)."""

    __slots__ = ("server", "flags")

    def __init__(self, server: NotifyHost) -> None:
        self.server = server
        self.flags = 0

    def configure(self, flags: int) -> None:
        """Apply the option's value. The databases carry the service only
        while some event can reach a channel: a class without K or E (or
        K/E without a class) publishes nothing, as in Valkey."""
        live = bool(flags & (KEYSPACE | KEYEVENT)) and bool(flags & ~(KEYSPACE | KEYEVENT))
        self.flags = flags if live else 0
        for db in self.server.dbs:
            db.events = self if live else None

    def emit(self, db: Db, event: bytes, key: bytes) -> None:
        """notifyKeyspaceEvent(class of event, event, key, db)."""
        self.publish(KINDS[event], event, key, db.id)

    def publish(self, kind: int, event: bytes, key: bytes, dbid: int) -> None:
        flags = self.flags
        if not flags & kind:
            return
        pubsub = self.server.pubsub
        if flags & KEYSPACE:
            pubsub.publish(b"__keyspace@%d__:%s" % (dbid, key), event)
        if flags & KEYEVENT:
            pubsub.publish(b"__keyevent@%d__:%s" % (dbid, event), key)

    def storing(self, db: Db, key: bytes) -> None:
        """Before a write stores key (Db.set): a stored but expired value is
        expired first (Valkey's lookupKeyWrite), and a key that is not
        there is announced as new (dbAdd)."""
        if key in db.data:
            if not db.key_is_expired(key):
                return
            db.get(key)  # removes it, announcing ``expired``
        self.emit(db, b"new", key)

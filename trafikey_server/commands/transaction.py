"""MULTI / EXEC / DISCARD / WATCH / UNWATCH.

Queuing itself happens in the dispatcher (a client in MULTI gets QUEUED for
every command but the transaction controls); EXEC runs the queue through
``dispatch.call`` so each command keeps its own statistics and errors.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..dispatch import call
from ..errors import CommandError
from ..resp import OK, array

if TYPE_CHECKING:
    from ..client import Client


def multi(c: Client, argv: list[bytes]) -> bytes:
    if c.multi is not None:
        raise CommandError(b"ERR MULTI calls can not be nested")
    c.multi = []
    c.multi_error = False
    return OK


def _watched_expired(c: Client) -> bool:
    """A watched key whose TTL has run out counts as changed, as in Valkey."""
    for db, key in c.watched:
        t = db.expires.get(key)
        if t is not None and t < db.clock.ms():
            return True
    return False


def exec(c: Client, argv: list[bytes]) -> bytes:
    if c.multi is None:
        raise CommandError(b"ERR EXEC without MULTI")
    if c.multi_error:
        c.discard_multi()
        raise CommandError(b"EXECABORT Transaction discarded because of previous errors.")
    if c.watch_dirty or _watched_expired(c):
        c.discard_multi()
        return c.r.null_array
    queued = c.multi
    c.multi = None
    c.unwatch()
    c.in_exec = True
    try:
        replies = [call(c, cmd, args) for cmd, args in queued]
    finally:
        c.in_exec = False
    return array(replies)


def discard(c: Client, argv: list[bytes]) -> bytes:
    if c.multi is None:
        raise CommandError(b"ERR DISCARD without MULTI")
    c.discard_multi()
    return OK


def watch(c: Client, argv: list[bytes]) -> bytes:
    if c.multi is not None:
        raise CommandError(b"ERR WATCH inside MULTI is not allowed")
    db = c.db
    for key in argv[1:]:
        if (db, key) in c.watched:
            continue
        c.watched.append((db, key))
        db.watchers.setdefault(key, set()).add(c)
    return OK


def unwatch(c: Client, argv: list[bytes]) -> bytes:
    c.unwatch()
    return OK

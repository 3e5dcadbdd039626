"""MULTI / EXEC / DISCARD / WATCH / UNWATCH.

Queuing itself happens in the dispatcher (a client in MULTI gets QUEUED for
every command but the transaction controls); EXEC runs the queue through
``dispatch.call`` so each command keeps its own statistics and errors.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..execution.dispatch import call
from ..protocol.resp import OK, array_header
from ..services.acl import CTX_MULTI, DENIED_CHANNEL, DENIED_CMD
from ..services.client import Watch
from ..util.errors import CommandError

if TYPE_CHECKING:
    from ..protocol.table import Command
    from ..services.client import Client


_CHANGED = (b"NOPERM ACLs rules changed between the moment the transaction was accumulated and the EXEC call. "
            b"This command is no longer allowed for the following reason: ")
_WHY = {DENIED_CMD: b"no permission to execute the command or subcommand",
        DENIED_CHANNEL: b"no permission to access one of the channels used as arguments"}


def _denied(c: Client, cmd: Command, args: list[bytes]) -> bytes | None:
    """Valkey's execCommand checks each queued command against the ACL
    again: rules may have changed since it was queued."""
    reason, pos = c.acl.denial(cmd, args)
    if not reason:
        return None
    c.server.acl.log.denial(c, cmd, args, reason, pos, CTX_MULTI)
    msg = _CHANGED + _WHY.get(reason, b"no permission to touch the specified keys")
    c.server.count_error(msg)
    return b"-" + msg + b"\r\n"


def multi(c: Client, argv: list[bytes]) -> bytes:
    if c.multi is not None:
        raise CommandError(b"ERR MULTI calls can not be nested")
    c.multi = []
    c.multi_error = False
    c.mstate = True
    return OK


def _watched_expired(c: Client) -> bool:
    """A watched key whose TTL has run out since WATCH counts as changed, as
    in Valkey (isWatchedKeyExpired); one already expired when watched does not."""
    return any(not w.expired and w.db.key_is_expired(w.key) for w in c.watched.values())


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
    header = array_header(len(queued))
    replies = [header]
    c.in_exec = c.server.in_exec = True
    c.exec_argv, c.exec_queue, c.exec_out = argv, queued, replies
    aof = c.server.aof
    if aof is not None:
        aof.begin()  # the transaction's effects are logged as one MULTI/EXEC
    try:
        for cmd, args in queued:
            # A client that kills itself (CLIENT KILL) still runs the rest of
            # the transaction, but Valkey sends nothing after that reply.
            closing = c.closing
            reply = None if c.acl.unrestricted else _denied(c, cmd, args)
            if reply is None:
                reply = call(c, cmd, args)
            if not closing:
                replies.append(reply)
    finally:
        if aof is not None:
            aof.end()
        c.in_exec = c.server.in_exec = False
        c.exec_argv, c.exec_queue, c.exec_out = None, [], []
    return b"".join(replies)


def discard(c: Client, argv: list[bytes]) -> bytes:
    if c.multi is None:
        raise CommandError(b"ERR DISCARD without MULTI")
    c.discard_multi()
    return OK


def watch(c: Client, argv: list[bytes]) -> bytes:
    if c.multi is not None:
        raise CommandError(b"ERR WATCH inside MULTI is not allowed")
    c.mstate = True
    if c.watch_dirty:
        return OK  # already doomed: Valkey watches nothing more
    db = c.db
    c.watch_dbs.add(db.id)
    watched = c.watched
    for key in argv[1:]:
        if (db, key) in watched:
            continue
        w = Watch(db, key, db.key_is_expired(key))
        watched[(db, key)] = w
        db.watchers.setdefault(key, {})[c] = w
        db.signalled = True
    return OK


def unwatch(c: Client, argv: list[bytes]) -> bytes:
    c.unwatch()
    return OK

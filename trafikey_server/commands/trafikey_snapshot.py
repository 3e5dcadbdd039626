"""TRAFIKEY.SNAPSHOT: named in-memory snapshots of the whole keyspace.

A test suite loads its dataset once, saves it under a name, and restores it
before each test: a restore copies the saved keys back in time proportional
to the data, where a reload would parse them again. What a snapshot holds
and what a restore tells (WATCH, client tracking, blocked clients, the
append-only file) is described in ``execution/named_snapshots.py``.

Unlike TRAFIKEY.CLOCK the command needs no option to exist: it changes the
keyspace no more than FLUSHALL does, which is not guarded either.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..protocol.args import error_text
from ..protocol.resp import OK, bulks, integer, status
from ..util.errors import CommandError

if TYPE_CHECKING:
    from ..services.client import Client

_HELP = (
    b"TRAFIKEY.SNAPSHOT <subcommand> [<arg> ...]. Subcommands are:",
    b"SAVE <name>",
    b"    Keep a copy of every database (values and expiry times) under <name>,",
    b"    replacing any snapshot of that name.",
    b"RESTORE <name>",
    b"    Replace every database with a copy of the snapshot <name>. The clock",
    b"    and the {emq}:version brand key keep their current values.",
    b"DEL <name> [<name> ...]",
    b"    Forget snapshots; returns how many existed.",
    b"LIST",
    b"    Return the names of the snapshots, sorted.",
    b"HELP",
    b"    Print this help.",
)


def snapshot_save(c: Client, argv: list[bytes]) -> bytes:
    c.server.named_snapshots.save(argv[2])
    return OK


def snapshot_restore(c: Client, argv: list[bytes]) -> bytes:
    snaps = c.server.named_snapshots
    name = argv[2]
    if name not in snaps.saved:
        raise CommandError(b"ERR no snapshot named '%s'" % error_text(name)[:128])
    snaps.restore(name)
    return OK


def snapshot_del(c: Client, argv: list[bytes]) -> bytes:
    return integer(c.server.named_snapshots.delete(argv[2:]))


def snapshot_list(c: Client, argv: list[bytes]) -> bytes:
    return bulks(c.server.named_snapshots.names())


def snapshot_help(c: Client, argv: list[bytes]) -> bytes:
    return b"*%d\r\n" % len(_HELP) + b"".join(status(line) for line in _HELP)

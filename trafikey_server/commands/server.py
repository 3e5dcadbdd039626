"""Server commands: databases, TIME, SHUTDOWN, DEBUG, INFO, CONFIG, COMMAND."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..errors import CommandError, syntax
from ..parsing import to_int
from ..resp import OK, bulk, integer

if TYPE_CHECKING:
    from ..client import Client


def _flush_mode(argv: list[bytes]) -> None:
    if len(argv) > 2 or (len(argv) == 2 and argv[1].lower() not in (b"sync", b"async")):
        raise syntax()


def flushall(c: Client, argv: list[bytes]) -> bytes:
    _flush_mode(argv)
    for db in c.server.dbs:
        db.clear()
    return OK


def flushdb(c: Client, argv: list[bytes]) -> bytes:
    _flush_mode(argv)
    c.db.clear()
    return OK


def dbsize(c: Client, argv: list[bytes]) -> bytes:
    return integer(len(c.db))


def swapdb(c: Client, argv: list[bytes]) -> bytes:
    a = to_int(argv[1])
    if a is None:
        raise CommandError(b"ERR invalid first DB index")
    b = to_int(argv[2])
    if b is None:
        raise CommandError(b"ERR invalid second DB index")
    dbs = c.server.dbs
    if not (0 <= a < len(dbs) and 0 <= b < len(dbs)):
        raise CommandError(b"ERR DB index is out of range")
    if a != b:
        c.server.swap_dbs(a, b)
    return OK


def time(c: Client, argv: list[bytes]) -> bytes:
    us = c.server.clock.us()
    s = b"%d" % (us // 1_000_000)
    u = b"%d" % (us % 1_000_000)
    return b"*2\r\n" + bulk(s) + bulk(u)

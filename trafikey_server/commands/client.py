"""CLIENT subcommands: the connection's own identity and switches."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..errors import CommandError, syntax
from ..resp import OK, bulk, integer
from .connection import set_client_name

if TYPE_CHECKING:
    from ..client import Client


def client_id(c: Client, argv: list[bytes]) -> bytes:
    return integer(c.id)


def client_setname(c: Client, argv: list[bytes]) -> bytes:
    set_client_name(c, argv[2])
    return OK


def client_getname(c: Client, argv: list[bytes]) -> bytes:
    return bulk(c.name) if c.name else c.r.null


def client_setinfo(c: Client, argv: list[bytes]) -> bytes:
    attr = argv[2].lower()
    if attr not in (b"lib-name", b"lib-ver"):
        raise CommandError(b"ERR Unrecognized option '%s'" % argv[2])
    value = argv[3]
    if not all(33 <= ch <= 126 for ch in value):
        raise CommandError(b"ERR %s cannot contain spaces, newlines or special characters." % attr)
    if attr == b"lib-name":
        c.lib_name = value
    else:
        c.lib_ver = value
    return OK


def _on_off(arg: bytes) -> bool:
    low = arg.lower()
    if low == b"on":
        return True
    if low == b"off":
        return False
    raise syntax()


def client_no_evict(c: Client, argv: list[bytes]) -> bytes:
    c.no_evict = _on_off(argv[2])
    return OK


def client_no_touch(c: Client, argv: list[bytes]) -> bytes:
    c.no_touch = _on_off(argv[2])
    return OK

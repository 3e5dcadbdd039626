"""Connection commands: PING, ECHO, HELLO, AUTH, SELECT, QUIT, RESET, CLIENT."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..protocol.resp import OK, PONG, bulk
from ..services.acl import refresh
from ..util.errors import CommandError
from ..util.parsing import to_int
from ..util.versions import REDIS_COMPAT_VERSION, VALKEY_VERSION

if TYPE_CHECKING:
    from ..services.client import Client


def ping(c: Client, argv: list[bytes]) -> bytes:
    if c.subscriptions and c.resp == 2 and len(argv) <= 2:
        # In RESP2 pub/sub mode the answer has the shape of a message.
        return b"*2\r\n$4\r\npong\r\n" + bulk(argv[1] if len(argv) == 2 else b"")
    if len(argv) == 1:
        return PONG
    if len(argv) == 2:
        return bulk(argv[1])
    raise CommandError(b"ERR wrong number of arguments for 'ping' command")


def echo(c: Client, argv: list[bytes]) -> bytes:
    return bulk(argv[1])


def quit(c: Client, argv: list[bytes]) -> bytes:
    c.closing = True
    return OK


def select(c: Client, argv: list[bytes]) -> bytes:
    index = to_int(argv[1])
    if index is None:
        raise CommandError(b"ERR value is not an integer or out of range")
    if not 0 <= index < len(c.server.dbs):
        raise CommandError(b"ERR DB index is out of range")
    c.select(index)
    return OK


def _valid_name(name: bytes) -> bool:
    return all(33 <= ch <= 126 for ch in name)


def set_client_name(c: Client, name: bytes) -> None:
    if not _valid_name(name):
        raise CommandError(b"ERR Client names cannot contain spaces, newlines or special characters.")
    c.name = name


WRONGPASS = b"WRONGPASS invalid username-password pair or user is disabled."


def auth(c: Client, argv: list[bytes]) -> bytes:
    """AUTH [user] password (Valkey's authCommand). The password is hashed
    and compared in constant time (acl.User.check_password) and never kept
    or logged."""
    if len(argv) > 3:
        raise CommandError(b"ERR syntax error")
    acl = c.server.acl
    if len(argv) == 2:
        if acl.default.nopass:
            raise CommandError(
                b"ERR AUTH <password> called without any password configured for the default user. "
                b"Are you sure your configuration is correct?"
            )
        user, password = b"default", argv[1]
    else:
        user, password = argv[1], argv[2]
    if not acl.authenticate(c, user, password, argv):
        raise CommandError(WRONGPASS)
    return OK


def hello(c: Client, argv: list[bytes]) -> bytes:
    ver = 0
    i = 1
    if len(argv) >= 2:
        v = to_int(argv[1])
        if v is None:
            raise CommandError(b"ERR Protocol version is not an integer or out of range")
        if v < 2 or v > 3:
            raise CommandError(b"NOPROTO unsupported protocol version")
        ver = v
        i = 2
    user = password = name = None
    while i < len(argv):
        more = len(argv) - 1 - i
        opt = argv[i].lower()
        if opt == b"auth" and more >= 2:
            user, password = argv[i + 1], argv[i + 2]
            i += 3
        elif opt == b"setname" and more >= 1:
            name = argv[i + 1]
            if not _valid_name(name):
                raise CommandError(b"ERR Client names cannot contain spaces, newlines or special characters.")
            i += 2
        else:
            raise CommandError(b"ERR Syntax error in HELLO option '%s'" % argv[i])
    if user is not None and password is not None:
        if not c.server.acl.authenticate(c, user, password, argv):
            raise CommandError(WRONGPASS)
    if not c.authenticated:
        raise CommandError(
            b"NOAUTH HELLO must be called with the client already authenticated, otherwise the "
            b"HELLO <proto> AUTH <user> <pass> option can be used to authenticate the client and "
            b"select the RESP protocol version at the same time"
        )
    if name is not None:
        set_client_name(c, name)
    if ver:
        c.set_protocol(ver)
        if c.subscriptions:
            refresh(c)  # back to RESP2 in pub/sub mode: off the fast path
    return hello_reply(c)


def lua_module(c: Client) -> bytes:
    """Valkey 9.1 lists its Lua scripting engine as a module (HELLO's
    ``modules``, MODULE LIST); so does this server."""
    return c.r.map([
        (bulk(b"name"), bulk(b"lua")),
        (bulk(b"ver"), b":1\r\n"),
        (bulk(b"path"), bulk(b"lua")),
        (bulk(b"args"), b"*0\r\n"),
    ])


def hello_reply(c: Client) -> bytes:
    r = c.r
    # extended-redis-compatibility: HELLO names Redis and its version, as Valkey's does.
    compat = c.server.config.values["extended-redis-compatibility"]
    lua = lua_module(c)
    return r.map([
        (bulk(b"server"), bulk(b"redis" if compat else b"valkey")),
        (bulk(b"version"), bulk((REDIS_COMPAT_VERSION if compat else VALKEY_VERSION).encode())),
        (bulk(b"proto"), b":%d\r\n" % c.resp),
        (bulk(b"id"), b":%d\r\n" % c.id),
        (bulk(b"mode"), bulk(b"standalone")),
        (bulk(b"role"), bulk(b"master")),
        (bulk(b"modules"), b"*1\r\n" + lua),
    ])


def reset(c: Client, argv: list[bytes]) -> bytes:
    c.discard_multi()
    c.server.observer.drop(c)  # RESET leaves MONITOR mode
    c.server.pubsub.drop_client(c)  # and pub/sub mode, without a word
    c.select(0)
    c.set_protocol(2)
    c.name = b""
    c.no_evict = False
    c.no_touch = False
    c.readonly = False
    c.import_source = False
    c.server.tracking.disable(c)  # Valkey's clearClientConnectionState: tracking off, replies on
    # A SKIP already in force still drops RESET's own reply: Valkey clears
    # only the OFF and SKIP-next flags here (the hooks are recomputed after).
    c.reply_off = c.reply_skip_next = False
    # Valkey's clientSetDefaultAuth: back to the default user, logged in
    # only if that user takes no password.
    acl = c.server.acl
    c.user = b"default"
    c.acl = acl.default
    c.authenticated = not acl.auth_required()
    refresh(c)
    return b"+RESET\r\n"

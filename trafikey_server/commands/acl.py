"""ACL subcommands: SETUSER, GETUSER, DELUSER, LIST, USERS, WHOAMI, CAT,
DRYRUN, GENPASS, LOG, LOAD, SAVE, HELP. The model lives in ``services/acl.py``;
these only read arguments and shape replies as Valkey does."""

from __future__ import annotations

import secrets
import time
from typing import TYPE_CHECKING

from ..protocol.args import cstr
from ..protocol.resp import OK, array, array_header, bulk, bulks, integer
from ..services.acl import CATEGORIES, DENIED_CHANNEL, DENIED_CMD, REASONS, User, lookup
from ..util.errors import CommandError
from ..util.parsing import to_int

if TYPE_CHECKING:
    from ..services.client import Client

_HELP = (
    b"ACL <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    b"CAT [<category>]",
    b"    List all commands that belong to <category>, or all command categories",
    b"    when no category is specified.",
    b"DELUSER <username> [<username> ...]",
    b"    Delete a list of users.",
    b"DRYRUN <username> <command> [<arg> ...]",
    b"    Returns whether the user can execute the given command without executing the command.",
    b"GETUSER <username>",
    b"    Get the user's details.",
    b"GENPASS [<bits>]",
    b"    Generate a secure 256-bit user password. The optional `bits` argument can",
    b"    be used to specify a different size.",
    b"LIST",
    b"    Show users details in config file format.",
    b"LOAD",
    b"    Reload users from the ACL file.",
    b"LOG [<count> | RESET]",
    b"    Show the ACL log entries.",
    b"SAVE",
    b"    Save the current config to the ACL file.",
    b"SETUSER <username> <rule> [<rule> ...]",
    b"    Create or modify a user with the specified rules.",
    b"USERS",
    b"    List all the registered usernames.",
    b"WHOAMI",
    b"    Return the current connection username.",
    b"HELP",
    b"    Print this help.",
)
_HELP_REPLY = array([b"+%s\r\n" % line for line in _HELP])

_NO_ACL_FILE = (b"ERR This instance is not configured to use an ACL file. You may want to specify users via the "
                b"ACL SETUSER command and then issue a CONFIG REWRITE (assuming you have a configuration file "
                b"set) in order to store users in the configuration.")


def _spaces(s: bytes) -> bool:
    return any(ch in b" \t\r\n\v\f\0" for ch in s)


def _safe(s: bytes) -> bytes:
    return s.replace(b"\r", b" ").replace(b"\n", b" ")


def _syntax(argv: list[bytes]) -> CommandError:
    return CommandError(b"ERR unknown subcommand or wrong number of arguments for '%s'. Try ACL HELP." % (
        _safe(argv[1].split(b"\0", 1)[0][:128])))


def acl_help(c: Client, argv: list[bytes]) -> bytes:
    return _HELP_REPLY


def acl_setuser(c: Client, argv: list[bytes]) -> bytes:
    name = argv[2]
    if _spaces(name):
        raise CommandError(b"ERR Usernames can't contain spaces or null characters")
    try:
        c.server.acl.set_user(name, argv[3:], c)
    except CommandError as e:
        raise CommandError(_safe(e.msg)) from None
    return OK


def acl_deluser(c: Client, argv: list[bytes]) -> bytes:
    return integer(c.server.acl.delete(argv[2:], c))


def acl_getuser(c: Client, argv: list[bytes]) -> bytes:
    u = c.server.acl.users.get(argv[2])
    if u is None:
        return c.r.null
    r = c.r
    selectors = array_header(len(u.selectors)) + b"".join(r.map(_rules(sel)) for sel in u.selectors)
    return r.map([
        (bulk(b"flags"), r.bulk_set(u.flags())),
        (bulk(b"passwords"), bulks(u.passwords)),
        *_rules(u),
        (bulk(b"selectors"), selectors),
    ])


def _rules(u: User) -> list[tuple[bytes, bytes]]:
    """A user's or a selector's rules as ACL GETUSER shows them."""
    return [
        (bulk(b"commands"), bulk(u.command_rules())),
        (bulk(b"keys"), bulk(b" ".join(u.key_rules()))),
        (bulk(b"channels"), bulk(b" ".join(u.channel_rules()))),
        (bulk(b"databases"), bulk(b"alldbs")),
    ]


def acl_list(c: Client, argv: list[bytes]) -> bytes:
    return bulks([b"user %s %s" % (u.name, u.describe()) for u in c.server.acl.sorted_users()])


def acl_users(c: Client, argv: list[bytes]) -> bytes:
    return bulks([u.name for u in c.server.acl.sorted_users()])


def acl_whoami(c: Client, argv: list[bytes]) -> bytes:
    return bulk(c.acl.name)


def acl_cat(c: Client, argv: list[bytes]) -> bytes:
    if len(argv) == 2:
        return bulks([name.encode() for name in CATEGORIES])
    if len(argv) != 3:
        raise _syntax(argv)
    want = argv[2].decode("latin-1").lower()
    if want not in CATEGORIES:
        raise CommandError(b"ERR Unknown category '%s'" % _safe(argv[2].split(b"\0", 1)[0][:128]))
    tag = "@" + want
    return bulks([cmd.bname for cmd in c.server.table.everything() if tag in cmd.acl_categories])


def acl_dryrun(c: Client, argv: list[bytes]) -> bytes:
    acl = c.server.acl
    u = acl.users.get(argv[2])
    if u is None:
        raise CommandError(b"ERR User '%s' not found" % _safe(argv[2].split(b"\0", 1)[0]))
    req = argv[3:]
    cmd = lookup(c.server.table, req[0]) if b"|" not in req[0] else None
    if cmd is not None and cmd.subcommands:
        cmd = cmd.subcommands.get(req[1].lower()) if len(req) >= 2 else cmd
    if cmd is None:
        raise CommandError(b"ERR Command '%s' not found" % _safe(req[0].split(b"\0", 1)[0]))
    if not cmd.arity_ok(len(req)):
        raise CommandError(b"ERR wrong number of arguments for '%s' command" % cmd.bname)
    reason, pos = u.denial(cmd, req)
    if not reason:
        return OK
    if reason == DENIED_CMD:
        return bulk(b"User %s has no permissions to run the '%s' command" % (u.name, cmd.bname))
    if reason == DENIED_CHANNEL:
        return bulk(b"User %s has no permissions to access the '%s' channel" % (u.name, req[pos]))
    return bulk(b"User %s has no permissions to access the '%s' key" % (u.name, req[pos]))


def acl_log(c: Client, argv: list[bytes]) -> bytes:
    """ACL LOG [count | RESET] (Valkey's aclCommand): ten entries by
    default, the newest first; a negative count shows none."""
    log = c.server.acl.log
    count = 10
    if len(argv) > 3:
        raise _syntax(argv)
    if len(argv) == 3:
        if cstr(argv[2]).lower() == b"reset":
            log.entries.clear()
            return OK
        n = to_int(argv[2])
        if n is None:
            raise CommandError(b"ERR value is not an integer or out of range")
        count = max(n, 0)
    shown = log.entries[:count]
    r = c.r
    now = int(time.time() * 1000)
    out = [array_header(len(shown))]
    for e in shown:
        out.append(r.map_header(10))
        out.append(bulk(b"count") + integer(e.count) + bulk(b"reason") + bulk(REASONS[e.reason])
                   + bulk(b"context") + bulk(e.context) + bulk(b"object") + bulk(e.object)
                   + bulk(b"username") + bulk(e.username))
        out.append(bulk(b"age-seconds") + r.double((now - e.ctime) / 1000))
        out.append(bulk(b"client-info") + bulk(e.cinfo) + bulk(b"entry-id") + integer(e.entry_id)
                   + bulk(b"timestamp-created") + integer(e.created)
                   + bulk(b"timestamp-last-updated") + integer(e.ctime))
    return b"".join(out)


def acl_genpass(c: Client, argv: list[bytes]) -> bytes:
    if len(argv) > 3:
        raise _syntax(argv)
    bits = 256
    if len(argv) == 3:
        n = to_int(argv[2])
        if n is None:
            raise CommandError(b"ERR value is not an integer or out of range")
        bits = n
    if bits <= 0 or bits > 4096:
        raise CommandError(b"ERR ACL GENPASS argument must be the number of bits for the output password, "
                           b"a positive number up to 4096")
    # The OS's randomness whatever --seed says: a password anyone knowing
    # the seed could recompute would be none, and nothing else depends on it.
    return bulk(secrets.token_hex((bits + 7) // 8)[: (bits + 3) // 4].encode())


def acl_load(c: Client, argv: list[bytes]) -> bytes:
    if not c.server.config.values.get("aclfile"):
        raise CommandError(_NO_ACL_FILE)
    errors = c.server.acl.load_file(c)
    if errors is not None:
        raise CommandError(b"ERR " + errors.encode(errors="surrogateescape"))
    return OK


def acl_save(c: Client, argv: list[bytes]) -> bytes:
    if not c.server.config.values.get("aclfile"):
        raise CommandError(_NO_ACL_FILE)
    if not c.server.acl.save_file():
        raise CommandError(b"ERR There was an error trying to save the ACLs. Please check the server logs for more "
                           b"information")
    return OK

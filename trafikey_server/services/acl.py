"""Users and their permissions, as Valkey's ACL models them.

A ``User`` holds what ACL SETUSER can say about one user: on/off, its
password digests (SHA-256, never the passwords), the commands it may run
(kept both as the set of allowed rows and as the ordered rule text ACL LIST
prints), the key patterns it may touch and the channel patterns it is given.
``Acl`` is the server's registry of users with the ``default`` user every
connection starts as; ``requirepass`` is that user's single password.
``AclLog`` is ACL LOG: every refusal (wherever it happens: dispatch, EXEC,
a script's call) and every failed authentication is reported to it.

Dispatch never asks a user anything on its fast path: each client carries
``unrestricted`` (authenticated, and its user may run every command on every
key), recomputed here whenever a user changes. Only a client without it goes
through ``denial``.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import time
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Protocol

from ..protocol.keyspecs import extract, has_keys
from ..util.confsyntax import split_args
from ..util.errors import CommandError
from ..util.glob import match
from .kill import kill_client

if TYPE_CHECKING:
    from ..protocol.table import Command, Table
    from ..util.log import Log
    from .client import Client
    from .config import Config
    from .host import Scripting
    from .pubsub import PubSub


class AclHost(Protocol):
    """What the users and the ACL log use of the server (server.py)."""

    clients: dict[int, Client]
    config: Config
    log: Log
    pubsub: PubSub
    table: Table

    @property
    def scripting(self) -> Scripting: ...


# Valkey's categories, in the order ACL CAT lists them.
CATEGORIES = (
    "keyspace", "read", "write", "set", "sortedset", "list", "hash", "string", "bitmap",
    "hyperloglog", "geo", "stream", "pubsub", "admin", "fast", "slow", "blocking", "dangerous",
    "connection", "transaction", "scripting",
)

READ = 1
WRITE = 2
ALL = READ | WRITE

# Reasons a request is refused, ordered as Valkey ranks them when it picks one.
DENIED_CMD = 1
DENIED_KEY = 2
DENIED_CHANNEL = 3
DENIED_AUTH = 4

# ACL LOG's names for the reasons, and the contexts a denial happens in.
REASONS = {DENIED_CMD: b"command", DENIED_KEY: b"key", DENIED_CHANNEL: b"channel", DENIED_AUTH: b"auth"}
CTX_TOPLEVEL = b"toplevel"
CTX_MULTI = b"multi"
CTX_LUA = b"lua"
# Valkey's ACL_LOG_GROUPING_MAX_TIME_DELTA (ms), and how many of the newest
# entries a new one is compared with.
GROUPING_MS = 60000
GROUPING_SCAN = 10

# Where the channels of a pub/sub command are (Valkey's getChannelsFromCommand,
# for the flags the ACL checks): the first argument or all of them, and
# whether they are patterns (checked literally against the user's list).
_CHANNEL_ARGS = {
    b"publish": (False, False), b"spublish": (False, False),
    b"subscribe": (True, False), b"ssubscribe": (True, False), b"psubscribe": (True, True),
}

_WRITE_FLAGS = frozenset(("insert", "delete", "update"))


class AclError(Exception):
    """A modifier ACL SETUSER cannot apply; the text follows Valkey's."""

    def __init__(self, text: str) -> None:
        super().__init__(text)
        self.text = text


SYNTAX = "Syntax error"
UNKNOWN = "Unknown command or category name in ACL"
AFTER_ALLKEYS = ("Adding a pattern after the * pattern (or the 'allkeys' flag) is not valid and does not "
                 "have any effect. Try 'resetkeys' to start with an empty list of patterns")
AFTER_ALLCHANNELS = ("Adding a pattern after the * pattern (or the 'allchannels' flag) is not valid and does "
                     "not have any effect. Try 'resetchannels' to start with an empty list of channels")
NO_SUCH_PASSWORD = "The password you are trying to remove from the user does not exist"
BAD_HASH = "The password hash must be exactly 64 characters and contain only lowercase hexadecimal characters"
SUB_FIRST_ARG = "Allowing first-arg of a subcommand is not supported"


def digest(password: bytes) -> bytes:
    """The stored form of a password: its SHA-256 in lower-case hex."""
    return hashlib.sha256(password).hexdigest().encode()


def _password_rule_hash(op: bytes) -> bytes:
    """The digest a password rule names: ``>pass`` / ``<pass`` give the
    password, hashed here; ``#hash`` / ``!hash`` give the digest itself."""
    if op[:1] in (b">", b"<"):
        return digest(op[1:])
    h = op[1:]
    if not _valid_hash(h):
        raise AclError(BAD_HASH)
    return h


def _valid_hash(h: bytes) -> bool:
    return len(h) == 64 and all(ch in b"0123456789abcdef" for ch in h)


def _has_spaces(s: bytes) -> bool:
    return any(ch in b" \t\r\n\v\f\0" for ch in s)


class User:
    __slots__ = (
        "name", "enabled", "nopass", "passwords", "allowed", "allcommands", "future", "first_args",
        "rules", "allkeys", "patterns", "allchannels", "channels", "selectors",
    )

    def __init__(self, name: bytes) -> None:
        self.name = name
        self.enabled = False
        self.nopass = False
        self.passwords: list[bytes] = []
        # Rows (commands and subcommands) this user may run.
        self.allowed: set[Command] = set()
        # Every command, with no bit to test (cleared by any -command).
        self.allcommands = False
        # +@all was the last of +@all / -@all: ACL LIST starts with "+@all".
        self.future = False
        # Commands allowed only with one of these first arguments (lower case).
        self.first_args: dict[Command, list[bytes]] = {}
        # The ordered command rules after the leading +@all / -@all, as typed.
        self.rules: list[bytes] = []
        self.allkeys = False
        self.patterns: list[tuple[bytes, int]] = []  # (pattern, READ|WRITE)
        self.allchannels = False
        self.channels: list[bytes] = []
        # Valkey's selectors beyond the root one (the rules above): each a
        # User holding only rules; a request any of them allows is allowed.
        self.selectors: list[User] = []

    def copy(self) -> User:
        u = User(self.name)
        u.enabled, u.nopass, u.passwords = self.enabled, self.nopass, list(self.passwords)
        u.allowed, u.allcommands, u.future = set(self.allowed), self.allcommands, self.future
        u.first_args = {k: list(v) for k, v in self.first_args.items()}
        u.rules = list(self.rules)
        u.allkeys, u.patterns = self.allkeys, list(self.patterns)
        u.allchannels, u.channels = self.allchannels, list(self.channels)
        u.selectors = [sel.copy() for sel in self.selectors]
        return u

    @property
    def unrestricted(self) -> bool:
        """Runs anything on any key and channel: no check is needed for this
        user's requests."""
        return self.allcommands and self.allkeys and self.allchannels

    # -- describing ------------------------------------------------------------------

    def flags(self) -> list[bytes]:
        out = [b"on" if self.enabled else b"off"]
        if self.nopass:
            out.append(b"nopass")
        return out

    def command_rules(self) -> bytes:
        head = b"+@all" if self.future else b"-@all"
        return b" ".join([head, *self.rules])

    def key_rules(self) -> list[bytes]:
        if self.allkeys:
            return [b"~*"]
        out = []
        for pat, fl in self.patterns:
            if fl == ALL:
                out.append(b"~" + pat)
            else:
                out.append(b"%" + (b"R" if fl & READ else b"") + (b"W" if fl & WRITE else b"") + b"~" + pat)
        return out

    def channel_rules(self) -> list[bytes]:
        if self.allchannels:
            return [b"&*"]
        return [b"&" + ch for ch in self.channels]

    def describe(self) -> bytes:
        """The user as ACL LIST prints it (after ``user <name> ``)."""
        parts = self.flags()
        parts += [b"#" + p for p in self.passwords]
        parts.append(self.describe_rules())
        parts += [b"(" + sel.describe_rules() + b")" for sel in self.selectors]
        return b" ".join(parts)

    def describe_rules(self) -> bytes:
        """Keys, channels and commands, as Valkey's ACLDescribeSelector."""
        parts = self.key_rules()
        if self.allchannels:
            parts.append(b"&*")
        else:
            parts.append(b"resetchannels")
            parts += self.channel_rules()
        parts.append(self.command_rules())
        return b" ".join(parts)

    # -- checking ----------------------------------------------------------------------

    def check_password(self, password: bytes) -> bool:
        """Compared digest to digest with hmac.compare_digest, over every
        stored password, so the time taken says nothing about which
        bytes matched."""
        if self.nopass:
            return True
        given = digest(password)
        ok = False
        for stored in self.passwords:
            ok |= hmac.compare_digest(given, stored)
        return ok

    def may_run(self, cmd: Command, argv: Sequence[bytes]) -> bool:
        if self.allcommands or cmd.no_auth or cmd in self.allowed:
            return True
        firsts = self.first_args.get(cmd)
        if not firsts:
            return False
        idx = 2 if cmd.parent is not None else 1
        return len(argv) > idx and argv[idx].lower() in firsts

    def key_allowed(self, key: bytes, need: int) -> bool:
        for pat, fl in self.patterns:
            if fl & need == need and match(pat, key):
                return True
        return False

    def denial(self, cmd: Command, argv: Sequence[bytes]) -> tuple[int, int]:
        """(0, 0) when the user may run the request (its own rules or any
        selector's allow all of it), else the reason and the position of
        the argument that caused it, picked as Valkey's
        ACLCheckAllUserCommandPerm picks: the gravest, then the latest."""
        best = self._denial(cmd, argv)
        if not best[0]:
            return best
        for sel in self.selectors:
            found = sel._denial(cmd, argv)
            if not found[0]:
                return found
            if found[0] > best[0] or (found[0] == best[0] and found[1] > best[1]):
                best = found
        return best

    def _denial(self, cmd: Command, argv: Sequence[bytes]) -> tuple[int, int]:
        """One selector's check (Valkey's ACLSelectorCheckCmd)."""
        if not self.may_run(cmd, argv):
            return DENIED_CMD, 0
        if not self.allkeys and has_keys(cmd):
            for pos, flags in extract(cmd, argv) or ():
                need = (READ if "access" in flags else 0) | (WRITE if _WRITE_FLAGS.intersection(flags) else 0)
                if not self.key_allowed(argv[pos], need):
                    return DENIED_KEY, pos
        if not self.allchannels:
            where = _CHANNEL_ARGS.get(cmd.bname)
            if where is not None:
                every, is_pattern = where
                for pos in range(1, len(argv) if every else 2):
                    if not self._channel_allowed(argv[pos], is_pattern):
                        return DENIED_CHANNEL, pos
        return 0, 0

    def full_key_access(self, cmd: Command, argv: Sequence[bytes], need: int) -> bool:
        """Whether some selector (the user's own rules included) both lets
        the request run and grants ``need`` on every key (Valkey's
        ACLUserCheckCmdWithUnrestrictedKeyAccess): SORT's BY and GET read
        keys no argument names."""
        for sel in (self, *self.selectors):
            if sel._denial(cmd, argv)[0]:
                continue
            if sel.allkeys or any(p == b"*" and fl & need == need for p, fl in sel.patterns):
                return True
        return False

    def take(self, other: User) -> None:
        """Become other, in place (clients keep pointing at this object)."""
        for slot in User.__slots__:
            setattr(self, slot, getattr(other, slot))

    def refuses_subscriptions(self, c: Client) -> bool:
        """Whether one of c's subscriptions is no longer allowed (Valkey's
        ACLShouldKillPubsubClient)."""
        return bool(c.subscriptions) and (
            any(not self.channel_allowed(p, True) for p in c.patterns)
            or any(not self.channel_allowed(ch, False) for ch in c.channels)
            or any(not self.channel_allowed(ch, False) for ch in c.shard_channels))

    def channel_allowed(self, channel: bytes, is_pattern: bool) -> bool:
        """Whether the user's rules or any selector's allow the channel."""
        return self._channel_allowed(channel, is_pattern) or any(
            sel._channel_allowed(channel, is_pattern) for sel in self.selectors)

    def _channel_allowed(self, channel: bytes, is_pattern: bool) -> bool:
        """Valkey's ACLCheckChannelAgainstList: a channel is matched against
        the patterns, a subscribed pattern only equals one of them."""
        if self.allchannels:
            return True
        if is_pattern:
            return channel in self.channels
        return any(match(pat, channel) for pat in self.channels)

    # -- changing ----------------------------------------------------------------------

    def _set_command(self, cmd: Command, allow: bool) -> None:
        """Valkey's ACLChangeSelectorPerm: a container carries its subcommands."""
        for c in cmd.all_commands():
            if allow:
                self.allowed.add(c)
            else:
                self.allowed.discard(c)
                self.allcommands = False
        self.first_args.pop(cmd, None)

    def _update_rules(self, rule: bytes, allow: bool) -> None:
        """Valkey's ACLUpdateCommandRules: the newest rule for a name (and
        for its subcommands, when the whole command is named) replaces the
        older ones, so the text stays a faithful, short history."""
        rule = rule.lower()
        kept = []
        for r in self.rules:
            name = r[1:]
            if name == rule or name.startswith(rule + b"|"):
                continue
            kept.append(r)
        kept.append((b"+" if allow else b"-") + rule)
        self.rules = kept

    def _all(self, allow: bool, table: Table) -> None:
        self.allcommands = allow
        self.future = allow
        self.rules = []
        self.first_args = {}
        self.allowed = set(table.everything()) if allow else set()

    def apply(self, op: bytes, table: Table, all_channels: bool = False) -> None:
        """One ACL SETUSER modifier (Valkey's ACLSetUser / ACLSetSelector);
        ``all_channels``: acl-pubsub-default allchannels, which a new
        selector starts with."""
        if not op:
            return
        low = op.lower()
        if low == b"on":
            self.enabled = True
        elif low == b"off":
            self.enabled = False
        elif low == b"nopass":
            self.nopass = True
            self.passwords = []
        elif low == b"resetpass":
            self.nopass = False
            self.passwords = []
        elif op[:1] in (b">", b"#"):
            h = _password_rule_hash(op)
            if h not in self.passwords:
                self.passwords.append(h)
            self.nopass = False
        elif op[:1] in (b"<", b"!"):
            h = _password_rule_hash(op)
            if h not in self.passwords:
                raise AclError(NO_SUCH_PASSWORD)
            self.passwords.remove(h)
        elif low == b"reset":
            for sub in (b"resetpass", b"resetkeys", b"resetchannels", b"off", b"clearselectors", b"-@all"):
                self.apply(sub, table)
        elif low == b"clearselectors":
            self.selectors = []
        elif op[:1] == b"(" and op[-1:] == b")":
            self.selectors.append(self.selector(op, table, all_channels))
        elif low in (b"allkeys", b"~*"):
            self.allkeys = True
            self.patterns = []
        elif low == b"resetkeys":
            self.allkeys = False
            self.patterns = []
        elif low in (b"allchannels", b"&*"):
            self.allchannels = True
            self.channels = []
        elif low == b"resetchannels":
            self.allchannels = False
            self.channels = []
        elif low in (b"allcommands", b"+@all"):
            self._all(True, table)
        elif low in (b"nocommands", b"-@all"):
            self._all(False, table)
        elif op[:1] in (b"~", b"%"):
            self._add_pattern(op)
        elif op[:1] == b"&":
            if self.allchannels:
                raise AclError(AFTER_ALLCHANNELS)
            if _has_spaces(op[1:]):
                raise AclError(SYNTAX)
            if op[1:] not in self.channels:
                self.channels.append(op[1:])
            self.allchannels = False
        elif op[:2] in (b"+@", b"-@"):
            self._category(op[2:].decode("latin-1").lower(), op[:1] == b"+", table)
        elif op[:1] == b"+":
            self._allow(op[1:], table)
        elif op[:1] == b"-":
            cmd = lookup(table, op[1:])
            if cmd is None:
                raise AclError(UNKNOWN)
            self._set_command(cmd, False)
            self._update_rules(cmd.bname, False)
        else:
            raise AclError(SYNTAX)

    def selector(self, op: bytes, table: Table, all_channels: bool) -> User:
        """A selector from ``(rule rule ...)`` (Valkey's
        aclCreateSelectorFromOpSet): no permission but those named; only
        key, channel and command rules are allowed inside."""
        sel = User(b"")
        sel.allchannels = all_channels
        text = split_args(op[1:-1].decode("utf-8", "surrogateescape"))
        if text is None:
            raise AclError(SYNTAX)
        for word in (w.encode("utf-8", "surrogateescape") for w in text):
            low = word.lower()
            if low in _USER_ONLY or word[:1] in b"><#!(" or word[-1:] == b")":
                raise AclError(SYNTAX)
            sel.apply(word, table)
        return sel

    def _add_pattern(self, op: bytes) -> None:
        if self.allkeys:
            raise AclError(AFTER_ALLKEYS)
        if op[:1] == b"%":
            fl = 0
            i = 1
            while i < len(op):
                ch = op[i : i + 1].upper()
                if ch == b"R" and not fl & READ:
                    fl |= READ
                elif ch == b"W" and not fl & WRITE:
                    fl |= WRITE
                elif ch == b"~" and fl:
                    i += 1
                    break
                else:
                    raise AclError(SYNTAX)
                i += 1
            if not fl:
                raise AclError(SYNTAX)
            pat = op[i:]
        else:
            fl, pat = ALL, op[1:]
        if _has_spaces(pat):
            raise AclError(SYNTAX)
        for i, (old, old_fl) in enumerate(self.patterns):
            if old == pat:
                self.patterns[i] = (pat, old_fl | fl)
                break
        else:
            self.patterns.append((pat, fl))
        self.allkeys = False

    def _category(self, name: str, allow: bool, table: Table) -> None:
        if name not in CATEGORIES:
            raise AclError(UNKNOWN)
        self._update_rules(b"@" + name.encode(), allow)
        tag = "@" + name
        for cmd in table.ordered:
            if tag in cmd.acl_categories:
                self._set_command(cmd, allow)
            for sub in cmd.subcommands.values():
                if tag in sub.acl_categories:
                    self._set_command(sub, allow)

    def _allow(self, name: bytes, table: Table) -> None:
        if b"|" not in name:
            cmd = lookup(table, name)
            if cmd is None:
                raise AclError(UNKNOWN)
            self._set_command(cmd, True)
            self._update_rules(cmd.bname, True)
            return
        head, _, sub = name.rpartition(b"|")
        root = lookup(table, head)
        if root is None:
            raise AclError(UNKNOWN)
        if root.parent is not None:
            raise AclError(SUB_FIRST_ARG)
        if not sub:
            raise AclError(SYNTAX)
        if root.subcommands:
            cmd = lookup(table, name)
            if cmd is None:
                raise AclError(UNKNOWN)
            self._set_command(cmd, True)
        else:
            # Valkey's deprecated first-argument rule (+select|0).
            firsts = self.first_args.setdefault(root, [])
            if sub.lower() not in firsts:
                firsts.append(sub.lower())
        self._update_rules(name, True)


# Modifiers of a user that a selector does not take.
_USER_ONLY = frozenset((b"on", b"off", b"nopass", b"resetpass", b"reset", b"clearselectors", b"sanitize-payload",
                        b"skip-sanitize-payload"))


def default_user(table: Table) -> User:
    """Valkey's default user as created: everything, no password."""
    d = User(b"default")
    for op in (b"+@all", b"~*", b"&*", b"on", b"nopass"):
        d.apply(op, table)
    return d


def merge_selectors(args: Sequence[bytes]) -> list[bytes]:
    """ACL SETUSER's arguments with each selector written over several of
    them joined into one (Valkey's ACLMergeSelectorArguments); AclError
    naming the argument where an unclosed one starts."""
    out: list[bytes] = []
    open_at = -1
    current = b""
    for i, op in enumerate(args):
        if open_at < 0 and op[:1] == b"(" and op[-1:] != b")":
            open_at, current = i, op
            continue
        if open_at >= 0:
            current += b" " + op
            if op[-1:] == b")":
                open_at = -1
                out.append(current)
            continue
        out.append(op)
    if open_at >= 0:
        raise AclError("Unmatched parenthesis in acl selector starting at '%s'."
                       % args[open_at].decode("utf-8", "surrogateescape"))
    return out


def lookup(table: Table, name: bytes) -> Command | None:
    """A command or ``container|sub`` by name, as ACL rules spell them."""
    head, bar, sub = name.partition(b"|")
    cmd = table.lookup(head)
    if cmd is None or not bar:
        return cmd
    if b"|" in sub or not cmd.subcommands:
        return None
    return cmd.subcommands.get(sub.lower())


def error_text(reason: int, user: User, cmd: Command) -> bytes:
    """Valkey's getAclErrorMessage, non-verbose."""
    if reason == DENIED_CMD:
        return b"User %s has no permissions to run the '%s' command" % (user.name, cmd.bname)
    if reason == DENIED_CHANNEL:
        return b"No permissions to access a channel"
    return b"No permissions to access a key"


class LogEntry:
    """One ACL LOG entry (Valkey's ACLLogEntry)."""

    __slots__ = ("count", "reason", "context", "object", "username", "ctime", "cinfo", "entry_id", "created")

    def __init__(self, reason: int, context: bytes, obj: bytes, username: bytes, ms: int, cinfo: bytes,
                 entry_id: int) -> None:
        self.count = 1
        self.reason = reason
        self.context = context
        self.object = obj
        self.username = username
        self.ctime = ms
        self.cinfo = cinfo
        self.entry_id = entry_id
        self.created = ms

    def same(self, other: LogEntry) -> bool:
        """Valkey's ACLLogMatchEntry: the same denial within a minute."""
        return (self.reason == other.reason and self.context == other.context
                and abs(self.ctime - other.ctime) <= GROUPING_MS and self.object == other.object
                and self.username == other.username)


class AclLog:
    """ACL LOG: the newest entry first, at most acllog-max-len of them; a
    denial like one of the ten newest entries (``LogEntry.same``) bumps that
    entry's count and moves it to the front (Valkey's addACLLogEntry). The
    counters are INFO stats' acl_access_denied_*."""

    def __init__(self, server: AclHost) -> None:
        self.server = server
        self.entries: list[LogEntry] = []
        self.next_id = 0
        self.denied = dict.fromkeys(REASONS, 0)
        # The CLIENT INFO line of a client running ``argv`` (set by the
        # server: the line's format belongs to CLIENT).
        self.client_line: Callable[[Client, list[bytes]], bytes] = lambda c, argv: b""

    def add(self, c: Client, argv: list[bytes], reason: int, context: bytes, obj: bytes,
            username: bytes | None = None) -> None:
        self.denied[reason] += 1
        max_len = self.server.config.values.get("acllog-max-len", 128)
        entries = self.entries
        if max_len == 0:
            entries.clear()
            return
        if c.in_script:  # the entry describes the client that runs the script
            run = self.server.scripting.run
            if run is not None:
                c, argv = run.caller, run.argv
        ms = int(time.time() * 1000)
        entry = LogEntry(reason, context, obj, c.acl.name if username is None else username, ms,
                         self.client_line(c, argv), self.next_id)
        for i, old in enumerate(entries[:GROUPING_SCAN]):
            if old.same(entry):
                del entries[i]
                entries.insert(0, old)
                old.cinfo, old.ctime = entry.cinfo, entry.ctime
                old.count += 1
                return
        self.next_id += 1
        entries.insert(0, entry)
        del entries[max_len:]

    def denial(self, c: Client, cmd: Command, argv: list[bytes], reason: int, pos: int, context: bytes) -> None:
        """A command refused by the ACL: the object is the command's full
        name, or the key or channel at ``pos``."""
        obj = cmd.bname if reason == DENIED_CMD else argv[pos]
        self.add(c, argv, reason, context, obj)


class Acl:
    """The users of one server; ``default`` always exists."""

    def __init__(self, server: AclHost) -> None:
        self.server = server
        self.log = AclLog(server)
        self.users: dict[bytes, User] = {}
        d = default_user(server.table)
        self.default = d
        self.users[b"default"] = d
        self.set_requirepass(server.config.requirepass)

    def set_requirepass(self, password: str | bytes) -> None:
        """requirepass is the default user's one password (Valkey's
        ACLUpdateDefaultUserPassword); empty means nopass."""
        pw = password.encode() if isinstance(password, str) else password
        self.default.apply(b"resetpass", self.server.table)
        self.default.apply(b">" + pw if pw else b"nopass", self.server.table)
        self.changed()

    def auth_required(self) -> bool:
        """A client that has not authenticated must (Valkey's authRequired,
        before the client's own flag)."""
        d = self.default
        return not d.nopass or not d.enabled

    def sorted_users(self) -> list[User]:
        return [self.users[k] for k in sorted(self.users)]

    def authenticate(self, c: Client, name: bytes, password: bytes, argv: list[bytes] | None = None) -> bool:
        """AUTH and HELLO AUTH; a failure is logged (ACL LOG) under the name
        tried, with the request's command name as typed (``argv``)."""
        u = self.users.get(name)
        if u is None:
            # Hashed and compared all the same, so timing does not tell
            # which users exist.
            hmac.compare_digest(digest(password), digest(b""))
            self._failed(c, name, argv)
            return False
        if not u.check_password(password) or not u.enabled:
            self._failed(c, name, argv)
            return False
        c.authenticated = True
        c.acl = u
        c.user = u.name
        refresh(c)
        return True

    def _failed(self, c: Client, name: bytes, argv: list[bytes] | None) -> None:
        argv = argv or [b"auth"]
        context = CTX_MULTI if c.multi is not None or c.in_exec else CTX_TOPLEVEL
        self.log.add(c, argv, DENIED_AUTH, context, argv[0], name)

    def set_user(self, name: bytes, ops: Iterable[bytes], current: Client | None = None) -> None:
        """ACL SETUSER: all modifiers apply to a copy; the user changes only
        if every one of them is valid. A new user, and ``reset``, start with
        the channels acl-pubsub-default gives. Clients of the user whose
        subscriptions the new rules no longer allow are disconnected."""
        old = self.users.get(name)
        all_channels = self.server.config.values.get("acl-pubsub-default") == "allchannels"
        tmp = old.copy() if old is not None else self._new_user(name)
        table = self.server.table
        try:
            merged = merge_selectors(list(ops))
        except AclError as e:
            raise CommandError(b"ERR " + e.text.encode("utf-8", "surrogateescape")) from None
        for op in merged:
            try:
                tmp.apply(op, table, all_channels)
            except AclError as e:
                raise CommandError(b"ERR Error in ACL SETUSER modifier '%s': %s" % (
                    op.split(b"\0", 1)[0], e.text.encode())) from None
            if all_channels and op.lower() == b"reset":
                tmp.allchannels, tmp.channels = True, []
        if old is None:
            self.users[name] = tmp
        else:
            self._kill_subscribers(old, tmp, current)
            old.take(tmp)
        self.changed()

    def _kill_subscribers(self, old: User, new: User, current: Client | None) -> None:
        """Valkey's ACLKillPubsubClientsIfNeeded: unless the new channel
        rules keep every old one, a client of the user subscribed to a
        pattern, channel or shard channel they no longer allow is closed."""
        server = self.server
        ps = server.pubsub
        if new.allchannels or not (ps.channels or ps.patterns or ps.shard_channels):
            return
        if not old.allchannels and all(ch in new.channels for ch in old.channels):
            return
        for c in list(server.clients.values()):
            if c.acl is old and new.refuses_subscriptions(c):
                close_client(c, current)

    def delete(self, names: Sequence[bytes], current: Client) -> int:
        if b"default" in names:
            raise CommandError(b"ERR The 'default' user cannot be removed")
        n = 0
        for name in names:
            u = self.users.pop(name, None)
            if u is None:
                continue
            n += 1
            for c in list(self.server.clients.values()):
                if c.acl is u:
                    c.acl = self.default
                    c.user = b"default"
                    c.authenticated = False
                    refresh(c)
                    kill_client(current, c)
        return n

    def _new_user(self, name: bytes) -> User:
        """A user as ACL SETUSER creates one: off, no rules, and the
        channels acl-pubsub-default gives."""
        u = User(name)
        if self.server.config.values.get("acl-pubsub-default") == "allchannels":
            u.allchannels = True
        return u

    def parse_file(self, text: bytes, filename: str) -> tuple[dict[bytes, User], str]:
        """An ACL file's users, as Valkey's ACLLoadFromFile reads them: one
        ``user <name> <rules...>`` per line, words split on single spaces;
        and every error found, in Valkey's words ("" when none)."""
        users: dict[bytes, User] = {}
        errors: list[str] = []
        table = self.server.table
        for lineno, raw in enumerate(text.split(b"\n"), 1):
            line = raw.strip(b" \t\r\n")
            if not line:
                continue
            words = line.split(b" ")
            if words[0] != b"user" or len(words) < 2:
                errors.append(f"{filename}:{lineno} should start with user keyword followed by the username. ")
                continue
            name = words[1]
            shown = name.decode(errors="replace")
            if name in users:
                errors.append(f"WARNING: Duplicate user '{shown}' found on line {lineno}. ")
                continue
            u = users[name] = self._new_user(name)
            syntax = False
            try:
                ops = merge_selectors(words[2:])
            except AclError:
                errors.append(f"{filename}:{lineno}: Unmatched parenthesis in selector definition.")
                continue
            all_channels = u.allchannels
            for op in ops:
                op = op.strip(b"\t\r\n")
                try:
                    u.apply(op, table, all_channels)
                except AclError as e:
                    if e.text == UNKNOWN:  # Valkey shows the operation only for a name it does not know
                        errors.append(f"{filename}:{lineno}: Error in applying operation "
                                      f"'{op.decode(errors='replace')}': {e.text}. ")
                    elif not syntax:
                        errors.append(f"{filename}:{lineno}: {e.text}. ")
                        syntax = True
        return users, "".join(errors)

    def load_file(self, current: Client | None = None) -> str | None:
        """ACL LOAD (and start-up with aclfile): every user replaced by the
        file's, or none when it has errors (their text is returned). A
        file without ``default`` gets Valkey's default user. Clients of a
        user that is gone, or whose subscriptions the new rules refuse, are
        closed; the others follow their user's new rules."""
        filename = self.server.config.values.get("aclfile", "")
        try:
            with open(self._path(filename), "rb") as f:
                text = f.read()
        except OSError as e:
            return f"Error loading ACLs, opening file '{filename}': {e.strerror}"
        users, errors = self.parse_file(text, filename)
        if errors:
            return errors + "WARNING: ACL errors detected, no change to the previously active ACL rules was performed"
        new_default = users.get(b"default") or default_user(self.server.table)
        self.default.take(new_default)  # the default user is referenced everywhere: changed in place
        users[b"default"] = self.default
        self.users = users
        for c in list(self.server.clients.values()):
            if c.acl is self.default:
                continue
            u = users.get(c.acl.name)
            if u is None or u.refuses_subscriptions(c):
                close_client(c, current)
                continue
            c.acl = u
        self.changed()
        return None

    def _path(self, filename: str) -> str:
        """aclfile as Valkey opens it: a relative name is under ``dir``
        (Valkey works in that directory)."""
        return os.path.join(self.server.config.values["dir"], filename)

    def save_file(self) -> bool:
        """ACL SAVE: every user as ``user <name> <rules>`` in ACL LIST's
        words, written to a temporary file, synced and renamed over aclfile."""
        filename = self._path(self.server.config.values.get("aclfile", ""))
        data = b"".join(b"user %s %s\n" % (u.name, u.describe()) for u in self.sorted_users())
        temp = f"{filename}.tmp-{os.getpid()}-{int(time.time() * 1000)}"
        log = self.server.log
        try:
            fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        except OSError as e:
            log.warning(f"Opening temp ACL file for ACL SAVE: {e.strerror}")
            return False
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
            os.fsync(fd)
        except OSError as e:
            log.warning(f"Writing ACL file for ACL SAVE: {e.strerror}")
            os.close(fd)
            os.unlink(temp)
            return False
        os.close(fd)
        try:
            os.replace(temp, filename)
        except OSError as e:
            log.warning(f"Renaming ACL file for ACL SAVE: {e.strerror}")
            os.unlink(temp)
            return False
        return True

    def load_at_startup(self) -> str | None:
        """The users of ``user`` lines in the configuration, or of aclfile;
        what stops start-up, in Valkey's words, or None."""
        cfg = self.server.config
        filename = cfg.values.get("aclfile", "")
        if filename and cfg.users:
            return ("Configuring Valkey with users defined in valkey.conf and at the same setting an ACL file path "
                    "is invalid. This setup is very likely to lead to configuration errors and security holes, "
                    "please define either an ACL file or declare users directly in your valkey.conf, but not both.")
        table = self.server.table
        all_channels = cfg.values.get("acl-pubsub-default") == "allchannels"
        for name, *ops in cfg.users:
            u = self.users.get(name)
            if u is None:
                u = self.users[name] = self._new_user(name)
            else:
                u.apply(b"reset", table)  # only default can be declared again: it starts over
            try:
                ops = merge_selectors(ops)
            except AclError as e:
                self.server.log.warning(e.text)
                return "Critical error while loading ACLs. Exiting."
            for op in ops:
                try:
                    u.apply(op, table, all_channels)
                except AclError as e:
                    self.server.log.warning(f"Error loading ACL rule '{op.decode(errors='replace')}' for the user "
                                            f"named '{name.decode(errors='replace')}': {e.text}")
                    return "Critical error while loading ACLs. Exiting."
            if not u.enabled:
                self.server.log.notice(f"The user '{name.decode(errors='replace')}' is disabled (there is no 'on' "
                                       "modifier in the user description). Make sure this is not a configuration "
                                       "error.")
        self.changed()
        if filename:
            errors = self.load_file()
            if errors is not None:
                return f"Aborting Valkey startup because of ACL errors: {errors}"
        return None

    def config_lines(self) -> list[str]:
        """The ``user`` lines CONFIG REWRITE writes: every user, unless the
        users live in an aclfile (then none)."""
        if self.server.config.values.get("aclfile"):
            return []
        return [(b"user %s %s" % (u.name, u.describe())).decode("utf-8", "surrogateescape")
                for u in self.sorted_users()]

    def changed(self) -> None:
        """A user changed: every client's fast-path flag is recomputed."""
        for c in self.server.clients.values():
            refresh(c)


def close_client(victim: Client, current: Client | None) -> None:
    """Valkey's freeClient from a command: the client running it is closed
    after its reply; another is gone at once (its subscriptions with it),
    so a later request in the same pipeline no longer sees it."""
    if victim is current:
        victim.closing = True
        victim.close_after_reply = True
        return
    victim.closing = True
    server = victim.server
    conn = server.connections.get(victim.id)
    if conn is not None and conn.transport is not None:
        conn.transport.abort()
    victim.unwatch()
    server.client_disconnected(conn, victim)


def refresh(c: Client) -> None:
    """The one attribute dispatch's fast path reads: may this client's
    requests skip the authentication and permission checks?"""
    acl = c.server.acl
    # A RESP2 client in pub/sub mode may run only a few commands (dispatch
    # checks which), so it leaves the fast path while subscribed; so does a
    # client with per-request extras (tracking, CLIENT REPLY: ``hooks``).
    c.unrestricted = ((c.authenticated or not acl.auth_required()) and c.acl.unrestricted
                      and not (c.subscriptions and c.resp == 2) and not c.hooks)

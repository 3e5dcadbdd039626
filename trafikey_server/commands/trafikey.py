"""TRAFIKEY.CLOCK: the test clock, for tests that must not sleep; and
TRAFIKEY.FAULT, the fault rules (at the end).

Every time-dependent path of the server (key expiry, lazy and active;
TIME; the job core's deadlines and run-at times) reads one ``Clock``, so a
test can freeze it, move it and give it back, and a lease expires or a
schedule comes due exactly when the test says. The command exists only
when the server was started with ``--enable-clock-command yes``: a clock
anyone can move would be a hazard on a server that holds real work.

Each subcommand answers with the clock's time afterwards, in milliseconds.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..protocol.args import Args, error_text
from ..protocol.resp import OK, array, bulk, integer, status
from ..services.faults import KINDS, SHORTCUTS, Rule
from ..util.errors import SYNTAX_MSG, CommandError, wrong_args
from ..util.parsing import parse_int

if TYPE_CHECKING:
    from ..services.client import Client

_DISABLED = b"ERR TRAFIKEY.CLOCK is disabled: start the server with --enable-clock-command yes"
_HELP = (
    b"TRAFIKEY.CLOCK <subcommand> [<arg> ...]. Subcommands are:",
    b"GET",
    b"    Return the server's time in milliseconds.",
    b"FREEZE [<ms>]",
    b"    Stop the clock, at <ms> or at the current time.",
    b"ADVANCE <ms>",
    b"    Move the clock forward by <ms>; a running clock keeps running.",
    b"SET <ms>",
    b"    Set the clock to <ms>; a running clock keeps running.",
    b"RELEASE",
    b"    Give the clock back to the system time.",
    b"HELP",
    b"    Print this help.",
)


def _enabled(c: Client) -> None:
    if not c.server.config.values.get("enable-clock-command"):
        raise CommandError(_DISABLED)


def _ms(arg: bytes) -> int:
    v = parse_int(arg)
    if v < 0:
        raise CommandError(b"ERR ms is out of range")
    return v


def clock_get(c: Client, argv: list[bytes]) -> bytes:
    _enabled(c)
    return integer(c.server.clock.ms())


def clock_freeze(c: Client, argv: list[bytes]) -> bytes:
    if len(argv) > 3:
        raise wrong_args("trafikey.clock|freeze")
    _enabled(c)
    clock = c.server.clock
    clock.freeze(_ms(argv[2]) if len(argv) == 3 else None)
    c.server.blocking.clock_moved()
    return integer(clock.ms())


def clock_advance(c: Client, argv: list[bytes]) -> bytes:
    _enabled(c)
    clock = c.server.clock
    clock.advance(_ms(argv[2]))
    c.server.blocking.clock_moved()
    return integer(clock.ms())


def clock_set(c: Client, argv: list[bytes]) -> bytes:
    _enabled(c)
    clock = c.server.clock
    clock.set(_ms(argv[2]))
    c.server.blocking.clock_moved()
    return integer(clock.ms())


def clock_release(c: Client, argv: list[bytes]) -> bytes:
    _enabled(c)
    clock = c.server.clock
    clock.release()
    c.server.blocking.clock_moved()
    return integer(clock.ms())


def clock_help(c: Client, argv: list[bytes]) -> bytes:
    return b"*%d\r\n" % len(_HELP) + b"".join(status(line) for line in _HELP)


# -- TRAFIKEY.FAULT -------------------------------------------------------------
#
# Fault rules for tests of a client's error, retry and timeout paths: the
# store and the matching are services/faults.py, the firing is dispatch's
# (execution/dispatch.py). Like the clock, the command exists only when the
# server was started with ``--enable-fault-command yes``.

_FAULT_DISABLED = b"ERR TRAFIKEY.FAULT is disabled: start the server with --enable-fault-command yes"
_FAULT_HELP = (
    b"TRAFIKEY.FAULT <subcommand> [<arg> ...]. Subcommands are:",
    b"ADD <kind> [<arg>] [COMMAND <name>|<name>|<sub>] [KEY <glob>] [CLIENTNAME <name>]",
    b"    [TIMES <n> | PROBABILITY <p>]",
    b"    Add a rule; return its id. A request matches when it is the command (or",
    b"    one of its subcommands), names a key that matches the glob and comes from",
    b"    a client of that name; what is left out matches anything. Without TIMES or",
    b"    PROBABILITY the rule fires on every match until deleted. Kinds are:",
    b"    * ERROR <text>: answer -<text> instead of running the command; LOADING, BUSY,",
    b"      OOM, READONLY, MASTERDOWN, TRYAGAIN, CLUSTERDOWN, NOSCRIPT, NOREPLICAS,",
    b"      NOAUTH, WRONGTYPE, BUSYKEY or MISCONF alone stand for the server's own text.",
    b"    * MOVED <host:port> | ASK <host:port>: redirect, with the slot of the first key.",
    b"    * DROP: close the connection without running the command.",
    b"    * DROP-AFTER: run the command, then close the connection before its reply.",
    b"    * CUT <bytes>: run the command, send that much of its reply, then close.",
    b"    * DELAY <ms>: run the command, hold its reply for <ms> on the server's clock.",
    b"LIST",
    b"    Return every rule.",
    b"DEL <id> [<id> ...]",
    b"    Delete rules; return how many were deleted.",
    b"RESET",
    b"    Delete every rule.",
    b"HELP",
    b"    Print this help.",
)
_NO_ARG = frozenset((b"drop", b"drop-after"))


def _fault_enabled(c: Client) -> None:
    if not c.server.config.values.get("enable-fault-command"):
        raise CommandError(_FAULT_DISABLED)


def _error_text(c: Client, text: bytes) -> bytes:
    """ERROR's argument as the error line: a shortcut's text, or the text
    as given (its first word is the error code; one leading '-' and CR or
    LF dropped or blanked, as Valkey's addReplyError writes a text)."""
    if text.startswith(b"-"):
        text = text[1:]
    if not text:
        raise CommandError(SYNTAX_MSG)
    shortcut = SHORTCUTS.get(text.lower())
    if shortcut is not None:
        if c.server.config.values["extended-redis-compatibility"]:
            shortcut = shortcut.replace(b"Valkey", b"Redis")
        return shortcut
    return text.replace(b"\r", b" ").replace(b"\n", b" ")


def _address(arg: bytes) -> bytes:
    host, sep, port = arg.rpartition(b":")
    if not sep or not host or not port.isdigit() or int(port) > 65535:
        raise CommandError(b"ERR Invalid address '%s': expected <host>:<port>" % error_text(arg))
    return arg


def fault_add(c: Client, argv: list[bytes]) -> bytes:
    _fault_enabled(c)
    a = Args(argv, 2)
    kind = a.word()
    if kind not in KINDS:
        raise CommandError(SYNTAX_MSG)
    arg: bytes | None = None
    value: bytes | int | None = None
    if kind not in _NO_ARG:
        arg = a.next()
        if kind == b"error":
            value = _error_text(c, arg)
        elif kind in (b"moved", b"ask"):
            value = _address(arg)
        else:  # cut, delay
            n = parse_int(arg)
            if n < 0:
                raise CommandError(b"ERR ms is out of range" if kind == b"delay" else
                                   b"ERR value is out of range, must be positive")
            value = n
    rule = Rule(kind, arg, value)
    key: bytes | None = None
    while a:
        opt = a.word()
        if opt == b"command":
            name = a.next().lower()
            head, bar, sub = name.partition(b"|")
            root = c.server.table.lookup(head)
            if root is None or (bar and sub not in root.subcommands):
                raise CommandError(b"ERR Invalid command specified")
            rule.command = name
        elif opt == b"key":
            key = a.next()
        elif opt == b"clientname":
            rule.clientname = a.next()
        elif opt == b"times" and rule.probability is None:
            times = a.int()
            if times <= 0:
                raise CommandError(b"ERR value is out of range, must be positive")
            rule.times = times
        elif opt == b"probability" and rule.times is None:
            p = a.float()
            if not 0 <= p <= 1:
                raise CommandError(b"ERR probability must be between 0 and 1")
            rule.probability = p
        else:
            raise CommandError(SYNTAX_MSG)
    return integer(c.server.faults.add(rule, key))


def _opt(c: Client, v: bytes | None) -> bytes:
    return c.r.null if v is None else bulk(v)


def fault_list(c: Client, argv: list[bytes]) -> bytes:
    _fault_enabled(c)
    out = []
    for rule in c.server.faults.rules.values():
        p = rule.probability
        out.append(c.r.map([
            (bulk(b"id"), integer(rule.id)),
            (bulk(b"kind"), bulk(rule.kind.upper())),
            (bulk(b"arg"), _opt(c, rule.arg)),
            (bulk(b"command"), _opt(c, rule.command)),
            (bulk(b"key"), _opt(c, rule.key)),
            (bulk(b"clientname"), _opt(c, rule.clientname)),
            (bulk(b"times"), c.r.null if rule.times is None else integer(rule.times)),
            (bulk(b"probability"), c.r.null if p is None else c.r.double(p)),
            (bulk(b"fired"), integer(rule.fired)),
        ]))
    return array(out)


def fault_del(c: Client, argv: list[bytes]) -> bytes:
    _fault_enabled(c)
    a = Args(argv, 2)
    ids = [a.int() for _ in range(a.left())]
    return integer(c.server.faults.delete(ids))


def fault_reset(c: Client, argv: list[bytes]) -> bytes:
    _fault_enabled(c)
    c.server.faults.reset()
    return OK


def fault_help(c: Client, argv: list[bytes]) -> bytes:
    _fault_enabled(c)
    return b"*%d\r\n" % len(_FAULT_HELP) + b"".join(status(line) for line in _FAULT_HELP)

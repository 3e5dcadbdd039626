"""TRAFIKEY.CLOCK: the test clock, for tests that must not sleep.

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

from ..protocol.resp import integer, status
from ..util.errors import CommandError, wrong_args
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

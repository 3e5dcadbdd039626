"""Fault rules: TRAFIKEY.FAULT's store, and which request a rule fires on.

A rule names what it does (its *kind*) and which requests it matches: a
command (``get``, or ``client|kill`` for one subcommand, or ``client`` for
all of them), a glob over the request's keys (the keys its key specs name,
as the ACL and cluster checks read them) and a client name; what it leaves
out matches anything. Rules are tried in the order they were added and
the first that matches fires; ``TIMES n`` spends one firing per match and
the rule goes when none is left, ``PROBABILITY p`` draws from the server's
one generator (``util.rand.rng``, seeded by ``--seed``) at each match.

Dispatch asks ``match`` only for a request a client sent, after every
check Valkey makes before running it (authentication, ACL, arity, OOM, a
pause) and just before it runs: a command queued inside MULTI is not
matched (EXEC is, as the one request that runs them), nor a script's
inner calls, nor the replay of the append-only file. With no rule the
per-command path pays nothing: the table's fast map is hidden while a rule
exists, so that every request takes the full path where the rules are
tried, as CLIENT PAUSE hides it (pause.py).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from ..protocol.keyspecs import request_keys
from ..util.glob import matcher
from ..util.rand import rng
from ..util.slots import keyslot
from .limits import LOADING, MISCONF, NOREPLICAS, OOM, apply_maxmemory

if TYPE_CHECKING:
    from ..protocol.table import Command
    from .client import Client
    from .limits import MemoryLimitHost




# The kinds, as TRAFIKEY.FAULT ADD spells them (lower case), in the order
# INFO lists them. The first four refuse the request; the rest run it.
KINDS = (b"error", b"moved", b"ask", b"drop", b"drop-after", b"cut", b"delay")
REFUSING = frozenset((b"error", b"moved", b"ask", b"drop"))

# ERROR's shortcuts: Valkey 9.1's own text for each (server.c's shared
# objects, cluster.c's refusals); "Valkey" becomes "Redis" under
# extended-redis-compatibility, as Valkey names itself in them.
SHORTCUTS = {
    b"loading": LOADING,
    b"busy": b"BUSY Valkey is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE.",
    b"oom": OOM,
    b"readonly": b"READONLY You can't write against a read only replica.",
    b"masterdown": b"MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set to 'no'.",
    b"tryagain": b"TRYAGAIN Multiple keys request during rehashing of slot",
    b"clusterdown": b"CLUSTERDOWN The cluster is down",
    b"noscript": b"NOSCRIPT No matching script.",
    b"noreplicas": NOREPLICAS,
    b"noauth": b"NOAUTH Authentication required.",
    b"wrongtype": b"WRONGTYPE Operation against a key holding the wrong kind of value",
    b"busykey": b"BUSYKEY Target key name already exists.",
    b"misconf": MISCONF,
}


class Rule:
    """One fault rule. ``arg`` is the kind's argument as given (None for
    DROP and DROP-AFTER); ``value`` what it means (the error text, the
    address, the byte count or the milliseconds)."""

    __slots__ = ("id", "kind", "arg", "value", "command", "key", "key_match", "clientname", "times",
                 "probability", "fired")

    def __init__(self, kind: bytes, arg: bytes | None, value: bytes | int | None) -> None:
        self.id = 0
        self.kind = kind
        self.arg = arg
        self.value = value
        self.command: bytes | None = None
        self.key: bytes | None = None
        self.key_match: Callable[[bytes], bool] | None = None
        self.clientname: bytes | None = None
        self.times: int | None = None
        self.probability: float | None = None
        self.fired = 0

    def matches(self, c: Client, cmd: Command, argv: list[bytes]) -> bool:
        command = self.command
        if command is not None and command != cmd.bname and (cmd.parent is None or command != cmd.parent.bname):
            return False
        if self.clientname is not None and c.name != self.clientname:
            return False
        key_match = self.key_match
        if key_match is not None and not any(map(key_match, request_keys(cmd, argv))):
            return False
        p = self.probability
        return p is None or rng.random() < p


class Faults:
    def __init__(self, server: MemoryLimitHost) -> None:
        self.server = server
        self.rules: dict[int, Rule] = {}
        self.last_id = 0
        self.fired = dict.fromkeys(KINDS, 0)

    # -- the rules -----------------------------------------------------------------

    def add(self, rule: Rule, key: bytes | None) -> int:
        self.last_id += 1
        rule.id = self.last_id
        if key is not None:
            rule.key = key
            rule.key_match = matcher(key)
        first = not self.rules
        self.rules[rule.id] = rule
        if first:
            self._fast_path()
        return rule.id

    def delete(self, ids: list[int]) -> int:
        n = 0
        for i in ids:
            if self.rules.pop(i, None) is not None:
                n += 1
        if n and not self.rules:
            self._fast_path()
        return n

    def reset(self) -> None:
        if self.rules:
            self.rules.clear()
            self._fast_path()

    def _fast_path(self) -> None:
        """Hide the table's fast map while a rule exists; give the one the
        other settings choose back when the last rule goes."""
        server = self.server
        if self.rules:
            self.hide_fast()
        else:
            apply_maxmemory(server, server.maxmemory)

    def hide_fast(self) -> None:
        server = self.server
        if server.table.fast:
            server.table = server.table.with_fast({})

    # -- firing --------------------------------------------------------------------

    def match(self, c: Client, cmd: Command, argv: list[bytes]) -> Rule | None:
        """The first rule this request fires (it is not spent yet: ``spend``)."""
        for rule in self.rules.values():
            if rule.matches(c, cmd, argv):
                return rule
        return None

    def spend(self, rule: Rule) -> None:
        rule.fired += 1
        self.fired[rule.kind] += 1
        if rule.times is not None:
            rule.times -= 1
            if rule.times <= 0:
                self.delete([rule.id])

    def error_text(self, rule: Rule, c: Client, cmd: Command, argv: list[bytes]) -> bytes:
        """The error a refusing rule answers with (without '-' and CRLF)."""
        if rule.kind == b"error":
            text = rule.value
            assert isinstance(text, bytes)
            return text
        keys: list[bytes] = []
        if cmd.bname == b"exec" and c.multi:
            for qcmd, qargv in c.multi:
                keys = request_keys(qcmd, qargv)
                if keys:
                    break
        else:
            keys = request_keys(cmd, argv)
        slot = keyslot(keys[0]) if keys else 0
        value = rule.value
        assert isinstance(value, bytes)
        return b"%s %d %s" % (rule.kind.upper(), slot, value)

    # -- INFO ----------------------------------------------------------------------

    def reset_stats(self) -> None:
        """CONFIG RESETSTAT: the firings counted so far (the rules' own
        counts, shown by LIST, stay with them)."""
        self.fired = dict.fromkeys(KINDS, 0)

    def info(self) -> list[tuple[str, object]]:
        fields: list[tuple[str, object]] = [("fault_rules", len(self.rules)),
                                            ("faults_fired", sum(self.fired.values()))]
        fields += [(f"faults_fired_{k.decode().replace('-', '_')}", n) for k, n in self.fired.items()]
        return fields

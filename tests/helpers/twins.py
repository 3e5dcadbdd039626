"""Running the job core by either executor: the native EMQ.* verbs, or their
scripted twins (trafikey_server/lua) by EVALSHA.

Shared by test_executors.py and test_conformance.py. An ``Executor`` sends a
verb to one server, one way, and remembers the window of server time in which
the call ran: ``TIME`` read just before and just after it. A score the call
computed from the server's clock (``now + lease_ms`` and the like) must lie in
that window shifted by the offset the spec names; ``At`` is such an expected
score. On trafikey-server the test clock is frozen, so the window is one
instant and ``At`` is exact; a real valkey-server's clock runs, so the window is
a few milliseconds wide. Nothing here asserts how long anything took.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import redis

from trafikey_server.lua import SCRIPTS

from .emq_model import server_keyspace
from .resp_wire import Wire

T0 = 1_700_000_000_000  # the frozen trafikey clock's start in every test
IGNORED_FIELDS = (b"failures", b"lease_epoch")  # the native verbs' own fields


def time_ms(reply: list[Any]) -> int:
    """TIME's [seconds, microseconds] as the scripts read it: s*1000 + us//1000."""
    return int(reply[0]) * 1000 + int(reply[1]) // 1000


@dataclass(frozen=True)
class At:
    """An expected score: the executor's `now` during one call, plus `offset`."""

    window: tuple[int, int]
    offset: int = 0

    def __eq__(self, other: object) -> bool:
        if isinstance(other, At):
            return self.window == other.window and self.offset == other.offset
        if isinstance(other, (int, float)):
            lo, hi = self.window
            return lo + self.offset <= other <= hi + self.offset
        return NotImplemented

    def __hash__(self) -> int:
        return hash((self.window, self.offset))

    def __repr__(self) -> str:
        lo, hi = self.window
        return f"At({lo}..{hi} + {self.offset})"


def Z(members: dict[bytes, Any]) -> tuple[str, object]:
    return ("zset", members)


def H(fields: dict[bytes, bytes]) -> tuple[str, object]:
    return ("hash", fields)


def S(value: bytes) -> tuple[str, object]:
    return ("string", value)


def row(state: bytes, attempts: bytes = b"0", payload: bytes = b"p", **extra: bytes) -> tuple[str, object]:
    fields = {b"state": state, b"attempts": attempts, b"payload": payload}
    fields.update({k.encode(): v for k, v in extra.items()})
    return H(fields)


class Executor:
    """One way of running the job core on one server.

    ``scripted`` executors send ``EVALSHA <sha> numkeys KEYS... ARGV...`` with
    the script for the verb, loaded once with SCRIPT LOAD; the native one
    sends ``EMQ.<VERB> numkeys KEYS... ARGV...``. Both give the same KEYS.
    ``clock`` is true on a trafikey-server, whose test clock the executor
    freezes at T0 and moves with ADVANCE."""

    def __init__(self, name: str, port: int, *, scripted: bool, clock: bool, db: int = 0) -> None:
        self.name = name
        self.scripted = scripted
        self.clock = clock
        self.wire = Wire(port)
        if db:
            assert self.wire.call("SELECT", db) == b"+OK\r\n"
        self.r = redis.Redis(port=port, db=db)
        self.reset()
        if scripted:
            for script in SCRIPTS.values():
                reply = self.wire.call("SCRIPT", "LOAD", script.source)
                assert reply == b"$40\r\n%s\r\n" % script.sha1.encode(), (name, script.name, reply)

    def reset(self) -> None:
        """An empty database (this executor's own) and, on trafikey, the
        clock frozen at T0."""
        assert self.wire.call("FLUSHDB") == b"+OK\r\n"
        if self.clock:
            assert self.wire.call("TRAFIKEY.CLOCK", "FREEZE", T0) == b":%d\r\n" % T0
        self.window = (self.now(), self.now())

    def close(self) -> None:
        self.wire.close()
        self.r.close()

    # -- time ----------------------------------------------------------------------

    def now(self) -> int:
        """The server's clock, read with TIME as the scripts read it."""
        return time_ms(self.r.time())

    def wait_past(self, ms: int) -> None:
        """Make the server's clock pass ``ms``: ADVANCE a test clock, or wait
        for a real one (a few milliseconds at most in these tests)."""
        now = self.now()
        if now > ms:
            return
        if self.clock:
            self.wire.call("TRAFIKEY.CLOCK", "ADVANCE", ms + 1 - now)
            return
        while self.now() <= ms:
            time.sleep(0.0005)

    def tick(self, gap: int = 2) -> None:
        """Put at least ``gap`` ms between the last call's window and the next."""
        self.wait_past(self.window[1] + gap - 1)

    def advance(self, ms: int) -> None:
        """A clock advance: a test clock jumps; a real one is simply left running."""
        if self.clock:
            self.wire.call("TRAFIKEY.CLOCK", "ADVANCE", ms)

    # -- calls -----------------------------------------------------------------------

    def request(self, verb: str, prefix: bytes, *argv: bytes | str | int) -> tuple[bytes | str | int, ...]:
        script = SCRIPTS[verb]
        keys = script.key_names(prefix)
        if self.scripted:
            return ("EVALSHA", script.sha1, script.numkeys, *keys, *argv)
        return ("EMQ." + verb.upper(), script.numkeys, *keys, *argv)

    def call(self, verb: str, prefix: bytes, *argv: bytes | str | int) -> bytes:
        """One verb (or its twin) on the queue ``prefix``: the raw reply bytes.
        The window of server time around the call is kept in ``window``."""
        return self.send(*self.request(verb, prefix, *argv))

    def send(self, *command: bytes | str | int) -> bytes:
        """Any command, timed like a verb."""
        lo = self.now()
        reply = self.wire.call(*command)
        self.window = (lo, self.now())
        return reply

    def at(self, offset: int = 0) -> At:
        """The score `now + offset` of the last call."""
        return At(self.window, offset)

    def raw(self, *command: bytes | str | int) -> bytes:
        return self.wire.call(*command)

    # -- reading the keyspace ----------------------------------------------------

    def keyspace(self, strip: bool = False) -> dict[bytes, tuple[str, object]]:
        """Every key: (type, content). ``strip`` drops the native verbs' own
        row fields (failures, lease_epoch) before a comparison across
        executors."""
        out = server_keyspace(self.r)
        if strip:
            for key, (kind, content) in out.items():
                if kind == "hash":
                    out[key] = (kind, {f: v for f, v in content.items() if f not in IGNORED_FIELDS})  # type: ignore[union-attr]
        return out

    def __repr__(self) -> str:
        return f"<{self.name}>"


def native(port: int, db: int = 0) -> Executor:
    """(a) the native verbs on trafikey-server."""
    return Executor("native", port, scripted=False, clock=True, db=db)


def trafikey_lua(port: int, db: int = 0) -> Executor:
    """(b) the scripted twins on trafikey-server, by EVALSHA."""
    return Executor("trafikey-lua", port, scripted=True, clock=True, db=db)


def valkey_lua(port: int, db: int = 0) -> Executor:
    """(c) the scripted twins on a real valkey-server, by EVALSHA."""
    return Executor("valkey-lua", port, scripted=True, clock=False, db=db)

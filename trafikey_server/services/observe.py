"""What watches commands as they run: MONITOR, the slow log, the latency monitor.

Dispatch already measures each call's duration for INFO commandstats. It
compares that duration with one number, ``server.observe_us``, and only
calls ``Observer.record`` when it is reached. That number is the smallest
threshold anyone asked for: ``commandlog-execution-slower-than`` (alias
``slowlog-log-slower-than``) when the slow log is on, the
``latency-monitor-threshold`` in microseconds when it is set, and 0 while
a client is in MONITOR mode. With all three idle it is larger than any
duration, so a command pays one attribute read and one comparison.

The slow log is the ``slow`` type of COMMANDLOG (SLOWLOG reads the same
``CommandLog``). The ``large-request`` and ``large-reply`` types log a
command whose request, or reply, reached ``commandlog-request-larger-than``
or ``commandlog-reply-larger-than`` bytes, counted as Valkey counts them
(the request in RESP's multibulk form; a command run by EXEC has EXEC's
request and the transaction's reply so far; one run by a script has no
request and its own reply). Dispatch compares the reply's length with
``server.large_reply``; a request can only be large when the bytes a
connection holds reach the request threshold, and for such a read the
connection lowers ``observe_us`` to 0 (``big_read``), so that small reads
cost no per-command work.
"""

from __future__ import annotations

import time
from collections import deque
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from ..protocol.table import Command
    from .blocking import Blocking
    from .client import Client
    from .config import Config
    from .host import Scripting


class ObserveHost(Protocol):
    """What MONITOR, SLOWLOG, COMMANDLOG and LATENCY use of the server (server.py)."""

    blocking: Blocking
    config: Config
    loading: bool
    observe_us: int
    large_reply: int
    large_request: int

    @property
    def scripting(self) -> Scripting: ...


NEVER = 1 << 62
# Valkey's SLOWLOG_ENTRY_MAX_ARGC / SLOWLOG_ENTRY_MAX_STRING.
SLOWLOG_MAX_ARGC = 32
SLOWLOG_MAX_STRING = 128
# Valkey's LATENCY_TS_LEN: samples kept per event.
LATENCY_LEN = 160
REDACTED = b"(redacted)"

_REPR = {0x5C: b"\\\\", 0x22: b'\\"', 0x0A: b"\\n", 0x0D: b"\\r", 0x09: b"\\t", 0x07: b"\\a", 0x08: b"\\b"}
_REPR_TABLE = [_REPR.get(i, bytes((i,)) if 0x20 <= i <= 0x7E else b"\\x%02x" % i) for i in range(256)]


def quote(arg: bytes) -> bytes:
    """An argument as Valkey's sdscatrepr prints it in a MONITOR line."""
    t = _REPR_TABLE
    return b'"' + b"".join(t[b] for b in arg) + b'"'


def redact(cmd: Command, argv: list[bytes]) -> list[bytes]:
    """Valkey hides passwords from MONITOR and the slow log: every argument
    of AUTH, and the user name and password after HELLO's AUTH."""
    root = cmd.parent or cmd
    if root.bname == b"auth":
        return [argv[0]] + [REDACTED] * (len(argv) - 1)
    if root.bname == b"hello":
        out = list(argv)
        i = 2
        while i < len(out):
            if out[i].lower() == b"auth" and len(out) - 1 - i >= 2:
                out[i + 1] = out[i + 2] = REDACTED
                i += 3
            else:
                i += 1
        return out
    return argv


class LatencySeries:
    """One event's samples: at most one per second (the worst), the last
    LATENCY_LEN of them, and the all-time maximum."""

    __slots__ = ("samples", "max")

    def __init__(self) -> None:
        self.samples: deque[list[int]] = deque(maxlen=LATENCY_LEN)
        self.max = 0

    def add(self, ms: int) -> None:
        now = int(time.time())
        if ms > self.max:
            self.max = ms
        if self.samples and self.samples[-1][0] == now:
            if ms > self.samples[-1][1]:
                self.samples[-1][1] = ms
            return
        self.samples.append([now, ms])


Entry = tuple[int, int, int, list[bytes], bytes, bytes]


class CommandLog:
    """One of Valkey 9's command logs (slow, large-request, large-reply):
    newest first, as Valkey's list, each entry (id, time, the measure
    (microseconds or bytes), argv, peer, name), with ids of its own."""

    __slots__ = ("entries", "next_id", "max_len")

    def __init__(self) -> None:
        self.entries: deque[Entry] = deque()
        self.next_id = 0
        self.max_len = 128

    def __len__(self) -> int:
        return len(self.entries)

    def clear(self) -> None:
        self.entries.clear()

    def trim(self) -> None:
        while len(self.entries) > self.max_len:
            self.entries.pop()

    def add(self, c: Client, cmd: Command, argv: list[bytes], measure: int) -> None:
        argv = redact(cmd, argv)
        n = len(argv)
        shown: list[bytes] = []
        for i, a in enumerate(argv[:SLOWLOG_MAX_ARGC]):
            if n > SLOWLOG_MAX_ARGC and i == SLOWLOG_MAX_ARGC - 1:
                shown.append(b"... (%d more arguments)" % (n - SLOWLOG_MAX_ARGC + 1))
            elif len(a) > SLOWLOG_MAX_STRING:
                shown.append(a[:SLOWLOG_MAX_STRING] + b"... (%d more bytes)" % (len(a) - SLOWLOG_MAX_STRING))
            else:
                shown.append(a)
        self.entries.appendleft((self.next_id, int(time.time()), measure, shown, c.addr.encode(), c.name))
        self.next_id += 1
        self.trim()


# The types COMMANDLOG names, with the config of each one's length.
LOG_TYPES = {
    b"slow": "commandlog-slow-execution-max-len",
    b"large-request": "commandlog-large-request-max-len",
    b"large-reply": "commandlog-large-reply-max-len",
}


def request_size(argv: list[bytes]) -> int:
    """A request's bytes in RESP's multibulk form (Valkey's
    net_input_bytes_curr_cmd): the ``*N`` line, and each argument's ``$len``
    line, bytes and CRLF."""
    n = len(b"*%d\r\n" % len(argv))
    for a in argv:
        la = len(a)
        n += la + len(b"%d" % la) + 5
    return n


class Observer:
    def __init__(self, server: ObserveHost) -> None:
        self.server = server
        self.monitors: list[Client] = []
        # SLOWLOG is COMMANDLOG's slow type.
        self.logs = {t: CommandLog() for t in LOG_TYPES}
        self.slowlog = self.logs[b"slow"]
        self.latency: dict[str, LatencySeries] = {}
        self.slower_than = NEVER
        self.latency_us = NEVER
        # Bytes from which a request, or a reply, is logged (NEVER: off).
        self.large_request = NEVER
        self.large_reply = NEVER
        # A connection is running the commands of a read that may hold a
        # large request (``big_read``).
        self.reading_big = False
        # The running command changed a threshold: it is observed itself.
        self.changed = False
        self.refresh()

    def refresh(self) -> None:
        """Re-read the thresholds (at start and on CONFIG SET) and publish
        the smallest one where dispatch looks for it."""
        v = self.server.config.values
        slower = v.get("commandlog-execution-slower-than", 10000)
        for t, name in LOG_TYPES.items():
            log = self.logs[t]
            log.max_len = v.get(name, 128)
            log.trim()
        self.slower_than = slower if slower >= 0 and self.slowlog.max_len > 0 else NEVER
        req = v.get("commandlog-request-larger-than", 1048576)
        self.large_request = req if req >= 0 and self.logs[b"large-request"].max_len > 0 else NEVER
        rep = v.get("commandlog-reply-larger-than", 1048576)
        self.large_reply = rep if rep >= 0 and self.logs[b"large-reply"].max_len > 0 else NEVER
        self.server.large_reply = self.large_reply
        self.server.large_request = self.large_request
        lat = v.get("latency-monitor-threshold", 0)
        self.latency_us = lat * 1000 if lat > 0 else NEVER
        floor = 0 if self.monitors or self.reading_big or self.changed else NEVER
        self.server.observe_us = min(self.slower_than, self.latency_us, floor)

    def reconfigured(self) -> None:
        """CONFIG SET changed a threshold: the command that did it is
        measured against the new ones, as Valkey logs it after it ran."""
        self.changed = True
        self.refresh()

    def big_read(self, on: bool) -> None:
        """A connection holds enough bytes for a large request: every
        command it runs from them is observed, until it says it is done."""
        self.reading_big = on
        self.refresh()

    # -- MONITOR -----------------------------------------------------------------

    def add_monitor(self, c: Client) -> None:
        self.monitors.append(c)
        self.refresh()

    def drop(self, c: Client) -> None:
        if c in self.monitors:
            self.monitors.remove(c)
            self.refresh()

    def feed(self, c: Client, argv: list[bytes]) -> None:
        """One MONITOR line to every monitor."""
        now = time.time()
        secs = int(now)
        where = b"lua" if c.in_script else c.addr.encode()
        line = b"+%d.%06d [%d %s] %s\r\n" % (
            secs, int((now - secs) * 1_000_000), c.db.id, where, b" ".join(quote(a) for a in argv))
        for m in self.monitors:
            m.push(line)

    # -- the hook ------------------------------------------------------------------

    def record(self, c: Client, cmd: Command, argv: list[bytes], usec: int, reply_len: int) -> None:
        """A call reached a threshold: give it to whichever of the watchers
        asked for it, as Valkey's call() does after a command ran (latency,
        then the command logs, then MONITOR). Commands replayed from the
        AOF at start-up are not observed, as in Valkey."""
        if self.changed:
            self.changed = False
            self.refresh()
        if self.server.loading:
            return
        if usec >= self.latency_us:
            self._latency("fast-command" if cmd.fast else "command", usec // 1000)
        flags = cmd.flags
        if "skip_commandlog" not in flags:
            self._commandlog(c, cmd, argv, usec, reply_len)
        if self.monitors and not cmd.admin and "skip_monitor" not in flags and c is not self.server.blocking.rerunning:
            self.feed(c, redact(cmd, argv))

    def latency_event(self, event: str, usec: int) -> None:
        """A latency sample of work outside commands (Valkey's
        latencyAddSampleIfNeeded: ``expire-cycle``, ...), kept when it
        reaches latency-monitor-threshold."""
        if self.changed:
            self.changed = False
            self.refresh()
        if usec >= self.latency_us:
            self._latency(event, usec // 1000)

    def _latency(self, event: str, ms: int) -> None:
        series = self.latency.get(event)
        if series is None:
            series = self.latency[event] = LatencySeries()
        series.add(ms)

    def _commandlog(self, c: Client, cmd: Command, argv: list[bytes], usec: int, reply_len: int) -> None:
        """Valkey's commandlogPushCurrentCommand: the three logs, each with
        its own measure; an entry of a script's command names the caller."""
        if c.in_script:
            request = 0  # the script's client reads nothing from a socket
            run = self.server.scripting.run
            caller = getattr(run, "caller", None) if run is not None else None
            who = caller if caller is not None else c
        else:
            if c.in_exec and c.exec_argv is not None:
                request = request_size(c.exec_argv)
                reply_len += sum(map(len, c.exec_out))  # the transaction's reply so far
            elif self.large_request != NEVER:
                request = request_size(argv)
            else:
                request = 0
            who = c
        if usec >= self.slower_than:
            self.slowlog.add(who, cmd, argv, usec)
        if request >= self.large_request:
            self.logs[b"large-request"].add(who, cmd, argv, request)
        if reply_len >= self.large_reply:
            self.logs[b"large-reply"].add(who, cmd, argv, reply_len)

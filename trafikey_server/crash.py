"""The crash report: what the server writes to its log when it is killed by
a crash signal or told to crash (DEBUG SEGFAULT, ASSERT, PANIC), in the
sections of Valkey's bug report, and the stack trace SIGALRM asks for.

Valkey's report shows C stack frames; this one shows the Python frames of
every thread, under the same section headers, then INFO and CLIENT LIST as
Valkey's does. A signal sent from outside (``kill -ABRT``) is reported by a
Python handler, which runs even while DEBUG SLEEP holds the main thread: the
sleep is interrupted, the handler runs, the sleep goes on. A real fault
inside C code cannot reach Python code safely, so SIGSEGV, SIGBUS, SIGFPE and
SIGILL are left to ``faulthandler``, which writes the Python stacks to the
same log before the process dies of the signal. Once reported, the process
dies of the signal it was reported for (a core dump if enabled), or exits
with status 1 after an assertion or panic under ``use-exit-on-panic``.
"""

from __future__ import annotations

import faulthandler
import os
import signal
import sys
import threading
import time
import traceback
from types import FrameType
from typing import IO, TYPE_CHECKING, NoReturn

from . import __version__
from .commands.client import list_text
from .commands.info import render

if TYPE_CHECKING:
    from .server import Server


class Crash:
    def __init__(self, server: Server) -> None:
        self.server = server
        self.installed = False
        self.started = False
        self._fault_file: IO[str] | None = None
        # When the software watchdog's timer is due (monotonic), 0 when unarmed.
        self.watchdog_due = 0.0

    def install(self) -> None:
        """Handlers for the signals a crash sends (main thread only)."""
        path = self.server.log.path
        try:
            self._fault_file = open(path, "a", encoding="utf-8") if path else sys.stderr
            faulthandler.enable(self._fault_file, all_threads=True)
        except (OSError, ValueError, RuntimeError):
            pass  # no stream to write to: the process still dies of the signal
        signal.signal(signal.SIGABRT, self._on_fatal)
        signal.signal(signal.SIGALRM, self._on_alarm)
        self.installed = True

    # -- the report -------------------------------------------------------------

    def _raw(self, text: str) -> None:
        self.server.log.raw(3, text)

    def begin(self) -> bool:
        """The report's opening line, once per process: True the first time."""
        if self.started:
            return False
        self.started = True
        self._raw("\n\n=== TRAFIKEY-SERVER BUG REPORT START: Cut & paste starting from here ===\n")
        return True

    def stacks(self, frame: FrameType | None) -> None:
        """Every thread's Python stack, the interrupted frame's first."""
        self._raw("\n------ STACK TRACE ------\n")
        main = threading.main_thread().ident
        frames = sys._current_frames()
        for ident, f in sorted(frames.items(), key=lambda kv: kv[0] != main):
            name = next((t.name for t in threading.enumerate() if t.ident == ident), "?")
            if ident == main and frame is not None:
                f = frame
            self._raw(f"\n{ident} {name}\n" + "".join(traceback.format_stack(f)))
        self._raw("\n------ STACK TRACE DONE ------\n")

    def details(self) -> None:
        """INFO, the clients, the client being served: Valkey's printCrashReport."""
        server = self.server
        try:
            self._raw("\n------ INFO OUTPUT ------\n" + render(server, ["all"]).replace("\r\n", "\n"))
            self._raw("\n------ CLIENT LIST OUTPUT ------\n" + list_text(list(server.clients.values())))
        except Exception as e:  # a report must not crash the crash report
            self._raw(f"\n(the server's state could not be written: {e!r})\n")

    def end(self) -> None:
        self._raw("\n=== TRAFIKEY-SERVER BUG REPORT END. Make sure to include from START to END. ===\n\n")

    def die(self, sig: int) -> NoReturn:
        """Die of ``sig``, as Valkey's bugReportEnd does: the default action
        restored and the signal sent again."""
        faulthandler.disable()
        signal.signal(sig, signal.SIG_DFL)
        sys.stdout.flush()
        os.kill(os.getpid(), sig)
        time.sleep(1)
        os._exit(128 + sig)

    def crash_by_signal(self, sig: int, frame: FrameType | None) -> NoReturn:
        log = self.server.log
        self.begin()
        log.warning(f"trafikey-server {__version__} crashed by signal: {sig}")
        if self.server.config.values.get("crash-log-enabled", True):
            self.stacks(frame)
            self.details()
        self.end()
        self.die(sig)

    def failed(self, title: str, lines: list[str], frame: FrameType | None) -> NoReturn:
        """An assertion or a panic: its lines, the report, then abort (or exit 1
        under use-exit-on-panic)."""
        log = self.server.log
        first = self.begin()
        log.warning(title)
        for line in lines:
            log.warning(line)
        if self.server.config.values.get("crash-log-enabled", True):
            self.stacks(frame)
            if first:
                self.details()
        self.end()
        if self.server.config.values.get("use-exit-on-panic", False):
            sys.stdout.flush()
            os._exit(1)
        self.die(signal.SIGABRT)

    # -- signal handlers ----------------------------------------------------------

    def _on_fatal(self, sig: int, frame: FrameType | None) -> None:
        self.crash_by_signal(sig, frame)

    def _on_alarm(self, sig: int, frame: FrameType | None) -> None:
        """SIGALRM: the stacks, and the server goes on. Sent by the watchdog
        timer (the main thread held past watchdog-period) or from outside."""
        due = self.watchdog_due
        if due and time.monotonic() >= due - 0.001:
            self.watchdog_due = 0.0
            self._raw("\n--- WATCHDOG TIMER EXPIRED ---\n")
        else:
            self._raw("\nReceived SIGALRM\n")
        self.stacks(frame)
        self._raw("--------\n")

    def watchdog(self, period_ms: int) -> None:
        """Valkey's watchdogScheduleSignal, from each cron tick: SIGALRM in
        period_ms unless the next tick comes first (0: off)."""
        if period_ms > 0:  # as Valkey: at least two ticks
            period_ms = max(period_ms, 2000 // max(self.server.config.hz, 1))
        if period_ms <= 0:
            if self.watchdog_due:
                signal.setitimer(signal.ITIMER_REAL, 0)
                self.watchdog_due = 0.0
            return
        self.watchdog_due = time.monotonic() + period_ms / 1000
        signal.setitimer(signal.ITIMER_REAL, period_ms / 1000)

"""Loading the files at start-up, paced and reported as Valkey does it.

Valkey listens before it loads. While a file loads it stops now and then to
serve clients (processEventsWhileBlocked): every
``loading-process-events-interval-bytes`` of an RDB file, and every 1024
commands of an AOF. Meanwhile commands without the ``loading`` flag are
refused with ``-LOADING`` (the dispatcher), while INFO, CONFIG, DEBUG,
SHUTDOWN and the like answer; INFO persistence shows the progress.
``key-load-delay`` sleeps after each key or command, so that tests can
keep a load going. The loaders call ``key`` and ``command`` only while a
load at start-up is under way (``active``).
"""

from __future__ import annotations

import time
from collections.abc import Callable

from ...util.clock import debug_delay

# Commands of an AOF between two turns of serving clients (Valkey's aof.c).
AOF_EVENTS_EVERY = 1024


def _no_turn() -> None:
    pass


class Loading:
    """The progress of a load at start-up and the turns of serving clients it takes."""

    def __init__(self) -> None:
        # A turn of serving clients (the server's, set before a load).
        self.serve: Callable[[], None] = _no_turn
        self.active = False
        self.start_time = 0
        self.total = 0  # bytes of every file to load
        self.loaded = 0
        self.base = 0  # bytes of the files already loaded
        self._interval = 0
        self._next = 0
        self._delay = 0
        self._commands = 0

    def begin(self, total: int, interval: int, delay: int) -> None:
        self.active = True
        self.start_time = int(time.time())
        self.total = total
        self.loaded = self.base = self._commands = 0
        self._interval = interval
        self._next = interval
        self._delay = delay

    def end(self) -> None:
        self.active = False

    def file_done(self, size: int) -> None:
        """One of the files is loaded: the next one's positions count after it."""
        self.base += size
        self.loaded = self.base

    def key(self, pos: int) -> None:
        """After a key of an RDB file, ``pos`` bytes into it."""
        if self._delay:
            debug_delay(self._delay)
        loaded = self.loaded = self.base + pos
        if self._interval and loaded >= self._next:
            self._next = (loaded // self._interval + 1) * self._interval
            self.serve()

    def command(self, pos: int) -> None:
        """After a command of an AOF file, ``pos`` bytes into it."""
        if self._delay:
            debug_delay(self._delay)
        self.loaded = self.base + pos
        if self._commands % AOF_EVENTS_EVERY == 0:  # the first command's turn too, as in Valkey
            self.serve()
        self._commands += 1

    def info(self) -> list[tuple[str, object]]:
        """INFO persistence's lines while loading (after the AOF ones)."""
        if not self.active:
            return []
        perc = 100 * self.loaded / self.total if self.total else 0.0
        remaining = self.total - self.loaded if self.total else 1
        elapsed = int(time.time()) - self.start_time
        eta = 1 if elapsed == 0 else elapsed * remaining // (self.loaded + 1)
        return [("loading_start_time", self.start_time), ("loading_total_bytes", self.total),
                ("loading_rdb_used_mem", 0), ("loading_loaded_bytes", self.loaded),
                ("loading_loaded_perc", f"{perc:.2f}"), ("loading_eta_seconds", eta)]

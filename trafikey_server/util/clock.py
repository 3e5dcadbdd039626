"""The server's one clock.

Every time-dependent path (key expiry, TIME, the job core) asks this object,
so a test can freeze or move time for all of them at once. Unfrozen and with
no offset it is the wall clock; ``offset_ms`` moves a running clock, and
``frozen_ms`` stops it.
"""

from __future__ import annotations

import random
import time
from typing import Final

# A Final name is a C static when compiled: no module lookup per call.
_time_ns: Final = time.time_ns


class Clock:
    __slots__ = ("offset_ms", "frozen_ms", "lru")

    def __init__(self) -> None:
        self.offset_ms = 0
        self.frozen_ms: int | None = None
        # Valkey's LRU clock, in seconds: the time a key lookup records
        # (keyspace/access.py); the periodic tick keeps it current, as
        # serverCron keeps server.lruclock.
        self.lru = time.time_ns() // 1_000_000_000

    def ms(self) -> int:
        if self.frozen_ms is not None:
            return self.frozen_ms
        return _time_ns() // 1_000_000 + self.offset_ms

    def us(self) -> int:
        if self.frozen_ms is not None:
            return self.frozen_ms * 1000
        return time.time_ns() // 1000 + self.offset_ms * 1000

    @property
    def controlled(self) -> bool:
        return self.frozen_ms is not None or self.offset_ms != 0

    def freeze(self, at_ms: int | None = None) -> None:
        self.frozen_ms = self.ms() if at_ms is None else at_ms

    def advance(self, delta_ms: int) -> None:
        if self.frozen_ms is not None:
            self.frozen_ms += delta_ms
        else:
            self.offset_ms += delta_ms

    def set(self, at_ms: int) -> None:
        if self.frozen_ms is not None:
            self.frozen_ms = at_ms
        else:
            self.offset_ms = at_ms - time.time_ns() // 1_000_000

    def release(self) -> None:
        self.frozen_ms = None
        self.offset_ms = 0


def debug_delay(usec: int) -> None:
    """Valkey's debugDelay, for rdb-key-save-delay and key-load-delay: sleep
    usec microseconds; a negative value sleeps one microsecond once in
    -usec calls (a shorter sleep than the system's own smallest)."""
    if usec < 0:
        usec = 1 if random.randrange(-usec) == 0 else 0
    if usec:
        time.sleep(usec / 1_000_000)

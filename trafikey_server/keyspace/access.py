"""What OBJECT IDLETIME, OBJECT FREQ and eviction know of a key's use.

Valkey keeps 24 bits per object: under an LRU policy (and noeviction) the
LRU clock in seconds when the key was last looked up; under an LFU policy a
16-bit time in minutes and an 8-bit logarithmic counter (evict.c). Here each
key's ``KeyEntry`` (keyspace/db.py) keeps the same figure beside the value,
written on every lookup of a live key as the seconds of ``Clock.lru`` or,
while an LFU policy is selected, as ``minutes << 8 | counter`` by ``Lfu.hit``.
"""

from __future__ import annotations

from typing import Final

from ..util.clock import Clock
from ..util.rand import rng

# Valkey's LFU_INIT_VAL: a new key's counter, so that it is not evicted at once.
LFU_INIT_VAL: Final = 5
# Valkey's LRU_CLOCK_MAX: the LRU clock has 24 bits.
LRU_CLOCK_MAX: Final = (1 << 24) - 1


class Lfu:
    """The LFU counter's rules (evict.c's LFULogIncr and LFUDecrAndReturn),
    with the lfu-log-factor and lfu-decay-time they read."""

    __slots__ = ("clock", "log_factor", "decay_time")

    def __init__(self, clock: Clock, log_factor: int, decay_time: int) -> None:
        self.clock = clock
        self.log_factor = log_factor
        self.decay_time = decay_time

    def minutes(self) -> int:
        """LFUGetTimeInMinutes, from the time now (Valkey's cached unixtime
        is refreshed per command; the LRU clock only per tick)."""
        return (self.clock.ms() // 60000) & 65535

    def fresh(self) -> int:
        """A new object's field: now, and the initial counter."""
        return self.minutes() << 8 | LFU_INIT_VAL

    def counter(self, field: int | None) -> int:
        """LFUDecrAndReturn: the counter less one per decay period elapsed
        since its time (nothing is stored)."""
        if field is None:
            return LFU_INIT_VAL
        ldt, counter = field >> 8, field & 255
        if self.decay_time:
            now = self.minutes()
            elapsed = now - ldt if now >= ldt else 65535 - ldt + now
            periods = elapsed // self.decay_time
            if periods:
                counter = 0 if periods > counter else counter - periods
        return counter

    def hit(self, field: int) -> int:
        """updateLFU: decay, then a logarithmic increment; the new field."""
        counter = self.counter(field)
        if counter < 255:
            base = counter - LFU_INIT_VAL
            if base < 0:
                base = 0
            if rng.random() < 1.0 / (base * self.log_factor + 1):
                counter += 1
        return self.minutes() << 8 | counter


def idle_ms(clock: Clock, field: int | None) -> int:
    """estimateObjectIdleTime under LRU: seconds of the LRU clock since the
    key's, in ms (the clock wraps at 24 bits as Valkey's does)."""
    now = clock.lru & LRU_CLOCK_MAX
    if field is None:
        return 0
    field &= LRU_CLOCK_MAX
    return (now - field if now >= field else now + LRU_CLOCK_MAX - field) * 1000

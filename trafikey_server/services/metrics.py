"""INFO's instantaneous metrics and event-loop statistics, as Valkey keeps them.

Valkey samples its counters every 100 ms into rings of 16 (ops per second,
network bytes per second, event-loop cycles per second and the mean cycle
duration) and reports each ring's mean. It also times every cycle of its
event loop. The loop here is uvloop's, which offers no hook per iteration,
so a cycle is a turn in which the server worked: it opens with the first
read (or output) of the turn and closes when the turn's writes are done
(``network.connection.flush_writes``); each tick of the cron is a cycle of
its own. Opening a turn costs one clock read per turn, not per request.
"""

from __future__ import annotations

import time

SAMPLES = 16
# Which ring each metric is (Valkey's STATS_METRIC_*).
COMMAND, NET_INPUT, NET_OUTPUT, EL_CYCLE, EL_DURATION = range(5)


class Ring:
    """One metric's last samples (trackInstantaneousMetric)."""

    __slots__ = ("samples", "idx", "base", "value")

    def __init__(self) -> None:
        self.samples = [0] * SAMPLES
        self.idx = 0
        self.base = 0
        self.value = 0

    def track(self, value: int, base: int, factor: int) -> None:
        if self.base > 0:
            span = base - self.base
            self.samples[self.idx] = (value - self.value) * factor // span if span > 0 else 0
            self.idx = (self.idx + 1) % SAMPLES
        self.base = base
        self.value = value

    def mean(self) -> int:
        return sum(self.samples) // SAMPLES


class Metrics:
    """The event loop's cycles and durations (µs), and the sample rings."""

    __slots__ = ("turn_open", "turn_start", "turn_cmds", "cycles", "duration_sum", "duration_max",
                 "cron_sum", "aof_sum", "cmds_per_cycle_max", "rings")

    def __init__(self) -> None:
        self.turn_open = False
        self.turn_start = 0
        self.turn_cmds = 0
        self.reset()

    def reset(self) -> None:
        """CONFIG RESETSTAT."""
        self.cycles = 0
        self.duration_sum = 0
        self.duration_max = 0
        self.cron_sum = 0
        self.aof_sum = 0
        self.cmds_per_cycle_max = 0
        self.rings = [Ring() for _ in range(5)]

    def open_turn(self) -> None:
        self.turn_open = True
        self.turn_start = time.perf_counter_ns()

    def close_turn(self) -> None:
        self.turn_open = False
        self._cycle((time.perf_counter_ns() - self.turn_start) // 1000)
        if self.turn_cmds > self.cmds_per_cycle_max:
            self.cmds_per_cycle_max = self.turn_cmds
        self.turn_cmds = 0

    def cron(self, usec: int) -> None:
        """A tick of the cron: a cycle, and its time in the cron's sum."""
        self.cron_sum += usec
        self._cycle(usec)

    def _cycle(self, usec: int) -> None:
        self.cycles += 1
        self.duration_sum += usec
        if usec > self.duration_max:
            self.duration_max = usec

    def sample(self, commands: int, net_in: int, net_out: int) -> None:
        """Every 100 ms (the cron): each ring takes its rate since the last sample."""
        now = time.monotonic_ns() // 1000
        r = self.rings
        r[COMMAND].track(commands, now, 1000000)
        r[NET_INPUT].track(net_in, now, 1000000)
        r[NET_OUTPUT].track(net_out, now, 1000000)
        r[EL_CYCLE].track(self.cycles, now, 1000000)
        r[EL_DURATION].track(self.duration_sum, self.cycles, 1)

    def instantaneous(self, metric: int) -> int:
        return self.rings[metric].mean()

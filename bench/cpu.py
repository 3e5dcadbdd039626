"""CPU accounting: what a server spent, and how busy each core was, over a window.

Why per-process ticks and not wall time: on a two-core machine the server and
its load generator each own a core, so the server's own utime+stime per
request or job (``/proc/PID/stat``) is the cost that does not depend on how
fast the generator is. The core's busy fraction (``/proc/stat``) tells
whether the generator's core was the bottleneck: when it is above
``SATURATED`` the throughput figure of that row measures the generator as
much as the server, and the report flags it.

Resolution: utime and stime count clock ticks (``SC_CLK_TCK``, usually 100 a
second), so a window should hold at least a second of server CPU for a
figure good to about 1%; the harness sizes its full-mode runs for that.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from pathlib import Path

from .servers import LOAD_CORE, PINNED, SERVER_CORE

TICKS = os.sysconf("SC_CLK_TCK")
SATURATED = 0.90  # busy fraction above which a core counts as saturated


def proc_cpu_seconds(pid: int) -> float:
    """utime + stime of a whole process (all its threads), in seconds."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS  # fields 14 and 15 of stat(5)


def core_ticks(core: int) -> tuple[int, int]:
    """(busy, total) jiffies of one core since boot, from /proc/stat."""
    for line in Path("/proc/stat").read_text().splitlines():
        if line.startswith(f"cpu{core} "):
            v = [int(x) for x in line.split()[1:]]
            idle = v[3] + (v[4] if len(v) > 4 else 0)  # idle + iowait
            total = sum(v[:8])  # guest time is already inside user
            return total - idle, total
    return 0, 0


@dataclass
class Window:
    """One measured run: server CPU seconds, wall seconds, and core busy fractions."""

    pids: dict[str, int]
    wall: float = 0.0
    cpu: dict[str, float] = field(default_factory=dict)  # label -> CPU seconds in the window
    busy: dict[int, float] = field(default_factory=dict)  # core -> busy fraction in the window
    _t0: float = 0.0
    _cpu0: dict[str, float] = field(default_factory=dict)
    _core0: dict[int, tuple[int, int]] = field(default_factory=dict)

    def start(self) -> Window:
        self._core0 = {c: core_ticks(c) for c in (SERVER_CORE, LOAD_CORE)}
        self._cpu0 = {k: proc_cpu_seconds(p) for k, p in self.pids.items()}
        self._t0 = time.perf_counter()
        return self

    def stop(self) -> Window:
        self.wall = time.perf_counter() - self._t0
        self.cpu = {k: proc_cpu_seconds(p) - self._cpu0[k] for k, p in self.pids.items()}
        for c, (b0, t0) in self._core0.items():
            b1, t1 = core_ticks(c)
            self.busy[c] = (b1 - b0) / (t1 - t0) if t1 > t0 else 0.0
        return self


def generator_busy(window: Window, generator_cpu_s: float) -> float:
    """How busy the load generator's core was: the core's own busy fraction when
    the generator is pinned to it, else the generator's CPU per wall second."""
    if PINNED:
        return window.busy.get(LOAD_CORE, 0.0)
    return generator_cpu_s / window.wall if window.wall > 0 else 0.0

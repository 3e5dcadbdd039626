"""The process's memory as the kernel counts it: INFO memory, MEMORY STATS,
MEMORY DOCTOR, maxmemory and the RDB ``used-mem`` field all read it here."""

from __future__ import annotations

import os
import resource

PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


def rss() -> int:
    """Resident set size now, in bytes."""
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * PAGE
    except OSError:  # pragma: no cover - not Linux
        return peak()


def peak() -> int:
    """The largest resident set size so far, in bytes."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


# What the process held once the package was imported: INFO's overhead and
# MEMORY STATS's startup.allocated.
STARTUP_RSS = rss()

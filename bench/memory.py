"""Section 5: resident bytes per waiting job.

Why RSS: it is what a machine has to provision, for a C server and a Python
one alike. trafikey-server's ``INFO used_memory`` is its RSS (Python has no
allocator-level figure to give), so RSS is the one number both servers can
be compared on. Valkey's ``used_memory`` (what its allocator holds for the
data) is reported beside it, as a floor.

The probe is taken on a freshly started server, after its set-up (brand,
scripts) and just before the fill, and again just after the fill:
``(RSS after - RSS before) / jobs``. One fill, so one sample: filling a
million jobs per round would cost more than the figure's noise.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from .servers import Server


def rss_bytes(pid: int) -> int:
    """VmRSS of a process, from /proc/PID/status."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise RuntimeError(f"no VmRSS for pid {pid}")


def used_memory(server: Server) -> int | None:
    """INFO used_memory, for a server that has a figure of its own (Valkey); None for trafikey (it is RSS)."""
    if server.kind != "valkey":
        return None
    return int(server.info("memory")["used_memory"])


@dataclass
class Probe:
    server: Server
    rss0: int = 0
    used0: int | None = None

    def before(self) -> Probe:
        self.rss0 = rss_bytes(self.server.pid)
        self.used0 = used_memory(self.server)
        return self

    def after(self, jobs: int) -> dict[str, float]:
        rss1 = rss_bytes(self.server.pid)
        used1 = used_memory(self.server)
        out = {"rss_before": float(self.rss0), "rss_after": float(rss1), "jobs": float(jobs),
               "rss_per_job": (rss1 - self.rss0) / jobs}
        if used1 is not None and self.used0 is not None:
            out["used_memory_per_job"] = (used1 - self.used0) / jobs
        return out

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


STREAM_KEY = b"bench:stream"
# XADD <key> * field <10-byte value>: the small entry the stream row measures.
STREAM_VALUE_LEN = 10


def fill_stream(server: Server, entries: int, *, batch: int = 1000) -> None:
    """XADD ``entries`` entries with ``*`` IDs and one field of a 10-byte
    value, pipelined on one connection."""
    conn = server.conn
    left = entries
    i = 0
    while left:
        b = min(batch, left)
        parts = []
        for _ in range(b):
            value = b"%010d" % i
            i += 1
            parts.append(b"*5\r\n$4\r\nXADD\r\n$%d\r\n%s\r\n$1\r\n*\r\n$5\r\nfield\r\n$%d\r\n%s\r\n"
                         % (len(STREAM_KEY), STREAM_KEY, len(value), value))
        conn.send(b"".join(parts))
        for _ in range(b):
            reply = conn.read()
            if not isinstance(reply, bytes):
                raise RuntimeError(f"XADD failed on {server.label}: {reply!r}")
        left -= b


def stream_row(server: Server, entries: int) -> dict[str, float]:
    """Resident bytes per stream entry: RSS before and after ``fill_stream``
    on a fresh server, over the entries (and Valkey's used_memory beside it)."""
    probe = Probe(server).before()
    fill_stream(server, entries)
    if int(server.execute("XLEN", STREAM_KEY)) != entries:
        raise RuntimeError(f"{server.label} holds fewer stream entries than were added")
    out = probe.after(entries)
    out["entries"] = out.pop("jobs")
    out["rss_per_entry"] = out.pop("rss_per_job")
    if "used_memory_per_job" in out:
        out["used_memory_per_entry"] = out.pop("used_memory_per_job")
    return out

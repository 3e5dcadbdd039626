"""The process's oom_score_adj, set as Valkey's setOOMScoreAdj sets it.

With ``oom-score-adj`` on, the kernel's OOM killer is told how expendable
this process is, by class (``oom-score-adj-values``: primary, replica,
background child): added to the score the process started with
(``yes``/``relative``) or as is (``absolute``), within -1000..1000. Turned
off, the starting score comes back. Linux only: elsewhere there is nothing
to set and nothing fails.
"""

from __future__ import annotations

import os

PRIMARY, REPLICA, CHILD = 0, 1, 2
PATH = "/proc/self/oom_score_adj"


class OomScore:
    """The score this process started with, once it has been changed."""

    def __init__(self) -> None:
        self.base: int | None = None  # None: never changed here

    def apply(self, mode: str, values: str, process_class: int, log_warning: object) -> bool:
        """Write the score for ``process_class``; False (and a log line)
        when /proc refuses it."""
        warn = log_warning if callable(log_warning) else None
        if not os.path.exists(PATH):
            return True
        if mode != "no":
            if self.base is None:
                try:
                    with open(PATH) as f:
                        self.base = int(f.read().strip() or 0)
                except (OSError, ValueError) as e:
                    if warn is not None:
                        warn(f"Unable to read oom_score_adj: {getattr(e, 'strerror', None) or e}")
                    return False
            val = int(values.split()[process_class])
            if mode != "absolute":
                val += self.base
            val = max(-1000, min(1000, val))
        elif self.base is not None:
            val, self.base = self.base, None
        else:
            return True
        try:
            fd = os.open(PATH, os.O_WRONLY)
        except OSError as e:
            if warn is not None:
                warn(f"Unable to write oom_score_adj: {e.strerror}")
            return False
        try:
            os.write(fd, b"%d\n" % val)
        except OSError as e:
            if warn is not None:
                warn(f"Unable to write oom_score_adj: {e.strerror}")
            return False
        finally:
            os.close(fd)
        return True

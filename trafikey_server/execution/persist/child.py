"""The forked children of persistence (BGSAVE, the AOF rewrite with the log
on or off): collected without waiting, or stopped and collected."""

from __future__ import annotations

import os
import signal


def reap(pid: int) -> int | None:
    """The exit code of a child that has ended (one that is already gone
    counts as failed), or None while it runs."""
    try:
        done, status = os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        return 1
    return None if done == 0 else os.waitstatus_to_exitcode(status)


def kill(pid: int) -> None:
    """Stop a child and collect it."""
    try:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
    except OSError:
        pass

"""The forked children of persistence (BGSAVE, the AOF rewrite with the log
on or off): forked in one way, collected without waiting, or stopped and
collected."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol

from ...util.oom import CHILD

if TYPE_CHECKING:
    from ...services.config import Config
    from ...util.oom import OomScore


class ForkHost(Protocol):
    """What a fork records on the server (server.py), for INFO stats, and
    the OOM score a child takes."""

    config: Config
    oom: OomScore
    total_forks: int
    latest_fork_usec: int


# The parent's handlers a child must not run: the shutdown's (server.py),
# the crash report's (crash.py), and BGSAVE CANCEL's kill.
_RESET: tuple[signal.Signals, ...] = (signal.SIGTERM, signal.SIGINT, signal.SIGUSR1, signal.SIGABRT, signal.SIGALRM)


def fork(server: ForkHost, work: Callable[[], object], what: str) -> int:
    """Fork a child that runs ``work`` and leaves, its exit code saying how
    (0 done, 1 failed, with the reason on stderr as ``what failed: ...``):
    it never goes back into the event loop, and the parent's signal handlers
    and the loop's wakeup fd are not its own. The parent counts the fork and
    what it took (INFO's total_forks, latest_fork_usec). OSError when the
    fork itself fails."""
    t0 = time.perf_counter_ns()
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            for sig in _RESET:
                signal.signal(sig, signal.SIG_DFL)
            try:
                signal.set_wakeup_fd(-1)
            except ValueError:
                pass
            v = server.config.values
            server.oom.apply(v["oom-score-adj"], v["oom-score-adj-values"], CHILD, None)  # a child goes first
            work()
            code = 0
        except BaseException as e:  # the child reports through its exit code
            try:
                os.write(2, f"{what} failed: {e}\n".encode())
            except OSError:
                pass
        finally:
            os._exit(code)
    server.total_forks += 1
    server.latest_fork_usec = (time.perf_counter_ns() - t0) // 1000
    return pid


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

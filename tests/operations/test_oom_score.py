"""oom-score-adj: the process's /proc/<pid>/oom_score_adj set by class as
valkey-server 9.1.2 sets it (relative to the score it started with, or
absolute; restored when turned off; a background child's class for a
BGSAVE child). Linux only."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest
from helpers.resp_wire import Wire
from helpers.servers import own_pair

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc/<pid>/oom_score_adj is Linux's")


def score(pid: int) -> int:
    return int(Path(f"/proc/{pid}/oom_score_adj").read_text())


def children(pid: int) -> list[int]:
    return [int(c) for t in Path(f"/proc/{pid}/task").iterdir() for c in (t / "children").read_text().split()]


def test_scores_by_class() -> None:
    with own_pair() as (v, t):
        seen = []
        for p in (v, t):
            pid = p.proc.pid
            Path(f"/proc/{pid}/oom_score_adj").write_text("3\n")  # a score the process "started" with
            w = Wire(p.port)
            steps = []
            for name, value in (("oom-score-adj-values", "10 20 30"), ("oom-score-adj", "yes"),
                                ("oom-score-adj-values", "15 20 30"), ("oom-score-adj", "absolute"),
                                ("oom-score-adj", "relative"), ("oom-score-adj", "no"),
                                ("oom-score-adj-values", "100 100 100")):
                steps.append((w.call("CONFIG", "SET", name, value), score(pid)))
            w.call("CONFIG", "SET", "oom-score-adj-values", "10 20 30")
            w.call("CONFIG", "SET", "oom-score-adj", "yes")
            w.call("SET", "k", "v")
            w.call("CONFIG", "SET", "rdb-key-save-delay", "1000000")
            w.call("BGSAVE")
            deadline = time.monotonic() + 10
            while not children(pid) and time.monotonic() < deadline:
                time.sleep(0.02)
            (child,) = children(pid)
            deadline = time.monotonic() + 10
            while score(child) == score(pid) and time.monotonic() < deadline:
                time.sleep(0.02)
            steps.append((b"child", score(child)))
            w.call("BGSAVE", "CANCEL")
            w.call("CONFIG", "SET", "oom-score-adj", "no")
            steps.append((b"off", score(pid)))
            w.close()
            seen.append(steps)
        assert seen[0] == seen[1]
        assert seen[0][1][1] == 13 and seen[0][5][1] == 3 and seen[0][-2] == (b"child", 33)

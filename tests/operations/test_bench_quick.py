"""The benchmark harness works end to end: ``python3 -m bench --quick``.

Why a test: the harness starts servers, pins them, drives four executors and
writes a report; a change to the server or the connector that breaks any of
that should fail CI, not the next person who runs the benchmark. Quick mode
uses tiny counts, so nothing here asserts a timing or a ratio -- only that
every section ran, produced figures, and left no process behind.

matplotlib and fakeredis (the ``bench`` extra) are optional: without them
the report says the PNG or executor (d) was skipped, and the test still runs.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_bench_quick_runs_every_section(tmp_path: Path) -> None:
    out = tmp_path / "out"
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    p = subprocess.run([sys.executable, "-m", "bench", "--quick", "--out", str(out)], cwd=ROOT, env=env,
                       capture_output=True, text=True, timeout=540)
    assert p.returncode == 0, f"stdout:\n{p.stdout[-4000:]}\nstderr:\n{p.stderr[-4000:]}"

    text = (out / "results.md").read_text()
    for heading in ("## Commands", "## Job lifecycle", "### Shape 1", "### Shape 2", "## Growth",
                    "## Memory", "## Blocking", "## Pub/sub", "## Streams", "## Named snapshots",
                    "## Targets"):
        assert heading in text, heading
    for row in ("| PING | 1 |", "| ZRANGE | 16 |", "| LRANGE_100 | 1 |", "| SMEMBERS | 16 |",
                "(a) native verbs", "(b) twin scripts, trafikey-server",
                "(c) twin scripts, valkey-server", "| 1,000 | (a) native", "| 10,000 | (c) twin",
                "trafikey-server (native) |", "Stream entries:", "| one waiter |", "| fan-out 20 |",
                "| BLPOP one waiter |", "| 100 |", "| XADD | 1 |", "| XADD_MAXLEN | 16 |", "| XRANGE | 1 |",
                "| SETBIT | 1 |", "| BITCOUNT | 16 |", "| PFADD | 1 |", "| PFCOUNT | 16 |", "| GEOADD | 1 |",
                "| PUBLISH | 16 |", "| TRAFIKEY.SNAPSHOT SAVE |", "| TRAFIKEY.SNAPSHOT RESTORE |", "| DEBUG RELOAD |"):
        assert row in text, row
    streams = text.split("## Streams", 1)[1].split("## Targets", 1)[0]
    for row in ("| 1 |", "| 10 |"):
        assert row in streams, row
    # every target was judged, whatever the verdict
    assert "not measured" not in text
    # (25 command rows at P1 and P16, 4 lifecycle, 1 growth, a CLAIM p99 per backlog size (2),
    # 2 memory: jobs and stream entries)
    assert text.count("**MET**") + text.count("**MISSED**") == 59

    data = json.loads((out / "results.json").read_text())
    assert set(data["samples"]) == {"commands", "lifecycle", "growth", "memory", "memory_stream", "blocking", "pubsub",
                                     "stream_cycle", "snapshot"}
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        assert "matplotlib is not installed" in text
    else:
        assert (out / "ratios.png").stat().st_size > 0

    # no server, worker or redis-benchmark outlived the run
    left = [pid for pid in data["meta"]["pids"] if Path(f"/proc/{pid}").exists()
            and "Z" not in Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]]
    assert not left, f"processes left behind: {left}"

"""The soak's short variant: ``python3 -m bench.soak --seconds 40``.

Why in the suite: the full soak (``python3 -m bench.soak --minutes 10``,
figures in docs/security.md) is too long for every run, but a leak that
grows with every command or every job shows within a minute once the
keyspace has reached its bound, and the job accounting holds at any length.
The short variant uses a smaller keyspace (``--keys 1000``) so warm-up ends
in the first half, and a tighter bound (2 MiB over the last 20 s; the
measured growth is about 0.35 MiB). The command itself decides the verdict (exit status);
this test also reads its JSON, so a failure says which check broke.

The verdict is checked not to be vacuous: the memory criterion refuses a
series that keeps growing and accepts one that is flat after warm-up.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from bench.soak_memory import memory_verdict  # noqa: E402

MIB = 2**20


def test_memory_verdict_refuses_growth_and_accepts_a_plateau() -> None:
    ts = [float(t) for t in range(0, 62, 2)]
    growing = [(t, 40 * MIB + int(t * 0.2 * MIB)) for t in ts]  # 12 MiB/min, all along
    plateau = [(t, 30 * MIB + int(min(t, 20) * MIB) + (t % 4 == 0) * 100_000) for t in ts]
    figures, ok = memory_verdict(growing, 4.0)
    assert not ok and figures["second_half_projected_growth_mib"] == pytest.approx(6.0, abs=0.01)
    figures, ok = memory_verdict(plateau, 4.0)
    assert ok and figures["second_half_projected_growth_mib"] < 0.1
    assert not memory_verdict(growing[:2], 4.0)[1]  # too few samples is no verdict


@pytest.mark.soak
@pytest.mark.slow
@pytest.mark.timeout(300)
def test_soak_short_variant(tmp_path: Path) -> None:
    out = tmp_path / "soak.json"
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    p = subprocess.run(
        [sys.executable, "-m", "bench.soak", "--seconds", "40", "--sample-every", "2", "--keys", "1000",
         "--max-growth-mib", "2", "--json", str(out)],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=280,
    )
    result = json.loads(out.read_text())
    jobs, memory = result["jobs"], result["memory"]
    assert result["errors"] == [] and result["threads_stuck"] == 0, p.stdout[-3000:]
    assert jobs["enqueued"] > 1000 and jobs["completed"] > 0
    for k in ("duplicate_ids", "completed_twice", "completed_and_dead", "lost", "unknown", "rows_left"):
        assert jobs[k] == 0, (k, jobs)
    assert jobs["sets_left"] == [0, 0, 0, 0]
    assert jobs["completed"] + jobs["dead"] == jobs["enqueued"]
    assert jobs["fails"].get("scheduled") and jobs["fails"].get("pending") and jobs["swept"]
    assert memory["samples"] >= 10
    assert result["memory_ok"], memory
    assert p.returncode == 0, f"stdout:\n{p.stdout[-3000:]}\nstderr:\n{p.stderr[-3000:]}"

"""The table of Valkey's own suite in native mode (docs/compatibility.md):
written by tools/gen_native_table.py from a run, it must add up, and every
unit short of Valkey's count must be listed with its failing tests."""

from __future__ import annotations

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))

from gen_native_table import BEGIN, DOC, END, kept, reason, table, units  # noqa: E402

ROW = re.compile(r"^\| (\S+) \| (\d+)( \(aborted\))? \| (\d+) \|$")


def test_table_of_a_run() -> None:
    baseline = units("unit/a passed=5 failed=0 skipped=0 aborted=no\nunit/b passed=3 failed=1 skipped=0 aborted=no\n")
    here = units("# a run\nunit/a passed=4 failed=1 skipped=0 aborted=yes\nunit/b passed=3 failed=0 skipped=0 "
                 "aborted=no\n")
    text = table(baseline, here, {"unit/a": ["WAIT should acknowledge 1 additional copy", "something new"]})
    assert "| unit/a | 4 (aborted) | 5 |" in text and "| unit/b | 3 | 3 |" in text
    assert "| **total** | **7** | **8** |" in text
    assert ("- unit/a (4 of 5): WAIT should acknowledge 1 additional copy — replication is not served; "
            "something new — not analysed yet") in text
    assert "unit/b (" not in text


def test_units_not_run_again_keep_their_rows() -> None:
    """The table read back gives the counts and failing tests it was made of."""
    baseline = units("unit/a passed=5 failed=0 skipped=0 aborted=no\nunit/b passed=3 failed=1 skipped=0 aborted=no\n")
    here = units("unit/a passed=4 failed=1 skipped=0 aborted=yes\nunit/b passed=2 failed=1 skipped=0 aborted=no\n")
    failed = {"unit/a": ["WAIT should acknowledge 1 additional copy", "something new"], "unit/b": ["x: y"]}
    assert kept(table(baseline, here, failed)) == (here, failed)


def test_reasons_by_name() -> None:
    assert reason("corrupt payload: fuzzer findings - hash ziplist") .startswith("needs sanitize-dump-payload")
    assert reason("a test nobody looked at") == "not analysed yet"


def test_the_page_adds_up() -> None:
    doc = DOC.read_text()
    block = doc[doc.index(BEGIN) + len(BEGIN):doc.index(END)]
    rows = [ROW.match(line) for line in block.splitlines()]
    found = [m for m in rows if m]
    assert found, "the native table is missing: run tools/gen_native_table.py"
    ours = sum(int(m.group(2)) for m in found)
    theirs = sum(int(m.group(4)) for m in found)
    assert f"| **total** | **{ours}** | **{theirs}** |" in block
    short = {m.group(1) for m in found if int(m.group(2)) < int(m.group(4))}
    listed = set(re.findall(r"^- (\S+) \(\d+ of \d+\):", block, re.M))
    assert listed == short

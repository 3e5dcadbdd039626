"""The registration table is the single source: everything derives from it."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))

from gen_readme_table import updated  # noqa: E402

from trafikey_server.registry import Table, default_table, load_rows  # noqa: E402


def test_readme_lists_the_table() -> None:
    readme = (ROOT / "README.md").read_text()
    assert readme == updated(readme, Table(load_rows())), "run: python tools/gen_readme_table.py"


def test_every_row_has_a_handler() -> None:
    missing = [c.name for c in default_table().everything() if not c.implemented and not c.subcommands]
    assert missing == []


def test_a_table_without_a_row_does_not_serve_it() -> None:
    table = default_table().without("ping")
    assert table.lookup(b"ping") is None
    assert table.lookup(b"echo") is not None

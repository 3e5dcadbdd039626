"""The registration table is the single source: everything derives from it."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))

from gen_readme_table import updated  # noqa: E402

from trafikey_server.protocol.table import Table, default_table, load_rows  # noqa: E402


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


def test_compatibility_lists_every_unserved_valkey_command(valkey_server) -> None:  # type: ignore[no-untyped-def]
    """docs/compatibility.md names exactly the rows of Valkey's COMMAND LIST
    the table does not serve, asked of a running Valkey 9.1.2."""
    from gen_unserved import DOC, valkey_rows
    from gen_unserved import updated as with_unserved

    rows = valkey_rows(valkey_server.port)
    assert len(rows) == 399  # Valkey 9.1.2's table, commands and subcommands
    page = DOC.read_text()
    assert page == with_unserved(page, rows, Table(load_rows())), "run: python tools/gen_unserved.py"

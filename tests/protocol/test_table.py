"""The registration table is the single source: everything derives from it."""

from __future__ import annotations

import ast
import importlib
import json
import pkgutil
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))

from capture_command_table import write_rows  # noqa: E402
from gen_readme_table import updated  # noqa: E402

import trafikey_server.commands  # noqa: E402
from trafikey_server.protocol.table import (  # noqa: E402
    ORDER_FILE,
    ROWS_DIR,
    Table,
    default_table,
    load_rows,
    row_file,
)


def test_readme_lists_the_table() -> None:
    readme = (ROOT / "README.md").read_text()
    assert readme == updated(readme, Table(load_rows())), "run: python tools/gen_readme_table.py"


def test_every_row_has_a_handler() -> None:
    missing = [c.name for c in default_table().everything() if not c.implemented and not c.subcommands]
    assert missing == []


def test_every_handler_a_row_names_exists() -> None:
    """A container's handler never runs (dispatch always picks a subcommand),
    so one naming nothing would go unnoticed: any handler a row names must be
    a function, renamed or moved modules included."""
    dangling = [(c.name, c.row["handler"]) for c in default_table().everything()
                if c.row.get("handler") and not c.implemented]
    assert dangling == []


# Public functions of commands/ shaped like a handler, (c, argv), that are
# helpers other code calls, not commands.
NOT_HANDLERS = {
    "trafikey_server.commands.client.info_line",  # the client line of an ACL LOG entry
    "trafikey_server.commands.stream.xinfo_stream_of",  # the stream the XINFO subcommands read
}


def test_every_handler_function_is_named_by_a_row() -> None:
    """A public (c, argv) function in commands/ that no row names is a
    handler left behind (a row pointed elsewhere, a command never listed) or
    a helper to list above."""
    named = {c.handler for c in default_table().everything() if c.implemented}
    pkg = trafikey_server.commands
    unnamed = []
    for info in pkgutil.walk_packages(pkg.__path__, pkg.__name__ + "."):
        mod = importlib.import_module(info.name)
        # Read from the source: a compiled module's functions are not Python
        # functions, and inspect would not see them.
        source = Path(pkg.__path__[0]).joinpath(*info.name.split(".")[2:])
        path = source / "__init__.py" if info.ispkg else source.with_suffix(".py")
        for node in ast.parse(path.read_text()).body:
            if (isinstance(node, ast.FunctionDef) and not node.name.startswith("_")
                    and [a.arg for a in node.args.args] == ["c", "argv"]
                    and getattr(mod, node.name) not in named):
                unnamed.append(f"{mod.__name__}.{node.name}")
    assert sorted(unnamed) == sorted(NOT_HANDLERS)


def _reached(rows: list[dict]) -> list[str]:
    return [n for r in rows for n in (r["name"], *(s["name"] for s in r.get("subcommands", [])))]


def test_each_row_file_holds_its_command_and_is_in_the_table() -> None:
    """rows/ holds one file per command and subcommand, named after it
    (``client|setname`` in ``client-setname.json``), and nothing the table
    does not reach: a file left out of order.txt or of its container's list
    would otherwise be silently not served."""
    names = _reached(load_rows())
    assert len(names) == len(set(names))
    files = {p.name: json.loads(p.read_text())["name"] for p in ROWS_DIR.glob("*.json")}
    assert {f: n for f, n in files.items() if row_file(n).name != f} == {}
    assert sorted(files.values()) == sorted(names)


def test_the_row_files_are_as_the_capture_tool_writes_them(tmp_path: Path) -> None:
    """Written back by tools/capture_command_table.py, the table is the same
    files byte for byte, and reads back as the same rows in the same order."""
    write_rows(load_rows(), tmp_path)
    ours = {p.name: p.read_bytes() for p in ROWS_DIR.iterdir() if p.is_file()}
    written = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    assert sorted(written) == sorted(ours)
    assert [n for n in ours if ours[n] != written[n]] == []
    assert load_rows(tmp_path) == load_rows()


def test_a_misnamed_row_file_is_refused(tmp_path: Path) -> None:
    rows = load_rows()
    write_rows(rows, tmp_path)
    (tmp_path / "ping.json").write_text(json.dumps({**rows[0], "name": "pong"}))
    with pytest.raises(ValueError, match=r"ping\.json holds the row of 'pong'"):
        load_rows(tmp_path)


def test_writing_the_table_keeps_its_order_and_drops_removed_rows(tmp_path: Path) -> None:
    rows = load_rows()
    write_rows(rows, tmp_path)
    client = next(r for r in rows if r["name"] == "client")
    kept = [r for r in rows if r["name"] not in ("echo", "client")][::-1]
    fewer = [*kept, {**client, "subcommands": client["subcommands"][:2]}]
    write_rows(fewer, tmp_path)
    assert load_rows(tmp_path) == fewer
    assert not (tmp_path / "echo.json").exists()
    assert not (tmp_path / "client-getname.json").exists()
    assert sorted(p.name for p in tmp_path.glob("*.json")) == sorted(row_file(n).name for n in _reached(fewer))
    assert (tmp_path / ORDER_FILE).read_text().splitlines()[-1] == "client"


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

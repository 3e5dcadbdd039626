"""Rewrite the command table in README.md from the registration table.

The README's list of supported commands is derived, never hand-kept: this
script renders it from ``trafikey_server/commands/rows/`` between the
``<!-- commands:begin -->`` and ``<!-- commands:end -->`` markers, and a test
fails when the README and the table disagree. Run it after changing the table.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from trafikey_server.protocol.table import Table, load_rows  # noqa: E402

BEGIN = "<!-- commands:begin -->"
END = "<!-- commands:end -->"


def render(table: Table) -> str:
    groups: dict[str, list[str]] = {}
    for cmd in table.ordered:
        if not cmd.implemented and not cmd.subcommands:
            continue
        group = cmd.docs.get("group", "other")
        if cmd.docs.get("module"):
            group = f"module {cmd.docs['module']}"
        name = cmd.name.upper()
        if cmd.subcommands:
            served = [s for s in cmd.subcommands.values() if s.implemented]
            # Subcommands that only refuse as a standalone Valkey does are not listed one by one.
            subs = [s.name.split("|", 1)[1].upper() for s in served
                    if not s.row.get("handler", "").endswith(".disabled")]
            if not subs:
                continue
            rest = "; the others answer as a standalone Valkey" if len(subs) < len(served) else ""
            name = f"{name} ({', '.join(subs)}{rest})"
        groups.setdefault(group, []).append(name)
    lines = ["| family | commands |", "|---|---|"]
    for group, names in groups.items():
        lines.append(f"| {group} | {', '.join(names)} |")
    return "\n".join(lines)


def updated(readme: str, table: Table) -> str:
    head, _, rest = readme.partition(BEGIN)
    _, _, tail = rest.partition(END)
    return f"{head}{BEGIN}\n{render(table)}\n{END}{tail}"


def main() -> None:
    path = ROOT / "README.md"
    path.write_text(updated(path.read_text(), Table(load_rows())))


if __name__ == "__main__":
    main()

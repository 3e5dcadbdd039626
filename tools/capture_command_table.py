"""Capture the metadata of the commands we serve from a live valkey-server.

The command table (trafikey_server/commands/rows/) is data, as Valkey's own
src/commands/*.json is: one JSON file per command and per subcommand, and
rows/order.txt listing the top-level commands in table order. Its
Valkey-defined facts (arity, flags, ACL
categories, key specs, tips, docs) must be exactly what Valkey 9.1 answers to
COMMAND INFO / COMMAND DOCS, so they are read from a running server instead of
being typed in. The handler and capability-token fields are ours and are kept
as they are when an entry is refreshed.

Usage: python tools/capture_command_table.py PORT NAME[|SUB,SUB...] ...
An entry like ``client|id,setname`` captures CLIENT with only those
subcommands; ``client`` alone captures CLIENT with no subcommands.

A command not in the table yet is added at its end. The tool writes every
row back, so the files stay in the one format it writes.

Subcommands are kept in the order Valkey lists them, whatever the order
they are named in: COMMAND INFO and DOCS list a container's subcommands in
the iteration order of its subcommand table, and the server replies in row
order. A container of at most seven subcommands fits one bucket of Valkey's
hash table, which iterates in insertion order (its src/commands.def order),
so that order is the same on every start; a bigger container's order
depends on the hash seed Valkey draws at each start, so what is captured is
one start's order, as good as any.
"""

from __future__ import annotations

import json
import socket
import sys
from pathlib import Path
from typing import Any

import hiredis

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from trafikey_server.protocol.table import ORDER_FILE, ROWS_DIR, load_rows, row_file  # noqa: E402

ORDER_HEAD = """\
# The top-level commands in table order: COMMAND replies, the README's table
# and EMQ.VERSION follow it. Each has its row in <name>.json beside this file;
# a container's row names its subcommands, in order, each in <name>-<sub>.json.
# Written by tools/capture_command_table.py.
"""


def _text(v: Any) -> Any:
    if isinstance(v, bytes):
        return v.decode()
    if isinstance(v, (list, tuple, set)):
        return [_text(x) for x in v]
    if isinstance(v, dict):
        return {_text(k): _text(x) for k, x in v.items()}
    return v


def _info_row(raw: list[Any]) -> dict[str, Any]:
    name, arity, flags, first, last, step, acl, tips, specs, subs = raw
    return {
        "name": name,
        "arity": arity,
        "flags": flags,
        "first_key": first,
        "last_key": last,
        "key_step": step,
        "acl_categories": acl,
        "tips": tips,
        "key_specs": specs,
        "_subs": subs,
    }


class Raw:
    """A bare RESP3 connection: redis-py reshapes COMMAND replies, we need them as sent."""

    def __init__(self, port: int) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port))
        self.reader = hiredis.Reader()
        self.execute_command("HELLO", "3")

    def execute_command(self, *args: str) -> Any:
        parts = [a.encode() for a in args]
        self.sock.sendall(b"*%d\r\n" % len(parts) + b"".join(b"$%d\r\n%s\r\n" % (len(p), p) for p in parts))
        while True:
            reply = self.reader.gets()
            if reply is not False:
                return reply
            self.reader.feed(self.sock.recv(1 << 20))


def capture(r: Raw, name: str, subs: list[str] | None, old: dict[str, Any]) -> dict[str, Any]:
    info = _text(r.execute_command("COMMAND", "INFO", name))[0]
    docs = _text(r.execute_command("COMMAND", "DOCS", name))[name]
    row = _info_row(info)
    subrows = {s["name"]: s for s in (_info_row(x) for x in row.pop("_subs"))}
    subdocs = docs.pop("subcommands", {})
    row["docs"] = docs
    row["handler"] = old.get("handler", "")
    if old.get("tokens"):
        row["tokens"] = old["tokens"]
    if subs is not None:
        oldsubs = {s["name"]: s for s in old.get("subcommands", [])}
        wanted = {f"{name}|{s}" for s in subs}
        if wanted - subrows.keys():
            raise SystemExit(f"Valkey has no {', '.join(sorted(wanted - subrows.keys()))}")
        row["subcommands"] = []
        for full, sr in subrows.items():
            if full not in wanted:
                continue
            sr.pop("_subs")
            sr["docs"] = subdocs[full]
            sr["handler"] = oldsubs.get(full, {}).get("handler", "")
            row["subcommands"].append(sr)
    return row


def _dump(row: dict[str, Any]) -> str:
    return json.dumps(row, indent=1) + "\n"


def write_rows(rows: list[dict[str, Any]], rows_dir: Path = ROWS_DIR) -> None:
    """Write the table as its files: a row per command and per subcommand, a
    container's row naming its subcommands, and the order of the top-level
    rows. A row file no row is written to is removed, so the directory holds
    the table and nothing else."""
    rows_dir.mkdir(parents=True, exist_ok=True)
    files: dict[Path, str] = {}
    for row in rows:
        subs = row.get("subcommands")
        if subs is not None:
            for sub in subs:
                files[row_file(sub["name"], rows_dir)] = _dump(sub)
            row = {k: ([s["name"] for s in subs] if k == "subcommands" else v) for k, v in row.items()}
        files[row_file(row["name"], rows_dir)] = _dump(row)
    if len(files) != len(rows) + sum(len(r.get("subcommands", [])) for r in rows):
        raise SystemExit("two rows would share a file")
    for path in rows_dir.glob("*.json"):
        if path not in files:
            path.unlink()
    for path, text in files.items():
        if not path.exists() or path.read_text() != text:
            path.write_text(text)
    (rows_dir / ORDER_FILE).write_text(ORDER_HEAD + "".join(row["name"] + "\n" for row in rows))


def main() -> None:
    port = int(sys.argv[1])
    r = Raw(port)
    table = load_rows() if (ROWS_DIR / ORDER_FILE).exists() else []
    by_name = {row["name"]: i for i, row in enumerate(table)}
    for arg in sys.argv[2:]:
        name, _, sub = arg.partition("|")
        subs = sub.split(",") if sub else None
        old = table[by_name[name]] if name in by_name else {}
        row = capture(r, name, subs, old)
        if name in by_name:
            table[by_name[name]] = row
        else:
            by_name[name] = len(table)
            table.append(row)
    write_rows(table)


if __name__ == "__main__":
    main()

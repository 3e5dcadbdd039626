"""The command table: the one source of every command's facts.

``commands/rows/`` holds every command the server serves as data, one JSON
file per command and per subcommand, as Valkey keeps ``src/commands/*.json``:
``get.json``, ``client.json``, ``client-setname.json``. A row gives the name,
arity, flags, key positions and specs, ACL categories, docs, the handler that
runs it (``family.function`` under ``trafikey_server.commands``) and, for the
job core, its capability tokens; a container's row names its subcommands, in
order. ``rows/order.txt`` lists the top-level commands in table order, the
order COMMAND replies, the README's table and EMQ.VERSION follow. Dispatch,
arity checks, COMMAND replies, key extraction and EMQ.VERSION are all derived
from a ``Table`` built from those rows; nothing else keeps a list of commands.

A ``Table`` can be built from any sequence of rows, so a test can serve a
table with a row left out and watch everything derived from it follow.
"""

from __future__ import annotations

import importlib
import json
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any, Final

from ..util.errors import CommandError
from ..util.native import PACKAGE_DIR

ROWS_DIR: Final = PACKAGE_DIR / "commands" / "rows"  # not __file__: compiled, that is the build's path
ORDER_FILE: Final = "order.txt"

Handler = Callable[[Any, list[bytes]], bytes]


# Valkey's CMD_MAY_REPLICATE, which COMMAND INFO does not show (so the
# captured rows cannot carry it): commands that may propagate although they
# do not write the keyspace. CLIENT PAUSE WRITE holds them and read-only
# scripts may not call them.
# Durations under this many µs are counted in a list (Command.latency_short).
LATENCY_SHORT: Final = 64
MAY_REPLICATE: Final = frozenset(("eval", "evalsha", "fcall", "pfcount", "publish", "spublish", "cluster|setslot"))


def _missing_handler(name: str) -> Handler:
    def refuse(c: Any, argv: list[bytes]) -> bytes:
        raise CommandError(f"ERR command '{name}' is declared but not implemented")

    return refuse


class Command:
    """One row of the table, with what dispatch needs precomputed."""

    __slots__ = (
        "name", "bname", "arity", "flags", "first_key", "last_key", "key_step",
        "acl_categories", "tips", "key_specs", "docs", "tokens", "handler",
        "subcommands", "parent", "row", "calls", "usec", "failed_calls",
        "rejected_calls", "write", "readonly", "noscript", "no_auth", "loading",
        "stale", "no_multi", "denyoom", "allow_busy", "fast", "movablekeys",
        "admin", "implemented", "extension", "may_replicate", "latency_short", "latency",
    )

    def __init__(self, row: dict[str, Any], parent: Command | None = None) -> None:
        self.row = row
        self.name: str = row["name"]
        self.bname = self.name.encode()
        self.arity: int = row["arity"]
        self.flags: list[str] = list(row.get("flags", []))
        self.first_key: int = row.get("first_key", 0)
        self.last_key: int = row.get("last_key", 0)
        self.key_step: int = row.get("key_step", 0)
        self.acl_categories: list[str] = list(row.get("acl_categories", []))
        self.tips: list[str] = list(row.get("tips", []))
        self.key_specs: list[dict[str, Any]] = list(row.get("key_specs", []))
        self.docs: dict[str, Any] = dict(row.get("docs", {}))
        self.tokens: list[str] = list(row.get("tokens", []))
        # A command this server adds (the job core, the test clock), not one of Valkey's.
        self.extension: bool = bool(row.get("extension", parent.extension if parent else False))
        self.parent = parent
        self.handler, self.implemented = _resolve(row.get("handler", ""), self.name)
        self.subcommands: dict[bytes, Command] = {}
        for sub in row.get("subcommands", []):
            cmd = Command(sub, self)
            # "client|setname" is looked up by "setname".
            self.subcommands[cmd.name.split("|", 1)[1].encode()] = cmd
        flags = set(self.flags)
        self.write = "write" in flags
        self.readonly = "readonly" in flags
        self.noscript = "noscript" in flags
        self.no_auth = "no_auth" in flags
        self.loading = "loading" in flags
        self.stale = "stale" in flags
        self.no_multi = "no_multi" in flags
        self.denyoom = "denyoom" in flags
        self.allow_busy = "allow_busy" in flags
        self.fast = "fast" in flags
        self.movablekeys = "movablekeys" in flags
        self.admin = "admin" in flags
        self.may_replicate = self.name in MAY_REPLICATE
        self.calls = 0
        self.usec = 0
        self.failed_calls = 0
        self.rejected_calls = 0
        # Calls per duration in µs, while latency-tracking is on (util/latency.py):
        # the short ones, nearly all, in a list (counted without hashing), the rest here.
        self.latency_short: list[int] = [0] * LATENCY_SHORT
        self.latency: defaultdict[int, int] = defaultdict(int)

    @property
    def full_name(self) -> str:
        return self.name

    def timed(self, us: int) -> None:
        """One call's duration into the histogram (latency-tracking on)."""
        if us < LATENCY_SHORT:
            self.latency_short[us] += 1
        else:
            self.latency[us] += 1

    def latency_counts(self) -> dict[int, int]:
        """Calls by duration in µs, each duration once (LATENCY HISTOGRAM,
        INFO latencystats): empty when none was timed."""
        counts = {us: n for us, n in enumerate(self.latency_short) if n}
        counts.update(self.latency)
        return counts

    def arity_ok(self, argc: int) -> bool:
        a = self.arity
        return argc == a if a > 0 else argc >= -a

    def reset_stats(self) -> None:
        self.calls = self.usec = self.failed_calls = self.rejected_calls = 0
        self.latency_short = [0] * LATENCY_SHORT
        self.latency = defaultdict(int)
        for sub in self.subcommands.values():
            sub.reset_stats()

    def all_commands(self) -> Iterable[Command]:
        yield self
        yield from self.subcommands.values()


def _resolve(path: str, name: str) -> tuple[Handler, bool]:
    if not path:
        return _missing_handler(name), False
    module, _, func = path.rpartition(".")
    # "hash.hset" names trafikey_server.commands.hash; a path into another
    # package of the server ("emq.claim.claim") names it from the top.
    mod = None
    for base in ("trafikey_server.commands.", "trafikey_server."):
        try:
            mod = importlib.import_module(base + module)
            break
        except ModuleNotFoundError as e:
            # Only the module asked for may be missing; a missing import
            # inside it is a bug to surface, not a reason to look elsewhere.
            if not e.name or not (base + module).startswith(e.name):
                raise
    if mod is None:
        return _missing_handler(name), False
    handler = getattr(mod, func, None)
    if handler is None:
        return _missing_handler(name), False
    return handler, True


class Table:
    """The served commands, looked up by lower-case name as bytes."""

    def __init__(self, rows: Sequence[dict[str, Any]], base: Table | None = None) -> None:
        self.rows = list(rows)
        self.commands: dict[bytes, Command] = {}
        self.ordered: list[Command] = []
        # Commands without subcommands under their name as in the table and
        # in capitals, the two spellings clients send: dispatch's fast path.
        self.fast: dict[bytes, Command] = {}
        self.version_reply = b""
        if base is not None:  # with_fast: the same rows and commands
            self.commands, self.ordered, self.fast = base.commands, base.ordered, base.fast
            self.version_reply = base.version_reply
            return
        for row in self.rows:
            cmd = Command(row)
            self.commands[cmd.bname] = cmd
            self.ordered.append(cmd)
            if not cmd.subcommands:
                self.fast[cmd.bname] = self.fast[cmd.bname.upper()] = cmd
        text = " ".join(self.tokens()).encode()
        self.version_reply = b"$%d\r\n%s\r\n" % (len(text), text)

    def with_fast(self, fast: dict[bytes, Command]) -> Table:
        """The same commands with another fast map: CLIENT PAUSE, maxmemory
        and fault rules serve a table whose fast path leaves some out."""
        t = Table(self.rows, self)
        t.fast = fast
        return t

    def lookup(self, name: bytes) -> Command | None:
        cmd = self.commands.get(name)
        if cmd is None:
            cmd = self.commands.get(name.lower())
        return cmd

    def tokens(self) -> list[str]:
        """Capability tokens of every row, in table order (EMQ.VERSION)."""
        out: list[str] = []
        for cmd in self.ordered:
            out.extend(cmd.tokens)
        return out

    def without(self, name: str) -> Table:
        return Table([r for r in self.rows if r["name"] != name])

    def everything(self) -> Iterable[Command]:
        for cmd in self.ordered:
            yield from cmd.all_commands()


def row_file(name: str, rows_dir: Path = ROWS_DIR) -> Path:
    """The file of a command's row: ``client|setname`` is ``client-setname.json``."""
    return rows_dir / (name.replace("|", "-") + ".json")


def table_order(rows_dir: Path = ROWS_DIR) -> list[str]:
    """The top-level commands in table order, as ``order.txt`` lists them
    (one a line; blank lines and ``#`` comments aside)."""
    lines = (line.strip() for line in (rows_dir / ORDER_FILE).read_text().splitlines())
    return [line for line in lines if line and not line.startswith("#")]


def load_row(name: str, rows_dir: Path = ROWS_DIR) -> dict[str, Any]:
    """One command's row, its subcommands' rows in place of their names."""
    path = row_file(name, rows_dir)
    row: dict[str, Any] = json.loads(path.read_text())
    if row.get("name") != name:
        raise ValueError(f"{path.name} holds the row of {row.get('name')!r}, not of {name!r}")
    if "subcommands" in row:
        row["subcommands"] = [load_row(sub, rows_dir) for sub in row["subcommands"]]
    return row


def load_rows(rows_dir: Path = ROWS_DIR) -> list[dict[str, Any]]:
    """Every row, in table order."""
    return [load_row(name, rows_dir) for name in table_order(rows_dir)]


_DEFAULT: Table | None = None


def default_table() -> Table:
    global _DEFAULT
    if _DEFAULT is None:
        _DEFAULT = Table(load_rows())
    return _DEFAULT

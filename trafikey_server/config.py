"""Server options: one table for the command line, config files and CONFIG.

Each ``Option`` knows its Valkey name, its kind (how a value is parsed,
validated and shown back), its default and whether CONFIG SET may change it.
The command line (``--port 7000``), a valkey.conf-style file and CONFIG
GET/SET all read the same table, so an option exists everywhere or nowhere.

Options the server acts on are read as attributes of ``Config`` (dashes
become underscores: ``config.proto_max_bulk_len``). Valkey's tuning options
that have no effect here are still parsed, validated and stored, so tools
that set them keep working.
"""

from __future__ import annotations

import fnmatch
import shlex
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any


class ConfigError(Exception):
    """A value Valkey would refuse; ``msg`` is the reason after the name."""


_UNITS = {
    "": 1, "b": 1,
    "k": 1000, "kb": 1024,
    "m": 1000**2, "mb": 1024**2,
    "g": 1000**3, "gb": 1024**3,
}


def parse_memory(text: str) -> int:
    """valkey.conf memory units: 1k = 1000, 1kb = 1024, case-insensitive."""
    s = text.strip().lower()
    i = len(s)
    while i > 0 and s[i - 1].isalpha():
        i -= 1
    num, unit = s[:i], s[i:]
    if unit not in _UNITS or not num or not (num.isdigit() or (num[0] == "-" and num[1:].isdigit())):
        raise ConfigError("argument must be a memory value")
    return int(num) * _UNITS[unit]


@dataclass
class Option:
    name: str
    kind: str  # "int", "memory", "bool", "string", "enum", "list"
    default: Any
    mutable: bool = True
    low: int | None = None
    high: int | None = None
    choices: Sequence[str] = ()
    aliases: Sequence[str] = ()
    apply: Callable[[Any, Any], None] | None = None  # (server, value) on CONFIG SET
    sensitive: bool = False

    def parse(self, text: str) -> Any:
        k = self.kind
        if k == "bool":
            low = text.lower()
            if low == "yes":
                return True
            if low == "no":
                return False
            raise ConfigError("argument must be 'yes' or 'no'")
        if k in ("int", "memory"):
            if k == "memory":
                v = parse_memory(text)
            else:
                try:
                    v = int(text)
                except ValueError:
                    raise ConfigError("argument couldn't be parsed into an integer") from None
            if (self.low is not None and v < self.low) or (self.high is not None and v > self.high):
                raise ConfigError(f"argument must be between {self.low} and {self.high} inclusive")
            return v
        if k == "enum":
            low = text.lower()
            if low not in self.choices:
                raise ConfigError("argument(s) must be one of the following: " + ", ".join(self.choices))
            return low
        return text

    def show(self, value: Any) -> str:
        if self.kind == "bool":
            return "yes" if value else "no"
        return str(value)


def _options() -> list[Option]:
    return [
        Option("port", "int", 6379, mutable=False, low=0, high=65535),
        Option("bind", "string", "127.0.0.1", mutable=False),
        Option("databases", "int", 16, mutable=False, low=1, high=2**31 - 1),
        Option("loglevel", "enum", "notice", choices=("debug", "verbose", "notice", "warning", "nothing")),
        Option("logfile", "string", "", mutable=False),
        Option("requirepass", "string", "", sensitive=True),
        Option("protected-mode", "bool", True),
        Option("proto-max-bulk-len", "memory", 512 * 1024 * 1024, low=1024 * 1024),
        Option("save", "string", "3600 1 300 100 60 10000"),
        Option("appendonly", "bool", False),
        Option("dir", "string", ".", mutable=True),
        Option("dbfilename", "string", "dump.rdb"),
        Option("timeout", "int", 0, low=0, high=2**31 - 1),
        Option("tcp-backlog", "int", 511, mutable=False, low=0, high=2**31 - 1),
        Option("daemonize", "bool", False, mutable=False),
        Option("hz", "int", 10, low=0, high=2**31 - 1),
        Option("maxmemory", "memory", 0, low=0, high=9223372036854775807),
        Option("maxmemory-policy", "enum", "noeviction", choices=(
            "volatile-lru", "volatile-lfu", "volatile-random", "volatile-ttl",
            "allkeys-lru", "allkeys-lfu", "allkeys-random", "noeviction")),
        Option("hash-max-listpack-entries", "int", 512, low=0, high=9223372036854775807,
               aliases=("hash-max-ziplist-entries",)),
        Option("hash-max-listpack-value", "int", 64, low=0, high=9223372036854775807,
               aliases=("hash-max-ziplist-value",)),
        Option("zset-max-listpack-entries", "int", 128, low=0, high=9223372036854775807,
               aliases=("zset-max-ziplist-entries",)),
        Option("zset-max-listpack-value", "int", 64, low=0, high=9223372036854775807,
               aliases=("zset-max-ziplist-value",)),
        Option("lazyfree-lazy-user-del", "bool", True),
        Option("busy-reply-threshold", "int", 5000, low=0, high=9223372036854775807,
               aliases=("lua-time-limit",)),
        Option("slowlog-log-slower-than", "int", 10000, low=-1, high=9223372036854775807),
        Option("slowlog-max-len", "int", 128, low=0, high=9223372036854775807),
        Option("notify-keyspace-events", "string", ""),
        Option("maxclients", "int", 10000, low=1, high=2**32 - 1),
        Option("tcp-keepalive", "int", 300, low=0, high=2**31 - 1),
        Option("io-threads", "int", 1, low=1, high=256),
    ]


@dataclass
class Config:
    options: dict[str, Option] = field(default_factory=dict)
    values: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.options:
            for opt in _options():
                self.options[opt.name] = opt
                for a in opt.aliases:
                    self.options[a] = opt
        for opt in self.options.values():
            self.values.setdefault(opt.name, opt.default)

    def __getattr__(self, attr: str) -> Any:
        values = self.__dict__.get("values")
        if values is not None:
            name = attr.replace("_", "-")
            if name in values:
                return values[name]
        raise AttributeError(attr)

    def option(self, name: str) -> Option | None:
        return self.options.get(name.lower())

    def set_text(self, name: str, text: str) -> None:
        opt = self.option(name)
        if opt is None:
            raise ConfigError(f"Bad directive or wrong number of arguments: '{name}'")
        self.values[opt.name] = opt.parse(text)

    def get_matching(self, patterns: Iterable[str]) -> list[tuple[str, str]]:
        out: dict[str, str] = {}
        for pat in patterns:
            pat = pat.lower()
            for name, opt in self.options.items():
                if name in out:
                    continue
                if fnmatch.fnmatchcase(name, pat):
                    out[name] = opt.show(self.values[opt.name])
        return list(out.items())


def parse_args(argv: list[str], config: Config | None = None) -> Config:
    """valkey-server's command line: ``[configfile] [--name value ...]``.

    Option words are collected until the next ``--name``, as valkey-server
    does, so ``--save 60 1000`` and ``--bind 127.0.0.1 ::1`` work."""
    config = config or Config()
    args = list(argv)
    if args and not args[0].startswith("--"):
        load_file(config, args.pop(0))
    directives: list[tuple[str, list[str]]] = []
    for a in args:
        if a.startswith("--"):
            directives.append((a[2:], []))
        elif directives:
            directives[-1][1].append(a)
        else:
            raise ConfigError(f"Unexpected argument: '{a}'")
    for name, words in directives:
        if config.option(name) is None:
            raise ConfigError(f"Bad directive or wrong number of arguments: '{name}'")
        try:
            config.set_text(name, " ".join(words))
        except ConfigError as e:
            # Valkey names the directive and the value it refused.
            raise ConfigError(f"'{name} \"{' '.join(words)}\"' {e}") from None
    return config


def load_file(config: Config, path: str) -> None:
    with open(path, encoding="utf-8") as f:
        for lineno, raw in enumerate(f, 1):
            line = raw.strip()
            if not line or line.startswith("#"):
                continue
            try:
                words = shlex.split(line)
            except ValueError:
                raise ConfigError(f"{path}:{lineno}: unbalanced quotes") from None
            name, rest = words[0], words[1:]
            try:
                config.set_text(name, " ".join(rest))
            except ConfigError as e:
                raise ConfigError(f"{path}:{lineno}: {e}") from None

"""Server options: one table for the command line, config files and CONFIG.

The table lists every option Valkey 9.1 has (``CONFIG GET *`` answers the
same names), each with Valkey's kind, default, range or choices, and the
checks Valkey makes when it is set, so that tools which set tuning options
(``hash-max-listpack-entries``, ``lazyfree-*``, ``activedefrag`` ...) get
Valkey's answers whether or not the option changes anything here. The
command line (``--port 7000``), a valkey.conf-style file and CONFIG GET/SET
all read this table, so an option exists everywhere or nowhere.

Options the server acts on are read as attributes of ``Config`` (dashes
become underscores: ``config.proto_max_bulk_len``) or from ``values``.
Our defaults differ from Valkey's only where the server does: ``bind``
(loopback only) and ``dir`` (the working directory, which Valkey reports too).
"""

from __future__ import annotations

import fnmatch
import locale
import os
import socket
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, TypedDict, Unpack

from ..util.confsyntax import quote, split_args
from ..util.floats import parse_double
from ..util.log import LEVELS
from ..util.oom import PRIMARY, OomScore
from ..util.parsing import to_int
from . import notify

if TYPE_CHECKING:
    from ..util.log import Log
    from .acl import Acl
    from .notify import Notify
    from .observe import Observer


class ConfigError(Exception):
    """A value Valkey would refuse; ``msg`` is the reason after the name."""


INT64_MIN = -(2**63)
INT64_MAX = 2**63 - 1
UINT64_MAX = 2**64 - 1
INT_MIN = -(2**31)
INT_MAX = 2**31 - 1

_UNITS = {
    "": 1, "b": 1,
    "k": 1000, "kb": 1024,
    "m": 1000**2, "mb": 1024**2,
    "g": 1000**3, "gb": 1024**3,
}

NOT_MEMORY = "argument must be a memory value"
NOT_INTEGER = "argument couldn't be parsed into an integer"


def _split_memory(text: str) -> tuple[str, int]:
    s = text.lower()
    for unit in ("kb", "mb", "gb"):
        if s.endswith(unit):
            return s[:-2], _UNITS[unit]
    if s[-1:] in ("b", "k", "m", "g"):
        return s[:-1], _UNITS[s[-1]]
    return s, 1


def parse_memory(text: str, signed: bool = False, error: str = NOT_MEMORY) -> int:
    """valkey.conf memory units: 1k = 1000, 1kb = 1024, case-insensitive.

    Valkey takes plain digits only (no sign, no spaces; an empty number is
    0) and refuses what does not fit 64 unsigned bits; a signed option also
    takes a minus sign and reads the 64 bits as two's complement."""
    num, mul = _split_memory(text)
    neg = signed and num.startswith("-")
    digits = num[1:] if neg else num
    if digits and not (digits.isascii() and digits.isdigit()):
        raise ConfigError(error)
    v = int(digits or "0") * mul
    if v > UINT64_MAX:
        raise ConfigError(error)
    if neg:
        v = -v
        if v < INT64_MIN:
            raise ConfigError(error)
    elif signed and v > INT64_MAX:
        v -= 2**64
    return v


def _strtoll(text: str) -> int | None:
    """C strtoll on a whole word: optional spaces and sign, then digits,
    saturating instead of failing on overflow; None if anything is left."""
    s = text.lstrip(" \t\n\r\f\v")
    body = s[1:] if s[:1] in ("+", "-") else s
    if not body:
        return 0 if not s else None
    if not (body.isascii() and body.isdigit()):
        return None
    v = int(s)
    return max(INT64_MIN, min(INT64_MAX, v))


def _words(text: str) -> list[str]:
    """A multi-word value split as Valkey splits it: on each single space,
    so doubled or leading spaces make empty words."""
    return text.split(" ") if text else []


# A setting's value: a number (bool for yes/no, int for numbers, memory
# sizes, octal modes and flag sets) or a string.
Value = int | str


@dataclass
class Option:
    name: str
    kind: str  # "int", "memory", "bool", "string", "enum", "octal", "special"
    default: Value
    mutable: bool = True
    low: int | None = None
    high: int | None = None
    choices: Sequence[str] = ()
    aliases: Sequence[str] = ()
    apply: Callable[[SettingsHost, Any], None] | None = None  # (server, value) on CONFIG SET
    sensitive: bool = False
    protected: bool = False  # settable only with enable-protected-configs
    hidden: bool = False  # found by its exact name only, never by a pattern
    multi: bool = False  # an enum of flags, several words at once
    synonyms: Mapping[str, str] = field(default_factory=dict)  # enum word -> the name shown
    percent: bool = False  # memory, or a percentage written "N%"
    check: Callable[[Any], str | None] | None = None  # the refusal reason for a parsed value (of the kind)
    parser: Callable[[str, Value | None], Value] | None = None  # special kinds: (text, current) -> value
    shower: Callable[[Any], str] | None = None

    def parse(self, text: str, current: Value | None = None) -> Value:
        value = self._parse(text, current)
        if self.check is not None:
            reason = self.check(value)
            if reason:
                raise ConfigError(reason)
        return value

    def _parse(self, text: str, current: Value | None) -> Value:
        k = self.kind
        if k == "bool":
            low = text.lower()
            if low == "yes":
                return True
            if low == "no":
                return False
            raise ConfigError("argument must be 'yes' or 'no'")
        if k == "int":
            v = to_int(text.encode("utf-8", "surrogateescape"))
            if v is None:
                raise ConfigError(NOT_INTEGER)
            return self._bounded(v)
        if k == "memory":
            if self.percent:
                return self._percent(text)
            return self._bounded(parse_memory(text, signed=(self.low or 0) < 0))
        if k == "enum":
            return self._enum(text)
        if k == "octal":
            if not text or any(ch not in "01234567" for ch in text):
                raise ConfigError("argument couldn't be parsed as an octal number")
            return self._bounded(int(text, 8))
        if k == "special":
            assert self.parser is not None
            return self.parser(text, self.default if current is None else current)
        return text

    def _bounded(self, v: int) -> int:
        if (self.low is not None and v < self.low) or (self.high is not None and v > self.high):
            raise ConfigError(f"argument must be between {self.low} and {self.high} inclusive")
        return v

    def _percent(self, text: str) -> int:
        """maxmemory-clients: bytes, or "N%" of maxmemory kept as -N."""
        err = "argument must be a memory or percent value"
        if text.endswith("%"):
            n = to_int(text[:-1].encode("utf-8", "surrogateescape"))
            if n is None or n < 0:
                raise ConfigError(err)
            if n > 100:
                raise ConfigError("percentage argument must be less or equal to 100")
            return -n
        return self._bounded(parse_memory(text, error=err))

    def _enum(self, text: str) -> str:
        words = _words(text) if self.multi else [text]
        by_low = {c.lower(): c for c in self.choices}
        picked: list[str] = []
        for w in words:
            name = by_low.get(w.lower())
            if name is None:
                picked = []
                break
            picked.append(self.synonyms.get(name, name))
        if not picked:
            raise ConfigError("argument(s) must be one of the following: " + ", ".join(self.choices))
        if not self.multi:
            return picked[0]
        # Flags are shown in the table's order; the first choice is "none".
        flags = [c for c in self.choices[1:] if c in picked]
        return " ".join(flags) if flags else self.choices[0]

    def show(self, value: Value) -> str:
        k = self.kind
        if k == "bool":
            return "yes" if value else "no"
        if k == "octal":
            return f"{value:o}"
        if k == "memory" and self.percent and isinstance(value, int) and value < 0:
            return f"{-value}%"
        if self.shower is not None:
            return self.shower(value)
        return str(value)


# -- the kinds, as table rows ------------------------------------------------------------


class Extras(TypedDict, total=False):
    """An option's fields beyond its name, kind and default (Option's)."""

    mutable: bool
    aliases: Sequence[str]
    apply: Callable[[SettingsHost, Any], None] | None
    sensitive: bool
    protected: bool
    hidden: bool
    multi: bool
    synonyms: Mapping[str, str]
    percent: bool
    # the value they take is of the option's kind (bool, int or str)
    check: Callable[[Any], str | None] | None
    shower: Callable[[Any], str] | None


def B(name: str, default: bool, **kw: Unpack[Extras]) -> Option:
    return Option(name, "bool", default, **kw)


def N(name: str, default: int, low: int, high: int, **kw: Unpack[Extras]) -> Option:
    return Option(name, "int", default, low=low, high=high, **kw)


def M(name: str, default: int, low: int, high: int, **kw: Unpack[Extras]) -> Option:
    return Option(name, "memory", default, low=low, high=high, **kw)


def E(name: str, default: str, choices: Sequence[str], **kw: Unpack[Extras]) -> Option:
    return Option(name, "enum", default, choices=choices, **kw)


def S(name: str, default: str, **kw: Unpack[Extras]) -> Option:
    return Option(name, "string", default, **kw)


def X(name: str, default: Value, parser: Callable[[str, Value | None], Value], **kw: Unpack[Extras]) -> Option:
    return Option(name, "special", default, parser=parser, **kw)


# -- checks Valkey makes on particular options ---------------------------------------------


def _no_defrag(v: bool) -> str | None:
    # True here too: there is no jemalloc to defragment.
    if v:
        return ("Active defragmentation cannot be enabled: it requires a server compiled with a modified "
                "Jemalloc like the one shipped by default with the source distribution")
    return None


def _no_rdma_port(v: int) -> str | None:
    return "No RDMA building support." if v else None


def _no_rdma(text: str, current: Value | None) -> str:
    raise ConfigError("No RDMA building support.")


def _hostname(v: str) -> str | None:
    if all(ch.isascii() and (ch.isalnum() or ch in "-.") for ch in v):
        return None
    return "Hostnames may only contain alphanumeric characters, hyphens or dots"


_NODENAME_BAD = frozenset("!\"#$%&'()*+,;<=>?@[\\]^{|}~ ")


def _nodename(v: str) -> str | None:
    if any(ch in _NODENAME_BAD or ord(ch) < 32 or ord(ch) == 127 for ch in v):
        return "Announced human node name contained invalid character"
    return None


def _ip_check(family: int, what: str) -> Callable[[str], str | None]:
    def check(v: str) -> str | None:
        if not v:
            return None
        try:
            socket.inet_pton(family, v)
        except (OSError, ValueError):
            return f"Invalid {what} address"
        return None

    return check


_TITLE_VARS = {"title": "", "listen-addr": "*:0", "server-mode": "", "port": "0", "tls-port": "0",
               "unixsocket": "", "config-file": ""}


def _proc_title(v: str) -> str | None:
    """Valkey expands the template with an empty title and refuses one with
    an unknown or unclosed variable, or that expands to nothing."""
    out = []
    i = 0
    while i < len(v):
        if v[i] == "{":
            end = v.find("}", i)
            if end < 0 or v[i + 1:end] not in _TITLE_VARS:
                return "template format is invalid or contains unknown variables"
            out.append(_TITLE_VARS[v[i + 1:end]])
            i = end + 1
        else:
            out.append(v[i])
            i += 1
    if not "".join(out).strip(" "):
        return "template format is invalid or contains unknown variables"
    return None


def _locale(v: str) -> str | None:
    if not v:
        return None
    old = locale.setlocale(locale.LC_COLLATE)
    try:
        locale.setlocale(locale.LC_COLLATE, v)
    except locale.Error:
        return "Invalid locale name"
    finally:
        locale.setlocale(locale.LC_COLLATE, old)
    return None


def _filename(what: str) -> Callable[[str], str | None]:
    def check(v: str) -> str | None:
        if not v:
            return f"{what} can't be empty"
        if "/" in v:
            return f"{what} can't be a path, just a filename"
        return None

    return check


_SHUTDOWN_FLAGS = ("default", "save", "nosave", "now", "force", "safe", "failover")


def _shutdown_flags(v: str) -> str | None:
    words = v.split()
    if "save" in words and "nosave" in words:
        return "shutdown options SAVE and NOSAVE can't be used simultaneously"
    return None


# What CONFIG SET does for an option whose effect lives in a module that
# sits above this one (limits, persistence, ...): that module registers it
# with ``register_apply`` when it is imported, so this one never imports it.
_APPLY: dict[str, Callable[[Any, Any], None]] = {}


def register_apply(name: str, fn: Callable[[Any, Any], None]) -> None:
    """Have CONFIG SET of option ``name`` call ``fn(server, value)``."""
    _APPLY[name] = fn


def _registered(name: str) -> Callable[[Any, Any], None]:
    def apply(server: Any, value: Any) -> None:
        _APPLY[name](server, value)

    return apply


class SettingsHost(Protocol):
    """What the options applied here on CONFIG SET use of the server
    (server.py). Those registered from other modules (register_apply)
    take the server as their own module types it."""

    acl: Acl
    config: Config
    latency_tracking: bool
    log: Log
    notify: Notify
    observer: Observer
    oom: OomScore
    slot_checks: bool

    def refresh_limits(self) -> None: ...
    def relisten(self, kind: str = "tcp") -> bool: ...
    def reseed(self) -> None: ...


def _apply_loglevel(server: SettingsHost, value: str) -> None:
    server.log.level = LEVELS[value]


def _apply_limits(server: SettingsHost, value: int) -> None:
    server.refresh_limits()


_apply_appendonly = _registered("appendonly")
_apply_appendfsync = _registered("appendfsync")
_apply_auto_gc = _registered("aof-disable-auto-gc")
_apply_maxmemory = _registered("maxmemory")
_apply_policy = _registered("maxmemory-policy")
_apply_maxmemory_clients = _registered("maxmemory-clients")
_apply_min_replicas = _registered("min-replicas")
_apply_proto_max_bulk_len = _registered("proto-max-bulk-len")
_apply_obuf = _registered("client-output-buffer-limit")
# save and stop-writes-on-bgsave-error decide MISCONF (execution/persist/snapshot.py).
_apply_disk_error = _registered("disk-error")
# The tls-* options that rebuild the TLS context, and tls-port (network/tls.py).
_apply_tls = _registered("tls")
_apply_tls_port = _registered("tls-port")


def _apply_port(server: SettingsHost, value: int) -> None:
    if not server.relisten():
        raise ConfigError("Unable to listen on this port. Check server logs.")


def _apply_bind(server: SettingsHost, value: str) -> None:
    if not server.relisten():
        raise ConfigError("Failed to bind to specified addresses.")


def _apply_oom(server: SettingsHost, value: object) -> None:
    """oom-score-adj and its values: the process's score set now; a score
    /proc refuses is refused, and the option rolls back."""
    v = server.config.values
    if not server.oom.apply(v["oom-score-adj"], v["oom-score-adj-values"], PRIMARY, server.log.warning):
        raise ConfigError("Failed to set current oom_score_adj. Check server logs.")


def _apply_requirepass(server: SettingsHost, value: str) -> None:
    """requirepass is the default user's password (acl.Acl.set_requirepass)."""
    server.acl.set_requirepass(value)


def _apply_slot_checks(server: SettingsHost, value: bool) -> None:
    server.slot_checks = value


def _apply_latency_tracking(server: SettingsHost, value: bool) -> None:
    server.latency_tracking = value


def _apply_observe(server: SettingsHost, value: int) -> None:
    """The command log and latency thresholds (observe.py)."""
    server.observer.reconfigured()


def _apply_seed(server: SettingsHost, value: str) -> None:
    """CONFIG SET seed restarts every random sequence at once, even to the
    seed already set (util/rand.py; the Lua generator too)."""
    server.reseed()


# -- the special options ----------------------------------------------------------------------


def _seed(text: str, current: Value | None) -> str:
    """seed: empty (drawn from the OS) or an integer of 64 bits, shown as
    Valkey prints a number."""
    if not text:
        return ""
    v = to_int(text.encode("utf-8", "surrogateescape"))
    if v is None:
        raise ConfigError(NOT_INTEGER)
    return str(v)


def _save(text: str, current: Value | None) -> str:
    """Pairs of <seconds> <changes>: seconds at least 1, changes at least 0,
    read as C's strtoll (and changes then as a C int)."""
    words = _words(text)
    if words == [""] or not words:
        return ""
    if len(words) % 2:
        raise ConfigError("Invalid save parameters")
    out = []
    for i in range(0, len(words), 2):
        secs, changes = _strtoll(words[i]), _strtoll(words[i + 1])
        if secs is None or changes is None or secs < 1 or changes < 0:
            raise ConfigError("Invalid save parameters")
        changes = (changes + 2**31) % 2**32 - 2**31
        out.append(f"{secs} {changes}")
    return " ".join(out)


_OBUF_CLASSES = {"normal": "normal", "replica": "slave", "slave": "slave", "pubsub": "pubsub"}


def _obuf_limits(text: str, current: Value | None) -> str:
    """client-output-buffer-limit: <class> <hard> <soft> <seconds> groups,
    each replacing that class's limits."""
    words = _words(text)
    if len(words) % 4:
        raise ConfigError("Wrong number of arguments in buffer limit configuration.")
    cur = str(current).split()
    limits = {cur[i]: cur[i + 1:i + 4] for i in range(0, len(cur), 4)}
    for i in range(0, len(words), 4):
        cls = _OBUF_CLASSES.get(words[i].lower())
        if cls is None:
            raise ConfigError("Invalid client class specified in buffer limit configuration.")
        try:
            hard, soft = parse_memory(words[i + 1]), parse_memory(words[i + 2])
        except ConfigError:
            hard = soft = -1
        secs = _strtoll(words[i + 3])
        if hard < 0 or soft < 0 or secs is None or secs < 0:
            raise ConfigError("Error in hard, soft or soft_seconds setting in buffer limit configuration.")
        limits[cls] = [str(hard), str(soft), str(secs)]
    return " ".join(f"{cls} {' '.join(limits[cls])}" for cls in ("normal", "slave", "pubsub"))


def _oom_values(text: str, current: Value | None) -> str:
    words = _words(text)
    if len(words) != 3:
        raise ConfigError("wrong number of arguments")
    vals = [_strtoll(w) for w in words]
    if any(v is None or not -2000 <= v <= 2000 for v in vals):
        raise ConfigError("Invalid oom-score-adj-values, elements must be between -2000 and 2000.")
    return " ".join(str(v) for v in vals)


def _keyspace_events(text: str, current: Value | None) -> int:
    """notify-keyspace-events, kept as Valkey keeps it: the flag bits (the
    text CONFIG GET shows is derived from them, notify.flags_text)."""
    try:
        return notify.parse_flags(text.split("\0", 1)[0])  # Valkey reads a C string
    except ValueError as e:
        raise ConfigError(str(e)) from None


def _apply_keyspace_events(server: SettingsHost, value: int) -> None:
    server.notify.configure(value)


def _percentiles(text: str, current: Value | None) -> str:
    out = []
    for w in _words(text):
        v = parse_double(w.encode("utf-8", "surrogateescape"))
        if v is None or v != v:
            raise ConfigError("Invalid latency-tracking-info-percentiles parameters")
        if not 0.0 <= v <= 100.0:
            raise ConfigError("latency-tracking-info-percentiles parameters should sit between [0.0,100.0]")
        out.append(("%f" % v).rstrip("0").rstrip("."))
    return " ".join(out)


def _bind(text: str, current: Value | None) -> str:
    words = _words(text)
    if len(words) > 16:
        raise ConfigError("Too many bind addresses specified.")
    return " ".join(words)


def _replicaof(text: str, current: Value | None) -> str:
    words = text.split()
    if [w.lower() for w in words] == ["no", "one"] or not words:
        return ""
    if len(words) != 2:
        raise ConfigError("wrong number of arguments")
    port = to_int(words[1].encode())
    if port is None or not 0 <= port <= 65535:
        raise ConfigError("Invalid primary port")
    return f"{words[0]} {port}"


def _dir(text: str, current: Value | None) -> str:
    """Valkey changes into the directory and reports where it landed; we
    check it the same way and report the resolved path without moving."""
    if not text:
        raise ConfigError("dir can't be empty")
    if not os.path.exists(text):
        raise ConfigError("No such file or directory")
    if not os.path.isdir(text):
        raise ConfigError("Not a directory")
    if not os.access(text, os.X_OK):
        raise ConfigError("Permission denied")
    return os.path.realpath(text)


def _options() -> list[Option]:
    """Every option of Valkey 9.1, by name; aliases are listed with their option."""
    return [
    E("acl-pubsub-default", "resetchannels", ("allchannels", "resetchannels")),
    N("acllog-max-len", 128, 0, 9223372036854775807),
    N("active-defrag-cycle-max", 25, 1, 99),
    N("active-defrag-cycle-min", 1, 1, 99),
    N("active-defrag-cycle-us", 500, 0, 100000),
    M("active-defrag-ignore-bytes", 104857600, 1, 9223372036854775807),
    N("active-defrag-max-scan-fields", 1000, 1, 9223372036854775807),
    N("active-defrag-threshold-lower", 10, 0, 1000),
    N("active-defrag-threshold-upper", 100, 0, 1000),
    N("active-expire-effort", 1, 1, 10),
    B("activedefrag", False, check=_no_defrag),
    B("activerehashing", True),
    B("aof-load-truncated", True),
    B("aof-rewrite-incremental-fsync", True),
    B("aof-timestamp-enabled", False),
    B("aof-use-rdb-preamble", True),
    E("appendfsync", "everysec", ("everysec", "always", "no"), apply=_apply_appendfsync),
    B("appendonly", False, apply=_apply_appendonly),
    M("auto-aof-rewrite-min-size", 67108864, 0, 9223372036854775807),
    N("auto-aof-rewrite-percentage", 100, 0, 2147483647),
    S("availability-zone", ""),
    S("bind-source-addr", ""),
    N("busy-reply-threshold", 5000, 0, 9223372036854775807, aliases=("lua-time-limit",)),
    M("client-query-buffer-limit", 1073741824, 1048576, 9223372036854775807),
    B("cluster-allow-pubsubshard-when-down", True),
    B("cluster-allow-reads-when-down", False),
    B("cluster-allow-replica-migration", True),
    N("cluster-announce-bus-port", 0, 0, 65535),
    N("cluster-announce-client-port", 0, 0, 65535),
    N("cluster-announce-client-tls-port", 0, 0, 65535),
    S("cluster-announce-hostname", "", check=_hostname),
    S("cluster-announce-human-nodename", "", check=_nodename),
    S("cluster-announce-ip", ""),
    N("cluster-announce-port", 0, 0, 65535),
    N("cluster-announce-tls-port", 0, 0, 65535),
    N("cluster-blacklist-ttl", 60, -9223372036854775808, 9223372036854775807),
    E("cluster-config-save-behavior", "sync", ("sync", "best-effort")),
    M("cluster-link-sendbuf-limit", 0, 0, 18446744073709551615),
    N("cluster-manual-failover-timeout", 5000, 1, 2147483647),
    N("cluster-migration-barrier", 1, 0, 2147483647),
    N("cluster-node-timeout", 15000, 0, 9223372036854775807),
    E("cluster-preferred-endpoint-type", "ip", ("ip", "hostname", "unknown-endpoint")),
    B("cluster-replica-no-failover", False, aliases=("cluster-slave-no-failover",)),
    N("cluster-replica-validity-factor", 10, 0, 2147483647, aliases=("cluster-slave-validity-factor",)),
    B("cluster-require-full-coverage", True),
    N("cluster-slot-migration-log-max-len", 1000, 0, 9223372036854775807),
    B("cluster-slot-stats-enabled", False),
    N("commandlog-execution-slower-than", 10000, -1, 9223372036854775807, aliases=("slowlog-log-slower-than",),
      apply=_apply_observe),
    N("commandlog-large-reply-max-len", 128, 0, 9223372036854775807, apply=_apply_observe),
    N("commandlog-large-request-max-len", 128, 0, 9223372036854775807, apply=_apply_observe),
    N("commandlog-reply-larger-than", 1048576, -1, 9223372036854775807, apply=_apply_observe),
    N("commandlog-request-larger-than", 1048576, -1, 9223372036854775807, apply=_apply_observe),
    N("commandlog-slow-execution-max-len", 128, 0, 9223372036854775807, aliases=("slowlog-max-len",),
      apply=_apply_observe),
    B("crash-log-enabled", True),
    B("crash-memcheck-enabled", True),
    B("dual-channel-replication-enabled", False),
    B("extended-redis-compatibility", False),
    N("hash-max-listpack-entries", 512, 0, 9223372036854775807, aliases=("hash-max-ziplist-entries",),
      apply=_apply_limits),
    M("hash-max-listpack-value", 64, 0, 9223372036854775807, aliases=("hash-max-ziplist-value",),
      apply=_apply_limits),
    B("hide-user-data-from-log", True),
    M("hll-sparse-max-bytes", 3000, 0, 9223372036854775807, apply=_apply_limits),
    N("hz", 10, 0, 2147483647),
    S("ignore-warnings", ""),
    B("import-mode", False),
    N("io-threads", 1, 1, 256),
    B("jemalloc-bg-thread", True),
    N("latency-monitor-threshold", 0, 0, 9223372036854775807, apply=_apply_observe),
    B("latency-tracking", True, apply=_apply_latency_tracking),
    B("lazyfree-lazy-eviction", True),
    B("lazyfree-lazy-expire", True),
    B("lazyfree-lazy-server-del", True),
    B("lazyfree-lazy-user-del", True),
    B("lazyfree-lazy-user-flush", True),
    N("lfu-decay-time", 1, 0, 2147483647, apply=_apply_policy),
    N("lfu-log-factor", 10, 0, 2147483647, apply=_apply_policy),
    N("list-compress-depth", 0, 0, 2147483647, apply=_apply_limits),
    N("list-max-listpack-size", -2, -2147483648, 2147483647, aliases=("list-max-ziplist-size",),
      apply=_apply_limits),
    E("log-format", "legacy", ("legacy", "logfmt", "json")),
    E("log-timestamp-format", "legacy", ("legacy", "iso8601", "milliseconds")),
    E("loglevel", "notice", ("debug", "verbose", "notice", "warning", "nothing"), apply=_apply_loglevel),
    N("max-new-connections-per-cycle", 10, 1, 1000),
    N("max-new-tls-connections-per-cycle", 1, 1, 1000),
    N("maxclients", 10000, 1, 4294967295),
    M("maxmemory", 0, 0, 18446744073709551615, apply=_apply_maxmemory),
    N("maxmemory-eviction-tenacity", 10, 0, 100),
    E("maxmemory-policy", "noeviction", ("volatile-lru", "volatile-lfu", "volatile-random", "volatile-ttl",
                                         "allkeys-lru", "allkeys-lfu", "allkeys-random", "noeviction"),
      apply=_apply_policy),
    N("maxmemory-samples", 5, 1, 64),
    N("min-replicas-max-lag", 10, 0, 2147483647, aliases=("min-slaves-max-lag",), apply=_apply_min_replicas),
    N("min-replicas-to-write", 0, 0, 2147483647, aliases=("min-slaves-to-write",), apply=_apply_min_replicas),
    B("no-appendfsync-on-rewrite", False),
    E("oom-score-adj", "no", ("no", "yes", "relative", "absolute"), synonyms={"relative": "yes"}, apply=_apply_oom),
    N("port", 6379, 0, 65535, apply=_apply_port),
    N("prefetch-batch-max-size", 16, 0, 128),
    S("primaryauth", "", aliases=("masterauth",), sensitive=True),
    S("primaryuser", "", aliases=("masteruser",), sensitive=True),
    S("proc-title-template", "{title} {listen-addr} {server-mode}", check=_proc_title),
    E("propagation-error-behavior", "ignore", ("ignore", "panic", "panic-on-replicas")),
    B("protected-mode", True),
    M("proto-max-bulk-len", 536870912, 1048576, 9223372036854775807, apply=_apply_proto_max_bulk_len),
    B("rdb-del-sync-files", False),
    B("rdb-save-incremental-fsync", True),
    E("rdb-version-check", "strict", ("strict", "relaxed")),
    B("rdbcompression", True),
    N("rdma-port", 0, 0, 65535, check=_no_rdma_port),
    M("repl-backlog-size", 10485760, 1, 9223372036854775807),
    N("repl-backlog-ttl", 3600, 0, 9223372036854775807),
    B("repl-disable-tcp-nodelay", False),
    E("repl-diskless-load", "disabled", ("disabled", "on-empty-db", "swapdb", "flush-before-load")),
    B("repl-diskless-sync", True),
    N("repl-diskless-sync-delay", 5, 0, 2147483647),
    N("repl-diskless-sync-max-replicas", 0, 0, 2147483647),
    N("repl-ping-replica-period", 10, 1, 2147483647, aliases=("repl-ping-slave-period",)),
    N("repl-timeout", 60, 1, 2147483647),
    S("replica-announce-ip", "", aliases=("slave-announce-ip",)),
    N("replica-announce-port", 0, 0, 65535, aliases=("slave-announce-port",)),
    B("replica-announced", True),
    B("replica-ignore-disk-write-errors", False),
    B("replica-ignore-maxmemory", True, aliases=("slave-ignore-maxmemory",)),
    B("replica-lazy-flush", True, aliases=("slave-lazy-flush",)),
    N("replica-priority", 100, 0, 2147483647, aliases=("slave-priority",)),
    B("replica-read-only", True, aliases=("slave-read-only",)),
    B("replica-serve-stale-data", True, aliases=("slave-serve-stale-data",)),
    S("requirepass", "", sensitive=True, apply=_apply_requirepass),
    N("set-max-intset-entries", 512, 0, 9223372036854775807),
    N("set-max-listpack-entries", 128, 0, 9223372036854775807, apply=_apply_limits),
    N("set-max-listpack-value", 64, 0, 9223372036854775807, apply=_apply_limits),
    E("shutdown-on-sigint", "default", _SHUTDOWN_FLAGS, multi=True, check=_shutdown_flags),
    E("shutdown-on-sigterm", "default", _SHUTDOWN_FLAGS, multi=True, check=_shutdown_flags),
    N("shutdown-timeout", 10, 0, 2147483647),
    M("slot-migration-max-failover-repl-bytes", 0, -1, 9223372036854775807),
    B("stop-writes-on-bgsave-error", True, apply=_apply_disk_error),
    M("stream-node-max-bytes", 4096, 0, 9223372036854775807, apply=_apply_limits),
    N("stream-node-max-entries", 100, 0, 9223372036854775807, apply=_apply_limits),
    N("tcp-keepalive", 300, 0, 2147483647),
    N("timeout", 0, 0, 2147483647),
    E("tls-auth-clients", "yes", ("no", "yes", "optional")),
    E("tls-auth-clients-user", "off", ("CN", "URI", "off")),
    N("tls-auto-reload-interval", 0, 0, 2147483647),
    S("tls-ca-cert-dir", "", apply=_apply_tls),
    S("tls-ca-cert-file", "", apply=_apply_tls),
    S("tls-cert-file", "", apply=_apply_tls),
    S("tls-ciphers", "", apply=_apply_tls),
    S("tls-ciphersuites", "", apply=_apply_tls),
    S("tls-client-cert-file", "", apply=_apply_tls),
    S("tls-client-key-file", "", apply=_apply_tls),
    S("tls-client-key-file-pass", "", sensitive=True, apply=_apply_tls),
    B("tls-cluster", False, apply=_apply_tls),
    S("tls-dh-params-file", "", apply=_apply_tls),
    S("tls-key-file", "", apply=_apply_tls),
    S("tls-key-file-pass", "", sensitive=True, apply=_apply_tls),
    N("tls-port", 0, 0, 65535, apply=_apply_tls_port),
    B("tls-prefer-server-ciphers", False, apply=_apply_tls),
    S("tls-protocols", "", apply=_apply_tls),
    B("tls-replication", False, apply=_apply_tls),
    N("tls-session-cache-size", 20480, 0, 2147483647, apply=_apply_tls),
    N("tls-session-cache-timeout", 300, 0, 2147483647, apply=_apply_tls),
    B("tls-session-caching", True, apply=_apply_tls),
    N("tracking-table-max-keys", 1000000, 0, 9223372036854775807),
    N("zset-max-listpack-entries", 128, 0, 9223372036854775807, aliases=("zset-max-ziplist-entries",),
      apply=_apply_limits),
    M("zset-max-listpack-value", 64, 0, 9223372036854775807, aliases=("zset-max-ziplist-value",),
      apply=_apply_limits),
    # Options Valkey refuses to change while running.
    S("aclfile", "", mutable=False),
    B("always-show-logo", False, mutable=False),
    S("aof-rewrite-cpulist", "", mutable=False, aliases=("aof_rewrite_cpulist",)),
    S("appenddirname", "appendonlydir", mutable=False, check=_filename("appenddirname")),
    S("appendfilename", "appendonly.aof", mutable=False, check=_filename("appendfilename")),
    S("bgsave-cpulist", "", mutable=False, aliases=("bgsave_cpulist",)),
    S("bio-cpulist", "", mutable=False, aliases=("bio_cpulist",)),
    S("cluster-config-file", "nodes.conf", mutable=False),
    N("cluster-databases", 1, 1, INT_MAX, mutable=False),
    B("cluster-enabled", False, mutable=False),
    N("cluster-port", 0, 0, 65535, mutable=False),
    B("daemonize", False, mutable=False),
    N("databases", 16, 1, INT_MAX, mutable=False),
    B("disable-thp", True, mutable=False),
    E("enable-debug-command", "no", ("no", "yes", "local"), mutable=False),
    E("enable-module-command", "no", ("no", "yes", "local"), mutable=False),
    E("enable-protected-configs", "no", ("no", "yes", "local"), mutable=False),
    S("hash-seed", "", mutable=False),
    S("logfile", "", mutable=False),
    B("mptcp", False, mutable=False),
    S("pidfile", "", mutable=False),
    B("rdbchecksum", True, mutable=False),
    N("rdma-completion-vector", -1, -1, 1024, mutable=False),
    N("rdma-rx-size", 1048576, 65536, 16777216, mutable=False),
    B("repl-mptcp", False, mutable=False),
    X("replicaof", "", _replicaof, mutable=False, aliases=("slaveof",)),
    S("server-cpulist", "", mutable=False, aliases=("server_cpulist",)),
    B("set-proc-title", True, mutable=False),
    N("socket-mark-id", 0, 0, 2**32 - 1, mutable=False),
    E("supervised", "no", ("upstart", "systemd", "auto", "no"), mutable=False),
    B("syslog-enabled", False, mutable=False),
    E("syslog-facility", "local0", ("user", "local0", "local1", "local2", "local3", "local4", "local5",
                                    "local6", "local7"), mutable=False),
    S("syslog-ident", "valkey", mutable=False),
    N("tcp-backlog", 511, 0, INT_MAX, mutable=False),
    S("unixsocket", "", mutable=False),
    S("unixsocketgroup", "", mutable=False),
    Option("unixsocketperm", "octal", 0, mutable=False, low=0, high=0o777),
    # Valkey rebinds on CONFIG SET bind; this server keeps its listeners.
    X("bind", "* -::*", _bind, apply=_apply_bind),
    # Options with their own syntax or checks.
    X("save", "3600 1 300 100 60 10000", _save, apply=_apply_disk_error),
    X("client-output-buffer-limit", "normal 0 0 0 slave 268435456 67108864 60 pubsub 33554432 8388608 60",
      _obuf_limits, apply=_apply_obuf),
    X("oom-score-adj-values", "0 200 800", _oom_values, apply=_apply_oom),
    X("notify-keyspace-events", 0, _keyspace_events, shower=notify.flags_text, apply=_apply_keyspace_events),
    X("latency-tracking-info-percentiles", "50 99 99.9", _percentiles),
    X("dir", "", _dir, protected=True),
    S("dbfilename", "dump.rdb", protected=True, check=_filename("dbfilename")),
    M("maxmemory-clients", 0, -100, INT64_MAX, percent=True, apply=_apply_maxmemory_clients),
    S("cluster-announce-client-ipv4", "", check=_ip_check(socket.AF_INET, "IPv4")),
    S("cluster-announce-client-ipv6", "", check=_ip_check(socket.AF_INET6, "IPv6")),
    S("locale-collate", "", check=_locale),
    X("rdma-bind", "", _no_rdma),
    # Hidden options: CONFIG GET finds them by exact name only.
    B("use-exit-on-panic", False, hidden=True),
    N("watchdog-period", 0, 0, INT_MAX, hidden=True),
    N("key-load-delay", 0, INT_MIN, INT_MAX, hidden=True),
    N("rdb-key-save-delay", 0, INT_MIN, INT_MAX, hidden=True),
    N("loading-process-events-interval-bytes", 2097152, 1024, INT_MAX, hidden=True),
    N("cluster-ping-interval", 0, 0, INT64_MAX, hidden=True),
    B("enable-debug-assert", False, mutable=False, hidden=True),
    S("debug-context", "", hidden=True),
    B("aof-disable-auto-gc", False, hidden=True, apply=_apply_auto_gc),
    B("lua-enable-insecure-api", False, protected=True, hidden=True),
    # This server's own options (not Valkey's).
    S("emq-brand", "echomq:6.0.0", mutable=False),
    B("enable-clock-command", False, mutable=False),
    B("enable-fault-command", False, mutable=False),
    B("cluster-slot-checks", False, apply=_apply_slot_checks),
    X("seed", "", _seed, apply=_apply_seed),
    ]


@dataclass
class Config:
    options: dict[str, Option] = field(default_factory=dict)
    values: dict[str, Any] = field(default_factory=dict)
    file: str = ""  # the config file the server started with, absolute (CONFIG REWRITE, INFO)
    given: bool = False  # started with a file or options, not on the defaults alone (the start-up log)
    # The ``user`` directives, [name, rule, ...] each, for the ACL at start-up.
    users: list[list[bytes]] = field(default_factory=list)

    def __post_init__(self) -> None:
        if not self.options:
            for opt in _options():
                self.options[opt.name] = opt
                for a in opt.aliases:
                    self.options[a] = opt
        for opt in self.options.values():
            self.values.setdefault(opt.name, opt.default)
        if self.values.get("dir") == "":
            self.values["dir"] = os.getcwd()

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
        self.values[opt.name] = opt.parse(text, self.values.get(opt.name))

    def show(self, name: str) -> str:
        opt = self.options[name]
        return opt.show(self.values[opt.name])

    def names(self) -> Iterable[tuple[str, Option]]:
        """Every name CONFIG GET * lists: options and aliases, not hidden ones."""
        return ((n, o) for n, o in self.options.items() if not o.hidden)

    def get_matching(self, patterns: Iterable[str]) -> list[tuple[str, str]]:
        out: dict[str, str] = {}
        for pat in patterns:
            pat = pat.lower()
            for name, opt in self.names():
                if name in out:
                    continue
                if fnmatch.fnmatchcase(name, pat):
                    out[name] = opt.show(self.values[opt.name])
        return list(out.items())


# Valkey's MULTI_ARG_CONFIG options: given as one non-empty word in a config
# file or on the command line, the word is split again as a config line is,
# so ``--save "60 100"`` and a literal ``--save "''"`` read as ``60 100`` and
# as an empty value.
_MULTI_ARG = frozenset(("save", "client-output-buffer-limit", "oom-score-adj-values", "bind", "replicaof",
                        "slaveof", "latency-tracking-info-percentiles", "shutdown-on-sigint", "shutdown-on-sigterm"))


def _directive_text(name: str, words: list[str]) -> str:
    if len(words) == 1 and words[0] and name.lower() in _MULTI_ARG:
        again = split_args(words[0])
        if again is not None:
            words = again
    return " ".join(words)


def command_line_text(args: list[str]) -> str:
    """valkey-server's options string: each ``--name`` begins a config line,
    the arguments after it are appended quoted (``--port 6379 6380`` is the
    line ``port "6379" "6380"``), an argument holding a name and its value
    (``"--maxmemory 700mb"``) is a line by itself, and one before any name is
    appended as a word. ``--save`` with no value before another name, or
    last, is ``save ""``. The text is then read as a config file's is."""
    out = ""
    handled = True  # the last name has a value: a "--word" now starts a line
    for j, a in enumerate(args):
        if handled and a.startswith("--"):
            if out:
                out += "\n"
            out += a[2:] + " "
            if len(split_args(a) or []) == 1:
                handled = False
                last = j == len(args) - 1
                if a.lower() == "--save" and (last or args[j + 1].startswith("--")):
                    out += '""'
                    handled = not last
            else:
                handled = True
        else:
            out += quote(a) + " "
            handled = True
    return out


def parse_args(argv: list[str], config: Config | None = None) -> Config:
    """valkey-server's command line: ``[configfile] [-] [--name value ...]``.

    As valkey-server: the file's text, then standard input's (``-`` first
    or last), then the options string (command_line_text), read as one
    config text, so the command line wins and errors name the line."""
    config = config or Config()
    args = list(argv)
    config.given = bool(args)
    text = ""
    if args and not args[0].startswith("-"):
        config.file = os.path.abspath(args[0])
        with open(args.pop(0), encoding="utf-8", errors="surrogateescape") as f:
            text = f.read()
    if args and args[0] == "-":
        args.pop(0)
        text += sys.stdin.read()
    elif args and args[-1] == "-":
        args.pop()
        text += sys.stdin.read()
    options = command_line_text(args)
    if options:
        text += "\n" + options
    load_text(config, text)
    return config


def add_user(config: Config, words: list[str]) -> None:
    """A ``user <name> <rules...>`` directive, kept for the ACL at start-up
    (services/acl.py); a name declared twice is refused as Valkey refuses it."""
    name = words[0].encode("utf-8", "surrogateescape")
    if any(u[0] == name for u in config.users):
        raise ConfigError(f"Error in user declaration '{words[0]}': Duplicate user found. A user can only be "
                          "defined once in config files")
    config.users.append([w.encode("utf-8", "surrogateescape") for w in words])


def load_text(config: Config, text: str) -> None:
    """A config text, line by line, as Valkey's loadServerConfigFromString
    reads it: a name and its value (exactly one, but for the options that
    take several), and on the first bad line Valkey's report of it. The
    first ``save`` line replaces the default rules and later ones add to
    them (``save ""`` clears them), as Valkey's setConfigSaveOption does."""
    saved = False
    for lineno, raw in enumerate(text.split("\n"), 1):
        line = raw.strip(" \t\r\n")
        if not line or line.startswith("#"):
            continue
        try:
            words = split_args(line)
            if words is None:
                raise ConfigError("Unbalanced quotes in configuration line")
            if not words:
                continue
            name, rest = words[0], words[1:]
            if name.lower() == "user" and rest:
                add_user(config, rest)
                continue
            if config.option(name) is None:
                raise ConfigError("Bad directive or wrong number of arguments")
            if len(rest) != 1 and name.lower() not in _MULTI_ARG:
                raise ConfigError("wrong number of arguments")
            value = _directive_text(name, rest)
            if name.lower() == "save":
                prior = config.values["save"] if saved else ""
                saved = True
                if value and prior:
                    config.set_text(name, value)  # each line checked alone, as Valkey checks it
                    value = f"{prior} {value}"
            config.set_text(name, value)
        except ConfigError as e:
            raise ConfigError(f"Reading the configuration file, at line {lineno}\n>>> '{line}'\n{e}") from None

"""INFO: the server's state as Valkey lays it out, section by section.

Only fields this server can fill truthfully are shown, under Valkey's
section names and field names, in Valkey's order; a client that parses
``field:value`` lines finds the ones it knows (redis_version, run_id,
connected_clients, used_memory, keyspace lines, commandstats ...).
"""

from __future__ import annotations

import os
import platform
import resource
import sys
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .server import Server

DEFAULT = ("server", "clients", "memory", "persistence", "stats", "replication", "cpu", "modules",
           "errorstats", "cluster", "keyspace")
ALL = ("server", "tls", *DEFAULT[1:8], "commandstats", "errorstats", "latencystats", "cluster", "keyspace")
TITLES = {"cpu": "CPU", "tls": "TLS"}


def _rss() -> int:
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except OSError:  # pragma: no cover - not Linux
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def _server(s: Server) -> list[tuple[str, object]]:
    from .server import REDIS_COMPAT_VERSION, VALKEY_VERSION

    up = int(time.monotonic() - s.started_mono)
    return [
        ("redis_version", REDIS_COMPAT_VERSION), ("server_name", "valkey"), ("valkey_version", VALKEY_VERSION),
        ("valkey_release_stage", "ga"), ("server_mode", "standalone"),
        ("os", f"{platform.system()} {platform.release()} {platform.machine()}"),
        ("arch_bits", 64 if sys.maxsize > 2**32 else 32), ("multiplexing_api", "epoll"),
        ("process_id", s.pid), ("process_supervised", "no"), ("run_id", s.run_id),
        ("tcp_port", s.ports[0] if s.ports else s.config.port), ("server_time_usec", s.clock.us()),
        ("uptime_in_seconds", up), ("uptime_in_days", up // 86400), ("hz", s.config.hz),
        ("configured_hz", s.config.hz), ("executable", sys.argv[0]), ("config_file", ""),
        ("trafikey_version", s.version),
    ]


def _clients(s: Server) -> list[tuple[str, object]]:
    return [("connected_clients", len(s.clients)), ("blocked_clients", 0), ("tracking_clients", 0),
            ("watching_clients", sum(1 for c in s.clients.values() if c.watched))]


def _memory(s: Server) -> list[tuple[str, object]]:
    rss = _rss()
    return [("used_memory", rss), ("used_memory_human", f"{rss / 1048576:.2f}M"), ("used_memory_rss", rss),
            ("maxmemory", s.config.values.get("maxmemory", 0)),
            ("maxmemory_policy", s.config.values.get("maxmemory-policy", "noeviction"))]


def _persistence(s: Server) -> list[tuple[str, object]]:
    return [("loading", 0), ("rdb_changes_since_last_save", 0), ("rdb_bgsave_in_progress", 0),
            ("rdb_last_save_time", int(s.started_at)), ("aof_enabled", 0), ("aof_rewrite_in_progress", 0)]


def _stats(s: Server) -> list[tuple[str, object]]:
    total = sum(cmd.calls for cmd in s.table.everything())
    return [("total_connections_received", s.total_connections), ("total_commands_processed", total),
            ("expired_keys", s.expired_keys), ("total_error_replies", s.total_error_replies)]


def _replication(s: Server) -> list[tuple[str, object]]:
    return [("role", "master"), ("connected_slaves", 0), ("master_repl_offset", 0)]


def _cpu(s: Server) -> list[tuple[str, object]]:
    ru = resource.getrusage(resource.RUSAGE_SELF)
    return [("used_cpu_sys", f"{ru.ru_stime:.6f}"), ("used_cpu_user", f"{ru.ru_utime:.6f}")]


def _modules(s: Server) -> list[tuple[str, object]]:
    return []


def _commandstats(s: Server) -> list[tuple[str, object]]:
    out: list[tuple[str, object]] = []
    for cmd in s.table.everything():
        if cmd.calls or cmd.rejected_calls or cmd.failed_calls:
            per = cmd.usec / cmd.calls if cmd.calls else 0.0
            out.append((f"cmdstat_{cmd.name}", f"calls={cmd.calls},usec={cmd.usec},usec_per_call={per:.2f},"
                        f"rejected_calls={cmd.rejected_calls},failed_calls={cmd.failed_calls}"))
    return out


def _errorstats(s: Server) -> list[tuple[str, object]]:
    return [(f"errorstat_{code.decode(errors='replace')}", f"count={n}") for code, n in s.error_stats.items()]


def _cluster(s: Server) -> list[tuple[str, object]]:
    return [("cluster_enabled", 0)]


def _keyspace(s: Server) -> list[tuple[str, object]]:
    return [(f"db{db.id}", f"keys={len(db)},expires={len(db.expires)},avg_ttl=0,keys_with_volatile_items=0")
            for db in s.dbs if len(db)]


def _tls(s: Server) -> list[tuple[str, object]]:
    # No TLS listener: the certificate fields read as Valkey's do without one.
    return [(f"tls_{who}_cert_{what}", val) for who in ("server", "client", "ca")
            for what, val in (("serial", "none"), ("expires_in_seconds", 0))]


def _latencystats(s: Server) -> list[tuple[str, object]]:
    return []


SECTIONS: dict[str, Callable[[Server], list[tuple[str, object]]]] = {
    "server": _server, "tls": _tls, "latencystats": _latencystats, "clients": _clients, "memory": _memory,
    "persistence": _persistence,
    "stats": _stats, "replication": _replication, "cpu": _cpu, "modules": _modules,
    "commandstats": _commandstats, "errorstats": _errorstats, "cluster": _cluster, "keyspace": _keyspace,
}


def render(s: Server, names: list[str]) -> str:
    """The INFO text for the requested section names (Valkey's keywords too)."""
    wanted: list[str] = []
    for n in names or ["default"]:
        n = n.lower()
        group = {"default": DEFAULT, "all": ALL, "everything": ALL}.get(n, (n,))
        for g in group:
            if g in SECTIONS and g not in wanted:
                wanted.append(g)
    order = [g for g in ALL if g in wanted]
    parts = []
    for name in order:
        title = TITLES.get(name, name.capitalize())
        lines = [f"# {title}"] + [f"{k}:{v}" for k, v in SECTIONS[name](s)]
        parts.append("\r\n".join(lines) + "\r\n")
    return "\r\n".join(parts)

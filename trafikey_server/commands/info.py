"""INFO: the server's state in Valkey's layout, section by section.

Every section and field Valkey 9.1 reports is here, in Valkey's order and
under Valkey's names, so a client or dashboard that parses ``field:value``
lines finds each field it knows. Values are this server's: counters it
keeps (commands, errors, connections, expired keys), its process facts
(pid, port, uptime, CPU, resident memory read from ``/proc/self/statm``) and,
for machinery it does not have (replication, persistence, forks, defrag,
scripting), the values Valkey reports when that machinery is idle.
"""

from __future__ import annotations

import hashlib
import os
import platform
import resource
import struct
import sys
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from ..execution.persist.commands import aof_fields, aof_size_fields
from ..services.acl import DENIED_AUTH, DENIED_CHANNEL, DENIED_CMD, DENIED_KEY
from ..services.memory import BASE
from ..services.metrics import COMMAND, EL_CYCLE, EL_DURATION, NET_INPUT, NET_OUTPUT
from ..util import latency as hdr
from ..util.memory import PAGE as _PAGE
from ..util.memory import rss as _rss
from ..util.versions import REDIS_COMPAT_VERSION, VALKEY_VERSION

if TYPE_CHECKING:
    from ..server import Server

Fields = list[tuple[str, object]]

DEFAULT = ("server", "clients", "memory", "persistence", "stats", "replication", "cpu", "modules",
           "errorstats", "cluster", "keyspace", "faults")
# Valkey's order for everything; a request lists sections in any order.
# ``faults`` is this server's own, after Valkey's, where a module's sections
# go; only a server started with --enable-fault-command yes shows it.
ORDER = ("server", "tls", "clients", "memory", "persistence", "stats", "replication", "cpu", "modules",
         "commandstats", "errorstats", "latencystats", "cluster", "cluster_info", "scriptingengines",
         "keyspace", "faults", "debug")
ALL = tuple(s for s in ORDER if s != "debug")
TITLES = {"cpu": "CPU", "tls": "TLS", "cluster_info": "Cluster Info", "scriptingengines": "Scripting Engines"}



def human(n: int) -> str:
    """Valkey's bytesToHuman: B, then K/M/G/T/P with two decimals."""
    if n < 1024:
        return f"{n}B"
    for i, unit in enumerate("KMGTP", 1):
        if n < 1024 ** (i + 1):
            return f"{n / 1024 ** i:.2f}{unit}"
    return f"{n}B"


def _f32(x: float) -> float:
    return float(struct.unpack("f", struct.pack("f", x))[0])


def _server(s: Server) -> Fields:
    cfg = s.config
    up = int(time.monotonic() - s.started_mono)
    port = s.ports[0] if s.ports else cfg.port
    binds = ",".join(f"bind={b}" for b in (cfg.bind.split() or ["127.0.0.1"]))
    return [
        ("redis_version", REDIS_COMPAT_VERSION), ("server_name", "valkey"), ("valkey_version", VALKEY_VERSION),
        ("valkey_release_stage", "ga"), ("redis_git_sha1", "00000000"), ("redis_git_dirty", 0),
        ("redis_build_id", hashlib.sha1(s.version.encode()).hexdigest()[:16]), (
            "redis_mode" if cfg.values["extended-redis-compatibility"] else "server_mode", "standalone"),
        ("os", f"{platform.system()} {platform.release()} {platform.machine()}"),
        ("arch_bits", 64 if sys.maxsize > 2**32 else 32), ("monotonic_clock", "POSIX clock_gettime"),
        ("multiplexing_api", "epoll" if sys.platform.startswith("linux") else "kqueue"),
        ("gcc_version", "0.0.0"), ("process_id", s.pid), ("process_supervised", "no"), ("run_id", s.run_id),
        ("tcp_port", port), ("server_time_usec", s.clock.us()), ("uptime_in_seconds", up),
        ("uptime_in_days", up // 86400), ("hz", cfg.hz), ("configured_hz", cfg.hz), ("clients_hz", cfg.hz),
        ("lru_clock", (s.clock.ms() // 1000) & (2**24 - 1)), ("executable", os.path.abspath(sys.argv[0])),
        ("config_file", cfg.file), ("io_threads_active", 0), ("availability_zone", cfg.values["availability-zone"]),
        *_listeners(s, binds, port),
    ]


def _listeners(s: Server, binds: str, port: int) -> Fields:
    """Valkey's getListensInfoString: one line per listener kind in use
    since start-up, numbered by its connection type (tcp 0, unix 1, tls 2);
    a kind closed by CONFIG SET of its port to 0 keeps its bare name."""
    open_ = {lst.kind: lst for lst in s.listeners}
    out: Fields = []
    for i, kind in enumerate(("tcp", "unix", "tls")):
        if kind not in s.listener_kinds:
            continue
        lst = open_.get(kind)
        if lst is None:
            out.append((f"listener{i}", f"name={kind}"))
        elif kind == "unix":
            out.append((f"listener{i}", f"name=unix,bind={lst.host}"))
        else:
            out.append((f"listener{i}", f"name={kind},{binds},port={port if kind == 'tcp' else lst.port}"))
    return out


def _tls(s: Server) -> Fields:
    # Without TLS the certificate fields read as Valkey's do without one.
    return s.tls.info()


def _clients(s: Server) -> Fields:
    watching = sum(1 for c in s.clients.values() if c.watched)
    watched_keys = sum(len(db.watchers) for db in s.dbs)
    b = s.blocking
    return [
        ("connected_clients", len(s.clients)), ("cluster_connections", 0),
        ("maxclients", s.config.values["maxclients"]), ("client_recent_max_input_buffer", 0),
        ("client_recent_max_output_buffer", 0), ("blocked_clients", len(s.pause.waiting) + len(b.clients)),
        ("tracking_clients", s.tracking.clients),
        ("pubsub_clients", s.pubsub.clients), ("watching_clients", watching),
        ("clients_in_timeout_table", b.in_timeout_table()),
        ("total_watched_keys", watched_keys), ("total_blocking_keys", b.blocking_keys()),
        ("total_blocking_keys_on_nokey", b.blocking_keys_on_nokey()),
        *_paused(s),
    ]


def _paused(s: Server) -> Fields:
    """CLIENT PAUSE's state (pause.py), as Valkey reports it."""
    p = s.pause
    if not p.end:
        return [("paused_reason", "none"), ("paused_actions", "none"), ("paused_timeout_milliseconds", 0)]
    left = max(int((p.end - time.monotonic()) * 1000), 0)
    return [("paused_reason", "client_pause"), ("paused_actions", "all" if p.all else "write"),
            ("paused_timeout_milliseconds", left)]


def _memory(s: Server) -> Fields:
    rss = _rss()
    mem = s.memory
    dataset = mem.dataset()
    overhead = mem.overhead()
    used = overhead + dataset  # the figure maxmemory is checked against (memory.py)
    peak = max(mem.peak, used)
    maxmemory = s.config.values["maxmemory"]
    startup = BASE
    net = used - startup
    total = os.sysconf("SC_PHYS_PAGES") * _PAGE if hasattr(os, "sysconf") else 0
    zeros = [(k, 0) for k in ("used_memory_lua", "used_memory_vm_eval")]
    return [
        ("used_memory", used), ("used_memory_human", human(used)), ("used_memory_rss", rss),
        ("used_memory_rss_human", human(rss)), ("used_memory_peak", peak), ("used_memory_peak_human", human(peak)),
        ("used_memory_peak_perc", f"{100 * used / peak:.2f}%"), ("used_memory_overhead", overhead),
        ("used_memory_startup", startup), ("used_memory_dataset", dataset),
        ("used_memory_dataset_perc", f"{100 * dataset / net:.2f}%" if net > 0 else "0.00%"),
        ("allocator_allocated", used), ("allocator_active", rss), ("allocator_resident", rss),
        ("allocator_muzzy", 0), ("total_system_memory", total), ("total_system_memory_human", human(total)),
        *zeros, ("used_memory_lua_human", "0B"), ("used_memory_scripts_eval", 0),
        ("number_of_cached_scripts", len(s.scripting.scripts)),
        ("number_of_functions", len(s.scripting.libraries.functions)),
        ("number_of_libraries", len(s.scripting.libraries.libraries)), ("used_memory_vm_functions", 0),
        ("used_memory_vm_total", 0), ("used_memory_vm_total_human", "0B"), ("used_memory_functions", 0),
        ("used_memory_scripts", 0), ("used_memory_scripts_human", "0B"), ("maxmemory", maxmemory),
        ("maxmemory_human", human(maxmemory)), ("maxmemory_policy", s.config.values["maxmemory-policy"]),
        ("allocator_frag_ratio", "1.00"), ("allocator_frag_bytes", 0), ("allocator_rss_ratio", "1.00"),
        ("allocator_rss_bytes", 0), ("rss_overhead_ratio", "1.00"), ("rss_overhead_bytes", 0),
        ("mem_fragmentation_ratio", f"{rss / used:.2f}"), ("mem_fragmentation_bytes", rss - used),
        ("mem_not_counted_for_evict", 0),
        ("mem_replication_backlog", 0), ("mem_total_replication_buffers", 0), ("mem_replicas_repl_buffer", 0),
        ("mem_clients_slaves", 0), ("mem_clients_normal", s.client_memory.total), ("mem_cluster_links", 0),
        ("mem_cluster_slot_import", 0), ("mem_cluster_slot_export", 0), ("mem_aof_buffer", 0),
        ("mem_allocator", "libc"), ("mem_overhead_db_hashtable_rehashing", 0), ("active_defrag_running", 0),
        ("lazyfree_pending_objects", 0), ("lazyfreed_objects", 0),
    ]


def _persistence(s: Server) -> Fields:
    snap = s.snapshots
    now = time.time()
    return [
        ("loading", int(s.loading)), ("async_loading", 0), ("current_cow_peak", 0), ("current_cow_size", 0),
        ("current_cow_size_age", 0), ("current_fork_perc", "0.00"), ("current_save_keys_processed", 0),
        ("current_save_keys_total", 0), ("rdb_changes_since_last_save", snap.changes()),
        ("rdb_bgsave_in_progress", 1 if snap.child_pid else 0),
        ("rdb_last_save_time", snap.lastsave), ("rdb_last_bgsave_status", "ok" if snap.last_bgsave_ok else "err"),
        ("rdb_last_bgsave_time_sec", snap.last_bgsave_secs),
        ("rdb_current_bgsave_time_sec", int(now - snap.child_started) if snap.child_pid else -1),
        ("rdb_saves", snap.saves), ("rdb_last_cow_size", 0),
        ("rdb_last_load_keys_expired", snap.keys_expired), ("rdb_last_load_keys_loaded", snap.keys_loaded),
        *aof_fields(s), ("module_fork_in_progress", 0),
        ("module_fork_last_cow_size", 0), ("slot_migration_fork_in_progress", 0),
        *aof_size_fields(s), *s.load_state.info(),
    ]


def _zeros(*names: str) -> Fields:
    return [(n, 0) for n in names]


def _stats(s: Server) -> Fields:
    total = s.commands_processed()
    usec = sum(cmd.usec for cmd in s.table.everything())
    net_in, net_out = s.net_bytes()
    denied = s.acl.log.denied
    m = s.metrics
    return [
        ("total_connections_received", s.total_connections), ("total_commands_processed", total),
        ("instantaneous_ops_per_sec", m.instantaneous(COMMAND)), ("total_net_input_bytes", net_in),
        ("total_net_output_bytes", net_out),
        *_zeros("total_net_repl_input_bytes", "total_net_repl_output_bytes", "total_net_cluster_slot_import_bytes",
                "total_net_cluster_slot_export_bytes"),
        ("instantaneous_input_kbps", f"{m.instantaneous(NET_INPUT) / 1024:.2f}"),
        ("instantaneous_output_kbps", f"{m.instantaneous(NET_OUTPUT) / 1024:.2f}"),
        ("instantaneous_input_repl_kbps", "0.00"), ("instantaneous_output_repl_kbps", "0.00"),
        ("rejected_connections", s.rejected_connections),
        *_zeros("sync_full", "sync_partial_ok", "sync_partial_err"),
        ("expired_keys", s.expired_keys), ("expired_fields", s.expired_fields), ("expired_stale_perc", "0.00"),
        ("expired_keys_with_volatile_items_stale_perc", "0.00"),
        *_zeros("expired_time_cap_reached_count", "expire_cycle_cpu_milliseconds"),
        ("evicted_keys", s.memory.evicted_keys), ("evicted_clients", s.client_memory.evicted),
        ("evicted_scripts", s.scripting.evicted),
        *zip(("total_eviction_exceeded_time", "current_eviction_exceeded_time"),
             (us // 1000 for us in s.memory.exceeded_us()), strict=True),
        ("keyspace_hits", getattr(s, "keyspace_hits", 0)), ("keyspace_misses", getattr(s, "keyspace_misses", 0)),
        ("pubsub_channels", len(s.pubsub.channels)), ("pubsub_patterns", len(s.pubsub.patterns)),
        ("pubsubshard_channels", len(s.pubsub.shard_channels)),
        ("latest_fork_usec", s.latest_fork_usec), ("total_forks", s.total_forks),
        *_zeros("migrate_cached_sockets", "slave_expires_tracked_keys", "active_defrag_hits",
                "active_defrag_misses", "active_defrag_key_hits", "active_defrag_key_misses",
                "total_active_defrag_time", "current_active_defrag_time"),
        ("tracking_total_keys", len(s.tracking.table)), ("tracking_total_items", s.tracking.items),
        ("tracking_total_prefixes", len(s.tracking.prefixes)), ("unexpected_error_replies", 0),
        ("total_error_replies", s.total_error_replies),
        *_zeros("dump_payload_sanitizations", "total_reads_processed", "total_writes_processed",
                "io_threaded_reads_processed", "io_threaded_writes_processed", "io_threaded_freed_objects",
                "io_threaded_accept_processed", "io_threaded_poll_processed", "io_threaded_total_prefetch_batches",
                "io_threaded_total_prefetch_entries"),
        ("client_query_buffer_limit_disconnections", s.qbuf_disconnections),
        ("client_output_buffer_limit_disconnections", s.obuf_disconnections),
        *_zeros("reply_buffer_shrinks", "reply_buffer_expands"),
        ("eventloop_cycles", m.cycles), ("eventloop_duration_sum", m.duration_sum),
        ("eventloop_duration_cmd_sum", usec),
        ("instantaneous_eventloop_cycles_per_sec", m.instantaneous(EL_CYCLE)),
        ("instantaneous_eventloop_duration_usec", m.instantaneous(EL_DURATION)),
        ("acl_access_denied_auth", denied[DENIED_AUTH]), ("acl_access_denied_cmd", denied[DENIED_CMD]),
        ("acl_access_denied_key", denied[DENIED_KEY]), ("acl_access_denied_channel", denied[DENIED_CHANNEL]),
        *_zeros("acl_access_denied_tls_cert", "acl_access_denied_db"),
    ]


def _replication(s: Server) -> Fields:
    return [
        ("role", "master"), ("connected_slaves", 0), ("replicas_waiting_psync", 0),
        ("master_failover_state", "no-failover"),
        # A replication ID of this process's own, stable for its lifetime.
        ("master_replid", s.replid), ("master_replid2", "0" * 40),
        ("master_repl_offset", 0), ("second_repl_offset", -1), ("repl_backlog_active", 0),
        ("repl_backlog_size", s.config.values["repl-backlog-size"]), ("repl_backlog_first_byte_offset", 0),
        ("repl_backlog_histlen", 0),
    ]


def _cpu(s: Server) -> Fields:
    me = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    who = getattr(resource, "RUSAGE_THREAD", resource.RUSAGE_SELF)
    main = resource.getrusage(who)
    active = sum(cmd.usec for cmd in s.table.everything()) / 1e6
    return [
        ("used_cpu_sys", f"{me.ru_stime:.6f}"), ("used_cpu_user", f"{me.ru_utime:.6f}"),
        ("used_cpu_sys_children", f"{kids.ru_stime:.6f}"), ("used_cpu_user_children", f"{kids.ru_utime:.6f}"),
        ("used_cpu_sys_main_thread", f"{main.ru_stime:.6f}"), ("used_cpu_user_main_thread", f"{main.ru_utime:.6f}"),
        ("used_active_time_main_thread", f"{active:.6f}"),
    ]


def _modules(s: Server) -> Fields:
    return []


def _commandstats(s: Server) -> Fields:
    out: Fields = []
    for cmd in s.table.everything():
        if cmd.calls or cmd.rejected_calls or cmd.failed_calls:
            # Valkey divides in single precision before printing two decimals.
            per = _f32(_f32(cmd.usec) / _f32(cmd.calls)) if cmd.calls else 0.0
            out.append((f"cmdstat_{cmd.name}", f"calls={cmd.calls},usec={cmd.usec},usec_per_call={per:.2f},"
                        f"rejected_calls={cmd.rejected_calls},failed_calls={cmd.failed_calls}"))
    return out


def _errorstats(s: Server) -> Fields:
    # Valkey keeps error codes in a radix tree: they come out sorted.
    return [(f"errorstat_{code.decode(errors='replace')}", f"count={n}")
            for code, n in sorted(s.error_stats.items())]


def _latencystats(s: Server) -> Fields:
    """Valkey's fillPercentileDistributionLatencies for each command with a
    histogram, at the latency-tracking-info-percentiles."""
    if not s.latency_tracking:
        return []
    wanted = [float(p) for p in s.config.values["latency-tracking-info-percentiles"].split()]
    names = [_trim_double(p) for p in wanted]
    out: Fields = []
    for cmd in s.table.everything():
        counts = cmd.latency_counts()
        if counts:
            out.append((f"latency_percentiles_usec_{cmd.name}", ",".join(
                f"p{name}={hdr.percentile(counts, p) / 1000:.3f}" for name, p in zip(names, wanted, strict=True))))
    return out


def _trim_double(p: float) -> str:
    """A percentile as Valkey names it: printed with %f, trailing zeros
    (and a bare point) trimmed."""
    text = f"{p:f}"
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return text


def _cluster(s: Server) -> Fields:
    return [("cluster_enabled", 0)]


def _cluster_info(s: Server) -> Fields:
    return []


def _engines(s: Server) -> Fields:
    return [("engines_count", 0), ("engines_total_used_memory", 0), ("engines_total_memory_overhead", 0)]


def _keyspace(s: Server) -> Fields:
    return [(f"db{db.id}", f"keys={len(db)},expires={len(db.expires)},avg_ttl=0,"
                             f"keys_with_volatile_items={db.count_volatile() if db.volatile else 0}")
            for db in s.dbs if len(db)]


def _faults(s: Server) -> Fields:
    """TRAFIKEY.FAULT's counters, in a section of their own rather than in
    ``stats``: a server without the command prints Valkey's sections
    exactly, and one with it keeps them apart the way a module's sections
    are, so a parser that knows Valkey's fields meets no stranger among
    them. ``fault_rules`` is the rules now, ``faults_fired`` every firing
    since start, then the firings per kind."""
    return s.faults.info()


def _debug(s: Server) -> Fields:
    m = s.metrics
    return [("eventloop_duration_aof_sum", m.aof_sum), ("eventloop_duration_cron_sum", m.cron_sum),
            ("eventloop_duration_max", m.duration_max), ("eventloop_cmd_per_cycle_max", m.cmds_per_cycle_max),
            *_zeros("io_threaded_reads_pending", "io_threaded_writes_pending")]


SECTIONS: dict[str, Callable[[Server], Fields]] = {
    "server": _server, "tls": _tls, "clients": _clients, "memory": _memory, "persistence": _persistence,
    "stats": _stats, "replication": _replication, "cpu": _cpu, "modules": _modules,
    "commandstats": _commandstats, "errorstats": _errorstats, "latencystats": _latencystats,
    "cluster": _cluster, "cluster_info": _cluster_info, "scriptingengines": _engines, "keyspace": _keyspace,
    "faults": _faults, "debug": _debug,
}
_GROUPS = {"default": DEFAULT, "all": ALL, "everything": ALL}


def sections(names: list[str]) -> list[str]:
    """The sections a request names, in Valkey's order; unknown names are ignored."""
    wanted: set[str] = set()
    for n in names or ["default"]:
        n = n.lower()
        wanted.update(_GROUPS.get(n, (n,)))
    return [name for name in ORDER if name in wanted]


def render(s: Server, names: list[str]) -> str:
    """The INFO text: each section is its title line and its field lines,
    and sections are separated by an empty line, as Valkey writes them."""
    parts = []
    for name in sections(names):
        if name == "faults" and not s.config.values.get("enable-fault-command"):
            continue
        title = TITLES.get(name, name.capitalize())
        lines = [f"# {title}\r\n"] + [f"{k}:{v}\r\n" for k, v in SECTIONS[name](s)]
        parts.append("".join(lines))
    return "\r\n".join(parts)

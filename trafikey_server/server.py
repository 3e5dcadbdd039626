"""The server process: listeners, databases, clients, the periodic sweep.

One ``Server`` owns everything shared between connections. Commands reach
it through ``client.server``; nothing in it runs per command except the
small counters that INFO reports.
"""

from __future__ import annotations

import asyncio
import errno
import hashlib
import os
import signal
import sys
import threading
import time
from collections.abc import Coroutine
from typing import TYPE_CHECKING, Final

from . import __version__
from .commands.client import info_line, log_info
from .crash import Crash
from .execution.named_snapshots import NamedSnapshots
from .execution.persist import commands as _persist_commands  # noqa: F401 - registers CONFIG SET appendonly
from .execution.persist.acks import AofOffsets
from .execution.persist.aof import Aof
from .execution.persist.aofload import AofLoadError
from .execution.persist.loading import Loading
from .execution.persist.oneoff import OneOffRewrite, rewrite_child
from .execution.persist.rdb import RdbError, failure_words
from .execution.persist.snapshot import Snapshots
from .execution.persist.startup import load_at_startup, stop_logging
from .execution.scripting.busy import Busy
from .execution.scripting.engine import Engine, Run
from .execution.scripting.library import Libraries
from .keyspace.db import Db
from .network.connection import flush_writes
from .network.listener import Listener
from .network.tls import Tls
from .protocol.table import Table, default_table
from .services import limits
from .services.acl import Acl
from .services.blocking import Blocking
from .services.client import Client
from .services.clientmem import ClientMemory
from .services.config import Config
from .services.faults import Faults
from .services.memory import Memory
from .services.metrics import Metrics
from .services.notify import Notify
from .services.observe import Observer
from .services.pause import Pause
from .services.pubsub import PubSub
from .services.switches import Switches
from .services.tracking import Tracking
from .util import native, rand
from .util.clock import Clock
from .util.log import NOTICE, Log, logo
from .util.oom import PRIMARY, OomScore
from .util.versions import REDIS_COMPAT_VERSION, VALKEY_VERSION
from .values import registry as valuetypes
from .values.set import SetValue

if TYPE_CHECKING:
    from .network.connection import Connection
    from .services.host import Peer

__all__ = ["REDIS_COMPAT_VERSION", "VALKEY_VERSION", "Server", "run"]
BRAND_KEY: Final = b"{emq}:version"


class StartupError(Exception):
    """A listener or the TLS context that cannot be set up: the message is
    the line Valkey logs before it exits."""


# The most error codes INFO errorstats tracks for scripts' own errors.
ERRORSTATS_LIMIT: Final = 128

class Server:
    def __init__(self, config: Config, table: Table | None = None) -> None:
        self.config = config
        self.table = table or default_table()
        self.clock = Clock()
        # --seed fixes every random draw (util/rand.py), run_id included.
        rand.reseed(rand.parse(config.values["seed"]))
        self.run_id = rand.token_hex(20, "run_id")
        self.run_id_b = self.run_id.encode()
        # The replication ID INFO reports (a primary's own, never shared).
        self.replid = hashlib.sha1(self.run_id_b).hexdigest()
        self.slot_checks: bool = config.values.get("cluster-slot-checks", False)
        # Each value type's listpack limits (entries, value), read from the
        # config by refresh_limits (values/registry.py names the attributes).
        self.hash_limits: tuple[int, int] = (0, 0)
        self.zset_limits: tuple[int, int] = (0, 0)
        self.set_limits: tuple[int, int] = (0, 0)
        self.list_limits: tuple[int, int] = (0, 0)
        self.hll_sparse_max = 0  # hll-sparse-max-bytes, read by every PFADD
        self.stream_node_limits: tuple[int, int] = (0, 0)  # stream-node-max-bytes and -entries, by every XADD
        self.refresh_limits()
        self.pid = os.getpid()
        self.version = __version__
        self.dbs = [Db(i, self.clock) for i in range(config.databases)]
        # Keyspace notifications (notify.py); the databases carry it while on.
        self.notify = Notify(self)
        self.notify.configure(config.values["notify-keyspace-events"])
        self.clients: dict[int, Client] = {}
        self.connections: dict[int, Connection] = {}
        # Users and permissions; requirepass is the default user's password.
        self.acl: Acl = Acl(self)
        self.acl.log.client_line = info_line
        self._next_id = 0
        self.started_at = time.time()
        self.started_mono = time.monotonic()
        self.log = Log(config.loglevel, config.logfile)
        self.error_stats: dict[bytes, int] = {}
        self.total_error_replies = 0
        self.total_connections = 0
        self._expired_base = 0
        self._expired_fields_base = 0
        # The switches DEBUG turns (services/switches.py).
        self.switches = Switches()
        # A SIGTERM / SIGINT noted, for the next cron tick (Valkey's shutdown_asap).
        self.shutdown_asap = False
        # A transaction's commands are running (Valkey's server.in_exec):
        # what would fork now (the log turned on) waits for the cron.
        self.in_exec = False
        self.oom = OomScore()  # oom-score-adj (util/oom.py)
        self.shutdown_signal = 0
        # The crash report and SIGALRM's stacks (crash.py), installed by serve_forever.
        self.crash = Crash(self)
        # Every listening socket, in Valkey's listener order: tcp, unix, tls.
        self.listeners: list[Listener] = []
        # The kinds listened on since start-up (INFO names each, open or not).
        self.listener_kinds: set[str] = set()
        self.tls = Tls(self)
        self.loop: asyncio.AbstractEventLoop | None = None
        self.stopping: asyncio.Event | None = None
        self.ports: list[int] = []
        self.scripting = Engine(self, Libraries)
        self.busy = Busy(self)
        # The script running past busy-reply-threshold, while others are told BUSY.
        self.busy_run: Run | None = None
        # When the cross-protocol warning was last logged (dispatch.cross_protocol):
        # at most once a minute, whichever client it was.
        self.security_warned = 0.0
        # Successful calls of write commands since start: the "changes" that
        # save rules count (Valkey's server.dirty), one add per write.
        self.dirty = 0
        # Children forked (BGSAVE, AOF rewrites: persist/child.py) and what the last fork took.
        self.total_forks = 0
        self.latest_fork_usec = 0
        self.snapshots = Snapshots(self)
        # A BGREWRITEAOF's child while the log is off.
        self.oneoff = OneOffRewrite(self)
        # TRAFIKEY.SNAPSHOT's copies of the keyspace, by name (in memory only).
        self.named_snapshots = NamedSnapshots(self)
        # The append-only log (persist/aof.py) when appendonly is on; dispatch
        # feeds it each write's effects. None costs a write one check.
        self.aof: Aof | None = None
        # What WAITAOF compares: the writes logged, written and fsynced (persist/acks.py).
        self.aof_offsets = AofOffsets(self)
        self.loading = False
        # The load at start-up: its progress, and its turns of serving clients (persist/loading.py).
        self.load_state = Loading()
        # -- limits (limits.py) --
        # Client memory and maxmemory-clients' eviction (clientmem.py); the
        # log names an evicted client by its CLIENT LIST line.
        self.client_memory = ClientMemory(self)
        self.client_memory.describe = log_info
        self.memory = Memory(self)  # used memory and evictions (memory.py)
        self.memory.apply_policy()
        self.base_table = self.table
        self.maxmemory = 0
        self.noreplicas = False  # min-replicas-to-write refuses writes (limits.py)
        # MISCONF: writes refused since the last background save or AOF write failed (persist/snapshot.py).
        self.disk_error: bytes | None = None
        self.obuf_normal: tuple[int, int, int] | None = None
        self.obuf_pubsub: tuple[int, int, int] | None = None
        self.obuf_limited = False
        self.obuf_watch: set[Peer] = set()
        # Connections with output to write at the end of this turn (replies and pushes).
        self.write_queue: list[Connection] = []
        self.rejected_connections = 0
        self.qbuf_disconnections = 0
        self.obuf_disconnections = 0
        self._limits_tick = 0.0
        # INFO's event-loop statistics and instantaneous metrics (metrics.py),
        # and the network bytes of clients already gone (the totals are
        # cumulative, as Valkey's).
        self.metrics = Metrics()
        self._sample_tick = 0.0
        self.net_in_gone = 0
        self.net_out_gone = 0
        # proto-max-bulk-len: the pattern a read is searched with, and the
        # length itself, where the compiled reader reads it per read.
        self.huge_bulk: limits.BulkSearch = limits.huge_bulk_pattern(0)
        self.max_bulk = 0
        limits.apply_proto_max_bulk_len(self, config.values["proto-max-bulk-len"])
        limits.apply_obuf(self, config.values["client-output-buffer-limit"])
        limits.apply_maxmemory(self, config.values["maxmemory"])
        limits.apply_min_replicas(self)
        # The smallest duration (µs) MONITOR, SLOWLOG or LATENCY wants to see:
        # dispatch compares each call with it (observe.py keeps it current).
        self.observe_us = 1 << 62
        # The reply and request lengths from which COMMANDLOG's large-reply
        # and large-request types log a call (observe.py keeps them current).
        self.large_reply = 1 << 62
        self.large_request = 1 << 62
        # latency-tracking: dispatch counts each call's duration per command.
        self.latency_tracking: bool = config.values.get("latency-tracking", True)
        self.observer = Observer(self)
        self.pause = Pause(self)
        self.pause.script_writes = self.scripting.may_write
        self.pubsub = PubSub(self)
        # Client-side caching: the tracking table and BCAST prefixes.
        self.tracking = Tracking(self)
        # Clients waiting in a blocking command (blocking.py); dispatch
        # tests ``ready_keys`` (its list of keys to serve) after each command.
        self.blocking = Blocking(self)
        self.ready_keys = self.blocking.ready
        # TRAFIKEY.FAULT's rules (faults.py); dispatch tries them while any exists.
        self.faults = Faults(self)

    @property
    def expired_keys(self) -> int:
        """Keys removed by lazy or active expiry since start (or RESETSTAT)."""
        return sum(db.expired_count for db in self.dbs) - self._expired_base

    @expired_keys.setter
    def expired_keys(self, value: int) -> None:
        self._expired_base = sum(db.expired_count for db in self.dbs) - value

    @property
    def expired_fields(self) -> int:
        """Hash fields removed by expiry since start (or RESETSTAT)."""
        return sum(db.fields_expired for db in self.dbs) - self._expired_fields_base

    @expired_fields.setter
    def expired_fields(self, value: int) -> None:
        self._expired_fields_base = sum(db.fields_expired for db in self.dbs) - value

    def refresh_limits(self) -> None:
        """The listpack thresholds the hash and sorted-set writes consult,
        the HyperLogLog's sparse limit and the stream node's, kept as
        attributes so a write reads them without a config lookup."""
        v = self.config.values
        self.hll_sparse_max = v["hll-sparse-max-bytes"]
        self.stream_node_limits = (v["stream-node-max-bytes"], v["stream-node-max-entries"])
        for vt in valuetypes.registered():
            if vt.listpack_limits is not None:
                attr, entries, value = vt.listpack_limits
                setattr(self, attr, (v[entries], v[value]))

    def reseed(self) -> None:
        """CONFIG SET seed: the command draws and the Lua generator start
        again from the seed (the run_id, drawn once per process, stays).
        What earlier draws left behind (the sets' draw pools, eviction's
        key snapshots and candidates) is dropped, so that the draws to come
        depend on the seed and the keyspace alone."""
        rand.reseed(rand.parse(self.config.values["seed"]))
        self.scripting.reseed_random()
        self.memory.forget_samples()
        for db in self.dbs:
            for v in db.values():
                if type(v) is SetValue:
                    v.pool = None

    # -- clients -------------------------------------------------------------

    def requires_auth(self) -> bool:
        return self.acl.auth_required()

    def next_client_id(self) -> int:
        self._next_id += 1
        return self._next_id

    def internal_client(self) -> Client:
        """A client with no connection (id 0): the one scripts run their
        commands as, and the one the append-only log is replayed with."""
        return Client(self, 0)

    def flush_writes(self) -> None:
        """The end of a turn, for the busy-script loop, as Valkey's beforeSleep
        while it processes events blocked: the log's records so far written
        (the running script's are not among them), then every connection's
        queued output, replies held for those records included."""
        if self.aof is not None:
            self.aof.flush()
        flush_writes(self)

    def client_connected(self, conn: Connection, c: Client) -> None:
        self.clients[c.id] = c
        self.connections[c.id] = conn
        self.total_connections += 1

    def client_disconnected(self, conn: Connection | None, c: Client) -> None:
        if self.clients.pop(c.id, None) is not None:
            self.net_in_gone += c.tot_net_in
            self.net_out_gone += c.tot_net_out
        self.connections.pop(c.id, None)
        self.client_memory.forget(c)
        if c.blocked is not None:
            self.blocking.forget(c)
        if self.observer.monitors:
            self.observer.drop(c)
        if c.subscriptions:
            self.pubsub.drop_client(c)
        if c.track is not None:
            self.tracking.client_gone(c)

    def count_error(self, msg: bytes, custom: bool = False) -> None:
        """INFO errorstats. A script's own error codes (``custom``) are
        tracked while fewer than 128 codes are, then counted together as
        ERRORSTATS_OVERFLOW, so that a script cannot grow the table without
        bound; the server's own codes are always tracked."""
        code = msg.split(b" ", 1)[0]
        stats = self.error_stats
        if custom and code not in stats and len(stats) >= ERRORSTATS_LIMIT:
            code = b"ERRORSTATS_OVERFLOW"
        stats[code] = stats.get(code, 0) + 1
        self.total_error_replies += 1

    def swap_dbs(self, a: int, b: int) -> None:
        """SWAPDB: the Db objects trade indexes, so every client selected on
        one now sees the other's data, and watchers of a key stored on either
        side are touched."""
        da, db_ = self.dbs[a], self.dbs[b]
        if da.watchers:
            da.touch_all(db_)
        if db_.watchers:
            db_.touch_all(da)
        if da.blocking:
            da.signal_replaced(db_)
        if db_.blocking:
            db_.signal_replaced(da)
        da.data, db_.data = db_.data, da.data
        da.expires, db_.expires = db_.expires, da.expires
        da._heap, db_._heap = db_._heap, da._heap
        da.swap_fields(db_)
        da.float_ints, db_.float_ints = db_.float_ints, da.float_ints
        # Clients stay on their database index: keys now holding a value
        # there may serve them (after SWAPDB, as Valkey's dbSwapDatabases).
        if da.blocking:
            da.signal_all_ready()
        if db_.blocking:
            db_.signal_all_ready()

    # -- lifecycle ------------------------------------------------------------

    async def start(self) -> None:
        """Valkey's start-up lines, in its words where they apply: the logo
        (or the mode line) and "Server initialized", the listeners, the data
        load, then "Ready to accept". As in Valkey, a client that connects
        during the load is served between its steps: -LOADING to most
        commands (persist/loading.py)."""
        self.loop = asyncio.get_running_loop()
        self.stopping = asyncio.Event()
        log = self.log
        log.notice("oO0OoO0OoO0Oo trafikey-server is starting oO0OoO0OoO0Oo")
        log.notice(f"trafikey-server version={self.version}, valkey-compat={VALKEY_VERSION}, bits=64, "
                   f"pid={self.pid}, just started")
        if self.config.given:
            log.notice("Configuration loaded")
        else:
            log.warning("Warning: no config file specified, using the default config. In order to specify a "
                        "config file use trafikey-server /path/to/valkey.conf")
        tls_port = self.config.values["tls-port"]
        if tls_port and not self.tls.configure(False):
            raise StartupError("Failed to configure TLS. Check logs for more info.")
        shown = self.config.port or tls_port
        values = self.config.values
        if values["always-show-logo"] or (not values["logfile"] and not values["syslog-enabled"]
                                          and sys.stdout.isatty()):
            log.raw(NOTICE, logo("trafikey-server", self.version, VALKEY_VERSION, "standalone", shown, self.pid))
        else:
            log.notice(f"Running mode=standalone, port={shown}.")
        log.notice("Server initialized")
        log.notice(native.describe())  # which kernels run compiled (util/native.py)
        v = self.config.values
        if v["oom-score-adj"] != "no" and not self.oom.apply(v["oom-score-adj"], v["oom-score-adj-values"], PRIMARY,
                                                              log.warning):
            log.warning("Failed to set current oom_score_adj. Check server logs.")
        refused = self.acl.load_at_startup()  # `user` lines, or aclfile
        if refused is not None:
            raise StartupError(refused)
        self._listen()
        for lst in self.listeners:
            lst.start(self.loop)
        self._load()
        self.write_brand()
        log.notice(
            f"trafikey-server {self.version} (Valkey {VALKEY_VERSION} compatible) "
            f"pid={self.pid} port={self.ports[0] if self.ports else tls_port} run_id={self.run_id}"
        )
        self.loop.call_later(1.0 / max(self.config.hz, 1), self._cron)
        for kind in ("tcp", "unix", "tls"):
            if any(lst.kind == kind for lst in self.listeners):
                log.notice(f"Ready to accept connections {kind}")

    def _load(self) -> None:
        """The files loaded (load_at_startup), clients served between the
        load's steps: every command leaves the fast path meanwhile, for the
        dispatcher's -LOADING."""
        values = self.config.values
        state = self.load_state
        state.serve = self._serve_loading
        state.begin(self._load_size(), values["loading-process-events-interval-bytes"], values["key-load-delay"])
        self.loading = True
        table = self.table
        hidden = self.table = table.with_fast({})
        try:
            load_at_startup(self)
        finally:
            self.loading = False
            state.end()
            if self.table is hidden:
                self.table = table
            else:  # a setting changed during the load (CONFIG SET): the table as it makes it
                limits.apply_maxmemory(self, self.maxmemory)

    def _load_size(self) -> int:
        """The bytes the load reads: the AOF directory's files when the log
        is on (base, increments), else the snapshot file."""
        values = self.config.values
        if values.get("appendonly", False):
            d = os.path.join(values["dir"], values.get("appenddirname", "appendonlydir"))
            try:
                return sum(e.stat().st_size for e in os.scandir(d) if e.is_file() and not e.name.endswith(".manifest"))
            except OSError:
                return 0
        try:
            return os.path.getsize(self.snapshots.path())
        except OSError:
            return 0

    def _serve_loading(self) -> None:
        """A turn of serving clients while the load holds the loop (Valkey's
        processEventsWhileBlocked); a shutdown signal received meanwhile
        ends the process without saving, as Valkey's whileBlockedCron does."""
        if self.shutdown_asap:
            self.log.warning("User requested shutdown...")
            self.log.warning("trafikey-server is now ready to exit, bye bye...")
            os._exit(0)
        self.busy.poll(None)

    def _listen(self) -> None:
        """Open the configured listeners (not yet serving): all or none."""
        port = self.config.port
        tls_port = self.config.values["tls-port"]
        unix = self.config.values["unixsocket"]
        # Port 0 picks a free port, unless a unix socket or a TLS port is
        # configured: then, as in Valkey, there is no TCP listener.
        opened: list[Listener] = []
        try:
            if port or not (unix or tls_port):
                try:
                    opened += self._open_listeners(self.config.bind, port)
                except OSError:  # _open_listeners logged which address, as Valkey's listenToPort
                    raise StartupError(f"Failed listening on port {port} (tcp), aborting.") from None
            if unix:
                try:
                    opened.append(Listener(self, unix, 0, self.config.tcp_backlog, kind="unix"))
                except OSError as e:
                    raise StartupError(f"Failed opening Unix socket: {e.strerror}") from None
            if tls_port:
                try:
                    opened += self._open_listeners(self.config.bind, tls_port, "tls")
                except OSError:
                    raise StartupError(f"Failed listening on port {tls_port} (tls), aborting.") from None
        except BaseException:
            for lst in opened:
                lst.sock.close()
            raise
        if not opened:
            raise StartupError("Configured to not listen anywhere, exiting.")
        for lst in opened:
            self.listeners.append(lst)
            self.listener_kinds.add(lst.kind)
            if lst.kind == "tcp":
                self.ports.append(lst.port)

    def _open_listeners(self, bind: str, port: int, kind: str = "tcp") -> list[Listener]:
        """A listening socket per bind address (all or none: an OSError
        closes those already open). Port 0 at start-up picks a free port,
        the same for every address."""
        opened: list[Listener] = []
        try:
            for host in bind.split():  # none: no TCP listener (Valkey's listenToPort)
                optional = host.startswith("-")
                host = host.lstrip("-")
                if host == "*":
                    host = "0.0.0.0"
                elif host == "::*":
                    host = "::"
                try:
                    lst = Listener(self, host, port, self.config.tcp_backlog, kind)
                except OSError as e:
                    if optional and e.errno in (errno.EADDRNOTAVAIL, errno.EAFNOSUPPORT, errno.EPROTONOSUPPORT):
                        continue  # "-addr": skipped where the host does not have it, as Valkey does
                    self.log.warning(f"Warning: Could not create server TCP listening socket {host}:{port}: "
                                     f"bind: {e.strerror or e}")
                    raise
                opened.append(lst)
                if port == 0:
                    port = lst.port
        except OSError:
            for lst in opened:
                lst.sock.close()
            raise
        return opened

    def relisten(self, kind: str = "tcp") -> bool:
        """CONFIG SET port or bind (tls-port: ``kind`` "tls"), as Valkey's
        changeListener: that kind's old sockets close, new ones open on the
        configured addresses and port (none for port 0). False if they
        cannot, the old ones reopened. The other kinds keep theirs."""
        assert self.loop is not None
        mine = [lst for lst in self.listeners if lst.kind == kind]
        old = [(lst.sock.getsockname()[0], lst.port) for lst in mine]
        for lst in mine:
            lst.close()
        port = self.config.port if kind == "tcp" else self.config.values["tls-port"]
        try:
            new = self._open_listeners(self.config.bind, port, kind) if port else []
        except OSError:
            new = []
            for host, p in old:
                try:
                    new.append(Listener(self, host, p, self.config.tcp_backlog, kind))
                except OSError as e:
                    self.log.warning(f"Failed reopening {host}:{p} after a failed CONFIG SET: {e}")
            ok = False
        else:
            ok = True
        for lst in new:
            lst.start(self.loop)
            self.listener_kinds.add(lst.kind)
        rest = [lst for lst in self.listeners if lst.kind != kind]
        order = ("tcp", "unix", "tls")
        self.listeners = sorted(rest + new, key=lambda lst: order.index(lst.kind))
        self.ports = [lst.port for lst in self.listeners if lst.kind == "tcp"]
        return ok

    def relisten_tls(self) -> bool:
        return self.relisten("tls")

    def write_brand(self) -> None:
        """Mark the keyspace as served by this job core (``{emq}:version``,
        which a connector reads before it sends anything), unless a brand
        is already there or the option says none."""
        brand = self.config.values.get("emq-brand", "none")
        if brand != "none" and self.dbs[0].get(BRAND_KEY) is None:
            self.dbs[0].add(BRAND_KEY, brand.encode())
            if self.aof is not None:  # written after the load: logged like any write
                self.aof.add(0, [[b"SET", BRAND_KEY, brand.encode()]])
                self.aof.close_unit()

    def _cron(self) -> None:
        """Active expiry, Valkey's serverCron in small: bounded work per tick."""
        if self.stopping is not None and self.stopping.is_set():
            return
        assert self.loop is not None
        if self.crash.installed:  # the software watchdog: SIGALRM unless the next tick comes first
            self.crash.watchdog(self.config.values.get("watchdog-period", 0))
        if self.switches.pause_cron:
            # DEBUG PAUSE-CRON 1: the ticks go on, their work does not, but
            # for blocked clients' timeouts (Valkey's beforeSleep does those).
            if self.blocking.clients:
                self.blocking.expire()
            self.loop.call_later(1.0 / max(self.config.hz, 1), self._cron)
            return
        if self.shutdown_asap:
            self._shutdown_on_signal()
        started = time.perf_counter_ns()
        now = self.clock.ms()
        self.clock.lru = now // 1000
        if self.switches.active_expire:  # DEBUG SET-ACTIVE-EXPIRE 0 leaves expiry to lookups
            t0 = time.perf_counter_ns()
            for db in self.dbs:
                if db.expires and not db.expiry_paused:
                    db.sweep(now, 2000)
                if db.volatile and not db.expiry_paused:  # hash fields with TTLs
                    db.sweep_fields(now, 2000)
            self.observer.latency_event("expire-cycle", (time.perf_counter_ns() - t0) // 1000)
        self.snapshots.cron()
        rewrite_child(self).cron()
        if self.scripting.debugging.children:
            self.scripting.debugging.cron()
        if self.blocking.clients:
            self.blocking.expire()
        if self.tracking.clients:
            self.tracking.limit()
        mono = time.monotonic()
        if mono - self._limits_tick >= 1.0:
            self._limits_tick = mono
            limits.cron(self)
            if self.tls.context is not None:
                self.tls.cron()  # tls-auto-reload-interval
        if mono - self._sample_tick >= 0.1:  # Valkey's run_with_period(100)
            self._sample_tick = mono
            self.metrics.sample(self.commands_processed(), *self.net_bytes())
        self.metrics.cron((time.perf_counter_ns() - started) // 1000)
        self.loop.call_later(1.0 / max(self.config.hz, 1), self._cron)

    def commands_processed(self) -> int:
        """Every command run since start (or CONFIG RESETSTAT): INFO's total and the cron's sample."""
        return sum(cmd.calls for cmd in self.table.everything())

    def net_bytes(self) -> tuple[int, int]:
        """Every byte read from and written to clients since start (or CONFIG RESETSTAT)."""
        clients = self.clients.values()
        return (self.net_in_gone + sum(c.tot_net_in for c in clients),
                self.net_out_gone + sum(c.tot_net_out for c in clients))

    def change_replication_id(self) -> None:
        """A fresh replication ID (DEBUG CHANGE-REPL-ID), as Valkey draws one."""
        self.replid = rand.token_hex(20, "replid")

    def request_shutdown(self) -> None:
        if self.stopping is not None and not self.stopping.is_set():
            self.log.notice("User requested shutdown...")
            self.stopping.set()

    def _on_signal(self, sig: int, frame: object = None) -> None:
        """SIGTERM / SIGINT, as Valkey's handler: the shutdown is noted and
        the next cron tick carries it out (so SHUTDOWN ABORT may come first).
        A second SIGINT while it is under way (a long final save) means now:
        the temp file is removed and the process exits with status 1. A
        Python handler, so it runs even while a save holds the main thread."""
        if self.shutdown_asap and sig == signal.SIGINT:
            self.log.warning("You insist... exiting now.")
            self.snapshots.remove_temp()
            os._exit(1)
        name = "SIGTERM" if sig == signal.SIGTERM else "SIGINT"
        self.log.warning("Received shutdown signal during loading, scheduling shutdown." if self.loading
                         else f"Received {name} scheduling shutdown...")
        self.shutdown_asap = True
        self.shutdown_signal = sig

    def _shutdown_on_signal(self) -> None:
        """The cron's part of a signalled shutdown: save first when the save
        rules (or the shutdown-on-sig* option) say so; a failed save keeps
        the server running unless the option says force."""
        name = "sigterm" if self.shutdown_signal == signal.SIGTERM else "sigint"
        flags = self.config.values.get(f"shutdown-on-{name}", "default").split()
        self.scripting.debugging.kill_all()
        if self.snapshots.shutdown_save("save" in flags, "nosave" in flags, "force" in flags):
            self.request_shutdown()
        else:
            self.shutdown_asap = False
            self.log.warning("Errors trying to shut down the server. Check the logs for more information.")

    def abort_shutdown(self) -> bool:
        """SHUTDOWN ABORT: a signalled shutdown not yet carried out is called off."""
        if not self.shutdown_asap:
            return False
        self.shutdown_asap = False
        self.log.warning("Shutdown manually aborted.")
        return True

    async def serve_forever(self) -> None:
        main = threading.current_thread() is threading.main_thread()
        if main:  # before the load, which a signal can end (_serve_loading)
            for sig in (signal.SIGINT, signal.SIGTERM):
                signal.signal(sig, self._on_signal)
        await self.start()
        assert self.loop is not None and self.stopping is not None
        if main:
            self.crash.install()
        await self.stopping.wait()
        await self.close()

    async def close(self) -> None:
        for lst in self.listeners:
            lst.close(unlink=True)
        self.oneoff.kill()
        if self.aof is not None:
            stop_logging(self)  # everything logged is flushed and fsynced before exit
        for conn in list(self.connections.values()):
            if conn.transport is not None:
                conn.transport.close()
        await asyncio.sleep(0)
        self.log.warning("trafikey-server is now ready to exit, bye bye...")


def run(config: Config) -> int:
    server = Server(config)
    try:
        _run_loop(server.serve_forever())
    except RdbError as e:
        server.log.warning(failure_words(e))
        server.log.warning(f"Fatal error loading the DB from {server.snapshots.path()}: {e}. "
                           "Exiting; the file was left as it is.")
        return 1
    except StartupError as e:
        server.log.warning(str(e))
        return 1
    except OSError as e:
        server.log.warning(f"Failed listening on port {config.port} (tcp), aborting: {e}")
        return 1
    except AofLoadError as e:
        server.log.warning(str(e))
        return 1
    except KeyboardInterrupt:  # pragma: no cover
        pass
    sys.stdout.flush()
    return 0


def _run_loop(main: Coroutine[object, object, None]) -> None:
    """uvloop's event loop where it is installed, else asyncio's."""
    try:
        import uvloop
    except ImportError:  # pragma: no cover - platforms without uvloop
        asyncio.run(main)
        return
    uvloop.run(main)

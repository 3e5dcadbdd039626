"""The append-only file: every write's effects, as RESP commands, on disk.

Effects reach ``Aof`` three ways: ``feed`` after a successful write command
(dispatch calls it next to ``server.dirty += 1``), ``add`` from a job-core
plan as it applies, and ``expired`` when a key is deleted by lazy or active
expiry. Effects gather in a *unit*: one top-level command, or everything a
transaction or a script wrote (``begin``/``end`` around EXEC and script
runs). A unit of several commands is written between MULTI and EXEC, and a
SELECT goes before any effect in another database than the last one.

Units are rendered into a buffer; once per event-loop turn ``flush`` writes
the buffer to the current incremental file, and the replies of that turn
are held (``hold``) until then, as Valkey writes its AOF buffer before it
sends replies: a client never hears of a write the process has not handed
to the kernel, so killing the process loses nothing acknowledged under any
policy. With ``appendfsync always`` the flush also fsyncs before the replies
go, so no client hears of a write that is not on disk. With ``everysec`` a
background thread fsyncs once a second; with ``no`` the kernel decides.

Files are laid out as Valkey 9.1 lays them out (see ``manifest.py``);
``rewrite.py`` compacts them (BGREWRITEAOF), ``aofload.py`` replays them.
"""

from __future__ import annotations

import os
import threading
import time
from typing import TYPE_CHECKING, Final

from . import manifest as mf
from .effects import Rule, rule_for
from .rewrite import Rewriter, rdb_base, write_snapshot
from .snapshot import refresh_disk_error

if TYPE_CHECKING:
    from ...protocol.table import Command
    from ...services.client import Client
    from ...services.host import Peer
    from .host import PersistHost

_MULTI: Final = b"*1\r\n$5\r\nMULTI\r\n"
_EXEC: Final = b"*1\r\n$4\r\nEXEC\r\n"


def encode(argv: list[bytes]) -> bytes:
    return b"*%d\r\n" % len(argv) + b"".join(b"$%d\r\n%s\r\n" % (len(a), a) for a in argv)


class Aof:
    def __init__(self, server: PersistHost) -> None:
        self.server = server
        cfg = server.config.values
        self.dirname, self.filename = mf.aof_paths(cfg)
        self.policy: str = cfg.get("appendfsync", "everysec")
        self.manifest = mf.Manifest()
        self.fd = -1
        self.unit: list[tuple[int, list[bytes]]] = []
        self.depth = 0
        self.buf: list[bytes] = []
        self.selected = -1
        self.scheduled = False
        self.held: list[tuple[Peer, bytes]] = []
        self.held_conns: set[Peer] = set()
        self.rules: dict[bytes, Rule | None] = {}
        # Sizes as INFO reports them.
        self.current_size = 0
        self.base_size = 0
        self.last_write_ok = True
        self.last_write_error = ""
        # The background fsync of everysec.
        self.lock = threading.Lock()
        self.unsynced = False
        self.last_fsync = time.monotonic()
        self.fsyncs = 0
        self.stop = threading.Event()
        self.thread: threading.Thread | None = None
        self.rewriter = Rewriter(self)
        # The second of the last #TS annotation (aof-timestamp-enabled).
        self.stamped = 0
        # Turned on at run time, until the first rewrite puts the base in
        # (Valkey's AOF_WAIT_REWRITE): records go to a temporary incremental
        # file while that rewrite's child runs, and nowhere before it starts.
        self.waiting = False

    # -- opening ---------------------------------------------------------------------

    def open(self, manifest: mf.Manifest | None) -> None:
        """Start logging after the load: create the directory and a base of
        the keyspace as it is when there was no manifest, then open the
        last incremental file (or a new one) for appending."""
        os.makedirs(self.dirname, exist_ok=True)
        log = self.server.log
        if manifest is None or (manifest.base is None and not manifest.incrs):
            manifest = manifest or mf.Manifest()
            as_rdb = rdb_base(self.server)
            base = manifest.new_base_name(self.filename, as_rdb)
            log.notice(f"Creating AOF base file {base.name} on server start")
            path = os.path.join(self.dirname, base.name)
            write_snapshot(self.server, path, as_rdb)
            manifest.base = base
        self.manifest = manifest
        if manifest.incrs:
            part = manifest.incrs[-1]
            log.notice(f"Opening AOF incr file {part.name} on server start")
        else:
            part = manifest.new_incr(self.filename)
            log.notice(f"Creating AOF incr file {part.name} on server start")
        self.fd = os.open(os.path.join(self.dirname, part.name), os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        mf.store(manifest, self.dirname, self.filename)
        mf.collect_history(manifest, self.dirname, self.filename, self.server.config.values, log)
        self.current_size = self._sizes()
        self.base_size = self.current_size - os.fstat(self.fd).st_size
        self.selected = -1
        self.thread = threading.Thread(target=self._fsync_loop, name="aof-fsync", daemon=True)
        self.thread.start()

    def open_waiting(self, manifest: mf.Manifest) -> None:
        """Start logging at run time (CONFIG SET appendonly yes): the files
        on disk stay as they are until the first rewrite's base is in; the
        rewriter opens the temporary incremental file when its child starts."""
        os.makedirs(self.dirname, exist_ok=True)
        self.manifest = manifest
        self.waiting = True
        self.fd = -1
        self.selected = -1
        self.thread = threading.Thread(target=self._fsync_loop, name="aof-fsync", daemon=True)
        self.thread.start()

    def temp_incr_name(self) -> str:
        """Valkey's getTempIncrAofName: where records wait for the first base."""
        return mf.TEMP_PREFIX + self.filename + ".incr"

    def temp_incr_path(self) -> str:
        return os.path.join(self.dirname, self.temp_incr_name())

    def open_temp_incr(self) -> None:
        """A rewrite child starts while waiting: what is logged from now on
        goes to the temporary incremental file (what came before is in the
        child's snapshot)."""
        self.flush()
        fd = os.open(self.temp_incr_path(), os.O_WRONLY | os.O_TRUNC | os.O_CREAT | os.O_APPEND, 0o644)
        self.server.log.notice(f"Creating AOF incr file {self.temp_incr_name()} on background rewrite")
        with self.lock:
            old, self.fd = self.fd, fd
            if old >= 0:
                os.close(old)
        self.selected = -1

    def drop_temp_incr(self) -> None:
        """The waiting rewrite failed or stopped: its temporary file goes,
        and records go nowhere until the next one starts."""
        self.buf = []
        with self.lock:
            old, self.fd = self.fd, -1
            if old >= 0:
                os.close(old)
        self.server.log.notice(f"Removing the temp incr aof file {self.temp_incr_name()} in the background")
        try:
            os.unlink(self.temp_incr_path())
        except OSError:
            pass
        if self.held:
            self._release()

    def _sizes(self) -> int:
        total = 0
        for p in self.manifest.parts():
            try:
                total += os.path.getsize(os.path.join(self.dirname, p.name))
            except OSError:
                pass
        return total

    def _unlink(self, name: str) -> None:
        try:
            os.unlink(os.path.join(self.dirname, name))
        except FileNotFoundError:
            pass

    # -- effects ---------------------------------------------------------------------

    def feed(self, c: Client, cmd: Command, argv: list[bytes], reply: bytes) -> None:
        """A write command succeeded: log its effects."""
        try:
            rule = self.rules[cmd.bname]
        except KeyError:
            rule = self.rules[cmd.bname] = rule_for(cmd.bname)
        if rule is None:
            self.unit.append((c.db.id, argv))
        else:
            dbid = c.db.id
            for e in rule(c, argv, reply):
                self.unit.append((dbid, e))
        if self.depth == 0:
            self.close_unit()
        offsets = self.server.aof_offsets
        offsets.fed += 1
        c.woff = offsets.fed

    def add(self, dbid: int, commands: list[list[bytes]]) -> None:
        """Effects written by a job-core plan (closed by the verb's feed)."""
        unit = self.unit
        for argv in commands:
            unit.append((dbid, argv))

    def expired(self, dbid: int, key: bytes) -> None:
        """A key removed by lazy or active expiry: logged as DEL."""
        self.unit.append((dbid, [b"DEL", key]))
        if not self.scheduled:
            self._schedule()

    def fields_expired(self, dbid: int, key: bytes, fields: list[bytes], gone: bool) -> None:
        """Hash fields reaped by the active sweep: logged as HDEL (Valkey's
        propagation of expired fields), and the hash's deletion when it went
        too, as UNLINK under lazyfree-lazy-expire (Valkey's default)."""
        self.unit.append((dbid, [b"HDEL", key, *fields]))
        if gone:
            lazy = self.server.config.values.get("lazyfree-lazy-expire", True)
            self.unit.append((dbid, [b"UNLINK" if lazy else b"DEL", key]))
        if not self.scheduled:
            self._schedule()

    def alone(self, dbid: int, argv: list[bytes]) -> None:
        """A deletion outside any command (an eviction): logged on its own,
        never inside the unit of the command that caused it."""
        if self.unit and self.depth == 0:
            self._close_loose()
        self.unit.append((dbid, argv))
        self.close_unit()

    def begin(self) -> None:
        """A transaction or a script starts: its effects form one unit."""
        if self.depth == 0 and self.unit:
            self._close_loose()
        self.depth += 1

    def end(self) -> None:
        self.depth -= 1
        if self.depth == 0 and self.unit:
            self.close_unit()

    def close_unit(self) -> None:
        unit = self.unit
        if not unit:
            return
        self.unit = []
        buf = self.buf
        wrap = len(unit) > 1
        if wrap:
            # MULTI belongs to no database (Valkey propagates it with dbid
            # -1): a SELECT the unit needs comes after it.
            buf.append(_MULTI)
        for dbid, argv in unit:
            if dbid != self.selected:
                buf.append(encode([b"SELECT", b"%d" % dbid]))
                self.selected = dbid
            buf.append(encode(argv))
        if wrap:
            buf.append(_EXEC)
        if self.rewriter.child_pid:
            self.rewriter.dirty = True
        if not self.scheduled:
            self._schedule()

    def _close_loose(self) -> None:
        """Expiry deletions outside any command: each on its own."""
        unit = self.unit
        self.unit = []
        for entry in unit:
            self.unit = [entry]
            self.close_unit()

    def _schedule(self) -> None:
        self.scheduled = True
        loop = self.server.loop
        if loop is not None:
            loop.call_soon(self.flush)

    # -- replies held for always -------------------------------------------------------

    def hold(self, conn: Peer, out: list[bytes]) -> bool:
        """Keep a connection's replies until this turn's records are
        written (and fsynced, under ``always``). False when they may go now."""
        if not (self.buf or (self.unit and not self.depth) or conn in self.held_conns):
            # Nothing of this turn's to wait for. A unit still open (depth)
            # is a running script's: what the busy loop answers meanwhile
            # (BUSY, SCRIPT KILL's reply) does not wait for it.
            return False
        self.held.append((conn, b"".join(out)))
        self.held_conns.add(conn)
        if not self.scheduled:
            self._schedule()
        return True

    def _release(self) -> None:
        held = self.held
        self.held = []
        self.held_conns.clear()
        for conn, payload in held:
            t = conn.transport
            c = conn.client
            if t is None or t.is_closing():
                continue
            if payload:
                if c is not None:
                    c.tot_net_out += len(payload)
                t.write(payload)
            if c is not None and c.closing:
                t.close()

    # -- writing -------------------------------------------------------------------------

    def flush(self, fsync: bool | None = None) -> None:
        """Write the buffer; fsync as the policy says (or as asked)."""
        self.scheduled = False
        if self.depth == 0 and self.unit:
            self._close_loose()
        if self.buf:
            data = b"".join(self.buf)
            self.buf = []
            pause = self.server.switches.aof_flush_sleep
            if pause:
                time.sleep(pause / 1_000_000)
            if self.server.config.values.get("aof-timestamp-enabled", False):
                now = int(time.time())
                if now > self.stamped:
                    # Valkey's annotation, once a second that writes: what
                    # valkey-check-aof --truncate-to-timestamp cuts at.
                    self.stamped = now
                    data = b"#TS:%d\r\n" % now + data
            if self.fd < 0:  # waiting, no rewrite running: the next base will hold it
                if self.held:
                    self._release()
                return
            self._write(data)
            if self.depth == 0:  # a unit still open (a busy script's) is not in data yet
                offsets = self.server.aof_offsets
                offsets.written = offsets.fed
            if fsync is None:
                fsync = self.policy == "always"
            if fsync:
                self.fsync()
            else:
                self.unsynced = True
        elif fsync:
            self.fsync()
        if self.held:
            self._release()

    def _write(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            try:
                n = os.write(self.fd, view)
            except InterruptedError:
                continue
            except OSError as e:
                # Valkey exits when it cannot write under always; here too,
                # a reply must never claim a write that is not logged.
                self.last_write_ok = False
                self.last_write_error = e.strerror or str(e)
                refresh_disk_error(self.server)
                self.server.log.warning(f"Error writing to the AOF file: {e}")
                if self.policy == "always":
                    self.server.log.warning("Can't recover from AOF write error when the AOF fsync policy is "
                                            "'always'. Exiting...")
                    os._exit(1)
                raise
            view = view[n:]
        self.current_size += len(data)
        if not self.last_write_ok:
            self.last_write_ok = True
            refresh_disk_error(self.server)

    def fsync(self) -> None:
        """fsync the file (any thread); the writes handed to it before are
        then acknowledged to WAITAOF, unless the log still waits for its
        first base (the file is a temporary one)."""
        offsets = self.server.aof_offsets
        with self.lock:
            target = offsets.written
            if self.fd >= 0:
                os.fsync(self.fd)
                self.fsyncs += 1
                if not self.waiting:
                    offsets.synced_to(target)
            self.unsynced = False
            self.last_fsync = time.monotonic()

    def _fsync_loop(self) -> None:
        """everysec: at most one second of writes is only in the page cache.
        Runs under every policy (CONFIG SET appendfsync switches it)."""
        while not self.stop.wait(1.0):
            if self.unsynced and self.policy == "everysec":
                try:
                    self.fsync()
                except OSError as e:  # pragma: no cover - disk trouble
                    self.server.log.warning(f"AOF background fsync failed: {e}")

    # -- rewrite support -----------------------------------------------------------------

    def switch_incr(self) -> mf.Part:
        """Flush and fsync the current incremental file, then append to a
        new one, recorded in the manifest before any record reaches it."""
        self.flush(fsync=True)
        part = self.manifest.new_incr(self.filename)
        fd = os.open(os.path.join(self.dirname, part.name), os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        mf.store(self.manifest, self.dirname, self.filename)
        with self.lock:
            old, self.fd = self.fd, fd
            os.close(old)
        self.selected = -1
        return part

    def rebase(self) -> None:
        """A new base from the keyspace as it is, in place before this
        returns: for a change the log cannot carry as commands (a named
        snapshot's RESTORE replaces the whole keyspace). A background
        rewrite under way is dropped. Until the manifest naming the new base
        and a fresh incremental file is stored, the old files stay the
        truth; after it, they are deleted. Effects gathered and not yet
        written (a transaction's so far) are in the base already: dropped."""
        self.rewriter.kill()
        self.unit = []
        self.flush(fsync=True)
        m = self.manifest
        as_rdb = rdb_base(self.server)
        base = m.new_base_name(self.filename, as_rdb)
        temp = os.path.join(self.dirname, f"temp-rewriteaof-{os.getpid()}.aof")
        write_snapshot(self.server, temp, as_rdb)
        os.replace(temp, os.path.join(self.dirname, base.name))
        old = ([m.base] if m.base else []) + m.incrs
        m.base = base
        m.incrs = []
        part = m.new_incr(self.filename)
        fd = os.open(os.path.join(self.dirname, part.name), os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        mf.store(m, self.dirname, self.filename)
        with self.lock:
            prev, self.fd = self.fd, fd
            os.close(prev)
        self.selected = -1
        for p in old:
            self._unlink(p.name)
        self.base_size = os.path.getsize(os.path.join(self.dirname, base.name))
        self.current_size = self.base_size

    # -- shutdown ------------------------------------------------------------------------

    def close(self) -> None:
        """Flush and fsync everything logged, then stop (SHUTDOWN, SIGTERM,
        the log turned off)."""
        self.stop.set()
        if self.waiting:
            self.rewriter.kill()
            self.drop_temp_incr()
            return
        if self.fd < 0:
            return
        self.rewriter.kill()
        self.flush(fsync=True)
        self.stop.set()
        with self.lock:
            os.close(self.fd)
            self.fd = -1

    # -- INFO ------------------------------------------------------------------------------

    def info(self) -> dict[str, int]:
        return {
            "aof_current_size": self.current_size,
            "aof_base_size": self.base_size,
            "aof_pending_rewrite": 0,
            "aof_buffer_length": sum(map(len, self.buf)),
            "aof_pending_bio_fsync": 0,
            "aof_delayed_fsync": 0,
        }


def propagate(c: Client, effects: list[list[bytes]]) -> None:
    """Valkey's alsoPropagate: effects of the running command go to the log
    (nothing while it is off; it opens only after start-up's replay). A
    command whose rule in ``effects.py`` logs nothing records what it
    changed here, and only when it changed something."""
    aof = c.server.aof
    if aof is not None and effects:
        aof.add(c.db.id, effects)

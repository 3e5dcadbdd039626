"""BGREWRITEAOF: a new base file from the keyspace, without blocking clients.

As Valkey does it: the parent flushes the current incremental file and
opens a new one (recorded in the manifest first), then forks. The child
writes the keyspace it inherited — the state at the fork — as commands to a
temp file, fsyncs it and exits. Meanwhile the parent serves clients and
logs their writes to the new incremental file. When the child succeeds, the
parent renames the temp file to the next base name, writes the manifest
naming that base and the incremental files opened since the fork, and only
then deletes the old base and incremental files. If anything fails, the old
files stay in the manifest and nothing is lost.

The base is an RDB file (``<name>.<seq>.base.rdb``) under
``aof-use-rdb-preamble yes``, Valkey's default, with its ``aof-base`` aux
field set. Under ``no`` it is written in RESP command form
(``.base.aof``): library code as FUNCTION LOAD, then per database SELECT,
the commands each value type rebuilds its values with
(``ValueType.aof_rewrite``: SET, HSET, ZADD, at most 64 items per command as
Valkey's AOF_REWRITE_ITEMS_PER_CMD) and PEXPIREAT, leaving out keys already
past their expiry. Either way ``rdb-key-save-delay`` slows the writer per
key, as Valkey's tests use it to keep a child running.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

from ...protocol.resp import bulks as encode
from ...util.clock import debug_delay
from ...values.registry import BY_CLASS
from . import manifest as mf
from . import rdb
from .child import fork, kill, reap

if TYPE_CHECKING:
    from .aof import Aof
    from .host import PersistHost


def snapshot_records(server: PersistHost) -> Iterator[bytes]:
    """The keyspace as commands, in chunks of bytes."""
    if server.config.values.get("aof-timestamp-enabled", False):
        yield b"#TS:%d\r\n" % int(time.time())
    libs = server.scripting.libraries.libraries
    for lib in libs.values():
        yield encode([b"FUNCTION", b"LOAD", lib.code])
    now = server.clock.ms()
    delay = int(server.config.values.get("rdb-key-save-delay", 0))
    for db in server.dbs:
        if not db.data:
            continue
        yield encode([b"SELECT", b"%d" % db.id])
        exp = db.expires
        out: list[bytes] = []
        for key, v in list(db.items()):
            when = exp.get(key)
            if when is not None and when < now:
                continue
            vt = BY_CLASS.get(type(v))
            if vt is not None:
                out.extend(encode(argv) for argv in vt.aof_rewrite(key, v))
            if when is not None:
                out.append(encode([b"PEXPIREAT", key, b"%d" % when]))
            if delay:
                debug_delay(delay)
            if len(out) >= 1024:
                yield b"".join(out)
                out = []
        if out:
            yield b"".join(out)


def rdb_base(server: PersistHost) -> bool:
    """Whether a new base is an RDB file (aof-use-rdb-preamble)."""
    return bool(server.config.values.get("aof-use-rdb-preamble", True))


def write_snapshot(server: PersistHost, path: str, as_rdb: bool) -> int:
    """Write the keyspace to path, as an RDB base or as commands, and
    fsync it; its size."""
    with open(path, "wb", buffering=1 << 20) as f:
        if as_rdb:
            rdb.write(server, f, aof_base=True)
        else:
            for chunk in snapshot_records(server):
                f.write(chunk)
        f.flush()
        os.fsync(f.fileno())
        return f.tell()


def child_base(server: PersistHost, as_rdb: bool) -> str:
    """In a rewrite child: the new base, written to the temporary file named
    after the child (``temp-rewriteaof-bg-<pid>.aof`` in ``dir``, where
    Valkey writes it too); its path."""
    path = temp_base(server, os.getpid())
    write_snapshot(server, path, as_rdb)
    server.log.notice(f"Successfully created the temporary AOF base file {os.path.basename(path)}")
    return path


def temp_base(server: PersistHost, pid: int) -> str:
    """Where child ``pid`` writes its base (child_base)."""
    return os.path.join(server.config.values["dir"], f"temp-rewriteaof-bg-{pid}.aof")


# Valkey's AOF_REWRITE_LIMITE_THRESHOLD and _MAX_MINUTES.
LIMIT_THRESHOLD = 3
LIMIT_MAX_MINUTES = 60


class RewriteChild:
    """An AOF rewrite's child and its record (INFO's aof_rewrite* fields),
    the same with the log on (``Rewriter``) or off (``OneOffRewrite``):
    it is forked, polled until it ends, then installed or failed; a
    rewrite scheduled behind a BGSAVE starts from the cron."""

    def __init__(self, server: PersistHost) -> None:
        self.server = server
        self.child_pid = 0
        self.temp = ""
        self.started = 0.0
        self.rewrites = 0
        self.last_status = "ok"
        self.failures = 0
        self.last_time = -1
        self.scheduled = False
        # The hold after repeated failures (limited).
        self.delay_minutes = 0
        self.retry_at = 0.0

    def start(self) -> None:
        raise NotImplementedError

    def _installed(self) -> bool:
        """After a child that succeeded: its work put in place (False: it could not be)."""
        return True

    def _fork(self, write: Callable[[], object]) -> int:
        """Fork a child that runs write and leaves (child.fork); its pid."""
        pid = fork(self.server, write, "Background AOF rewrite")
        self.child_pid = pid
        self.started = time.monotonic()
        self.server.log.notice(f"Background append only file rewriting started by pid {pid}")
        self._watch()
        return pid

    def _watch(self) -> None:
        loop = self.server.loop
        if loop is not None:
            loop.call_later(0.02, self._poll)

    def _poll(self) -> None:
        if not self.child_pid:
            return
        code = reap(self.child_pid)
        if code is None:
            self._watch()
            return
        self.child_pid = 0
        self.last_time = int(time.monotonic() - self.started)
        if code == 0 and self._installed():
            self.rewrites += 1
            self.failures = 0
            self.last_status = "ok"
            self.server.log.notice("Background AOF rewrite finished successfully")
            return
        self.failures += 1
        self.last_status = "err"
        self.server.log.warning("Background AOF rewrite terminated with error")
        self._drop_temp()
        self._failed()

    def _failed(self) -> None:
        """After a child that failed, or whose work could not be put in place."""

    def _drop_temp(self) -> None:
        try:
            os.unlink(self.temp)
        except OSError:
            pass

    def cron(self) -> None:
        """A rewrite scheduled behind another child (BGSAVE) starts once no
        child runs, as serverCron starts it, unless failures hold it back."""
        if self.scheduled and not self.child_pid and not self.server.snapshots.child_pid and not self.limited():
            self.scheduled = False
            self.start()

    def limited(self) -> bool:
        """Valkey's aofRewriteLimited: after three failures in a row, an
        automatic or scheduled rewrite waits 1 minute, then 2, 4, ... up to
        an hour (BGREWRITEAOF is not held back)."""
        if self.failures < LIMIT_THRESHOLD:
            self.delay_minutes = 0
            self.retry_at = 0.0
            return False
        now = time.time()
        if self.retry_at:
            if now < self.retry_at:
                return True
            self.retry_at = 0.0
            return False
        self.delay_minutes = min(LIMIT_MAX_MINUTES, self.delay_minutes * 2 if self.delay_minutes else 1)
        self.retry_at = now + self.delay_minutes * 60
        self.server.log.warning("Background AOF rewrite has repeatedly failed and triggered the limit, will retry in "
                                f"{self.delay_minutes} minutes")
        return True

    def kill(self) -> None:
        """Shutdown, or the log switched, during a rewrite: the child's work
        is dropped (the manifest still names every file it would replace)."""
        if self.child_pid:
            self.server.log.notice(f"Killing running AOF rewrite child: {self.child_pid}")
            kill(self.child_pid)
            self.child_pid = 0
            self._drop_temp()
            self._failed()


class Rewriter(RewriteChild):
    """BGREWRITEAOF with the log on."""

    def __init__(self, aof: Aof) -> None:
        super().__init__(aof.server)
        self.aof = aof
        self.dirty = False
        self.as_rdb = True

    def start(self) -> None:
        aof = self.aof
        server = self.server
        if aof.waiting:
            aof.open_temp_incr()  # the first base: what comes after the fork waits in the temporary file
        else:
            aof.switch_incr()
        self.as_rdb = rdb_base(server)
        as_rdb = self.as_rdb
        try:
            pid = self._fork(lambda: child_base(server, as_rdb))
        except OSError:
            self._failed()
            raise
        self.temp = temp_base(server, pid)

    def cron(self) -> None:
        """The scheduled rewrite, then the automatic one: the log grown by
        auto-aof-rewrite-percentage over its size after the last rewrite,
        and past auto-aof-rewrite-min-size (Valkey's serverCron)."""
        super().cron()
        aof = self.aof
        if self.child_pid or aof.waiting or self.server.snapshots.child_pid:
            return
        cfg = self.server.config.values
        perc = int(cfg.get("auto-aof-rewrite-percentage", 100))
        if not perc or aof.current_size <= int(cfg.get("auto-aof-rewrite-min-size", 64 << 20)):
            return
        growth = aof.current_size * 100 // (aof.base_size or 1) - 100
        if growth >= perc and not self.limited():
            self.server.log.notice(f"Starting automatic rewriting of AOF on {growth}% growth")
            self.start()

    def _failed(self) -> None:
        aof = self.aof
        if aof.waiting and aof is self.server.aof:
            # The log is on only once a base is in: drop what waited for
            # this one, and try again from the cron.
            aof.drop_temp_incr()
            self.scheduled = True

    def _installed(self) -> bool:
        try:
            self._install()
        except OSError as e:
            self.server.log.warning(f"Background AOF rewrite could not be installed: {e}")
            return False
        return True

    def _install(self) -> None:
        """The new base in, the files it covers made history, the manifest
        stored, the history collected (Valkey's backgroundRewriteDoneHandler).
        The first base of a log turned on at run time brings in the
        temporary incremental file too, and the log is on from then."""
        aof = self.aof
        log = self.server.log
        m = aof.manifest
        base = m.new_base_name(aof.filename, self.as_rdb)
        os.replace(self.temp, os.path.join(aof.dirname, base.name))
        log.notice(f"Successfully renamed the temporary AOF base file {os.path.basename(self.temp)} into {base.name}")
        m.retire_base()
        m.base = base
        if aof.waiting:
            aof.flush()
            part = m.new_incr(aof.filename)
            os.replace(aof.temp_incr_path(), os.path.join(aof.dirname, part.name))
            log.notice(f"Successfully renamed the temporary AOF incr file {aof.temp_incr_name()} into {part.name}")
        m.retire_incrs(keep_last=True)
        mf.store(m, aof.dirname, aof.filename)
        if aof.waiting:
            aof.waiting = False
            self.server.aof_offsets.everything_synced()  # the base holds every write so far
        mf.collect_history(m, aof.dirname, aof.filename, self.server.config.values, log)
        aof.base_size = os.path.getsize(os.path.join(aof.dirname, base.name))
        aof.current_size = aof._sizes()

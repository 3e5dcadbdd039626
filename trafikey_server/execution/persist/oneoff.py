"""BGREWRITEAOF with appendonly off: Valkey still writes a base file and a
manifest naming it alone, so the directory can seed a later start with
``appendonly yes``. A forked child does all of it. The parent tracks it as
Valkey tracks any AOF child: INFO reports it in progress until it is
reaped, a BGSAVE waits for it (or is refused), and a rewrite asked for
while a BGSAVE runs is scheduled behind it."""

from __future__ import annotations

import os
import time
from typing import TYPE_CHECKING

from . import manifest as mf
from .rewrite import rdb_base, write_snapshot

if TYPE_CHECKING:
    from .host import PersistHost


class OneOffRewrite:
    """The rewrite child of a server whose log is off, and its record."""

    def __init__(self, server: PersistHost) -> None:
        self.server = server
        self.child_pid = 0
        self.started = 0.0
        self.scheduled = False
        self.rewrites = 0
        self.failures = 0
        self.last_status = "ok"
        self.last_time = -1

    def start(self) -> None:
        server = self.server
        cfg = server.config.values
        dirname = os.path.join(cfg["dir"], cfg.get("appenddirname", "appendonlydir"))
        filename = cfg.get("appendfilename", "appendonly.aof")
        as_rdb = rdb_base(server)
        pid = os.fork()
        if pid == 0:  # the child: write and leave, never back into the event loop
            code = 1
            try:
                os.makedirs(dirname, exist_ok=True)
                old = mf.load(os.path.join(dirname, filename + mf.MANIFEST_SUFFIX)) or mf.Manifest()
                m = mf.Manifest(base_seq=old.base_seq, incr_seq=old.incr_seq)
                base = m.new_base_name(filename, as_rdb)
                temp = os.path.join(dirname, f"temp-rewriteaof-bg-{os.getpid()}.aof")
                write_snapshot(server, temp, as_rdb)
                os.replace(temp, os.path.join(dirname, base.name))
                m.base = base
                mf.store(m, dirname, filename)
                for p in old.parts() + old.history:
                    if p.name != base.name:
                        try:
                            os.unlink(os.path.join(dirname, p.name))
                        except OSError:
                            pass
                code = 0
            finally:
                os._exit(code)
        self.child_pid = pid
        self.started = time.monotonic()
        server.log.notice(f"Background append only file rewriting started by pid {pid}")

    def cron(self) -> None:
        """Reap a finished child; start a scheduled rewrite once no child runs."""
        if self.child_pid:
            try:
                pid, status = os.waitpid(self.child_pid, os.WNOHANG)
            except ChildProcessError:
                pid, status = self.child_pid, 1 << 8
            if pid == 0:
                return
            self.child_pid = 0
            self.last_time = int(time.monotonic() - self.started)
            if os.waitstatus_to_exitcode(status) == 0:
                self.rewrites += 1
                self.failures = 0
                self.last_status = "ok"
                self.server.log.notice("Background AOF rewrite finished successfully")
            else:
                self.failures += 1
                self.last_status = "err"
                self.server.log.warning("Background AOF rewrite terminated with error")
        if self.scheduled and not self.server.snapshots.child_pid:
            self.scheduled = False
            self.start()

    def kill(self) -> None:
        """Shutdown, or the log turned on, during the rewrite: its work is dropped."""
        if not self.child_pid:
            return
        pid = self.child_pid
        self.server.log.notice(f"Killing running AOF rewrite child: {pid}")
        try:
            os.kill(pid, 9)
            os.waitpid(pid, 0)
        except OSError:
            pass
        self.child_pid = 0
        cfg = self.server.config.values
        try:
            os.unlink(os.path.join(cfg["dir"], cfg.get("appenddirname", "appendonlydir"),
                                   f"temp-rewriteaof-bg-{pid}.aof"))
        except OSError:
            pass


def aof_child(server: PersistHost) -> int:
    """The pid of an AOF rewrite child, with the log on or off (0: none)."""
    aof = server.aof
    if aof is not None and aof.rewriter.child_pid:
        return aof.rewriter.child_pid
    return server.oneoff.child_pid

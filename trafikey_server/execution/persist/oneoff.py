"""BGREWRITEAOF with appendonly off: Valkey still writes a base file and a
manifest naming it alone, so the directory can seed a later start with
``appendonly yes``. A forked child does all of it. The parent tracks it as
Valkey tracks any AOF child: INFO reports it in progress until it is
reaped, a BGSAVE waits for it (or is refused), and a rewrite asked for
while a BGSAVE runs is scheduled behind it."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from . import manifest as mf
from .rewrite import RewriteChild, rdb_base, write_snapshot

if TYPE_CHECKING:
    from .host import PersistHost


class OneOffRewrite(RewriteChild):
    """The rewrite child of a server whose log is off, and its record."""

    def start(self) -> None:
        server = self.server
        dirname, filename = mf.aof_paths(server.config.values)
        as_rdb = rdb_base(server)

        def write() -> None:
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

        pid = self._fork(write)
        self.temp = os.path.join(dirname, f"temp-rewriteaof-bg-{pid}.aof")  # the name the child writes


def rewrite_child(server: PersistHost) -> RewriteChild:
    """The rewrite child's record that counts now: the log's when it is on.
    (Turning the log on kills a rewrite made with it off.)"""
    aof = server.aof
    return server.oneoff if aof is None else aof.rewriter

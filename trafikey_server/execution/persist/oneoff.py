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
from .rewrite import RewriteChild, child_base, rdb_base, temp_base

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
            m = mf.load(os.path.join(dirname, filename + mf.MANIFEST_SUFFIX)) or mf.Manifest()
            base = m.new_base_name(filename, as_rdb)
            os.replace(child_base(server, as_rdb), os.path.join(dirname, base.name))
            # What the base covers is history: every incremental file, the
            # log being off (collected unless aof-disable-auto-gc says no).
            m.retire_base()
            m.base = base
            m.retire_incrs(keep_last=False)
            mf.store(m, dirname, filename)
            mf.collect_history(m, dirname, filename, server.config.values, server.log)

        pid = self._fork(write)
        self.temp = temp_base(server, pid)


def rewrite_child(server: PersistHost) -> RewriteChild:
    """The rewrite child's record that counts now: the log's when it is on.
    (Turning the log on kills a rewrite made with it off.)"""
    aof = server.aof
    return server.oneoff if aof is None else aof.rewriter

"""BGREWRITEAOF with appendonly off: Valkey still writes a base file and a
manifest naming it alone, so the directory can seed a later start with
``appendonly yes``. A forked child does all of it; the parent only reaps it."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from . import manifest as mf
from .rewrite import write_snapshot

if TYPE_CHECKING:
    from .host import PersistHost


def rewrite_once(server: PersistHost) -> None:
    cfg = server.config.values
    dirname = os.path.join(cfg["dir"], cfg.get("appenddirname", "appendonlydir"))
    filename = cfg.get("appendfilename", "appendonly.aof")
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            os.makedirs(dirname, exist_ok=True)
            old = mf.load(os.path.join(dirname, filename + mf.MANIFEST_SUFFIX)) or mf.Manifest()
            m = mf.Manifest(base_seq=old.base_seq, incr_seq=old.incr_seq)
            base = m.new_base_name(filename)
            temp = os.path.join(dirname, f"temp-rewriteaof-bg-{os.getpid()}.aof")
            write_snapshot(server, temp)
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
    _reap(server, pid)


def _reap(server: PersistHost, pid: int) -> None:
    done, _ = os.waitpid(pid, os.WNOHANG)
    if done == 0 and server.loop is not None:
        server.loop.call_later(0.05, _reap, server, pid)

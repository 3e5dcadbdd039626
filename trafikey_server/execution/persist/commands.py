"""BGREWRITEAOF, ``CONFIG SET appendonly``, and the aof_* fields of INFO."""

from __future__ import annotations

import os
import time
from typing import TYPE_CHECKING

from ...services.config import register_apply
from ...util.errors import CommandError
from . import manifest as mf
from .aof import Aof
from .oneoff import rewrite_child
from .startup import start_logging, stop_logging

if TYPE_CHECKING:
    from ...services.client import Client
    from .host import PersistHost

STARTED = b"+Background append only file rewriting started\r\n"
SCHEDULED = b"+Background append only file rewriting scheduled\r\n"


def bgrewriteaof(c: Client, argv: list[bytes]) -> bytes:
    server = c.server
    rw = rewrite_child(server)
    if rw.child_pid:
        raise CommandError(b"ERR Background append only file rewriting already in progress")
    if server.snapshots.child_pid or c.in_exec:
        # Another child runs (or a transaction does): it starts after, from the cron.
        rw.scheduled = True
        return SCHEDULED
    # With appendonly off Valkey rewrites too: a base file and a manifest
    # naming only it, written by a child as with the log on.
    try:
        rw.start()
    except OSError as e:
        raise CommandError(b"ERR Can't execute an AOF background rewriting. "
                           b"Please check the server logs for more information.") from e
    return STARTED


def apply_appendonly(server: PersistHost, value: bool) -> None:
    """CONFIG SET appendonly: on, the log waits for a rewrite child to write
    its first base (Valkey's startAppendOnly and AOF_WAIT_REWRITE: started
    now, or behind another child or the running transaction), the files on
    disk untouched until then; off, it is flushed and closed."""
    if server.loop is None:
        return  # before start-up the option is only read
    if not value:
        stop_logging(server)
        return
    if server.aof is not None:
        return
    log = server.log
    aof = Aof(server)
    manifest = mf.load(os.path.join(aof.dirname, aof.filename + mf.MANIFEST_SUFFIX)) or mf.Manifest()
    start_logging(server, aof, manifest, waiting=True)
    if server.snapshots.child_pid:
        aof.rewriter.scheduled = True
        log.notice("AOF was enabled but there is already another background operation. An AOF background was "
                   "scheduled to start when possible.")
        return
    if server.in_exec:
        aof.rewriter.scheduled = True
        log.notice("AOF was enabled during a transaction. An AOF background was scheduled to start when possible.")
        return
    if server.oneoff.child_pid:
        log.notice("AOF was enabled but there is already an AOF rewriting in background. Stopping background AOF "
                   "and starting a rewrite now.")
    server.oneoff.kill()  # a rewrite made with the log off is replaced by the log's own
    server.oneoff.scheduled = False
    try:
        aof.rewriter.start()
    except OSError:
        stop_logging(server)
        log.warning("The server needs to enable the AOF but can't trigger a background AOF rewrite operation. "
                    "Check the above logs for more info about the error.")
        raise


def apply_auto_gc(server: PersistHost, disabled: bool) -> None:
    """CONFIG SET aof-disable-auto-gc no: the history kept so far goes now."""
    if disabled or server.loop is None:
        return
    cfg = server.config.values
    aof = server.aof
    if aof is not None:
        mf.collect_history(aof.manifest, aof.dirname, aof.filename, cfg, server.log)
        return
    dirname, filename = mf.aof_paths(cfg)
    try:
        m = mf.load(os.path.join(dirname, filename + mf.MANIFEST_SUFFIX))
    except mf.ManifestError:
        return
    if m is not None:
        mf.collect_history(m, dirname, filename, cfg, server.log)


def aof_fields(s: PersistHost) -> list[tuple[str, int | str]]:
    """The aof_* lines of INFO persistence, in Valkey's order (the size
    lines follow only when the log is on)."""
    aof = s.aof
    rw = rewrite_child(s)
    running = bool(rw.child_pid)
    return [
        ("aof_enabled", int(aof is not None)), ("aof_rewrite_in_progress", int(running)),
        ("aof_rewrite_scheduled", int(rw.scheduled)),
        ("aof_last_rewrite_time_sec", rw.last_time),
        ("aof_current_rewrite_time_sec", int(time.monotonic() - rw.started) if running else -1),
        ("aof_last_bgrewrite_status", rw.last_status), ("aof_rewrites", rw.rewrites),
        ("aof_rewrites_consecutive_failures", rw.failures),
        ("aof_last_write_status", "ok" if aof is None or aof.last_write_ok else "err"), ("aof_last_cow_size", 0),
    ]


def aof_size_fields(s: PersistHost) -> list[tuple[str, int | str]]:
    return [] if s.aof is None else list(s.aof.info().items())


def apply_appendfsync(server: PersistHost, value: str) -> None:
    """The running log takes the policy at once; switching to always
    fsyncs what is written and not yet synced (Valkey's next flush would)."""
    aof = server.aof
    if aof is None:
        return
    aof.policy = value
    if value == "always" and aof.unsynced:
        aof.flush(fsync=True)


register_apply("appendonly", apply_appendonly)
register_apply("appendfsync", apply_appendfsync)
register_apply("aof-disable-auto-gc", apply_auto_gc)

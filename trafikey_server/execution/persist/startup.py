"""What the server loads before it serves, and when the log opens.

Valkey's loadDataFromDisk in small: with ``appendonly yes`` and a log on
disk, the AOF is the truth and is replayed (its manifest in appenddirname,
or a legacy single file ``<dir>/<appendfilename>``, which is then moved into
the directory as the base); otherwise the RDB snapshot is loaded, if there
is one. A server switched to ``appendonly yes`` with only a snapshot on disk
thus starts from the snapshot and writes it out as the log's first base, so
turning the log on never loses data. Either way the log opens only after the
load, so nothing loaded is logged again.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from . import manifest as mf
from .aof import Aof
from .aofload import AofLoadError, Loader
from .snapshot import load_at_startup as load_snapshot

if TYPE_CHECKING:
    from .host import PersistHost



def load_at_startup(server: PersistHost) -> None:
    """Fill the keyspace from disk; open the log when appendonly is on.
    Raises AofLoadError when start-up must stop."""
    # The snapshot loader itself stands aside when a log is on and present.
    load_snapshot(server)
    if not server.config.values.get("appendonly", False):
        return
    aof = Aof(server)
    manifest = _load_aof(server, aof)
    start_logging(server, aof, manifest)


def start_logging(server: PersistHost, aof: Aof, manifest: mf.Manifest | None, waiting: bool = False) -> None:
    """The log on: open on its files (start-up), or ``waiting`` for its
    first base (turned on at run time; the caller starts the rewrite)."""
    if waiting:
        aof.open_waiting(manifest or mf.Manifest())
    else:
        aof.open(manifest)
    server.aof = aof
    for db in server.dbs:
        db.on_expire = aof.expired
        db.on_fields_expire = aof.fields_expired


def stop_logging(server: PersistHost) -> None:
    aof = server.aof
    if aof is None:
        return
    server.aof = None
    for db in server.dbs:
        db.on_expire = None
        db.on_fields_expire = None
    if aof.rewriter.scheduled:
        aof.rewriter.scheduled = False
        server.log.notice("AOF was disabled but there is a scheduled AOF background, cancel it.")
    server.aof_offsets.log_off()  # before the last fsync, which would acknowledge them
    aof.close()


def reload_aof(server: PersistHost) -> None:
    """DEBUG LOADAOF, as Valkey's: the log written out and synced, the
    keyspace emptied, then filled again from the files the manifest on
    disk names. Raises AofLoadError when they cannot be loaded, or there
    are none (the keyspace stays empty, as in Valkey)."""
    aof = server.aof
    if aof is not None:
        aof.flush(fsync=True)
        server.aof = None  # what the replay runs is not logged again
    try:
        for db in server.dbs:
            db.clear()
        if _load_aof(server, aof if aof is not None else Aof(server)) is None:
            raise AofLoadError("There is no append only file to load")
    finally:
        if aof is not None:
            server.aof = aof


def _load_aof(server: PersistHost, aof: Aof) -> mf.Manifest | None:
    log = server.log
    path = os.path.join(aof.dirname, aof.filename + mf.MANIFEST_SUFFIX)
    try:
        manifest = mf.load(path)
    except mf.ManifestError as e:
        for line in e.log_lines()[:-1]:
            log.warning(line)
        raise AofLoadError(e.err) from None
    legacy = os.path.join(server.config.values["dir"], aof.filename)
    if os.path.isfile(legacy) and _upgrading(aof, manifest):
        manifest = _upgrade(server, aof, manifest)
    if manifest is None:
        return None
    parts = manifest.parts()
    missing = [p.name for p in parts if not os.path.isfile(os.path.join(aof.dirname, p.name))]
    if missing:
        raise AofLoadError(f"Unable to obtain the AOF file {missing[0]} length. stat: No such file or directory")
    _replay(server, [os.path.join(aof.dirname, p.name) for p in parts])
    return manifest


def _upgrading(aof: Aof, manifest: mf.Manifest | None) -> bool:
    """Whether an AOF file of the old single-file layout in ``dir`` is to be
    moved into the directory, as Valkey decides: no directory, or no
    manifest (or an empty one), or one naming only that file as its base
    while the directory lacks it (an upgrade cut short before the move)."""
    if not os.path.isdir(aof.dirname) or manifest is None or (manifest.base is None and not manifest.incrs):
        return True
    return (manifest.base is not None and not manifest.incrs and manifest.base.name == aof.filename
            and not os.path.isfile(os.path.join(aof.dirname, aof.filename)))


def _upgrade(server: PersistHost, aof: Aof, manifest: mf.Manifest | None) -> mf.Manifest:
    """Valkey's aofUpgradePrepare: the old file becomes the base (sequence
    1) of a manifest stored first, then moves into the directory."""
    os.makedirs(aof.dirname, exist_ok=True)
    manifest = manifest or mf.Manifest()
    manifest.base = mf.Part(aof.filename, 1, "b")
    manifest.base_seq = 1
    mf.store(manifest, aof.dirname, aof.filename)
    os.replace(os.path.join(server.config.values["dir"], aof.filename), os.path.join(aof.dirname, aof.filename))
    dirname = server.config.values.get("appenddirname", "appendonlydir")
    server.log.notice(f"Successfully migrated an old-style AOF file ({aof.filename}) into the AOF directory "
                      f"({dirname}).")
    return manifest


def _replay(server: PersistHost, paths: list[str]) -> None:
    loader = Loader(server)
    clock = server.clock
    saved = clock.frozen_ms
    # Nothing expires while loading (as in Valkey): time stands at zero,
    # so every absolute expiry in the log lies in the future.
    clock.frozen_ms = 0
    server.loading = True
    try:
        for i, path in enumerate(paths):
            size = os.path.getsize(path)
            if size == 0:
                continue
            loader.load_file(path, last=i == len(paths) - 1)
            if server.load_state.active:
                server.load_state.file_done(size)
    finally:
        clock.frozen_ms = saved
        server.loading = False
    server.log.notice(f"DB loaded from append only file: {loader.commands} commands")

"""What the server loads before it serves, and when the log opens.

Valkey's loadDataFromDisk in small: with ``appendonly yes`` the AOF is the
truth and is replayed (its manifest in appenddirname, or a legacy single
file ``<dir>/<appendfilename>``, which is then moved into the directory as
the base); otherwise the loaders registered in ``SNAPSHOT_LOADERS`` (the RDB
snapshot) run, in order. Either way the log opens only after the load, so
nothing loaded is logged again.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import TYPE_CHECKING

from . import manifest as mf
from .aof import Aof
from .aofload import AofLoadError, Loader

if TYPE_CHECKING:
    from ..server import Server

# Called in order when appendonly is off: each may fill the keyspace.
SNAPSHOT_LOADERS: list[Callable[[Server], None]] = []


def load_at_startup(server: Server) -> None:
    """Fill the keyspace from disk; open the log when appendonly is on.
    Raises AofLoadError when start-up must stop."""
    if not server.config.values.get("appendonly", False):
        for load in SNAPSHOT_LOADERS:
            load(server)
        return
    aof = Aof(server)
    manifest = _load_aof(server, aof)
    start_logging(server, aof, manifest)


def start_logging(server: Server, aof: Aof, manifest: mf.Manifest | None) -> None:
    aof.open(manifest)
    server.aof = aof
    for db in server.dbs:
        db.on_expire = aof.expired


def stop_logging(server: Server) -> None:
    aof = server.aof
    if aof is None:
        return
    server.aof = None
    for db in server.dbs:
        db.on_expire = None
    aof.close()


def _load_aof(server: Server, aof: Aof) -> mf.Manifest | None:
    log = server.log
    path = os.path.join(aof.dirname, aof.filename + mf.MANIFEST_SUFFIX)
    try:
        manifest = mf.load(path)
    except mf.ManifestError as e:
        raise AofLoadError(str(e)) from None
    if manifest is None:
        legacy = os.path.join(server.config.values["dir"], aof.filename)
        if not os.path.isfile(legacy):
            return None
        # Valkey's aofUpgradePrepare: the old single file becomes the base.
        os.makedirs(aof.dirname, exist_ok=True)
        manifest = mf.Manifest()
        manifest.base = mf.Part(aof.filename, 1, "b")
        manifest.base_seq = 1
        _replay(server, [os.path.join(server.config.values["dir"], aof.filename)])
        os.replace(legacy, os.path.join(aof.dirname, aof.filename))
        mf.store(manifest, aof.dirname, aof.filename)
        log.notice(f"Successfully migrated an old-style AOF into the AOF directory {aof.dirname}")
        return manifest
    parts = manifest.parts()
    missing = [p.name for p in parts if not os.path.isfile(os.path.join(aof.dirname, p.name))]
    if missing:
        raise AofLoadError(f"The AOF file {missing[0]} named by the manifest does not exist")
    _replay(server, [os.path.join(aof.dirname, p.name) for p in parts])
    return manifest


def _replay(server: Server, paths: list[str]) -> None:
    loader = Loader(server)
    clock = server.clock
    saved = clock.frozen_ms
    # Nothing expires while loading (as in Valkey): time stands at zero,
    # so every absolute expiry in the log lies in the future.
    clock.frozen_ms = 0
    server.loading = True
    try:
        for i, path in enumerate(paths):
            if os.path.getsize(path) == 0:
                continue
            loader.load_file(path, last=i == len(paths) - 1)
    finally:
        clock.frozen_ms = saved
        server.loading = False
    server.log.notice(f"DB loaded from append only file: {loader.commands} commands")

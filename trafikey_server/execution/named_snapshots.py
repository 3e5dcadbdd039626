"""Named snapshots (TRAFIKEY.SNAPSHOT): the keyspace kept in memory under a
name, to be put back as often as a test suite wants.

A suite loads its dataset once, saves it, and restores it before every test
instead of loading it again. Not to be confused with the RDB file
(``persist/snapshot.py``): nothing here touches the disk, except the
append-only file, which a restore rewrites.

SAVE copies every live key of every database with its expiry time; each
value is copied by its type's ``ValueType.copy`` (values/record.py), so the
snapshot shares nothing mutable with the keyspace and later writes leave it
alone. RESTORE copies again (the snapshot stays as saved, ready for the next
restore), so it takes time proportional to the data. Keys whose expiry has
passed by the time of the restore are left out, as a load leaves them out.

What RESTORE leaves alone: the server's clock, the function libraries and
the job core's brand key, which keeps the value the server has (or stays
absent). A restore is a FLUSHALL followed by a load, and tells what those
tell through the paths they use: WATCH (``Db.clear`` / ``Db.touch_all``),
client tracking (``Tracking.flushed``), blocked clients whose keys now hold
a value (``Db.signal_all_ready``, as after SWAPDB), no keyspace events (a
load raises none); the keys go in through the RDB loader's ``install``. It
counts its keys in ``dirty``, and as the append-only file cannot log it
command by command it rewrites the file's base from the restored keyspace.
"""

from __future__ import annotations

import gc
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Protocol

from ..values.hash import Hash
from ..values.registry import BY_CLASS
from .persist.host import PersistHost
from .persist.rdb import Loaded, install

if TYPE_CHECKING:
    from ..keyspace.db import Db
    from ..services.tracking import Tracking


class NamedSnapshotsHost(PersistHost, Protocol):
    """What TRAFIKEY.SNAPSHOT uses of the server (server.py): what a load
    uses, and the tracking table a restore flushes."""

    tracking: Tracking


# The job core's brand key (server.py writes it at start-up); a restore
# keeps the server's value of it.
BRAND_KEY = b"{emq}:version"

Keyspace = list[tuple[dict[bytes, Any], dict[bytes, int]]]


@contextmanager
def _no_gc() -> Iterator[None]:
    """The cyclic garbage collector held off while a keyspace is copied:
    the copy allocates containers by the hundred thousand, all reachable,
    and the collections their count would set off cost more than the copy
    itself (measured: a restore of 100,000 keys takes a third of the time)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _copy_db(db: Db, items: Iterable[tuple[bytes, Any]], expires: dict[bytes, int], now: int,
             drop_fields: bool) -> tuple[dict[bytes, Any], dict[bytes, int]]:
    """The live keys of one database (``items``/``expires``), each value
    copied; keys past their time at ``now`` are left out, and with
    ``drop_fields`` so are hash fields past theirs (a hash left with none
    goes too)."""
    out: dict[bytes, Any] = {}
    out_exp: dict[bytes, int] = {}
    copiers = {cls: vt.copy for cls, vt in BY_CLASS.items()}
    for key, v in items:
        if expires:
            t = expires.get(key)
            if t is not None:
                if t < now:
                    continue
                out_exp[key] = t
        t_ = type(v)
        if t_ is not bytes:  # bytes are immutable: shared, not copied
            v = copiers[t_](v)
            if drop_fields and t_ is Hash and v.ttl is not None:
                db.drop_expired_fields(v)
                if not v:
                    out_exp.pop(key, None)
                    continue
        out[key] = v
    return out, out_exp


class NamedSnapshots:
    """The snapshots a server holds, by name."""

    def __init__(self, server: NamedSnapshotsHost) -> None:
        self.server = server
        self.saved: dict[bytes, Keyspace] = {}

    def names(self) -> list[bytes]:
        return sorted(self.saved)

    def save(self, name: bytes) -> None:
        """Keep a copy of every database under name (replacing one of that name)."""
        now = self.server.clock.ms()
        with _no_gc():
            self.saved[name] = [_copy_db(db, db.items(), db.expires, now, True) for db in self.server.dbs]

    def delete(self, names: list[bytes]) -> int:
        n = 0
        for name in names:
            if self.saved.pop(name, None) is not None:
                n += 1
        return n

    def keys(self, name: bytes) -> int:
        """How many keys the snapshot holds."""
        return sum(len(data) for data, _ in self.saved[name])

    def restore(self, name: bytes) -> int:
        """Put the snapshot in place of every database (KeyError for an
        unknown name); the number of keys restored."""
        with _no_gc():
            return self._restore(name)

    def _restore(self, name: bytes) -> int:
        kept = self.saved[name]
        server = self.server
        now = server.clock.ms()
        res = Loaded()
        restored = 0
        for dbid, (data, expires) in enumerate(kept):
            if data:
                res.dbs[dbid] = _copy_db(server.dbs[dbid], data.items(), expires, now, False)
                restored += len(res.dbs[dbid][0])
        # The brand stays as the server has it, whatever the snapshot holds.
        db0 = server.dbs[0]
        brand = db0.peek(BRAND_KEY)
        brand_exp = db0.expires.get(BRAND_KEY)
        data0, exp0 = res.dbs.setdefault(0, ({}, {}))
        if data0.pop(BRAND_KEY, None) is not None:
            restored -= 1
        exp0.pop(BRAND_KEY, None)
        if brand is not None:
            data0[BRAND_KEY] = BY_CLASS[type(brand)].copy(brand)
            if brand_exp is not None:
                exp0[BRAND_KEY] = brand_exp
        # FLUSHALL: watchers of stored keys touched, clients blocked on a
        # deleted key told (Db.clear), tracking clients told "all keys".
        removed = 0
        for db in server.dbs:
            removed += db.clear()
        server.tracking.flushed()
        # The load, as DEBUG RELOAD puts a file's keys in place (no events;
        # the function libraries left alone).
        install(server, res, b"append")
        for db in server.dbs:
            if db.watchers:
                db.touch_all(None)  # keys that were absent and now hold a value
            if db.blocking:
                db.signal_all_ready()  # as after SWAPDB: waiting clients may be served
        server.dirty += removed + restored
        if server.aof is not None:
            server.aof.rebase()
        return restored

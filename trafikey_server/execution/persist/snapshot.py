"""Snapshots on disk: SAVE, BGSAVE in a forked child, the save rules,
loading at start-up, and the save that SHUTDOWN and SIGTERM make.

Every save writes ``temp-<pid>.rdb`` in ``dir``, flushes it to disk and
renames it over ``dbfilename``, so the previous snapshot stays whole until
the new one is complete. BGSAVE forks: the child owns a copy-on-write image
of the keyspace as it was at the fork, writes it and exits, while the parent
keeps serving; the server's periodic tick reaps the child without waiting.

The change count is ``server.dirty`` (one per successful write command);
this module remembers its value at the last successful save, so
``rdb_changes_since_last_save`` and the save rules need nothing on the
write path.
"""

from __future__ import annotations

import os
import time
from typing import TYPE_CHECKING

from ...services.config import register_apply
from ...services.limits import MISCONF, apply_maxmemory
from . import manifest as mf
from . import rdb
from .child import fork, kill, reap
from .oneoff import rewrite_child

if TYPE_CHECKING:
    from .host import PersistHost

# Valkey's CONFIG_BGSAVE_RETRY_DELAY: after a failed background save, the
# save rules wait this long before the next attempt.
RETRY_DELAY = 5


class Snapshots:
    def __init__(self, server: PersistHost) -> None:
        self.server = server
        now = time.time()
        self.lastsave = int(now)
        self.dirty_at_save = 0
        self.saves = 0
        self._bgsave_ok = True
        self.last_bgsave_secs = -1
        self.last_try = 0.0
        self.child_pid = 0
        self.child_started = 0.0
        self.child_dirty = 0
        self.scheduled = False
        self.keys_loaded = 0
        self.keys_expired = 0
        self._rules_text: str | None = None
        self._rules: list[tuple[int, int]] = []

    # -- where --------------------------------------------------------------------

    @property
    def last_bgsave_ok(self) -> bool:
        return self._bgsave_ok

    @last_bgsave_ok.setter
    def last_bgsave_ok(self, ok: bool) -> None:
        """A save's outcome; a change may start or end MISCONF."""
        if ok != self._bgsave_ok:
            self._bgsave_ok = ok
            refresh_disk_error(self.server)

    def path(self) -> str:
        v = self.server.config.values
        path: str = os.path.join(v["dir"], v["dbfilename"])
        return path

    def _temp(self, pid: int) -> str:
        return os.path.join(self.server.config.values["dir"], f"temp-{pid}.rdb")

    def changes(self) -> int:
        return self.server.dirty - self.dirty_at_save

    def rules(self) -> list[tuple[int, int]]:
        text = self.server.config.values.get("save", "")
        if text != self._rules_text:
            words = text.split()
            self._rules = [(int(words[i]), int(words[i + 1])) for i in range(0, len(words) - 1, 2)]
            self._rules_text = text
        return self._rules

    # -- writing --------------------------------------------------------------------

    def _write_file(self, pid: int) -> None:
        """Write the snapshot to the temp file and move it into place."""
        tmp = self._temp(pid)
        try:
            with open(tmp, "wb") as f:
                rdb.write(self.server, f)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, self.path())
        except BaseException:
            try:
                os.unlink(tmp)
            except OSError:
                pass
            raise
        try:
            fd = os.open(os.path.dirname(self.path()) or ".", os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
        except OSError:
            pass

    def save(self) -> bool:
        """A synchronous save (SAVE, SHUTDOWN, DEBUG RELOAD); False on failure,
        which is logged. As Valkey's rdbSave, a failure leaves the last
        background save's status as it was (so it starts no MISCONF); a
        success sets it ok."""
        log = self.server.log
        try:
            self._write_file(os.getpid())
        except OSError as e:
            log.warning(f"Failed saving the DB: {e}")
            return False
        log.notice("DB saved on disk")
        self.dirty_at_save = self.server.dirty
        self.lastsave = int(time.time())
        self.last_bgsave_ok = True
        return True

    def bgsave(self) -> bool:
        """Fork a child that saves; False if the fork failed."""
        if self.child_pid:
            return False
        self.saves += 1
        self.last_try = time.time()
        dirty = self.server.dirty
        try:
            pid = fork(self.server, lambda: self._write_file(os.getpid()), "Background save")
        except OSError as e:
            self.last_bgsave_ok = False
            self.server.log.warning(f"Can't save in background: fork: {e}")
            return False
        self.child_pid = pid
        self.child_started = time.time()
        self.child_dirty = dirty
        self.server.log.notice(f"Background saving started by pid {pid}")
        return True

    def reap(self) -> None:
        """Collect a finished child, if any, without waiting."""
        if not self.child_pid:
            return
        code = reap(self.child_pid)
        if code is not None:
            self._child_done(code)

    def _child_done(self, code: int) -> None:
        pid = self.child_pid
        self.child_pid = 0
        self.last_bgsave_secs = int(time.time() - self.child_started)
        log = self.server.log
        if code == 0:
            log.notice("Background saving terminated with success")
            self.dirty_at_save = self.child_dirty
            self.lastsave = int(time.time())
            self.last_bgsave_ok = True
            return
        if code < 0:
            log.warning(f"Background saving terminated by signal {-code}")
        else:
            log.warning("Background saving error")
        self.last_bgsave_ok = False
        try:
            os.unlink(self._temp(pid))
        except OSError:
            pass

    def kill_child(self) -> None:
        """Stop a running background save and remove its temp file."""
        pid = self.child_pid
        if not pid:
            return
        kill(pid)
        self.child_pid = 0
        try:
            os.unlink(self._temp(pid))
        except OSError:
            pass

    # -- the periodic tick ------------------------------------------------------------------

    def cron(self) -> None:
        """Reap a finished child; start a background save when a save rule
        (or BGSAVE SCHEDULE) asks for one. Cheap when nothing is due."""
        if self.child_pid:
            self.reap()
            if self.child_pid:
                return
        if self.scheduled:
            if rewrite_child(self.server).child_pid:
                return  # BGSAVE SCHEDULE waits for the rewrite's child
            self.scheduled = False
            self.bgsave()
            return
        rules = self.rules()
        if not rules:
            return
        if rewrite_child(self.server).child_pid:
            return  # one child at a time, as Valkey forks
        now = time.time()
        changes = self.changes()
        since = int(now) - self.lastsave
        for secs, need in rules:
            if changes >= need and since > secs and (now - self.last_try > RETRY_DELAY or self.last_bgsave_ok):
                self.server.log.notice(f"{need} changes in {secs} seconds. Saving...")
                self.bgsave()
                return

    # -- start and end --------------------------------------------------------------------

    def load_file(self) -> bool:
        """Load ``dir/dbfilename`` if it exists; True if it did. A bad file
        raises ``rdb.RdbError`` and is left untouched."""
        path = self.path()
        if not os.path.exists(path):
            return False
        started = time.monotonic()
        loading = self.server.load_state
        res = rdb.load(self.server, path, progress=loading.key if loading.active else None)
        self.keys_loaded = res.keys_loaded
        self.keys_expired = res.keys_expired
        self.server.log.notice(
            f"Done loading RDB, keys loaded: {res.keys_loaded}, keys expired: {res.keys_expired}.")
        self.server.log.notice(f"DB loaded from disk: {time.monotonic() - started:.3f} seconds")
        return True

    def remove_temp(self) -> None:
        """The temp file a save of this process is writing, removed (a
        shutdown cut short by a second SIGINT)."""
        try:
            os.unlink(self._temp(os.getpid()))
        except OSError:
            pass

    def shutdown_save(self, save: bool, nosave: bool, force: bool) -> bool:
        """What SHUTDOWN and SIGTERM do before exit: stop a background save,
        then save when asked to or when save rules are set. False (and the
        server keeps running) if that save failed, unless forced."""
        if self.child_pid:
            self.server.log.warning("There is a child saving an .rdb. Killing it!")
            self.kill_child()
        aof = self.server.aof
        if aof is not None and aof.waiting and aof.rewriter.child_pid:
            # The log was turned on and its first base is being written:
            # without it the keyspace would not be on disk.
            if not force:
                self.server.log.warning("Writing initial AOF, can't exit.")
                return False
            self.server.log.warning("Writing initial AOF. Exit anyway.")
        if nosave or not (save or self.rules()):
            return True
        self.server.log.notice("Saving the final RDB snapshot before exiting.")
        if self.save():
            return True
        if force:
            self.server.log.warning("Error trying to save the DB. Exit anyway.")
            return True
        self.server.log.warning("Error trying to save the DB, can't exit.")
        return False


def refresh_disk_error(server: PersistHost) -> None:
    """Valkey's writeCommandsDeniedByDiskError, kept on the server as
    ``disk_error`` (the MISCONF text, or None) for dispatch and scripts:
    with stop-writes-on-bgsave-error and save rules, a failed last save
    refuses writes; with the log on, so does a failed last AOF write. Called
    whenever one of those changes; the command table follows it (limits.py)."""
    v = server.config.values
    err: bytes | None = None
    if v.get("stop-writes-on-bgsave-error", True) and server.snapshots.rules() and not server.snapshots.last_bgsave_ok:
        err = MISCONF
    elif server.aof is not None and not server.aof.last_write_ok:
        err = b"MISCONF Errors writing to the AOF file: " + server.aof.last_write_error.encode()
    if err != server.disk_error:
        server.disk_error = err
        apply_maxmemory(server, server.maxmemory)


register_apply("disk-error", lambda server, value: refresh_disk_error(server))


def aof_present(server: PersistHost) -> bool:
    """Whether an append-only log exists where this configuration looks for
    one (a manifest in ``appenddirname`` or a single legacy file)."""
    v = server.config.values
    dirname, name = mf.aof_paths(v)
    manifest = os.path.join(dirname, name + mf.MANIFEST_SUFFIX)
    return os.path.exists(manifest) or os.path.exists(os.path.join(v["dir"], name))


def load_at_startup(server: PersistHost) -> bool:
    """Load the snapshot before the server accepts clients, unless the
    append-only log is on and present (then it is the log that holds the
    data, and its loader runs instead). True if a snapshot was loaded."""
    if server.config.values.get("appendonly", False) and aof_present(server):
        return False
    return server.snapshots.load_file()

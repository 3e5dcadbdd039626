"""Replaying an append-only file at start-up.

The file is read command by command as Valkey's loadSingleAppendOnlyFile
reads it: each record is ``*<argc>`` then ``$<len>`` and the bytes of each
argument; a line starting with ``#`` is an annotation. The commands run
through the table's handlers on a client of their own, with MULTI queuing
and EXEC running as in a transaction, before any client is served and with
the log itself closed, so nothing is logged twice.

A file that starts with an RDB signature holds the keyspace as an RDB file
first (a ``.base.rdb`` written under ``aof-use-rdb-preamble yes``, or an
old single file's preamble), loaded whole as Valkey's rdbLoadRio loads it;
commands may follow it. A preamble that does not load stops start-up.

A file that ends inside a record (a crash mid-write) is *truncated*: with
``aof-load-truncated yes`` and when it is the last file, the partial record
(and an unfinished MULTI block) is cut off the file with a warning and
loading goes on; otherwise start-up stops. Anything else that is not a
record is *garbage*: start-up stops with an error naming the file and the
offset of the bad record.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from ...util.errors import CommandError
from ..dispatch import resolve
from . import rdb

if TYPE_CHECKING:
    from .host import PersistHost


class AofLoadError(Exception):
    """Start-up must stop: the message says which file and why."""


class Truncated(Exception):
    pass


class Garbage(Exception):
    def __init__(self, offset: int) -> None:
        self.offset = offset


def records(data: bytes, pos: int = 0) -> list[tuple[int, int, list[bytes]]]:
    """(start, end, argv) of every whole record from pos on; raises
    Truncated at a record cut short by the end of data, Garbage at anything
    else."""
    out: list[tuple[int, int, list[bytes]]] = []
    n = len(data)
    while pos < n:
        if data[pos] == 35:  # '#': an annotation line
            eol = data.find(b"\n", pos)
            if eol < 0:
                raise Truncated()
            pos = eol + 1
            continue
        end, argv = _record(data, pos)
        out.append((pos, end, argv))
        pos = end
    return out


def _record(data: bytes, start: int) -> tuple[int, list[bytes]]:
    """The record whose ``*count`` line is at start: where it ends, and its
    arguments."""
    n = len(data)
    argc, pos = _header(data, start, 42, start)  # '*'
    if argc < 1:
        raise Garbage(start)
    argv: list[bytes] = []
    for _ in range(argc):
        if pos >= n:
            raise Truncated()
        ln, pos = _header(data, pos, 36, start)  # '$'
        if ln < 0:
            raise Garbage(start)
        if pos + ln + 2 > n:
            raise Truncated()
        if data[pos + ln:pos + ln + 2] != b"\r\n":
            raise Garbage(start)
        argv.append(data[pos:pos + ln])
        pos += ln + 2
    return pos, argv


def _header(data: bytes, pos: int, kind: int, start: int) -> tuple[int, int]:
    """The number on a ``*count`` or ``$length`` line at pos, and where the
    line ends; Truncated when the file stops inside the line, Garbage
    (at the record's start) when it is not such a line."""
    if data[pos] != kind:
        raise Garbage(start)
    eol = data.find(b"\r\n", pos)
    if eol < 0:
        if _digits_so_far(data[pos + 1:]):
            raise Truncated()
        raise Garbage(start)
    try:
        return int(data[pos + 1:eol]), eol + 2
    except ValueError:
        raise Garbage(start) from None


def _digits_so_far(tail: bytes) -> bool:
    """A length line cut by the end of the file: digits (maybe a sign and a CR) only."""
    t = tail.rstrip(b"\r")
    return len(tail) < 24 and (t == b"" or t.lstrip(b"-").isdigit())


def _first(data: bytes, pos: int) -> tuple[int, int, list[bytes]] | None:
    """The record at pos (after any annotation lines) of data already known
    to hold no garbage before its cut; None at the end, Truncated when data
    stops inside it."""
    n = len(data)
    while pos < n and data[pos] == 35:
        eol = data.find(b"\n", pos)
        if eol < 0:
            raise Truncated()
        pos = eol + 1
    if pos >= n:
        return None
    end, argv = _record(data, pos)
    return pos, end, argv


class Loader:
    """Replays files into a server whose log is not open yet."""

    def __init__(self, server: PersistHost) -> None:
        self.server = server
        self.client = server.internal_client()
        self.client.name = b"aof-loader"
        self.queued: list[list[bytes]] | None = None
        self.commands = 0

    def load_file(self, path: str, last: bool) -> bool:
        """Replay one file; True when it was truncated (and trimmed)."""
        log = self.server.log
        name = os.path.basename(path)
        with open(path, "rb") as f:
            data = f.read()
        start = 0
        if data.startswith(b"REDIS") or data.startswith(b"VALKEY"):
            start = self._preamble(data, name)
        truncated = False
        try:
            recs = records(data, start)
        except Garbage as g:
            raise AofLoadError(
                f"Bad file format reading the append only file {name} at offset {g.offset}: "
                "make a backup of your AOF file, then use valkey-check-aof --fix <filename.manifest>") from None
        except Truncated:
            truncated = True
            recs = self._prefix(data, start)
        self.queued = None
        multi_start = 0
        valid = start
        loading = self.server.load_state
        for start, end, argv in recs:
            if argv[0].lower() == b"multi":
                multi_start = start
            self._run(argv, name)
            valid = end
            if loading.active:
                loading.command(end)
        if self.queued is not None:
            # A MULTI whose EXEC never reached the file: dropped, as Valkey does.
            log.warning(f"Revert incomplete MULTI/EXEC transaction in AOF file {name}")
            self.queued = None
            valid = multi_start
            truncated = True
        if truncated:
            if not (last and self.server.config.values.get("aof-load-truncated", True)):
                if not last:
                    raise AofLoadError(
                        f"Fatal error: the truncated file {name} is not the last file")
                raise AofLoadError(
                    f"Unexpected end of file reading the append only file {name} at offset {valid}. "
                    "Make a backup of your AOF file, then use valkey-check-aof --fix <filename.manifest>, "
                    "or set the 'aof-load-truncated' configuration option to yes and restart the server.")
            log.warning(f"!!! Warning: short read while loading the AOF file {name}!!!")
            log.warning(f"!!! Truncating the AOF {name} at offset {valid} !!!")
            os.truncate(path, valid)
            log.warning(f"AOF {name} loaded anyway because aof-load-truncated is enabled")
        return truncated

    def _preamble(self, data: bytes, name: str) -> int:
        """Load the RDB file data starts with; where it ends. An old single
        file (named as appendfilename) calls it a preamble, a base file of
        the directory a base, in Valkey's log lines."""
        log = self.server.log
        old_style = name == self.server.config.values.get("appendfilename", "appendonly.aof")
        log.notice("Reading RDB preamble from AOF file..." if old_style else "Reading RDB base file on AOF loading...")
        check = rdb.checksum_checked(self.server)
        try:
            loading = self.server.load_state
            res = rdb.parse(self.server, data, check, tail=True, progress=loading.key if loading.active else None)
            # A library already loaded (DEBUG LOADAOF keeps them) is replaced.
            rdb.install(self.server, res, b"replace")
        except rdb.RdbError as e:
            log.warning(rdb.failure_words(e))
            what = "the RDB preamble of the AOF file" if old_style else "the RDB base file"
            raise AofLoadError(f"Error reading {what} {name}, AOF loading aborted") from None
        if old_style:
            log.notice("Reading the remaining AOF tail...")
        return res.end

    def _prefix(self, data: bytes, pos: int) -> list[tuple[int, int, list[bytes]]]:
        """The whole records of a file that ends mid-record (garbage before
        that point still stops start-up)."""
        out: list[tuple[int, int, list[bytes]]] = []
        while pos < len(data):
            try:
                rec = _first(data, pos)
            except Truncated:
                break
            except Garbage:  # pragma: no cover - records saw no garbage
                break
            if rec is None:
                break
            out.append(rec)
            pos = rec[1]
        return out

    def _run(self, argv: list[bytes], name: str) -> None:
        c = self.client
        try:
            cmd = resolve(c, argv)
        except CommandError:
            raise AofLoadError(
                f"Unknown command '{argv[0].decode(errors='replace')}' reading the append only file {name}"
            ) from None
        root = cmd.parent or cmd
        verb = root.bname
        if verb == b"multi":
            self.queued = []
            return
        if verb == b"exec":
            queued, self.queued = self.queued or [], None
            for q in queued:
                self._call(q)
            return
        if self.queued is not None:
            self.queued.append(argv)
            return
        self._call(argv)

    def _call(self, argv: list[bytes]) -> None:
        c = self.client
        try:
            cmd = resolve(c, argv)
            cmd.handler(c, argv)
        except CommandError:
            pass  # as Valkey: an error reply while loading is ignored
        self.commands += 1

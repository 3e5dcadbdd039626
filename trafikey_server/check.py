"""``trafikey-server --check-aof`` and ``--check-rdb``: verify persistence files.

They answer as valkey-check-aof and valkey-check-rdb do, in their words and
exit codes (0 valid, 1 not), using the same readers the server loads with,
so a file they accept is a file start-up accepts. ``--check-aof --fix``
cuts a damaged or truncated last file back to its last whole record after
asking, as valkey-check-aof does. Not mirrored: the per-key lines and
``--format``/``--stats`` of valkey-check-rdb, and ``--truncate-to-timestamp``.
"""

from __future__ import annotations

import os
import sys
from typing import TextIO

from .execution.persist import manifest as mf
from .execution.persist.aofload import Garbage, Truncated, records
from .execution.persist.rdb import RdbError, parse
from .server import Server
from .services.config import parse_args

RDB_SIGNATURES = (b"REDIS", b"VALKEY")


def _server() -> Server:
    """A server that is never started: the RDB reader wants its limits."""
    return Server(parse_args(["--databases", "16"]))


def _rdb_end(data: bytes) -> tuple[int, str | None, int]:
    """(end of the RDB part, error or None, keys read), as the server's reader sees it."""
    try:
        res = parse(_server(), data)
        return len(data), None, res.keys_loaded
    except RdbError as e:
        text = str(e)
        marker = "garbage after the end of the file (offset "
        if marker in text:  # an RDB preamble followed by an AOF tail
            end = int(text.split(marker, 1)[1].rstrip(")"))
            res = parse(_server(), data[:end])
            return end, None, res.keys_loaded
        return 0, text, 0


def check_rdb(path: str, out: TextIO = sys.stdout) -> int:
    out.write(f"[offset 0] Checking RDB file {path}\n")
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        out.write(f"--- RDB ERROR DETECTED ---\n[offset 0] Cannot open file: {e.strerror}\n")
        return 1
    end, err, keys = _rdb_end(data)
    if err is not None or end != len(data):
        out.write("--- RDB ERROR DETECTED ---\n")
        out.write(f"[offset {end}] {err or 'garbage after the end of the file'}\n")
        out.write(f"[offset {end}] Check RDB returned error code 1 (0 means success)\n")
        return 1
    out.write(f"[offset {end}] Checksum OK\n")
    out.write(f"[offset {end}] Check RDB returned error code 0 (0 means success)\n")
    out.write(f"[offset {end}] \\o/ RDB looks OK! \\o/\n[info] {keys} keys read\n")
    return 0


class _Invalid(Exception):
    pass


def _check_single(name: str, path: str, last: bool, fix: bool, preamble: bool, out: TextIO,
                  confirm: TextIO) -> str:
    """'ok', 'empty' or 'truncated'; raises _Invalid with the exit done."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        out.write(f"Cannot open file {path}: {e.strerror}, aborting...\n")
        raise _Invalid() from None
    if not data:
        return "empty"
    start = 0
    if preamble:
        end, err, _ = _rdb_end(data)
        if err is not None:
            out.write("RDB preamble of AOF file is not sane, aborting.\n")
            raise _Invalid()
        out.write("RDB preamble is OK, proceeding with AOF tail...\n")
        start = end
    ok_up_to, error = _scan(data, start)
    if error == "format error":
        out.write(f"AOF {name} format error\n")
    elif error:
        out.write(error + "\n")
    diff = len(data) - ok_up_to
    line = data[:ok_up_to].count(b"\n") + 1
    out.write(f"AOF analyzed: filename={name}, size={len(data)}, ok_up_to={ok_up_to}, "
              f"ok_up_to_line={line}, diff={diff}\n")
    if diff == 0:
        return "ok"
    if not fix:
        out.write(f"AOF {name} is not valid. Use the --fix option to try fixing it.\n")
        raise _Invalid()
    if not last:
        out.write(f"Failed to truncate AOF {name} because it is not the last file\n")
        raise _Invalid()
    out.write(f"This will shrink the AOF {name} from {len(data)} bytes, with {diff} bytes, to {ok_up_to} bytes\n")
    out.write("Continue? [y/N]: ")
    out.flush()
    answer = confirm.readline()
    if not answer.lower().startswith("y"):
        out.write("Aborting...\n")
        raise _Invalid()
    os.truncate(path, ok_up_to)
    return "truncated"


def _scan(data: bytes, start: int) -> tuple[int, str]:
    """The offset up to which data holds whole records (a MULTI block
    counts only once its EXEC is there), and what stops the scan there:
    "" for garbage (the caller says "format error"), a sentence otherwise."""
    n = len(data)
    pos = ok = start
    multi = False
    while pos < n:
        if data[pos] == 35:  # '#': an annotation line
            eol = data.find(b"\n", pos)
            if eol < 0:
                return ok, "Reached EOF inside an annotation"
            pos = eol + 1
            if not multi:
                ok = pos
            continue
        try:
            got = _records_one(data, pos)
        except Truncated:
            return ok, "Reached EOF before the end of a record"
        except Garbage:
            return ok, "format error"
        end, name = got
        if name == b"multi":
            if multi:
                return ok, "Unexpected MULTI"
            multi = True
        elif name == b"exec":
            if not multi:
                return ok, "Unexpected EXEC"
            multi = False
        pos = end
        if not multi:
            ok = pos
    if multi:
        return ok, "Reached EOF before reading EXEC for MULTI"
    return ok, ""


def _records_one(data: bytes, pos: int) -> tuple[int, bytes]:
    """The end of the record at pos and its command name, lower case."""
    eol = data.find(b"\r\n", pos)
    limit = eol if eol >= 0 else len(data)
    # records checks one whole record when given exactly its bytes; find
    # them by walking the lengths it will verify.
    if data[pos] != 42:
        raise Garbage(pos)
    if eol < 0:
        raise Truncated()
    try:
        argc = int(data[pos + 1:limit])
    except ValueError:
        raise Garbage(pos) from None
    p = eol + 2
    for _ in range(max(argc, 0)):
        e = data.find(b"\r\n", p)
        if e < 0:
            raise Truncated()
        try:
            ln = int(data[p + 1:e])
        except ValueError:
            raise Garbage(pos) from None
        p = e + 2 + ln + 2
        if p > len(data):
            raise Truncated()
    recs = records(data[pos:p])
    return p, recs[0][2][0].lower()


def _is_rdb(path: str) -> bool:
    try:
        with open(path, "rb") as f:
            head = f.read(6)
    except OSError:
        return False
    return head.startswith(RDB_SIGNATURES)


def check_aof(path: str, fix: bool = False, out: TextIO = sys.stdout, confirm: TextIO = sys.stdin) -> int:
    results = {"ok": "is valid", "empty": "is empty", "truncated": None}

    def report(kind: str, name: str, res: str) -> None:
        if res == "truncated":
            out.write(f"Successfully truncated AOF {name}\n")
        else:
            out.write(f"{kind} {name} {results[res]}\n")

    try:
        if path.endswith(".manifest"):
            out.write("Start checking Multi Part AOF\n")
            try:
                m = mf.load(path)
            except mf.ManifestError as e:
                out.write(f"{e}\n")
                return 1
            if m is None:
                out.write(f"Cannot open file {path}, aborting...\n")
                return 1
            dirpath = os.path.dirname(path)
            parts = ([m.base] if m.base is not None else []) + list(m.incrs)
            for i, part in enumerate(parts):
                fpath = os.path.join(dirpath, part.name)
                last = i == len(parts) - 1
                if part is m.base:
                    rdb = _is_rdb(fpath)
                    out.write(f"Start to check BASE AOF ({'RDB' if rdb else 'RESP'} format).\n")
                    report("BASE AOF", part.name, _check_single(part.name, fpath, last, fix, rdb, out, confirm))
                else:
                    if i == (1 if m.base is not None else 0):
                        out.write("Start to check INCR files.\n")
                    report("INCR AOF", part.name, _check_single(part.name, fpath, last, fix, False, out, confirm))
            out.write("All AOF files and manifest are valid\n")
            return 0
        out.write("Start checking Old-Style AOF\n")
        res = _check_single(path, path, True, fix, _is_rdb(path), out, confirm)
        report("AOF", path, res)
        return 0
    except _Invalid:
        return 1

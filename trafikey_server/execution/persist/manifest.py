"""The multi-part AOF's manifest, in Valkey 9.1's layout.

``<appenddirname>/<appendfilename>.manifest`` lists one base file (type
``b``, the compacted keyspace) and the incremental files (type ``i``) written
since, in replay order; type ``h`` names history files a rewrite left to
delete. Each line is ``file <name> seq <n> type <b|h|i>``, the name quoted
as sdscatrepr quotes it when it holds blanks or other bytes that need it.
The manifest is replaced atomically (a temp file renamed over it), so a
crash leaves either the old history or the new one, never a mix.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any, Protocol

from ...services.observe import quote
from ..scripting.engine import split_args

MANIFEST_SUFFIX = ".manifest"
TEMP_PREFIX = "temp-"


class ManifestError(Exception):
    """A manifest Valkey would refuse: its words, and where."""

    def __init__(self, err: str, path: str, line_no: int = 0, line: bytes | None = None) -> None:
        super().__init__(f"{err}: {path}" + (f" line {line_no}" if line_no else ""))
        self.err = err
        self.line_no = line_no
        self.line = line

    def log_lines(self) -> list[str]:
        """What Valkey logs before it exits."""
        out = ["*** FATAL AOF MANIFEST FILE ERROR ***"]
        if self.line is not None:
            out.append(f"Reading the manifest file, at line {self.line_no}")
            out.append(f">>> '{self.line.decode(errors='replace')}'")
        return [*out, self.err]


@dataclass
class Part:
    name: str
    seq: int
    type: str  # "b", "i" or "h"


@dataclass
class Manifest:
    base: Part | None = None
    incrs: list[Part] = field(default_factory=list)
    history: list[Part] = field(default_factory=list)
    base_seq: int = 0
    incr_seq: int = 0

    def parts(self) -> list[Part]:
        """Replay order: the base, then every incremental file."""
        return ([self.base] if self.base else []) + list(self.incrs)

    def new_incr(self, filename: str) -> Part:
        self.incr_seq += 1
        p = Part(f"{filename}.{self.incr_seq}.incr.aof", self.incr_seq, "i")
        self.incrs.append(p)
        return p

    def new_base_name(self, filename: str, rdb: bool = False) -> Part:
        """The next base: ``.base.rdb`` when it is written as an RDB file
        (aof-use-rdb-preamble yes), else ``.base.aof``."""
        self.base_seq += 1
        return Part(f"{filename}.{self.base_seq}.base.{'rdb' if rdb else 'aof'}", self.base_seq, "b")

    def retire_base(self) -> None:
        """The base becomes the newest history (a rewrite replaces it)."""
        if self.base is not None:
            self.history.insert(0, Part(self.base.name, self.base.seq, "h"))
            self.base = None

    def retire_incrs(self, keep_last: bool) -> None:
        """The incremental files a rewrite covered become history, oldest
        first, ahead of the older history (Valkey's order); ``keep_last``
        keeps the one the log writes now."""
        gone = self.incrs[:-1] if keep_last else self.incrs
        self.incrs = self.incrs[-1:] if keep_last else []
        self.history[:0] = [Part(p.name, p.seq, "h") for p in gone]

    def render(self) -> bytes:
        out = []
        # A history entry is type h whatever it was (a base or an
        # incremental file that a rewrite or a restart of the log replaced).
        kinds = [(p, b"b") for p in ([self.base] if self.base else [])]
        kinds += [(p, b"h") for p in self.history] + [(p, b"i") for p in self.incrs]
        for p, kind in kinds:
            out.append(b"file %s seq %d type %s\n" % (_repr(p.name), p.seq, kind))
        return b"".join(out)


def _repr(name: str) -> bytes:
    """A file name as Valkey writes it: bare, or quoted by sdscatrepr when
    sdsneedsrepr says so (a blank, a quote, a backslash, an unprintable byte)."""
    raw = name.encode()
    if all(33 <= b < 127 and b not in b"\"\\" for b in raw):
        return raw
    return quote(raw)


# Valkey reads a manifest line into a buffer of this many bytes.
MAX_LINE = 1024


def parse(text: bytes, path: str) -> Manifest:
    """Read a manifest as Valkey's aofLoadManifestFromFile does, line by
    line: comments skipped; an empty file, a blank line, a line with no
    newline (too long, or the last one cut), fewer than three pairs, a path
    for a name, a missing name, seq or type, a second base, a non-rising
    incremental seq or an unknown type each stop the load with its words."""
    m = Manifest()
    if not text:
        raise ManifestError("Found an empty AOF manifest", path)
    n = 0
    pos = 0
    while pos < len(text):
        eol = text.find(b"\n", pos)
        raw = text[pos:] if eol < 0 else text[pos:eol + 1]
        if len(raw) > MAX_LINE:
            raw = raw[:MAX_LINE]
        pos += len(raw)
        n += 1
        if raw.startswith(b"#"):
            continue
        if not raw.endswith(b"\n"):
            raise ManifestError("The AOF manifest file contains too long line", path)
        line = raw.strip(b" \t\r\n")
        if not line:
            raise ManifestError("Invalid AOF manifest file format", path, n, line)
        words = split_args(line)
        if words is None or len(words) < 6 or len(words) % 2:
            raise ManifestError("Invalid AOF manifest file format", path, n, line)
        name: bytes | None = None
        seq = 0
        kind = ""
        for k in range(0, len(words), 2):
            key = words[k].lower()
            if key == b"file":
                name = words[k + 1]
                if b"/" in name:
                    raise ManifestError("File can't be a path, just a filename", path, n, line)
            elif key == b"seq":
                seq = _atoll(words[k + 1])
            elif key == b"type":
                kind = words[k + 1][:1].decode("latin-1")
        if not name or not seq or not kind:
            raise ManifestError("Invalid AOF manifest file format", path, n, line)
        part = Part(name.decode(errors="surrogateescape"), seq, kind)
        if kind == "b":
            if m.base is not None:
                raise ManifestError("Found duplicate base file information", path, n, line)
            m.base = part
            m.base_seq = seq
        elif kind == "h":
            m.history.append(part)
        elif kind == "i":
            if seq <= m.incr_seq:
                raise ManifestError("Found a non-monotonic sequence number", path, n, line)
            m.incrs.append(part)
            m.incr_seq = seq
        else:
            raise ManifestError("Unknown AOF file type", path, n, line)
    return m


def _atoll(b: bytes) -> int:
    """C's atoll: leading blanks, a sign, then digits; anything else ends it."""
    t = b.lstrip(b" \t\n\r\f\v")
    k = 1 if t[:1] in (b"+", b"-") else 0
    while k < len(t) and 48 <= t[k] <= 57:
        k += 1
    digits = t[:k]
    return int(digits) if digits.lstrip(b"+-") else 0


def aof_paths(cfg: dict[str, Any]) -> tuple[str, str]:
    """The log's directory and its file name, as the configuration says."""
    dirname = os.path.join(cfg["dir"], cfg.get("appenddirname", "appendonlydir"))
    return dirname, cfg.get("appendfilename", "appendonly.aof")


def load(path: str) -> Manifest | None:
    try:
        with open(path, "rb") as f:
            text = f.read()
    except FileNotFoundError:
        return None
    return parse(text, path)


def store(m: Manifest, dirname: str, filename: str) -> None:
    """Write the manifest atomically: temp file, fsync, rename, fsync the directory."""
    final = os.path.join(dirname, filename + MANIFEST_SUFFIX)
    temp = os.path.join(dirname, TEMP_PREFIX + filename + MANIFEST_SUFFIX)
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        data = m.render()
        while data:
            data = data[os.write(fd, data):]
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(temp, final)
    fsync_dir(dirname)


class Notices(Protocol):
    def notice(self, msg: str) -> None: ...


def collect_history(m: Manifest, dirname: str, filename: str, cfg: dict[str, Any], log: Notices) -> None:
    """Delete the history files and store the manifest without them, as
    Valkey's aofDelHistoryFiles, unless aof-disable-auto-gc keeps them."""
    if cfg.get("aof-disable-auto-gc", False) or not m.history:
        return
    for p in m.history:
        log.notice(f"Removing the history file {p.name} in the background")
        try:
            os.unlink(os.path.join(dirname, p.name))
        except OSError:
            pass
    m.history.clear()
    store(m, dirname, filename)


def fsync_dir(dirname: str) -> None:
    fd = os.open(dirname, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)

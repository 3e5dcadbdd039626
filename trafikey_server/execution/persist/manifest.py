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

from ..scripting.engine import split_args

MANIFEST_SUFFIX = ".manifest"
TEMP_PREFIX = "temp-"


class ManifestError(Exception):
    pass


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

    def render(self) -> bytes:
        out = []
        for p in ([self.base] if self.base else []) + self.history + self.incrs:
            out.append(b"file %s seq %d type %s\n" % (_repr(p.name), p.seq, p.type.encode()))
        return b"".join(out)


def _repr(name: str) -> bytes:
    raw = name.encode()
    if all(33 <= b < 127 and b not in b"\"'\\" for b in raw):
        return raw
    out = [b'"']
    for b in raw:
        if b in b'"\\':
            out.append(b"\\" + bytes([b]))
        elif 32 <= b < 127:
            out.append(bytes([b]))
        else:
            out.append(b"\\x%02x" % b)
    out.append(b'"')
    return b"".join(out)


def parse(text: bytes, path: str) -> Manifest:
    """Read a manifest as Valkey's aofLoadManifestFromFile does: unknown
    keys are ignored, a line without name, seq or type is an error."""
    m = Manifest()
    for n, line in enumerate(text.split(b"\n"), 1):
        line = line.strip()
        if not line or line.startswith(b"#"):
            continue
        words = split_args(line)
        if words is None or len(words) % 2:
            raise ManifestError(f"Invalid AOF manifest file format: {path} line {n}")
        kv = {words[i].decode(): words[i + 1] for i in range(0, len(words), 2)}
        try:
            part = Part(kv["file"].decode(), int(kv["seq"]), kv["type"].decode())
        except (KeyError, ValueError) as e:
            raise ManifestError(f"Invalid AOF manifest file format: {path} line {n}") from e
        if part.type == "b":
            if m.base is not None:
                raise ManifestError(f"Found duplicate base file information: {path} line {n}")
            m.base = part
            m.base_seq = part.seq
        elif part.type == "i":
            if part.seq <= m.incr_seq:
                raise ManifestError(f"Found a non-monotonic sequence number: {path} line {n}")
            m.incrs.append(part)
            m.incr_seq = part.seq
        elif part.type == "h":
            m.history.append(part)
        else:
            raise ManifestError(f"Unknown AOF file type: {path} line {n}")
    return m


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


def fsync_dir(dirname: str) -> None:
    fd = os.open(dirname, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)

"""A hash in the zipmap form (RDB type 9) that files from Redis before 2.6
hold: built here by the zipmap's rules into a version 4 file, loaded by
valkey-server 9.1.2 and by this server, and read back the same, in the
encoding Valkey's loader converts it to (listpack, or a hashtable past
either limit)."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import pytest
import redis
from helpers.servers import start_trafikey, start_valkey

from trafikey_server.protocol.rdbformat import encode_string


def zipmap(pairs: list[tuple[bytes, bytes]], free: int = 2) -> bytes:
    """A zipmap: a count, each field and value by its length (one byte
    below 254, else 254 and four bytes), a value followed by `free` unused
    bytes; 255 ends it."""
    def length(n: int) -> bytes:
        return bytes([n]) if n < 254 else b"\xfe" + n.to_bytes(4, "little")

    body = b"".join(length(len(f)) + f + length(len(v)) + bytes([free]) + v + b"\0" * free for f, v in pairs)
    return bytes([len(pairs)]) + body + b"\xff"


PAIRS = [(b"f1", b"v1"), (b"f2", b"v2"), (b"long", b"x" * 300), (b"n", b"12345")]


@pytest.mark.parametrize("limits", [(), ("--hash-max-listpack-entries", "1"), ("--hash-max-listpack-value", "1")],
                         ids=["default", "entries", "value"])
@pytest.mark.parametrize("pairs", [PAIRS[:2], PAIRS], ids=["short", "long value"])
def test_zipmap_hash_loads_as_in_valkey(limits: tuple[str, ...], pairs: list[tuple[bytes, bytes]]) -> None:
    d = tempfile.mkdtemp(prefix="zipmap-")
    rdb = b"REDIS0004" + b"\xfe\x00" + b"\x09" + encode_string(b"hash") + encode_string(zipmap(pairs)) + b"\xff"
    seen = []
    for start in (start_valkey, start_trafikey):
        here = tempfile.mkdtemp(dir=d)
        Path(here, "old.rdb").write_bytes(rdb)
        srv = start("--dir", here, "--dbfilename", "old.rdb", *limits)
        try:
            r = redis.Redis(port=srv.port)
            seen.append((r.hgetall("hash"), r.object("encoding", "hash")))
            r.close()
        finally:
            srv.stop()
    shutil.rmtree(d)
    assert seen[0] == seen[1]
    assert seen[0][0] == dict(pairs)

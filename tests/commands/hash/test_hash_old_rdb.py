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
from helpers.old_encodings import dump_payload, ziplist, zipmap
from helpers.servers import start_trafikey, start_valkey

from trafikey_server.protocol.rdbformat import encode_string

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


def _broken(blob: bytes, at: int, value: bytes) -> bytes:
    return blob[:at] + value + blob[at + len(value):]


GOOD = ziplist([b"a", b"1", b"b", b"2"])
# Each a ziplist Valkey's deep check refuses (RESTORE: Bad data format).
CORRUPT = {
    "good": (13, GOOD),
    "byte count": (13, _broken(GOOD, 0, (len(GOOD) + 5).to_bytes(4, "little"))),
    "tail offset": (13, _broken(GOOD, 4, (11).to_bytes(4, "little"))),
    "entry count": (13, _broken(GOOD, 8, (3).to_bytes(2, "little"))),
    "previous length": (13, _broken(GOOD, 13, b"\x07")),
    "entry past the end": (13, _broken(GOOD, 11, b"\x30")),
    "field twice": (13, ziplist([b"a", b"1", b"a", b"2"])),
    "member twice": (12, ziplist([b"m", b"1", b"m", b"2"])),
    "zset good": (12, ziplist([b"m", b"1", b"n", b"2"])),
    "zipmap field twice": (9, zipmap([(b"f", b"1"), (b"f", b"2")])),
}


@pytest.mark.parametrize("case", sorted(CORRUPT))
def test_restore_of_a_broken_ziplist_is_refused(case: str) -> None:
    """RESTORE of a hash or sorted set in an old encoding: refused with
    Valkey's error and nothing written when its deep check fails, the
    failure logged at verbose in Valkey's words; loaded alike when sound."""
    rdb_type, blob = CORRUPT[case]
    payload = dump_payload(rdb_type, blob)
    seen = []
    for start in (start_valkey, start_trafikey):
        srv = start("--loglevel", "verbose")
        try:
            r = redis.Redis(port=srv.port)
            try:
                reply: object = r.restore("k", 0, payload)
            except redis.ResponseError as e:
                reply = str(e)
            kind = r.type("k")
            value = r.hgetall("k") if kind == b"hash" else r.zrange("k", 0, -1, withscores=True)
            logged = any(w in line for line in srv.output().splitlines()
                         for w in ("integrity check failed", "with dup elements"))
            seen.append((reply, kind, value, logged))
            r.close()
        finally:
            srv.stop()
    assert seen[0] == seen[1]
    assert (seen[0][0] == "Bad data format") == case.endswith(("twice", "count", "offset", "length", "end"))

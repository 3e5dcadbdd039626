"""An append-only log whose base is an RDB file, Valkey's default
(``aof-use-rdb-preamble yes``): a directory Valkey 9.1.2 wrote loads here,
an old single file with an RDB preamble and a command tail loads on both
servers, and a damaged base stops start-up on both with Valkey's words.
(The other way, a directory written here loading in Valkey, is
test_aof_files.py's rewrite test.)
"""

from __future__ import annotations

import shutil
import tempfile
import time
from pathlib import Path

import redis
from helpers import every_type
from helpers.aof_util import (
    aof_dir,
    aof_server,
    functions,
    keyspace,
    legacy_copy,
    manifest_copy,
    run_trafikey,
    run_valkey,
    valkey_on,
)
from helpers.resp_wire import Wire

# The job core's brand, which this server writes on start.
BRAND = (b"{emq}:version",)
LIBRARY = "#!lua name=base\nserver.register_function('seven', function() return 7 end)"


def _rewrite(r: redis.Redis) -> None:
    assert r.bgrewriteaof()
    for _ in range(400):
        info = r.info("persistence")
        if info["aof_rewrite_in_progress"] == 0 and info["aof_rewrite_scheduled"] == 0:
            return
        time.sleep(0.05)
    raise AssertionError("the rewrite did not finish")


def _valkey_directory() -> tuple[str, dict, list]:
    """A directory Valkey wrote with its defaults: every type in the RDB
    base (after a rewrite), more writes in the incremental file; with what
    Valkey held when it stopped."""
    d = tempfile.mkdtemp(prefix="aof-vk-")
    v = valkey_on(d, "--appendonly", "yes")
    try:
        cmds = [c for c in every_type.commands(120) + every_type.commands(40, db=3)
                if not str(c[0]).startswith("EMQ.")]
        w = Wire(v.port)
        every_type.load(w, cmds)
        w.close()
        r = redis.Redis(port=v.port)
        r.function_load(LIBRARY)
        _rewrite(r)
        r.set("after:rewrite", "tail")
        r.incr("str:0")
        r.delete("list:2")
        expected, funcs = keyspace(v.port), functions(v.port)
        r.close()
    finally:
        v.stop()
    return d, expected, funcs


def _base(d: str) -> Path:
    bases = [p for p in aof_dir(d).iterdir() if ".base." in p.name]
    assert len(bases) == 1, bases
    return bases[0]


def test_a_valkey_directory_with_an_rdb_base_loads_here() -> None:
    d, expected, funcs = _valkey_directory()
    base = _base(d)
    assert base.name.endswith(".base.rdb")
    assert base.read_bytes()[:6] in (b"VALKEY", b"REDIS0")
    t = aof_server(manifest_copy(d))
    try:
        assert keyspace(t.port, BRAND) == expected
        assert functions(t.port) == funcs
        assert redis.Redis(port=t.port).fcall("seven", 0) == 7
    finally:
        t.stop()


def test_a_single_file_with_an_rdb_preamble_and_a_tail_loads_on_both() -> None:
    """The base and the incremental file joined: Valkey's old single-file
    layout, an RDB file with commands after it."""
    d, expected, funcs = _valkey_directory()
    legacy = legacy_copy(d)
    data = (Path(legacy) / "appendonly.aof").read_bytes()
    assert data[:6] in (b"VALKEY", b"REDIS0") and data.endswith(b"\r\n")
    for start in (valkey_on, aof_server):
        s = start(legacy_copy(d), "--appendonly", "yes")
        try:
            assert keyspace(s.port, BRAND) == expected
            assert functions(s.port) == funcs
        finally:
            s.stop()


def test_a_damaged_rdb_base_stops_start_up_on_both() -> None:
    """The base's checksum changed, its end cut off, a byte changed inside
    it: neither server starts, and for the first two both log Valkey's
    words for the abort."""
    d, _, _ = _valkey_directory()
    for damage, words in (("checksum", "Wrong RDB checksum expected: ("), ("cut", "Short read or OOM loading DB"),
                          ("flip", "")):
        copy = manifest_copy(d)
        base = _base(copy)
        data = bytearray(base.read_bytes())
        if damage == "checksum":
            data[-1] ^= 0x01
        elif damage == "cut":
            del data[-5:]  # inside the checksum
        else:
            data[len(data) // 2] ^= 0x40
        base.write_bytes(bytes(data))
        theirs = run_valkey(shutil.copytree(copy, tempfile.mkdtemp() + "/d"))
        assert theirs.returncode != 0 and words in theirs.stdout, theirs.stdout[-2000:]
        assert "Ready to accept" not in theirs.stdout
        ours = run_trafikey(copy)
        assert ours.returncode != 0 and words in ours.stdout, ours.stdout[-2000:]
        assert f"Error reading the RDB base file {base.name}, AOF loading aborted" in ours.stdout
        assert "Ready to accept" not in ours.stdout
        assert base.read_bytes() == data  # the file is left as it was

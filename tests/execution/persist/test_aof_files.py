"""The files of the append-only log: a truncated tail, garbage in the
middle, compaction by BGREWRITEAOF while clients write, turning the log on
at run time, and INFO's aof_* fields."""

from __future__ import annotations

import tempfile
import threading
import time
from pathlib import Path

import pytest
import redis
from helpers.aof_util import (
    aof_dir,
    aof_server,
    keyspace,
    manifest_copy,
    run_trafikey,
    run_valkey,
    valkey_on,
    wait_loaded,
)
from redis.backoff import NoBackoff
from redis.retry import Retry


def _filled(n: int = 50) -> str:
    d = tempfile.mkdtemp(prefix="aof-files-")
    srv = aof_server(d)
    try:
        r = redis.Redis(port=srv.port)
        for i in range(n):
            r.set(f"k{i}", f"v{i}")
        r.close()
    finally:
        srv.stop()
    return d


def _incr(d: str) -> Path:
    return sorted(aof_dir(d).glob("*.incr.aof"))[-1]


def test_truncated_tail_is_trimmed_with_a_warning() -> None:
    d = _filled()
    f = _incr(d)
    whole = f.read_bytes()
    f.write_bytes(whole + b"*3\r\n$3\r\nSET\r\n$2\r\nkx\r\n$5\r\nhal")  # a record cut by a crash
    srv = aof_server(d)
    try:
        r = redis.Redis(port=srv.port)
        assert r.get("k49") == b"v49"
        assert r.get("kx") is None
        r.close()
        out = srv.output()
    finally:
        srv.stop()
    assert "short read while loading the AOF file" in out
    assert f"Truncating the AOF {f.name} at offset {len(whole)}" in out
    assert f.read_bytes()[: len(whole)] == whole


def test_incomplete_multi_is_reverted() -> None:
    d = _filled()
    f = _incr(d)
    whole = f.read_bytes()
    f.write_bytes(whole + b"*1\r\n$5\r\nMULTI\r\n*3\r\n$3\r\nSET\r\n$2\r\nky\r\n$1\r\n1\r\n")
    srv = aof_server(d)
    try:
        r = redis.Redis(port=srv.port)
        assert r.get("ky") is None and r.get("k0") == b"v0"
        r.close()
        assert "Revert incomplete MULTI/EXEC transaction" in srv.output()
    finally:
        srv.stop()
    assert f.read_bytes() == whole


def test_truncated_refused_when_aof_load_truncated_no() -> None:
    d = _filled()
    f = _incr(d)
    whole = f.read_bytes()
    f.write_bytes(whole + b"*3\r\n$3\r\nSET")
    res = run_trafikey(d, "--aof-load-truncated", "no")
    assert res.returncode == 1, res.stdout
    assert "Unexpected end of file" in res.stdout and f.name in res.stdout
    assert f.read_bytes() == whole + b"*3\r\n$3\r\nSET"  # nothing on disk was changed


def test_garbage_in_the_middle_stops_start_up() -> None:
    d = _filled()
    f = _incr(d)
    data = bytearray(f.read_bytes())
    # Overwrite the '*' that starts a record in the middle of the file.
    offset = data.index(b"*3\r\n$3\r\nSET\r\n$3\r\nk25\r\n")
    data[offset] = ord("!")
    f.write_bytes(bytes(data))
    res = run_trafikey(d)
    assert res.returncode == 1, res.stdout
    assert f"Bad file format reading the append only file {f.name} at offset {offset}" in res.stdout
    assert f.read_bytes() == bytes(data)  # nothing truncated


@pytest.mark.parametrize("preamble", ["yes", "no"])
def test_bgrewriteaof_while_clients_write(preamble: str) -> None:
    """Nothing written before, during or after the rewrite is lost; the
    history files are gone and the log is smaller. The new base is an RDB
    file under aof-use-rdb-preamble yes (Valkey's default), commands under
    no; Valkey loads the directory either way."""
    d = tempfile.mkdtemp(prefix="aof-rw-")
    base = "appendonly.aof.2.base." + ("rdb" if preamble == "yes" else "aof")
    srv = aof_server(d, "--aof-use-rdb-preamble", preamble)
    try:
        r = redis.Redis(port=srv.port)
        for _ in range(30):
            pipe = r.pipeline(transaction=False)
            for i in range(200):
                pipe.incr(f"c{i}")
                pipe.hset("h", f"f{i}", "x" * 30)
                pipe.zadd("z", {f"m{i}": i / 7})
            pipe.execute()
        before = sum(p.stat().st_size for p in aof_dir(d).iterdir())
        stop = threading.Event()
        counts = [0] * 4

        def writer(n: int) -> None:
            w = redis.Redis(port=srv.port)
            while not stop.is_set():
                w.incr(f"during{n}")
                counts[n] += 1
            w.close()

        threads = [threading.Thread(target=writer, args=(n,)) for n in range(4)]
        for t in threads:
            t.start()
        time.sleep(0.1)
        assert r.bgrewriteaof()
        for _ in range(200):
            if r.info("persistence")["aof_rewrite_in_progress"] == 0:
                break
            time.sleep(0.05)
        time.sleep(0.1)
        stop.set()
        for t in threads:
            t.join()
        info = r.info("persistence")
        assert info["aof_rewrites"] == 1 and info["aof_last_bgrewrite_status"] == "ok"
        assert all(int(r.get(f"during{n}")) == counts[n] for n in range(4))
        expected = keyspace(srv.port)
        r.close()
    finally:
        srv.stop()
    names = sorted(p.name for p in aof_dir(d).iterdir())
    assert names == [base, "appendonly.aof.2.incr.aof", "appendonly.aof.manifest"]
    assert (aof_dir(d) / base).read_bytes().startswith(b"REDIS" if preamble == "yes" else b"*")
    manifest = (aof_dir(d) / "appendonly.aof.manifest").read_text()
    assert manifest == (f"file {base} seq 2 type b\n"
                        "file appendonly.aof.2.incr.aof seq 2 type i\n")
    after = sum(p.stat().st_size for p in aof_dir(d).iterdir())
    assert after < before / 4, (before, after)
    again = aof_server(d, "--aof-use-rdb-preamble", preamble)
    try:
        assert keyspace(again.port) == expected
    finally:
        again.stop()
    v = valkey_on(manifest_copy(d), "--appendonly", "yes")
    try:
        assert keyspace(v.port) == expected
    finally:
        v.stop()


def test_config_set_appendonly_at_run_time() -> None:
    d = tempfile.mkdtemp(prefix="aof-cfg-")
    srv = aof_server(d, "--appendonly", "no")
    try:
        r = redis.Redis(port=srv.port)
        r.set("before", "1")
        assert r.info("persistence")["aof_enabled"] == 0
        assert not aof_dir(d).exists()
        r.config_set("appendonly", "yes")
        assert r.info("persistence")["aof_enabled"] == 1
        r.set("after", "2", px=900_000)
        expected = keyspace(srv.port)
        r.close()
    finally:
        srv.stop()
    again = aof_server(d)
    try:
        assert keyspace(again.port) == expected
    finally:
        again.stop()


def test_info_aof_fields_follow_valkey() -> None:
    """The names and order of the aof_* lines, against Valkey with the log on."""
    d = tempfile.mkdtemp(prefix="aof-info-")
    ours = aof_server(d)
    theirs = valkey_on(tempfile.mkdtemp(prefix="vk-info-"), "--appendonly", "yes",
                       "--aof-use-rdb-preamble", "no")
    try:
        def aof_names(port: int) -> list[str]:
            r = redis.Redis(port=port, retry=Retry(NoBackoff(), 0))
            names = [k for k in r.info("persistence") if k.startswith("aof_")]
            r.close()
            return names

        assert aof_names(ours.port) == aof_names(theirs.port)
    finally:
        ours.stop()
        theirs.stop()


_INCR = "file appendonly.aof.1.incr.aof seq 1 type i\n"
_MANIFESTS = {
    "empty": ("", "Found an empty AOF manifest"),
    "blank line": (_INCR + "\n" + "file appendonly.aof.3.incr.aof seq 3 type i\n", "Invalid AOF manifest file format"),
    "missing key": ("file appendonly.aof.1.incr.aof seq 1 kind i\n", "Invalid AOF manifest file format"),
    "line too short": ("file appendonly.aof.1.incr.aof type i\n", "Invalid AOF manifest file format"),
    "odd parameter": ("file appendonly.aof.1.incr.aof seq 1 type i foo\n", "Invalid AOF manifest file format"),
    "no newline at the end": (_INCR.rstrip("\n"), "The AOF manifest file contains too long line"),
    "a path for a name": ("file ../appendonly.aof.1.incr.aof seq 1 type i\n",
                          "File can't be a path, just a filename"),
    "unknown type": ("file appendonly.aof.1.incr.aof seq 1 type x\n", "Unknown AOF file type"),
    "duplicate base": ("file appendonly.aof.1.base.aof seq 1 type b\n" * 2,
                       "Found duplicate base file information"),
    "seq going down": ("file appendonly.aof.2.incr.aof seq 2 type i\n" + _INCR,
                       "Found a non-monotonic sequence number"),
    "a file missing": (_INCR + "file appendonly.aof.2.incr.aof seq 2 type i\n",
                       "Unable to obtain the AOF file appendonly.aof.2.incr.aof length. "
                       "stat: No such file or directory"),
}


@pytest.mark.parametrize("case", sorted(_MANIFESTS))
def test_a_manifest_valkey_refuses_stops_start_up_here(case: str) -> None:
    """Each malformed manifest stops both servers with Valkey's words (and
    the line it stopped at, where Valkey names one)."""
    text, words = _MANIFESTS[case]
    outputs = []
    for run in (run_valkey, run_trafikey):
        d = tempfile.mkdtemp(prefix="aof-mf-")
        aof_dir(d).mkdir()
        for name in ("appendonly.aof.1.incr.aof", "appendonly.aof.3.incr.aof", "appendonly.aof.1.base.aof"):
            (aof_dir(d) / name).write_bytes(b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n")
        (aof_dir(d) / "appendonly.aof.manifest").write_text(text)
        res = run(d)
        assert res.returncode != 0 and words in res.stdout, (run, res.stdout[-1500:])
        assert "Ready to accept" not in res.stdout
        outputs.append("Reading the manifest file, at line" in res.stdout)
    assert outputs[0] == outputs[1]


_OLD_AOF = b"".join(b"*3\r\n$3\r\nSET\r\n$2\r\n%s\r\n$2\r\n%s\r\n" % (k, v)
                    for k, v in ((b"k1", b"v1"), (b"k2", b"v2"), (b"k3", b"v3")))


@pytest.mark.parametrize("layout", ["no directory", "empty manifest", "cut short before the move",
                                    "file in both places"])
def test_old_single_file_aof_is_moved_into_the_directory(layout: str) -> None:
    """A log of the layout before the directory (``dir/appendonly.aof``)
    becomes the directory's base as Valkey moves it: with no directory, an
    empty manifest, or a manifest naming it whose move was cut short; left
    alone where the directory has its own copy. Loaded keys, files, the
    manifest and the log line as valkey-server 9.1.2's."""
    seen = []
    for start in (valkey_on, aof_server):
        d = tempfile.mkdtemp(prefix="aof-old-")
        (Path(d) / "appendonly.aof").write_bytes(_OLD_AOF)
        if layout != "no directory":
            aof_dir(d).mkdir()
            (aof_dir(d) / "appendonly.aof.manifest").write_text(
                "" if layout == "empty manifest" else "file appendonly.aof seq 1 type b\n")
        if layout == "file in both places":
            (aof_dir(d) / "appendonly.aof").write_bytes(_OLD_AOF.replace(b"$2\r\nv", b"$2\r\nw"))
        if layout == "empty manifest":
            # Valkey refuses an empty manifest before it looks at the old file.
            res = (run_valkey if start is valkey_on else run_trafikey)(d)
            seen.append((res.returncode != 0, "Found an empty AOF manifest" in res.stdout))
            continue
        srv = start(d, "--appendonly", "yes", "--aof-use-rdb-preamble", "no") if start is valkey_on else \
            start(d, "--aof-use-rdb-preamble", "no")
        try:
            wait_loaded(srv.port)
            loaded = keyspace(srv.port, (b"{emq}:version",))
            out = srv.wait_output("Ready to accept")
        finally:
            srv.stop()
        moved = [line.split(" * ", 1)[1] for line in out.splitlines() if "migrated an old-style" in line]
        seen.append((loaded, moved, (Path(d) / "appendonly.aof").exists(), sorted(p.name for p in aof_dir(d).iterdir()),
                     (aof_dir(d) / "appendonly.aof.manifest").read_text()))
    assert seen[0] == seen[1]

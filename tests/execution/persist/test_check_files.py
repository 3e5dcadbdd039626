"""``trafikey-server --check-aof/--check-rdb`` against valkey-check-aof/-rdb.

Valkey writes the files (an AOF directory with an RDB base, a snapshot);
both checkers read the same files, whole and damaged, and must agree on
the verdict lines and the exit code.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import redis
from helpers.servers import ROOT, start_valkey, valkey_binary


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("valkey-files")
    p = start_valkey("--appendonly", "yes", "--dir", str(d))
    try:
        r = redis.Redis(port=p.port)
        for i in range(20):
            r.set(f"k{i}", "v" * i)
        r.hset("h", mapping={"a": "1", "b": "2"})
        r.zadd("z", {"m": 1.5})
        with r.pipeline(transaction=True) as t:
            t.incr("n")
            t.incr("n")
            t.execute()
        r.save()
        r.close()
    finally:
        p.stop()
    for tool in ("valkey-check-aof", "valkey-check-rdb"):
        os.symlink(valkey_binary(), d / tool)  # Valkey picks the tool by its name
    return d


def _ours(*args: str, stdin: str = "") -> tuple[int, list[str]]:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    p = subprocess.run([sys.executable, "-m", "trafikey_server", *args], input=stdin, capture_output=True,
                       text=True, env=env, timeout=60)
    return p.returncode, p.stdout.splitlines()


def _theirs(d: Path, tool: str, *args: str, stdin: str = "") -> tuple[int, list[str]]:
    p = subprocess.run([str(d / tool), *args], input=stdin, capture_output=True, text=True, timeout=60, cwd=d)
    return p.returncode, p.stdout.splitlines()


def _verdicts(lines: list[str]) -> list[str]:
    """The lines both tools print in the same words (the analysis line without
    its line count, which the tools count differently)."""
    keep = []
    for line in lines:
        if line.startswith("AOF analyzed:"):
            keep.append(line.split(", ok_up_to_line=")[0] + " diff=" + line.rsplit("diff=", 1)[1])
        elif (line.endswith(("is valid", "is empty", "Use the --fix option to try fixing it.", "format error"))
              or line.startswith(("Start ", "All AOF", "This will shrink", "Successfully truncated"))):
            keep.append(line)
    return keep


def _incr(d: Path) -> Path:
    return next((d / "appendonlydir").glob("*.incr.aof"))


def test_whole_incr_file(files: Path) -> None:
    path = str(_incr(files))
    rc, ours = _ours("--check-aof", path)
    vrc, theirs = _theirs(files, "valkey-check-aof", path)
    assert (rc, _verdicts(ours)) == (vrc, _verdicts(theirs)) == (0, _verdicts(theirs))


@pytest.mark.parametrize("damage", ["cut", "garbage", "open-multi"])
def test_damaged_file_and_fix(files: Path, tmp_path: Path, damage: str) -> None:
    data = _incr(files).read_bytes()
    if damage == "cut":
        data = data[:-7]
    elif damage == "garbage":
        data += b"xx\r\n"
    else:
        data += b"*1\r\n$5\r\nMULTI\r\n*2\r\n$4\r\nINCR\r\n$1\r\nn\r\n"
    mine, other = tmp_path / "mine.aof", tmp_path / "other.aof"
    mine.write_bytes(data)
    other.write_bytes(data)
    rc, ours = _ours("--check-aof", str(mine))
    vrc, theirs = _theirs(files, "valkey-check-aof", str(other))
    assert rc == vrc == 1
    assert _verdicts(ours) == [line.replace(str(other), str(mine)) for line in _verdicts(theirs)]
    rc, ours = _ours("--check-aof", "--fix", str(mine), stdin="y\n")
    vrc, theirs = _theirs(files, "valkey-check-aof", "--fix", str(other), stdin="y\n")
    assert rc == vrc == 0
    assert mine.read_bytes() == other.read_bytes()
    assert len(mine.read_bytes()) < len(data)
    assert _ours("--check-aof", str(mine))[0] == 0


def test_fix_declined(files: Path, tmp_path: Path) -> None:
    f = tmp_path / "cut.aof"
    f.write_bytes(_incr(files).read_bytes()[:-3])
    rc, out = _ours("--check-aof", "--fix", str(f), stdin="n\n")
    assert rc == 1 and out[-1].endswith("Aborting...")
    assert len(f.read_bytes()) == len(_incr(files).read_bytes()) - 3


def test_manifest(files: Path) -> None:
    """Valkey 9.1.2's own checker misreads its VALKEY-signed RDB base as RESP,
    so only our verdict is compared with first principles here: every part
    is valid."""
    rc, out = _ours("--check-aof", str(files / "appendonlydir" / "appendonly.aof.manifest"))
    assert rc == 0
    assert out[0] == "Start checking Multi Part AOF"
    assert "Start to check BASE AOF (RDB format)." in out
    assert "Start to check INCR files." in out
    assert out[-1] == "All AOF files and manifest are valid"


def test_rdb(files: Path, tmp_path: Path) -> None:
    rc, ours = _ours("--check-rdb", str(files / "dump.rdb"))
    vrc, theirs = _theirs(files, "valkey-check-rdb", str(files / "dump.rdb"))
    assert rc == vrc == 0
    keys = [line for line in theirs if line.endswith("keys read")]
    assert "\\o/ RDB looks OK! \\o/" in ours[-2] and keys == [ours[-1]]
    cut = tmp_path / "cut.rdb"
    cut.write_bytes((files / "dump.rdb").read_bytes()[:-40])
    rc, ours = _ours("--check-rdb", str(cut))
    vrc, theirs = _theirs(files, "valkey-check-rdb", str(cut))
    assert rc == vrc == 1
    assert "--- RDB ERROR DETECTED ---" in ours and "--- RDB ERROR DETECTED ---" in theirs


def test_usage() -> None:
    assert _ours("--check-aof")[0] == 1
    assert _ours("--check-rdb", "a", "b")[0] == 1


"""``--version`` and ``--help`` in valkey-server's shapes, checked against
the Valkey 9.1.2 binary for the shape and against git for the commit."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest
from helpers.servers import ROOT, valkey_binary

ENV = dict(os.environ, PYTHONPATH=str(ROOT))
# "<name> v=<version> sha=<8 hex>:<0|1> malloc=<lib> bits=<32|64> build=<hex>"
SHAPE = r"v=(\S+) sha=([0-9a-f]{8}):([01]) malloc=(\S+) bits=(32|64) build=([0-9a-f]+)\n"


def ours(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "trafikey_server", *args], capture_output=True, text=True,
                          env=ENV, cwd=ROOT, timeout=30)


def theirs(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([valkey_binary(), *args], capture_output=True, text=True, timeout=30)


@pytest.mark.parametrize("flag", ["--version", "-v"])
def test_version_shape_is_valkeys(flag: str) -> None:
    v = theirs(flag)
    assert v.returncode == 0 and v.stderr == ""
    assert re.fullmatch("Valkey server " + SHAPE, v.stdout), v.stdout
    t = ours(flag)
    assert t.returncode == 0 and t.stderr == ""
    m = re.fullmatch("trafikey-server " + SHAPE, t.stdout)
    assert m, t.stdout
    import trafikey_server

    assert m.group(1) == trafikey_server.__version__
    assert m.group(5) == "64" if sys.maxsize > 2**32 else "32"


def test_version_names_the_checkout_commit() -> None:
    head = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True, text=True)
    if head.returncode != 0:
        pytest.fail("the suite runs from a git checkout; this one has none")
    dirty = subprocess.run(["git", "-C", str(ROOT), "diff", "--quiet", "HEAD", "--"]).returncode
    m = re.fullmatch("trafikey-server " + SHAPE, ours("--version").stdout)
    assert m
    assert m.group(2) == head.stdout.strip()[:8]
    assert m.group(3) == ("1" if dirty else "0")


def test_version_only_as_first_argument() -> None:
    """As valkey-server: the flag counts only first; later it is a directive."""
    assert theirs("--version", "--port", "1").returncode == 0
    assert ours("--version", "--port", "1").returncode == 0
    v, t = theirs("--port", "1", "--version"), ours("--port", "1", "--version")
    assert v.returncode == t.returncode == 1
    assert "'version'" in v.stderr and "'version'" in t.stderr


@pytest.mark.parametrize("flag", ["--help", "-h"])
def test_help(flag: str) -> None:
    v, t = theirs(flag), ours(flag)
    assert v.returncode == t.returncode == 0
    assert v.stderr == t.stderr == ""
    vl, tl = v.stdout.splitlines(), t.stdout.splitlines()
    prog = "./valkey-server"
    assert vl[0] == f"Usage: {prog} [/path/to/valkey.conf] [options] [-]"
    assert tl[0] == "Usage: trafikey-server [/path/to/trafikey.conf] [options]"
    assert f"       {prog} -v or --version" in vl and "       trafikey-server -v or --version" in tl
    assert f"       {prog} -h or --help" in vl and "       trafikey-server -h or --help" in tl
    assert "Examples:" in vl and "Examples:" in tl
    assert any(line.endswith("--port 7777") for line in vl) and any(line.endswith("--port 7777") for line in tl)

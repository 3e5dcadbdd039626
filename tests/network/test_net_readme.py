"""The README's "Unix sockets and TLS" example, run as printed: the command
line in a folder holding the certificates it names, then the Python
snippet. Only the ports and the socket's path are replaced by free ones,
so the test can run beside anything else on the machine."""

from __future__ import annotations

import contextlib
import io
import os
import shlex
import subprocess
import sys
from pathlib import Path

from helpers.certs import make_certs
from helpers.readme import code_blocks
from helpers.transports import trafikey_env, wait_unix

from trafikey_server.util.procs import free_port, wait_port

HEADING = "Unix sockets and TLS"


def test_readme_example(tmp_path: Path) -> None:
    make_certs(tmp_path)
    port, tls_port = str(free_port()), str(free_port())
    sock = str(tmp_path / "trafikey.sock")

    def local(text: str) -> str:
        return text.replace("/tmp/trafikey.sock", sock).replace("6379", port).replace("6380", tls_port)

    [command] = code_blocks(HEADING, "sh")
    argv = shlex.split(local(command).replace("\\\n", " "))
    assert argv[0] == "trafikey-server"
    proc = subprocess.Popen([sys.executable, "-m", "trafikey_server", *argv[1:]], cwd=tmp_path,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=trafikey_env())
    try:
        wait_port(int(port), proc)
        wait_unix(sock, proc)
        [snippet] = code_blocks(HEADING, "python")
        out = io.StringIO()
        here = os.getcwd()
        os.chdir(tmp_path)
        try:
            with contextlib.redirect_stdout(out):
                exec(compile(local(snippet), "README.md", "exec"), {})
        finally:
            os.chdir(here)
        assert out.getvalue() == "b'hello'\n"
    finally:
        proc.terminate()
        proc.wait(10)

"""One run of one suite against one fresh server: started by the harness,
inside a network namespace of its own when it has one (so the server can own
localhost:6379, the address most suites use without asking).

The spec (a JSON file) gives the server's argv, the port, the pytest argv,
its environment and working directory, and where to write the server's log.
The exit status is pytest's; 124 when the whole run outlived its limit.
When the harness that started it dies, however it dies, this run ends too
and takes its server and suite with it (see ``_die_with_parent``).
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

from trafikey_server.util.procs import wait_port

PR_SET_PDEATHSIG = 1


def _die_with_parent() -> None:
    """Linux: SIGTERM this process when its parent exits. A harness killed
    by its caller (a CI timeout, Ctrl-C, SIGKILL) would otherwise leave this
    run's server holding its port and the suite running; the run itself and
    each process it starts ask for this, so no level is left behind."""
    if sys.platform.startswith("linux"):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
        if os.getppid() == 1:  # the parent was already gone when asked
            os.kill(os.getpid(), signal.SIGTERM)


def _terminated(signum: int, frame: object) -> None:
    raise SystemExit(128 + signum)  # through the finally blocks that stop the server and the suite


def main(spec_path: str) -> int:
    signal.signal(signal.SIGTERM, _terminated)
    _die_with_parent()
    spec = json.loads(Path(spec_path).read_text())
    if spec["netns"]:
        subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
    with open(spec["server_log"], "wb") as log:
        server = subprocess.Popen(spec["server_argv"], stdout=log, stderr=subprocess.STDOUT,
                                  cwd=spec["server_cwd"], env=spec["server_env"],
                                  preexec_fn=_die_with_parent)
        try:
            wait_port(spec["port"], server, timeout=30.0)
            with open(spec["pytest_log"], "wb") as out:
                tests = subprocess.Popen(spec["pytest_argv"], stdout=out, stderr=subprocess.STDOUT,
                                         cwd=spec["cwd"], env=spec["env"], start_new_session=True,
                                         preexec_fn=_die_with_parent)
                try:
                    return tests.wait(spec["run_timeout"])
                except subprocess.TimeoutExpired:
                    return 124
                finally:
                    # the suite's own group: pytest and any worker it left
                    with contextlib.suppress(ProcessLookupError):
                        os.killpg(tests.pid, signal.SIGKILL)
                    tests.wait()
        finally:
            server.terminate()
            try:
                server.wait(15)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))

"""One run of one suite against one fresh server: started by the harness,
inside a network namespace of its own when it has one (so the server can own
localhost:6379, the address most suites use without asking).

The spec (a JSON file) gives the server's argv, the port, the pytest argv,
its environment and working directory, and where to write the server's log.
The exit status is pytest's; 124 when the whole run outlived its limit.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

from trafikey_server.util.procs import wait_port


def main(spec_path: str) -> int:
    spec = json.loads(Path(spec_path).read_text())
    if spec["netns"]:
        subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
    with open(spec["server_log"], "wb") as log:
        server = subprocess.Popen(spec["server_argv"], stdout=log, stderr=subprocess.STDOUT,
                                  cwd=spec["server_cwd"], env=spec["server_env"])
        try:
            wait_port(spec["port"], server, timeout=30.0)
            with open(spec["pytest_log"], "wb") as out:
                tests = subprocess.Popen(spec["pytest_argv"], stdout=out, stderr=subprocess.STDOUT,
                                         cwd=spec["cwd"], env=spec["env"], start_new_session=True)
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

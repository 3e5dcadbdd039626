"""fakeredis's ``TcpFakeServer`` as a process of its own: ``python3 -m bench.fakeserver --port N``.

Why a separate process: the harness measures a server's CPU from
``/proc/PID/stat`` and pins it to the server core, which needs the server to
be a process of its own rather than a thread of the harness. fakeredis runs
Lua through lupa, which is what the twin scripts need; it is the Python
reference point for the lifecycle section, and optional (``.[bench]``).
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--port", type=int, required=True)
    args = ap.parse_args()
    from fakeredis import TcpFakeServer

    server = TcpFakeServer(("127.0.0.1", args.port), server_type="redis")
    server.daemon_threads = True  # a client still connected must not hold up the exit
    server.block_on_close = False

    def stop(_signum: int, _frame: object) -> None:
        # shutdown() waits for serve_forever to return, so it cannot run on the serving thread
        threading.Thread(target=server.shutdown, daemon=True).start()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    try:
        server.serve_forever()
    finally:
        server.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())

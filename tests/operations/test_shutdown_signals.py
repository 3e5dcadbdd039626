"""SIGTERM and SIGINT as Valkey takes them: noted by the handler, carried
out by the next cron tick (so SHUTDOWN ABORT can call a shutdown off while
the cron is paused), and a second SIGINT during the final save exits at once,
its temp file removed. Each behaviour is run on valkey-server 9.1.2 too."""

from __future__ import annotations

import signal
import time
from pathlib import Path

from helpers.resp_wire import Wire
from helpers.servers import Proc, start_trafikey, start_valkey


def _pair(*extra: str) -> tuple[Proc, Proc]:
    args = ("--enable-debug-command", "yes", *extra)
    return start_valkey(*args), start_trafikey(*args)


def test_shutdown_abort_calls_off_a_signalled_shutdown() -> None:
    procs = _pair("--save", "900 1")
    try:
        got = []
        for p in procs:
            w = Wire(p.port)
            out = [w.call("SHUTDOWN", "ABORT"), w.call("DEBUG", "PAUSE-CRON", "1")]
            p.proc.send_signal(signal.SIGTERM)
            time.sleep(0.3)
            out.append(w.call("SHUTDOWN", "ABORT"))
            out.append(w.call("DEBUG", "PAUSE-CRON", "0"))
            time.sleep(0.3)
            out.append(w.call("PING"))
            out.append(w.call("SHUTDOWN", "ABORT"))
            got.append(out)
            log = p.output()
            assert "Received SIGTERM scheduling shutdown..." in log
            assert "Shutdown manually aborted" in log
            assert p.proc.poll() is None
        assert got[0] == got[1]
        assert got[1][0] == got[1][-1] == b"-ERR No shutdown in progress.\r\n"
    finally:
        for p in procs:
            p.stop()


def test_a_second_sigint_during_the_final_save_exits_now() -> None:
    """SIGINT with save rules set starts the final save (slowed down per
    key); a second SIGINT while it writes its temp file ends the process
    with status 1 and removes that file."""
    procs = _pair("--save", "900 1", "--rdb-key-save-delay", "100000")
    try:
        for p in procs:
            w = Wire(p.port)
            for i in range(30):
                w.call("SET", str(i), str(i))
            pid = int(w.call("INFO", "server").split(b"process_id:")[1].split(b"\r\n")[0])
            d = Path(w.call("CONFIG", "GET", "dir").split(b"\r\n")[-2].decode())
            temp = d / f"temp-{pid}.rdb"
            p.proc.send_signal(signal.SIGINT)
            deadline = time.monotonic() + 10
            while not temp.exists():
                assert time.monotonic() < deadline, "the final save never began"
                time.sleep(0.01)
            p.proc.send_signal(signal.SIGINT)
            assert p.proc.wait(timeout=10) == 1
            assert not temp.exists()
            assert not (d / "dump.rdb").exists()
            assert "You insist... exiting now." in p.output()
    finally:
        for p in procs:
            p.stop()

"""A save that failed, as Valkey answers it: MISCONF refuses writes (and
PING) while stop-writes-on-bgsave-error and save rules are set, reads go on,
scripts are refused their writes, and a good save ends it. FLUSHALL counts
the keys it removes, stops a background save, and with save rules saves at
once. Every reply beside valkey-server 9.1.2's."""

from __future__ import annotations

import os
import re
import signal
import time
from pathlib import Path

from helpers.resp_wire import Wire
from helpers.servers import Proc, start_trafikey, start_valkey


def _children(pid: int) -> list[int]:
    text = Path(f"/proc/{pid}/task/{pid}/children").read_text()
    return [int(x) for x in text.split()]


def _field(w: Wire, name: str) -> bytes:
    m = re.search(rb"%s:(\S+)" % name.encode(), w.call("INFO", "persistence"))
    assert m, name
    return m.group(1)


def _wait_saved(w: Wire) -> None:
    deadline = time.monotonic() + 20
    while _field(w, "rdb_bgsave_in_progress") != b"0":
        assert time.monotonic() < deadline, "the background save never ended"
        time.sleep(0.02)


def _pair(*extra: str) -> tuple[Proc, Proc]:
    args = ("--save", "900 1", *extra)
    return start_valkey(*args), start_trafikey(*args, "--emq-brand", "none")  # no key of ours to count


def test_failed_bgsave_refuses_writes_until_a_good_one() -> None:
    procs = _pair()
    try:
        outs = []
        for p in procs:
            w = Wire(p.port)
            out = [w.call("SET", "x", "x"), w.call("CONFIG", "SET", "rdb-key-save-delay", "10000000"),
                   w.call("BGSAVE")]
            deadline = time.monotonic() + 10
            while not _children(p.proc.pid):
                assert time.monotonic() < deadline
                time.sleep(0.01)
            os.kill(_children(p.proc.pid)[0], signal.SIGKILL)
            _wait_saved(w)
            out += [_field(w, "rdb_last_bgsave_status"), w.call("GET", "x"), w.call("SET", "x", "y"),
                    w.call("PING"), w.call("EVAL", "return redis.call('set', 'x', 1)", "1", "x"),
                    w.call("EVAL", "return redis.call('get', 'x')", "1", "x"),
                    w.call("EVAL", "#!lua\nreturn redis.call('set', 'x', 1)", "1", "x"),
                    w.call("EVAL", "#!lua flags=no-writes\nreturn redis.call('get', 'x')", "1", "x"),
                    w.call("MULTI"), w.call("SET", "x", "z"), w.call("EXEC"),
                    w.call("CONFIG", "SET", "stop-writes-on-bgsave-error", "no"), w.call("SET", "x", "1"),
                    w.call("CONFIG", "SET", "stop-writes-on-bgsave-error", "yes"), w.call("SET", "x", "2"),
                    w.call("CONFIG", "SET", "save", ""), w.call("SET", "x", "3"),
                    w.call("CONFIG", "SET", "save", "900 1"), w.call("SET", "x", "4"),
                    w.call("CONFIG", "SET", "rdb-key-save-delay", "0"), w.call("BGSAVE")]
            _wait_saved(w)
            out += [_field(w, "rdb_last_bgsave_status"), w.call("SET", "x", "5"), w.call("PING")]
            stats = w.call("INFO", "errorstats")
            out.append(re.findall(rb"errorstat_MISCONF:count=\d+", stats))
            outs.append(out)
        assert outs[1] == outs[0]
        assert outs[0][5].startswith(b"-MISCONF Valkey is configured to save RDB snapshots")
    finally:
        for p in procs:
            p.stop()


def test_flushall_counts_stops_and_saves() -> None:
    procs = _pair()
    try:
        outs = []
        for p in procs:
            w = Wire(p.port)
            out = []
            w.call("CONFIG", "SET", "save", "")
            for i in range(10):
                w.call("SET", f"k{i}", "v")
            out.append(_field(w, "rdb_changes_since_last_save"))
            w.call("FLUSHDB")
            out.append(_field(w, "rdb_changes_since_last_save"))
            w.call("FLUSHALL")
            out.append(_field(w, "rdb_changes_since_last_save"))
            for i in range(50):
                w.call("SET", f"k{i}", "v")
            w.call("CONFIG", "SET", "rdb-key-save-delay", "100000")
            out += [w.call("BGSAVE"), _field(w, "rdb_bgsave_in_progress"), w.call("FLUSHALL")]
            deadline = time.monotonic() + 2
            while _field(w, "rdb_bgsave_in_progress") != b"0" and time.monotonic() < deadline:
                time.sleep(0.02)
            out += [_field(w, "rdb_bgsave_in_progress"), _field(w, "rdb_changes_since_last_save"),
                    _field(w, "rdb_last_bgsave_status")]
            w.call("CONFIG", "SET", "rdb-key-save-delay", "0")
            w.call("CONFIG", "SET", "save", "3600 1 300 100 60 10000")
            w.call("SET", "key", "value")
            out += [w.call("FLUSHALL"), _field(w, "rdb_changes_since_last_save"), w.call("DBSIZE")]
            outs.append(out)
        assert outs[1] == outs[0]
        assert outs[0][-2] == b"0"
    finally:
        for p in procs:
            p.stop()


def test_failed_foreground_save_starts_no_misconf() -> None:
    """SAVE and SHUTDOWN's save failing (dump.rdb is a directory) answer
    their errors, but leave the last background save's status alone: writes
    and PING go on, as in Valkey."""
    procs = _pair()
    try:
        outs = []
        for p in procs:
            w = Wire(p.port)
            d = Path(w.call("CONFIG", "GET", "dir").split(b"\r\n")[-2].decode())
            (d / "dump.rdb").mkdir()
            outs.append([w.call("SET", "x", "1"), w.call("SAVE"), _field(w, "rdb_last_bgsave_status"),
                         w.call("SET", "x", "2"), w.call("SHUTDOWN"), w.call("PING"), w.call("GET", "x")])
            (d / "dump.rdb").rmdir()
        assert outs[1] == outs[0]
        assert outs[0][2] == b"ok" and outs[0][5] == b"+PONG\r\n"
    finally:
        for p in procs:
            p.stop()

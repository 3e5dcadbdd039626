"""The log turned on at run time (CONFIG SET appendonly yes) waits for its
first base, written by a rewrite child, as Valkey's AOF_WAIT_REWRITE: what
comes meanwhile goes to a temporary incremental file, SHUTDOWN refuses to
lose it, a BGSAVE running first delays it, a child that dies is replaced;
the history files a rewrite leaves, kept or collected by
aof-disable-auto-gc; and the rewrites the cron starts on growth, held back
after repeated failures. Files, manifests, INFO and log lines beside
valkey-server 9.1.2's."""

from __future__ import annotations

import os
import re
import signal
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import redis
from helpers.aof_util import aof_dir, aof_server, keyspace, valkey_on
from helpers.servers import Proc

BRAND = (b"{emq}:version",)


@contextmanager
def both(*args: str) -> Iterator[list[tuple[Proc, redis.Redis, Path]]]:
    """valkey-server 9.1.2 and this server, each on a directory of its own
    with the log off."""
    out = []
    try:
        for start in (valkey_on, aof_server):
            d = tempfile.mkdtemp(prefix="aof-on-")
            srv = start(d, "--appendonly", "no", "--enable-debug-command", "yes", *args)
            out.append((srv, redis.Redis(port=srv.port), Path(d)))
        yield out
    finally:
        for srv, r, _ in out:
            r.close()
            srv.stop()


def until(check: Callable[[], bool], timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


def files(d: Path) -> list[str]:
    return sorted(p.name for p in aof_dir(d).iterdir()) if aof_dir(d).exists() else []


def manifest(d: Path) -> str:
    path = aof_dir(d) / "appendonly.aof.manifest"
    return path.read_text() if path.exists() else ""


def rewriting(r: redis.Redis) -> bool:
    return bool(r.info("persistence")["aof_rewrite_in_progress"])


def notices(srv: Proc, *words: str) -> list[str]:
    """The log's lines with any of words, without their prefix or pids."""
    return [re.sub(r"-\d+\.aof", "-PID.aof", line.split(" * ", 1)[-1].split(" # ", 1)[-1])
            for line in srv.output().splitlines() if any(w in line for w in words)]


def test_first_base_written_by_a_child() -> None:
    with both("--rdb-key-save-delay", "50000") as servers:
        seen = []
        for srv, r, d in servers:
            for i in range(10):
                r.set(f"k{i}", i)
            assert r.config_set("appendonly", "yes")
            until(lambda r=r: rewriting(r))
            info = r.info("persistence")
            r.set("during", "1")  # after the fork: kept in the temporary file
            during = (info["aof_enabled"], files(d), manifest(d))
            assert r.config_set("rdb-key-save-delay", "0")
            until(lambda r=r: not rewriting(r))
            r.set("after", "2")
            seen.append((during, files(d), manifest(d), r.info("persistence")["aof_last_bgrewrite_status"],
                         notices(srv, "temporary AOF", "temp-appendonly")))
        assert seen[0] == seen[1]
        assert seen[0][0] == (1, ["temp-appendonly.aof.incr"], "")
        assert seen[0][1] == ["appendonly.aof.1.base.rdb", "appendonly.aof.1.incr.aof", "appendonly.aof.manifest"]
        # Everything is in the files: a restart of either loads it all.
        expected = keyspace(servers[0][0].port, BRAND)
        for srv, r, _ in servers:
            r.close()
            srv.stop()
        for start in (valkey_on, aof_server):
            d = servers[0][2] if start is valkey_on else servers[1][2]
            again = start(str(d), "--appendonly", "yes") if start is valkey_on else start(str(d))
            try:
                assert keyspace(again.port, BRAND) == expected
            finally:
                again.stop()


def test_shutdown_while_the_first_base_is_written() -> None:
    with both("--rdb-key-save-delay", "1000000") as servers:
        seen = []
        for srv, r, _ in servers:
            r.set("k", "v")
            r.config_set("appendonly", "yes")
            until(lambda r=r: rewriting(r))
            try:
                r.execute_command("SHUTDOWN")
                refused = ""
            except redis.ResponseError as e:
                refused = str(e)
            seen.append((refused, r.ping(), notices(srv, "initial AOF")))
            r.config_set("rdb-key-save-delay", "0")
            until(lambda r=r: not rewriting(r))
        assert seen[0] == seen[1] == ("Errors trying to SHUTDOWN. Check logs.", True,
                                      ["Writing initial AOF, can't exit."])


def test_turned_on_during_a_bgsave() -> None:
    """The rewrite waits for the BGSAVE: nothing is written meanwhile, and
    a DEBUG LOADAOF finds only what the files already held."""
    with both() as servers:
        seen = []
        for _, r, d in servers:
            r.set("old", "1")
            r.execute_command("BGREWRITEAOF")  # a base of the log off: old=1
            until(lambda r=r: not rewriting(r))
            r.set("k1", "v1")
            r.config_set("rdb-key-save-delay", "1000000")
            r.bgsave()
            until(lambda r=r: bool(r.info("persistence")["rdb_bgsave_in_progress"]))
            r.config_set("appendonly", "yes")
            scheduled = r.info("persistence")["aof_rewrite_scheduled"]
            before = (files(d), manifest(d))
            r.set("k2", "v2")
            r.execute_command("DEBUG", "LOADAOF")
            loaded = sorted(k for k in r.keys("*") if k not in BRAND)
            r.config_set("rdb-key-save-delay", "0")
            r.execute_command("BGSAVE", "CANCEL")
            until(lambda r=r: not r.info("persistence")["aof_rewrite_scheduled"] and not rewriting(r))
            seen.append((scheduled, before, loaded, files(d)))
        assert seen[0] == seen[1]
        assert seen[0][0] == 1 and seen[0][2] == [b"old"]


def test_history_kept_then_collected() -> None:
    with both("--appendonly", "yes") as servers:
        seen = []
        for srv, r, d in servers:
            r.set("k", "v")
            r.config_set("aof-disable-auto-gc", "yes")
            for _ in range(2):
                r.execute_command("BGREWRITEAOF")
                until(lambda r=r: not rewriting(r))
            kept = (manifest(d), files(d))
            r.config_set("aof-disable-auto-gc", "no")
            seen.append((kept, manifest(d), files(d), notices(srv, "history file")))
        assert seen[0] == seen[1]
        assert "type h" in seen[0][0][0] and "type h" not in seen[0][1]


def test_turned_off_rewritten_then_on() -> None:
    """A rewrite with the log off leaves a base alone; turned on again, the
    log starts a new base and its incremental files from 1."""
    with both() as servers:
        seen = []
        for _, r, d in servers:
            r.config_set("appendonly", "yes")
            until(lambda r=r: not rewriting(r))
            r.set("a", "1")
            r.execute_command("BGREWRITEAOF")
            until(lambda r=r: not rewriting(r))
            r.config_set("appendonly", "no")
            r.execute_command("BGREWRITEAOF")
            until(lambda r=r: not rewriting(r))
            off = manifest(d)
            r.execute_command("DEBUG", "LOADAOF")
            r.config_set("appendonly", "yes")
            until(lambda r=r: not rewriting(r))
            seen.append((off, manifest(d), files(d), r.get("a")))
        assert seen[0] == seen[1]


def children(pid: int) -> list[int]:
    return [int(c) for t in Path(f"/proc/{pid}/task").iterdir() for c in (t / "children").read_text().split()]


def test_first_base_child_killed_then_tried_again() -> None:
    """A first-base child that dies takes the temporary file with it; the
    cron starts another, which puts the base in."""
    with both("--rdb-key-save-delay", "1000000") as servers:
        seen = []
        for srv, r, d in servers:
            r.set("k", "v")
            forks = r.info("stats")["total_forks"]
            r.config_set("appendonly", "yes")
            until(lambda r=r: rewriting(r))
            (first,) = children(srv.proc.pid)
            os.kill(first, signal.SIGKILL)
            until(lambda srv=srv: any("Removing the temp incr" in line for line in notices(srv, "temp incr")))
            until(lambda r=r, srv=srv, first=first: rewriting(r) and children(srv.proc.pid) not in ([], [first]))
            gone = (files(d), manifest(d))
            r.config_set("rdb-key-save-delay", "0")
            for child in children(srv.proc.pid):
                os.kill(child, signal.SIGKILL)  # the slow one: the next starts without the delay
            until(lambda r=r: r.info("persistence")["aof_last_bgrewrite_status"] == "ok" and not rewriting(r)
                  and r.info("persistence")["aof_rewrites"] > 0)
            seen.append((gone, files(d), manifest(d), r.info("stats")["total_forks"] - forks,
                         notices(srv, "temp incr")))
        assert seen[0] == seen[1]
        assert seen[0][0] == (["temp-appendonly.aof.incr"], "")  # the second try's, no manifest yet


def test_automatic_rewrite_and_its_limit() -> None:
    """Growth past auto-aof-rewrite-percentage (and the minimum size) starts
    a rewrite from the cron; after three failures in a row the cron holds
    back and says so once."""
    with both("--appendonly", "yes", "--auto-aof-rewrite-percentage", "1", "--auto-aof-rewrite-min-size", "1kb") \
            as servers:
        seen = []
        for srv, r, _ in servers:
            until(lambda r=r: not rewriting(r))
            r.set("grow", "x" * 2048)
            until(lambda r=r: r.info("persistence")["aof_rewrites"] >= 1 and not rewriting(r))
            auto = [line.split(" on ")[0] for line in notices(srv, "automatic rewriting")]
            r.config_set("auto-aof-rewrite-percentage", "0")
            r.config_set("rdb-key-save-delay", "10000000")
            for _ in range(3):
                r.execute_command("BGREWRITEAOF")
                until(lambda r=r: rewriting(r))
                for child in children(srv.proc.pid):
                    os.kill(child, signal.SIGKILL)
                until(lambda r=r: not rewriting(r))
            failures = r.info("persistence")["aof_rewrites_consecutive_failures"]
            r.config_set("auto-aof-rewrite-percentage", "1")
            r.set("more", "y" * 2048)
            until(lambda srv=srv: bool(notices(srv, "triggered the limit")))
            time.sleep(0.5)  # a few more cron ticks: still held back, said once
            held = (rewriting(r), notices(srv, "triggered the limit"))
            r.config_set("auto-aof-rewrite-percentage", "0")
            r.config_set("rdb-key-save-delay", "0")
            seen.append((auto, failures, held))
        assert seen[0] == seen[1]
        assert seen[0][0] == ["Starting automatic rewriting of AOF"]
        assert seen[0][2] == (False, ["Background AOF rewrite has repeatedly failed and triggered the limit, "
                                      "will retry in 1 minutes"])

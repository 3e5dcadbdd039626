"""One background child at a time, as Valkey forks them: an AOF rewrite
asked for while a BGSAVE runs is scheduled and starts after it; a BGSAVE
asked for while a rewrite runs is refused, or scheduled with SCHEDULE; a
second rewrite is refused; turning the log off kills a running rewrite and
says so in the log. ``rdb-key-save-delay`` keeps a child running for the
test's length on both servers, as Valkey's own units use it.
"""

from __future__ import annotations

import time
from functools import partial
from pathlib import Path

import redis
from helpers.aof_util import aof_server
from helpers.resp_wire import Wire
from helpers.servers import Proc, own_pair

ARGS = ("--appendonly", "yes", "--save", "", "--enable-debug-command", "yes")


def _until(check: object, what: str, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():  # type: ignore[operator]
            return
        time.sleep(0.05)
    raise AssertionError(what)


def _slow_keys(r: redis.Redis) -> None:
    """Three keys, each delaying a child that writes them by a second."""
    r.mset({"a": "1", "b": "2", "c": "3"})
    r.config_set("rdb-key-save-delay", 1_000_000)


def _steps(p: Proc) -> list[object]:
    """What each step answers, the replies as the bytes sent."""
    r = redis.Redis(port=p.port, decode_responses=True)
    w = Wire(p.port)
    _until(lambda: r.info("persistence")["aof_rewrite_in_progress"] == 0, "the first rewrite did not end")
    _slow_keys(r)
    seen: list[object] = [w.call("BGSAVE")]
    seen.append(w.call("BGREWRITEAOF"))
    info = r.info("persistence")
    seen.append(f"scheduled={info['aof_rewrite_scheduled']} in_progress={info['aof_rewrite_in_progress']}")
    rewrites = info["aof_rewrites"]
    r.config_set("rdb-key-save-delay", 0)
    r.execute_command("BGSAVE", "CANCEL")

    def ran() -> bool:
        now = r.info("persistence")
        return now["aof_rewrite_scheduled"] == 0 and now["aof_rewrite_in_progress"] == 0 and now["aof_rewrites"] > 0

    _until(ran, "the scheduled rewrite did not run")
    seen.append(f"rewrites={r.info('persistence')['aof_rewrites'] - rewrites}")
    _slow_keys(r)
    seen.append(w.call("BGREWRITEAOF"))
    seen.append(w.call("BGREWRITEAOF"))
    seen.append(w.call("BGSAVE"))
    seen.append(w.call("BGSAVE", "SCHEDULE"))
    r.execute_command("BGSAVE", "CANCEL")  # only the schedule: the rewrite's child goes on
    seen.append(f"in_progress={r.info('persistence')['aof_rewrite_in_progress']}")
    r.config_set("appendonly", "no")
    info = r.info("persistence")
    seen.append(f"in_progress={info['aof_rewrite_in_progress']} enabled={info['aof_enabled']}")
    r.config_set("rdb-key-save-delay", 0)
    r.close()
    w.close()
    return seen


def test_background_children_one_at_a_time_as_valkey() -> None:
    with own_pair(ARGS, ARGS) as (v, t):
        theirs, ours = _steps(v), _steps(t)
        assert ours == theirs
        assert theirs[1] == b"+Background append only file rewriting scheduled\r\n"
        assert theirs[2] == "scheduled=1 in_progress=0"
        assert theirs[5] == b"-ERR Background append only file rewriting already in progress\r\n"
        assert theirs[6].startswith(b"-ERR Another child process is active (AOF?)")  # type: ignore[union-attr]
        assert theirs[-1] == "in_progress=0 enabled=0"
        for p in (v, t):
            assert "Killing running AOF rewrite child" in p.wait_output("Killing running AOF rewrite child")


def _off_steps(p: Proc) -> list[object]:
    """BGREWRITEAOF with the log off, each rewrite loaded back with DEBUG
    LOADAOF once INFO says it is over."""
    r = redis.Redis(port=p.port, decode_responses=True)
    w = Wire(p.port)
    seen: list[object] = []

    def rewrite_then_load() -> None:
        seen.append(w.call("BGREWRITEAOF"))
        _until(lambda: r.info("persistence")["aof_rewrite_in_progress"] == 0, "the rewrite did not end")
        seen.append(w.call("DEBUG", "LOADAOF"))

    r.rpush("list", *range(10))
    rewrite_then_load()
    seen.append(r.lrange("list", 0, -1))
    r.flushall()
    r.sadd("set", "a", "b", "c")
    rewrite_then_load()
    seen.append((r.keys("*"), sorted(r.smembers("set"))))
    r.mset({"a": "1", "b": "2", "c": "3"})
    r.config_set("rdb-key-save-delay", 200_000)
    seen.append(w.call("BGREWRITEAOF"))
    info = r.info("persistence")
    seen.append(f"in_progress={info['aof_rewrite_in_progress']} enabled={info['aof_enabled']}")
    seen.append(w.call("BGREWRITEAOF"))
    seen.append(w.call("BGSAVE"))
    r.config_set("rdb-key-save-delay", 0)
    _until(lambda: r.info("persistence")["aof_rewrite_in_progress"] == 0, "the slow rewrite did not end")
    seen.append(r.info("persistence")["aof_last_bgrewrite_status"])
    r.close()
    w.close()
    return seen


def test_a_rewrite_with_the_log_off_is_a_child_like_any() -> None:
    off = ("--save", "", "--enable-debug-command", "yes")
    with own_pair(off, off) as (v, t):
        theirs, ours = _off_steps(v), _off_steps(t)
        assert ours == theirs
        assert theirs[5] == (["set"], ["a", "b", "c"])  # the second rewrite's keyspace, not the first's
        assert theirs[7] == "in_progress=1 enabled=0"


def test_appendonly_turned_on_and_off_within_a_transaction() -> None:
    """Each switch inside EXEC answers as Valkey's; the manifest the
    switches leave (the earlier files as history) loads again."""
    steps = [("CONFIG", "SET", "appendonly", "no"), ("SET", "k", "v"), ("MULTI",),
             ("CONFIG", "SET", "appendonly", "yes"), ("CONFIG", "SET", "appendonly", "no"), ("EXEC",),
             ("CONFIG", "SET", "appendonly", "yes"), ("MULTI",), ("CONFIG", "SET", "appendonly", "no"),
             ("CONFIG", "SET", "appendonly", "yes"), ("EXEC",), ("SET", "after", "1")]
    with own_pair(ARGS, ARGS) as (v, t):
        replies = []
        for p in (v, t):
            w = Wire(p.port)
            replies.append([w.call(*s) for s in steps])
            w.close()
        assert replies[0] == replies[1]
        assert replies[1][5] == b"*2\r\n+OK\r\n+OK\r\n"
        for p in (v, t):  # the first base is scheduled, started by the cron: wait as Valkey's harness does
            _until(partial(_written, redis.Redis(port=p.port)), "the scheduled rewrite did not end")
        d = redis.Redis(port=t.port, decode_responses=True).config_get("dir")["dir"]
        manifest = (Path(d) / "appendonlydir" / "appendonly.aof.manifest").read_text()
        assert [line.split()[-1] for line in manifest.splitlines()].count("b") == 1, manifest
    again = aof_server(d)
    try:
        r = redis.Redis(port=again.port)
        assert (r.get("k"), r.get("after")) == (b"v", b"1")
    finally:
        again.stop()


def _written(r: redis.Redis) -> bool:
    """No rewrite running or scheduled, and the log on (the first base written)."""
    info = r.info("persistence")
    return (info["aof_rewrite_in_progress"], info["aof_rewrite_scheduled"], info["aof_enabled"]) == (0, 0, 1)


def _first_lines(p: Proc) -> list[str]:
    """With aof-timestamp-enabled: the first line of the incremental file
    after a write, then of the base after a rewrite (commands form)."""
    r = redis.Redis(port=p.port, decode_responses=True)
    r.config_set("aof-timestamp-enabled", "yes")
    r.config_set("aof-use-rdb-preamble", "no")
    d = Path(r.config_get("dir")["dir"]) / "appendonlydir"

    def first(kind: str) -> str:
        names = [ln.split()[1] for ln in (d / "appendonly.aof.manifest").read_text().splitlines()
                 if ln.split()[-1] == kind]
        return (d / names[-1]).read_bytes().split(b"\r\n", 1)[0].decode()

    r.set("foo", "bar")
    seen = [first("i")]
    _rewrite_and_wait(r)
    seen.append(first("b"))
    r.close()
    return seen


def _rewrite_and_wait(r: redis.Redis) -> None:
    r.bgrewriteaof()
    _until(lambda: r.info("persistence")["aof_rewrite_in_progress"] == 0, "the rewrite did not end")


def test_timestamp_annotations_lead_the_log_and_the_base() -> None:
    # No job-core brand: its key would be the log's first record here.
    with own_pair(ARGS, (*ARGS, "--emq-brand", "none")) as (v, t):
        for p in (v, t):
            incr, base = _first_lines(p)
            assert incr.startswith("#TS:") and base.startswith("#TS:"), (p, incr, base)
            assert abs(int(incr[4:]) - time.time()) < 60
            w = Wire(p.port)
            assert [w.call("DEBUG", "AOF-FLUSH-SLEEP", x) for x in ("0", "junk")] == [b"+OK\r\n"] * 2
            w.close()
        # The annotated log loads back.
        r = redis.Redis(port=t.port)
        assert r.execute_command("DEBUG", "LOADAOF") == b"OK" and r.get("foo") == b"bar"


def test_forks_are_counted_as_valkey_counts_them() -> None:
    """INFO total_forks: one for each BGSAVE and each rewrite child (the log
    off, then on), none for SAVE; latest_fork_usec is set once one ran."""
    off = ("--save", "", "--enable-debug-command", "yes")
    with own_pair(off, off) as (v, t):
        seen = []
        for p in (v, t):
            r = redis.Redis(port=p.port)
            steps = [r.info("stats")["total_forks"]]
            r.set("k", "v")
            r.save()
            steps.append(r.info("stats")["total_forks"])
            r.bgsave()
            _until(lambda r=r: r.info("persistence")["rdb_bgsave_in_progress"] == 0, "bgsave")
            steps.append(r.info("stats")["total_forks"])
            r.bgrewriteaof()
            _until(lambda r=r: r.info("persistence")["aof_rewrite_in_progress"] == 0, "rewrite")
            steps.append(r.info("stats")["total_forks"])
            steps.append(r.info("stats")["latest_fork_usec"] > 0)
            r.close()
            seen.append(steps)
        assert seen[1] == seen[0] == [0, 0, 1, 2, True]

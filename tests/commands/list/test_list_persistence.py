"""Lists through the RDB file and the AOF rewrite: Valkey's quicklist files
(compressed nodes, plain nodes for big elements, count- and size-limited
nodes) load here as Valkey loads them, encodings included, and the files
this server writes load into Valkey."""

from __future__ import annotations

import shutil
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
from helpers.aof_util import aof_server, keyspace
from helpers.servers import start_trafikey, start_valkey

OPTIONS = [("-2", "0"), ("-2", "1"), ("4", "2"), ("-5", "0"), ("1", "1")]


def fill(r: redis.Redis) -> None:
    r.rpush("small", "a", "1", "-9", "x" * 70)
    r.rpush("counted", *[str(i) for i in range(9)])
    r.rpush("many", *["e%d" % i for i in range(2000)])
    r.rpush("repeats", *["same-text-again" for _ in range(500)])
    r.rpush("plain", "a", "p" * 70000, "b")
    r.rpush("ints", *[str(i * 1000003) for i in range(300)])


def lists(port: int) -> dict[bytes, Any]:
    r = redis.Redis(port=port)
    try:
        return {k: (r.lrange(k, 0, -1), r.object("encoding", k)) for k in sorted(r.keys("*"))}
    finally:
        r.close()


@pytest.fixture
def d() -> Iterator[str]:
    path = tempfile.mkdtemp(prefix="rdb-lists-")
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.mark.parametrize("size,depth", OPTIONS)
def test_valkey_lists_load_here(d: str, size: str, depth: str) -> None:
    opts = ("--list-max-listpack-size", size, "--list-compress-depth", depth)
    v = start_valkey("--dir", d, *opts)
    try:
        fill(redis.Redis(port=v.port))
        redis.Redis(port=v.port).save()
    finally:
        v.stop()
    v = start_valkey("--dir", d, *opts)
    try:
        theirs = lists(v.port)
    finally:
        v.stop()
    t = start_trafikey("--dir", d, "--emq-brand", "none", *opts)
    try:
        ours = lists(t.port)
    finally:
        t.stop()
    assert len(theirs) == 6
    assert ours == theirs


@pytest.mark.parametrize("size,depth", OPTIONS)
def test_our_lists_load_into_valkey(d: str, size: str, depth: str) -> None:
    opts = ("--list-max-listpack-size", size, "--list-compress-depth", depth)
    t = start_trafikey("--dir", d, "--emq-brand", "none", *opts)
    try:
        fill(redis.Redis(port=t.port))
        before = lists(t.port)
        redis.Redis(port=t.port).save()
    finally:
        t.stop()
    v = start_valkey("--dir", d, *opts)
    try:
        theirs = lists(v.port)
    finally:
        v.stop()
    assert len(theirs) == 6
    assert [x[0] for x in theirs.values()] == [x[0] for x in before.values()]
    # Our own reading of our file settles on the encodings Valkey's does.
    t = start_trafikey("--dir", d, "--emq-brand", "none", *opts)
    try:
        assert lists(t.port) == theirs
    finally:
        t.stop()


def test_aof_rewrite_rebuilds_lists(d: str) -> None:
    srv = aof_server(d, "--emq-brand", "none", "--aof-use-rdb-preamble", "no")  # a base of commands
    try:
        r = redis.Redis(port=srv.port)
        fill(r)
        r.pexpire("small", 500_000)
        expected = keyspace(srv.port)
        r.bgrewriteaof()
        deadline = time.monotonic() + 30
        while r.info("persistence")["aof_rewrite_in_progress"] or r.info("persistence")["aof_rewrite_scheduled"]:
            assert time.monotonic() < deadline, "the rewrite did not finish"
            time.sleep(0.02)
        base = next(Path(d, "appendonlydir").glob("*.base.*")).read_bytes()
        r.close()
    finally:
        srv.stop()
    assert b"$5\r\nRPUSH\r\n$4\r\nmany\r\n" in base  # rebuilt by RPUSH batches
    again = aof_server(d, "--emq-brand", "none")
    try:
        assert keyspace(again.port) == expected
    finally:
        again.stop()

"""HyperLogLog keyspace events and append-only log, against Valkey 9.1.2.

Events: PFADD raises ``pfadd`` (after ``new`` for a key it creates) only
when a register rose; PFMERGE raises ``pfadd`` too; PFCOUNT, even when it
rewrites the cached cardinality, raises nothing but ``keymiss`` for absent
keys. AOF: the same workload on both servers logs the same commands
(PFADD only when it changed something, PFCOUNT when it refreshed the
cache, PFDEBUG when it turned a value dense), and our log replays in
Valkey to our keyspace.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from typing import Any

import pytest
import redis
from helpers.aof_util import aof_server, keyspace, legacy_copy, logged, valkey_on
from helpers.keyevents import assert_same_events, streams_with_flags
from helpers.servers import Proc, own_pair


@pytest.fixture(scope="module")
def servers() -> Iterator[tuple[Proc, Proc]]:
    """A pair of this module's own: the tests change notify-keyspace-events."""
    with own_pair() as pair:
        yield pair


STEPS: list[tuple] = [
    ("PFADD", "h"),
    ("PFADD", "h", "a", "b"),
    ("PFADD", "h", "a"),
    ("PFCOUNT", "h"),
    ("PFCOUNT", "h"),
    ("PFCOUNT", "missing"),
    ("PFCOUNT", "h", "missing2"),
    ("PFMERGE", "m", "h", "gone"),
    ("PFMERGE", "m"),
    ("PFDEBUG", "TODENSE", "m"),
    ("PFDEBUG", "GETREG", "h"),
    ("PFADD", "h", "c"),
    ("SET", "s", "x"),
    ("PFADD", "s", "x"),
    ("PFCOUNT", "s"),
]


@pytest.mark.parametrize("proto", [2, 3])
@pytest.mark.parametrize("flags", ["KEA", "KEAm", "E$", "Kgn"])
def test_events(servers: tuple[Proc, Proc], proto: int, flags: str) -> None:
    v, t = servers
    try:
        ve, te = streams_with_flags((v.port, t.port), flags, STEPS, proto)
        assert_same_events(ve, te)
    finally:
        for p in (v, t):
            r = redis.Redis(port=p.port)
            r.config_set("notify-keyspace-events", "")
            r.close()


def workload(r: redis.Redis) -> None:
    r.pfadd("h", "a", "b", "c")
    r.pfadd("h", "a")  # nothing raised: not logged
    r.pfcount("h")  # refreshes the cache: logged
    r.pfcount("h")  # cached: not logged
    r.pfcount("h", "nothing")  # never writes
    r.pfadd("big", *[b"e%d" % i for i in range(3000)])
    r.pfmerge("m", "h", "big")
    r.pfcount("m")
    r.pfadd("sp", "x")
    r.execute_command("PFDEBUG", "ENCODING", "sp")
    r.execute_command("PFDEBUG", "TODENSE", "sp")
    r.execute_command("PFDEBUG", "TODENSE", "sp")
    r.pfadd("sp2", "y")
    r.execute_command("PFDEBUG", "GETREG", "sp2")
    r.execute_command("PFDEBUG", "GETREG", "sp2")
    with r.pipeline(transaction=True) as p:
        p.pfadd("t", "1", "2")
        p.pfcount("t")
        p.pfcount("t")
        p.execute()
    r.pfadd("h", "d")
    r.select(1)
    r.pfcount("h")
    r.pfadd("h1", "z")
    r.pfcount("h1")


def test_aof_logs_what_valkey_logs_and_replays_in_valkey() -> None:
    dt = tempfile.mkdtemp(prefix="aof-hll-")
    dv = tempfile.mkdtemp(prefix="aof-hll-v-")
    ours = aof_server(dt, "--appendfsync", "always", "--emq-brand", "none")
    theirs = valkey_on(dv, "--appendonly", "yes", "--appendfsync", "always")
    try:
        for p in (ours, theirs):
            r = redis.Redis(port=p.port)
            r.flushall()
            workload(r)
            r.close()
        expected = keyspace(ours.port)
        assert expected == keyspace(theirs.port)
    finally:
        ours.stop()
        theirs.stop()
    ours_log = logged(dt, "*.aof")
    theirs_log = logged(dv, "*.aof")
    assert ours_log == theirs_log
    assert [b"PFCOUNT", b"h"] in ours_log and [b"PFDEBUG", b"GETREG", b"sp2"] in ours_log
    again = valkey_on(legacy_copy(dt), "--appendonly", "yes")
    try:
        assert keyspace(again.port) == expected
    finally:
        again.stop()
    for d in (dt, dv):
        shutil.rmtree(d, ignore_errors=True)


def test_a_loaded_log_replays_pfcount_without_logging_it_again() -> None:
    d = tempfile.mkdtemp(prefix="aof-hll-replay-")
    srv = aof_server(d, "--emq-brand", "none")
    try:
        r = redis.Redis(port=srv.port)
        r.pfadd("h", "a", "b")
        r.pfcount("h")
        before: Any = r.get("h")
        r.close()
    finally:
        srv.stop()
    n = len(logged(d, "*.aof"))
    again = aof_server(d, "--emq-brand", "none")
    try:
        r = redis.Redis(port=again.port)
        assert r.get("h") == before
        r.close()
    finally:
        again.stop()
    assert len(logged(d, "*.aof")) == n
    shutil.rmtree(d, ignore_errors=True)

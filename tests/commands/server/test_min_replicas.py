"""min-replicas-to-write against Valkey 9.1.2: with min-replicas-to-write
and min-replicas-max-lag set and no replicas, every write (a command, a
transaction that holds one, a script that may write) is refused with
NOREPLICAS and changes nothing; reads go on. Replies, error and command
statistics and the keyspace are compared.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
from helpers.aof_util import keyspace
from helpers.resp_wire import Wire
from helpers.servers import Proc, own_pair


@pytest.fixture(scope="module")
def servers() -> Iterator[tuple[Proc, Proc]]:
    with own_pair() as pair:
        yield pair


def _stats(w: Wire) -> tuple[list[str], dict[str, tuple[str, ...]]]:
    errors = sorted(x for x in w.call("INFO", "errorstats").decode().split("\r\n")[1:] if x)
    cmds = {}
    for line in w.call("INFO", "commandstats").decode().split("\r\n")[1:]:
        m = re.match(r"cmdstat_([^:]+):calls=(\d+),.*rejected_calls=(\d+),failed_calls=(\d+)", line)
        if m and not m.group(1).startswith(("info", "config")):
            cmds[m.group(1)] = m.group(2, 3, 4)
    return errors, cmds


@pytest.mark.parametrize("proto", [2, 3])
def test_writes_refused_without_good_replicas(servers: tuple[Proc, Proc], proto: int) -> None:
    v, t = servers
    wv, wt = Wire(v.port), Wire(t.port)
    try:
        def assert_same(*args: object) -> bytes:
            a, b = wv.call(*args), wt.call(*args)  # type: ignore[arg-type]
            assert b == a, f"{args!r}\n valkey:   {a!r}\n trafikey: {b!r}"
            return a

        assert_same("FLUSHALL")
        for w in (wv, wt):
            w.call("HELLO", proto)  # the client ids in the replies differ
        assert_same("SET", "x", "1")
        assert_same("CONFIG", "RESETSTAT")
        assert_same("CONFIG", "SET", "min-replicas-to-write", "2")
        for cmd in [("SET", "x", "2"), ("INCR", "x"), ("DEL", "x"), ("GET", "x"), ("EXISTS", "x"),
                    ("SET", "x"), ("FLUSHALL",), ("PING",),
                    ("MULTI",), ("SET", "x", "3"), ("GET", "x"), ("EXEC",),
                    ("MULTI",), ("GET", "x"), ("EVAL", "return 1", 0), ("EXEC",),
                    ("MULTI",), ("EVAL", "#!lua\nreturn 1", 0), ("EXEC",),
                    ("MULTI",), ("EVAL", "#!lua flags=no-writes\nreturn 1", 0), ("EXEC",),
                    ("EVAL", "#!lua\nreturn 1", 0), ("EVAL", "return redis.call('incr', 'x')", 0)]:
            assert_same(*cmd)
        assert _stats(wt) == _stats(wv)
        assert keyspace(t.port) == keyspace(v.port)
        assert_same("CONFIG", "SET", "min-replicas-to-write", "0")
        assert_same("SET", "x", "4")
        assert keyspace(t.port) == keyspace(v.port)
    finally:
        for w in (wv, wt):
            w.call("CONFIG", "SET", "min-replicas-to-write", "0")
            w.close()

"""extended-redis-compatibility and the per-client command count, against
Valkey 9.1.2.

With extended-redis-compatibility on, Valkey 9.1.2's HELLO names the server
``redis`` at version 7.2.4 and INFO says ``redis_mode`` for ``server_mode``;
everything else stays. CLIENT INFO's tot-cmds counts every command run on
the client's behalf: a script's commands, a transaction's commands, and the
CONFIG GET that Valkey's Lua engine runs when SCRIPT FLUSH or FUNCTION
FLUSH gives it a new state (it also shows in the command statistics).
"""

from __future__ import annotations

import re

import pytest
from helpers.resp_wire import Wire


def _hello(w: Wire, proto: int) -> bytes:
    """HELLO's reply without the client id, which differs between servers."""
    return re.sub(rb"(\$2\r\nid\r\n):\d+", rb"\1:N", w.call("HELLO", proto))


@pytest.mark.parametrize("proto", [2, 3])
def test_hello_and_info_under_redis_compatibility(pair, proto: int) -> None:
    try:
        pair.check("CONFIG", "SET", "extended-redis-compatibility", "yes")
        pair.check("CONFIG", "GET", "extended-redis-compatibility")
        assert _hello(pair.t, proto) == _hello(pair.v, proto)
        modes = [[line for line in w.call("INFO", "server").decode().split("\r\n") if "_mode:" in line]
                 for w in (pair.v, pair.t)]
        assert modes[1] == modes[0] == ["redis_mode:standalone"]
        versions = [[line for line in w.call("INFO", "server").decode().split("\r\n")
                     if line.startswith(("redis_version", "server_name", "valkey_version"))] for w in (pair.v, pair.t)]
        assert versions[1] == versions[0]
        pair.check("EVAL", "return {redis.REDIS_VERSION, server.SERVER_NAME, server.VALKEY_VERSION}", 0)
    finally:
        pair.check("CONFIG", "SET", "extended-redis-compatibility", "no")
    assert _hello(pair.t, proto) == _hello(pair.v, proto)
    modes = [[line for line in w.call("INFO", "server").decode().split("\r\n") if "_mode:" in line]
             for w in (pair.v, pair.t)]
    assert modes[1] == modes[0] == ["server_mode:standalone"]


def _tot_cmds(w: Wire) -> int:
    m = re.search(rb" tot-cmds=(\d+)", w.call("CLIENT", "INFO"))
    assert m is not None
    return int(m.group(1))


def _config_get_calls(w: Wire) -> bytes:
    m = re.search(rb"cmdstat_config\|get:calls=(\d+)", w.call("INFO", "commandstats"))
    return m.group(1) if m else b"0"


LIB = "#!lua name=tc\nserver.register_function('f', function() return server.call('ping') end)"


@pytest.mark.parametrize("commands", [
    [("SELECT", "9"), ("FLUSHALL",), ("FUNCTION", "FLUSH"), ("PING",), ("PING", "valkey"), ("PING", "a", "b")],
    [("SCRIPT", "FLUSH")], [("SCRIPT", "FLUSH", "ASYNC")], [("FUNCTION", "FLUSH", "SYNC")],
    [("SCRIPT", "FLUSH", "BAD")], [("FUNCTION", "FLUSH", "BAD")],
    [("EVAL", "redis.call('ping') return redis.call('get', 'x')", 0)],
    [("EVAL", "redis.pcall('nosuch') return redis.pcall('get', 'x', 'y')", 0)],
    [("FUNCTION", "LOAD", "REPLACE", LIB), ("FCALL", "f", 0), ("FUNCTION", "DELETE", "tc")],
    [("MULTI",), ("SET", "x", "1"), ("EVAL", "return redis.call('incr', 'x')", 0), ("EXEC",)],
    [("NOSUCH",), ("SET", "x"), ("GET", "x")],
])
def test_tot_cmds(pair, commands: list[tuple]) -> None:
    pair.check("CONFIG", "RESETSTAT")
    before = [_tot_cmds(w) for w in (pair.v, pair.t)]
    for cmd in commands:
        pair.check(*cmd)
    after = [_tot_cmds(w) for w in (pair.v, pair.t)]
    assert after[1] - before[1] == after[0] - before[0]
    assert _config_get_calls(pair.t) == _config_get_calls(pair.v)

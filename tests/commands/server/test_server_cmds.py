"""LASTSAVE, SHUTDOWN, CONFIG and their kin against Valkey (DEBUG is test_debug.py)."""

from __future__ import annotations

import re

import pytest
from helpers.resp_wire import Wire
from helpers.servers import start_trafikey, start_valkey


def test_lastsave_is_an_integer_near_now(pair) -> None:
    v, t = pair.both("LASTSAVE")
    # Start times differ; both are Unix seconds of roughly the same epoch.
    assert re.fullmatch(rb":\d{10}\r\n", v) and re.fullmatch(rb":\d{10}\r\n", t)


@pytest.mark.parametrize("args", [("foo",), ("NOSAVE", "SAVE"), ("ABORT",), ("ABORT", "NOW"), ("now", "x")])
def test_shutdown_errors(pair, args) -> None:
    pair.check("SHUTDOWN", *args)


def test_shutdown_closes_without_reply() -> None:
    p = start_trafikey()
    try:
        w = Wire(p.port)
        w.send_raw(b"*2\r\n$8\r\nSHUTDOWN\r\n$6\r\nNOSAVE\r\n")
        with pytest.raises(Exception):  # noqa: B017 - connection closed, any form
            w.read_reply()
        assert p.proc.wait(timeout=10) == 0
    finally:
        p.stop()


DETERMINISTIC = (
    "maxmemory maxmemory-policy hash-max-listpack-entries hash-max-listpack-value "
    "zset-max-listpack-entries zset-max-listpack-value lazyfree-lazy-user-del busy-reply-threshold "
    "lua-time-limit slowlog-log-slower-than slowlog-max-len notify-keyspace-events maxclients "
    "tcp-keepalive io-threads appendonly hz databases timeout hash-max-ziplist-entries"
).split()


@pytest.mark.parametrize("name", DETERMINISTIC)
def test_config_get_defaults(pair23, name) -> None:
    pair23.check("CONFIG", "GET", name)
    pair23.check("CONFIG", "GET", name.upper())


def _map_items(reply: bytes) -> set[bytes]:
    parts = reply.split(b"\r\n")
    return set(zip(parts[2::4], parts[4::4], strict=False))


def test_config_get_several_and_glob(pair23) -> None:
    # Several names come back in Valkey's dict order (its hash): compare as maps.
    v, t = pair23.both("CONFIG", "GET", "maxmemory", "hz")
    assert _map_items(t) == _map_items(v) and len(_map_items(t)) == 2
    pair23.check("CONFIG", "GET", "nosuchoption")
    pair23.check("CONFIG", "GET", "hz", "hz")
    # Valkey has many more options and returns a glob's matches in dict order:
    # every one we report must carry Valkey's value.
    v, t = pair23.both("CONFIG", "GET", "*max*list*")
    assert _map_items(t) and _map_items(t) <= _map_items(v)


@pytest.mark.parametrize("args", [
    ("foo", "1"), ("hz", "x"), ("hz",), ("hz", "10", "hz", "11"), ("databases", "4"),
    ("maxmemory-policy", "foo"), ("appendonly", "maybe"), ("hz", "10", "foo", "1"),
    ("hz", "x", "foo", "1"), ("hz", "10", "maxmemory"),
])
def test_config_set_errors(pair23, args) -> None:
    pair23.check("CONFIG", "SET", *args)


def test_config_set_all_or_nothing(pair) -> None:
    try:
        pair.check("CONFIG", "SET", "hz", "15", "maxmemory-policy", "bad")
        pair.check("CONFIG", "GET", "hz")
        pair.check("CONFIG", "SET", "hz", "15", "maxmemory-policy", "ALLKEYS-LRU", "maxmemory", "1mb")
        v, t = pair.both("CONFIG", "GET", "hz", "maxmemory-policy", "maxmemory")
        assert _map_items(t) == _map_items(v) and len(_map_items(t)) == 3
    finally:
        for w in (pair.v, pair.t):
            w.call("CONFIG", "SET", "hz", "10", "maxmemory-policy", "noeviction", "maxmemory", "0")


def test_config_help_and_resetstat(pair23) -> None:
    pair23.check("CONFIG", "HELP")
    pair23.check("CONFIG", "RESETSTAT")


def test_config_get_patterns_list_aliases(pair) -> None:
    """Patterns match alias names too (lua-time-limit, slaveof ...), but never hidden options."""
    for pattern in ("lua*", "slave*", "*ziplist*", "*time-limit"):
        v, t = pair.both("CONFIG", "GET", pattern)
        assert _map_items(t) == _map_items(v) and _map_items(v), pattern
    v, t = pair.both("CONFIG", "GET", "*")
    ours = {k for k, _ in _map_items(t)}
    theirs = {k for k, _ in _map_items(v)}
    assert theirs <= ours
    # The only names Valkey lacks are this server's own options.
    assert ours - theirs == {b"emq-brand", b"enable-clock-command", b"enable-fault-command",
                             b"cluster-slot-checks", b"seed"}


@pytest.mark.parametrize("mode", ["no", "yes", "local"])
def test_protected_configs(mode: str) -> None:
    procs = [start_valkey("--enable-protected-configs", mode), start_trafikey("--enable-protected-configs", mode)]
    try:
        v, t = (Wire(p.port) for p in procs)
        for args in (("lua-enable-insecure-api", "no"), ("dbfilename", "x.rdb"), ("dir", "."), ("hz", "11")):
            assert v.call("CONFIG", "SET", *args) == t.call("CONFIG", "SET", *args), args
        assert v.call("CONFIG", "GET", "lua-enable-insecure-api") == t.call("CONFIG", "GET", "lua-enable-insecure-api")
    finally:
        for p in procs:
            p.stop()


@pytest.mark.parametrize("args", [
    ("NOSUCH", "x\0y"), ("NO\0SUCH", "a"), ("CONFIG", "x\0y"), ("NOSUCH", "é" * 100, "ü" * 40), ("CONFIG", "é" * 100),
])
def test_unknown_command_texts_stop_at_nul_and_count_bytes(pair, args) -> None:  # type: ignore[no-untyped-def]
    pair.check(*args)

"""LASTSAVE, SHUTDOWN, DEBUG against Valkey (DEBUG needs its own Valkey with
the debug command enabled)."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
from helpers.resp_wire import Wire
from helpers.servers import Proc, start_trafikey, start_valkey


@pytest.fixture(scope="module")
def debug_valkey() -> Iterator[Proc]:
    p = start_valkey("--enable-debug-command", "yes")
    yield p
    p.stop()


@pytest.fixture(scope="module")
def debug_trafikey() -> Iterator[Proc]:
    p = start_trafikey("--enable-debug-command", "yes")
    yield p
    p.stop()


def test_debug_is_refused_by_default(pair) -> None:
    pair.check("DEBUG", "DIGEST")
    pair.check("DEBUG", "SLEEP", "0")


@pytest.mark.parametrize("mode", ["local", "no"])
def test_debug_local_mode(mode: str) -> None:
    """Our connections come from loopback: "local" allows them, "no" does not."""
    procs = [start_valkey("--enable-debug-command", mode), start_trafikey("--enable-debug-command", mode)]
    try:
        v, t = (Wire(p.port) for p in procs)
        assert v.call("DEBUG", "SLEEP", "0") == t.call("DEBUG", "SLEEP", "0")
        assert t.call("DEBUG", "SLEEP", "0") == (b"+OK\r\n" if mode == "local" else t.call("DEBUG", "DIGEST"))
    finally:
        for p in procs:
            p.stop()


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


def test_debug_digest_and_sleep(debug_valkey: Proc, debug_trafikey: Proc) -> None:
    v = Wire(debug_valkey.port)
    t = Wire(debug_trafikey.port)
    for w in (v, t):
        w.call("FLUSHALL")
    assert v.call("DEBUG", "DIGEST") == t.call("DEBUG", "DIGEST") == b"+" + b"0" * 40 + b"\r\n"
    for w in (v, t):
        w.call("SET", "a", "1")
        w.call("HSET", "h", "f", "v")
    dv, dt = v.call("DEBUG", "DIGEST"), t.call("DEBUG", "DIGEST")
    # The hash function is ours; shape and stability are what must hold.
    assert re.fullmatch(rb"\+[0-9a-f]{40}\r\n", dt) and dt != b"+" + b"0" * 40 + b"\r\n"
    assert re.fullmatch(rb"\+[0-9a-f]{40}\r\n", dv)
    assert t.call("DEBUG", "DIGEST") == dt
    for args in (("SLEEP", "0"), ("SLEEP", "0.01"), ("SLEEP", "x"), ("SLEEP", "0.01abc")):
        assert v.call("DEBUG", *args) == t.call("DEBUG", *args), args
    v.close()
    t.close()
    t.close()


def test_debug_digest_value(debug_valkey: Proc, debug_trafikey: Proc) -> None:
    """Per key: forty zeros for no key, else a digest that follows the value
    and its time to live, equal for a COPY (what Valkey's units compare)."""
    seen = []
    for p in (debug_valkey, debug_trafikey):
        w = Wire(p.port)
        w.call("FLUSHALL")
        w.call("RPUSH", "l", "a", "b")
        w.call("COPY", "l", "l2")
        w.call("SADD", "s", "x")
        first = w.call("DEBUG", "DIGEST-VALUE", "l", "l2", "nokey", "s")
        w.call("PEXPIRE", "l2", 100_000)
        with_ttl = w.call("DEBUG", "DIGEST-VALUE", "l2")
        w.call("RPUSH", "l", "c")
        changed = w.call("DEBUG", "DIGEST-VALUE", "l")
        lines = first.split(b"\r\n")
        assert lines[0] == b"*4" and lines[3] == b"+" + b"0" * 40
        assert lines[1] == lines[2] != lines[4]
        assert re.fullmatch(rb"\+[0-9a-f]{40}", lines[1])
        assert with_ttl != b"*1\r\n" + lines[2] + b"\r\n" and changed != b"*1\r\n" + lines[1] + b"\r\n"
        seen.append(w.call("DEBUG", "DIGEST-VALUE"))
        w.close()
    assert seen[0] == seen[1] == b"*0\r\n"


def test_debug_object(debug_valkey: Proc, debug_trafikey: Proc) -> None:
    """Valkey's fields in Valkey's order; the encoding as OBJECT ENCODING
    says; no key is Valkey's error; reading it is not a use of the key."""
    shape = re.compile(rb"\+Value at:0x[0-9a-f]+ refcount:(\d+) encoding:(\S+) serializedlength:(\d+) "
                       rb"lru:(\d+) lru_seconds_idle:(\d+)")
    seen = []
    for p in (debug_valkey, debug_trafikey):
        w = Wire(p.port)
        w.call("FLUSHALL")
        w.call("SET", "s", "hello")
        w.call("SET", "n", "12345")
        w.call("HSET", "h", "f", "v")
        w.call("SADD", "set", "1", "2")
        got = []
        for key in ("s", "n", "h", "set"):
            m = shape.match(w.call("DEBUG", "OBJECT", key))
            assert m, key
            got.append((m.group(1), m.group(2), int(m.group(5)) < 5))
        got.append(w.call("DEBUG", "OBJECT", "nokey"))
        seen.append(got)
        w.close()
    assert seen[0] == seen[1]
    assert seen[1][-1] == b"-ERR no such key\r\n"


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

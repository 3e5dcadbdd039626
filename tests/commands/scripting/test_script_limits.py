"""Scripts at Valkey 9.1.2's limits, byte for byte: server.call with as
many arguments as Lua can pass (``unpack`` gives up to 7999), and the
maxmemory and min-replicas-to-write refusals of scripts, before a flagged
script runs and at the first write of a script without flags. Every
refusal leaves the keyspace as it was, and is counted in the error and
command statistics as Valkey counts it.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator

import pytest
from helpers.aof_util import keyspace
from helpers.pair import Pair
from helpers.resp_wire import Wire, encode, wait_blocked
from helpers.servers import Proc, own_pair, start_trafikey, start_valkey

FILL = "local a = {} for i = 1, %d do a[i] = 'k' .. i end\n"


@pytest.fixture
def sp(pair23):
    pair23.check("SCRIPT", "FLUSH")
    return pair23


def assert_same_keyspace(valkey: Proc, trafikey: Proc) -> None:
    assert keyspace(trafikey.port) == keyspace(valkey.port)


@pytest.mark.parametrize("n", [7990, 7996, 7997, 7998, 7999, 8000])
def test_unpacked_arguments(sp, n: int) -> None:
    """Up to unpack's own limit (7999 values; 8000 is Lua's 'too many
    results to unpack'), one call or two arguments more."""
    sp.check("SET", "k1", "v")
    sp.check("EVAL", FILL % n + "return redis.call('exists', unpack(a))", 0)
    sp.check("EVAL", FILL % n + "return redis.call('del', 'x', 'y', unpack(a))", 0)
    sp.check("EVAL", FILL % n + "return redis.pcall('exists', 'x', unpack(a))", 0)


def test_many_arguments_write_and_refusals(sp, valkey_server: Proc, trafikey_server: Proc) -> None:
    """A write with 8001 arguments, and the refusals of such calls: a
    non-string argument (or a nil among them), an unknown command, a wrong
    arity; none of them writes anything."""
    sp.check("SET", "x", "1")
    for body in [
        "return redis.call('del', 'x', {}, unpack(a))",
        "return redis.call('del', 'x', nil, unpack(a))",
        "return redis.pcall('del', 'x', {}, unpack(a))",
        "return redis.call('nosuch', 'x', unpack(a))",
        "return redis.pcall('nosuch', 'x', unpack(a))",
        "return redis.call('get', 'x', unpack(a))",
        "return redis.pcall('get', 'x', unpack(a))",
        "local ok, e = pcall(redis.call, 'nosuch', unpack(a)) return {tostring(ok), e['err']}",
    ]:
        sp.check("EVAL", FILL % 7999 + body, 0)
    assert_same_keyspace(valkey_server, trafikey_server)
    sp.check("EVAL", "local a = {} for i = 1, 7998 do a[i] = 'v' .. i end\n"
             "return redis.call('mset', 'x', '2', unpack(a))", 0)
    sp.check("DBSIZE")
    assert_same_keyspace(valkey_server, trafikey_server)


@pytest.mark.parametrize("body", [
    "local c = redis.call\nreturn c('incr', 'x', 'y')",
    "local c = redis.pcall\nreturn c('nosuch')",
    "local r = redis\nreturn r.call('incr', 'x', 'y')",
    "return server.call('nosuch')",
    "return {type(redis.call), type(server.pcall), tostring(getmetatable(redis.call))}",
    "return {pcall(string.dump, redis.call)}",
    "return string.dump(redis.pcall)",
    "\nlocal x = string.dump(server.call, 1)",
    "return\n string.dump()",
    "return type(string.dump(function() end))",
    "local s = string\nreturn s.dump(redis.call)",
    "local x = coroutine.create(redis.pcall)",
    "local x = coroutine.wrap(server.call)",
])
def test_api_functions_stay_c_functions(sp, body: str) -> None:
    """server.call and server.pcall keep behaving as Valkey's C functions:
    a tail call keeps the script's line, string.dump and coroutines refuse
    them."""
    sp.check("EVAL", body, 0)


# -- maxmemory and min-replicas-to-write --------------------------------------------------


@pytest.fixture(scope="module")
def spare() -> Iterator[tuple[Proc, Proc]]:
    """Servers whose maxmemory and min-replicas-to-write the tests change."""
    with own_pair() as pair:
        yield pair


class Spare(Pair):
    def __init__(self, v: Proc, t: Proc) -> None:
        self.procs = (v, t)
        super().__init__(Wire(v.port), Wire(t.port))
        for w in (self.v, self.t):
            assert w.call("FLUSHALL") == b"+OK\r\n"
            w.call("SCRIPT", "FLUSH")
            w.call("FUNCTION", "FLUSH")
            w.call("CONFIG", "RESETSTAT")

    def stats(self) -> None:
        """Error statistics and the calls of each command, as both count them."""
        def read(w: Wire) -> tuple[str, dict[str, str]]:
            errors = w.call("INFO", "errorstats").decode()
            errors = "\n".join(sorted(x for x in errors.split("\r\n")[1:] if x))
            cmds = {}
            for line in w.call("INFO", "commandstats").decode().split("\r\n")[1:]:
                m = re.match(r"cmdstat_([^:]+):calls=(\d+),.*rejected_calls=(\d+),failed_calls=(\d+)", line)
                if m and not m.group(1).startswith(("info", "config")):
                    cmds[m.group(1)] = m.group(2, 3, 4)
            return errors, cmds
        assert read(self.t) == read(self.v)

    def keyspace(self) -> None:
        assert_same_keyspace(*self.procs)

    def close(self) -> None:
        for w in (self.v, self.t):
            w.call("CONFIG", "SET", "maxmemory", "0", "min-replicas-to-write", "0", "min-replicas-max-lag", "10")
            w.close()


@pytest.fixture
def sx(spare: tuple[Proc, Proc]) -> Iterator[Spare]:
    s = Spare(*spare)
    yield s
    s.close()


LIB = ("#!lua name=lib\n"
       "server.register_function('w', function(k) return server.call('set', k[1], 'f') end)\n"
       "server.register_function{function_name='r', callback=function(k) return server.call('get', k[1]) end,"
       " flags={'no-writes'}}\n"
       "server.register_function{function_name='o', callback=function(k) return server.call('set', k[1], 'o') end,"
       " flags={'allow-oom'}}")


def test_maxmemory_and_scripts(sx: Spare) -> None:
    """Over maxmemory: a flagged script that may write is refused before it
    runs (no-writes and allow-oom ones run); in a script without flags the
    first deny-oom command is refused (raised by server.call, returned by
    server.pcall), a later one is not."""
    sx.check("SET", "x", "before")
    sx.check("FUNCTION", "LOAD", LIB)
    sx.check("CONFIG", "RESETSTAT")
    sx.check("CONFIG", "SET", "maxmemory", "1")
    for _ in range(3):
        sx.check("EVAL", "#!lua\nreturn 1", 0)
    sx.check("EVAL", "#!lua flags=no-writes\nreturn redis.call('get', KEYS[1])", 1, "x")
    sx.check("EVAL", "#!lua flags=allow-oom\nreturn redis.call('set', KEYS[1], 'oom')", 1, "y")
    sx.check("EVAL", "return redis.call('set', 'x', 'y')", 1, "x")
    sx.check("EVAL", "return redis.call('get', 'x')", 1, "x")
    sx.check("EVAL", "local t = redis.pcall('set', 'x', 'y') return t['err']", 1, "x")
    sx.check("EVAL", "return redis.pcall('set', 'x', 'y')", 1, "x")
    sx.check("EVAL", "redis.call('del', 'x') return redis.call('set', 'x', 'z')", 1, "x")
    sha = sx.check("SCRIPT", "LOAD", "#!lua\nreturn redis.call('set', KEYS[1], 'sha')").split(b"\r\n")[1]
    sx.check("EVALSHA", sha, 1, "x")
    sx.check("EVALSHA_RO", sha, 1, "x")
    sx.check("EVAL_RO", "#!lua\nreturn 1", 0)
    sx.check("FCALL", "w", 1, "x")
    sx.check("FCALL", "r", 1, "x")
    sx.check("FCALL", "o", 1, "x")
    sx.check("FCALL_RO", "w", 1, "x")
    for cmd in [("MULTI",), ("EVAL", "#!lua\nreturn 1", 0), ("EXEC",),
                ("MULTI",), ("EVAL", "#!lua flags=no-writes\nreturn 1", 0), ("GET", "x"), ("EXEC",)]:
        sx.check(*cmd)
    sx.stats()
    sx.keyspace()
    sx.check("CONFIG", "SET", "maxmemory", "0")
    sx.check("EVAL", "#!lua\nreturn 1", 0)


def test_min_replicas_and_scripts(sx: Spare) -> None:
    """min-replicas-to-write with no replicas: flagged scripts that may
    write are refused with NOREPLICAS before they run, the first write of
    a script without flags is refused; reads run."""
    sx.check("SET", "x", "some value")
    sx.check("FUNCTION", "LOAD", LIB)
    sx.check("CONFIG", "RESETSTAT")
    sx.check("CONFIG", "SET", "min-replicas-to-write", "1")
    sx.check("EVAL", "#!lua flags=no-writes\nreturn redis.call('get', KEYS[1])", 1, "x")
    sx.check("EVAL", "return redis.call('get', KEYS[1])", 1, "x")
    sx.check("EVAL", "#!lua\nreturn redis.call('get', KEYS[1])", 1, "x")
    sx.check("EVAL", "#!lua flags=allow-oom\nreturn redis.call('get', KEYS[1])", 1, "x")
    sx.check("EVAL", "return redis.call('set', KEYS[1], 1)", 1, "x")
    sx.check("EVAL", "return redis.pcall('set', KEYS[1], 1)", 1, "x")
    sx.check("EVAL", "return {redis.pcall('set', KEYS[1], 1), redis.call('get', KEYS[1])}", 1, "x")
    sx.check("EVAL_RO", "#!lua\nreturn redis.call('get', KEYS[1])", 1, "x")
    sx.check("EVAL_RO", "return redis.call('get', KEYS[1])", 1, "x")
    sx.check("FCALL", "w", 1, "x")
    sx.check("FCALL", "r", 1, "x")
    sx.check("FCALL_RO", "r", 1, "x")
    sx.check("FCALL_RO", "w", 1, "x")
    sx.stats()
    sx.keyspace()
    # Either setting at 0 turns the check off.
    sx.check("CONFIG", "SET", "min-replicas-max-lag", "0")
    sx.check("EVAL", "#!lua\nreturn redis.call('set', KEYS[1], 'lag0')", 1, "x")
    sx.check("CONFIG", "SET", "min-replicas-max-lag", "10", "min-replicas-to-write", "0")
    sx.check("EVAL", "return redis.call('set', KEYS[1], 'off')", 1, "x")
    sx.keyspace()


@pytest.mark.slow
@pytest.mark.parametrize("extra", [("--extended-redis-compatibility", "yes"), ("--min-replicas-to-write", "1")])
def test_busy_texts(extra: tuple[str, str]) -> None:
    """While a script is busy: under extended-redis-compatibility the BUSY
    replies name Redis; with min-replicas-to-write a write is refused with
    NOREPLICAS rather than BUSY."""
    procs = (start_valkey("--busy-reply-threshold", "50", *extra),
             start_trafikey("--busy-reply-threshold", "50", *extra))
    try:
        outs = []
        for proc in procs:
            out = []
            other = Wire(proc.port)
            out.append(other.call("FUNCTION", "LOAD",
                                  "#!lua name=busy\nredis.register_function{function_name='spin', "
                                  "callback=function() while true do end end, flags={'no-writes'}}"))
            for start in [("EVAL", "while true do end", 0), ("FCALL", "spin", 0)]:
                caller = Wire(proc.port)
                caller.send_raw(encode(*start))
                for _ in range(100):  # until the script is past the threshold
                    reply = other.call("PING")
                    if reply != b"+PONG\r\n":
                        break
                    time.sleep(0.02)
                out.append(reply)
                for cmd in [("GET", "x"), ("SET", "x", "1"), ("MULTI",), ("SET", "x", "2"), ("EXEC",),
                            ("SCRIPT", "KILL"), ("FUNCTION", "KILL"), ("FUNCTION", "STATS"), ("MULTI",), ("EXEC",)]:
                    r = other.call(*cmd)
                    out.append(r.split(b"duration_ms")[0])
                    if r == b"+OK\r\n" and "KILL" in cmd:
                        break
                out.append(caller.read_reply())
                caller.close()
            other.close()
            outs.append(out)
        assert outs[1] == outs[0]
        assert any((b"BUSY Redis is busy" if "--extended-redis-compatibility" in extra else b"NOREPLICAS") in r
                   for r in outs[0])
        stats = [Wire(p.port).call("INFO", "commandstats") for p in procs]
        rejected = [sorted(re.findall(rb"cmdstat_(set|exec):calls=\d+.*rejected_calls=(\d+)", x)) for x in stats]
        assert rejected[1] == rejected[0]
    finally:
        for p in procs:
            p.stop()


_WAIT_FOR_NAME = """
local clients
redis.call('lpush', KEYS[1], 'y')
while true do
    clients = redis.call('client', 'list')
    if string.find(clients, 'abortscript') ~= nil then break end
end
redis.call('lpush', KEYS[1], 'z')
return 'seen'
"""


def _busy(w: Wire) -> bytes:
    for _ in range(200):  # until the script is past the threshold
        reply = w.call("PING")
        if reply != b"+PONG\r\n":
            return reply
        time.sleep(0.02)
    return reply


def test_busy_script_that_wrote_with_the_log_on() -> None:
    """With appendonly on, a script that wrote and then runs past the
    threshold: others are answered BUSY at once (their replies wait for no
    write); HELLO may rename a client, which the script (calling CLIENT LIST,
    let by SET-DISABLE-DENY-SCRIPTS) sees and ends; the client blocked on
    its key is served after it; SCRIPT KILL cannot stop a script that
    wrote; SHUTDOWN NOSAVE ends the server anyway."""
    args = ("--appendonly", "yes", "--enable-debug-command", "yes", "--busy-reply-threshold", "10")
    procs = (start_valkey(*args), start_trafikey(*args))
    try:
        outs = []
        for proc in procs:
            out = []
            admin, caller, blocked, namer = (Wire(proc.port) for _ in range(4))
            blocked.send_raw(encode("BLPOP", "x", "0"))
            wait_blocked(admin)  # blocked before the script starts, not read by the busy loop
            out.append(admin.call("DEBUG", "SET-DISABLE-DENY-SCRIPTS", "1"))
            caller.send_raw(encode("EVAL", _WAIT_FOR_NAME, "1", "x"))
            out.append(_busy(admin))
            out.append(namer.call("HELLO", "2", "SETNAME", "abortscript").split(b"\r\n")[:2])
            out.append(blocked.read_reply())
            out.append(caller.read_reply())
            caller.send_raw(encode("EVAL", "redis.call('set', KEYS[1], 'y') while true do end", "1", "k"))
            out.append(_busy(admin))
            out.append(admin.call("SCRIPT", "KILL"))
            out.append(admin.call("PING"))
            admin.send_raw(encode("SHUTDOWN", "NOSAVE"))
            out.append(proc.proc.wait(timeout=20) is not None)
            outs.append(out)
        assert outs[1] == outs[0]
        assert outs[0][3] == b"*2\r\n$1\r\nx\r\n$1\r\nz\r\n" and outs[0][6].startswith(b"-UNKILLABLE")
    finally:
        for p in procs:
            p.stop()

"""The Lua debugger (SCRIPT DEBUG YES|SYNC), session for session against
valkey-server 9.1.2: the same requests on the debugging client's socket get
the same bytes back, in both modes."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator

import pytest
from helpers.resp_wire import Wire, encode
from helpers.servers import Proc, own_pair

# Nothing here prints a table mixing keys (the order of its keys is the Lua
# state's own); a function's address is masked.
SCRIPT = """local s = 'text with "quotes"'
local n, f, b, z = 3.5, 1e20, true, nil
local list = {1, 'two', {3}}
local function double(x)
  local inner = x * 2
  return inner
end
local r = double(21)
redis.call('set', KEYS[1], ARGV[1])
redis.debug(s, n, list)
redis.breakpoint()
return {r, redis.call('get', KEYS[1])}
"""

STEPS: list[tuple[str, ...]] = [
    ("h",), ("HELP",), ("help", "x"), ("m",), ("max",), ("max", "5"), ("max", "-1"), ("max", "abc"), ("max", "0"),
    ("max", "1", "2"), ("maxlen", "256"),
    ("s",), ("n",), ("next",), ("s",), ("p",), ("p", "list"), ("p", "nothere"), ("p", "KEYS"), ("p", "ARGV"),
    ("print", "s", "n"), ("s",), ("s",), ("t",), ("p",), ("s",), ("s",),
    ("l",), ("l", "0"), ("l", "2", "1"), ("l", "100"), ("list", "1", "2", "3"), ("w",), ("whole", "x"),
    ("b",), ("b", "12"), ("b",), ("b", "x"), ("b", "05"), ("b", "100"), ("b", "-3"), ("b", "12", "13"),
    ("e", "{1, 2, {3}}"), ("e", "'str'"), ("e", "nil"), ("e", "1", "+", "2"), ("e", "error('boom')"),
    ("e", "error({err = 'x'})"), ("e", "x = "), ("eval",),
    ("r", "set"), ("r", "ping", "a", "b"), ("r", "eval", "return 1", "0"), ("r", "client", "list"),
    ("r", "nosuchcommand", "x"), ("v", "hset", "dbg:h", "f", "v"), ("valkey", "get", "dbg:h"),
    ("server", "ping"), ("redis", "ping"), ("v",), ("max", "60"), ("r", "set", "dbg:big", "x" * 100),
    ("r", "get", "dbg:big"), ("r", "mget", "dbg:big", "nokey"), ("e", "server.setresp(3)"),
    ("r", "hgetall", "dbg:h"), ("r", "smembers", "nokey"), ("r", "incrbyfloat", "dbg:f", "1.5"),
    ("s", "extra"), ("c", "extra"), ("ste",), ("STEP",), ("c",), ("t",), ("b", "-12"),
]


@pytest.fixture(scope="module")
def pair() -> Iterator[tuple[Proc, Proc]]:
    with own_pair() as (v, t):
        yield v, t


def transcript(port: int, mode: str, steps: list[tuple[str, ...]], script: str = SCRIPT,
               keys: tuple[str, ...] = ("dbg:k",), args: tuple[str, ...] = ("v\nlast",)) -> list[bytes]:
    """Each reply of a session, then all that came until the close, with
    the address of any function printed masked."""
    w = Wire(port)
    out = [w.call("SCRIPT", "DEBUG", mode), w.call("EVAL", script, len(keys), *keys, *args)]
    for step in steps:
        out.append(w.call(*step))
    w.send_raw(encode("c"))
    out.append(w.read_until_closed())
    w.close()
    return [re.sub(rb'"function@0x[0-9a-f]+"', b'"function@ADDR"', r) for r in out]


@pytest.mark.parametrize("mode", ["SYNC", "YES"])
def test_session(pair: tuple[Proc, Proc], mode: str) -> None:
    v, t = pair
    for p in (v, t):
        Wire(p.port).call("FLUSHALL")
    expected = transcript(v.port, mode, STEPS)
    got = transcript(t.port, mode, STEPS)
    for step, want, have in zip([("SCRIPT",), ("EVAL",), *STEPS, ("c",)], expected, got, strict=True):
        assert have == want, step
    assert expected[-1].startswith(b"*1\r\n+<endsession>\r\n*2\r\n:42\r\n")
    # SYNC keeps the script's writes; a forked session changed its own copy.
    for p in (v, t):
        w = Wire(p.port)
        assert w.call("EXISTS", "dbg:k", "dbg:h") == (b":2\r\n" if mode == "SYNC" else b":0\r\n")
        w.close()


@pytest.mark.parametrize("mode", ["SYNC", "YES"])
def test_requests_and_endings(pair: tuple[Proc, Proc], mode: str) -> None:
    v, t = pair
    raw = [
        # Valkey's unit: names with a NUL in them are unknown
        encode("hello\0world"), encode("hello\0"), encode("\0hello"), encode("\0hello\0"),
        encode("step\0junk"),  # a NUL ends the name: "step"
        # 100 arguments to a command (Valkey's "lua stack overflow" test)
        b"*101\r\n$5\r\nredis\r\n" + b"$4\r\ntest\r\n" * 100,
        b"*2\r\n$6\r\nserver\r\n$4\r\nping\r\n",
    ]

    def run(port: int) -> list[bytes]:
        w = Wire(port)
        out = [w.call("SCRIPT", "DEBUG", mode), w.call("EVAL", "local a = 1\nreturn a", 0)]
        for data in raw:
            w.send_raw(data)
            out.append(w.read_reply())
        # Not RESP: the script ends with a protocol error and the client is closed.
        w.send_raw(b"garbage\r\n")
        out.append(w.read_until_closed())
        w.close()
        w = Wire(port)
        out.append(w.call("PING"))
        w.close()
        return out

    assert run(t.port) == run(v.port)


@pytest.mark.parametrize("mode", ["SYNC", "YES"])
def test_abort_and_refusals(pair: tuple[Proc, Proc], mode: str) -> None:
    v, t = pair

    def run(port: int) -> list[bytes]:
        out = []
        w = Wire(port)
        out += [w.call("SCRIPT", "DEBUG", mode), w.call("EVALSHA", "a" * 40, 0), w.call("EVALSHA", "a" * 39, 0)]
        out.append(w.call("EVAL", "return 1", "notanumber"))  # refused inside the session: it ends
        out.append(w.read_until_closed())
        w.close()
        w = Wire(port)
        out += [w.call("SCRIPT", "DEBUG", mode), w.call("EVAL", "redis.call('set', 'dbg:a', 1)\nreturn 1", 0)]
        w.send_raw(encode("s"))
        out.append(w.read_reply())
        w.send_raw(encode("a"))
        out.append(w.read_until_closed())
        w.close()
        w = Wire(port)
        out.append(w.call("EXISTS", "dbg:a"))
        out.append(w.call("DEL", "dbg:a"))
        out += [w.call("MULTI"), w.call("SCRIPT", "DEBUG", "YES"), w.call("EXEC")]
        out += [w.call("SCRIPT", "DEBUG", "MAYBE"), w.call("SCRIPT", "DEBUG", "YES", "nolua"),
                w.call("SCRIPT", "DEBUG", "YES", "lua", "x")]
        out += [w.call("SCRIPT", "DEBUG", mode), w.call("SCRIPT", "DEBUG", "NO"), w.call("EVAL", "return 2", 0)]
        w.close()
        return out

    assert run(t.port) == run(v.port)


def test_timeout_stops_a_runaway_script(pair: tuple[Proc, Proc]) -> None:
    """Past busy-reply-threshold without a stop, the debugger stops the
    script itself, with the reason Valkey's debugger gives (its
    luaLdbLineHook). This server only: valkey-server 9.1.2 never stops
    such a script in a session, and so never answers again."""
    _, t = pair
    w = Wire(t.port)
    assert w.call("CONFIG", "SET", "busy-reply-threshold", "100") == b"+OK\r\n"
    w.call("SCRIPT", "DEBUG", "SYNC")
    w.call("EVAL", "local i = 0\nwhile true do\n  i = i + 1\nend\n", 0)
    stopped = w.call("c").split(b"\r\n")
    assert stopped[1].startswith(b"+* Stopped at ")
    assert stopped[1].endswith(b"stop reason = timeout reached, infinite loop?")
    assert w.call("p").startswith(b"*1\r\n+<value> i = ")
    w.send_raw(encode("a"))
    assert w.read_until_closed().startswith(b"*1\r\n+<endsession>\r\n-ERR script aborted for user request script: ")
    w.close()
    w = Wire(t.port)
    assert w.call("CONFIG", "SET", "busy-reply-threshold", "5000") == b"+OK\r\n"
    w.close()


@pytest.mark.parametrize("mode", ["SYNC", "YES"])
def test_client_gone(pair: tuple[Proc, Proc], mode: str) -> None:
    """A debugging client that leaves lets the script run to its end
    without stopping; in SYNC mode its writes stay."""
    v, t = pair
    for p in (v, t):
        w = Wire(p.port)
        w.call("DEL", "dbg:gone")
        w.call("SCRIPT", "DEBUG", mode)
        w.call("EVAL", "local x = 1\nredis.call('set', 'dbg:gone', x)\nreturn x", 0)
        w.close()
    for p in (v, t):
        w = Wire(p.port)
        deadline = time.monotonic() + 5
        want = b":1\r\n" if mode == "SYNC" else b":0\r\n"
        while w.call("EXISTS", "dbg:gone") != want and time.monotonic() < deadline:
            time.sleep(0.05)
        assert w.call("EXISTS", "dbg:gone") == want
        w.close()


def test_forked_session_and_shutdown() -> None:
    """YES: the server serves others while the child debugs, counts the
    fork, and kills a session still running when it shuts down, as Valkey."""
    with own_pair() as (v, t):
        logs = []
        for p in (v, t):
            w = Wire(p.port)
            other = Wire(p.port)
            assert other.call("INFO", "stats").count(b"total_forks:0\r\n") == 1
            w.call("SCRIPT", "DEBUG", "YES")
            assert w.call("EVAL", "return 1", 0).startswith(b"*2\r\n+* Stopped at 1")
            assert other.call("PING") == b"+PONG\r\n"
            assert b"total_forks:1\r\n" in other.call("INFO", "stats")
            other.send_raw(encode("SHUTDOWN", "NOSAVE"))
            assert w.read_until_closed() == b""
            p.proc.wait(10)
            logs.append([re.split(r" [*#] ", line, maxsplit=1)[-1] for line in p.output().splitlines()
                         if "debugging" in line or "Killing" in line])
        # The same lines, but for the child's pid in the last.
        assert [entry.rsplit(" ", 1)[0] for entry in logs[1]] == [entry.rsplit(" ", 1)[0] for entry in logs[0]]
        assert any(entry.startswith("Killing debugging session ") for entry in logs[1])

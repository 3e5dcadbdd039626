"""Key expiry, lazy and active, on trafikey and on Valkey.

Lazy expiry: a key past its time behaves as absent for every command, at
once. Active expiry: a key nobody touches is still removed, which DBSIZE
shows (DBSIZE itself never expires anything, on either server). How soon
the active cycle gets to a key is not part of any contract, so tests poll
each server until a generous deadline and never assert a duration; past
the deadline the servers are simply considered to have failed to expire.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest
from helpers.resp_wire import Wire
from helpers.script import run

DEADLINE = 10.0  # seconds: liveness bound, not a timing claim


def assert_eventually(w: Wire, cmd: tuple[str, ...], want: bytes) -> None:
    """Poll until cmd answers want, or fail at the deadline."""
    end = time.monotonic() + DEADLINE
    while True:
        got = w.call(*cmd)
        if got == want:
            return
        if time.monotonic() > end:
            raise AssertionError(f"{cmd!r} still answers {got!r} after {DEADLINE}s (want {want!r})")
        time.sleep(0.02)


def _both(pair, fn: Callable[[Wire], None]) -> None:
    for w in (pair.v, pair.t):
        fn(w)


def test_active_expiry_px_50(pair) -> None:
    """A key with PX 50 disappears from DBSIZE without being touched, then
    from KEYS and EXISTS, on both servers."""
    def scenario(w: Wire) -> None:
        assert w.call("SET", "k", "v", "PX", "50") == b"+OK\r\n"
        assert w.call("SET", "stays", "v") == b"+OK\r\n"
        assert_eventually(w, ("DBSIZE",), b":1\r\n")
        assert w.call("KEYS", "*") == b"*1\r\n$5\r\nstays\r\n"
        assert w.call("EXISTS", "k") == b":0\r\n"

    _both(pair, scenario)


def test_active_expiry_many_keys(pair) -> None:
    """Thousands of keys due at once are all swept, across databases."""
    def scenario(w: Wire) -> None:
        w.pipeline([("SET", f"k{i}", "v", "PX", str(20 + i % 50)) for i in range(3000)])
        w.call("SELECT", "1")
        w.pipeline([("PSETEX", f"k{i}", "30", "v") for i in range(500)])
        w.pipeline([("SET", f"keep{i}", "v") for i in range(10)])
        assert_eventually(w, ("DBSIZE",), b":10\r\n")
        w.call("SELECT", "0")
        assert_eventually(w, ("DBSIZE",), b":0\r\n")

    _both(pair, scenario)


def test_every_way_of_setting_a_ttl_expires(pair) -> None:
    def scenario(w: Wire) -> None:
        now_ms = int(w.call("TIME").split(b"\r\n")[2]) * 1000 + 200
        w.call("SET", "a", "v", "PX", "50")
        w.call("SET", "b", "v", "PXAT", str(now_ms))
        w.call("PSETEX", "c", "50", "v")
        w.call("SET", "d", "v")
        w.call("PEXPIRE", "d", "50")
        w.call("SET", "e", "v")
        w.call("PEXPIREAT", "e", str(now_ms))
        w.call("SET", "f", "v")
        w.call("GETEX", "f", "PX", "50")
        w.call("SET", "g0", "v", "PX", "50")
        w.call("RENAME", "g0", "g")
        w.call("SET", "h0", "v", "PX", "50")
        w.call("COPY", "h0", "h")
        w.call("HSET", "i", "f", "v")
        w.call("PEXPIRE", "i", "50")
        w.call("ZADD", "j", "1", "m")
        w.call("PEXPIRE", "j", "50")
        w.call("SET", "n", "1", "PX", "50")
        w.call("INCR", "n")
        w.call("SET", "o", "x", "PX", "50")
        w.call("SET", "o", "y", "KEEPTTL")
        w.call("SET", "p", "x", "PX", "50")
        w.call("APPEND", "p", "y")
        assert_eventually(w, ("DBSIZE",), b":0\r\n")

    _both(pair, scenario)


def test_what_removes_a_ttl_survives(pair) -> None:
    """Keys whose TTL was removed or replaced outlive the original time
    (the sweep must skip their stale schedule)."""
    def scenario(w: Wire) -> None:
        w.call("SET", "a", "v", "PX", "50")
        w.call("PERSIST", "a")
        w.call("SET", "b", "v", "PX", "50")
        w.call("SET", "b", "w")
        w.call("SET", "c", "v", "PX", "50")
        w.call("PEXPIRE", "c", "100000")
        w.call("SET", "d", "v", "PX", "50")
        w.call("GETEX", "d", "PERSIST")
        w.call("SET", "e", "v", "PX", "50")
        w.call("GETSET", "e", "w")
        w.call("SET", "f", "v", "PX", "50")
        w.call("MSET", "f", "w")
        w.call("SET", "g", "v", "PX", "50")
        w.call("DEL", "g")
        w.call("SET", "g", "new")
        w.call("SET", "gone", "v", "PX", "50")
        assert_eventually(w, ("DBSIZE",), b":7\r\n")
        assert w.call("MGET", "a", "b", "c", "d", "e", "f", "g") == (
            b"*7\r\n$1\r\nv\r\n$1\r\nw\r\n$1\r\nv\r\n$1\r\nv\r\n$1\r\nw\r\n$1\r\nw\r\n$3\r\nnew\r\n")

    _both(pair, scenario)


def _expired_keys(w: Wire) -> None:
    """Keys of each type and a counter, all past their time."""
    w.call("FLUSHALL")
    w.call("SET", "s", "v", "PX", "1")
    w.call("SET", "n", "10", "PX", "1")
    w.call("HSET", "h", "f", "v")
    w.call("PEXPIRE", "h", "1")
    w.call("ZADD", "z", "1", "m")
    w.call("PEXPIRE", "z", "1")
    w.call("SET", "live", "v")


@pytest.mark.parametrize("script", [
    "GET s\nSTRLEN s\nTYPE s\nEXISTS s h z\nTTL s\nPTTL h\nEXPIRETIME z\nOBJECT ENCODING s",
    "GETDEL s\nGETEX s PERSIST\nMGET s n live\nGETRANGE s 0 -1",
    "APPEND s x\nGET s\nTTL s",
    "INCR n\nTTL n\nINCRBYFLOAT s 1.5",
    "SETRANGE s 2 x\nGET s",
    "SETNX s new\nGET s\nMSETNX n 1 z 2\nMGET n z",
    "SET s v XX\nSET h v NX\nTYPE h\nSET z v GET\nSET n v IFEQ 10",
    "EXPIRE s 100\nPERSIST n\nPEXPIREAT h 4000000000000",
    "RENAME s x\nRENAMENX h x\nCOPY z x\nMOVE n 1\nRENAME live s\nGET s",
    "HGET h f\nHLEN h\nZCARD z\nZSCORE z m",
    "DEL s h\nUNLINK z n\nTOUCH s live",
    "KEYS *\nDBSIZE",
    "GETSET s new\nTTL s",
])
def test_lazy_expiry(pair23, script: str) -> None:
    """An expired key acts as absent for every command, as soon as its time
    has passed (whether the active cycle got to it or not)."""
    _expired_keys(pair23.v)
    _expired_keys(pair23.t)
    time.sleep(0.02)
    if script.startswith("KEYS"):
        # KEYS hides expired keys, while DBSIZE counts those not yet swept.
        assert pair23.v.call("KEYS", "*") == pair23.t.call("KEYS", "*") == b"*1\r\n$4\r\nlive\r\n"
        return
    run(pair23, script)


def test_past_times_delete_at_once(pair23) -> None:
    """A time already past deletes the key right away: DBSIZE sees it."""
    run(pair23, """
        SET a v
        SET b v
        SET c v
        SET d v
        SET e v
        HSET h f v
        DBSIZE
        EXPIRE a -1
        PEXPIRE b 0
        EXPIREAT c 1
        GETEX d PXAT 1
        SET e w EXAT 1
        PEXPIREAT h 1
        DBSIZE
        SET f v PXAT 1
        DBSIZE
    """)


def test_ttl_counts_down(pair) -> None:
    """PTTL decreases as time passes."""
    for w in (pair.v, pair.t):
        w.call("SET", "k", "v", "PX", "100000")
        first = int(w.call("PTTL", "k")[1:])
        time.sleep(0.03)
        second = int(w.call("PTTL", "k")[1:])
        assert 0 <= second < first <= 100000

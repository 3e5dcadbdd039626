"""Field expiry follows the server's clock: moving trafikey-server's test
clock (TRAFIKEY.CLOCK) hides fields past their time at once and lets the
active sweep reap them, with no sleep; DEBUG SET-ACTIVE-EXPIRE 0 stops the
sweep and leaves them stored."""

from __future__ import annotations

import redis
from helpers.keyevents import Watched, readable
from helpers.servers import Proc


def _frozen(r: redis.Redis) -> int:
    now = int(r.execute_command("TRAFIKEY.CLOCK", "GET"))
    r.execute_command("TRAFIKEY.CLOCK", "FREEZE", now)
    return now


def test_moving_the_clock_expires_fields_lazily(emq: redis.Redis) -> None:
    emq.execute_command("DEBUG", "SET-ACTIVE-EXPIRE", "0")
    try:
        _frozen(emq)
        emq.hset("h", mapping={"a": "1", "b": "2"})
        assert emq.execute_command("HPEXPIRE", "h", 60_000, "FIELDS", 1, "a") == [1]
        assert emq.execute_command("HPTTL", "h", "FIELDS", 1, "a") == [60_000]
        emq.execute_command("TRAFIKEY.CLOCK", "ADVANCE", 60_000)
        assert emq.hget("h", "a") == b"1"  # alive through its last millisecond
        emq.execute_command("TRAFIKEY.CLOCK", "ADVANCE", 1)
        assert emq.hget("h", "a") is None
        assert emq.hgetall("h") == {b"b": b"2"}
        assert emq.hlen("h") == 2  # still stored: nothing reaps it
        assert emq.execute_command("HTTL", "h", "FIELDS", 1, "a") == [-2]
    finally:
        emq.execute_command("DEBUG", "SET-ACTIVE-EXPIRE", "1")


def test_moving_the_clock_lets_the_sweep_reap(emq: redis.Redis, emq_server: Proc) -> None:
    emq.config_set("notify-keyspace-events", "KEA")
    try:
        _frozen(emq)
        w = Watched(emq_server.port, pattern=b"__keyevent*__:*")
        try:
            w.call("HSET", "x", "a", "1", "b", "2")
            w.call("HPEXPIRE", "x", 3_600_000, "FIELDS", 2, "a", "b")
            w.call("RENAME", "x", "h")  # the schedule follows the value
            payload = emq.dump("h")
            w.call("RESTORE", "r", 0, payload)
            w.call("TRAFIKEY.CLOCK", "ADVANCE", 3_600_001)
            got = [w.wait_event() for _ in range(4)]
        finally:
            w.close()
        assert sorted(readable(got)) == sorted([(b"__keyevent@0__:hexpired", b"h"), (b"__keyevent@0__:del", b"h"),
                                                (b"__keyevent@0__:hexpired", b"r"), (b"__keyevent@0__:del", b"r")])
        assert not emq.exists("h", "r")
    finally:
        emq.config_set("notify-keyspace-events", "")

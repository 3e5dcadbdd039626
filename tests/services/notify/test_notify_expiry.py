"""``expired`` events from active expiry and from lookups, on Valkey's
clock and on trafikey-server's test clock (TRAFIKEY.CLOCK), and from
redis-cli's point of view."""

from __future__ import annotations

import shutil
import subprocess

import pytest
from helpers.keyevents import WAIT, Watched, assert_same_events, readable, run
from helpers.resp_wire import Wire
from helpers.servers import Proc


def _prepare(port: int, flags: str, active: bool) -> None:
    w = Wire(port)
    assert w.call("FLUSHALL") == b"+OK\r\n"
    assert w.call("DEBUG", "SET-ACTIVE-EXPIRE", "1" if active else "0") == b"+OK\r\n"
    assert w.call("CONFIG", "SET", "notify-keyspace-events", flags) == b"+OK\r\n"
    w.close()


def _expired(db: int, key: bytes) -> list[tuple[bytes, bytes]]:
    return [(b"__keyspace@%d__:%s" % (db, key), b"expired"), (b"__keyevent@%d__:expired" % db, key)]


@pytest.mark.parametrize("proto", [2, 3], ids=["resp2", "resp3"])
def test_active_expiry(nvalkey: Proc, ntrafikey: Proc, proto: int) -> None:
    """Nobody touches the key: the server's own sweep removes it and says so."""
    frames = []
    for p in (nvalkey, ntrafikey):
        _prepare(p.port, "KEA", True)
        w = Watched(p.port, proto)
        try:
            w.writer.call("SELECT", "3")
            _, events = w.call("SET", "soon", "v", "PX", "20")
            assert len(events) == 4  # set, expire on both channels
            frames.append([w.wait_event(), w.wait_event()])
        finally:
            w.close()
    assert readable(frames[0]) == _expired(3, b"soon")
    assert frames[1] == frames[0]


def test_test_clock_moves_expiry(nvalkey: Proc, ntrafikey: Proc) -> None:
    """Moving trafikey-server's test clock past a key's time expires it as
    the passing of real time does on Valkey: on the next lookup, with the
    sweep off, and from the sweep when it is on."""
    _prepare(nvalkey.port, "AKE", False)
    valkey = run(nvalkey.port, [("SET", "k", "v", "PX", "1"), WAIT, ("GET", "k"), ("GET", "k")], 2)
    _prepare(ntrafikey.port, "AKE", False)
    t = Wire(ntrafikey.port)
    try:
        assert t.call("TRAFIKEY.CLOCK", "FREEZE").startswith(b":")
        w = Watched(ntrafikey.port)
        steps = [w.call("SET", "k", "v", "PX", "1")]
        assert w.events() == []  # a frozen clock: the key stays
        assert t.call("GET", "k") == b"$1\r\nv\r\n"
        t.call("TRAFIKEY.CLOCK", "ADVANCE", "2")
        steps += [w.call("GET", "k"), w.call("GET", "k")]
        assert_same_events(valkey, [(s, *got) for s, got in zip(((),) * 3, steps, strict=True)])
        # With the sweep on, moving the clock is enough.
        assert t.call("DEBUG", "SET-ACTIVE-EXPIRE", "1") == b"+OK\r\n"
        w.call("SET", "k2", "v", "PX", "1000")
        t.call("TRAFIKEY.CLOCK", "ADVANCE", "1001")
        assert readable([w.wait_event(), w.wait_event()]) == _expired(0, b"k2")
        w.close()
    finally:
        t.call("TRAFIKEY.CLOCK", "RELEASE")
        t.close()


def _cli_lines(port: int, writes: list[tuple], count: int) -> list[str]:
    """What ``redis-cli --csv psubscribe '__keyspace@0__:*'`` prints while
    another client sends the writes: its confirmation, then ``count`` lines."""
    proc = subprocess.Popen(["redis-cli", "-p", str(port), "--csv", "psubscribe", "__keyspace@0__:*"],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline().strip()
        while not line.startswith('"psubscribe"'):  # "Reading messages..." first
            line = proc.stdout.readline().strip()
        lines = [line]
        w = Wire(port)
        for cmd in writes:
            w.call(*cmd)
        w.close()
        lines += [proc.stdout.readline().strip() for _ in range(count)]
        return lines
    finally:
        proc.terminate()
        proc.wait(10)


@pytest.mark.skipif(shutil.which("redis-cli") is None, reason="redis-cli is not installed")
def test_redis_cli_psubscribe(nvalkey: Proc, ntrafikey: Proc) -> None:
    writes = [("SET", "foo", "bar"), ("HSET", "h", "f", "v"), ("ZADD", "z", "1", "m"), ("DEL", "foo", "h"),
              ("EXPIRE", "z", "100"), ("RENAME", "z", "y")]
    out = []
    for p in (nvalkey, ntrafikey):
        _prepare(p.port, "KA", False)
        out.append(_cli_lines(p.port, writes, 8))
    assert out[0][0] == '"psubscribe","__keyspace@0__:*",1'
    assert out[0][1] == '"pmessage","__keyspace@0__:*","__keyspace@0__:foo","set"'
    assert out[1] == out[0]

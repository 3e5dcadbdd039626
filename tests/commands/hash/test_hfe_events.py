"""Hash-field expiry's keyspace events and its lazy and active expiry,
against Valkey 9.1.2: the same requests give the same replies and the same
event frames, in RESP2 and RESP3.

Lazy expiry runs with active expiry off on both servers (a field past its
time stays stored, hidden from reads, counted by HLEN, until a write
overwrites it); active expiry is then switched back on and the sweep's
``hexpired`` / ``del`` frames are awaited."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from helpers.keyevents import WAIT, Watched, assert_same_events, readable, run, streams_with_flags
from helpers.resp_wire import Wire
from helpers.servers import Proc, lazy_expiry_pair

FAR = "4102444800000"


@pytest.fixture(scope="module")
def lazy() -> Iterator[tuple[Proc, Proc]]:
    with lazy_expiry_pair() as pair:
        yield pair


def assert_events_alike(pair: tuple[Proc, Proc], steps: list[tuple], proto: int) -> None:
    out = []
    for p in pair:
        w = Wire(p.port)
        assert w.call("FLUSHALL") == b"+OK\r\n"
        assert w.call("DEBUG", "SET-ACTIVE-EXPIRE", "0") == b"+OK\r\n"
        assert w.call("CONFIG", "SET", "notify-keyspace-events", "KEA") == b"+OK\r\n"
        w.close()
        out.append(run(p.port, steps, proto))
    assert_same_events(*out)


@pytest.mark.parametrize("proto", [2, 3])
def test_events_of_each_command(lazy: tuple[Proc, Proc], proto: int) -> None:
    assert_events_alike(lazy, [
        ("HSET", "h", "a", "1", "b", "2", "c", "3"),
        ("HPEXPIREAT", "h", FAR, "FIELDS", "2", "a", "zz"),
        ("HPEXPIREAT", "h", FAR, "NX", "FIELDS", "1", "a"),
        ("HPERSIST", "h", "FIELDS", "2", "a", "b"),
        ("HPERSIST", "h", "FIELDS", "1", "a"),
        ("HSETEX", "h", "FIELDS", "1", "a", "1"),
        ("HSETEX", "h", "PX", "100000", "FIELDS", "1", "a", "1"),
        ("HSETEX", "h", "KEEPTTL", "FIELDS", "1", "a", "2"),
        ("HSETEX", "h", "FNX", "FIELDS", "1", "a", "2"),
        ("HGETEX", "h", "PX", "100000", "FIELDS", "2", "b", "zz"),
        ("HGETEX", "h", "PERSIST", "FIELDS", "1", "b"),
        ("HGETEX", "h", "FIELDS", "1", "b"),
        ("HGETEX", "nokey", "FIELDS", "1", "b"),
        ("HTTL", "nokey", "FIELDS", "1", "b"),
        ("HGETDEL", "h", "FIELDS", "2", "b", "zz"),
        ("HGETDEL", "nokey", "FIELDS", "1", "b"),
        ("HEXPIRE", "h", "0", "FIELDS", "1", "c"),
        ("HSETEX", "h", "PXAT", "1", "FIELDS", "1", "a", "1"),
        ("EXISTS", "h"),
        ("HSETEX", "g", "EXAT", "1", "FIELDS", "1", "a", "1"),
        ("HSET", "k", "a", "1"),
        ("HGETEX", "k", "EX", "0", "FIELDS", "1", "a"),
        ("HSET", "k", "a", "1", "b", "2"),
        ("HGETDEL", "k", "FIELDS", "2", "a", "b"),
    ], proto)


@pytest.mark.parametrize("proto", [2, 3])
def test_lazy_expiry_hides_fields_until_overwritten(lazy: tuple[Proc, Proc], proto: int) -> None:
    assert_events_alike(lazy, [
        ("HSET", "h", "a", "1", "b", "2", "c", "3", "n", "4", "x", "5"),
        ("HPEXPIRE", "h", "1", "FIELDS", "5", "a", "b", "c", "n", "x"),
        WAIT,
        ("HGET", "h", "a"),
        ("HMGET", "h", "a", "b"),
        ("HEXISTS", "h", "a"),
        ("HSTRLEN", "h", "a"),
        ("HLEN", "h"),
        ("HGETALL", "h"),
        ("HKEYS", "h"),
        ("HVALS", "h"),
        ("HSCAN", "h", "0"),
        ("HRANDFIELD", "h"),
        ("HRANDFIELD", "h", "3"),
        ("HRANDFIELD", "h", "-3", "WITHVALUES"),
        ("HTTL", "h", "FIELDS", "1", "a"),
        ("HPERSIST", "h", "FIELDS", "1", "a"),
        ("HEXPIRE", "h", "100", "FIELDS", "1", "a"),
        ("HGETDEL", "h", "FIELDS", "1", "a"),
        ("HGETEX", "h", "PERSIST", "FIELDS", "1", "a"),
        ("HDEL", "h", "a"),
        ("EXISTS", "h"),
        ("TYPE", "h"),
        ("HSET", "h", "a", "9"),
        ("HLEN", "h"),
        ("HSETNX", "h", "b", "9"),
        ("HINCRBY", "h", "n", "5"),
        ("HINCRBYFLOAT", "h", "x", "1.5"),
        ("HSETEX", "h", "KEEPTTL", "FIELDS", "1", "c", "7"),
        ("HTTL", "h", "FIELDS", "5", "a", "b", "c", "n", "x"),
        ("HGETALL", "h"),
        ("HLEN", "h"),
    ], proto)


def test_active_expiry_reaps_fields_then_the_key(lazy: tuple[Proc, Proc]) -> None:
    frames = []
    for p in lazy:
        w = Wire(p.port)
        assert w.call("FLUSHALL") == b"+OK\r\n"
        assert w.call("CONFIG", "SET", "notify-keyspace-events", "KEA") == b"+OK\r\n"
        assert w.call("DEBUG", "SET-ACTIVE-EXPIRE", "1") == b"+OK\r\n"
        watched = Watched(p.port)
        try:
            steps = [
                watched.call("HSET", "h", "a", "1", "b", "2"),
                watched.call("HPEXPIRE", "h", "20", "FIELDS", "1", "a"),
            ]
            got = [watched.wait_event()]  # hexpired: a reaped, b stays
            steps.append(watched.call("HGETALL", "h"))
            steps.append(watched.call("HLEN", "h"))
            steps.append(watched.call("HPEXPIRE", "h", "20", "FIELDS", "1", "b"))
            got += [watched.wait_event(), watched.wait_event()]  # hexpired, del
            steps.append(watched.call("EXISTS", "h"))
        finally:
            watched.close()
            assert w.call("DEBUG", "SET-ACTIVE-EXPIRE", "0") == b"+OK\r\n"
            w.close()
        frames.append((steps, readable(got)))
    assert frames[1] == frames[0]


def _stats(w: Wire) -> tuple[bytes, ...]:
    info = w.call("INFO", "ALL")
    return tuple(line for line in info.split(b"\r\n") if line.startswith((b"expired_fields:", b"db0:")))


def test_info_counts_expired_fields_and_volatile_keys(lazy: tuple[Proc, Proc]) -> None:
    steps = [
        ("HSET", "h", "a", "1", "b", "2", "c", "3"),
        ("HSET", "plain", "a", "1"),
        ("HPEXPIREAT", "h", FAR, "FIELDS", "1", "c"),
        ("HSETEX", "h", "PXAT", "1", "FIELDS", "2", "a", "zz", "1", "2"),
        ("HEXPIRE", "h", "0", "FIELDS", "2", "b", "zz"),
        ("HSET", "g", "a", "1", "b", "2", "c", "3"),
        ("HPEXPIRE", "g", "1", "FIELDS", "3", "a", "b", "c"),
        WAIT,
        ("HSET", "g", "a", "1"),
        ("HINCRBY", "g", "b", "1"),
        ("HSETEX", "g", "FIELDS", "1", "c", "1"),
        ("HGETEX", "g", "EX", "0", "FIELDS", "2", "a", "zz"),
    ]
    got = []
    for p in lazy:
        w = Wire(p.port)
        assert w.call("FLUSHALL") == b"+OK\r\n"
        assert w.call("DEBUG", "SET-ACTIVE-EXPIRE", "0") == b"+OK\r\n"
        assert w.call("CONFIG", "RESETSTAT") == b"+OK\r\n"
        replies = []
        for step in steps:
            if step == WAIT:
                time.sleep(0.005)
                continue
            replies.append(w.call(*step))
        got.append((replies, _stats(w)))
        w.close()
    assert got[1] == got[0]


@pytest.mark.parametrize("proto", [2, 3])
def test_other_commands_see_what_valkey_sees(lazy: tuple[Proc, Proc], proto: int) -> None:
    """SORT BY / GET through a hash field, scripts, MOVE and RENAME of a hash
    whose fields carry TTLs, some of them past."""
    assert_events_alike(lazy, [
        ("RPUSH", "l", "1", "2", "3"),
        ("HSET", "w_1", "f", "30"), ("HSET", "w_2", "f", "10"), ("HSET", "w_3", "f", "20"),
        ("HPEXPIRE", "w_2", "1", "FIELDS", "1", "f"),
        ("HPEXPIREAT", "w_3", FAR, "FIELDS", "1", "f"),
        WAIT,
        ("SORT", "l", "BY", "w_*->f", "GET", "#", "GET", "w_*->f"),
        ("EVAL", "return redis.call('HGETALL', KEYS[1])", "1", "w_2"),
        ("EVAL", "return redis.call('HSETEX', KEYS[1], 'PXAT', ARGV[1], 'FIELDS', 1, 'g', 'v')", "1", "w_1", FAR),
        ("EVAL", "return redis.call('HPEXPIRETIME', KEYS[1], 'FIELDS', 2, 'f', 'g')", "1", "w_1"),
        ("RENAME", "w_3", "r"),
        ("HPEXPIRETIME", "r", "FIELDS", "1", "f"),
        ("MOVE", "r", "1"),
        ("SELECT", "1"),
        ("HPEXPIRETIME", "r", "FIELDS", "1", "f"),
        ("OBJECT", "ENCODING", "r"),
        ("SELECT", "0"),
        ("HLEN", "w_2"),
        ("EXISTS", "w_2"),
    ], proto)


@pytest.mark.parametrize("proto", [2, 3])
def test_copy_leaves_out_fields_past_their_time(lazy: tuple[Proc, Proc], proto: int) -> None:
    """COPY duplicates only live fields; a hash all of whose fields are past
    their time copies as an empty hash that exists, as on Valkey."""
    assert_events_alike(lazy, [
        ("HSET", "h", "a", "1", "b", "2", "c", "3"),
        ("HPEXPIRE", "h", "1", "FIELDS", "1", "a"),
        ("HPEXPIREAT", "h", FAR, "FIELDS", "1", "b"),
        ("HSET", "g", "a", "1"),
        ("HPEXPIRE", "g", "1", "FIELDS", "1", "a"),
        WAIT,
        ("COPY", "h", "h2"),
        ("HLEN", "h"),
        ("HLEN", "h2"),
        ("HPEXPIRETIME", "h2", "FIELDS", "3", "a", "b", "c"),
        ("HGETALL", "h2"),
        ("COPY", "g", "g2"),
        ("EXISTS", "g2"),
        ("TYPE", "g2"),
        ("HLEN", "g2"),
        ("OBJECT", "ENCODING", "g2"),
        ("HSET", "g2", "z", "1"),
        ("HGETALL", "g2"),
    ], proto)


def test_keymiss_of_the_reads(lazy: tuple[Proc, Proc]) -> None:
    """Reads that look the key up for reading raise ``keymiss``; the
    writes, which look it up for writing, do not."""
    out = streams_with_flags(tuple(p.port for p in lazy), "Em", [
        ("HGETEX", "nk", "FIELDS", "1", "a"),
        ("HTTL", "nk", "FIELDS", "1", "a"),
        ("HPEXPIRETIME", "nk", "FIELDS", "1", "a"),
        ("HGETDEL", "nk", "FIELDS", "1", "a"),
        ("HPERSIST", "nk", "FIELDS", "1", "a"),
        ("HEXPIRE", "nk", "1", "FIELDS", "1", "a"),
        ("HSETEX", "nk", "XX", "FIELDS", "1", "a", "1"),
    ], 2)
    assert_same_events(*out)

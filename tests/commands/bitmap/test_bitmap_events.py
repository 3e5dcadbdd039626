"""Keyspace events and WATCH of the bitmap commands against Valkey, byte for
byte in RESP2 and RESP3.

SETBIT and BITFIELD raise ``setbit`` (string class) once per call that
changed the value, after ``new`` for a created key; a SETBIT of the bit
already there, a BITFIELD whose writes stored the old values or all
failed, raises nothing (though a BITFIELD that only failed still creates
its key: ``new`` alone). BITOP raises ``set``, or ``del`` (generic) when
an empty result deleted the destination. Reads of a missing key raise
``keymiss``: GETBIT, BITCOUNT, BITPOS, BITOP's sources, and BITFIELD /
BITFIELD_RO that only read (BITFIELD that writes looks its key up for
writing: no ``keymiss``). A refused request raises nothing. WATCH is
broken by exactly the calls that raise a write event.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from helpers.keyevents import assert_same_events, streams_with_flags
from helpers.resp_wire import Wire
from helpers.servers import Proc, lazy_expiry_pair, own_pair

SEQUENCE: list[tuple] = [
    ("SETBIT", "k", "7", "1"), ("SETBIT", "k", "7", "1"), ("SETBIT", "k", "7", "0"), ("SETBIT", "k", "30", "0"),
    ("GETBIT", "k", "1"), ("GETBIT", "nokey", "1"), ("BITCOUNT", "nokey"), ("BITCOUNT", "nokey", "0", "1"),
    ("BITPOS", "nokey", "1"), ("BITPOS", "k", "1"), ("BITCOUNT", "k"),
    ("BITFIELD", "f", "SET", "u8", "0", "1"), ("BITFIELD", "f", "SET", "u8", "0", "1", "SET", "u8", "0", "1"),
    ("BITFIELD", "f", "SET", "u8", "0", "2", "INCRBY", "u8", "0", "1", "GET", "u8", "0"),
    ("BITFIELD", "f", "GET", "u8", "0"), ("BITFIELD", "nokey", "GET", "u8", "0"), ("BITFIELD", "nokey"),
    ("BITFIELD_RO", "nokey", "GET", "u8", "0"), ("BITFIELD_RO", "f", "GET", "u8", "0"),
    ("BITFIELD", "fail", "OVERFLOW", "FAIL", "INCRBY", "u2", "0", "100"),
    ("BITFIELD", "fail", "OVERFLOW", "FAIL", "INCRBY", "u2", "0", "100"),
    ("BITFIELD", "grow", "OVERFLOW", "FAIL", "INCRBY", "u2", "0", "1", "INCRBY", "u2", "0", "100"),
    ("BITOP", "OR", "d", "k", "f"), ("BITOP", "AND", "d", "k", "nokey"), ("BITOP", "AND", "d", "nokey"),
    ("BITOP", "NOT", "d", "nokey"), ("BITOP", "NOT", "d", "k"), ("BITOP", "OR", "k", "k"),
    ("SET", "exp", "abc", "PX", "1"), ("WAIT",), ("SETBIT", "exp", "1", "0"),
    ("SET", "exp2", "abc", "PX", "1"), ("WAIT",), ("BITCOUNT", "exp2"),
    ("SET", "exp3", "abc", "PX", "1"), ("WAIT",), ("BITOP", "AND", "exp3", "nokey"),
    ("SET", "exp4", "abc", "PX", "1"), ("WAIT",), ("BITOP", "OR", "exp4", "k"),
    ("SET", "exp5", "abc", "PX", "1"), ("WAIT",), ("BITFIELD", "exp5", "SET", "u8", "0", "0"),
    ("SET", "exp6", "abc", "PX", "1"), ("WAIT",), ("BITFIELD_RO", "exp6", "GET", "u8", "0"),
    ("SET", "exp7", "abc", "PX", "1"), ("WAIT",), ("BITOP", "OR", "d", "exp7", "k"),
    # refusals
    ("RPUSH", "l", "a"), ("SETBIT", "l", "1", "1"), ("SETBIT", "k", "-1", "1"), ("GETBIT", "l", "0"),
    ("BITFIELD", "l", "SET", "u8", "0", "1"), ("BITFIELD", "k", "SET", "u64", "0", "1"),
    ("BITFIELD_RO", "k", "SET", "u8", "0", "1"), ("BITOP", "AND", "d", "nokey", "l"),
    ("BITOP", "NOT", "d", "k", "k"), ("BITCOUNT", "l"), ("BITPOS", "l", "1"),
]


@pytest.fixture(scope="module")
def servers() -> Iterator[tuple[Proc, Proc]]:
    """Active expiry off on both, so an expired key is still stored when a
    command reaches it, whatever the timing."""
    with lazy_expiry_pair() as pair:
        yield pair


@pytest.mark.parametrize("proto", [2, 3], ids=["resp2", "resp3"])
def test_bitmap_events_match_valkey(servers: tuple[Proc, Proc], proto: int) -> None:
    streams = streams_with_flags((servers[0].port, servers[1].port), "AKEmn", SEQUENCE, proto)
    assert_same_events(*streams)
    events = [e for _, _, es in streams[0] for e in es]
    assert any(b"setbit" in e for e in events)
    assert any(b"keymiss" in e for e in events)


@pytest.mark.parametrize("flags", ["E$", "Kg", "En", "Em"])
def test_bitmap_event_classes(servers: tuple[Proc, Proc], flags: str) -> None:
    streams = streams_with_flags((servers[0].port, servers[1].port), flags, SEQUENCE, 2)
    assert_same_events(*streams)


WATCHED: list[tuple] = [
    ("SETBIT", "w", "3", "1"), ("SETBIT", "w", "3", "0"), ("SETBIT", "w", "100", "0"),
    ("BITFIELD", "w", "SET", "u8", "0", "0"), ("BITFIELD", "w", "SET", "u8", "0", "7"),
    ("BITFIELD", "w", "OVERFLOW", "FAIL", "INCRBY", "u8", "0", "1000"), ("BITFIELD", "w", "GET", "u8", "0"),
    ("BITOP", "AND", "w", "nokey"), ("BITOP", "AND", "w", "nokey"), ("BITOP", "OR", "w", "src"),
    ("BITFIELD", "w", "SET", "u8", "2000", "0"), ("SETBIT", "w", "x", "1"), ("GETBIT", "w", "1"),
    ("DEL", "w"), ("BITFIELD", "w", "OVERFLOW", "FAIL", "INCRBY", "u2", "0", "100"), ("DEL", "w"),
    ("SETBIT", "w", "0", "0"), ("DEL", "w"), ("BITFIELD", "w", "SET", "u2", "0", "0"),
]


def test_watch_is_broken_by_changes_only(servers: tuple[Proc, Proc]) -> None:
    """After each write by another client, a transaction watching the key
    commits or aborts as on Valkey."""
    for p in servers:
        w = Wire(p.port)
        w.call("FLUSHALL")
        w.close()
    results = []
    for p in servers:
        writer, watcher = Wire(p.port), Wire(p.port)
        writer.call("SET", "w", "\x10\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00")
        writer.call("SET", "src", "ab")
        out = []
        for step in WATCHED:
            watcher.call("WATCH", "w")
            out.append(writer.call(*step))
            watcher.call("MULTI")
            watcher.call("PING")
            out.append(watcher.call("EXEC"))
        results.append(out)
        writer.close()
        watcher.close()
    assert results[1] == results[0]
    assert b"*-1\r\n" in results[0] and b"*1\r\n+PONG\r\n" in results[0]


def _pushes_until_pong(w: Wire) -> list[bytes]:
    """The frames a RESP3 client receives before the answer to a PING."""
    w.send_raw(b"*2\r\n$4\r\nPING\r\n$4\r\nsync\r\n")
    got = []
    while (frame := w.read_reply()) != b"$4\r\nsync\r\n":
        got.append(frame)
    return got


def test_tracking_hears_of_changes_only(servers: tuple[Proc, Proc]) -> None:
    """A client tracking the key (RESP3) is sent an invalidation after each
    call that changed it, as on Valkey."""
    results = []
    for p in servers:
        writer, reader = Wire(p.port), Wire(p.port)
        writer.call("FLUSHALL")
        writer.call("SET", "w", "\x10\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00")
        writer.call("SET", "src", "ab")
        assert reader.call("HELLO", "3").startswith(b"%")
        assert reader.call("CLIENT", "TRACKING", "on") == b"+OK\r\n"
        out = []
        for step in WATCHED:
            reader.call("GET", "w")
            out.append(writer.call(*step))
            out.append(b"".join(_pushes_until_pong(reader)))
        results.append(out)
        writer.close()
        reader.close()
    assert results[1] == results[0]
    assert b"" in results[0] and any(r.startswith(b">2\r\n$10\r\ninvalidate") for r in results[0])


def test_offsets_obey_proto_max_bulk_len() -> None:
    """A bit offset must address a byte below proto-max-bulk-len; a field
    starting below it may end past it, as in Valkey."""
    steps: list[tuple] = [
        ("CONFIG", "SET", "proto-max-bulk-len", "1048576"), ("SETBIT", "big", "8388608", "1"),
        ("SETBIT", "big", "8388607", "1"), ("BITFIELD", "big", "SET", "u63", "8388607", "1"), ("STRLEN", "big"),
        ("BITFIELD", "big", "GET", "u8", "#1048576"), ("BITFIELD", "big", "GET", "u8", "#1048575"),
        ("GETBIT", "big", "8388608"), ("BITFIELD", "big", "GET", "i64", "#131072"),
        ("BITFIELD", "big", "GET", "i64", "#131071"), ("BITCOUNT", "big"), ("BITPOS", "big", "1"),
        ("CONFIG", "SET", "proto-max-bulk-len", "2097152"), ("GETBIT", "big", "8388608"),
    ]
    with own_pair() as (v, t):
        wv, wt = Wire(v.port), Wire(t.port)
        for step in steps:
            assert wt.call(*step) == wv.call(*step), step
        wv.close()
        wt.close()

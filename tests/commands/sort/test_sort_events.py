"""Keyspace events of SORT against Valkey, byte for byte in RESP2 and RESP3:
STORE raises ``sortstore`` (list class), after ``new`` for a new key; an
empty result deletes the destination with ``del`` (generic class), or
raises nothing when there was none. Every lookup is a read: the sorted key
and each BY/GET key that is missing raise ``keymiss``, an expired one
``expired`` first. An expired destination that an empty result deletes is
deleted (``del``), not expired, as Valkey's dbDelete does. A refused
request raises nothing.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from helpers.key_snapshot import snapshot
from helpers.keyevents import assert_same_events, streams_with_flags
from helpers.servers import Proc, lazy_expiry_pair

SEQUENCE: list[tuple] = [
    ("RPUSH", "l", "c", "a", "b"), ("MSET", "w_a", "2", "w_b", "1"), ("HSET", "h_c", "f", "9"),
    ("SORT", "l"), ("SORT", "l", "ALPHA"), ("SORT", "nokey"), ("SORT_RO", "nokey", "BY", "nosort"),
    ("SORT", "l", "BY", "w_*"), ("SORT", "l", "BY", "h_*->f", "GET", "#", "GET", "w_*", "GET", "h_*->f"),
    ("SORT", "l", "BY", "nosort", "GET", "nokey"),
    ("SORT", "l", "ALPHA", "STORE", "dst"), ("SORT", "l", "ALPHA", "DESC", "STORE", "dst"),
    ("SORT", "l", "ALPHA", "LIMIT", "5", "1", "STORE", "dst"), ("EXISTS", "dst"),
    ("SORT", "l", "ALPHA", "LIMIT", "0", "0", "STORE", "dst"),
    ("SORT", "nokey", "STORE", "dst"), ("SET", "dst", "x"), ("SORT", "nokey", "STORE", "dst"),
    ("SET", "s", "str"), ("SORT", "l", "BY", "w_*", "GET", "w_*", "STORE", "s"), ("TYPE", "s"),
    ("SORT", "l", "BY", "w_*", "ALPHA", "GET", "#", "GET", "missing_*", "STORE", "s"),
    ("SORT", "l", "STORE", "s"), ("SORT", "s", "STORE", "dst"), ("SET", "str", "v"), ("SORT", "str"),
    ("SORT", "str", "STORE", "dst"), ("SORT", "l", "LIMIT", "x", "1", "STORE", "dst"),
    ("SORT_RO", "l", "STORE", "dst"),
    ("SADD", "set", "z", "y", "x"), ("SORT", "set", "BY", "nosort", "STORE", "sdst"),
    ("ZADD", "z", "1", "b", "2", "a"), ("SORT", "z", "BY", "nosort", "DESC", "STORE", "z"), ("TYPE", "z"),
    ("SET", "w_c", "bad"), ("SORT", "l", "BY", "w_*", "STORE", "dst"), ("EXISTS", "dst"),
    ("RPUSH", "e", "q"), ("SET", "exp_q", "5", "PX", "1"), ("WAIT",), ("SORT", "e", "BY", "exp_*", "STORE", "dst"),
    ("SET", "exp_q", "5", "PX", "1"), ("WAIT",), ("SORT", "e", "BY", "nosort", "GET", "exp_*"),
    ("SET", "dst", "v", "PX", "1"), ("WAIT",), ("SORT", "e", "STORE", "dst"), ("LRANGE", "dst", "0", "-1"),
    ("SET", "dst2", "v", "PX", "1"), ("WAIT",), ("SORT", "nokey", "STORE", "dst2"),
]


@pytest.fixture(scope="module")
def servers() -> Iterator[tuple[Proc, Proc]]:
    """Active expiry off on both, so an expired key is still stored when
    SORT reaches it, whatever the timing."""
    with lazy_expiry_pair() as pair:
        yield pair


@pytest.mark.parametrize("proto", [2, 3], ids=["resp2", "resp3"])
def test_sort_events_match_valkey(servers: tuple[Proc, Proc], proto: int) -> None:
    streams = streams_with_flags((servers[0].port, servers[1].port), "AKEmn", SEQUENCE, proto)
    assert_same_events(*streams)
    events = [e for _, _, es in streams[0] for e in es]
    assert any(b"sortstore" in e for e in events)
    assert any(b"keymiss" in e for e in events)
    assert snapshot(servers[0].port) == snapshot(servers[1].port)


@pytest.mark.parametrize("flags", ["El", "Kg", "Eg", "Em", "Ks"])
def test_sort_event_classes(servers: tuple[Proc, Proc], flags: str) -> None:
    """``sortstore`` is a list event, ``del`` a generic one, ``keymiss`` its own."""
    streams = streams_with_flags((servers[0].port, servers[1].port), flags, SEQUENCE, 2)
    assert_same_events(*streams)

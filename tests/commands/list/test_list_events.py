"""Keyspace events of the list commands against Valkey: the same events in
the same order for every request, refusals and no-ops included, in RESP2
and RESP3, and the same keyspace at the end."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from helpers.keyevents import assert_same_events, keyspace, streams_with_flags
from helpers.servers import Proc, own_pair

SEQUENCE = [
    ("RPUSH", "l", "a", "b", "c", "d", "e"), ("LPUSH", "l", "x"), ("LPUSHX", "l", "y"), ("RPUSHX", "l", "z"),
    ("LPUSHX", "nol", "a"), ("RPUSHX", "nol", "a"), ("LPUSH", "n", "1"),
    ("LLEN", "l"), ("LLEN", "nol"), ("LRANGE", "nol", "0", "-1"), ("LINDEX", "nol", "0"), ("LPOS", "nol", "a"),
    ("LRANGE", "l", "0", "-1"), ("LINDEX", "l", "1"), ("LPOS", "l", "a"),
    ("LPOP", "l"), ("RPOP", "l"), ("LPOP", "l", "0"), ("LPOP", "l", "2"), ("RPOP", "nol"), ("LPOP", "nol", "1"),
    ("LSET", "l", "0", "S"), ("LSET", "l", "50", "S"), ("LSET", "nol", "0", "S"),
    ("LINSERT", "l", "BEFORE", "S", "I"), ("LINSERT", "l", "AFTER", "nothere", "I"),
    ("LINSERT", "nol", "BEFORE", "a", "b"),
    ("RPUSH", "r", "a", "b", "a", "c", "a"), ("LREM", "r", "2", "a"), ("LREM", "r", "0", "zz"),
    ("LREM", "nol", "0", "a"),
    ("LTRIM", "r", "0", "0"), ("LTRIM", "r", "5", "1"), ("LTRIM", "nol", "0", "1"),
    ("RPUSH", "m", "1", "2", "3"), ("LMOVE", "m", "m2", "LEFT", "RIGHT"), ("RPOPLPUSH", "m", "m2"),
    ("LMOVE", "m", "m", "LEFT", "RIGHT"), ("LMOVE", "m", "m3", "LEFT", "LEFT"), ("LMOVE", "nol", "m3", "LEFT", "LEFT"),
    ("LMPOP", "2", "nol", "m2", "LEFT", "COUNT", "5"), ("LMPOP", "1", "nol", "RIGHT"),
    ("RPUSH", "b", "1", "2", "3"), ("BLPOP", "nol", "b", "0"), ("BRPOP", "b", "0"),
    ("BLMOVE", "b", "b2", "LEFT", "LEFT", "0"), ("RPUSH", "b", "4", "5"), ("BRPOPLPUSH", "b", "b2", "0"),
    ("BLMPOP", "0", "1", "b", "RIGHT", "COUNT", "3"),
    ("SET", "s", "v"), ("LPUSH", "s", "a"), ("LPOP", "s"), ("LRANGE", "s", "0", "1"),
    ("LMOVE", "b2", "s", "LEFT", "LEFT"),
    ("MULTI",), ("RPUSH", "t", "a"), ("LPOP", "t"), ("EXEC",),
    ("EVAL", "redis.call('rpush', KEYS[1], 'a', 'b'); return redis.call('lrem', KEYS[1], 0, 'a')", "1", "e"),
    ("DEL", "e"), ("RPUSH", "c", "v"), ("COPY", "c", "c2"), ("RENAME", "c2", "c3"),
]


@pytest.fixture(scope="module")
def servers() -> Iterator[tuple[Proc, Proc]]:
    with own_pair(("--enable-debug-command", "yes"), ("--enable-debug-command", "yes")) as pair:
        yield pair


@pytest.mark.parametrize("proto", [2, 3], ids=["resp2", "resp3"])
def test_list_events_match_valkey(servers: tuple[Proc, Proc], proto: int) -> None:
    streams = streams_with_flags((servers[0].port, servers[1].port), "AKEnm", SEQUENCE, proto)
    assert_same_events(*streams)
    assert sum(len(e) for _, _, e in streams[0]) > 100
    assert keyspace(servers[0].port) == keyspace(servers[1].port)


@pytest.mark.parametrize("flags", ["Kl", "El", "Eg", "KEA"])
def test_list_event_classes(servers: tuple[Proc, Proc], flags: str) -> None:
    streams = streams_with_flags((servers[0].port, servers[1].port), flags, SEQUENCE, 2)
    assert_same_events(*streams)

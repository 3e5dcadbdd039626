"""Keyspace events of the set commands, against Valkey: the same replies and
the same event frames, byte for byte, in RESP2 and RESP3, for every write
that changes something, every one that does not, and the reads (keymiss).

SPOP steps are chosen so that what is popped is not random (one member, or a
count that takes the whole set), since the reply is compared too.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from helpers.aof_util import keyspace
from helpers.keyevents import assert_same_events, streams_with_flags
from helpers.servers import Proc, own_pair

SEQUENCE: list[tuple] = [
    ("SADD", "s", "1", "2", "3"), ("SADD", "s", "1"), ("SADD", "s", "x"), ("SREM", "s", "nope"),
    ("SREM", "s", "1", "nope"), ("SREM", "nokey", "a"), ("SCARD", "nokey"), ("SISMEMBER", "nokey", "a"),
    ("SMISMEMBER", "nokey", "a"), ("SMEMBERS", "nokey"), ("SRANDMEMBER", "nokey"), ("SSCAN", "nokey", "0"),
    ("SCARD", "s"), ("SMEMBERS", "s"),
    ("SADD", "one", "z"), ("SPOP", "one"), ("SPOP", "nokey"), ("SPOP", "nokey", "2"),
    ("SADD", "all", "3", "1", "2"), ("SPOP", "all", "0"), ("SPOP", "all", "5"),
    ("SADD", "a", "1", "2"), ("SMOVE", "a", "b", "1"), ("SMOVE", "a", "b", "nope"), ("SMOVE", "a", "a", "2"),
    ("SADD", "b", "2"), ("SMOVE", "a", "b", "2"), ("SMOVE", "nokey", "b", "2"),
    ("SADD", "c", "5", "2", "9"), ("SINTER", "b", "c"), ("SINTER", "b", "nokey"), ("SUNION", "b", "c", "nokey"),
    ("SDIFF", "c", "b"), ("SINTERCARD", "2", "b", "c"),
    ("SINTERSTORE", "d", "b", "c"), ("SINTERSTORE", "d", "b", "nokey"), ("SINTERSTORE", "d", "b", "nokey"),
    ("SUNIONSTORE", "d", "b", "c"), ("SUNIONSTORE", "d", "nokey"), ("SDIFFSTORE", "d", "c", "b"),
    ("SDIFFSTORE", "d", "b", "c"), ("SDIFFSTORE", "d", "b", "c"), ("SET", "str", "v"), ("SADD", "str", "a"),
    ("SUNIONSTORE", "str", "c"), ("TYPE", "str"), ("SREM", "c", "5", "2", "9", "x"), ("EXISTS", "c"),
]


@pytest.fixture(scope="module")
def servers() -> Iterator[tuple[Proc, Proc]]:
    with own_pair(("--enable-debug-command", "yes"), ("--enable-debug-command", "yes")) as pair:
        yield pair


@pytest.mark.parametrize("proto", [2, 3], ids=["resp2", "resp3"])
def test_set_events_match_valkey(servers: tuple[Proc, Proc], proto: int) -> None:
    streams = streams_with_flags((servers[0].port, servers[1].port), "AKEm", SEQUENCE, proto)
    assert_same_events(*streams)
    assert sum(len(e) for _, _, e in streams[0]) > 60
    assert keyspace(servers[0].port) == keyspace(servers[1].port)


@pytest.mark.parametrize("flags", ["Ks", "Es", "Eg", "KEg$"])
def test_set_class_flag(servers: tuple[Proc, Proc], flags: str) -> None:
    """Set events belong to the ``s`` class; ``del`` to ``g``."""
    streams = streams_with_flags((servers[0].port, servers[1].port), flags, SEQUENCE[:25], 2)
    assert_same_events(*streams)

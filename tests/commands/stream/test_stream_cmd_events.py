"""Keyspace events of the stream commands against Valkey: the same events
in the same order for every request (refusals, no-ops and reads that miss
included), in RESP2 and RESP3, under several event classes."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from helpers.keyevents import assert_same_events, streams_with_flags
from helpers.servers import Proc, own_pair

SEQUENCE = [
    ("XADD", "s", "1-0", "a", "1"), ("XADD", "s", "2-0", "b", "2"), ("XADD", "s", "2-0", "b", "2"),
    ("XADD", "s", "MAXLEN", "1", "3-0", "c", "3"), ("XADD", "s", "MAXLEN", "5", "4-0", "c", "3"),
    ("XADD", "n", "NOMKSTREAM", "1-0", "a", "b"), ("XADD", "s", "MAXLEN", "~", "0", "5-0", "d", "4"),
    ("XLEN", "s"), ("XLEN", "n"), ("XRANGE", "n", "-", "+"), ("XREVRANGE", "n", "+", "-"), ("XRANGE", "s", "-", "+"),
    ("XREAD", "STREAMS", "n", "s", "0", "0"), ("XINFO", "STREAM", "n"),
    ("XDEL", "s", "4-0", "9-0"), ("XDEL", "s", "9-0"), ("XDEL", "n", "1-0"),
    ("XTRIM", "s", "MAXLEN", "0"), ("XTRIM", "s", "MAXLEN", "0"), ("XTRIM", "n", "MINID", "5"),
    ("XSETID", "s", "10-0"), ("XSETID", "s", "1-0"), ("XSETID", "n", "1-0"),
    ("XGROUP", "CREATE", "s", "g", "$"), ("XGROUP", "CREATE", "s", "g", "$"), ("XGROUP", "CREATE", "m", "g", "0"),
    ("XGROUP", "CREATE", "m", "g", "0", "MKSTREAM"), ("XGROUP", "SETID", "m", "g", "$"),
    ("XGROUP", "CREATECONSUMER", "m", "g", "c1"), ("XGROUP", "CREATECONSUMER", "m", "g", "c1"),
    ("XADD", "m", "1-0", "k", "v"), ("XADD", "m", "2-0", "k", "v"),
    ("XREADGROUP", "GROUP", "g", "c2", "STREAMS", "m", "0"), ("XREADGROUP", "GROUP", "g", "c2", "STREAMS", "m", ">"),
    ("XREADGROUP", "GROUP", "g", "c3", "NOACK", "STREAMS", "m", ">"),
    ("XREADGROUP", "GROUP", "g", "c1", "STREAMS", "n", ">"), ("XACK", "m", "g", "1-0"), ("XACK", "n", "g", "1-0"),
    ("XPENDING", "m", "g"), ("XPENDING", "n", "g"),
    ("XCLAIM", "m", "g", "c4", "0", "2-0"), ("XCLAIM", "m", "g", "c4", "0", "2-0"),
    ("XCLAIM", "n", "g", "c4", "0", "2-0"), ("XAUTOCLAIM", "m", "g", "c5", "0", "0"),
    ("XAUTOCLAIM", "n", "g", "c5", "0", "0"), ("XINFO", "GROUPS", "n"), ("XINFO", "CONSUMERS", "n", "g"),
    ("XGROUP", "DELCONSUMER", "m", "g", "c5"), ("XGROUP", "DELCONSUMER", "m", "g", "c5"),
    ("XGROUP", "DESTROY", "m", "g"), ("XGROUP", "DESTROY", "m", "g"),
    ("MULTI",), ("XADD", "t", "1-0", "a", "b"), ("XDEL", "t", "1-0"), ("EXEC",),
    ("EVAL", "return redis.call('xadd', KEYS[1], '1-0', 'a', 'b')", "1", "e"),
    ("SET", "str", "x"), ("XADD", "str", "1-0", "a", "b"), ("XLEN", "str"),
    ("DEL", "m"), ("XADD", "c", "1-0", "a", "b"), ("COPY", "c", "c2"), ("RENAME", "c2", "c3"),
]


@pytest.fixture(scope="module")
def servers() -> Iterator[tuple[Proc, Proc]]:
    with own_pair() as pair:
        yield pair


@pytest.mark.parametrize("proto", [2, 3], ids=["resp2", "resp3"])
def test_stream_events_match_valkey(servers: tuple[Proc, Proc], proto: int) -> None:
    streams = streams_with_flags((servers[0].port, servers[1].port), "AKEnm", SEQUENCE, proto)
    assert_same_events(*streams)
    assert sum(len(e) for _, _, e in streams[0]) > 80


@pytest.mark.parametrize("flags", ["Kt", "Et", "Eg", "KEA"])
def test_stream_event_classes(servers: tuple[Proc, Proc], flags: str) -> None:
    streams = streams_with_flags((servers[0].port, servers[1].port), flags, SEQUENCE, 2)
    assert_same_events(*streams)

"""Keyspace events of the stream commands against Valkey 9.1: the same
requests on both servers give the same replies and the same event frames
in the same order, under several notify-keyspace-events settings, in
RESP2 and RESP3; and with several clients at once (writers, a blocked
XREADGROUP served by another client's XADD, a subscriber), who receives
which frame after which request."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from helpers.keyevents import assert_same_events, streams_with_flags
from helpers.pubsub_streams import assert_same
from helpers.resp_wire import Wire
from helpers.servers import Proc

STEPS = [
    ("XADD", "s", "1-0", "f", "v"), ("XADD", "s", "2-0", "f", "v"), ("XADD", "s", "MAXLEN", "1", "3-0", "f", "v"),
    ("XADD", "s", "MAXLEN", "5", "4-0", "f", "v"), ("XADD", "s", "MAXLEN", "~", "0", "5-0", "f", "v"),
    ("XADD", "s", "MINID", "5", "6-0", "f", "v"), ("XADD", "nos", "NOMKSTREAM", "1-0", "f", "v"),
    ("XADD", "s", "1-0", "f", "v"), ("XADD", "s", "MAXLEN", "0", "7-0", "f", "v"),
    ("XADD", "s", "8-0", "f", "v"), ("XADD", "s", "9-0", "f", "v"), ("XADD", "s", "10-0", "f", "v"),
    ("XTRIM", "s", "MAXLEN", "2"), ("XTRIM", "s", "MAXLEN", "2"), ("XTRIM", "s", "MINID", "0"),
    ("XTRIM", "nos", "MAXLEN", "0"), ("XDEL", "s", "9-0"), ("XDEL", "s", "9-0"), ("XDEL", "s", "1-0", "10-0"),
    ("XDEL", "nos", "1-0"), ("XLEN", "s"), ("XRANGE", "s", "-", "+"),
    ("XSETID", "s", "20-0"), ("XSETID", "s", "1-0"), ("XSETID", "nos", "1-0"),
    ("XADD", "s", "21-0", "f", "v"), ("XADD", "s", "22-0", "f", "v"), ("XADD", "s", "23-0", "f", "v"),
    ("XGROUP", "CREATE", "s", "g", "0"), ("XGROUP", "CREATE", "s", "g", "0"), ("XGROUP", "CREATE", "s", "h", "$"),
    ("XGROUP", "CREATE", "m", "g", "$", "MKSTREAM"), ("XGROUP", "CREATE", "nos", "g", "$"),
    ("XGROUP", "SETID", "s", "h", "0"), ("XGROUP", "SETID", "s", "nog", "0"),
    ("XGROUP", "CREATECONSUMER", "s", "g", "alice"), ("XGROUP", "CREATECONSUMER", "s", "g", "alice"),
    ("XREADGROUP", "GROUP", "g", "alice", "COUNT", "1", "STREAMS", "s", ">"),
    ("XREADGROUP", "GROUP", "g", "bob", "COUNT", "1", "STREAMS", "s", ">"),
    ("XREADGROUP", "GROUP", "g", "bob", "STREAMS", "s", "0"),
    ("XREADGROUP", "GROUP", "g", "carol", "NOACK", "COUNT", "1", "STREAMS", "s", ">"),
    ("XREADGROUP", "GROUP", "g", "dave", "STREAMS", "s", ">"),
    ("XREADGROUP", "GROUP", "h", "erin", "STREAMS", "s", "m", ">", ">"),
    ("XREADGROUP", "GROUP", "nog", "x", "STREAMS", "s", ">"),
    ("XACK", "s", "g", "21-0"), ("XACK", "s", "g", "21-0"),
    ("XCLAIM", "s", "g", "frank", "0", "22-0"), ("XCLAIM", "s", "g", "frank", "0", "22-0", "JUSTID"),
    ("XCLAIM", "s", "g", "gina", "3600000", "22-0"), ("XCLAIM", "s", "g", "hank", "0", "99-0"),
    ("XCLAIM", "s", "g", "alice", "0", "1-0", "FORCE", "LASTID", "30-0"),
    ("XAUTOCLAIM", "s", "g", "ivan", "0", "0", "COUNT", "1"), ("XAUTOCLAIM", "s", "g", "ivan", "3600000", "0"),
    ("XAUTOCLAIM", "s", "g", "judy", "3600000", "0"),
    ("XDEL", "s", "23-0"), ("XAUTOCLAIM", "s", "g", "ivan", "0", "0"), ("XCLAIM", "s", "g", "ivan", "0", "23-0"),
    ("XPENDING", "s", "g"), ("XINFO", "GROUPS", "s"),
    ("XGROUP", "DELCONSUMER", "s", "g", "alice"), ("XGROUP", "DELCONSUMER", "s", "g", "alice"),
    ("XGROUP", "DESTROY", "s", "h"), ("XGROUP", "DESTROY", "s", "h"),
    ("SET", "str", "v"), ("XADD", "str", "1-0", "f", "v"), ("XGROUP", "CREATE", "str", "g", "0"),
    ("MULTI",), ("XADD", "t", "1-0", "a", "b"), ("XTRIM", "t", "MAXLEN", "0"), ("XADD", "t", "2-0", "a", "b"),
    ("XGROUP", "CREATE", "t", "g", "0"), ("XREADGROUP", "GROUP", "g", "c", "STREAMS", "t", ">"), ("EXEC",),
    ("EVAL", "redis.call('XADD', KEYS[1], '5-0', 'a', 'b'); redis.call('XDEL', KEYS[1], '5-0'); "
             "return redis.call('XGROUP', 'CREATECONSUMER', KEYS[1], 'g', 'z')", "1", "t"),
    ("EXPIRE", "t", "100"), ("RENAME", "t", "u"), ("COPY", "u", "v"), ("DEL", "u", "v"),
    ("XADD", "t", "MAXLEN", "0", "1-0", "a", "b"), ("EXISTS", "t"),
    ("SELECT", "1"), ("XADD", "s", "1-0", "f", "v"), ("XGROUP", "CREATE", "s", "g", "0"), ("SELECT", "0"),
]


@pytest.fixture
def servers(valkey_server: Proc, trafikey_server: Proc) -> Iterator[tuple[int, int]]:
    """The shared pair; notify-keyspace-events back off afterwards."""
    yield valkey_server.port, trafikey_server.port
    for port in (valkey_server.port, trafikey_server.port):
        w = Wire(port)
        w.call("CONFIG", "SET", "notify-keyspace-events", "")
        w.call("FLUSHALL")
        w.close()


@pytest.mark.parametrize("proto", [2, 3])
@pytest.mark.parametrize("flags", ["KEA", "Et", "Kt", "Eg", "E$", "Egt"])
def test_stream_command_events(servers: tuple[int, int], flags: str, proto: int) -> None:
    v, t = streams_with_flags(servers, flags, STEPS, proto)
    assert_same_events(v, t)


@pytest.mark.parametrize("proto", [2, 3])
def test_events_with_several_clients(servers: tuple[int, int], proto: int) -> None:
    """Client 0 subscribes; 1 and 2 write; 3 blocks in XREADGROUP and is
    served by 1's XADD (its consumer's creation event included); 4 blocks
    in XREAD. Each step's record says who received what."""
    for port in servers:
        w = Wire(port)
        assert w.call("FLUSHALL") == b"+OK\r\n"
        assert w.call("CONFIG", "SET", "notify-keyspace-events", "KEA") == b"+OK\r\n"
        w.close()
    assert_same(*servers, [proto] * 5, [
        (0, "PSUBSCRIBE", "__key*__:*"),
        (1, "XGROUP", "CREATE", "s", "g", "$", "MKSTREAM"),
        ("QUIET", {3, 4}),
        (3, "XREADGROUP", "GROUP", "g", "newbie", "BLOCK", "0", "STREAMS", "s", ">"),
        (4, "XREAD", "BLOCK", "0", "STREAMS", "s", "$"),
        (2, "XGROUP", "CREATECONSUMER", "s", "g", "other"),
        (1, "XADD", "s", "MAXLEN", "5", "1-0", "f", "v"),
        ("QUIET", set()),
        (3, "PING", "after"),
        (4, "PING", "after"),
        (2, "XREADGROUP", "GROUP", "g", "late", "STREAMS", "s", ">"),
        (1, "XCLAIM", "s", "g", "third", "0", "1-0"),
        (2, "XGROUP", "DELCONSUMER", "s", "g", "newbie"),
        (1, "XTRIM", "s", "MAXLEN", "0"),
        (2, "XGROUP", "DESTROY", "s", "g"),
        (1, "DEL", "s"),
        (0, "PUNSUBSCRIBE"),
    ])

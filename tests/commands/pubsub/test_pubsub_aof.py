"""With the append-only log on (appendfsync always), replies wait for the
log to be written: messages pushed to a subscriber must still arrive in
Valkey's order with that subscriber's own replies."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from helpers.pubsub_streams import assert_same
from helpers.resp_wire import encode
from helpers.servers import Proc, start_trafikey, start_valkey


@pytest.fixture(scope="module")
def aof_pair() -> Iterator[tuple[Proc, Proc]]:
    v = start_valkey("--appendonly", "yes", "--appendfsync", "always")
    t = start_trafikey("--appendonly", "yes", "--appendfsync", "always")
    yield v, t
    v.stop()
    t.stop()


@pytest.mark.parametrize("proto", [2, 3], ids=["resp2", "resp3"])
def test_messages_and_logged_writes(aof_pair: tuple[Proc, Proc], proto: int) -> None:
    v, t = aof_pair
    assert_same(v.port, t.port, [3, proto, 2], [
        (0, "SUBSCRIBE", "ao.a"),
        (1, "SUBSCRIBE", "ao.a"),
        (0, "RAW", encode("SET", "ao.k", "1") + encode("PUBLISH", "ao.a", "after a write") + encode("INCR", "ao.k")),
        (2, "RAW", encode("SET", "ao.k", "2") + encode("PUBLISH", "ao.a", "m1") + encode("PUBLISH", "ao.a", "m2")),
        (0, "RAW", encode("MULTI") + encode("INCR", "ao.k") + encode("PUBLISH", "ao.a", "tx") + encode("EXEC")),
        (2, "EVAL", "redis.call('set', 'ao.k', '3'); return redis.call('publish', 'ao.a', 'lua')", "0"),
        (0, "GET", "ao.k"),
        (2, "DEL", "ao.k"),
    ])

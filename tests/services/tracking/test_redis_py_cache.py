"""redis-py's RESP3 client-side cache (``cache_config=CacheConfig()``)
against the server, beside Valkey 9.1.2 doing the same.

redis-py enables its cache only for servers that call themselves "redis";
both Valkey and this server answer HELLO with "valkey", so the test lets
redis-py's connection accept that name. Everything else is redis-py as
shipped: it turns tracking on, caches replies, and drops an entry when the
invalidation push has arrived by its next command. A push sent to the
caching connection may arrive just after the writer's reply (Valkey writes
the two in either order), so after another connection's write the test
makes one round trip (PING) on the caching connection before reading.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import redis
from helpers.servers import Proc, own_pair
from redis.cache import CacheConfig
from redis.connection import CacheProxyConnection


@pytest.fixture(scope="module")
def servers() -> Iterator[tuple[Proc, Proc]]:
    with own_pair() as pair:
        yield pair


def _gets(r: redis.Redis) -> int:
    return int(r.info("commandstats").get("cmdstat_get", {}).get("calls", 0))


def _scenario(port: int) -> list[object]:
    cached = redis.Redis(port=port, protocol=3, cache_config=CacheConfig())
    other = redis.Redis(port=port)
    other.flushall()
    other.config_resetstat()
    seen: list[object] = []
    try:
        other.set("k", "v1")
        seen += [cached.get("k"), cached.get("k"), _gets(other)]  # the second read is served by the cache
        other.set("k", "v2")  # another client's write invalidates the cached read
        cached.ping()  # the push may still be on its way: a round trip reads it
        seen += [cached.get("k"), _gets(other)]
        seen += [cached.get("k"), _gets(other)]
        cached.set("k", "v3")  # its own write too
        seen += [cached.get("k"), _gets(other)]
        other.flushall()  # a flush drops everything
        cached.ping()
        seen += [cached.get("k"), _gets(other)]
        seen += [other.execute_command("CLIENT", "TRACKINGINFO")]  # the plain connection does not track
    finally:
        cached.close()
        other.close()
    return seen


def test_cached_read_invalidated_by_another_client(servers: tuple[Proc, Proc],
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(CacheProxyConnection, "DEFAULT_SERVER_NAME", "valkey")
    v, t = servers
    expected = _scenario(v.port)
    assert expected[:3] == [b"v1", b"v1", 1]  # the oracle shows the cache at work
    assert expected[3:5] == [b"v2", 2]
    assert _scenario(t.port) == expected

"""redis-py's PubSub (sync and asyncio, RESP2 and RESP3) against Valkey and
trafikey-server: the same script of calls must yield the same messages."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
import redis
import redis.asyncio as aredis
from helpers.servers import Proc


def _get_all(p: Any, n: int) -> list[Any]:
    out = []
    for _ in range(n):
        m = p.get_message(timeout=5.0)
        assert m is not None, f"expected {n} messages, got {out!r}"
        out.append(m)
    return out


def _sync_script(port: int, proto: int) -> list[Any]:
    pub = redis.Redis(port=port, protocol=proto)
    sub = redis.Redis(port=port, protocol=proto)
    p = sub.pubsub()
    seen: list[Any] = []
    try:
        p.subscribe("rp.a", "rp.b")
        p.psubscribe("rp.*")
        seen += _get_all(p, 3)
        seen.append(pub.publish("rp.a", "hello"))
        seen.append(pub.publish("rp.zz", b"\x00bin\xff"))
        seen += _get_all(p, 3)
        seen.append(pub.pubsub_numsub("rp.a", "rp.b", "rp.c"))
        seen.append(pub.pubsub_numpat())
        seen.append(sorted(pub.pubsub_channels("rp.*")))
        p.ping("hi")
        seen += _get_all(p, 1)
        p.unsubscribe("rp.a")
        p.punsubscribe()
        seen += _get_all(p, 2)
        seen.append(pub.publish("rp.b", "last"))
        seen += _get_all(p, 1)
        p.ssubscribe("rp.s")
        seen += _get_all(p, 1)
        seen.append(pub.spublish("rp.s", "shard"))
        seen += [p.get_sharded_message(timeout=5.0)]
        p.unsubscribe()
        p.sunsubscribe()
        seen += _get_all(p, 2)
        seen.append(p.get_message(timeout=0.05))
    finally:
        p.close()
        pub.close()
        sub.close()
    return seen


async def _async_script(port: int, proto: int) -> list[Any]:
    pub = aredis.Redis(port=port, protocol=proto)
    sub = aredis.Redis(port=port, protocol=proto)
    p = sub.pubsub()
    seen: list[Any] = []

    async def get(n: int) -> None:
        for _ in range(n):
            m = await p.get_message(timeout=5.0)
            assert m is not None
            seen.append(m)

    try:
        await p.subscribe("ra.a")
        await p.psubscribe("ra.?")
        await get(2)
        # Two publishers' messages interleaved with the subscriber's reads.
        for i in range(5):
            seen.append(await pub.publish("ra.a", f"m{i}"))
            await get(2)
        await p.unsubscribe()
        await p.punsubscribe()
        await get(2)
    finally:
        await p.aclose()
        await pub.aclose()
        await sub.aclose()
    return seen


@pytest.mark.parametrize("proto", [2, 3], ids=["resp2", "resp3"])
def test_redispy_sync_pubsub(valkey_server: Proc, trafikey_server: Proc, proto: int) -> None:
    assert _sync_script(trafikey_server.port, proto) == _sync_script(valkey_server.port, proto)


@pytest.mark.parametrize("proto", [2, 3], ids=["resp2", "resp3"])
def test_redispy_async_pubsub(valkey_server: Proc, trafikey_server: Proc, proto: int) -> None:
    v = asyncio.run(_async_script(valkey_server.port, proto))
    t = asyncio.run(_async_script(trafikey_server.port, proto))
    assert t == v


def test_redispy_run_in_thread(valkey_server: Proc, trafikey_server: Proc) -> None:
    """A PubSub worker thread with handlers, as applications run it."""
    results = []
    for port in (valkey_server.port, trafikey_server.port):
        r = redis.Redis(port=port)
        got: list[Any] = []
        p = r.pubsub()
        p.subscribe(**{"rt.a": got.append})
        thread = p.run_in_thread(sleep_time=0.01)
        try:
            for _ in range(200):
                if r.pubsub_numsub("rt.a") == [(b"rt.a", 1)]:
                    break
            for i in range(20):
                r.publish("rt.a", i)
            for _ in range(500):
                if len(got) == 20:
                    break
                thread.join(0.01)
        finally:
            thread.stop()
            thread.join(5)
            p.close()
            r.close()
        results.append(got)
    assert results[1] == results[0]
    assert len(results[0]) == 20

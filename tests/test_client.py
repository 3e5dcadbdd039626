"""CLIENT subcommands against Valkey."""

from __future__ import annotations


def test_names_and_info(pair23) -> None:  # type: ignore[no-untyped-def]
    p = pair23
    p.check_all(("CLIENT", "GETNAME"), ("CLIENT", "SETNAME", "a b"), ("CLIENT", "SETNAME", "worker-1"),
                ("CLIENT", "GETNAME"), ("CLIENT", "SETNAME", ""), ("CLIENT", "GETNAME"),
                ("CLIENT", "SETINFO", "lib-name", "a b"), ("CLIENT", "SETINFO", "lib-foo", "x"),
                ("CLIENT", "SETINFO", "LIB-VER", "1.2"), ("CLIENT", "SETINFO", "lib-name", "redis-py"),
                ("CLIENT", "NO-EVICT", "maybe"), ("CLIENT", "NO-EVICT", "on"), ("CLIENT", "NO-TOUCH", "OFF"),
                ("CLIENT", "SETNAME"), ("CLIENT", "NOSUCH"), ("CLIENT",))


def test_client_id_is_an_integer(pair) -> None:  # type: ignore[no-untyped-def]
    v, t = pair.both("CLIENT", "ID")
    assert v[:1] == t[:1] == b":"
    assert int(t[1:-2]) > 0


def test_redis_py_connects(trafikey_server, valkey_server) -> None:  # type: ignore[no-untyped-def]
    import redis

    for proto in (2, 3):
        results = []
        for port in (valkey_server.port, trafikey_server.port):
            r = redis.Redis(port=port, protocol=proto, client_name="probe")
            r.flushall()
            r.set("a", "1")
            r.hset("h", mapping={"f": "v", "g": "w"})
            r.zadd("z", {"m": 1.5, "n": 2})
            with r.pipeline(transaction=True) as pipe:
                pipe.incr("a").get("a").hgetall("h").zrange("z", 0, -1, withscores=True)
                results.append((r.client_getname(), pipe.execute()))
            r.close()
        assert results[0] == results[1]


def test_redis_py_asyncio(trafikey_server, valkey_server) -> None:  # type: ignore[no-untyped-def]
    import asyncio

    import redis.asyncio as aredis

    async def run(port: int, proto: int) -> list[object]:
        r = aredis.Redis(port=port, protocol=proto)
        await r.flushall()
        out = [await r.set("k", "v"), await r.get("k"), await r.zadd("z", {"a": 1}), await r.zpopmin("z")]
        await r.aclose()
        return out

    for proto in (2, 3):
        assert asyncio.run(run(trafikey_server.port, proto)) == asyncio.run(run(valkey_server.port, proto))

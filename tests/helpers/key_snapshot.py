"""Every key of database 0 with its type, its value and whether it has a
TTL, read through redis-py: what a write-or-refuse test compares between
the two servers."""

from __future__ import annotations

from typing import Any

import redis


def snapshot(port: int) -> dict[bytes, tuple[bytes, Any, bool]]:
    """Every key with its type, value and whether it has a TTL."""
    r = redis.Redis(port=port)
    out: dict[bytes, tuple[bytes, Any, bool]] = {}
    try:
        for k in sorted(r.keys("*")):
            t = r.type(k)
            if t == b"string":
                v: Any = r.get(k)
            elif t == b"list":
                v = r.lrange(k, 0, -1)
            elif t == b"set":
                v = sorted(r.smembers(k))
            elif t == b"zset":
                v = r.zrange(k, 0, -1, withscores=True)
            elif t == b"hash":
                v = sorted(r.hgetall(k).items())
            else:
                v = None
            out[k] = (t, v, r.pttl(k) > 0)
    finally:
        r.close()
    return out

"""The test helpers SAQ's suite imports (``tests.helpers``), which its source
distribution leaves out; written for the compatibility harness from what the
tests call.

Redis queues talk to the server under test (COMPAT_HOST, COMPAT_PORT). The
server is emptied when a queue is cleaned up, not when one is made: several
tests make a second queue over the first one's state. There is no
PostgreSQL server here, so the PostgreSQL cases are skipped."""

from __future__ import annotations

import os
import typing as t
import unittest

from redis.asyncio import Redis
from saq.queue import Queue
from saq.queue.redis import RedisQueue

REDIS_URL = f"redis://{os.environ.get('COMPAT_HOST', 'localhost')}:{os.environ.get('COMPAT_PORT', '6379')}"


async def create_redis_queue(url: str = REDIS_URL, **kwargs: t.Any) -> RedisQueue:
    queue = t.cast(RedisQueue, Queue.from_url(url, **kwargs))
    await queue.connect()
    return queue


async def cleanup_queue(queue: Queue) -> None:
    """Empty the server and disconnect. An HTTP queue's jobs live on the
    server under test too (behind the test's proxy), so the server is
    emptied through a client of its own whatever the queue."""
    client = Redis.from_url(REDIS_URL)
    try:
        await client.flushdb()
    finally:
        await client.aclose()
    await queue.disconnect()


async def setup_postgres() -> None:
    raise unittest.SkipTest("no PostgreSQL server in the compatibility harness")


async def create_postgres_queue(**kwargs: t.Any) -> Queue:
    raise unittest.SkipTest("no PostgreSQL server in the compatibility harness")


async def teardown_postgres() -> None:
    return None

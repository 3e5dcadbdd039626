"""The fixtures dramatiq's tests use, which its source distribution leaves
out; written for the compatibility harness from what the tests ask of them.

Everything Redis-backed talks to the server under test (COMPAT_HOST,
COMPAT_PORT; the library's own default is localhost:6379) and starts and ends
on an empty server. The result and rate-limit backends are the Redis ones
only: the stub and memcached backends do not touch the server."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from typing import Any

import dramatiq
import pytest
import redis
from dramatiq import Worker
from dramatiq.brokers.redis import RedisBroker
from dramatiq.brokers.stub import StubBroker
from dramatiq.rate_limits import backends as rl_backends
from dramatiq.results import backends as res_backends

HOST = os.environ.get("COMPAT_HOST", "localhost")
PORT = int(os.environ.get("COMPAT_PORT", "6379"))


def _client() -> redis.Redis:
    return redis.Redis(host=HOST, port=PORT)


def _on_empty_server(backend: Callable[..., Any]) -> Iterator[Any]:
    """A Redis-backed backend on the server under test, empty before and
    after the test."""
    client = _client()
    client.flushall()
    yield backend(client=client)
    client.flushall()


@pytest.fixture
def stub_broker() -> Iterator[StubBroker]:
    broker = StubBroker()
    broker.emit_after("process_boot")
    dramatiq.set_broker(broker)
    yield broker
    broker.flush_all()
    broker.close()


@pytest.fixture
def stub_worker(stub_broker: StubBroker) -> Iterator[Worker]:
    w = Worker(stub_broker, worker_timeout=100, worker_threads=32)
    w.start()
    yield w
    w.stop()


@pytest.fixture
def redis_broker() -> Iterator[RedisBroker]:
    broker = RedisBroker(host=HOST, port=PORT)
    broker.client.flushall()
    broker.emit_after("process_boot")
    dramatiq.set_broker(broker)
    yield broker
    broker.client.flushall()
    broker.close()


@pytest.fixture
def redis_worker(redis_broker: RedisBroker) -> Iterator[Worker]:
    w = Worker(redis_broker, worker_timeout=100, worker_threads=32)
    w.start()
    yield w
    w.stop()


@pytest.fixture
def redis_result_backend() -> Iterator[Any]:
    yield from _on_empty_server(res_backends.RedisBackend)


@pytest.fixture(params=["redis"])
def result_backend(request: pytest.FixtureRequest) -> Any:
    return request.getfixturevalue(f"{request.param}_result_backend")


@pytest.fixture
def redis_rate_limiter_backend() -> Iterator[Any]:
    yield from _on_empty_server(rl_backends.RedisBackend)


@pytest.fixture(params=["redis"])
def rate_limiter_backend(request: pytest.FixtureRequest) -> Any:
    return request.getfixturevalue(f"{request.param}_rate_limiter_backend")


@pytest.fixture
def start_cli() -> Iterator[Callable[..., subprocess.Popen[bytes]]]:
    """Starts ``python -m dramatiq`` on a broker of the tests' modules; every
    process started is stopped after the test."""
    procs: list[subprocess.Popen[bytes]] = []

    def run(broker_module: str, *, extra_args: tuple[str, ...] | list[str] = (),
            **kwargs: Any) -> subprocess.Popen[bytes]:
        proc = subprocess.Popen([sys.executable, "-m", "dramatiq", broker_module, *extra_args], **kwargs)
        procs.append(proc)
        return proc

    yield run
    for proc in procs:
        if proc.poll() is None:
            proc.terminate()
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    client = _client()
    client.flushall()

"""What dramatiq's tests import from ``tests.common``, which its source
distribution leaves out; written for the compatibility harness from what the
tests use."""

from __future__ import annotations

import os
import platform
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from dramatiq import Worker

RABBITMQ_USERNAME = os.getenv("RABBITMQ_USERNAME", "guest")
RABBITMQ_PASSWORD = os.getenv("RABBITMQ_PASSWORD", "guest")
try:
    import pika

    RABBITMQ_CREDENTIALS: Any = pika.credentials.PlainCredentials(RABBITMQ_USERNAME, RABBITMQ_PASSWORD)
except ImportError:
    RABBITMQ_CREDENTIALS = None

skip_on_windows = pytest.mark.skipif(platform.system() == "Windows", reason="not on Windows")
skip_on_pypy = pytest.mark.skipif(platform.python_implementation() == "PyPy", reason="not on PyPy")
# the timing-bound tests the library keeps out of its CI runs
skip_in_ci = pytest.mark.skipif(bool(os.getenv("CI")), reason="timing-bound, not in CI")
# the harness starts no RabbitMQ
skip_unless_rabbit_mq = pytest.mark.skip(reason="no RabbitMQ in the compatibility harness")


@contextmanager
def worker(*args: Any, **kwargs: Any) -> Iterator[Worker]:
    """A started worker, stopped on the way out."""
    w = Worker(*args, **kwargs)
    w.start()
    try:
        yield w
    finally:
        w.stop()

"""Servers of their own for the notification tests: they change
notify-keyspace-events and switch active expiry off (DEBUG
SET-ACTIVE-EXPIRE 0), which the shared servers must not see."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from helpers.servers import Proc, start_trafikey, start_valkey


@pytest.fixture(scope="package")
def nvalkey() -> Iterator[Proc]:
    p = start_valkey("--enable-debug-command", "yes")
    yield p
    p.stop()


@pytest.fixture(scope="package")
def ntrafikey() -> Iterator[Proc]:
    p = start_trafikey("--enable-debug-command", "yes", "--enable-clock-command", "yes")
    yield p
    p.stop()

"""A server with TRAFIKEY.FAULT (and the test clock, and DEBUG) enabled,
shared by the fault tests; each test starts with no rule, an empty
keyspace and the clock on the system time."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import redis
from helpers.resp_wire import Wire
from helpers.servers import Proc, start_trafikey


@pytest.fixture(scope="session")
def fault_server() -> Iterator[Proc]:
    p = start_trafikey("--enable-fault-command", "yes", "--enable-clock-command", "yes",
                       "--enable-debug-command", "yes")
    yield p
    p.stop()


def clean(port: int) -> None:
    """On a raw connection: a rule left without options would match a
    client library's own handshake."""
    w = Wire(port)
    try:
        assert w.call("TRAFIKEY.FAULT", "RESET") == b"+OK\r\n"
        w.call("TRAFIKEY.CLOCK", "RELEASE")
        assert w.call("FLUSHALL") == b"+OK\r\n"
        assert w.call("CONFIG", "RESETSTAT") == b"+OK\r\n"
    finally:
        w.close()



@pytest.fixture
def r(fault_server: Proc) -> Iterator[redis.Redis]:
    """The controlling client (rules, keyspace checks); it never matches a
    rule the tests add, which all name another client or command."""
    clean(fault_server.port)
    client = redis.Redis(port=fault_server.port, protocol=2)
    yield client
    client.close()
    clean(fault_server.port)

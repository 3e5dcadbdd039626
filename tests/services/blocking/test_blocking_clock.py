"""Timeouts of blocked clients on the server's clock (TRAFIKEY.CLOCK).

Valkey has no test clock, so these are not differential: the rule they
check is Valkey's (blocked.c times a client out once the clock is past its
deadline, ``timeout < now``; the deadline is the time of the request plus
the timeout rounded up to the millisecond), applied to our clock.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from helpers.resp_wire import Wire, blocked_clients, encode, wait_blocked
from helpers.servers import Proc


@pytest.fixture
def clock(emq_server: Proc) -> Iterator[Wire]:
    w = Wire(emq_server.port)
    w.call("FLUSHALL")
    w.call("TRAFIKEY.CLOCK", "FREEZE", "1000000000000")
    yield w
    w.call("TRAFIKEY.CLOCK", "RELEASE")
    w.close()




def test_timeout_is_past_one_millisecond_after_the_deadline(clock: Wire, emq_server: Proc) -> None:
    waiter = Wire(emq_server.port)
    waiter.send_raw(encode("BZPOPMIN", "z", "1.0001"))  # 1000.1 ms, rounded up: 1001
    wait_blocked(clock, 1)
    clock.call("TRAFIKEY.CLOCK", "ADVANCE", "1001")
    assert blocked_clients(clock) == 1
    clock.call("TRAFIKEY.CLOCK", "ADVANCE", "1")
    assert waiter.read_reply() == b"*-1\r\n"
    assert blocked_clients(clock) == 0
    waiter.close()


def test_a_frozen_clock_keeps_a_client_waiting(clock: Wire, emq_server: Proc) -> None:
    waiter = Wire(emq_server.port)
    waiter.send_raw(encode("BZPOPMAX", "z", "0.05") + encode("PING"))
    wait_blocked(clock, 1)
    time.sleep(0.15)  # three times the timeout, on the wall clock
    assert blocked_clients(clock) == 1
    # 0.05 s times 1000 rounds to exactly 50 in long double (the exact
    # product, a hair above 50, would round up to 51): past at 51.
    clock.call("TRAFIKEY.CLOCK", "SET", "1000000000050")
    assert blocked_clients(clock) == 1
    clock.call("TRAFIKEY.CLOCK", "SET", "1000000000051")
    assert waiter.read_reply() == b"*-1\r\n"
    assert waiter.read_reply() == b"+PONG\r\n"
    waiter.close()


def test_releasing_the_clock_times_out_a_past_deadline(clock: Wire, emq_server: Proc) -> None:
    waiter = Wire(emq_server.port)
    waiter.send_raw(encode("BZMPOP", "5", "1", "z", "MIN"))
    wait_blocked(clock, 1)
    clock.call("TRAFIKEY.CLOCK", "RELEASE")  # back to today, long after 2001
    assert waiter.read_reply() == b"*-1\r\n"
    waiter.close()


def test_waiting_again_keeps_the_first_deadline(clock: Wire, emq_server: Proc) -> None:
    # Served when a key is added and gone again before its turn, the client
    # waits on with the deadline of its request (blockForKeys on reprocessing).
    waiter, other = Wire(emq_server.port), Wire(emq_server.port)
    other.send_raw(encode("BZPOPMIN", "z", "0"))
    wait_blocked(clock, 1)
    waiter.send_raw(encode("BZPOPMIN", "z", "10"))
    wait_blocked(clock, 2)
    clock.call("TRAFIKEY.CLOCK", "ADVANCE", "6000")
    assert clock.call("ZADD", "z", "1", "a") == b":1\r\n"  # taken by the first client
    assert other.read_reply() == b"*3\r\n$1\r\nz\r\n$1\r\na\r\n$1\r\n1\r\n"
    assert blocked_clients(clock) == 1
    clock.call("TRAFIKEY.CLOCK", "ADVANCE", "4001")
    assert waiter.read_reply() == b"*-1\r\n"
    waiter.close()
    other.close()


"""What redis-py (sync and asyncio) makes of each kind of fault, and what
its ``Retry`` does with it.

redis-py maps an error's code to an exception class (LOADING to
BusyLoadingError, READONLY to ReadOnlyError, OOM to OutOfMemoryError,
MOVED to MovedError with the slot and address, any other code to
ResponseError); a closed connection (DROP, DROP-AFTER, CUT) is a
ConnectionError and a reply that does not come in time (DELAY on a frozen
clock) a TimeoutError, which its Retry retries by reconnecting and sending
the command again. So a retried DROP runs the command once, and a retried
DROP-AFTER, CUT or DELAY runs it twice: the lost reply a client must be
ready for. Each case checks the keyspace the retries leave.
"""

from __future__ import annotations

import asyncio

import pytest
import redis
import redis.asyncio
from helpers.servers import Proc
from redis.asyncio.retry import Retry as AsyncRetry
from redis.backoff import ExponentialBackoff, NoBackoff
from redis.exceptions import (
    AskError,
    BusyLoadingError,
    ClusterDownError,
    MasterDownError,
    MovedError,
    NoScriptError,
    OutOfMemoryError,
    ReadOnlyError,
    ResponseError,
    TryAgainError,
)
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError
from redis.retry import Retry

ERRORS = [
    ("LOADING", BusyLoadingError, "Valkey is loading the dataset in memory"),
    ("READONLY", ReadOnlyError, "You can't write against a read only replica."),
    ("OOM", OutOfMemoryError, "command not allowed when used memory > 'maxmemory'."),
    ("NOSCRIPT", NoScriptError, "No matching script."),
    ("TRYAGAIN", TryAgainError, "Multiple keys request during rehashing of slot"),
    ("CLUSTERDOWN", ClusterDownError, "The cluster is down"),
    ("MASTERDOWN", MasterDownError, "Link with MASTER is down and replica-serve-stale-data is set to 'no'."),
    ("BUSY", ResponseError,
     "BUSY Valkey is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE."),
    ("MYAPP something broke", ResponseError, "MYAPP something broke"),
]


def add(r: redis.Redis, *args: object) -> int:
    return int(r.execute_command("TRAFIKEY.FAULT", "ADD", *args, "CLIENTNAME", "victim"))


def client(server: Proc, retries: int = 0, **kw: object) -> redis.Redis:
    """A victim client: no retry unless asked for (redis-py retries
    connection errors three times by default)."""
    retry = Retry(ExponentialBackoff(cap=0.05, base=0.001), retries) if retries else Retry(NoBackoff(), 0)
    return redis.Redis(port=server.port, client_name="victim", retry=retry, **kw)  # type: ignore[arg-type]


def fired(r: redis.Redis) -> int:
    return int(r.info("faults")["faults_fired"])


@pytest.mark.parametrize(("text", "exc", "message"), ERRORS, ids=[e[0].split()[0] for e in ERRORS])
def test_error_becomes_its_exception(r: redis.Redis, fault_server: Proc, text: str, exc: type[Exception],
                                     message: str) -> None:
    add(r, "ERROR", text, "COMMAND", "set")
    c = client(fault_server)
    try:
        with pytest.raises(exc) as info:
            c.set("k", "v")
        assert type(info.value) is exc
        assert str(info.value) == message
        assert c.get("k") is None  # the connection lives on
    finally:
        c.close()
    assert r.exists("k") == 0


def test_moved_error_carries_slot_and_address(r: redis.Redis, fault_server: Proc) -> None:
    add(r, "MOVED", "10.1.2.3:7005", "COMMAND", "get")
    c = client(fault_server)
    try:
        with pytest.raises(MovedError) as info:
            c.get("foo")
        assert (info.value.slot_id, info.value.host, info.value.port) == (12182, "10.1.2.3", 7005)
    finally:
        c.close()


def test_retry_on_an_error_reply(r: redis.Redis, fault_server: Proc) -> None:
    """``retry_on_error`` makes a refusal retried: LOADING twice, then the
    command runs once."""
    add(r, "ERROR", "LOADING", "COMMAND", "incrby", "TIMES", 2)
    c = client(fault_server, retries=3, retry_on_error=[BusyLoadingError])
    before = fired(r)
    try:
        assert c.incr("n") == 1
    finally:
        c.close()
    assert fired(r) - before == 2
    assert r.get("n") == b"1"


def test_no_retry_surfaces_the_connection_error(r: redis.Redis, fault_server: Proc) -> None:
    add(r, "DROP", "COMMAND", "incrby", "TIMES", 1)
    c = client(fault_server)
    try:
        with pytest.raises(RedisConnectionError):
            c.incr("n")
        assert c.incr("n") == 1  # a fresh connection; the rule is spent
    finally:
        c.close()
    assert r.get("n") == b"1"


@pytest.mark.parametrize(("kind", "runs"), [(("DROP",), 1), (("DROP-AFTER",), 2), (("CUT", 2), 2)],
                         ids=["drop", "drop-after", "cut"])
def test_retry_on_a_closed_connection(r: redis.Redis, fault_server: Proc, kind: tuple[object, ...],
                                      runs: int) -> None:
    """The Retry reconnects and sends INCR again: dropped before it ran,
    it runs once; dropped or cut after, it has run twice."""
    add(r, *kind, "COMMAND", "incrby", "TIMES", 1)
    c = client(fault_server, retries=2)
    try:
        assert c.incr("n") == runs
    finally:
        c.close()
    assert r.get("n") == str(runs).encode()


def test_retry_on_a_timeout(r: redis.Redis, fault_server: Proc) -> None:
    """A reply held on a frozen clock never comes: the socket timeout
    fires, the Retry reconnects and sends INCR again, which runs too."""
    r.execute_command("TRAFIKEY.CLOCK", "FREEZE")
    add(r, "DELAY", 60_000, "COMMAND", "incrby", "TIMES", 1)
    c = client(fault_server, retries=2, socket_timeout=0.2)
    try:
        assert c.incr("n") == 2
    finally:
        c.close()
    assert r.get("n") == b"2"


def test_timeout_without_retry(r: redis.Redis, fault_server: Proc) -> None:
    r.execute_command("TRAFIKEY.CLOCK", "FREEZE")
    add(r, "DELAY", 60_000, "COMMAND", "incrby", "TIMES", 1)
    c = client(fault_server, socket_timeout=0.2)
    try:
        with pytest.raises(RedisTimeoutError):
            c.incr("n")
    finally:
        c.close()
    assert r.get("n") == b"1"


def test_pipeline_under_drop_after(r: redis.Redis, fault_server: Proc) -> None:
    """A pipeline whose connection is lost after the server ran part of it:
    the commands before the rule's have run, the rule's ran, the rest not."""
    add(r, "DROP-AFTER", "COMMAND", "incrby", "KEY", "b")
    c = client(fault_server)
    try:
        pipe = c.pipeline(transaction=False)
        pipe.incr("a").incr("b").incr("c")
        with pytest.raises(RedisConnectionError):
            pipe.execute()
    finally:
        c.close()
    assert (r.get("a"), r.get("b"), r.get("c")) == (b"1", b"1", None)


def test_asyncio_client(r: redis.Redis, fault_server: Proc) -> None:
    """The asyncio client sees the same: an error class per code, a
    connection error per closed connection, retries that reconnect, and a
    delayed reply that does not hold up another connection."""
    add(r, "ERROR", "READONLY", "COMMAND", "set", "TIMES", 1)
    add(r, "DROP-AFTER", "COMMAND", "incrby", "TIMES", 1)

    async def scenario() -> None:
        plain = redis.asyncio.Redis(port=fault_server.port, client_name="victim", retry=AsyncRetry(NoBackoff(), 0))
        retrying = redis.asyncio.Redis(port=fault_server.port, client_name="victim",
                                       retry=AsyncRetry(ExponentialBackoff(cap=0.05, base=0.001), 2))
        other = redis.asyncio.Redis(port=fault_server.port)
        try:
            with pytest.raises(ReadOnlyError):
                await plain.set("k", "v")
            assert await retrying.incr("n") == 2
            await other.execute_command("TRAFIKEY.CLOCK", "FREEZE")
            add(r, "DELAY", 5_000, "COMMAND", "get", "TIMES", 1)
            before = int((await other.info("faults"))["faults_fired_delay"])
            held = asyncio.ensure_future(plain.get("n"))
            while int((await other.info("faults"))["faults_fired_delay"]) == before:
                await asyncio.sleep(0.005)
            assert await other.set("free", "yes")
            assert not held.done()
            await other.execute_command("TRAFIKEY.CLOCK", "ADVANCE", 5_000)
            assert await held == b"2"
        finally:
            await plain.aclose()
            await retrying.aclose()
            await other.aclose()

    asyncio.run(scenario())
    assert r.exists("k") == 0
    assert r.get("n") == b"2"
    assert r.get("free") == b"yes"



ASYNC_CASES = [
    (("ERROR", "OOM"), OutOfMemoryError, None),
    (("MOVED", "10.0.0.9:7000"), MovedError, None),
    (("ASK", "10.0.0.9:7000"), AskError, None),
    (("DROP",), RedisConnectionError, None),
    (("DROP-AFTER",), RedisConnectionError, b"v"),
    (("CUT", 1), RedisConnectionError, b"v"),
]


@pytest.mark.parametrize(("kind", "exc", "after"), ASYNC_CASES, ids=[c[0][0].lower() for c in ASYNC_CASES])
def test_asyncio_each_kind(r: redis.Redis, fault_server: Proc, kind: tuple[object, ...], exc: type[Exception],
                           after: bytes | None) -> None:
    """Each kind through the asyncio client without retries: the exception
    it raises, and the keyspace (written only by the kinds that run)."""
    add(r, *kind, "COMMAND", "set", "TIMES", 1)

    async def scenario() -> None:
        c = redis.asyncio.Redis(port=fault_server.port, client_name="victim", retry=AsyncRetry(NoBackoff(), 0))
        try:
            with pytest.raises(exc):
                await c.set("k", "v")
            assert await c.ping()  # a new connection if the old one was closed; the rule is spent
        finally:
            await c.aclose()

    asyncio.run(scenario())
    assert r.get("k") == after

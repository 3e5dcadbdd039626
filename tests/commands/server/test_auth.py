"""Authentication: requirepass, AUTH and HELLO AUTH with Valkey's texts and
order of checks, compared with Valkey 9.1.2 byte for byte; then the access
rules through redis-py (sync and asyncio) and the job core limited to one
queue's keys."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest
import redis
import redis.asyncio
from helpers.emq_model import Queue
from helpers.resp_wire import Wire
from helpers.servers import Proc, start_trafikey, start_valkey

PASSWORD = "s3cret pass"


@pytest.fixture(scope="module")
def locked() -> Iterator[tuple[Proc, Proc]]:
    v, t = start_valkey("--requirepass", PASSWORD), start_trafikey("--requirepass", PASSWORD)
    yield v, t
    v.stop()
    t.stop()


def assert_same_replies(ports: tuple[int, int], steps: list[tuple[object, ...]]) -> None:
    """One fresh connection to each server; every step's replies equal."""
    wv, wt = Wire(ports[0]), Wire(ports[1])
    try:
        for args in steps:
            rv, rt = wv.call(*args), wt.call(*args)  # type: ignore[arg-type]
            assert rt == rv, f"{args!r}\n valkey:   {rv!r}\n trafikey: {rt!r}"
    finally:
        wv.close()
        wt.close()


def _ports(pair: tuple[Proc, Proc]) -> tuple[int, int]:
    return pair[0].port, pair[1].port


def test_unauthenticated_commands_are_refused(locked: tuple[Proc, Proc]) -> None:
    assert_same_replies(_ports(locked), [
        ("PING",), ("GET", "k"), ("SET", "k", "v"), ("NOSUCH",), ("GET",), ("CLIENT", "NOSUCH"),
        ("ACL", "WHOAMI"), ("EMQ.VERSION",), ("MULTI",), ("EXEC",), ("QUIT",),
    ])


def test_auth_forms_and_wrong_passwords(locked: tuple[Proc, Proc]) -> None:
    assert_same_replies(_ports(locked), [
        ("AUTH", "wrong"), ("AUTH", "default", "wrong"), ("AUTH", "nobody", PASSWORD), ("AUTH", ""),
        ("AUTH",), ("AUTH", "a", "b", "c"), ("PING",), ("AUTH", PASSWORD), ("PING",), ("ACL", "WHOAMI"),
        ("AUTH", "wrong"), ("PING",),  # a failed AUTH keeps the earlier login
        ("AUTH", "default", PASSWORD), ("GET", "k"),
    ])


def test_hello_auth_order(locked: tuple[Proc, Proc]) -> None:
    assert_same_replies(_ports(locked), [
        ("HELLO",), ("HELLO", "2"), ("HELLO", "4"), ("HELLO", "x"), ("HELLO", "3", "AUTH", "default"),
        ("HELLO", "3", "BOGUS"), ("HELLO", "2", "AUTH", "default", "wrong"),
        ("HELLO", "2", "SETNAME", "bad name", "AUTH", "default", PASSWORD),
        ("HELLO", "2", "AUTH", "nobody", PASSWORD), ("PING",),
    ])
    # Success: the reply carries each server's own client id, so only its
    # effects are compared.
    wv, wt = Wire(locked[0].port), Wire(locked[1].port)
    for w in (wv, wt):
        assert w.call("HELLO", "3", "AUTH", "default", PASSWORD, "SETNAME", "ok").startswith(b"%7\r\n")
    for args in (("CLIENT", "GETNAME"), ("PING",), ("ACL", "WHOAMI")):
        assert wv.call(*args) == wt.call(*args)
    wv.close()
    wt.close()


def test_reset_logs_out(locked: tuple[Proc, Proc]) -> None:
    assert_same_replies(_ports(locked), [("AUTH", PASSWORD), ("PING",), ("RESET",), ("PING",), ("ACL", "WHOAMI")])


def test_requirepass_is_the_default_users_password(locked: tuple[Proc, Proc]) -> None:
    assert_same_replies(_ports(locked), [
        ("AUTH", PASSWORD), ("ACL", "LIST"), ("ACL", "GETUSER", "default"), ("CONFIG", "GET", "requirepass"),
    ])


def test_requirepass_changes_at_runtime() -> None:
    pair = (start_valkey(), start_trafikey())
    try:
        ports = _ports(pair)
        wv, wt = Wire(ports[0]), Wire(ports[1])  # connected while no password is set
        assert_same_replies(ports, [("AUTH", "x"), ("CONFIG", "SET", "requirepass", "pw"), ("ACL", "LIST"), ("PING",)])
        assert_same_replies(ports, [("PING",), ("AUTH", "pw"), ("PING",), ("CONFIG", "SET", "requirepass", "")])
        assert_same_replies(ports, [("PING",), ("ACL", "LIST"), ("AUTH", "pw")])
        # A connection that never authenticated is let in once the default
        # user takes no password again, and refused while it needs one.
        assert_same_replies(ports, [("CONFIG", "SET", "requirepass", "pw2")])
        assert wv.call("PING") == wt.call("PING") == b"+PONG\r\n"  # logged in when it connected
        assert_same_replies(ports, [("ACL", "SETUSER", "default", "off")])
        assert_same_replies(ports, [("PING",), ("AUTH", "pw2"), ("PING",), ("ACL", "LIST")])
        wv.close()
        wt.close()
    finally:
        for p in pair:
            p.stop()


# -- through redis-py, and the job core limited to one queue -------------------------------

ORDERS = Queue(b"emq:{orders}:")
BILLING = Queue(b"emq:{billing}:")
WORKER = ("on", ">worker-pw", "~emq:{orders}:*", "-@all", "+@write", "+@read", "-@dangerous", "+@connection",
          "+emq.version", "+acl|whoami")


@pytest.fixture(scope="module")
def trafikey_locked() -> Iterator[Proc]:
    p = start_trafikey("--requirepass", PASSWORD)
    admin = redis.Redis(port=p.port, password=PASSWORD)
    admin.execute_command("ACL", "SETUSER", "worker", *WORKER)
    admin.close()
    yield p
    p.stop()


@pytest.mark.slow
def test_redis_py_sync_username_password(trafikey_locked: Proc) -> None:
    port = trafikey_locked.port
    with pytest.raises(redis.AuthenticationError):
        redis.Redis(port=port, username="worker", password="wrong").ping()
    with pytest.raises(redis.AuthenticationError):
        redis.Redis(port=port).ping()
    r = redis.Redis(port=port, username="worker", password="worker-pw")
    assert r.execute_command("ACL", "WHOAMI") == b"worker"
    assert r.execute_command(*ORDERS.request("EMQ.ENQUEUE", b"j1", b"payload")) == b"j1"
    assert r.execute_command(*ORDERS.request("EMQ.CLAIM", 30000)) == [b"j1", b"payload", 1]
    assert r.hget(b"emq:{orders}:job:j1", b"state") == b"active"
    assert r.execute_command(*ORDERS.request("EMQ.EXTEND", b"j1", 1, 30000)) == 1
    assert r.execute_command(*ORDERS.request("EMQ.COMPLETE", b"j1", 1)) == 1
    assert r.exists(b"emq:{orders}:job:j1") == 0
    with pytest.raises(redis.exceptions.NoPermissionError, match="No permissions to access a key"):
        r.execute_command(*BILLING.request("EMQ.ENQUEUE", b"j1", b"payload"))
    with pytest.raises(redis.exceptions.NoPermissionError, match="No permissions to access a key"):
        r.execute_command(*BILLING.request("EMQ.CLAIM", 30000))
    with pytest.raises(redis.exceptions.NoPermissionError, match="No permissions to access a key"):
        r.get(b"emq:{billing}:job:j1")
    with pytest.raises(redis.exceptions.NoPermissionError,
                       match="User worker has no permissions to run the 'flushall' command"):
        r.flushall()
    admin = redis.Redis(port=port, password=PASSWORD)
    assert admin.exists(b"emq:{billing}:pending") == 0
    admin.close()
    r.close()


def test_redis_py_asyncio_username_password(trafikey_locked: Proc) -> None:
    port = trafikey_locked.port

    async def scenario() -> None:
        bad = redis.asyncio.Redis(port=port, username="worker", password="nope")
        with pytest.raises(redis.AuthenticationError):
            await bad.ping()
        await bad.aclose()
        r = redis.asyncio.Redis(port=port, username="worker", password="worker-pw", protocol=3)
        assert await r.execute_command(*ORDERS.request("EMQ.ENQUEUE", b"a1", b"x")) == b"a1"
        assert await r.hget(b"emq:{orders}:job:a1", b"state") == b"pending"
        with pytest.raises(redis.exceptions.NoPermissionError):
            await r.execute_command(*BILLING.request("EMQ.ENQUEUE", b"a1", b"x"))
        with pytest.raises(redis.exceptions.NoPermissionError):
            await r.execute_command(*BILLING.request("EMQ.PROMOTE"))
        await r.aclose()

    asyncio.run(scenario())


def test_passwords_are_not_logged() -> None:
    """At the most verbose log level, no password given to AUTH, HELLO,
    requirepass or ACL SETUSER shows up in the log or in CLIENT LIST."""
    secrets_ = ["first-Secret-1", "wrong-Secret-2", "hello-Secret-3", "acl-Secret-4", "conf-Secret-5"]
    p = start_trafikey("--requirepass", secrets_[0], "--loglevel", "debug")
    try:
        w = Wire(p.port)
        assert w.call("AUTH", secrets_[1]).startswith(b"-WRONGPASS")
        assert w.call("HELLO", "2", "AUTH", "default", secrets_[2]).startswith(b"-WRONGPASS")
        assert w.call("AUTH", secrets_[0]) == b"+OK\r\n"
        assert w.call("ACL", "SETUSER", "u", "on", ">" + secrets_[3]) == b"+OK\r\n"
        assert w.call("CONFIG", "SET", "requirepass", secrets_[4]) == b"+OK\r\n"
        listing = w.call("CLIENT", "LIST") + w.call("ACL", "LIST") + w.call("INFO", "everything")
        w.send_raw(b"SHUTDOWN NOSAVE\r\n")
        p.proc.wait(10)
        text = p.output().encode() + listing
        assert b"Secret" not in text
    finally:
        p.stop()

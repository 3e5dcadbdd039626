"""Every kind of fault on the wire, with the keyspace checked after each.

A refused request (ERROR, MOVED, ASK, DROP) writes nothing and is not
counted as a call; a request that runs (DROP-AFTER, CUT, DELAY) has written
exactly once, however its reply was lost, cut or held. The ERROR shortcuts'
texts are Valkey's: where a live Valkey produces the same error on request
(OOM, NOSCRIPT, WRONGTYPE, BUSYKEY) the test takes it from Valkey, the rest
are Valkey 9.1's source texts (server.c's shared objects, cluster.c).
"""

from __future__ import annotations

import select
import time

import pytest
import redis
from helpers.resp_wire import Wire, encode
from helpers.servers import Proc
from redis.crc import key_slot

SOURCE_TEXTS = {
    "LOADING": b"LOADING Valkey is loading the dataset in memory",
    "BUSY": b"BUSY Valkey is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE.",
    "READONLY": b"READONLY You can't write against a read only replica.",
    "MASTERDOWN": b"MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set to 'no'.",
    "TRYAGAIN": b"TRYAGAIN Multiple keys request during rehashing of slot",
    "CLUSTERDOWN": b"CLUSTERDOWN The cluster is down",
    "NOREPLICAS": b"NOREPLICAS Not enough good replicas to write.",
    "NOAUTH": b"NOAUTH Authentication required.",
}


def victim(server: Proc) -> Wire:
    w = Wire(server.port)
    assert w.call("CLIENT", "SETNAME", "victim") == b"+OK\r\n"
    return w


def add(r: redis.Redis, *args: object) -> int:
    return int(r.execute_command("TRAFIKEY.FAULT", "ADD", *args, "CLIENTNAME", "victim"))


def calls(r: redis.Redis, cmd: str) -> int:
    return int(r.info("commandstats").get(f"cmdstat_{cmd}", {}).get("calls", 0))


def quiet(w: Wire, wait: float = 0.05) -> bool:
    """Nothing has arrived on w (a short look, after the server has shown
    by another client's reply that it handled w's request)."""
    return not w.buf and not select.select([w.sock], [], [], wait)[0]


@pytest.mark.parametrize("code", sorted(SOURCE_TEXTS))
def test_error_shortcuts_from_the_source(r: redis.Redis, fault_server: Proc, code: str) -> None:
    add(r, "ERROR", code.lower(), "COMMAND", "set")
    w = victim(fault_server)
    try:
        assert w.call("SET", "k", "v") == b"-" + SOURCE_TEXTS[code] + b"\r\n"
    finally:
        w.close()
    assert r.exists("k") == 0
    assert calls(r, "set") == 0


def test_error_shortcuts_as_valkey_says_them(r: redis.Redis, fault_server: Proc, valkey_server: Proc) -> None:
    v = Wire(valkey_server.port)
    try:
        v.call("FLUSHALL")
        wanted = {"NOSCRIPT": v.call("EVALSHA", "a" * 40, 0)}
        v.call("SET", "s", "x")
        wanted["WRONGTYPE"] = v.call("LPUSH", "s", "x")
        dump = redis.Redis(port=valkey_server.port).dump("s")
        wanted["BUSYKEY"] = v.call("RESTORE", "s", 0, dump)
        v.call("CONFIG", "SET", "maxmemory", 1)
        try:
            wanted["OOM"] = v.call("SET", "t", "x")
        finally:
            v.call("CONFIG", "SET", "maxmemory", 0)
        v.call("FLUSHALL")
    finally:
        v.close()
    w = victim(fault_server)
    try:
        for code, want in wanted.items():
            rid = add(r, "ERROR", code, "COMMAND", "set")
            assert w.call("SET", "k", "v") == want, code
            r.execute_command("TRAFIKEY.FAULT", "DEL", rid)
    finally:
        w.close()
    assert r.exists("k") == 0


def test_error_with_own_text(r: redis.Redis, fault_server: Proc) -> None:
    """Any other text is sent as given, its first word the error code (one
    leading '-' is the reply's own; CR and LF become spaces)."""
    add(r, "ERROR", "-MYAPP no\r\nway", "COMMAND", "incr")
    w = victim(fault_server)
    try:
        assert w.call("INCR", "n") == b"-MYAPP no  way\r\n"
        assert w.call("GET", "n") == b"$-1\r\n"
    finally:
        w.close()
    assert r.info("errorstats")["errorstat_MYAPP"] == {"count": 1}


@pytest.mark.parametrize("kind", ["MOVED", "ASK"])
def test_redirections(r: redis.Redis, fault_server: Proc, kind: str) -> None:
    """The slot is the first key's (redis-py's own key_slot as the
    reference); a request without keys names slot 0."""
    add(r, kind, "10.0.0.7:7001", "COMMAND", "mset")
    add(r, kind, "[::1]:7002", "COMMAND", "ping")
    w = victim(fault_server)
    try:
        slot = key_slot(b"user:{42}:name")
        assert w.call("MSET", "user:{42}:name", "x", "other", "y") == b"-%s %d 10.0.0.7:7001\r\n" % (
            kind.encode(), slot)
        assert w.call("PING") == b"-%s 0 [::1]:7002\r\n" % kind.encode()
    finally:
        w.close()
    assert r.keys("*") == []


def test_drop_closes_without_running(r: redis.Redis, fault_server: Proc) -> None:
    """The replies before it in the same read are sent; nothing of the
    dropped request, nor of what followed it, runs."""
    add(r, "DROP", "COMMAND", "set", "KEY", "b")
    w = victim(fault_server)
    try:
        w.send_raw(encode("SET", "a", 1) + encode("SET", "b", 2) + encode("SET", "c", 3))
        assert w.read_until_closed() == b"+OK\r\n"
    finally:
        w.close()
    assert r.keys("*") == [b"a"]
    assert calls(r, "set") == 1


def test_drop_after_runs_then_loses_the_reply(r: redis.Redis, fault_server: Proc) -> None:
    add(r, "DROP-AFTER", "COMMAND", "incr")
    w = victim(fault_server)
    try:
        w.send_raw(encode("INCR", "n") + encode("INCR", "n"))
        assert w.read_until_closed() == b""
    finally:
        w.close()
    assert r.get("n") == b"1"  # written once; the second never ran
    assert calls(r, "incr") == 1


@pytest.mark.parametrize("k", [0, 1, 4, 11, 100])
def test_cut_sends_k_bytes(r: redis.Redis, fault_server: Proc, k: int) -> None:
    r.set("k", "hello")
    add(r, "CUT", k, "COMMAND", "getset")
    w = victim(fault_server)
    try:
        w.send_raw(encode("GETSET", "k", "world"))
        assert w.read_until_closed() == b"$5\r\nhello\r\n"[:k]
    finally:
        w.close()
    assert r.get("k") == b"world"
    assert calls(r, "getset") == 1


def test_delay_on_a_frozen_clock(r: redis.Redis, fault_server: Proc) -> None:
    """The reply waits until TRAFIKEY.CLOCK moves the clock by the delay;
    meanwhile other clients are served, and the delayed client's next
    requests wait behind it and then run in order."""
    t0 = r.execute_command("TRAFIKEY.CLOCK", "FREEZE")
    add(r, "DELAY", 1000, "COMMAND", "incr", "TIMES", 1)
    w = victim(fault_server)
    try:
        w.send_raw(encode("INCR", "n") + encode("SET", "after", "yes") + encode("GET", "n"))
        deadline = time.monotonic() + 5
        while r.info("faults")["faults_fired_delay"] == 0 or r.get("n") is None:
            assert time.monotonic() < deadline
            time.sleep(0.005)
        assert r.get("n") == b"1"  # it ran
        assert r.exists("after") == 0  # what followed waits
        assert r.ping()
        assert quiet(w)
        w.send_raw(encode("INCR", "n"))  # a later read waits too
        assert r.execute_command("TRAFIKEY.CLOCK", "ADVANCE", 999) == t0 + 999
        assert quiet(w)
        assert r.exists("after") == 0
        assert r.get("n") == b"1"
        r.execute_command("TRAFIKEY.CLOCK", "ADVANCE", 1)
        assert [w.read_reply() for _ in range(4)] == [b":1\r\n", b"+OK\r\n", b"$1\r\n1\r\n", b":2\r\n"]
    finally:
        w.close()
    assert calls(r, "incr") == 2


def test_delay_on_the_running_clock(r: redis.Redis, fault_server: Proc) -> None:
    """A short delay on the system clock ends by itself (the blocking
    layer's timer); a long one keeps the client waiting while others are
    served, until the clock is moved past it."""
    add(r, "DELAY", 20, "COMMAND", "incr", "TIMES", 1)
    w = victim(fault_server)
    try:
        assert w.call("INCR", "n") == b":1\r\n"
        add(r, "DELAY", 600_000, "COMMAND", "incr", "TIMES", 1)
        w.send_raw(encode("INCR", "n"))
        deadline = time.monotonic() + 5
        while r.get("n") != b"2":
            assert time.monotonic() < deadline
            time.sleep(0.005)
        assert r.set("other", "served")
        assert quiet(w)
        # Held like a blocked client: CLIENT UNBLOCK does not reach it.
        cid = next(c["id"] for c in r.client_list() if c["name"] == "victim")
        assert not r.client_unblock(cid)
        r.execute_command("TRAFIKEY.CLOCK", "ADVANCE", 600_000)
        assert w.read_reply() == b":2\r\n"
        assert w.call("INCR", "n") == b":3\r\n"
    finally:
        w.close()


def test_delay_and_disconnect(r: redis.Redis, fault_server: Proc) -> None:
    """A client that goes while its reply is held leaves nothing behind."""
    r.execute_command("TRAFIKEY.CLOCK", "FREEZE")
    add(r, "DELAY", 1000, "COMMAND", "incr")
    w = victim(fault_server)
    w.send_raw(encode("INCR", "n"))
    deadline = time.monotonic() + 5
    while r.get("n") is None:
        assert time.monotonic() < deadline
        time.sleep(0.005)
    assert r.info("clients")["blocked_clients"] == 1
    w.close()
    while r.info("clients")["blocked_clients"]:
        assert time.monotonic() < deadline
        time.sleep(0.005)
    r.execute_command("TRAFIKEY.CLOCK", "ADVANCE", 2000)
    assert r.get("n") == b"1"


def test_multi_exec(r: redis.Redis, fault_server: Proc) -> None:
    """Inside MULTI the queued commands are not matched; EXEC is. An error
    on EXEC ends the transaction as Valkey's refusal of EXEC does
    (EXECABORT with the reason); DROP-AFTER on EXEC runs it all."""
    add(r, "ERROR", "LOADING", "COMMAND", "incr")
    add(r, "ERROR", "LOADING", "COMMAND", "exec", "TIMES", 1)
    w = victim(fault_server)
    try:
        assert w.call("MULTI") == b"+OK\r\n"
        assert w.call("INCR", "n") == b"+QUEUED\r\n"
        assert w.call("EXEC") == (b"-EXECABORT Transaction discarded because of: LOADING Valkey is loading the "
                                  b"dataset in memory\r\n")
        assert w.call("EXEC") == b"-ERR EXEC without MULTI\r\n"
        assert w.call("MULTI") == b"+OK\r\n"
        assert w.call("INCR", "n") == b"+QUEUED\r\n"
        assert w.call("EXEC") == b"*1\r\n:1\r\n"
        add(r, "DROP-AFTER", "COMMAND", "exec")
        w.send_raw(encode("MULTI") + encode("INCR", "n") + encode("INCR", "n") + encode("EXEC"))
        assert w.read_until_closed() == b"+OK\r\n+QUEUED\r\n+QUEUED\r\n"
    finally:
        w.close()
    assert r.get("n") == b"3"


def test_moved_on_exec_discards_the_transaction(r: redis.Redis, fault_server: Proc) -> None:
    add(r, "MOVED", "127.0.0.1:7000", "COMMAND", "exec", "TIMES", 1)
    w = victim(fault_server)
    try:
        assert w.call("MULTI") == b"+OK\r\n"
        assert w.call("SET", "foo", "1") == b"+QUEUED\r\n"
        assert w.call("EXEC") == b"-MOVED %d 127.0.0.1:7000\r\n" % key_slot(b"foo")
        assert w.call("EXEC") == b"-ERR EXEC without MULTI\r\n"
    finally:
        w.close()
    assert r.exists("foo") == 0


def test_scripts_inner_calls_are_not_matched(r: redis.Redis, fault_server: Proc) -> None:
    add(r, "ERROR", "LOADING", "COMMAND", "set")
    w = victim(fault_server)
    try:
        assert w.call("EVAL", "return redis.call('SET', KEYS[1], 'x')", 1, "k") == b"+OK\r\n"
        add(r, "DROP-AFTER", "COMMAND", "eval")
        w.send_raw(encode("EVAL", "return redis.call('INCR', KEYS[1])", 1, "n"))
        assert w.read_until_closed() == b""
    finally:
        w.close()
    assert r.get("k") == b"x"
    assert r.get("n") == b"1"


def test_a_blocked_request_spends_nothing_until_it_runs(r: redis.Redis, fault_server: Proc) -> None:
    """A blocking command that waits has not run: a DROP-AFTER rule fires
    when it is served, on the run that pops."""
    add(r, "DROP-AFTER", "COMMAND", "blpop", "TIMES", 1)
    before = r.info("faults")["faults_fired_drop_after"]
    w = victim(fault_server)
    try:
        w.send_raw(encode("BLPOP", "q", 0))
        deadline = time.monotonic() + 5
        while r.info("clients")["blocked_clients"] != 1:
            assert time.monotonic() < deadline
            time.sleep(0.005)
        assert r.info("faults")["faults_fired_drop_after"] == before  # not fired yet
        r.rpush("q", "a", "b")
        assert w.read_until_closed() == b""
    finally:
        w.close()
    assert r.lrange("q", 0, -1) == [b"b"]
    assert r.execute_command("TRAFIKEY.FAULT", "LIST") == []

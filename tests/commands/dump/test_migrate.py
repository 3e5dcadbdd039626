"""MIGRATE against Valkey 9.1.2: the same requests from a Valkey and from
trafikey-server, to a Valkey target and to a trafikey-server target, give
the same replies, leave the same keys on both sides, raise the same
keyspace events and log the same DEL. While a transfer waits for its
target, trafikey-server serves its other clients.
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from helpers.aof_util import logged_runs
from helpers.keyevents import assert_same_events, keyspace, streams_with_flags
from helpers.resp_wire import Wire
from helpers.servers import Proc, start_trafikey, start_valkey

HOST = "127.0.0.1"


@pytest.fixture(scope="module")
def targets() -> Iterator[tuple[Proc, Proc]]:
    vt = start_valkey()
    try:
        tt = start_trafikey()
    except Exception:
        vt.stop()
        raise
    try:
        yield vt, tt
    finally:
        vt.stop()
        tt.stop()


def _steps(target: int, closed: int) -> list[tuple[Any, ...]]:
    t = str(target)
    return [
        ("SET", "k", "v"), ("HSET", "h", "f", "v"), ("RPUSH", "l", "a", "b"), ("SET", "ttl", "x", "EX", "1000"),
        ("ZADD", "z", "1", "m"),
        ("RPUSH", "big", *[f"element-{i}" for i in range(3000)]), ("SET", "bigs", "0123456789abcdef" * 8000),
        ("HSET", "bigh", *[f"f{i}" if j == 0 else f"v{i}" for i in range(300) for j in (0, 1)]),
        ("MIGRATE", HOST, t, "", "2", "5000", "KEYS", "big", "bigs", "bigh"),
        ("MIGRATE", HOST, t, "k", "0", "5000"), ("EXISTS", "k"),
        ("MIGRATE", HOST, t, "nokey", "0", "5000"),
        ("SET", "k", "v2"), ("MIGRATE", HOST, t, "k", "0", "5000"), ("GET", "k"),
        ("MIGRATE", HOST, t, "k", "0", "5000", "REPLACE", "COPY"), ("GET", "k"),
        ("MIGRATE", HOST, t, "", "1", "5000", "KEYS", "h", "l", "ttl", "nokey"),
        ("MIGRATE", HOST, t, "", "1", "5000", "KEYS", "nokey"),
        ("MIGRATE", HOST, t, "k", "0", "5000", "BOGUS"),
        ("MIGRATE", HOST, t, "k", "0", "5000", "KEYS", "k"),
        ("MIGRATE", HOST, t, "k", "0", "x"), ("MIGRATE", HOST, t, "k", "x", "5000"),
        ("MIGRATE", HOST, t, "k", "0", "5000", "AUTH"), ("MIGRATE", HOST, t, "k", "0", "5000", "AUTH2", "u"),
        ("MIGRATE", HOST, t, "k", "0", "5000", "AUTH", "pw"),
        ("MIGRATE", HOST, t, "k", "0", "5000", "AUTH2", "u", "pw"),
        ("MIGRATE", HOST, t, "k", "99", "5000", "REPLACE"),
        ("MIGRATE", HOST, str(closed), "k", "0", "200"),
        ("MIGRATE", HOST, t, "k", "0", "5000"),
        ("MIGRATE", HOST, t, "k", "0", "-5", "REPLACE"),
        ("MULTI",), ("SET", "m", "1"), ("MIGRATE", HOST, t, "m", "2", "5000"), ("EXISTS", "m"), ("EXEC",),
        ("SET", "s", "1"),
        ("EVAL", "return redis.call('migrate', ARGV[1], ARGV[2], KEYS[1], 2, 5000)", "1", "s", HOST, t),
        ("EVAL", "return redis.pcall('migrate', ARGV[1], ARGV[2], KEYS[1], 2, 5000)", "1", "s", HOST, t),
        ("MIGRATE", HOST, t, "z", "0", "5000", "REPLACE"),
        ("DBSIZE",),
    ]


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind((HOST, 0))
        return int(s.getsockname()[1])


def _flush(*ports: int) -> None:
    for port in ports:
        w = Wire(port)
        assert w.call("FLUSHALL") == b"+OK\r\n"
        w.close()


def _run(source: int, steps: list[tuple[Any, ...]], proto: int) -> list[bytes]:
    w = Wire(source)
    if proto == 3:
        w.call("HELLO", "3")
    try:
        return [w.call(*s) for s in steps]
    finally:
        w.close()



@pytest.mark.parametrize("proto", [2, 3], ids=["resp2", "resp3"])
def test_migrate_like_valkey(valkey_server: Proc, trafikey_server: Proc, targets: tuple[Proc, Proc],
                             proto: int) -> None:
    closed = _closed_port()
    results = []
    for source, target in ((valkey_server, targets[0]), (trafikey_server, targets[0]),
                           (valkey_server, targets[1]), (trafikey_server, targets[1])):
        _flush(source.port, target.port)
        steps = _steps(target.port, closed)
        replies = _run(source.port, steps, proto)
        results.append((replies, keyspace(source.port, (0, 1, 2)), keyspace(target.port, (0, 1, 2))))
    expected = results[0]
    for got, (source, target) in zip(results[1:], (("trafikey", "valkey"), ("valkey", "trafikey"),
                                                   ("trafikey", "trafikey")), strict=True):
        for step, want, have in zip(_steps(0, 0), expected[0], got[0], strict=True):
            assert have == want, f"{source} -> {target}: {step!r}\n valkey: {want!r}\n got:    {have!r}"
        assert got[1] == expected[1], f"{source} -> {target}: source keyspace"
        assert got[2] == expected[2], f"{source} -> {target}: target keyspace"
    first = next(i for i, s in enumerate(_steps(0, 0)) if s[0] == "MIGRATE")
    assert expected[0][first] == b"+OK\r\n" and expected[2][2][0][b"big"][0] == "list"


def test_migrate_events_like_valkey(valkey_server: Proc, trafikey_server: Proc, targets: tuple[Proc, Proc]) -> None:
    target = targets[0].port
    steps: list[tuple[Any, ...]] = [
        ("SET", "k", "v"), ("SET", "k2", "v"), ("MIGRATE", HOST, str(target), "k", "0", "5000"),
        ("MIGRATE", HOST, str(target), "nokey", "0", "5000"),
        ("MIGRATE", HOST, str(target), "", "0", "5000", "COPY", "KEYS", "k2"),
        ("MIGRATE", HOST, str(target), "", "0", "5000", "REPLACE", "KEYS", "k2", "k", "gone"),
    ]
    streams = []
    for source in (valkey_server.port, trafikey_server.port):
        _flush(target)
        streams.append(streams_with_flags((source,), "KEA", steps, 2)[0])
    for port in (valkey_server.port, trafikey_server.port):
        w = Wire(port)
        w.call("CONFIG", "SET", "notify-keyspace-events", "")
        w.close()
    assert_same_events(*streams)




def test_migrate_is_logged_as_del(targets: tuple[Proc, Proc]) -> None:
    target = str(targets[0].port)
    steps: list[tuple[Any, ...]] = [
        ("SET", "a", "1"), ("SET", "b", "2"), ("SET", "c", "3"),
        ("MIGRATE", HOST, target, "a", "0", "5000"),
        ("MIGRATE", HOST, target, "", "0", "5000", "COPY", "KEYS", "b"),
        ("MIGRATE", HOST, target, "", "0", "5000", "KEYS", "b", "c"),
        ("MIGRATE", HOST, target, "nokey", "0", "5000"),
        ("MULTI",), ("SET", "d", "4"), ("MIGRATE", HOST, target, "d", "0", "5000"), ("EXEC",),
    ]

    def migrate(port: int) -> None:
        _flush(targets[0].port)
        _run(port, steps, 2)

    v, t = logged_runs(migrate)
    assert t.log == v.log
    assert [b"DEL", b"c"] in v.log  # b was copied before: the target refuses it (BUSYKEY)


class _Silent:
    """A listener that accepts and never answers, until told to hang up."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind((HOST, 0))
        self.sock.listen(8)
        self.port = int(self.sock.getsockname()[1])
        self.conns: list[socket.socket] = []
        self.thread = threading.Thread(target=self._accept, daemon=True)
        self.thread.start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.conns.append(conn)

    def close(self) -> None:
        self.sock.close()
        for c in self.conns:
            c.close()


def test_migrate_waits_without_holding_the_server(trafikey_server: Proc) -> None:
    """A target that never answers: other clients are served meanwhile, and
    the MIGRATE ends with Valkey's timeout error, its key still here."""
    silent = _Silent()
    a, b = Wire(trafikey_server.port), Wire(trafikey_server.port)
    try:
        assert a.call("SET", "slow", "v") == b"+OK\r\n"
        a_id = a.call("CLIENT", "ID")[1:-2]
        a.send_raw(b"*6\r\n$7\r\nMIGRATE\r\n$9\r\n127.0.0.1\r\n$%d\r\n%d\r\n$4\r\nslow\r\n$1\r\n0\r\n$3\r\n300\r\n"
                   % (len(str(silent.port)), silent.port))
        assert b.call("PING") == b"+PONG\r\n"
        assert b.call("CLIENT", "LIST").count(b"cmd=migrate") == 1
        # Valkey holds the server for the transfer: nobody can unblock it.
        assert b.call("CLIENT", "UNBLOCK", a_id, "ERROR") == b":0\r\n"
        assert a.read_reply() == b"-IOERR error or timeout reading to target instance\r\n"
        assert a.call("EXISTS", "slow") == b":1\r\n"
    finally:
        a.close()
        b.close()
        silent.close()


@pytest.mark.parametrize("args", [
    ("h", "1", "", "0", "5", "KEYS", "a", "b", "c"), ("h", "1", "k", "0", "5"), ("h", "1", "k", "0", "5", "KEYS", "a"),
    ("h", "1", "", "0", "5", "AUTH", "keys", "a", "b"), ("h", "1", "", "0", "5", "AUTH2", "keys", "x", "keys", "a"),
    ("h", "1", "", "0", "5", "COPY", "REPLACE", "KEYS"), ("h", "1", "", "0", "5", "bogus", "keys", "b"),
    ("h", "1", "keys", "0", "5", "COPY"), ("h", "1", "", "0", "5"),
])
def test_migrate_keys_like_valkey(pair23: Any, args: tuple[str, ...]) -> None:
    """COMMAND GETKEYS and GETKEYSANDFLAGS find MIGRATE's keys as Valkey's
    migrateGetKeys does (and its key spec, when no KEYS word is found)."""
    pair23.check("COMMAND", "GETKEYS", "MIGRATE", *args)
    pair23.check("COMMAND", "GETKEYSANDFLAGS", "MIGRATE", *args)

"""MONITOR, SLOWLOG, LATENCY, MEMORY, CLIENT PAUSE and the per-command and
per-error INFO sections, against Valkey 9.1.2 where the reply is observable.

Durations, timestamps and client ports differ between the two servers; the
tests compare everything else (arguments, order, names, reply shapes) and
check the varying fields by their form.
"""

from __future__ import annotations

import re
import socket
import threading
import time
from collections.abc import Iterator

import pytest
import redis
from helpers.pair import Pair
from helpers.resp_wire import Wire
from helpers.servers import Proc, own_pair

# -- INFO commandstats / errorstats for the job core ------------------------------------

P = b"emq:{t}:"


def _stats(r: redis.Redis, section: str) -> dict[str, str]:
    w = Wire(r.connection_pool.connection_kwargs["port"])
    raw = w.call("INFO", section)
    w.close()
    text = raw.split(b"\r\n", 1)[1].decode()
    return dict(line.split(":", 1) for line in text.split("\r\n") if line and not line.startswith("#"))


def test_emq_refusals_are_counted(emq: redis.Redis) -> None:
    """Each refusal code of the job core is an error code in INFO errorstats,
    and a refused verb call is a failed call of that verb."""
    emq.hset(P + b"job:p", mapping={b"state": b"pending", b"attempts": b"0", b"payload": b"x"})
    emq.hset(P + b"job:a", mapping={b"state": b"active", b"attempts": b"1", b"payload": b"y"})
    emq.execute_command("CONFIG", "RESETSTAT")
    active = P + b"active"
    for job, token, code in ((b"nope", b"1", "EMQNOJOB"), (b"p", b"0", "EMQSTATE"), (b"a", b"9", "EMQLEASE"),
                             (b"a", b"9", "EMQLEASE")):
        with pytest.raises(redis.ResponseError, match=f"^{code} "):
            emq.execute_command("EMQ.COMPLETE", 2, active, P, job, token)
    assert emq.execute_command("EMQ.COMPLETE", 2, active, P, b"a", b"1") == 1
    errors = _stats(emq, "errorstats")
    assert errors == {"errorstat_EMQLEASE": "count=2", "errorstat_EMQNOJOB": "count=1",
                      "errorstat_EMQSTATE": "count=1"}
    cmd = _stats(emq, "commandstats")["cmdstat_emq.complete"]
    fields = dict(kv.split("=") for kv in cmd.split(","))
    assert (fields["calls"], fields["failed_calls"], fields["rejected_calls"]) == ("5", "4", "0")
    assert int(_stats(emq, "stats")["total_error_replies"]) == 4


def test_emq_arity_refusal_is_rejected_call(emq: redis.Redis) -> None:
    emq.execute_command("CONFIG", "RESETSTAT")
    with pytest.raises(redis.ResponseError, match="wrong number of arguments"):
        emq.execute_command("EMQ.COMPLETE")
    fields = dict(kv.split("=") for kv in _stats(emq, "commandstats")["cmdstat_emq.complete"].split(","))
    assert (fields["calls"], fields["rejected_calls"]) == ("0", "1")
    assert _stats(emq, "errorstats") == {"errorstat_ERR": "count=1"}


# -- replies compared byte for byte -------------------------------------------------------


@pytest.mark.parametrize("args", [
    ("SLOWLOG", "HELP"), ("LATENCY", "HELP"), ("MEMORY", "HELP"),
    ("SLOWLOG", "GET", "-2"), ("SLOWLOG", "GET", "x"), ("SLOWLOG", "GET", "1", "2"), ("SLOWLOG", "get", "1", "2"),
    ("SLOWLOG", "NOPE"), ("SLOWLOG",), ("LATENCY", "HISTORY", "no-such-event"), ("LATENCY", "RESET", "a", "b"),
    ("LATENCY", "HISTORY"), ("MEMORY", "USAGE", "nokey"), ("MEMORY", "USAGE", "k", "SAMPLES", "-1"),
    ("MEMORY", "USAGE", "k", "SAMPLES", "x"), ("MEMORY", "USAGE", "k", "NOPE"), ("MEMORY", "USAGE", "k", "SAMPLES"),
    ("CLIENT", "PAUSE", "x"), ("CLIENT", "PAUSE", "-1"), ("CLIENT", "PAUSE", "10", "SOME"),
    ("CLIENT", "PAUSE"), ("CLIENT", "UNPAUSE", "x"), ("MONITOR", "x"),
])
def test_replies_match(pair23: Pair, args: tuple[str, ...]) -> None:
    pair23.v.call("SET", "k", "v")
    pair23.t.call("SET", "k", "v")
    pair23.check(*args)


def test_reply_shapes(pair23: Pair) -> None:
    """Values differ (memory is an estimate); the shapes do not."""
    for w in (pair23.v, pair23.t):
        w.call("SET", "k", "v" * 100)
        w.call("HSET", "h", "f", "v")
    for args in (("MEMORY", "USAGE", "k"), ("MEMORY", "USAGE", "h", "SAMPLES", "0")):
        v, t = pair23.both(*args)
        assert v[:1] == t[:1] == b":" and int(t[1:-2]) > 0
    v, t = pair23.both("MEMORY", "STATS")
    # Valkey lists every database ever selected (db.N, a map of two
    # overhead fields); which ones depends on earlier tests, so those are
    # compared apart.
    per_db = re.compile(rb"^(db\.\d+|overhead\.hashtable\.(main|expires))$")
    assert [k for k in _keys_of(v) if not per_db.match(k)] == [k for k in _keys_of(t) if not per_db.match(k)]
    assert b"db.0" in _keys_of(v) and b"db.0" in _keys_of(t)
    v, t = pair23.both("MEMORY", "DOCTOR")
    assert v[:1] == t[:1]
    v, t = pair23.both("CONFIG", "SET", "latency-monitor-threshold", "0")
    pair23.check("LATENCY", "RESET")
    v, t = pair23.both("LATENCY", "DOCTOR")
    assert v == t  # monitoring off, nothing recorded: Valkey's fixed text


def _keys_of(raw: bytes) -> list[bytes]:
    """Top-level map keys of MEMORY STATS (RESP2 array or RESP3 map)."""
    return re.findall(rb"\r\n\$\d+\r\n([a-z0-9.\-_]+)\r\n", b"\r\n" + raw.split(b"\r\n", 1)[1])


def test_paused_valkey_and_unpause_shape(pair23: Pair) -> None:
    pair23.check("CLIENT", "PAUSE", "100", "WRITE")
    pair23.check("CLIENT", "UNPAUSE")


# -- SLOWLOG -------------------------------------------------------------------------------


@pytest.fixture
def slow_pair(pair: Pair) -> Iterator[Pair]:
    for w in (pair.v, pair.t):
        assert w.call("CONFIG", "SET", "slowlog-log-slower-than", "0", "slowlog-max-len", "128") == b"+OK\r\n"
        w.call("SLOWLOG", "RESET")
    yield pair
    for w in (pair.v, pair.t):
        w.call("CONFIG", "SET", "slowlog-log-slower-than", "10000", "slowlog-max-len", "128")
        w.call("SLOWLOG", "RESET")


def _entries(port: int) -> list[list]:
    r = redis.Redis(port=port, protocol=2)
    try:
        return r.execute_command("SLOWLOG", "GET", "-1")
    finally:
        r.close()


def test_slowlog_entries(slow_pair: Pair, valkey_server: Proc, trafikey_server: Proc) -> None:
    long_arg = "x" * 200
    keys = [f"k{i}" for i in range(40)]
    for w in (slow_pair.v, slow_pair.t):
        w.call("CLIENT", "SETNAME", "watcher")
        w.call("SET", "a", long_arg)
        w.call("DEL", *keys)
        w.call("AUTH", "nopass")  # refused: still logged, the password hidden
        w.call("HELLO", "2", "AUTH", "default", "pw")
        w.call("MULTI")
        w.call("INCR", "n")
        w.call("EXEC")  # EXEC itself is never logged (skip_slowlog), INCR is
        w.call("GET", "a")
    v, t = _entries(valkey_server.port), _entries(trafikey_server.port)
    # The entries Valkey logged, newest first, with the same arguments and names.
    assert [(e[3], e[5]) for e in t] == [(e[3], e[5]) for e in v]
    ids = [e[0] for e in t]
    assert ids == sorted(ids, reverse=True) and len(set(ids)) == len(ids)
    addr = slow_pair.t.call("CLIENT", "INFO").split(b" ")[1].split(b"=", 1)[1]
    for e in t:
        assert isinstance(e[1], int) and abs(e[1] - time.time()) < 60
        assert isinstance(e[2], int) and e[2] >= 0
        assert e[4] == addr or e[5] != b"watcher"
    argvs = [e[3] for e in t]
    assert [b"SET", b"a", b"x" * 128 + b"... (72 more bytes)"] in argvs
    assert [b"DEL"] + [k.encode() for k in keys[:30]] + [b"... (10 more arguments)"] in argvs
    assert [b"AUTH", b"(redacted)"] in argvs
    assert len(_entries_count(trafikey_server.port, 2)) == 2
    slow_pair.check("SLOWLOG", "RESET")
    assert slow_pair.check("SLOWLOG", "LEN") == b":1\r\n"  # the RESET itself


def _entries_count(port: int, n: int) -> list:
    r = redis.Redis(port=port, protocol=2)
    try:
        return r.execute_command("SLOWLOG", "GET", str(n))
    finally:
        r.close()


def test_slowlog_max_len_and_reset(slow_pair: Pair) -> None:
    for w in (slow_pair.v, slow_pair.t):
        w.call("CONFIG", "SET", "slowlog-max-len", "3")
        for i in range(10):
            w.call("SET", "k", str(i))
    slow_pair.check("SLOWLOG", "LEN")
    slow_pair.check("SLOWLOG", "RESET")
    v, t = slow_pair.both("SLOWLOG", "LEN")
    assert v == t  # the RESET is not logged after it ran... both agree either way


def test_slowlog_off(slow_pair: Pair) -> None:
    for w in (slow_pair.v, slow_pair.t):
        w.call("CONFIG", "SET", "slowlog-log-slower-than", "-1")
        w.call("SLOWLOG", "RESET")
        w.call("SET", "k", "v")
    slow_pair.check("SLOWLOG", "LEN")
    assert slow_pair.t.call("SLOWLOG", "LEN") == b":0\r\n"


# -- MONITOR -------------------------------------------------------------------------------

_LINE = re.compile(rb"^\+(\d+)\.(\d{6}) \[(\d+) ([^\]]+)\] (.*)$")


def _monitor_lines(port: int, script: list[tuple]) -> list[tuple[bytes, bytes, bytes]]:
    m = socket.create_connection(("127.0.0.1", port), timeout=10)
    m.sendall(b"*1\r\n$7\r\nMONITOR\r\n")
    assert m.recv(5) == b"+OK\r\n"
    w = Wire(port)
    addr = w.call("CLIENT", "INFO").split(b" ")[1].split(b"=", 1)[1]
    for args in script:
        w.call(*args)
    w.call("ECHO", "done")
    buf = b""
    while not buf.endswith(b'"ECHO" "done"\r\n'):
        chunk = m.recv(65536)
        assert chunk
        buf += chunk
    m.close()
    w.close()
    out = []
    for line in buf.split(b"\r\n")[:-1]:
        match = _LINE.match(line)
        assert match, line
        secs, _, db, who, args = match.groups()
        assert abs(int(secs) - time.time()) < 60
        out.append((db, b"client" if who == addr else who, args))
    return out


MONITOR_SCRIPT: list[tuple] = [
    ("SET", "k", b'a b"\\\n\r\t\x07\x08\x01\xff\x7f'),
    ("GET", "k"),
    ("AUTH", "secret"),
    ("HELLO", "2", "AUTH", "default", "pw", "SETNAME", "n"),
    ("EVAL", "redis.call('set', 'x', '1') return redis.call('get', 'x')", "0"),
    ("MULTI",), ("SET", "y", "2"), ("GET", "y"), ("EXEC",),
    ("CLIENT", "LIST"),  # admin: never shown
    ("CONFIG", "GET", "port"),  # admin
    ("SELECT", "3"), ("GET", "z"), ("SELECT", "0"),
    ("NOSUCHCOMMAND",),  # refused before it runs: not shown
    ("INCR", "k"),  # fails while running: shown
]


def test_monitor_lines(valkey_server: Proc, trafikey_server: Proc) -> None:
    v = _monitor_lines(valkey_server.port, MONITOR_SCRIPT)
    t = _monitor_lines(trafikey_server.port, MONITOR_SCRIPT)
    assert t == v
    assert (b"0", b"lua", b'"set" "x" "1"') in t


def test_monitor_twice_and_disconnect(trafikey_server: Proc) -> None:
    """A second MONITOR gets no reply (Valkey ignores it); a monitor that
    went away costs nothing: commands run and answer as before."""
    m = Wire(trafikey_server.port)
    m.send_raw(b"MONITOR\r\nMONITOR\r\n")
    assert m.read_reply() == b"+OK\r\n"
    w = Wire(trafikey_server.port)
    w.call("PING")
    assert m.read_reply().endswith(b'"PING"\r\n')  # not a second +OK
    m.close()
    for _ in range(50):
        w.call("SET", "a", "b")
    assert w.call("GET", "a") == b"$1\r\nb\r\n"
    w.close()


# -- LATENCY ---------------------------------------------------------------------------------


def test_latency_events(trafikey_server: Proc) -> None:
    """A script that runs for milliseconds with a 1 ms threshold is a
    'command' event (EVAL is not a fast command); LATEST, HISTORY and RESET
    report it in Valkey's shapes."""
    r = redis.Redis(port=trafikey_server.port)
    try:
        r.config_set("latency-monitor-threshold", 1)
        r.execute_command("LATENCY", "RESET")
        spin = "local x = 0 for i = 1, 3000000 do x = x + i end return 1"
        r.eval(spin, 0)
        latest = r.execute_command("LATENCY", "LATEST")
        assert len(latest) == 1
        event, when, ms, worst = latest[0]
        assert event == b"command" and abs(when - time.time()) < 60 and 1 <= ms == worst
        history = r.execute_command("LATENCY", "HISTORY", "command")
        assert history == [[when, ms]]
        doctor = r.execute_command("LATENCY", "DOCTOR")
        assert doctor.startswith(b"Latency spikes are observed in this Valkey instance.\n\n1. command: 1 latency")
        assert r.execute_command("LATENCY", "RESET", "command", "other") == 1
        assert r.execute_command("LATENCY", "LATEST") == []
    finally:
        r.config_set("latency-monitor-threshold", 0)
        r.close()


# -- CLIENT PAUSE ------------------------------------------------------------------------------


def _timed(port: int, args: tuple, out: dict[str, object]) -> None:
    w = Wire(port)
    out["reply"] = w.call(*args)
    out["at"] = time.monotonic()
    w.close()


@pytest.mark.parametrize("mode", ["WRITE", "ALL"])
def test_pause_holds_writes_until_unpause(trafikey_server: Proc, mode: str) -> None:
    """A write sent while clients are paused waits and then runs; it is
    not refused. Under WRITE, reads still answer meanwhile."""
    ctl = Wire(trafikey_server.port)
    ctl.call("DEL", "pk")
    monitor = Wire(trafikey_server.port)  # MONITOR clients are never paused
    assert monitor.call("MONITOR") == b"+OK\r\n"
    assert ctl.call("CLIENT", "PAUSE", "20000", mode) == b"+OK\r\n"
    result: dict[str, object] = {}
    writer = threading.Thread(target=_timed, args=(trafikey_server.port, ("SET", "pk", "v"), result))
    writer.start()
    writer.join(0.3)
    assert writer.is_alive() and "reply" not in result  # still waiting
    probe = Wire(trafikey_server.port)
    if mode == "WRITE":
        # INFO as Valkey reports a pause: the reason, the actions, the waiting client.
        info = probe.call("INFO", "clients")
        assert b"paused_reason:client_pause\r\n" in info and b"paused_actions:write\r\n" in info
        assert b"blocked_clients:1\r\n" in info
        assert 0 < int(info.split(b"paused_timeout_milliseconds:")[1].split(b"\r\n")[0]) <= 20000
        assert probe.call("GET", "pk") == b"$-1\r\n"  # reads run; the write has not
        unpaused_at = time.monotonic()
        assert probe.call("CLIENT", "UNPAUSE") == b"+OK\r\n"
    else:
        unpaused_at = time.monotonic()
        # The monitor's own reply comes first: the waiting SET runs after it.
        assert monitor.call("CLIENT", "UNPAUSE") == b"+OK\r\n"
    writer.join(10)
    seen = [monitor.read_reply() for _ in range(3 if mode == "WRITE" else 1)]
    # The probe's INFO and GET ran during the pause; the SET after it ended.
    assert [line.split(b"] ", 1)[1] for line in seen] == (
        [b'"INFO" "clients"\r\n', b'"GET" "pk"\r\n'] if mode == "WRITE" else []) + [b'"SET" "pk" "v"\r\n']
    monitor.close()
    assert result["reply"] == b"+OK\r\n" and result["at"] >= unpaused_at  # type: ignore[operator]
    assert probe.call("GET", "pk") == b"$1\r\nv\r\n"
    probe.close()
    ctl.close()


def test_pause_ends_by_itself(trafikey_server: Proc) -> None:
    w = Wire(trafikey_server.port)
    assert w.call("CLIENT", "PAUSE", "200", "WRITE") == b"+OK\r\n"
    start = time.monotonic()
    w.send_raw(b"*3\r\n$3\r\nSET\r\n$2\r\npt\r\n$1\r\n1\r\n*2\r\n$3\r\nGET\r\n$2\r\npt\r\n")
    assert w.read_reply() == b"+OK\r\n"
    assert w.read_reply() == b"$1\r\n1\r\n"  # the pipelined GET waited behind the SET
    assert time.monotonic() - start >= 0.15
    w.close()



def test_pause_holds_a_write_the_client_has_just_run(trafikey_server: Proc) -> None:
    """Dispatch remembers each client's last command lookup; a pause that
    begins after the client's SET still holds its next SET (the pause
    serves a table without the writes on its fast path)."""
    w, ctl = Wire(trafikey_server.port), Wire(trafikey_server.port)
    assert w.call("SET", "pc", "1") == b"+OK\r\n"
    assert ctl.call("CLIENT", "PAUSE", "300", "WRITE") == b"+OK\r\n"
    start = time.monotonic()
    assert w.call("SET", "pc", "2") == b"+OK\r\n"
    assert time.monotonic() - start >= 0.2
    assert ctl.call("GET", "pc") == b"$1\r\n2\r\n"
    w.close()
    ctl.close()


def test_monitor_flag_in_client_list(pair: Pair) -> None:
    """A client in MONITOR mode shows flag O, as on Valkey."""
    for w in (pair.v, pair.t):
        m = Wire(w.port)
        cid = m.call("CLIENT", "ID")[1:-2]
        assert m.call("MONITOR") == b"+OK\r\n"
        line = [x for x in w.call("CLIENT", "LIST").split(b"\n") if x.startswith(b"id=%s " % cid)]
        assert len(line) == 1 and b" flags=O " in line[0], line
        m.close()


def test_reset_leaves_monitor_mode(pair: Pair) -> None:
    """After RESET a monitor is an ordinary client again: other clients'
    commands no longer reach it."""
    for w in (pair.v, pair.t):
        m = Wire(w.port)
        assert m.call("MONITOR") == b"+OK\r\n"
        assert m.call("RESET") == b"+RESET\r\n"
        w.call("SET", "after-reset", "1")
        assert m.call("PING") == b"+PONG\r\n"  # no MONITOR line before the reply
        m.close()


def test_pause_survives_maxmemory_change(trafikey_server: Proc) -> None:
    """Setting maxmemory picks another command table; a pause in force
    still holds writes (DEL: a write maxmemory does not refuse, so one the
    maxmemory table keeps on the fast path)."""
    ctl = Wire(trafikey_server.port)
    try:
        assert ctl.call("CLIENT", "PAUSE", "20000", "WRITE") == b"+OK\r\n"
        assert ctl.call("CONFIG", "SET", "maxmemory", "1gb") == b"+OK\r\n"
        result: dict[str, object] = {}
        writer = threading.Thread(target=_timed, args=(trafikey_server.port, ("DEL", "mk"), result))
        writer.start()
        writer.join(0.3)
        assert writer.is_alive() and "reply" not in result
        assert ctl.call("CLIENT", "UNPAUSE") == b"+OK\r\n"
        writer.join(10)
        assert result["reply"] == b":0\r\n"
    finally:
        ctl.call("CONFIG", "SET", "maxmemory", "0")
        ctl.call("CLIENT", "UNPAUSE")
        ctl.close()


def test_latency_of_the_expire_cycle() -> None:
    """Active expiry that takes past latency-monitor-threshold is sampled
    as the ``expire-cycle`` event, as Valkey samples it."""
    with own_pair() as (v, t):
        events = []
        for p in (v, t):
            w = Wire(p.port)
            w.call("CONFIG", "SET", "lazyfree-lazy-expire", "no")
            for start in range(0, 300_000, 10_000):
                w.call("SADD", "big", *range(start, start + 10_000))
            w.call("CONFIG", "SET", "latency-monitor-threshold", "1")
            w.call("PEXPIRE", "big", "20")
            deadline = time.monotonic() + 5
            # DBSIZE, not EXISTS: a lookup would expire the key itself
            while w.call("DBSIZE") != b":0\r\n" and time.monotonic() < deadline:
                time.sleep(0.05)
            latest = w.call("LATENCY", "LATEST")
            events.append(b"$12\r\nexpire-cycle\r\n" in latest)
            w.close()
        assert events == [True, True]

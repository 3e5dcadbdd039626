"""Blocking scenarios run on Valkey and on trafikey-server: clients that
block, the client that wakes them, and what each one reads, compared
byte for byte (``assert_scenario``). The ``proto`` and ``sides`` fixtures
give a test both sides in RESP2 and RESP3; a module that uses them imports
them. Timeouts run on the test clock on trafikey-server (TRAFIKEY.CLOCK
ADVANCE times a client out at once) and on a short real timeout on Valkey."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from .resp_wire import Wire, encode
from .servers import Proc

T = "T"  # a timeout (seconds) the step after expects to run out
TMS = "TMS"  # the same in milliseconds


class Side:
    """One server's clients for a scenario."""

    def __init__(self, port: int, proto: int, clock: bool) -> None:
        self.port = port
        self.proto = proto
        self.clock = clock
        self.ctl = Wire(port)
        assert self.ctl.call("FLUSHALL") == b"+OK\r\n"
        if clock:
            self.ctl.call("TRAFIKEY.CLOCK", "RELEASE")
        self.conns: dict[int, Wire] = {}
        self.ids: dict[int, bytes] = {}

    def conn(self, i: int) -> Wire:
        w = self.conns.get(i)
        if w is None:
            w = self.conns[i] = Wire(self.port)
            if self.proto == 3:
                w.call("HELLO", "3")
            self.ids[i] = w.call("CLIENT", "ID")[1:-2]
        return w

    def args(self, args: tuple) -> list[bytes | str]:
        out: list[bytes | str] = []
        for a in args:
            if a == T:
                out.append("100" if self.clock else "0.05")
            elif a == TMS:
                out.append("100000" if self.clock else "50")
            elif isinstance(a, tuple) and a[0] == "id":
                self.conn(a[1])
                out.append(self.ids[a[1]])
            else:
                out.append(a)
        return out

    def info(self, field: str) -> int:
        for line in self.ctl.call("INFO", "clients").split(b"\r\n"):
            if line.startswith(field.encode() + b":"):
                return int(line.split(b":")[1])
        raise AssertionError(field)

    def blocked(self, n: int) -> None:
        deadline = time.monotonic() + 5
        while self.info("blocked_clients") != n:
            assert time.monotonic() < deadline, f"blocked_clients never reached {n}"
            time.sleep(0.005)

    def keyspace(self) -> bytes:
        out = []
        for db in (0, 9):
            self.ctl.call("SELECT", db)
            for k in sorted(_keys(self.ctl, "KEYS", "*")):
                t = self.ctl.call("TYPE", k)
                out.append(k + b" " + t)
                if t == b"+zset\r\n":
                    out.append(self.ctl.call("ZRANGE", k, "0", "-1", "WITHSCORES"))
                elif t == b"+string\r\n":
                    out.append(self.ctl.call("GET", k))
        self.ctl.call("SELECT", 0)
        return b"".join(out)

    def close(self) -> None:
        if self.clock:
            self.ctl.call("TRAFIKEY.CLOCK", "RELEASE")
        for w in self.conns.values():
            w.close()
        self.ctl.close()


def _keys(w: Wire, *args: str) -> list[bytes]:
    reply = w.call(*args)
    assert reply.startswith(b"*"), reply
    parts = reply.split(b"\r\n")
    return [parts[i] for i in range(2, len(parts) - 1, 2)]


def run(side: Side, steps: list[tuple]) -> list[bytes]:
    """The replies (and keyspace dumps) a scenario produces on one side."""
    out: list[bytes] = []
    for step in steps:
        op = step[0]
        if op == "send":  # several requests in one write, replies read later
            w = side.conn(step[1])
            w.send_raw(b"".join(encode(*side.args(req)) for req in step[2:]))
        elif op == "call":
            out.append(side.conn(step[1]).call(*side.args(step[2:])))
        elif op == "read":
            out.append(side.conn(step[1]).read_reply())
        elif op == "blocked":
            side.blocked(step[1])
        elif op == "expire":  # the T timeouts run out
            if side.clock:
                side.ctl.call("TRAFIKEY.CLOCK", "ADVANCE", "200000")
            side.blocked(step[1])
        elif op == "keys":
            out.append(side.keyspace())
        elif op == "stats":  # calls and failures of the named commands, and the error counts
            text = side.ctl.call("INFO", "commandstats").decode() + side.ctl.call("INFO", "errorstats").decode()
            for line in sorted(text.split("\r\n")):
                name = line.split(":", 1)[0]
                if name.startswith("errorstat_") or name[len("cmdstat_"):] in step[1:]:
                    fields = dict(f.split("=") for f in line.split(":", 1)[1].split(","))
                    out.append(f"{name} {fields.get('calls')} {fields.get('failed_calls')} {fields.get('count')}"
                               .encode())
        elif op == "busy":  # a client polls until a script is past busy-reply-threshold
            deadline = time.monotonic() + 5
            while True:
                reply = side.conn(step[1]).call("PING")
                if reply.startswith(b"-BUSY"):
                    out.append(reply)
                    break
                assert time.monotonic() < deadline, "the script never became busy"
                time.sleep(0.005)
        elif op == "info":
            out.append(b"%s:%d" % (step[1].encode(), side.info(step[1])))
        else:  # pragma: no cover
            raise AssertionError(op)
    return out


@pytest.fixture(params=[2, 3], ids=["resp2", "resp3"])
def proto(request: pytest.FixtureRequest) -> int:
    return request.param


@pytest.fixture
def sides(valkey_server: Proc, emq_server: Proc, proto: int) -> Iterator[tuple[Side, Side]]:
    v = Side(valkey_server.port, proto, clock=False)
    t = Side(emq_server.port, proto, clock=True)
    yield v, t
    v.close()
    t.close()


def assert_scenario(sides: tuple[Side, Side], steps: list[tuple]) -> None:
    v, t = sides
    want = run(v, steps)
    got = run(t, steps)
    for i, (a, b) in enumerate(zip(want, got, strict=False)):
        assert b == a, f"reply {i}\n valkey:   {a!r}\n trafikey: {b!r}"
    assert len(want) == len(got)

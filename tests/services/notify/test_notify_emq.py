"""Keyspace events of the job core.

A native EMQ verb announces each write of its plan, in order, with the
event Valkey raises for the plain command the specification names for
that write (ZPOPMIN, HINCRBY, HSET, ZADD, ZREM, DEL, INCR...). So:

- the native verbs on trafikey-server give the same event stream as the
  plain writes of the specification sent one by one to Valkey, and leave
  the same keyspace (the writes are worked out by hand from the spec, with
  trafikey's frozen clock and its run_id);
- the scripted twins give the same stream on trafikey-server as on Valkey;
- where a verb and its twin differ (docs/executors.md, "Keyspace events"),
  both streams are shown.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from typing import Any

import pytest
import redis
from helpers.emq_model import server_keyspace
from helpers.keyevents import Watched, readable
from helpers.resp_wire import Wire
from helpers.servers import Proc

from trafikey_server.lua import SCRIPTS

T0 = 1_700_000_000_000
P = b"emq:{q}:"
PENDING, ACTIVE, SCHEDULE, DEAD, SEQ = P + b"pending", P + b"active", P + b"schedule", P + b"dead", P + b"seq"
OTHER_RUN = b"0" * 40


def job(jid: bytes) -> bytes:
    return P + b"job:" + jid


def _prepare(port: int) -> None:
    w = Wire(port)
    assert w.call("FLUSHALL") == b"+OK\r\n"
    assert w.call("DEBUG", "SET-ACTIVE-EXPIRE", "0") == b"+OK\r\n"
    assert w.call("CONFIG", "SET", "notify-keyspace-events", "AKEnm") == b"+OK\r\n"
    w.close()


@pytest.fixture
def frozen(ntrafikey: Proc) -> Iterator[tuple[Wire, bytes]]:
    """trafikey-server's clock frozen at T0, and its run_id."""
    w = Wire(ntrafikey.port)
    assert w.call("TRAFIKEY.CLOCK", "FREEZE", str(T0)) == b":%d\r\n" % T0
    info = w.call("INFO", "server")
    run_id = re.search(rb"run_id:([0-9a-f]{40})", info)
    assert run_id is not None
    yield w, run_id.group(1)
    w.call("TRAFIKEY.CLOCK", "RELEASE")
    w.close()


def _scenario(run: bytes) -> list[tuple[tuple, list[tuple]]]:
    """(native request, the plain writes the specification names for it)."""
    t = lambda ms: str(T0 + ms)  # noqa: E731
    claim = ("EMQ.CLAIM", 3, PENDING, ACTIVE, P, 30000)

    def claimed(jid: bytes, attempts: int, at: int = 0) -> list[tuple]:
        return [("ZPOPMIN", PENDING), ("HINCRBY", job(jid), "attempts", 1),
                ("HSET", job(jid), "state", "active", "lease_epoch", run), ("ZADD", ACTIVE, t(at + 30000), jid)]

    return [
        (("EMQ.ENQUEUE", 2, PENDING, P, b"j1", b"pay1"),
         [("INCR", SEQ), ("HSET", job(b"j1"), "state", "pending", "attempts", "0", "payload", "pay1"),
          ("ZADD", PENDING, 1, b"j1")]),
        (("EMQ.ENQUEUE", 2, PENDING, P, b"*", b"pay2"),
         [("INCR", SEQ), ("HSET", job(b"2"), "state", "pending", "attempts", "0", "payload", "pay2"),
          ("ZADD", PENDING, 2, b"2")]),
        (("EMQ.ENQUEUE", 2, PENDING, P, b"j1", b"again"), []),
        (claim, claimed(b"j1", 1)),
        (("EMQ.EXTEND", 2, ACTIVE, P, b"j1", b"1", 60000),
         [("ZADD", ACTIVE, t(60000), b"j1"), ("HSET", job(b"j1"), "lease_epoch", run)]),
        # The same deadline again: ZADD changes nothing and says nothing.
        (("EMQ.EXTEND", 2, ACTIVE, P, b"j1", b"1", 60000),
         [("ZADD", ACTIVE, t(60000), b"j1"), ("HSET", job(b"j1"), "lease_epoch", run)]),
        (("EMQ.FAIL", 5, ACTIVE, PENDING, SCHEDULE, DEAD, P, b"j1", b"1", 3, 0, b"boom"),
         [("HINCRBY", job(b"j1"), "failures", 1), ("HSET", job(b"j1"), "error", "boom"), ("ZREM", ACTIVE, b"j1"),
          ("INCR", SEQ), ("HSET", job(b"j1"), "state", "pending"), ("ZADD", PENDING, 3, b"j1")]),
        (claim, claimed(b"2", 1)),
        (("EMQ.FAIL", 5, ACTIVE, PENDING, SCHEDULE, DEAD, P, b"2", b"1", 1, 0),
         [("HINCRBY", job(b"2"), "failures", 1), ("ZREM", ACTIVE, b"2"), ("HSET", job(b"2"), "state", "dead"),
          ("ZADD", DEAD, t(0), b"2")]),
        (("EMQ.FAIL", 5, ACTIVE, PENDING, SCHEDULE, DEAD, P, b"2", b"1", 1, 0), []),  # a repeated terminal failure
        (("EMQ.REPROCESS", 3, DEAD, PENDING, P, b"2"),
         [("ZREM", DEAD, b"2"), ("INCR", SEQ), ("HSET", job(b"2"), "state", "pending"), ("ZADD", PENDING, 4, b"2")]),
        (claim, claimed(b"j1", 2)),
        (("EMQ.DELAY", 3, ACTIVE, SCHEDULE, P, b"j1", b"2", 5000),
         [("ZREM", ACTIVE, b"j1"), ("HSET", job(b"j1"), "state", "scheduled"), ("ZADD", SCHEDULE, t(5000), b"j1")]),
        (("EMQ.SCHEDULE", 2, SCHEDULE, P, b"s1", b"pays", 100),
         [("HSET", job(b"s1"), "state", "scheduled", "attempts", "0", "payload", "pays"),
          ("ZADD", SCHEDULE, 100, b"s1")]),
        (("EMQ.RESCHEDULE", 2, SCHEDULE, P, b"s1", 200), [("ZADD", SCHEDULE, 200, b"s1")]),
        (("ZADD", SCHEDULE, 50, b"ghost"), [("ZADD", SCHEDULE, 50, b"ghost")]),
        (("EMQ.PROMOTE", 3, SCHEDULE, PENDING, P),
         [("ZREM", SCHEDULE, b"ghost"), ("ZREM", SCHEDULE, b"s1"), ("INCR", SEQ),
          ("HSET", job(b"s1"), "state", "pending"), ("ZADD", PENDING, 5, b"s1")]),
        (claim, claimed(b"2", 2)),
        (("EMQ.REQUEUE", 3, ACTIVE, PENDING, P, b"2", b"2"),
         [("ZREM", ACTIVE, b"2"), ("INCR", SEQ), ("HSET", job(b"2"), "state", "pending"), ("ZADD", PENDING, 6, b"2")]),
        (claim, claimed(b"s1", 1)),
        (("EMQ.EXTENDS", 2, ACTIVE, P, 10000, b"s1", b"1", b"nojob", b"1", b"s1", b"9"),
         [("ZADD", ACTIVE, t(10000), b"s1"), ("HSET", job(b"s1"), "lease_epoch", run)]),
        (("EMQ.COMPLETE", 2, ACTIVE, P, b"s1", b"1"), [("ZREM", ACTIVE, b"s1"), ("DEL", job(b"s1"))]),
        (claim, claimed(b"2", 3)),
        (("HSET", job(b"x"), "state", "active", "attempts", "1", "payload", "p", "lease_epoch", OTHER_RUN),
         [("HSET", job(b"x"), "state", "active", "attempts", "1", "payload", "p", "lease_epoch", OTHER_RUN)]),
        (("ZADD", ACTIVE, t(2), b"x", t(1), b"ghost2"), [("ZADD", ACTIVE, t(2), b"x", t(1), b"ghost2")]),
        (("EMQ.PROMOTE", 3, SCHEDULE, PENDING, P), []),  # j1 is due at T0+5000: nothing yet
        (("TRAFIKEY.CLOCK", "ADVANCE", 40000), []),
        (("EMQ.STALLED.CHECK", 4, ACTIVE, PENDING, DEAD, P, 0),
         [("ZREM", ACTIVE, b"ghost2"),
          ("ZREM", ACTIVE, b"x"), ("INCR", SEQ), ("HSET", job(b"x"), "state", "pending"), ("ZADD", PENDING, 7, b"x"),
          ("HINCRBY", job(b"2"), "stalled", 1), ("ZREM", ACTIVE, b"2"), ("HSET", job(b"2"), "state", "dead"),
          ("ZADD", DEAD, t(40000), b"2")]),
        (("EMQ.PROMOTE", 3, SCHEDULE, PENDING, P, 10),
         [("ZREM", SCHEDULE, b"j1"), ("INCR", SEQ), ("HSET", job(b"j1"), "state", "pending"),
          ("ZADD", PENDING, 8, b"j1")]),
        (claim, claimed(b"x", 2, 40000)),
        (("DEL", job(b"j1")), [("DEL", job(b"j1"))]),
        (("EMQ.CLAIM", 3, PENDING, ACTIVE, P, 30000), [("ZPOPMIN", PENDING)]),  # a ghost at the head
    ]


@pytest.mark.parametrize("proto", [2, 3], ids=["resp2", "resp3"])
def test_native_verbs_announce_their_writes(nvalkey: Proc, ntrafikey: Proc, frozen: tuple[Wire, bytes],
                                            proto: int) -> None:
    _, run_id = frozen
    _prepare(nvalkey.port)
    _prepare(ntrafikey.port)
    v, t = Watched(nvalkey.port, proto), Watched(ntrafikey.port, proto)
    try:
        total = 0
        for native, writes in _scenario(run_id):
            reply, got = t.call(*native)
            assert not reply.startswith(b"-"), (native, reply)
            want: list[bytes] = []
            for w in writes:
                wreply, events = v.call(*w)
                assert not wreply.startswith(b"-"), (w, wreply)
                want += events
            assert got == want, f"{native!r}\n plain writes: {readable(want)}\n native verb:  {readable(got)}"
            total += len(got)
        assert total > 150
    finally:
        v.close()
        t.close()
    kv, kt = (server_keyspace(redis.Redis(port=p.port)) for p in (nvalkey, ntrafikey))
    assert kt == kv


def _twin(name: str, *args: Any) -> tuple:
    s = SCRIPTS[name]
    return ("EVALSHA", s.sha1, s.numkeys, *args)


TWIN_CALLS = [
    _twin("enqueue", PENDING, P, b"j1", b"pay1"), _twin("enqueue", PENDING, P, b"*", b"pay2"),
    _twin("enqueue", PENDING, P, b"j1", b"x"), _twin("claim", PENDING, ACTIVE, P, 30000),
    _twin("extend", ACTIVE, P, b"j1", b"1", 60000),
    _twin("fail", ACTIVE, PENDING, SCHEDULE, DEAD, P, b"j1", b"1", 3, 0, b"boom"),
    _twin("claim", PENDING, ACTIVE, P, 30000), _twin("fail", ACTIVE, PENDING, SCHEDULE, DEAD, P, b"2", b"1", 1, 0),
    _twin("reprocess", DEAD, PENDING, P, b"2"), _twin("claim", PENDING, ACTIVE, P, 30000),
    _twin("delay", ACTIVE, SCHEDULE, P, b"j1", b"2", 1), _twin("schedule", SCHEDULE, P, b"s1", b"pays", 100),
    _twin("schedule", SCHEDULE, P, b"*", b"pay3", 100), ("ZADD", SCHEDULE, 50, b"ghost"), "WAIT",
    _twin("promote", SCHEDULE, PENDING, P), _twin("claim", PENDING, ACTIVE, P, 1),
    _twin("extends", ACTIVE, P, 40000, b"2", b"2", b"nojob", b"1"), _twin("claim", PENDING, ACTIVE, P, 1),
    _twin("complete", ACTIVE, P, b"s1", b"1"), _twin("claim", PENDING, ACTIVE, P, 1), ("ZADD", ACTIVE, 1, b"ghost2"),
    "WAIT", _twin("stalled.check", ACTIVE, PENDING, DEAD, P, 0),
    ("HDEL", job(b"j1"), "state"), _twin("claim", PENDING, ACTIVE, P, 1),
    _twin("counts", PENDING, ACTIVE, SCHEDULE, DEAD), _twin("state", P),
]


def _members(space: dict) -> dict:
    """Scores the scripts take from each server's own clock differ; members do not."""
    return {k: (kind, sorted(c) if kind == "zset" else c) for k, (kind, c) in space.items()}


@pytest.mark.parametrize("proto", [2, 3], ids=["resp2", "resp3"])
def test_twins_announce_as_on_valkey(nvalkey: Proc, ntrafikey: Proc, proto: int) -> None:
    streams = []
    for p in (nvalkey, ntrafikey):
        _prepare(p.port)
        w = Watched(p.port, proto)
        for s in SCRIPTS.values():
            assert w.writer.call("SCRIPT", "LOAD", s.source) == b"$40\r\n%s\r\n" % s.sha1.encode()
        out = []
        for call in TWIN_CALLS:
            if call == "WAIT":
                time.sleep(0.005)  # lets a 1 ms lease or a 1 ms delay run out
                continue
            reply, events = w.call(*call)
            out.append((call[0], call[1], reply.startswith(b"-"), events))
        w.close()
        streams.append(out)
    for (name, sha, verr, vev), (_, _, terr, tev) in zip(*streams, strict=True):
        assert (terr, tev) == (verr, vev), f"{name} {sha!r}\n valkey:   {readable(vev)}\n trafikey: {readable(tev)}"
    assert sum(len(e) for *_, e in streams[0]) > 150
    assert any(b"keymiss" in f for *_, e in streams[0] for f in e)  # the scripts' reads of missing keys
    kv, kt = (server_keyspace(redis.Redis(port=p.port)) for p in (nvalkey, ntrafikey))
    assert _members(kt) == _members(kv)

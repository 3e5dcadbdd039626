"""Where a native verb and its scripted twin announce different events
(docs/executors.md, "Keyspace events"): each test shows both streams, the
native verb on trafikey-server and the twin by EVALSHA on Valkey, from the
same keyspace. Expected streams are written out by hand from the
specification's write lists and the scripts' calls."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from helpers.keyevents import Watched, readable
from helpers.resp_wire import Wire
from helpers.servers import Proc

from trafikey_server.lua import SCRIPTS

P = b"emq:{d}:"
PENDING, ACTIVE, SCHEDULE, DEAD, SEQ = P + b"pending", P + b"active", P + b"schedule", P + b"dead", P + b"seq"
ROW = P + b"job:j"
OTHER_RUN = b"0" * 40


@pytest.fixture
def both(nvalkey: Proc, ntrafikey: Proc) -> Iterator[tuple[Watched, Watched]]:
    for p in (nvalkey, ntrafikey):
        w = Wire(p.port)
        assert w.call("FLUSHALL") == b"+OK\r\n"
        assert w.call("CONFIG", "SET", "notify-keyspace-events", "KA") == b"+OK\r\n"
        w.close()
    v, t = Watched(nvalkey.port), Watched(ntrafikey.port)
    for s in SCRIPTS.values():
        v.writer.call("SCRIPT", "LOAD", s.source)
    yield v, t
    v.close()
    t.close()


def _setup(v: Watched, t: Watched, *writes: tuple) -> None:
    for w in (v, t):
        for cmd in writes:
            assert not w.writer.call(*cmd).startswith(b"-")
        w.events()


def _stream(events: list[bytes]) -> list[tuple[bytes, bytes]]:
    """The keyspace channel's (key, event) pairs."""
    return [(ch.split(b"__:", 1)[1], ev) for ch, ev in readable(events)]


def _twin(v: Watched, name: str, *args: object) -> list[tuple[bytes, bytes]]:
    s = SCRIPTS[name]
    reply, events = v.call("EVALSHA", s.sha1, s.numkeys, *args)
    assert not reply.startswith(b"-"), reply
    return _stream(events)


def _native(t: Watched, *request: object) -> list[tuple[bytes, bytes]]:
    reply, events = t.call(*request)
    assert not reply.startswith(b"-"), reply
    return _stream(events)


def _active_row(epoch: bytes = b"") -> list[tuple]:
    fields = ("state", "active", "attempts", "1", "payload", "p") + (("lease_epoch", epoch) if epoch else ())
    return [("HSET", ROW, *fields), ("ZADD", ACTIVE, 1, b"j")]


def test_claim_pops_natively_and_removes_in_the_script(both: tuple[Watched, Watched]) -> None:
    v, t = both
    _setup(v, t, ("HSET", ROW, "state", "pending", "attempts", "0", "payload", "p"), ("ZADD", PENDING, 1, b"j"),
           ("ZADD", PENDING, 0, b"ghost"))
    assert _native(t, "EMQ.CLAIM", 3, PENDING, ACTIVE, P, 1000) == [(PENDING, b"zpopmin")]  # the ghost
    assert _twin(v, "claim", PENDING, ACTIVE, P, 1000) == [(PENDING, b"zrem")]
    assert _native(t, "EMQ.CLAIM", 3, PENDING, ACTIVE, P, 1000) == [
        (PENDING, b"zpopmin"), (PENDING, b"del"), (ROW, b"hincrby"), (ROW, b"hset"), (ACTIVE, b"zadd")]
    assert _twin(v, "claim", PENDING, ACTIVE, P, 1000) == [
        (PENDING, b"zrem"), (PENDING, b"del"), (ROW, b"hincrby"), (ROW, b"hset"), (ACTIVE, b"zadd")]


def test_extend_stamps_the_row_natively(both: tuple[Watched, Watched]) -> None:
    v, t = both
    _setup(v, t, *_active_row())
    assert _native(t, "EMQ.EXTEND", 2, ACTIVE, P, b"j", b"1", 5000) == [(ACTIVE, b"zadd"), (ROW, b"hset")]
    assert _twin(v, "extend", ACTIVE, P, b"j", b"1", 5000) == [(ACTIVE, b"zadd")]
    assert _native(t, "EMQ.EXTENDS", 2, ACTIVE, P, 9000, b"j", b"1") == [(ACTIVE, b"zadd"), (ROW, b"hset")]
    assert _twin(v, "extends", ACTIVE, P, 9000, b"j", b"1") == [(ACTIVE, b"zadd")]


def test_fail_counts_failures_natively(both: tuple[Watched, Watched]) -> None:
    v, t = both
    _setup(v, t, *_active_row())
    fail = (ACTIVE, PENDING, SCHEDULE, DEAD, P, b"j", b"1", 5, 1000, b"why")
    assert _native(t, "EMQ.FAIL", 5, *fail) == [
        (ROW, b"hincrby"), (ROW, b"hset"), (ACTIVE, b"zrem"), (ACTIVE, b"del"), (ROW, b"hset"), (SCHEDULE, b"zadd")]
    assert _twin(v, "fail", *fail) == [
        (ROW, b"hset"), (ACTIVE, b"zrem"), (ACTIVE, b"del"), (ROW, b"hset"), (SCHEDULE, b"zadd")]


def test_stalled_check_after_a_restart_counts_nothing_natively(both: tuple[Watched, Watched]) -> None:
    v, t = both
    _setup(v, t, *_active_row(OTHER_RUN))
    sweep = (ACTIVE, PENDING, DEAD, P, 0)
    assert _native(t, "EMQ.STALLED.CHECK", 4, *sweep) == [
        (ACTIVE, b"zrem"), (ACTIVE, b"del"), (SEQ, b"incrby"), (ROW, b"hset"), (PENDING, b"zadd")]
    # The script has no lease_epoch to read: the expiry counts, and with
    # max_stalled 0 the job is buried.
    assert _twin(v, "stalled.check", *sweep) == [
        (ROW, b"hincrby"), (ACTIVE, b"zrem"), (ACTIVE, b"del"), (ROW, b"hset"), (DEAD, b"zadd")]


def test_reads_announce_misses_only_in_the_script(both: tuple[Watched, Watched]) -> None:
    """With class m, a script's reads of missing keys raise ``keymiss``; a
    native verb announces its writes only."""
    v, t = both
    for w in (v, t):
        assert w.writer.call("CONFIG", "SET", "notify-keyspace-events", "Km") == b"+OK\r\n"
    _setup(v, t, ("ZADD", PENDING, 1, b"ghost"))
    assert _native(t, "EMQ.CLAIM", 3, PENDING, ACTIVE, P, 1000) == []
    assert _twin(v, "claim", PENDING, ACTIVE, P, 1000) == [(P + b"paused", b"keymiss"), (P + b"job:ghost", b"keymiss")]

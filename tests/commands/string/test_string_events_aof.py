"""Keyspace events and the append-only log of MSETEX, DELIFEQ, LCS and
SUBSTR against Valkey 9.1.2.

Events: MSETEX raises ``set`` for each key, then ``expire`` when it gives
one (an expire already past is stored and its key expires later, with
``expired``); DELIFEQ raises ``del`` only when it deleted; the reads raise
``keymiss`` for each missing key. AOF: MSETEX is logged as sent, except that
an EX, PX or EXAT that took effect becomes ``PXAT`` and its absolute time;
DELIFEQ is logged as DEL; a refused or a no-op request is not logged. The
log replays in both servers to the keyspace the live server held.
"""

from __future__ import annotations

import shutil
import tempfile
import time
from collections.abc import Iterator
from typing import Any

import pytest
from helpers.aof_util import aof_server, assert_replays, keyspace, logged, logged_beside_valkey, run_workload
from helpers.keyevents import WAIT, assert_same_events, streams_with_flags
from helpers.keyevents import keyspace as event_keyspace
from helpers.resp_wire import Wire
from helpers.servers import Proc, lazy_expiry_pair

EVENT_STEPS: list[tuple] = [
    ("MSETEX", "2", "a", "1", "b", "2"), ("MSETEX", "2", "a", "1", "c", "2", "EX", "100"),
    ("MSETEX", "1", "a", "3", "KEEPTTL"), ("MSETEX", "1", "a", "4", "NX"), ("MSETEX", "2", "a", "4", "z", "1", "XX"),
    ("MSETEX", "2", "a", "5", "b", "6", "XX", "PX", "100000"), ("MSETEX", "1", "a", "1", "EX", "0"),
    ("MSETEX", "0", "a", "1"), ("MSETEX", "2", "p", "1", "q", "2", "EXAT", "1"), ("EXISTS", "p"), ("GET", "q"),
    ("MSETEX", "1", "s", "v", "PX", "1"), WAIT, ("GET", "s"),
    ("DELIFEQ", "a", "nope"), ("DELIFEQ", "a", "5"), ("DELIFEQ", "a", "5"), ("RPUSH", "l", "x"),
    ("DELIFEQ", "l", "x"), ("LCS", "b", "c"), ("LCS", "nokey", "b"), ("LCS", "b", "nokey", "LEN"),
    ("LCS", "nokey", "nokey2", "IDX"), ("LCS", "l", "nokey"), ("SUBSTR", "b", "0", "1"), ("SUBSTR", "nokey", "0", "1"),
    ("MSETEX", "1", "l", "now a string"), ("DELIFEQ", "l", "now a string"),
]


@pytest.fixture(scope="module")
def servers() -> Iterator[tuple[Proc, Proc]]:
    """Active expiry off on both, so a key stored with a past expire is
    still there when the next request reaches it, whatever the timing."""
    with lazy_expiry_pair() as pair:
        yield pair


@pytest.mark.parametrize("proto", [2, 3], ids=["resp2", "resp3"])
def test_events_match_valkey(servers: tuple[Proc, Proc], proto: int) -> None:
    streams = streams_with_flags((servers[0].port, servers[1].port), "AKEmn", EVENT_STEPS, proto)
    assert_same_events(*streams)
    events = [e for _, _, es in streams[0] for e in es]
    for kind in (b"set", b"expire", b"expired", b"del", b"keymiss"):
        assert any(b":" + kind + b"\r\n" in e for e in events), kind
    assert event_keyspace(servers[0].port) == event_keyspace(servers[1].port)


@pytest.mark.parametrize("flags", ["E$", "Kg", "Eg", "Em", "Ex"])
def test_event_classes(servers: tuple[Proc, Proc], flags: str) -> None:
    """``set`` is a string event, ``expire`` and ``del`` generic ones."""
    assert_same_events(*streams_with_flags((servers[0].port, servers[1].port), flags, EVENT_STEPS, 2))


# -- AOF ----------------------------------------------------------------------------------

FAR = "4000000000"
WORKLOAD: list[tuple[Any, ...]] = [
    ("SET", "s", "v"), ("MSETEX", "2", "a", "1", "b", "2"), ("MSETEX", "2", "a", "1", "b", "2", "EX", "100"),
    ("MSETEX", "1", "a", "3", "keepttl"), ("MSETEX", "1", "a", "4", "nx"),
    ("MSETEX", "1", "a", "5", "xx", "px", "5000"),
    ("MSETEX", "1", "c", "5", "xx"), ("MSETEX", "1", "f", "1", "pxat", "99999999999999"),
    ("MSETEX", "2", "g", "1", "g", "2"), ("MSETEX", "1", "h", "1", "EX", "100"),
    ("MSETEX", "1", "i", "1", "EXAT", FAR), ("MSETEX", "1", "j", "1", "ExAt", "10", "PXAT", "5000000000000"),
    ("MSETEX", "1", "k", "1", "PXAT", "5000000000000", "EXAT", FAR, "NX"),
    ("MSETEX", "1", "k", "1", "EX", "0"), ("MSETEX", "0", "k", "1"),
    ("DELIFEQ", "s", "v"), ("DELIFEQ", "s", "v"), ("SET", "s2", "v", "EX", "100"), ("DELIFEQ", "s2", "x"),
    ("DELIFEQ", "s2", "v"), ("RPUSH", "l", "x"), ("DELIFEQ", "l", "x"), ("LCS", "a", "b"), ("SUBSTR", "a", "0", "1"),
    ("MULTI",), ("MSETEX", "1", "m", "1", "PX", "100000"), ("DELIFEQ", "m", "1"), ("EXEC",),
    ("EVAL", "redis.call('msetex', 1, KEYS[1], 'v', 'ex', 100); return redis.call('delifeq', KEYS[2], '2')",
     "2", "n", "b"),
    ("SELECT", "3"), ("MSETEX", "1", "o", "1", "EX", "100"),
]
# The relative expires the workload names, in ms.
_RELATIVE_MS = (100_000, 5_000, 200_000)


_times: dict[int, tuple[int, int]] = {}


def _timed(port: int, workload: list[tuple[Any, ...]]) -> list[bytes]:
    """run_workload, noting when it ran (by port) for ``_normalised``."""
    start = int(time.time() * 1000)
    replies = run_workload(port, workload)
    _times[port] = (start, int(time.time() * 1000))
    return replies


def _normalised(log: list[list[bytes]], start: int, end: int) -> list[list[bytes]]:
    """The log with each PXAT time that lies where a relative expire of the
    workload (EX 100, PX 5000...) puts it, given when the workload ran,
    replaced by a mark: the two servers ran it at different moments, so
    only these numbers may differ. Absolute ones stay as they are."""
    out = []
    for cmd in log:
        if b"PXAT" in cmd:
            i = cmd.index(b"PXAT")
            when = int(cmd[i + 1])
            if any(start + d <= when <= end + d for d in _RELATIVE_MS):
                cmd = [*cmd[: i + 1], b"<when>", *cmd[i + 2 :]]
        out.append(cmd)
    return out


def test_logged_as_valkey_logs_them() -> None:
    _times.clear()
    v, t = logged_beside_valkey(WORKLOAD, run=_timed)
    assert t.replies == v.replies
    (sv, ev), (st, et) = _times.values()
    assert _normalised(t.log, st, et) == _normalised(v.log, sv, ev)
    assert any(c[0] == b"MSETEX" and b"PXAT" in c for c in t.log)
    assert [b"DEL", b"s"] in t.log
    # Our log replays, in our server and in Valkey, to what our server held.
    assert_replays(t.dir, t.keyspace)
    shutil.rmtree(v.dir, ignore_errors=True)
    shutil.rmtree(t.dir, ignore_errors=True)


REPEATED: list[tuple[Any, ...]] = [
    ("MSETEX", "1", "a", "1", "EX", "100", "ex", "200"),
    ("MSETEX", "2", "b", "1", "c", "2", "px", "5", "NX", "PX", "9000"),
    ("MSETEX", "1", "d", "1", "EXAT", FAR, "exat", "4100000000"),
    ("MSETEX", "1", "e", "1", "PXAT", "5000000000000", "pxat", "5000000000001"),
    ("MSETEX", "1", "a", "2", "XX", "PX", "1", "PX", "9000"),
]


def test_repeated_expires_replay() -> None:
    """Valkey logs MSETEX ... EX 100 ex 200 as ``EX 100 PXAT <when>``, which
    it then refuses to replay (a syntax error); our log keeps one PXAT and
    replays, in both servers, to what our server held."""
    d = tempfile.mkdtemp(prefix="aof-str-rep-")
    t = aof_server(d, "--appendfsync", "always", "--emq-brand", "none", "--save", "")
    try:
        w = Wire(t.port)
        assert [w.call(*cmd) for cmd in REPEATED] == [b":1\r\n"] * len(REPEATED)
        w.close()
        expected = keyspace(t.port)
    finally:
        t.stop()
    log = logged(d)
    msetex = [c for c in log if c[0] == b"MSETEX"]
    assert msetex[2] == [b"MSETEX", b"1", b"d", b"1", b"PXAT", b"4100000000000"]
    assert msetex[3] == [b"MSETEX", b"1", b"e", b"1", b"PXAT", b"5000000000001"]
    assert msetex[4][:5] == [b"MSETEX", b"1", b"a", b"2", b"XX"]
    assert all(sum(a.lower() in (b"ex", b"px", b"exat", b"pxat") for a in c) == 1 for c in msetex)
    assert_replays(d, expected)
    shutil.rmtree(d, ignore_errors=True)

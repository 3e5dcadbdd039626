"""Streams in the append-only file, against Valkey: after the same stream
workload (every write command, groups and consumers, a blocked
XREADGROUP served by another client, transactions and scripts) each
server restarts from its own log, and from the other's, to the state
Valkey restores from its own (which is not quite what it held: a consumer
that never received an entry is not logged).
What each logs is compared with Valkey's too, command by command, the
delivery times Valkey writes (``TIME <ms>`` of the XCLAIMs it propagates
for reads) compared within tolerance.
"""

from __future__ import annotations

import difflib
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

import pytest
from helpers.aof_util import aof_dir, aof_server, logged, valkey_on
from helpers.resp_wire import Wire, encode, wait_blocked
from helpers.stream_diff import TOLERANCE_MS, assert_states_equal, state

NODES = ("--stream-node-max-entries", "3")  # small nodes: approximate trims log what they removed
WRITES: list[tuple] = [
    ("XADD", "s", "1-0", "f", "1"), ("XADD", "s", "2-0", "f", "2", "g", "x"), ("XADD", "s", "3-*", "f", "3"),
    ("XADD", "s", "MAXLEN", "10", "4-0", "f", "4"), ("XADD", "s", "5-0", "f", "5"), ("XADD", "s", "6-0", "f", "6"),
    ("XADD", "s", "7-0", "f", "7"), ("XADD", "s", "8-0", "f", "8"), ("XDEL", "s", "2-0", "99-0"),
    ("XADD", "t", "1-0", "a", "b"), ("XADD", "t", "2-0", "a", "b"), ("XTRIM", "t", "MAXLEN", "1"),
    ("XTRIM", "t", "MAXLEN", "1"), ("XADD", "t", "MINID", "2", "3-0", "a", "b"),
    ("XADD", "nos", "NOMKSTREAM", "1-0", "f", "v"), ("XADD", "s", "1-0", "f", "v"),
    ("XADD", "e", "MAXLEN", "0", "5-5", "f", "v"), ("XSETID", "e", "9-9", "ENTRIESADDED", "7", "MAXDELETEDID", "9-0"),
    ("XADD", "fut", "99999999999999-3", "f", "v"), ("XADD", "fut", "*", "f", "v"),
    ("XGROUP", "CREATE", "s", "g1", "0"), ("XGROUP", "CREATE", "s", "g2", "$"),
    ("XGROUP", "CREATE", "s", "g3", "3-0", "ENTRIESREAD", "2"), ("XGROUP", "CREATE", "mk", "g", "$", "MKSTREAM"),
    ("XGROUP", "CREATE", "s", "g1", "0"), ("XGROUP", "CREATECONSUMER", "s", "g1", "idle"),
    ("XGROUP", "CREATECONSUMER", "s", "g1", "gone"), ("XGROUP", "DELCONSUMER", "s", "g1", "gone"),
    ("XREADGROUP", "GROUP", "g1", "alice", "COUNT", "2", "STREAMS", "s", ">"),
    ("XREADGROUP", "GROUP", "g1", "bob", "COUNT", "2", "STREAMS", "s", ">"),
    ("XREADGROUP", "GROUP", "g1", "bob", "STREAMS", "s", "0"),
    ("XREADGROUP", "GROUP", "g3", "carol", "NOACK", "COUNT", "2", "STREAMS", "s", ">"),
    ("XREADGROUP", "GROUP", "g3", "carol", "NOACK", "STREAMS", "s", ">"),
    ("XREADGROUP", "GROUP", "g2", "dave", "STREAMS", "s", ">"),
    ("XACK", "s", "g1", "1-0"), ("XACK", "s", "g1", "1-0"),
    ("XCLAIM", "s", "g1", "erin", "0", "3-1", "TIME", "1000", "RETRYCOUNT", "5"),
    ("XCLAIM", "s", "g1", "erin", "0", "4-0", "JUSTID", "TIME", "2000"),
    ("XCLAIM", "s", "g1", "frank", "3600000", "5-0"),
    ("XCLAIM", "s", "g1", "frank", "0", "8-0", "FORCE", "TIME", "3000", "LASTID", "8-0"),
    ("XGROUP", "SETID", "s", "g2", "4-0", "ENTRIESREAD", "3"),
    ("XDEL", "s", "5-0"), ("XAUTOCLAIM", "s", "g1", "gina", "0", "0", "COUNT", "2"),
    ("XDEL", "s", "4-0"), ("XCLAIM", "s", "g1", "hank", "0", "4-0", "7-0"),
    ("XCLAIM", "s", "g1", "hank", "0", "4-0", "JUSTID"), ("XACK", "s", "g1", "4-0", "99-0"),
    ("XAUTOCLAIM", "s", "g1", "gina", "0", "0", "COUNT", "10", "JUSTID"),
    ("MULTI",), ("XADD", "m", "1-0", "f", "v"), ("XGROUP", "CREATE", "m", "g", "0"),
    ("XREADGROUP", "GROUP", "g", "c", "STREAMS", "m", ">"), ("XADD", "m", "MAXLEN", "0", "2-0", "f", "v"), ("EXEC",),
    ("EVAL", "redis.call('XADD', KEYS[1], '1-0', 'a', 'b'); redis.call('XGROUP', 'CREATE', KEYS[1], 'g', '0'); "
             "return redis.call('XREADGROUP', 'GROUP', 'g', 'c', 'NOACK', 'STREAMS', KEYS[1], '>')", "1", "ev"),
    ("XGROUP", "CREATE", "d", "g", "0", "MKSTREAM"), ("XGROUP", "DESTROY", "d", "g"),
    *[("XADD", "n", f"{i}-0", "f", str(i)) for i in range(1, 30)],
    ("XADD", "n", "MAXLEN", "~", "20", "30-0", "f", "v"),
    ("XADD", "n", "MAXLEN", "~", "5", "LIMIT", "4", "31-0", "f", "v"),
    ("XADD", "n", "MINID", "~", "20", "32-0", "f", "v"), ("XTRIM", "n", "MAXLEN", "~", "5"),
    ("XTRIM", "n", "MINID", "~", "31-0", "LIMIT", "3"), ("XTRIM", "n", "MAXLEN", "~", "100"),
    ("XADD", "n", "MAXLEN", "~", "100", "33-0", "f", "v"),
    ("XADD", "x", "1-0", "f", "v"), ("DEL", "x"), ("SELECT", "3"), ("XADD", "s", "1-0", "f", "v"),
    ("XGROUP", "CREATE", "s", "g", "0"), ("XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", ">"), ("SELECT", "0"),
]




def _workload(port: int) -> list[bytes]:
    ctl, waiter = Wire(port), Wire(port)
    replies = [ctl.call(*req) for req in WRITES]
    replies.append(ctl.call("XGROUP", "CREATE", "b", "g", "$", "MKSTREAM"))
    waiter.send_raw(encode("XREADGROUP", "GROUP", "g", "w", "BLOCK", "0", "STREAMS", "b", ">"))
    wait_blocked(ctl, 1)
    replies.append(ctl.call("XADD", "b", "1-0", "f", "v"))
    replies.append(waiter.read_reply())
    waiter.send_raw(encode("XREADGROUP", "GROUP", "g", "w2", "NOACK", "BLOCK", "0", "STREAMS", "b", ">"))
    wait_blocked(ctl, 1)
    replies.append(ctl.call("XADD", "b", "2-0", "f", "v"))
    replies.append(waiter.read_reply())
    ctl.close()
    waiter.close()
    return replies




def assert_same_log(want: list[list[bytes]], got: list[list[bytes]]) -> None:
    """Command by command; a ``TIME`` argument (a delivery time Valkey
    takes from its clock) within tolerance."""
    if len(got) != len(want):
        def key(c: list[bytes]) -> tuple:
            return tuple(b"<time>" if i and c[i - 1].upper() == b"TIME" else x for i, x in enumerate(c))

        ops = difflib.SequenceMatcher(a=[key(c) for c in want], b=[key(c) for c in got], autojunk=False)
        diff = [(tag, want[i1:i2], got[j1:j2]) for tag, i1, i2, j1, j2 in ops.get_opcodes() if tag != "equal"]
        raise AssertionError("logs differ (valkey's, then ours):\n" + "\n".join(map(repr, diff)))
    for i, (a, b) in enumerate(zip(want, got, strict=True)):
        if a != b and len(a) == len(b) and a[0].upper() == b"XCLAIM":
            at = [j + 1 for j, x in enumerate(a[:-1]) if x.upper() == b"TIME"]
            if all(a[j] == b[j] for j in range(len(a)) if j not in at) and all(
                    abs(int(a[j]) - int(b[j])) <= TOLERANCE_MS for j in at):
                continue
        assert b == a, f"logged command {i}\n valkey:   {a}\n trafikey: {b}"


def _states(port: int) -> list:
    return [state(port, 0), state(port, 3)]


@dataclass
class Run:
    """The workload once on each server, with the log on."""

    ours: str
    theirs: str
    got: list[bytes]
    want: list[bytes]
    ours_before: list
    theirs_before: list


@pytest.fixture(scope="module")
def run() -> Run:
    ours = tempfile.mkdtemp(prefix="aof-stream-")
    theirs = tempfile.mkdtemp(prefix="aof-stream-v-")
    srv = aof_server(ours, "--appendfsync", "always", "--emq-brand", "none", *NODES)
    try:
        got = _workload(srv.port)
        ours_before = _states(srv.port)
    finally:
        srv.stop()
    # Both with their defaults: the bases are RDB files, the streams' RDB
    # encodings included, and each server loads the other's below.
    v = valkey_on(theirs, "--appendonly", "yes", "--appendfsync", "always", *NODES)
    try:
        want = _workload(v.port)
        theirs_before = _states(v.port)
    finally:
        v.stop()
    return Run(ours, theirs, got, want, ours_before, theirs_before)


def test_stream_workload_replies_and_state(run: Run) -> None:
    assert run.got == run.want
    for a, b in zip(run.theirs_before, run.ours_before, strict=True):
        assert_states_equal(a, b, "before restart")


def test_stream_writes_are_logged_as_valkey_propagates_them(run: Run) -> None:
    assert_same_log(logged(run.theirs), logged(run.ours))


def test_stream_logs_restore_on_restart_and_across(run: Run) -> None:
    """Each restarts from its own log, and each loads the other's."""
    ours_copy, theirs_copy = tempfile.mkdtemp(prefix="aof-x-"), tempfile.mkdtemp(prefix="aof-xv-")
    shutil.copytree(aof_dir(run.ours), Path(theirs_copy) / "appendonlydir")
    shutil.copytree(aof_dir(run.theirs), Path(ours_copy) / "appendonlydir")
    loaded = {}
    for name, d in (("ours", run.ours), ("ours-from-valkey", ours_copy)):
        srv = aof_server(d, *NODES)
        try:
            loaded[name] = _states(srv.port)
        finally:
            srv.stop()
    for name, d in (("valkey", run.theirs), ("valkey-from-ours", theirs_copy)):
        v = valkey_on(d, "--appendonly", "yes", *NODES)
        try:
            loaded[name] = _states(v.port)
        finally:
            v.stop()
    # The reference is what Valkey restores from its own log (a consumer
    # that never got an entry, for one, is not in it).
    failures = []
    for name, after in loaded.items():
        try:
            for a, b in zip(loaded["valkey"], after, strict=True):
                assert_states_equal(a, b, f"{name} after restart")
        except AssertionError as e:
            failures.append(str(e).split("\n valkey/before")[0])
    assert not failures, "\n".join(failures)

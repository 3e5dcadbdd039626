"""RESTORE's keyspace events and its append-only log, against Valkey 9.1.2.

Events: ``restore`` (generic class) after ``new`` for the created key; with
REPLACE over a live key nothing but ``restore`` (Valkey's dbDelete raises no
event); an expiry already past with REPLACE deletes the old key with
``del``; a refused RESTORE, and DUMP of a missing key apart from its
``keymiss``, raise nothing.

The log: a relative TTL becomes absolute with ABSTTL appended, a RESTORE
whose TTL is already past is logged as the deletion it made (UNLINK under
lazyfree-lazy-server-del yes, Valkey's default) or not at all when it made
none, and refusals are not logged. Our log replays, in our server and in
Valkey, to what the servers held.
"""

from __future__ import annotations

import shutil
from typing import Any

import pytest
from helpers.aof_util import assert_replays, logged_beside_valkey
from helpers.keyevents import assert_same_events, streams_with_flags
from helpers.resp_wire import Wire
from helpers.servers import Proc

from trafikey_server.util.crc64 import crc64


def _payload(body: bytes, version: int = 80) -> bytes:
    b = body + version.to_bytes(2, "little")
    return b + crc64(b).to_bytes(8, "little")


GOOD = _payload(b"\x00\x03abc")
HASH = _payload(b"\x04\x01\x01f\x01v")

SEQUENCE: list[tuple[Any, ...]] = [
    ("DUMP", "nokey"), ("SET", "s", "v"), ("DUMP", "s"),
    ("RESTORE", "k", "0", GOOD), ("RESTORE", "k", "0", GOOD), ("RESTORE", "k", "0", GOOD, "REPLACE"),
    ("RESTORE", "h", "100000", HASH), ("RESTORE", "h", "0", HASH, "REPLACE", "ABSTTL"),
    ("RESTORE", "gone", "1", GOOD, "ABSTTL"), ("RESTORE", "s", "1", GOOD, "ABSTTL", "REPLACE"),
    ("RESTORE", "k", "-1", GOOD, "REPLACE"), ("RESTORE", "x", "0", b"junk"),
    ("RESTORE", "x", "0", _payload(b"\x63")), ("RESTORE", "x", "0", GOOD, "FREQ", "999"),
    ("EXISTS", "s", "gone", "k", "h"),
]


@pytest.mark.parametrize("proto", [2, 3], ids=["resp2", "resp3"])
@pytest.mark.parametrize("flags", ["AKEmn", "Eg", "Kg", "Ks"])
def test_restore_events_match_valkey(valkey_server: Proc, trafikey_server: Proc, proto: int, flags: str) -> None:
    streams = streams_with_flags((valkey_server.port, trafikey_server.port), flags, SEQUENCE, proto)
    try:
        assert_same_events(*streams)
    finally:
        for port in (valkey_server.port, trafikey_server.port):
            w = Wire(port)
            w.call("CONFIG", "SET", "notify-keyspace-events", "")
            w.close()
    if flags == "AKEmn":
        events = [e for _, _, es in streams[0] for e in es]
        assert any(b"restore" in e for e in events)
        assert any(b":del" in e for e in events)


WORKLOAD: list[tuple[Any, ...]] = [
    ("RESTORE", "k", "0", GOOD), ("RESTORE", "k", "0", GOOD),
    ("RESTORE", "abs", "4102444800000", GOOD, "ABSTTL"),
    ("RESTORE", "rel", "100000000", HASH),
    ("RESTORE", "gone", "1", GOOD, "ABSTTL"),
    ("SET", "old", "v"), ("RESTORE", "old", "1", GOOD, "ABSTTL", "REPLACE"),
    ("RESTORE", "k", "0", HASH, "REPLACE", "IDLETIME", "5"),
    ("RESTORE", "bad", "0", b"junk"), ("RESTORE", "bad", "-1", GOOD),
    ("MULTI",), ("RESTORE", "m", "0", GOOD), ("RESTORE", "m2", "1", GOOD, "ABSTTL"), ("EXEC",),
    ("SELECT", "3"), ("RESTORE", "k3", "0", GOOD, "FREQ", "3"),
]


def _without_times(log: list[list[bytes]]) -> list[list[bytes]]:
    """The logged commands with the absolute time of a relative TTL blanked
    (each server's own clock); everything else as written."""
    out = []
    for cmd in log:
        if cmd[0].lower() == b"restore" and cmd[1] == b"rel":
            assert int(cmd[2]) > 4_000_000_000 and cmd[-1] == b"ABSTTL"
            cmd = [*cmd[:2], b"<when>", *cmd[3:]]
        out.append(cmd)
    return out


def _blank_rel(ks: dict) -> dict:
    """A keyspace with the expiry of ``rel`` (set from each server's clock) blanked."""
    kind, value, _ = ks[(0, b"rel")]
    return {**ks, (0, b"rel"): (kind, value, None)}


def test_restore_is_logged_as_valkey_logs_it() -> None:
    v, t = logged_beside_valkey(WORKLOAD)
    assert t.replies == v.replies
    assert _blank_rel(t.keyspace) == _blank_rel(v.keyspace)
    assert _without_times(t.log) == _without_times(v.log)
    assert [b"UNLINK", b"old"] in v.log
    assert_replays(t.dir, t.keyspace)
    shutil.rmtree(v.dir, ignore_errors=True)
    shutil.rmtree(t.dir, ignore_errors=True)

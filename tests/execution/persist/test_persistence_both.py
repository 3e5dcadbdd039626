"""Snapshot and log together: which file a restart reads, and that moving
between them loses nothing.

With ``appendonly yes`` and a log on disk the log is the truth; without a
log (the first start after switching it on) the snapshot is loaded and then
written out as the log's first base; with ``appendonly no`` only the
snapshot counts. Each step restarts a real process on the same directory.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator

import pytest
import redis
from helpers.rdb_state import assert_same, populate, state
from helpers.servers import Proc, start_trafikey


def _server(d: str, appendonly: str) -> Proc:
    return start_trafikey("--dir", d, "--emq-brand", "none", "--appendonly", appendonly)


@pytest.fixture
def d() -> Iterator[str]:
    path = tempfile.mkdtemp(prefix="both-")
    yield path
    shutil.rmtree(path, ignore_errors=True)


def test_snapshot_then_log_then_back(d: str) -> None:
    p = _server(d, "no")
    try:
        r = redis.Redis(port=p.port)
        populate(r)
        assert r.save()
        first = state(p.port)
    finally:
        p.stop()

    # Switched on: no log yet, so the snapshot is loaded and becomes the base.
    p = _server(d, "yes")
    try:
        assert_same(first, state(p.port), encodings=False)
        r = redis.Redis(port=p.port)
        r.set(b"after", b"logged only")
        r.zadd(b"zsmall", {b"a": 99})
        second = state(p.port)
    finally:
        p.stop()
    assert second != first

    # The log on disk wins over the older snapshot.
    p = _server(d, "yes")
    try:
        assert_same(second, state(p.port), encodings=False)
    finally:
        p.stop()

    # With the log off, only the snapshot counts: the later writes are not in it.
    p = _server(d, "no")
    try:
        assert_same(first, state(p.port), encodings=False)
    finally:
        p.stop()


def test_both_files_restore_the_same_keyspace(d: str) -> None:
    """A snapshot taken while the log runs: each file alone restores it."""
    p = _server(d, "yes")
    try:
        r = redis.Redis(port=p.port)
        populate(r)
        r.incrbyfloat(b"f", 1.5)
        r.expire(b"s", 10_000)
        assert r.save()
        before = state(p.port)
    finally:
        p.stop()
    for appendonly in ("yes", "no"):
        p = _server(d, appendonly)
        try:
            assert_same(before, state(p.port), encodings=False)
        finally:
            p.stop()

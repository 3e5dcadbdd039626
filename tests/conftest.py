"""Shared fixtures: one trafikey-server and one Valkey for the whole session.

``pair`` gives a test a fresh connection to each, both databases flushed,
and compares their replies byte for byte.
"""

from __future__ import annotations

import atexit
import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
from hypothesis import settings

sys.path.insert(0, str(Path(__file__).resolve().parent))

from helpers.pair import Pair, fresh_pair
from helpers.servers import Proc, start_trafikey, start_valkey, start_valkey_cluster_node

# Every scratch directory and file the tests make (each server's own
# directory, files on disk, logs) goes under one of the run's, removed when
# the run ends: a run leaves nothing behind in the system's temp directory.
_SCRATCH = tempfile.mkdtemp(prefix="trafikey-tests-")
tempfile.tempdir = _SCRATCH
atexit.register(shutil.rmtree, _SCRATCH, ignore_errors=True)

# The suite is deterministic by default, so a CI run never fails on a case
# nobody has seen; TRAFIKEY_HYPOTHESIS=explore draws fresh examples.
settings.register_profile("deterministic", derandomize=True, print_blob=True)
settings.register_profile("explore", print_blob=True)
settings.load_profile("explore" if os.environ.get("TRAFIKEY_HYPOTHESIS") == "explore" else "deterministic")


@pytest.fixture(scope="session")
def valkey_server() -> Iterator[Proc]:
    p = start_valkey()
    yield p
    p.stop()


@pytest.fixture(scope="session")
def trafikey_server() -> Iterator[Proc]:
    p = start_trafikey()
    yield p
    p.stop()


@pytest.fixture(scope="module")
def cluster_node() -> Iterator[Proc]:
    """The oracle for what a cluster refuses: a one-node Valkey cluster
    owning every slot (for the slot-check tests of each module)."""
    p = start_valkey_cluster_node()
    yield p
    p.stop()


@pytest.fixture(scope="module")
def checked_server() -> Iterator[Proc]:
    """trafikey-server started with --cluster-slot-checks yes."""
    p = start_trafikey("--cluster-slot-checks", "yes")
    yield p
    p.stop()


@pytest.fixture
def pair(valkey_server: Proc, trafikey_server: Proc) -> Iterator[Pair]:
    p = fresh_pair(valkey_server.port, trafikey_server.port, 2)
    yield p
    p.close()


@pytest.fixture(params=[2, 3], ids=["resp2", "resp3"])
def pair23(request: pytest.FixtureRequest, valkey_server: Proc, trafikey_server: Proc) -> Iterator[Pair]:
    """A pair in RESP2 and again in RESP3."""
    p = fresh_pair(valkey_server.port, trafikey_server.port, request.param)
    yield p
    p.close()


@pytest.fixture(scope="session")
def emq_server() -> Iterator[Proc]:
    """A trafikey-server for job-core tests: the test clock and DEBUG (for
    DEBUG DIGEST) enabled."""
    p = start_trafikey("--enable-clock-command", "yes", "--enable-debug-command", "yes")
    yield p
    p.stop()


@pytest.fixture
def emq(emq_server: Proc) -> Iterator[redis.Redis]:
    """A redis-py client on the job-core server: keyspace flushed, clock
    back on the system time (tests freeze or move it as they need)."""
    r = redis.Redis(port=emq_server.port)
    r.flushall()
    r.execute_command("TRAFIKEY.CLOCK", "RELEASE")
    yield r
    r.execute_command("TRAFIKEY.CLOCK", "RELEASE")
    r.close()

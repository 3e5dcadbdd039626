"""The scripted job core past one machine: a three-master Valkey 9.1.2
cluster on loopback, created with ``redis-cli --cluster create``, running
the twin scripts through redis-py's ``RedisCluster`` for queues whose hash
tags land on different masters."""

from __future__ import annotations

import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator

import pytest
import redis
from helpers.servers import Proc, valkey_binary
from redis.cluster import RedisCluster

from trafikey_server.lua import SCRIPTS
from trafikey_server.util.slots import keyslot


def _free_ports(n: int) -> list[int]:
    """Ports whose cluster bus port (port + 10000) is also usable."""
    import socket

    ports: list[int] = []
    while len(ports) < n:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        if port + 10000 < 65536 and port not in ports:
            ports.append(port)
    return ports


@pytest.fixture(scope="module")
def cluster() -> Iterator[list[int]]:
    if shutil.which("redis-cli") is None:
        pytest.fail("redis-cli (Debian's redis-tools) is required: bash scripts/test.sh installs it")
    ports = _free_ports(3)
    procs = []
    try:
        for port in ports:
            d = tempfile.mkdtemp(prefix="vkc-")
            procs.append(Proc([valkey_binary(), "--port", str(port), "--bind", "127.0.0.1", "--cluster-enabled", "yes",
                               "--cluster-config-file", f"{d}/nodes.conf", "--cluster-port", str(port + 10000),
                               "--save", "", "--appendonly", "no", "--dir", d], port, cwd=d))
        out = subprocess.run(["redis-cli", "--cluster", "create", *(f"127.0.0.1:{p}" for p in ports),
                              "--cluster-replicas", "0", "--cluster-yes"], capture_output=True, text=True, timeout=60)
        assert out.returncode == 0, out.stdout + out.stderr
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            states = [redis.Redis(port=p).cluster("info")["cluster_state"] for p in ports]
            if all(s == "ok" for s in states):
                break
            time.sleep(0.2)
        else:
            raise AssertionError(f"cluster never became ok: {states}")
        yield ports
    finally:
        for p in procs:
            p.stop()


def _queues_on_every_master(rc: RedisCluster) -> list[bytes]:
    """One queue prefix per master: tags chosen so their slots fall to different nodes."""
    owners: dict[str, bytes] = {}
    i = 0
    while len(owners) < 3:
        prefix = b"emq:{q%d}:" % i
        node = rc.get_node_from_key(prefix)
        owners.setdefault(node.name, prefix)
        i += 1
    return list(owners.values())


def _run(rc: RedisCluster, name: str, prefix: bytes, *args: bytes | int) -> object:
    script = SCRIPTS[name]
    keys = script.key_names(prefix)
    return rc.evalsha(script.sha1, len(keys), *keys, *args)


def test_twins_run_on_a_three_master_cluster(cluster: list[int]) -> None:
    rc = RedisCluster(host="127.0.0.1", port=cluster[0])
    try:
        for script in SCRIPTS.values():
            rc.script_load(script.source)  # every primary
        queues = _queues_on_every_master(rc)
        assert len({keyslot(p) for p in queues}) == 3
        assert len({rc.get_node_from_key(p).name for p in queues}) == 3
        for n, prefix in enumerate(queues):
            ids = [_run(rc, "enqueue", prefix, b"*", b"payload-%d-%d" % (n, i)) for i in range(3)]
            assert ids == [b"1", b"2", b"3"]
            assert _run(rc, "counts", prefix) == [3, 0, 0, 0]
            job, payload, token = _run(rc, "claim", prefix, 60_000)  # type: ignore[misc]
            assert (job, payload, token) == (b"1", b"payload-%d-0" % n, 1)
            assert _run(rc, "state", prefix, job) == b"active"
            assert _run(rc, "fail", prefix, job, token, 1, 0, b"gave up") == b"dead"
            assert _run(rc, "reprocess", prefix, job) == 1
            for _ in range(3):
                job, _, token = _run(rc, "claim", prefix, 60_000)  # type: ignore[misc]
                assert _run(rc, "complete", prefix, job, token) == 1
            assert _run(rc, "schedule", prefix, b"later", b"p", 0) == b"later"
            assert _run(rc, "promote", prefix) == 1
            job, _, token = _run(rc, "claim", prefix, 1)  # type: ignore[misc]
            assert job == b"later"
            time.sleep(0.01)  # let the 1 ms lease run out on the real clock
            assert _run(rc, "stalled.check", prefix, 5) == [[b"later"], []]
            assert _run(rc, "counts", prefix) == [1, 0, 0, 0]
        # Each queue's keys live on the master that owns its tag's slot, and only there.
        for prefix in queues:
            owner = rc.get_node_from_key(prefix)
            for node in rc.get_primaries():
                keys = redis.Redis(host=node.host, port=node.port).keys(b"emq:*")
                mine = [k for k in keys if k.startswith(prefix)]
                assert bool(mine) == (node.name == owner.name)
    finally:
        rc.close()

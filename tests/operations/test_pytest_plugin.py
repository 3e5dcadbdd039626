"""The pytest plugin, used as a user's project uses it.

Each test writes a small project (test files, an ini file) into a scratch
directory and runs pytest on it in a separate process through ``pytester``.
When the package is installed its ``pytest11`` entry point loads the plugin;
in a source checkout that is not installed, ``-p`` names the same module.
"""

from __future__ import annotations

import os
import tomllib
from importlib.metadata import entry_points

import pytest
from helpers.servers import ROOT

pytest_plugins = ["pytester"]

PLUGIN = "trafikey_server.pytest_plugin"


def plugin_args() -> list[str]:
    installed = {ep.value for ep in entry_points(group="pytest11")}
    return [] if PLUGIN in installed else ["-p", PLUGIN]


@pytest.fixture
def project(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    monkeypatch.setenv("PYTHONPATH", str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return pytester


def run(project: pytest.Pytester, *args: str) -> pytest.RunResult:
    return project.runpytest_subprocess(*plugin_args(), "-p", "no:cacheprovider", *args, timeout=120)


def test_entry_point_declared() -> None:
    meta = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert meta["project"]["entry-points"]["pytest11"] == {"trafikey": PLUGIN}


SAMPLE = '''
import redis

Q = "emq:{jobs}:"
PENDING, ACTIVE, DEAD = Q + "pending", Q + "active", Q + "dead"


def test_keyspace_starts_empty_but_branded(trafikey):
    assert trafikey.keys("*") == [b"{emq}:version"]
    trafikey.set("left", "behind")


def test_each_test_gets_a_flushed_keyspace(trafikey):
    assert trafikey.get("left") is None
    assert trafikey.get("{emq}:version") == b"echomq:6.0.0"


def test_server_fixture(trafikey_server):
    r = redis.Redis.from_url(trafikey_server.url)
    assert r.ping()
    assert r.config_get("enable-clock-command") == {"enable-clock-command": "yes"}
    assert r.config_get("appendonly") == {"appendonly": "no"}
    r.close()


def test_lease_expires_when_the_clock_moves(trafikey, trafikey_clock):
    """A worker claims a job with a 30 s lease and goes silent; no sleeping."""
    assert trafikey.execute_command("EMQ.ENQUEUE", 2, PENDING, Q, "job-1", "payload") == b"job-1"
    job = trafikey.execute_command("EMQ.CLAIM", 3, PENDING, ACTIVE, Q, 30_000)
    assert job[0] == b"job-1" and job[1] == b"payload"

    trafikey_clock.advance(29_999)
    assert trafikey.execute_command("EMQ.STALLED.CHECK", 4, ACTIVE, PENDING, DEAD, Q, 1) == [[], []]

    trafikey_clock.advance(1)  # the deadline itself: expired
    assert trafikey.execute_command("EMQ.STALLED.CHECK", 4, ACTIVE, PENDING, DEAD, Q, 1) == [[b"job-1"], []]
    assert trafikey.zrange(PENDING, 0, -1) == [b"job-1"]
    assert trafikey.hget(Q + "job:job-1", "stalled") == b"1"


def test_clock_is_frozen_and_released(trafikey, trafikey_clock):
    t0 = trafikey_clock.now()
    assert trafikey.time() == trafikey.time()  # frozen
    assert trafikey_clock.advance(5_000) == t0 + 5_000
    assert trafikey_clock.set(1_800_000_000_000) == 1_800_000_000_000
    sec, usec = trafikey.time()
    assert sec * 1000 + usec // 1000 == 1_800_000_000_000


def test_clock_back_on_the_system_time(trafikey):
    import time

    before = time.time_ns() // 1_000_000
    server = trafikey.execute_command("TRAFIKEY.CLOCK", "GET")
    after = time.time_ns() // 1_000_000
    assert before <= server <= after


def test_keys_expire_with_the_clock(trafikey, trafikey_clock):
    trafikey.set("session", "x", px=60_000)
    trafikey_clock.advance(60_000)
    assert trafikey.get("session") == b"x"  # as Valkey: expired only once now > deadline
    trafikey_clock.advance(1)
    assert trafikey.get("session") is None


def test_asyncio_client(trafikey_async):
    import asyncio

    async def main():
        assert await trafikey_async.get("left") is None
        await trafikey_async.set("a", "1")
        return await trafikey_async.incr("a")

    assert asyncio.run(main()) == 2
    # a second event loop in the same test connects afresh
    assert asyncio.run(trafikey_async.get("a")) == b"2"
'''


def test_sample_project(project: pytest.Pytester) -> None:
    """The fixtures as a user's suite uses them, including the clock driving
    a lease expiry; tests run in file order, so state that leaked from one
    test would fail the next."""
    project.makepyfile(test_sample=SAMPLE)
    # -W error: a connection left open (an unclosed socket) fails the run
    result = run(project, "-v", "-W", "error")
    result.assert_outcomes(passed=8)
    # one session server: started once, shared by every test
    assert result.ret == 0


def test_settings_from_the_ini_file(project: pytest.Pytester) -> None:
    project.makeini("""
        [pytest]
        trafikey_brand = none
        trafikey_clock = false
        trafikey_persistence = aof
        trafikey_args = --hz 25 --maxmemory 10mb
    """)
    project.makepyfile(test_ini='''
        def test_settings(trafikey, trafikey_server):
            assert trafikey.keys("*") == []
            assert trafikey.config_get("hz") == {"hz": "25"}
            assert trafikey.config_get("maxmemory") == {"maxmemory": "10485760"}
            assert trafikey.config_get("appendonly") == {"appendonly": "yes"}
            assert trafikey.config_get("enable-clock-command") == {"enable-clock-command": "no"}
            assert (trafikey_server.dir / "appendonlydir").is_dir()

        def test_clock_refused(trafikey_clock):
            pass
    ''')
    result = run(project)
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(["*trafikey_clock needs the clock command*"])


def test_command_line_wins_over_the_ini_file(project: pytest.Pytester) -> None:
    project.makeini("""
        [pytest]
        trafikey_brand = none
    """)
    project.makepyfile(test_cli='''
        def test_brand(trafikey):
            assert trafikey.get("{emq}:version") == b"acme:1.0"
            assert trafikey.config_get("save") == {"save": "3600 1 300 100 60 10000"}
    ''')
    result = run(project, "--trafikey-brand", "acme:1.0", "--trafikey-persistence", "rdb")
    result.assert_outcomes(passed=1)


def test_bad_persistence_is_a_usage_error(project: pytest.Pytester) -> None:
    project.makepyfile(test_x="def test_x(trafikey):\n    pass\n")
    project.makeini("[pytest]\ntrafikey_persistence = sometimes\n")
    result = run(project)
    assert result.ret != 0
    result.stdout.fnmatch_lines(["*trafikey_persistence must be one of none, rdb, aof*"])


def test_readme_example(project: pytest.Pytester) -> None:
    """The README's example, as printed there, passes."""
    readme = (ROOT / "README.md").read_text()
    section = readme.split("## In a pytest suite", 1)[1]
    code = section.split("```python\n", 1)[1].split("```", 1)[0]
    assert len(code.strip().splitlines()) <= 10
    project.makepyfile(test_readme=code)
    run(project).assert_outcomes(passed=1)

"""The pytest plugin, used as a user's project uses it.

Each test writes a small project (test files, an ini file) into a scratch
directory and runs pytest on it in a separate process through ``pytester``.
When the package is installed its ``pytest11`` entry point loads the plugin;
in a source checkout that is not installed, ``-p`` names the same module.
"""

from __future__ import annotations

import os
import shlex
import signal
import subprocess
import sys
import time
import tomllib
from pathlib import Path

import pytest
from helpers.plugin_project import PLUGIN, plugin_args, run, user_project
from helpers.readme import code_blocks
from helpers.servers import ROOT

pytest_plugins = ["pytester"]


@pytest.fixture
def project(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    return user_project(pytester, monkeypatch)


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
    # -W error: a connection left open (an unclosed socket) fails the run;
    # no pytest-asyncio: the asyncio client in plain tests, as a project without it
    result = run_checked(project, "-v", "-W", "error", "-p", "no:asyncio")
    result.assert_outcomes(passed=8)
    # one session server: started once, shared by every test
    assert result.ret == 0


README_SECTION = "In a pytest suite"


def readme_examples() -> list[str]:
    """The section's python examples: sync, pytest-asyncio, anyio."""
    blocks = code_blocks(README_SECTION)
    assert len(blocks) == 3
    return blocks


def servers_under(path: Path) -> list[int]:
    """Pids of the trafikey-server processes whose command line names a
    path under ``path`` (the plugin passes its data directory, which is
    under the run's --basetemp)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"trafikey_server" in argv and any(str(path).encode() in arg for arg in argv):
            found.append(int(entry.name))
    return found


def run_checked(project: pytest.Pytester, *args: str) -> pytest.RunResult:
    """A run after which no server it started is left."""
    result = run(project, *args)
    assert servers_under(project.path) == [], result.stdout.str()
    return result


def test_readme_install_line_installs_what_the_plugin_needs() -> None:
    """The install line names an extra of this package that brings pytest
    and redis-py, the two things the fixtures import."""
    (block,) = code_blocks(README_SECTION, "sh")
    argv = shlex.split(block)
    assert argv[:2] == ["pip", "install"]
    name, extra = argv[2].rstrip("]").split("[")
    meta = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert name == meta["project"]["name"]
    needs = {req.split(">")[0].split("=")[0].strip() for req in meta["project"]["optional-dependencies"][extra]}
    assert {"pytest", "redis"} <= needs


def block_redis(project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, package: dict[str, str]) -> None:
    """A ``redis`` package first on the path of the runs that follow."""
    root = project.path / "shadow"
    for name, text in package.items():
        (root / "redis").mkdir(parents=True, exist_ok=True)
        (root / "redis" / name).write_text(text)
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(root), os.environ["PYTHONPATH"]]))


MISSING = "raise ModuleNotFoundError(\"No module named 'redis'\", name='redis')\n"


@pytest.mark.slow
def test_missing_redis_is_a_usage_error_and_starts_nothing(project: pytest.Pytester,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """The README's example where redis-py is not installed: the run stops
    before any test with what to install, and no server is left."""
    block_redis(project, monkeypatch, {"__init__.py": MISSING})
    project.makepyfile(test_readme=readme_examples()[0], test_unused="def test_plain():\n    pass\n")
    result = run_checked(project)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: the trafikey-server fixtures need redis-py*No module named 'redis'*"])
    assert 'install it with: pip install "trafikey-server[pytest]"' in result.stderr.str()
    result.stdout.no_fnmatch_line("*passed*")

    # under xdist the workers refuse, and the run stops with their reason
    result = run_checked(project, "-n", "2", "-p", "xdist")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stdout.fnmatch_lines(["*Interrupted: the trafikey-server fixtures need redis-py*"])

    # tests that do not use the fixtures run as if the plugin were not there;
    # one that asks for a fixture by name at run time stops the run the same way
    (project.path / "test_readme.py").unlink()
    project.makepyfile(test_z="def test_dynamic(request):\n    request.getfixturevalue('trafikey')\n")
    result = run_checked(project)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*the trafikey-server fixtures need redis-py*"])


@pytest.mark.slow
def test_a_server_that_fails_after_its_start_is_stopped(project: pytest.Pytester,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """redis-py importable but failing once the server runs (here: its
    client refuses to be made): the error is the test's, the server ends."""
    block_redis(project, monkeypatch, {
        "__init__.py": "class Redis:\n    def __init__(self, *a, **k):\n"
                       "        raise RuntimeError('no client today')\n",
        "asyncio.py": ""})
    project.makepyfile(test_x="def test_x(trafikey):\n    pass\n\ndef test_y(trafikey):\n    pass\n")
    result = run_checked(project)
    result.assert_outcomes(errors=2)
    result.stdout.fnmatch_lines(["*RuntimeError: no client today*"])


def test_a_killed_run_takes_its_server_along(project: pytest.Pytester) -> None:
    """SIGKILL leaves no finalizer or atexit to run: the kernel ends the
    server with its pytest process (Linux)."""
    project.makepyfile(test_hang="import time\n\ndef test_hang(trafikey):\n    time.sleep(120)\n")
    proc = project.popen([sys.executable, "-m", "pytest", *plugin_args(), "-p", "no:cacheprovider",
                          f"--basetemp={project.path / 'basetemp'}"],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while not servers_under(project.path) and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert servers_under(project.path), "the server never started"
    finally:
        proc.kill()
        proc.wait()
    deadline = time.monotonic() + 15
    while servers_under(project.path) and time.monotonic() < deadline:
        time.sleep(0.05)
    left = servers_under(project.path)
    for pid in left:
        os.kill(pid, signal.SIGKILL)
    assert left == []


ASYNC_SAMPLE = '''
import asyncio

import pytest
{marker}


def test_sync_first(trafikey):
    trafikey.set("left", "behind")


{marked}
async def test_async_starts_clean(trafikey_async):
    assert await trafikey_async.keys("*") == [b"{{emq}}:version"]
    async with trafikey_async.pipeline(transaction=True) as pipe:
        pipe.set("a", "1").incr("a")
        assert await pipe.execute() == [True, 2]
    await trafikey_async.set("left", "behind")


{marked}
async def test_pubsub_and_concurrency(trafikey_async):
    pubsub = trafikey_async.pubsub()
    await pubsub.subscribe("news")
    assert (await pubsub.get_message(timeout=5))["type"] == "subscribe"
    assert await trafikey_async.publish("news", "hi") == 1
    assert (await pubsub.get_message(timeout=5))["data"] == b"hi"
    await pubsub.aclose()
    assert sorted(await asyncio.gather(*(trafikey_async.incr("n") for _ in range(20)))) == list(range(1, 21))


def test_sync_sees_a_clean_keyspace(trafikey, trafikey_async):
    assert trafikey.get("left") is None
    # and the async client serves a plain test through asyncio.run, twice
    assert asyncio.run(trafikey_async.incr("x")) == 1
    assert asyncio.run(trafikey_async.incr("x")) == 2


{fixture}
async def seeded(trafikey_async):
    await trafikey_async.set("seed", "1")
    yield trafikey_async
    assert await trafikey_async.get("seed") == b"2"


{marked}
async def test_fixture_in_another_loop(seeded):
    assert await seeded.incr("seed") == 2


def test_no_connection_left_open(trafikey):
    """Only this test's own client is connected: each async test's
    connections were closed in their own loops, the fixture's still-open
    loop included."""
    import time

    deadline = time.monotonic() + 10
    while len(trafikey.client_list()) > 1 and time.monotonic() < deadline:
        time.sleep(0.02)
    assert [c["name"] for c in trafikey.client_list()] == [""]
'''

STRICT = ASYNC_SAMPLE.format(
    marker="import pytest_asyncio", marked="@pytest.mark.asyncio",
    fixture='@pytest_asyncio.fixture(loop_scope="module")  # a loop of its own, not the test one')
AUTO = ASYNC_SAMPLE.format(marker="", marked="", fixture="@pytest.fixture")


@pytest.mark.slow
def test_pytest_asyncio_strict_mode(project: pytest.Pytester) -> None:
    """Strict mode: marked tests, a fixture on the module's loop feeding
    tests on their own loops, and the README's pytest-asyncio example."""
    project.makeini("[pytest]\nasyncio_mode = strict\nasyncio_default_fixture_loop_scope = function\n")
    project.makepyfile(test_sample=STRICT, test_readme=readme_examples()[1])
    result = run_checked(project, "-W", "error", "-p", "asyncio")
    result.assert_outcomes(passed=7)


@pytest.mark.slow
def test_pytest_asyncio_auto_mode(project: pytest.Pytester) -> None:
    """Auto mode: unmarked async tests and a plain async fixture."""
    project.makeini("[pytest]\nasyncio_mode = auto\nasyncio_default_fixture_loop_scope = function\n")
    project.makepyfile(test_sample=AUTO, test_readme=readme_examples()[1])
    result = run_checked(project, "-W", "error", "-p", "asyncio")
    result.assert_outcomes(passed=7)


ANYIO_SAMPLE = '''
import pytest

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend():
    return "asyncio"


@pytest.fixture
async def seeded(trafikey_async):
    await trafikey_async.set("seed", "1")
    yield trafikey_async
    assert await trafikey_async.get("seed") == b"2"


async def test_async_fixture_and_test(seeded):
    assert await seeded.incr("seed") == 2


def test_sync(trafikey):
    assert trafikey.get("seed") is None


@pytest.mark.parametrize("anyio_backend", ["trio"])
async def test_trio_is_refused(trafikey_async):
    pass
'''


@pytest.mark.slow
def test_anyio(project: pytest.Pytester) -> None:
    """anyio's plugin alone (pytest-asyncio not loaded): the asyncio
    backend works; trio is refused with the reason, not a traceback
    from inside redis-py."""
    project.makepyfile(test_sample=ANYIO_SAMPLE, test_readme=readme_examples()[2])
    result = run_checked(project, "-W", "error", "-p", "no:asyncio", "-p", "anyio")
    result.assert_outcomes(passed=3, errors=1)
    result.stdout.fnmatch_lines(["*trafikey_async is a redis.asyncio client, which runs on asyncio only, not on trio*"])


XDIST_SAMPLE = '''
import os
from pathlib import Path

import pytest

SEEN = Path(__file__).parent / "seen"


def record(server, client):
    info = client.info("server")
    SEEN.mkdir(exist_ok=True)
    with open(SEEN / os.environ["PYTEST_XDIST_WORKER"], "a") as f:
        f.write(f"{{server.port}} {{server.proc.pid}} {{info['process_id']}} {{info['tcp_port']}}\\n")


@pytest.mark.parametrize("n", range({count}))
def test_sync(trafikey, trafikey_server, n):
    assert trafikey.keys("*") == [b"{{emq}}:version"]
    trafikey.set(f"k{{n}}", n)
    record(trafikey_server, trafikey)


@pytest.mark.asyncio
@pytest.mark.parametrize("n", range({count}))
async def test_async(trafikey_async, trafikey, trafikey_server, n):
    assert await trafikey_async.keys("*") == [b"{{emq}}:version"]
    await trafikey_async.set(f"a{{n}}", n)
    record(trafikey_server, trafikey)
'''


@pytest.mark.slow
def test_xdist_gives_each_worker_its_own_server(project: pytest.Pytester) -> None:
    """-n 2: two servers, one per worker, on two ports, each stopped with
    its worker; the README's asyncio example runs there too."""
    project.makeini("[pytest]\nasyncio_default_fixture_loop_scope = function\n")
    sync, asyncio = readme_examples()[:2]
    project.makepyfile(test_sample=XDIST_SAMPLE.format(count=4), test_readme=sync, test_readme_async=asyncio)
    # --dist each: every worker runs every test, so both surely start a
    # server (load balancing may hand one worker everything it records).
    result = run_checked(project, "-n", "2", "--dist", "each", "-p", "xdist", "-p", "asyncio")
    out = result.stdout.str()
    assert result.parseoutcomes().get("passed") == 20, out
    servers = {}
    for path in (project.path / "seen").iterdir():
        lines = set(path.read_text().splitlines())
        assert len(lines) == 1, (lines, out)  # one server for all of a worker's tests
        port, pid, info_pid, info_port = lines.pop().split()
        assert (info_pid, info_port) == (pid, port), out  # and the one that answered is the one it started
        servers[path.name] = (port, pid)
    assert sorted(servers) == ["gw0", "gw1"], (servers, out)
    assert len({port for port, _ in servers.values()}) == 2


@pytest.mark.slow
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


@pytest.mark.slow
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


@pytest.mark.slow
def test_bad_persistence_is_a_usage_error(project: pytest.Pytester) -> None:
    project.makepyfile(test_x="def test_x(trafikey):\n    pass\n")
    project.makeini("[pytest]\ntrafikey_persistence = sometimes\n")
    result = run(project)
    assert result.ret != 0
    result.stdout.fnmatch_lines(["*trafikey_persistence must be one of none, rdb, aof*"])


@pytest.mark.slow
def test_readme_example(project: pytest.Pytester) -> None:
    """The README's example, as printed there, passes."""
    readme = (ROOT / "README.md").read_text()
    section = readme.split("## In a pytest suite", 1)[1]
    code = section.split("```python\n", 1)[1].split("```", 1)[0]
    assert len(code.strip().splitlines()) <= 10
    project.makepyfile(test_readme=code)
    run(project).assert_outcomes(passed=1)

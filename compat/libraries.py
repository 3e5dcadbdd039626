"""The libraries the harness runs, each pinned, with how its suite is run.

A record says which source distribution to fetch, what to install beside it
(the test dependencies the library's own tooling declares, pinned where the
library pins them), which paths of the unpacked sdist hold the tests, and how
its tests are pointed at a server. ``{host}``, ``{port}`` and ``{url}`` in
``env`` and ``pytest_args`` are filled with the server under test.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace


@dataclass(frozen=True)
class Library:
    name: str
    dist: str
    version: str
    requirements: tuple[str, ...]
    paths: tuple[str, ...]
    pytest_args: tuple[str, ...] = ()
    env: dict[str, str] = field(default_factory=dict)
    # test files (or node ids) run by --subset: a fixed representative slice
    # that stays within CI's time budget
    subset: tuple[str, ...] = ()
    # directories of compat/shims put first on PYTHONPATH: stand-ins for
    # services the suite would start itself (arq starts Redis in a container)
    shims: tuple[str, ...] = ()
    # seconds one test may take before pytest-timeout fails it
    timeout: int = 60


PYTEST = ("pytest==8.4.2", "pytest-timeout==2.4.0")

# redis-py's own suite: --redis-url; modules, cluster, sentinel and TLS need
# servers this harness does not start. Its conftest's --protocol picks RESP2
# (the default) or RESP3 for every client the tests make.
REDIS_PY = Library(
    name="redis-py",
    dist="redis",
    version="8.1.0",
    # dev_requirements.txt of the sdist, the parts its tests import
    requirements=(
        "pytest-asyncio==1.2.0", "numpy", "packaging", "ujson", "uvloop<=0.21.0", "click==8.3.3",
        "invoke==2.2.0", "redis-entraid==1.2.1", "pybreaker", "aiohttp", "xxhash==3.6.0",
        "opentelemetry-api", "opentelemetry-sdk", "coverage<7.11.1", *PYTEST,
    ),
    paths=("tests",),
    pytest_args=(
        "--redis-url={url}",
        "-m", "not onlycluster and not redismod and not ssl and not replica and not onlynoncluster_redismod",
        "--ignore=tests/test_scenario", "--ignore=tests/test_multidb", "--ignore=tests/test_http",
    ),
    subset=("tests/test_commands.py",),
    timeout=30,
)

LIBRARIES: dict[str, Library] = {
    lib.name: lib
    for lib in (
        # RQ's tests connect with Redis() (localhost:6379, databases 4..16)
        # and have no setting of their own.
        Library(
            name="rq",
            dist="rq",
            version="3.0.0",
            requirements=("redis==8.1.0", "psutil==7.1.3", *PYTEST),
            paths=("tests",),
            subset=("tests/test_queue.py", "tests/test_job.py", "tests/test_registry.py"),
        ),
        # huey's Redis tests use RedisHuey() / Redis(): localhost:6379.
        Library(
            name="huey",
            dist="huey",
            version="3.5.4",
            requirements=("redis==8.1.0", *PYTEST),
            paths=("huey/tests",),
            env={"HUEY_SLOW_TESTS": "1"},
            subset=("huey/tests/test_storage.py",),
        ),
        # arq's conftest starts Redis with testcontainers and reads its host
        # and port: the shim hands it the server under test instead.
        Library(
            name="arq",
            dist="arq",
            version="0.28.0",
            requirements=(
                "redis[hiredis]==4.6.0", "dirty-equals==0.11", "msgpack==1.1.2", "pydantic==2.12.5",
                "pytest==8.4.2", "pytest-asyncio==0.23.6", "pytest-mock==3.15.1", "pytest-timeout==2.4.0",
                "pytz", "tzdata", "watchfiles",
            ),
            paths=("tests",),
            shims=("testcontainers",),
            subset=("tests/test_jobs.py", "tests/test_main.py"),
        ),
        # kombu: the Redis transport only; the integration tests read
        # REDIS_HOST and REDIS_6379_TCP.
        Library(
            name="kombu",
            dist="kombu",
            version="5.7.0",
            requirements=("redis==8.1.0", "hypothesis<7", "pytest-freezer==0.4.9", "pytest==9.1.1",
                          "pytest-timeout==2.4.0"),
            paths=("t/integration/test_redis.py", "t/integration/test_redis_brpop_qos.py"),
            env={"REDIS_HOST": "{host}", "REDIS_6379_TCP": "{port}"},
            subset=("t/integration/test_redis.py",),
        ),
        REDIS_PY,
        replace(REDIS_PY, name="redis-py-resp3", pytest_args=(*REDIS_PY.pytest_args, "--protocol=3"),
                subset=("tests/test_asyncio/test_commands.py",)),
    )
}

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
    # a directory of compat/shims whose files are laid over the unpacked
    # sdist before each run: the project's own stand-ins for test support
    # files (conftest.py, helpers) that the sdist leaves out; a file the sdist
    # ships is never replaced
    overlay: str = ""
    # seconds one test may take before pytest-timeout fails it
    timeout: int = 60


PYTEST = ("pytest==8.4.2", "pytest-timeout==2.4.0")

# redis-py's own suite: --redis-url; modules, cluster, sentinel and TLS need
# servers this harness does not start. redis-py 8 speaks RESP3 unless told
# otherwise; its conftest's --protocol=2 makes every client of the tests
# speak RESP2, the second record.
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
        # SAQ: no sdist ships tests/helpers.py (queue factories the tests
        # import), so the overlay supplies one; its PostgreSQL cases skip (no
        # PostgreSQL here), and so do the HTTP-proxy cases over PostgreSQL.
        Library(
            name="saq",
            dist="saq",
            version="0.26.4",
            # setup.py's "dev" extra, the parts its tests import
            requirements=(
                "redis==7.4.1", "aiohttp", "aiohttp_basicauth", "psycopg[binary,pool]>=3.2.0", "pandas",
                "time-machine", "starlette", "httpx", *PYTEST,
            ),
            paths=("tests",),
            overlay="saq",
            subset=("tests/test_queue.py", "tests/test_job.py"),
        ),
        # dramatiq: no sdist ships tests/conftest.py or tests/common.py, so
        # the overlay supplies the fixtures and helpers. Only the files that
        # touch Redis are run: the Redis broker, the results and rate-limit
        # backends (their fixtures give the Redis backends, not the stub or
        # memcached ones), the composition tests that store results, and the
        # CLI and its file watcher (their workers use a RedisBroker). The
        # StubBroker, RabbitMQ and encoder tests never reach a server.
        Library(
            name="dramatiq",
            dist="dramatiq",
            version="2.2.1",
            # the "test" dependency group, hiredis from "dev", and the lowest
            # watchdog of the "watch" extra: under watchdog 7 the CLI's file
            # watcher misses the touch test_watch makes, on Valkey as well
            requirements=("redis==8.1.0", "hiredis", "watchdog==6.0.0", *PYTEST),
            paths=(
                "tests/test_redis.py", "tests/test_results.py", "tests/test_composition.py",
                "tests/test_barrier.py", "tests/test_bucket_rate_limiter.py",
                "tests/test_concurrent_rate_limiter.py", "tests/test_window_rate_limiter.py",
                "tests/test_cli.py", "tests/test_watch.py",
            ),
            # its addopts only ask for coverage (pytest-cov, not installed)
            pytest_args=("-o", "addopts="),
            overlay="dramatiq",
            # test_redis_dead_lettered_messages_are_cleaned_up pushes 16,000
            # messages through a worker: about 35 s on an idle machine
            timeout=180,
            # the results and rate-limit backends whole, and the Redis broker's
            # cases that take a second or two (not the ones that push 16,000
            # messages or wait out a reconnect)
            subset=(
                "tests/test_results.py", "tests/test_barrier.py", "tests/test_concurrent_rate_limiter.py",
                "tests/test_bucket_rate_limiter.py",
                *(f"tests/test_redis.py::test_redis_{t}" for t in (
                    "actors_can_be_sent_messages", "actors_retry_with_backoff_on_failure",
                    "actors_can_have_their_messages_delayed", "messages_can_be_dead_lettered",
                    "messages_belonging_to_missing_actors_are_rejected", "requeues_unhandled_messages_on_shutdown",
                    "requeues_unhandled_delay_messages_on_shutdown", "broker_can_join_with_timeout",
                    "broker_can_flush_queues", "broker_can_connect_via_url",
                    "consumer_nack_does_not_raise_on_missing_id", "join_race_condition",
                )),
            ),
        ),
        # taskiq-redis: of all its sdists only 0.0.1 to 0.0.4 (2022) ship
        # tests (the result backend's, over HSET and HMGET); every later one
        # ships none. Its conftest reads TEST_REDIS_URL. Pinned with the
        # taskiq, redis client and anyio of its day.
        Library(
            name="taskiq-redis",
            dist="taskiq-redis",
            version="0.0.4",
            requirements=("taskiq==0.0.7", "redis==4.3.4", "pydantic<2", "anyio==3.6.1", *PYTEST),
            paths=("taskiq_redis/tests",),
            env={"TEST_REDIS_URL": "{url}"},
            subset=("taskiq_redis/tests",),
        ),
        REDIS_PY,
        replace(REDIS_PY, name="redis-py-resp2", pytest_args=(*REDIS_PY.pytest_args, "--protocol=2"),
                subset=("tests/test_asyncio/test_commands.py",)),
    )
}

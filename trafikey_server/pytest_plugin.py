"""pytest fixtures: a trafikey-server for the session, a clean keyspace per test.

Installed with the package (entry point ``pytest11``), so a project that
``pip install``s trafikey-server gets the fixtures without a conftest:

- ``trafikey_server`` (session): a server process on a free loopback port;
- ``trafikey`` / ``trafikey_async``: a redis-py client (sync / asyncio) on
  a flushed keyspace, brand key restored, clock back on the system time;
- ``trafikey_clock``: the server's clock, frozen for the test until it
  moves it (TRAFIKEY.CLOCK), so lease expiry needs no sleeping;
- ``trafikey_faults``: fault rules (TRAFIKEY.FAULT) for the test, all
  deleted after it: errors, lost or cut replies, delays;
- ``trafikey_snapshot`` (session): named snapshots of the keyspace
  (TRAFIKEY.SNAPSHOT), to load a dataset once and restore it per test.

Settings come from the ini file (``[pytest]`` / ``[tool.pytest.ini_options]``)
or the command line, the command line winning: ``trafikey_brand``,
``trafikey_clock``, ``trafikey_persistence`` and ``trafikey_args``.

redis-py is imported only when a fixture runs, so merely having the package
installed never breaks a test run that does not use them.
"""

from __future__ import annotations

import asyncio
import shlex
import socket
import subprocess
import sys
import time
import weakref
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from .util.procs import free_port

BRAND_KEY = "{emq}:version"
PERSISTENCE = ("none", "rdb", "aof")
START_TIMEOUT = 30.0  # seconds: how long a starting server may take to answer


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("trafikey", "trafikey-server fixtures")
    group.addoption("--trafikey-brand", default=None, metavar="BRAND",
                    help="the job-core brand the server writes at start ('none' for none)")
    group.addoption("--trafikey-clock", default=None, choices=("yes", "no"),
                    help="start the server with TRAFIKEY.CLOCK enabled (default yes)")
    group.addoption("--trafikey-persistence", default=None, choices=PERSISTENCE,
                    help="none (default), rdb (Valkey's save rules) or aof (appendonly yes)")
    group.addoption("--trafikey-args", default=None, metavar="ARGS",
                    help="more server options, as on its command line: '--hz 100 --maxmemory 1gb'")
    parser.addini("trafikey_brand", "the job-core brand the server writes at start ('none' for none)")
    parser.addini("trafikey_clock", "start the server with TRAFIKEY.CLOCK enabled", type="bool", default=True)
    parser.addini("trafikey_persistence", "none, rdb or aof", default="none")
    parser.addini("trafikey_args", "more server options, as on its command line", type="args", default=[])


class TrafikeyServer:
    """A trafikey-server process the fixtures started; ``stop()`` ends it."""

    def __init__(self, argv: list[str], port: int, directory: Path, clock: bool) -> None:
        self.host = "127.0.0.1"
        self.port = port
        self.dir = directory
        self.argv = argv
        self.clock_enabled = clock
        self.brand: str | None = None  # the brand key's value after start, if any
        self.log_path = directory / "trafikey-server.log"
        with open(self.log_path, "ab") as log:
            self.proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, cwd=directory)

    @property
    def url(self) -> str:
        return f"redis://{self.host}:{self.port}/0"

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def client(self, **kwargs: Any) -> Any:
        import redis

        return redis.Redis(host=self.host, port=self.port, **kwargs)

    def wait_ready(self, timeout: float = START_TIMEOUT) -> bool:
        """True once the server answers PING; False if the process died."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                return False
            try:
                with socket.create_connection((self.host, self.port), timeout=1) as s:
                    s.sendall(b"PING\r\n")
                    if s.recv(16).startswith(b"+PONG"):
                        return True
            except OSError:
                pass
            time.sleep(0.05)
        raise RuntimeError(f"trafikey-server did not answer within {timeout}s:\n{self.log()}")

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def __repr__(self) -> str:
        return f"<TrafikeyServer {self.url} pid={self.proc.pid}>"


def _setting(config: pytest.Config, name: str) -> Any:
    value = config.getoption(name)
    return config.getini(name) if value is None else value


def server_argv(config: pytest.Config, port: int, directory: Path) -> tuple[list[str], bool]:
    """The command line the settings ask for, and whether the clock is on."""
    clock = _setting(config, "trafikey_clock")
    clock = clock if isinstance(clock, bool) else clock == "yes"
    persistence = _setting(config, "trafikey_persistence")
    if persistence not in PERSISTENCE:
        raise pytest.UsageError(f"trafikey_persistence must be one of {', '.join(PERSISTENCE)}, not {persistence!r}")
    argv = [sys.executable, "-m", "trafikey_server", "--port", str(port), "--bind", "127.0.0.1",
            "--dir", str(directory), "--enable-clock-command", "yes" if clock else "no",
            "--enable-fault-command", "yes"]
    if persistence != "rdb":
        argv += ["--save", ""]
    argv += ["--appendonly", "yes" if persistence == "aof" else "no"]
    brand = _setting(config, "trafikey_brand")
    if brand:
        argv += ["--emq-brand", brand]
    extra = _setting(config, "trafikey_args")
    argv += shlex.split(extra) if isinstance(extra, str) else list(extra)
    return argv, clock


def start_server(config: pytest.Config, directory: Path, attempts: int = 3) -> TrafikeyServer:
    """Start and wait; a port taken between choosing and binding it is
    chosen again."""
    for _ in range(attempts):
        port = free_port()
        argv, clock = server_argv(config, port, directory)
        server = TrafikeyServer(argv, port, directory, clock)
        if server.wait_ready():
            client = server.client(decode_responses=True)
            server.brand = client.get(BRAND_KEY)
            client.close()
            return server
        if "Address already in use" not in server.log():
            break
    raise RuntimeError(f"trafikey-server exited at start ({' '.join(argv)}):\n{server.log()}")


@pytest.fixture(scope="session")
def trafikey_server(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[
        TrafikeyServer]:
    """One server for the whole session; its data directory is a temporary one."""
    server = start_server(request.config, tmp_path_factory.mktemp("trafikey"))
    yield server
    server.stop()


def reset(server: TrafikeyServer) -> None:
    """The keyspace a fresh server has: empty but for the brand key, and
    the clock on the system time."""
    client = server.client()
    try:
        client.flushall()
        if server.brand is not None:
            client.set(BRAND_KEY, server.brand)
        if server.clock_enabled:
            client.execute_command("TRAFIKEY.CLOCK", "RELEASE")
    finally:
        client.close()


@pytest.fixture
def trafikey(trafikey_server: TrafikeyServer) -> Iterator[Any]:
    """A redis-py client on a reset keyspace (replies as bytes)."""
    reset(trafikey_server)
    client = trafikey_server.client()
    yield client
    client.close()


def _async_client(server: TrafikeyServer) -> Any:
    """A ``redis.asyncio.Redis`` that closes its own connections when the
    event loop they belong to ends: a loop that ends (``asyncio.run``,
    pytest-asyncio) cancels its pending tasks and lets them finish, and a
    task started with the first connection in each loop closes the client
    then, in that loop, the only place where it can."""
    import redis.asyncio
    from redis.asyncio.connection import Connection

    watched: weakref.WeakSet[asyncio.AbstractEventLoop] = weakref.WeakSet()
    holder: list[Any] = []
    tasks: set[asyncio.Task[None]] = set()  # a task nothing refers to may be collected

    async def close_when_the_loop_ends() -> None:
        try:
            await asyncio.Future()
        finally:
            await holder[0].connection_pool.disconnect()

    class ClosingConnection(Connection):
        def _connection_arguments(self) -> Mapping[str, Any]:
            loop = asyncio.get_running_loop()
            if loop not in watched:
                watched.add(loop)
                task = loop.create_task(close_when_the_loop_ends())
                tasks.add(task)
                task.add_done_callback(tasks.discard)
            return super()._connection_arguments()

    pool = redis.asyncio.ConnectionPool(connection_class=ClosingConnection, host=server.host, port=server.port)
    holder.append(redis.asyncio.Redis(connection_pool=pool))
    return holder[0]


@pytest.fixture
def trafikey_async(trafikey_server: TrafikeyServer) -> Any:
    """A ``redis.asyncio.Redis`` on a reset keyspace; it connects in the
    event loop of the test that awaits it, and closes with that loop."""
    reset(trafikey_server)
    return _async_client(trafikey_server)


class ServerClock:
    """The server's clock (TRAFIKEY.CLOCK), in milliseconds since the epoch."""

    def __init__(self, client: Any) -> None:
        self._client = client

    def _call(self, *args: object) -> int:
        return int(self._client.execute_command("TRAFIKEY.CLOCK", *args))

    def now(self) -> int:
        return self._call("GET")

    def freeze(self, at_ms: int | None = None) -> int:
        return self._call("FREEZE") if at_ms is None else self._call("FREEZE", at_ms)

    def advance(self, ms: int) -> int:
        """Move time forward by ``ms``; returns the new time."""
        return self._call("ADVANCE", ms)

    def set(self, at_ms: int) -> int:
        return self._call("SET", at_ms)

    def release(self) -> int:
        """Back to the system time."""
        return self._call("RELEASE")


@pytest.fixture
def trafikey_clock(trafikey: Any, trafikey_server: TrafikeyServer) -> Iterator[ServerClock]:
    """The server's clock, frozen at the test's start; released afterwards."""
    if not trafikey_server.clock_enabled:
        pytest.fail("trafikey_clock needs the clock command: set trafikey_clock = true (or --trafikey-clock yes)",
                    pytrace=False)
    client = trafikey_server.client()
    clock = ServerClock(client)
    clock.freeze()
    yield clock
    clock.release()
    client.close()


class ServerFaults:
    """The server's fault rules (TRAFIKEY.FAULT). Each method adds one rule
    and returns its id; ``command``, ``key`` (a glob), ``clientname``,
    ``times`` and ``probability`` choose the requests it fires on, as
    TRAFIKEY.FAULT ADD's options do."""

    def __init__(self, client: Any) -> None:
        self._client = client

    def add(self, kind: str, arg: object = None, *, command: str | None = None, key: str | None = None,
            clientname: str | None = None, times: int | None = None, probability: float | None = None) -> int:
        args: list[object] = ["ADD", kind] + ([] if arg is None else [arg])
        for option, value in (("COMMAND", command), ("KEY", key), ("CLIENTNAME", clientname), ("TIMES", times),
                              ("PROBABILITY", probability)):
            if value is not None:
                args += [option, value]
        return int(self._client.execute_command("TRAFIKEY.FAULT", *args))

    def error(self, text: str, **match: Any) -> int:
        """Answer ``-text`` instead of running the command (LOADING, BUSY,
        OOM, READONLY, ... alone stand for the server's own text)."""
        return self.add("ERROR", text, **match)

    def moved(self, address: str, **match: Any) -> int:
        return self.add("MOVED", address, **match)

    def ask(self, address: str, **match: Any) -> int:
        return self.add("ASK", address, **match)

    def drop(self, **match: Any) -> int:
        """Close the connection; the command does not run."""
        return self.add("DROP", **match)

    def drop_after(self, **match: Any) -> int:
        """Run the command, then close the connection: a lost reply."""
        return self.add("DROP-AFTER", **match)

    def cut(self, nbytes: int, **match: Any) -> int:
        """Run the command, send ``nbytes`` of its reply, then close."""
        return self.add("CUT", nbytes, **match)

    def delay(self, ms: int, **match: Any) -> int:
        """Run the command, hold its reply ``ms`` milliseconds of the
        server's clock (a frozen clock holds it until moved)."""
        return self.add("DELAY", ms, **match)

    def list(self) -> list[dict[str, Any]]:
        """Every rule, as dicts with str keys (values as the server sent them)."""
        rules = []
        for entry in self._client.execute_command("TRAFIKEY.FAULT", "LIST"):
            if isinstance(entry, dict):
                rules.append({k.decode() if isinstance(k, bytes) else k: v for k, v in entry.items()})
            else:
                rules.append({entry[i].decode(): entry[i + 1] for i in range(0, len(entry), 2)})
        return rules

    def delete(self, *ids: int) -> int:
        return int(self._client.execute_command("TRAFIKEY.FAULT", "DEL", *ids))

    def reset(self) -> None:
        self._client.execute_command("TRAFIKEY.FAULT", "RESET")


@pytest.fixture
def trafikey_faults(trafikey: Any, trafikey_server: TrafikeyServer) -> Iterator[ServerFaults]:
    """Fault rules for the test; every rule is deleted afterwards."""
    client = trafikey_server.client()
    faults = ServerFaults(client)
    faults.reset()
    yield faults
    faults.reset()
    client.close()


class ServerSnapshots:
    """The server's named snapshots (TRAFIKEY.SNAPSHOT): save the keyspace
    once, put it back before each test in time proportional to the data."""

    def __init__(self, client: Any) -> None:
        self._client = client

    def save(self, name: str) -> None:
        """Keep a copy of every database under ``name`` (replacing one of that name)."""
        self._client.execute_command("TRAFIKEY.SNAPSHOT", "SAVE", name)

    def restore(self, name: str) -> None:
        """Replace every database with a copy of the snapshot; the clock and
        the brand key stay as they are."""
        self._client.execute_command("TRAFIKEY.SNAPSHOT", "RESTORE", name)

    def delete(self, *names: str) -> int:
        """Forget snapshots; how many existed."""
        return int(self._client.execute_command("TRAFIKEY.SNAPSHOT", "DEL", *names))

    def names(self) -> list[str]:
        return [n.decode() for n in self._client.execute_command("TRAFIKEY.SNAPSHOT", "LIST")]


@pytest.fixture(scope="session")
def trafikey_snapshot(trafikey_server: TrafikeyServer) -> Iterator[ServerSnapshots]:
    """Named snapshots of the session server's keyspace, for session
    fixtures that load a dataset once and tests that restore it."""
    client = trafikey_server.client()
    yield ServerSnapshots(client)
    client.close()

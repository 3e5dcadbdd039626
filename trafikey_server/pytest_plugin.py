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
installed never breaks a test run that does not use them. A run that does
use them without redis-py stops as a usage error naming what to install
(``pip install "trafikey-server[pytest]"``) before any server starts.

Every way pytest runs tests gets the same fixtures:

- asyncio: the fixtures are synchronous, so pytest-asyncio accepts them in
  strict mode as in auto mode, and anyio's plugin as well; the one async
  object, ``trafikey_async``'s client, connects in whichever event loop
  awaits it and keeps one pool of connections per loop. A plugin cannot
  declare one async fixture both accept: strict mode runs only
  ``pytest_asyncio.fixture``, which always runs in pytest-asyncio's loop,
  while anyio runs only plain ``async def`` fixtures, in its own loop.
- anyio: the asyncio backend. redis-py's asyncio client does not run on
  trio, so an anyio test on the trio backend that asks for
  ``trafikey_async`` fails with a message saying so.
- pytest-xdist: every worker process starts its own server, on its own free
  port, with its own data directory. A server per worker rather than a
  database per worker, because the fixtures FLUSHALL, move the clock and
  tests change CONFIG and CLIENT state, all of which are server-wide. A
  worker makes sure the server that answers on its port is the process it
  started, so two workers that drew the same port never share a server.

A server started here is stopped by its fixture's finalizer whatever fails
after its start; an interpreter that exits without finalizing stops it at
exit, and on Linux a server whose pytest process died (SIGKILL) is sent
SIGTERM by the kernel.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import ctypes
import importlib
import shlex
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypedDict, Unpack, cast

import pytest

if TYPE_CHECKING:
    import redis
    import redis.asyncio

from .util.procs import free_port

BRAND_KEY = "{emq}:version"
PERSISTENCE = ("none", "rdb", "aof")
START_TIMEOUT = 30.0  # seconds: how long a starting server may take to answer
INSTALL_HINT = 'pip install "trafikey-server[pytest]"'
PR_SET_PDEATHSIG = 1  # linux/prctl.h


def redis_missing() -> str | None:
    """Why redis-py cannot be imported here, or None when it can."""
    try:
        importlib.import_module("redis.asyncio")
    except ImportError as exc:
        return str(exc) or type(exc).__name__
    return None


MISSING_REDIS = "the trafikey-server fixtures need redis-py"


def missing_redis_message(reason: str) -> str:
    return f"{MISSING_REDIS}, which cannot be imported here ({reason}); install it with: {INSTALL_HINT}"


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: list[pytest.Item]) -> None:
    """Refuse the run before any test (and so any server) starts when a
    selected test uses the fixtures and redis-py is missing: every fixture
    stands on ``trafikey_server``, so its name in a test's closure is the
    sign. Trylast: after ``-k``/``-m`` have deselected."""
    if config.option.collectonly:
        return
    if not any("trafikey_server" in getattr(item, "fixturenames", ()) for item in items):
        return
    reason = redis_missing()
    if reason is None:
        return
    message = missing_redis_message(reason)
    if hasattr(config, "workerinput"):
        # an xdist worker: a usage error raised here would reach the controller
        # as a crash; a session told to stop hands it the reason, which it shows
        session.shouldstop = message
        pytest.exit(message, returncode=pytest.ExitCode.USAGE_ERROR)
    raise pytest.UsageError(message)


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """The xdist controller stops Interrupted, with a worker's refusal as
    its reason (``shouldstop``): exit as the usage error it is."""
    dsession = session.config.pluginmanager.getplugin("dsession")
    reason = str(getattr(dsession, "shouldstop", "") or "")
    if exitstatus == pytest.ExitCode.INTERRUPTED and reason.startswith(MISSING_REDIS):
        session.exitstatus = pytest.ExitCode.USAGE_ERROR


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


_PRCTL: Any = None
if sys.platform == "linux":
    with contextlib.suppress(OSError, AttributeError):
        _PRCTL = ctypes.CDLL(None, use_errno=True).prctl  # looked up here: a forked child only calls it


def _die_with_parent() -> None:
    """In the forked child before exec: the kernel sends SIGTERM when the
    pytest process dies without its finalizers or atexit (SIGKILL)."""
    _PRCTL(PR_SET_PDEATHSIG, int(signal.SIGTERM), 0, 0, 0)


_RUNNING: set[TrafikeyServer] = set()  # started and not yet stopped


@atexit.register
def _stop_left_running() -> None:
    """The last resort, for an interpreter that exits without the
    session's teardown having run (an internal error, an exit raised in a
    plugin's hook)."""
    for server in list(_RUNNING):
        server.stop()


def _read_bulk(sock: socket.socket) -> bytes | None:
    """One RESP bulk string from ``sock``; None for any other reply."""
    buf = b""
    while b"\r\n" not in buf:
        chunk = sock.recv(4096)
        if not chunk:
            return None
        buf += chunk
    head, _, body = buf.partition(b"\r\n")
    if not head.startswith(b"$") or int(head[1:]) < 0:
        return None
    size = int(head[1:])
    while len(body) < size:
        chunk = sock.recv(65536)
        if not chunk:
            return None
        body += chunk
    return body[:size]


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
            self.proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, cwd=directory,
                                         preexec_fn=_die_with_parent if _PRCTL is not None else None)
        _RUNNING.add(self)

    @property
    def url(self) -> str:
        return f"redis://{self.host}:{self.port}/0"

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def client(self, **kwargs: Any) -> redis.Redis:
        import redis

        return redis.Redis(host=self.host, port=self.port, **kwargs)

    def answers(self) -> bool:
        """Whether this process answers on the port. Any reply would not do:
        another server (another xdist worker's, which drew the same free
        port a moment earlier) may hold the port while this one is still
        starting and about to fail to bind it."""
        try:
            with socket.create_connection((self.host, self.port), timeout=1) as s:
                s.sendall(b"INFO server\r\n")
                info = _read_bulk(s)
        except (OSError, ValueError):
            return False
        return info is not None and f"\r\nprocess_id:{self.proc.pid}\r\n".encode() in info

    def wait_ready(self, timeout: float = START_TIMEOUT) -> bool:
        """True once the server answers; False if the process died."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                return False
            if self.answers():
                return True
            time.sleep(0.05)
        raise RuntimeError(f"trafikey-server did not answer within {timeout}s:\n{self.log()}")

    def stop(self) -> None:
        _RUNNING.discard(self)
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
    chosen again. A server that fails any step after its start (no answer
    in time, an interrupt, redis-py failing) is stopped before the error
    goes on: only a ready server is handed out."""
    argv: list[str] = []
    log = ""
    for _ in range(attempts):
        port = free_port()
        argv, clock = server_argv(config, port, directory)
        server = TrafikeyServer(argv, port, directory, clock)
        try:
            if server.wait_ready():
                client = server.client(decode_responses=True)
                try:
                    brand = client.get(BRAND_KEY)
                    server.brand = brand.decode() if isinstance(brand, bytes) else brand
                finally:
                    client.close()
                return server
        except BaseException:
            server.stop()
            raise
        server.stop()
        log = server.log()
        if "Address already in use" not in log:
            break
    raise RuntimeError(f"trafikey-server exited at start ({' '.join(argv)}):\n{log}")


@pytest.fixture(scope="session")
def trafikey_server(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[
        TrafikeyServer]:
    """One server for the whole session (for each xdist worker: its own);
    its data directory is a temporary one."""
    reason = redis_missing()  # a test that asked for it by getfixturevalue: the collection check missed it
    if reason is not None:
        pytest.exit(missing_redis_message(reason), returncode=pytest.ExitCode.USAGE_ERROR)
    server = start_server(request.config, tmp_path_factory.mktemp("trafikey"))
    try:
        yield server
    finally:
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
            commands: CommandClient = client
            commands.execute_command("TRAFIKEY.CLOCK", "RELEASE")
    finally:
        client.close()


@pytest.fixture
def trafikey(trafikey_server: TrafikeyServer) -> Iterator[redis.Redis]:
    """A redis-py client on a reset keyspace (replies as bytes)."""
    reset(trafikey_server)
    client = trafikey_server.client()
    yield client
    client.close()


class LoopPools:
    """Stands where ``redis.asyncio.Redis`` keeps its ConnectionPool and
    hands each event loop a pool of its own, chosen when a command runs
    (the pool's methods are looked up inside the awaiting coroutine).

    A connection belongs to the loop it was opened in; used from another
    loop it fails ("attached to a different loop"). Test runners make many
    loops: pytest-asyncio one per loop scope (a fixture on a module's loop
    beside each test's own), anyio one per test or module, ``asyncio.run``
    one per call. With a pool per loop the one client works in all of them.

    A loop's connections close in that loop: when the loop ends (asyncio.run,
    pytest-asyncio and anyio cancel the tasks left at their end, and a task
    waits in each loop for that) or when the fixture ends, whichever comes
    first."""

    def __init__(self, **kwargs: Any) -> None:
        import redis.asyncio

        self._kwargs = kwargs
        self._pool_class = redis.asyncio.ConnectionPool
        self._outside = self._pool_class(**kwargs)  # answers encoder/kwargs questions asked outside a loop
        self._pools: dict[asyncio.AbstractEventLoop, tuple[redis.asyncio.ConnectionPool, asyncio.Task[None]]] = {}

    def _current(self) -> redis.asyncio.ConnectionPool:
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return self._outside
        entry = self._pools.get(loop)
        if entry is None:
            pool = self._pool_class(**self._kwargs)
            entry = self._pools[loop] = (pool, loop.create_task(self._close_with(loop, pool)))
        return entry[0]

    async def _close_with(self, loop: asyncio.AbstractEventLoop, pool: redis.asyncio.ConnectionPool) -> None:
        try:
            await loop.create_future()  # until cancelled: the loop's end or close()
        finally:
            self._pools.pop(loop, None)
            await pool.disconnect()

    def __getattr__(self, name: str) -> Any:
        if name in ("_kwargs", "_pool_class", "_outside", "_pools"):  # before __init__ set them (copy, pickle)
            raise AttributeError(name)
        return getattr(self._current(), name)

    def __repr__(self) -> str:
        return f"<LoopPools {self._kwargs.get('host')}:{self._kwargs.get('port')} loops={len(self._pools)}>"

    def close(self) -> None:
        """Close every loop's connections in that loop: an idle loop (a
        pytest-asyncio or anyio loop between tests) runs the closing now,
        a loop running in another thread is asked to, a closed one has
        already closed them."""
        for loop, (_, task) in list(self._pools.items()):
            if loop.is_closed():
                self._pools.pop(loop, None)
            elif loop.is_running():
                loop.call_soon_threadsafe(task.cancel)
            else:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    loop.run_until_complete(task)


def _anyio_backend(request: pytest.FixtureRequest) -> str | None:
    """The backend of an anyio test, None for any other test."""
    if "anyio_backend" not in request.fixturenames:
        return None
    backend = request.getfixturevalue("anyio_backend")
    return str(backend if isinstance(backend, str) else backend[0])


@pytest.fixture
def trafikey_async(request: pytest.FixtureRequest, trafikey_server: TrafikeyServer) -> Iterator[redis.asyncio.Redis]:
    """A ``redis.asyncio.Redis`` on a reset keyspace. A plain (synchronous)
    fixture, so pytest-asyncio in strict or auto mode and anyio all accept
    it; it connects in the event loop of whoever awaits it (test, async
    fixture of any loop scope, ``asyncio.run``) and closes its connections
    in their loops."""
    backend = _anyio_backend(request)
    if backend not in (None, "asyncio"):
        pytest.fail(f"trafikey_async is a redis.asyncio client, which runs on asyncio only, not on {backend}: "
                    "give this test anyio_backend = 'asyncio'", pytrace=False)
    import redis.asyncio

    reset(trafikey_server)
    pools = LoopPools(host=trafikey_server.host, port=trafikey_server.port)
    # A stand-in for one pool: it hands each call to the running loop's pool.
    yield redis.asyncio.Redis(connection_pool=cast("redis.asyncio.ConnectionPool", pools))
    pools.close()


class CommandClient(Protocol):
    """What the helpers below use of a redis-py client: a command sent as
    its words, the reply as redis-py parses it."""

    def execute_command(self, *args: Any, **options: Any) -> Any: ...


class ServerClock:
    """The server's clock (TRAFIKEY.CLOCK), in milliseconds since the epoch."""

    def __init__(self, client: CommandClient) -> None:
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
def trafikey_clock(trafikey: redis.Redis, trafikey_server: TrafikeyServer) -> Iterator[ServerClock]:
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


class Match(TypedDict, total=False):
    """Which requests a fault rule fires on (TRAFIKEY.FAULT ADD's options)."""

    command: str
    key: str
    clientname: str
    times: int
    probability: float


class ServerFaults:
    """The server's fault rules (TRAFIKEY.FAULT). Each method adds one rule
    and returns its id; ``command``, ``key`` (a glob), ``clientname``,
    ``times`` and ``probability`` choose the requests it fires on, as
    TRAFIKEY.FAULT ADD's options do."""

    def __init__(self, client: CommandClient) -> None:
        self._client = client

    def add(self, kind: str, arg: object = None, *, command: str | None = None, key: str | None = None,
            clientname: str | None = None, times: int | None = None, probability: float | None = None) -> int:
        args: list[object] = ["ADD", kind] + ([] if arg is None else [arg])
        for option, value in (("COMMAND", command), ("KEY", key), ("CLIENTNAME", clientname), ("TIMES", times),
                              ("PROBABILITY", probability)):
            if value is not None:
                args += [option, value]
        return int(self._client.execute_command("TRAFIKEY.FAULT", *args))

    def error(self, text: str, **match: Unpack[Match]) -> int:
        """Answer ``-text`` instead of running the command (LOADING, BUSY,
        OOM, READONLY, ... alone stand for the server's own text)."""
        return self.add("ERROR", text, **match)

    def moved(self, address: str, **match: Unpack[Match]) -> int:
        return self.add("MOVED", address, **match)

    def ask(self, address: str, **match: Unpack[Match]) -> int:
        return self.add("ASK", address, **match)

    def drop(self, **match: Unpack[Match]) -> int:
        """Close the connection; the command does not run."""
        return self.add("DROP", **match)

    def drop_after(self, **match: Unpack[Match]) -> int:
        """Run the command, then close the connection: a lost reply."""
        return self.add("DROP-AFTER", **match)

    def cut(self, nbytes: int, **match: Unpack[Match]) -> int:
        """Run the command, send ``nbytes`` of its reply, then close."""
        return self.add("CUT", nbytes, **match)

    def delay(self, ms: int, **match: Unpack[Match]) -> int:
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
def trafikey_faults(trafikey: redis.Redis, trafikey_server: TrafikeyServer) -> Iterator[ServerFaults]:
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

    def __init__(self, client: CommandClient) -> None:
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

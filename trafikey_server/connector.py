"""A job-core client that talks to a server the way EchoMQ's connector does.

EchoMQ's connector runs the job core in one of two ways, chosen per
connection:

- ``wire=6``: the server runs the job core natively. At connect time the
  connector requires all fourteen job-core tokens from ``EMQ.VERSION`` and
  the brand ``echomq:6.0.0`` in ``{emq}:version`` (which it never writes).
  Every job-core call that names a verb is sent as that verb (``EMQ.CLAIM``
  ...) with the script's numkeys, KEYS and ARGV unchanged. The two declared
  reads of EchoMQ.Metrics (``counts``, ``state``) still travel as EVALSHA,
  loaded with SCRIPT LOAD when the server answers NOSCRIPT. Any other
  script is refused here, before it reaches the server, so no Lua write
  ever reaches a wire-6 node.
- ``wire=4``: the server is a plain Valkey (or this server) running the job
  core as Lua scripts: the connector requires the brand ``echomq:4.0.0`` and
  evaluates the scripted twins (``trafikey_server/lua``) by EVALSHA. The
  two verbs without a twin (RESCHEDULE, REQUEUE) are refused here.

The client is deliberately small: one socket, hiredis to read replies, and
pipelining, so that benchmarks measure the server rather than the client.

    with Connector(port=6379) as emq:
        q = emq.queue(b"emq:{orders}:")
        q.enqueue(b"*", b"payload")
        job_id, payload, token = q.claim(30_000)
        q.complete(job_id, token)
"""

from __future__ import annotations

import socket
from collections.abc import Iterable, Sequence
from typing import TypeAlias, cast

import hiredis

from .lua import SCRIPTS

JOB_CORE_TOKENS = (
    "enqueue claim claim.pause extend extends complete.flat schedule promote reschedule delay fail.flat "
    "reprocess requeue stalled.check"
).split()
BRAND_KEY = b"{emq}:version"
BRANDS = {6: b"echomq:6.0.0", 4: b"echomq:4.0.0"}

# The job-core scripts that name a verb: script name -> the verb's numkeys.
VERBS: dict[str, int] = {
    "enqueue": 2, "claim": 3, "extend": 2, "extends": 2, "complete": 2, "schedule": 2, "promote": 3,
    "reschedule": 2, "delay": 3, "fail": 5, "reprocess": 3, "requeue": 3, "stalled.check": 4,
}
# The declared reads of EchoMQ.Metrics, which go as EVALSHA on both wires.
READS = ("counts", "state")


class ConnectError(Exception):
    """The server cannot serve this wire (missing tokens, wrong brand)."""


class Unsupported(Exception):
    """A script this wire does not send, refused before it reaches the server.
    ``args`` is ``(("wire6_unsupported", name),)`` as EchoMQ reports it."""


class ReplyError(Exception):
    """An error reply from the server; ``str()`` is its text."""

    @property
    def code(self) -> str:
        return str(self).split(" ", 1)[0]


# A RESP2 reply as hiredis reads it (an error reply as a ReplyError value).
Reply: TypeAlias = "bytes | int | list[Reply] | ReplyError | None"


def _unexpected(name: str, reply: Reply) -> ConnectError:
    return ConnectError(f"{name}: the server's reply {reply!r} is not of the job core's form")


def _encode(parts: Iterable[bytes | str | int]) -> bytes:
    out = []
    n = 0
    for p in parts:
        b = p if isinstance(p, bytes) else str(p).encode()
        out.append(b"$%d\r\n%s\r\n" % (len(b), b))
        n += 1
    return b"*%d\r\n" % n + b"".join(out)


class Connection:
    """A raw RESP2 connection with pipelining: requests out, decoded replies back."""

    def __init__(self, host: str, port: int, timeout: float | None = 30.0) -> None:
        self.sock = socket.create_connection((host, port), timeout=timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.reader = hiredis.Reader(replyError=ReplyError)

    def send(self, payload: bytes) -> None:
        self.sock.sendall(payload)

    def read(self) -> Reply:
        reader = self.reader
        while True:
            reply = reader.gets()
            if reply is not False:
                return cast(Reply, reply)
            chunk = self.sock.recv(1 << 18)
            if not chunk:
                raise ConnectionError("server closed the connection")
            reader.feed(chunk)

    def execute(self, *parts: bytes | str | int) -> Reply:
        self.send(_encode(parts))
        return self.read()

    def close(self) -> None:
        self.sock.close()


class Connector:
    def __init__(self, host: str = "127.0.0.1", port: int = 6379, wire: int = 6, *,
                 password: str | None = None, db: int = 0, timeout: float | None = 30.0) -> None:
        if wire not in BRANDS:
            raise ValueError("wire must be 4 or 6")
        self.wire = wire
        self.conn = Connection(host, port, timeout)
        if password is not None:
            self._ok(self.conn.execute(b"AUTH", password))
        if db:
            self._ok(self.conn.execute(b"SELECT", db))
        self._handshake()

    # -- connecting -------------------------------------------------------------------------

    def _handshake(self) -> None:
        if self.wire == 6:
            reply = self.conn.execute(b"EMQ.VERSION")
            if isinstance(reply, ReplyError):
                raise ConnectError(f"the server has no native job core: {reply}")
            if not isinstance(reply, bytes):
                raise ConnectError(f"EMQ.VERSION replied {reply!r}")
            tokens = set(reply.decode().split())
            missing = [t for t in JOB_CORE_TOKENS if t not in tokens]
            if missing:
                raise ConnectError(f"the server's job core lacks: {' '.join(missing)}")
        brand = self.conn.execute(b"GET", BRAND_KEY)
        if isinstance(brand, ReplyError) or brand != BRANDS[self.wire]:
            raise ConnectError(f"{BRAND_KEY.decode()} holds {brand!r}, wire {self.wire} needs {BRANDS[self.wire]!r}")

    @staticmethod
    def _ok(reply: Reply) -> None:
        if isinstance(reply, ReplyError):
            raise reply

    def close(self) -> None:
        self.conn.close()

    def __enter__(self) -> Connector:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- requests -----------------------------------------------------------------------------

    def request(self, name: str, keys: Sequence[bytes], args: Sequence[bytes | str | int]) -> bytes:
        """The encoded request a job-core call travels as on this wire."""
        if self.wire == 6 and name in VERBS:
            return _encode([b"EMQ." + name.upper().encode(), len(keys), *keys, *args])
        script = SCRIPTS.get(name)
        if script is None or (self.wire == 6 and name not in READS):
            raise Unsupported((f"wire{self.wire}_unsupported", name))
        return _encode([b"EVALSHA", script.sha1, len(keys), *keys, *args])

    def call(self, name: str, keys: Sequence[bytes], args: Sequence[bytes | str | int] = ()) -> Reply:
        """One job-core call; an error reply is raised as ReplyError."""
        reply = self.pipeline([(name, keys, args)])[0]
        if isinstance(reply, ReplyError):
            raise reply
        return reply

    def pipeline(self, calls: Sequence[tuple[str, Sequence[bytes], Sequence[bytes | str | int]]]) -> list[Reply]:
        """Several calls in one write; the replies in order, errors as ReplyError
        values. A script the server did not know (NOSCRIPT) is loaded and
        its call sent again, after the rest of the batch."""
        payload = b"".join(self.request(name, keys, args) for name, keys, args in calls)
        self.conn.send(payload)
        replies = [self.conn.read() for _ in calls]
        for i, reply in enumerate(replies):
            if isinstance(reply, ReplyError) and str(reply).startswith("NOSCRIPT"):
                name, keys, args = calls[i]
                self._ok(self.conn.execute(b"SCRIPT", b"LOAD", SCRIPTS[name].source))
                self.conn.send(self.request(name, keys, args))
                replies[i] = self.conn.read()
        return replies

    def queue(self, prefix: bytes) -> Queue:
        return Queue(self, prefix)


class Queue:
    """The job core of one queue, by its prefix (which should carry a hash tag)."""

    def __init__(self, connector: Connector, prefix: bytes) -> None:
        self.c = connector
        self.p = prefix
        p = prefix
        self.pending, self.active, self.schedule, self.dead = (p + b"pending", p + b"active",
                                                                p + b"schedule", p + b"dead")

    def keys(self, name: str) -> list[bytes]:
        """The KEYS of a call, in the order the verb (and its script) takes them."""
        p = self.p
        return {
            "enqueue": [self.pending, p], "claim": [self.pending, self.active, p], "extend": [self.active, p],
            "extends": [self.active, p], "complete": [self.active, p], "schedule": [self.schedule, p],
            "promote": [self.schedule, self.pending, p], "reschedule": [self.schedule, p],
            "delay": [self.active, self.schedule, p], "fail": [self.active, self.pending, self.schedule, self.dead, p],
            "reprocess": [self.dead, self.pending, p], "requeue": [self.active, self.pending, p],
            "stalled.check": [self.active, self.pending, self.dead, p],
            "counts": [self.pending, self.active, self.schedule, self.dead], "state": [p],
        }[name]

    def call(self, name: str, *args: bytes | str | int) -> Reply:
        return self.c.call(name, self.keys(name), args)

    def _int(self, name: str, *args: bytes | str | int) -> int:
        reply = self.call(name, *args)
        if isinstance(reply, int):
            return reply
        raise _unexpected(name, reply)

    def _bulk(self, name: str, *args: bytes | str | int) -> bytes | None:
        reply = self.call(name, *args)
        if reply is None or isinstance(reply, bytes):
            return reply
        raise _unexpected(name, reply)

    def _array(self, name: str, *args: bytes | str | int) -> list[Reply]:
        reply = self.call(name, *args)
        if isinstance(reply, list):
            return reply
        raise _unexpected(name, reply)

    def enqueue(self, job: bytes, payload: bytes) -> bytes | None:
        return self._bulk("enqueue", job, payload)

    def schedule_at(self, job: bytes, payload: bytes, run_at_ms: int) -> bytes | None:
        return self._bulk("schedule", job, payload, run_at_ms)

    def claim(self, lease_ms: int) -> list[Reply]:
        return self._array("claim", lease_ms)

    def extend(self, job: bytes, token: bytes | int, lease_ms: int) -> int:
        return self._int("extend", job, token, lease_ms)

    def complete(self, job: bytes, token: bytes | int) -> int:
        return self._int("complete", job, token)

    def fail(self, job: bytes, token: bytes | int, max_attempts: int, backoff_ms: int,
             reason: bytes | None = None) -> bytes:
        extra = () if reason is None else (reason,)
        reply = self._bulk("fail", job, token, max_attempts, backoff_ms, *extra)
        if reply is None:
            raise _unexpected("fail", reply)
        return reply

    def delay(self, job: bytes, token: bytes | int, delay_ms: int) -> int:
        return self._int("delay", job, token, delay_ms)

    def promote(self, limit: int | None = None) -> int:
        return self._int("promote", *(() if limit is None else (limit,)))

    def stalled_check(self, max_stalled: int, limit: int | None = None) -> list[list[bytes]]:
        extra = () if limit is None else (limit,)
        return cast("list[list[bytes]]", self._array("stalled.check", max_stalled, *extra))

    def reprocess(self, job: bytes) -> int:
        return self._int("reprocess", job)

    def requeue(self, job: bytes, token: bytes | int) -> int:
        return self._int("requeue", job, token)

    def reschedule(self, job: bytes, run_at_ms: int) -> int:
        return self._int("reschedule", job, run_at_ms)

    def counts(self) -> list[int]:
        replies = self._array("counts")
        ints = [n for n in replies if isinstance(n, int)]
        if len(ints) != len(replies):
            raise _unexpected("counts", replies)
        return ints

    def state(self, job: bytes) -> bytes | None:
        return self._bulk("state", job)

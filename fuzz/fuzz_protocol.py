#!/usr/bin/env python3
"""Fuzz the request parser and dispatcher in process.

Each input is cut into reads at points the input itself chooses and fed to
``Connection.data_received`` over a fake transport, as the event loop would
deliver it. A finding is anything that escapes ``data_received`` (the event
loop would log it and drop the connection with a traceback), a reply stream
that is not valid RESP, a handler's internal error (``call`` turns it into an
``ERR internal error`` reply, but it is still a bug), or a connection left
half-closed: after a protocol error the connection must close.

Commands that would leave the process or touch files (SHUTDOWN, DEBUG, SAVE,
CONFIG, scripting) are taken out of the table: they are not parser paths and
a fuzzer that found ``DEBUG SLEEP`` would only measure a sleep.

Run: see fuzz/README.md.
"""

from __future__ import annotations

import itertools
import os
import sys
import tempfile
from typing import Any

import atheris

with atheris.instrument_imports():
    import hiredis

    from trafikey_server.network.connection import Connection
    from trafikey_server.server import Server
    from trafikey_server.services.config import Config

_EXCLUDED = (b"shutdown", b"debug", b"save", b"bgsave", b"bgrewriteaof", b"config", b"eval", b"evalsha",
             b"eval_ro", b"evalsha_ro", b"fcall", b"fcall_ro", b"function", b"script")


class FakeTransport:
    """What Connection uses of an asyncio transport, recording the writes."""

    def __init__(self) -> None:
        self.written: list[bytes] = []
        self.closed = False

    def write(self, data: bytes) -> None:
        if self.closed:
            raise AssertionError("write after close")
        self.written.append(bytes(data))

    def close(self) -> None:
        self.closed = True

    def abort(self) -> None:
        self.closed = True

    def is_closing(self) -> bool:
        return self.closed

    def get_write_buffer_size(self) -> int:
        return 0

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        if name in ("peername", "sockname"):
            return ("127.0.0.1", 6379)
        return default


class _Log:
    """The server's log, turning a handler's internal error into a finding."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner

    def warning(self, msg: str) -> None:
        if "internal error" in msg:
            raise AssertionError(msg)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def make_server() -> Server:
    config = Config()
    config.values["dir"] = tempfile.mkdtemp(prefix="trafikey-fuzz-")
    if os.environ.get("FUZZ_REQUIREPASS"):
        config.values["requirepass"] = os.environ["FUZZ_REQUIREPASS"]
    server = Server(config)
    server.log = _Log(server.log)  # type: ignore[assignment]
    table = server.table
    for name in _EXCLUDED:
        table.commands.pop(name, None)
        table.fast.pop(name, None)
        table.fast.pop(name.upper(), None)
    return server


# Built under instrumentation too: the table imports the command modules.
with atheris.instrument_imports():
    SERVER = make_server()
RUNS = 0


def split(data: bytes) -> list[bytes]:
    """The input's own choice of read boundaries, then the bytes."""
    fdp = atheris.FuzzedDataProvider(data)
    cuts = fdp.ConsumeIntInRange(0, 6)
    points = [fdp.ConsumeIntInRange(0, 1 << 16) for _ in range(cuts)]
    body = fdp.ConsumeBytes(fdp.remaining_bytes())
    if not body:
        return []
    edges = sorted({p % (len(body) + 1) for p in points} | {0, len(body)})
    return [body[a:b] for a, b in itertools.pairwise(edges) if b > a]


def check_replies(stream: bytes) -> None:
    reader = hiredis.Reader()
    reader.feed(stream)
    while True:
        item = reader.gets()  # raises on a malformed reply
        if item is False:
            break
    if reader.has_data():
        raise AssertionError("reply stream ends inside a reply")


def one_input(data: bytes) -> None:
    global RUNS
    RUNS += 1
    if RUNS % 512 == 0:  # keep memory bounded across millions of inputs
        for db in SERVER.dbs:
            db.clear()
    reads = split(data)
    conn = Connection(SERVER)
    t = FakeTransport()
    conn.connection_made(t)
    for chunk in reads:
        if t.closed:
            break
        conn.data_received(chunk)
    client = conn.client
    stream = b"".join(t.written)
    check_replies(stream)
    if client is not None and client.closing and not t.closed:
        raise AssertionError("closing client whose transport stayed open")
    if stream.startswith(b"-ERR Protocol error") or b"\r\n-ERR Protocol error" in stream:
        if not t.closed:
            raise AssertionError("protocol error without closing the connection")
    conn.connection_lost(None)
    if conn.client is not None or (client is not None and client.id in SERVER.clients):
        raise AssertionError("client still registered after connection_lost")


def main() -> None:
    atheris.Setup(sys.argv, one_input)
    atheris.Fuzz()


if __name__ == "__main__":
    main()

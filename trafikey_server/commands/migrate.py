"""MIGRATE: keys sent to another server as RESTORE commands, then deleted
here unless COPY.

The arguments are read in Valkey's order (options, then timeout and
database, then the keys present; none present answers NOKEY), and the
payloads and TTLs are taken when the command runs. The transfer itself
(connect, AUTH, SELECT, one RESTORE per key, read the replies) runs on the
event loop while the client waits, parked on the blocking layer as a
blocked command is, so the server goes on serving everyone else; the
source keys are deleted (``del`` events, logged as one DEL) when the target
has acknowledged them. Inside MULTI/EXEC and scripts, which cannot wait,
the transfer is done at once on a socket with the timeout, as Valkey does
every MIGRATE.

Unlike Valkey, which holds the whole server for the transfer, another
client may write a migrated key while the transfer is under way; the key
is still deleted once the target has it. No connection to a target is
cached between calls (each MIGRATE connects and sends SELECT), and a
failed transfer is not retried on a fresh connection.
"""

from __future__ import annotations

import asyncio
import socket
from typing import TYPE_CHECKING

from ..protocol.args import word
from ..services.blocking import Elsewhere, may_block
from ..util.errors import CommandError, syntax
from ..util.parsing import parse_int
from .dump import payload

if TYPE_CHECKING:
    from ..keyspace.db import Db
    from ..services.client import Client

_LONG = (-(1 << 63), (1 << 63) - 1)
_NOKEY = b"+NOKEY\r\n"


def _request(argv: list[bytes]) -> bytes:
    return b"*%d\r\n" % len(argv) + b"".join(b"$%d\r\n%s\r\n" % (len(a), a) for a in argv)


class _Plan:
    """One MIGRATE: what to send, and how to read what comes back."""

    def __init__(self, c: Client, keys: list[bytes], auth: list[bytes] | None, dbid: int,
                 copy: bool, replace: bool, timeout_ms: int) -> None:
        self.db: Db = c.db
        self.copy = copy
        self.timeout = timeout_ms / 1000
        parts = []
        self.preamble = 0
        if auth is not None:
            parts.append(_request([b"AUTH", *auth]))
            self.preamble += 1
        parts.append(_request([b"SELECT", b"%d" % dbid]))
        self.preamble += 1
        now = self.db.clock.ms()
        self.keys: list[bytes] = []
        for key in keys:
            when = self.db.expires.get(key)
            ttl = 0
            if when is not None:
                ttl = when - now
                if ttl < 0:
                    continue
                ttl = max(ttl, 1)
            value = self.db.get(key)
            if value is None:  # pragma: no cover - looked up a moment ago
                continue
            restore = [b"RESTORE", key, b"%d" % ttl, payload(c.server, value)]
            if replace:
                restore.append(b"REPLACE")
            parts.append(_request(restore))
            self.keys.append(key)
        self.data = b"".join(parts)
        self.lines = self.preamble + len(self.keys)

    def finish(self, c: Client, lines: list[bytes], phase: bytes | None) -> bytes:
        """Apply the target's replies (every line read; phase names the
        socket step that failed, if one did) and return MIGRATE's reply."""
        error: bytes | None = None
        # An AUTH or SELECT refused counts against every key, as in Valkey.
        refused = next((x for x in lines[:self.preamble] if x.startswith(b"-")), None)
        deleted = []
        db = self.db
        for i, line in enumerate(lines[self.preamble:]):
            bad = refused if refused is not None else line if line.startswith(b"-") else None
            if bad is not None:
                if error is None:
                    error = b"-ERR Target instance replied with error: " + bad[1:] + b"\r\n"
                continue
            if not self.copy:
                key = self.keys[i]
                if db.delete(key):
                    db.notify(b"del", key)
                    deleted.append(key)
        if deleted:
            server = c.server
            server.dirty += len(deleted)
            if server.aof is not None:
                server.aof.add(db.id, [[b"DEL", *deleted]])
                if server.aof.depth == 0:
                    server.aof.close_unit()
        if error is not None:
            return error
        if phase == b"connecting":
            return b"-IOERR error or timeout connecting to the client\r\n"
        if phase is not None:
            return b"-IOERR error or timeout %s to target instance\r\n" % phase
        return b"+OK\r\n"


def migrate(c: Client, argv: list[bytes]) -> bytes:
    copy = replace = False
    auth: list[bytes] | None = None
    first, count = 3, 1
    n = len(argv)
    j = 6
    while j < n:
        more = n - 1 - j
        opt = word(argv[j])
        if opt == b"copy":
            copy = True
        elif opt == b"replace":
            replace = True
        elif opt == b"auth":
            if not more:
                raise syntax()
            j += 1
            auth = [argv[j]]
        elif opt == b"auth2":
            if more < 2:
                raise syntax()
            auth = [argv[j + 1], argv[j + 2]]
            j += 2
        elif opt == b"keys":
            if argv[3]:
                raise CommandError(b"ERR When using MIGRATE KEYS option, the key argument must be set "
                                   b"to the empty string")
            first, count = j + 1, n - j - 1
            break
        else:
            raise syntax()
        j += 1
    timeout = parse_int(argv[5])
    dbid = parse_int(argv[4])
    if not (_LONG[0] <= timeout <= _LONG[1] and _LONG[0] <= dbid <= _LONG[1]):
        raise CommandError(b"ERR value is not an integer or out of range")
    if timeout <= 0:
        timeout = 1000
    db = c.db
    present = []
    for key in argv[first:first + count]:
        if db.get(key) is None:
            db.notify(b"keymiss", key)
        else:
            present.append(key)
    if not present:
        c.server.dirty -= 1  # dirty counts the keys deleted, as in Valkey
        return _NOKEY
    plan = _Plan(c, present, auth, dbid, copy, replace, timeout)
    host, port = argv[1].decode(errors="replace"), argv[2].decode(errors="replace")
    if not may_block(c):
        lines, phase = _transfer_now(host, port, plan)
        reply = plan.finish(c, lines, phase)
        if not reply.startswith(b"-"):
            c.server.dirty -= 1
        return _raise_or(reply)
    server = c.server
    loop = server.loop or asyncio.get_event_loop()
    loop.create_task(_transfer_later(c, host, port, plan))
    server.blocking.block(c, [], Elsewhere, 0, b"-IOERR error or timeout reading to target instance\r\n")
    return b""  # pragma: no cover - block() raises


def _raise_or(reply: bytes) -> bytes:
    if reply.startswith(b"-"):
        raise CommandError(reply[1:-2])
    return reply


def _transfer_now(host: str, port: str, plan: _Plan) -> tuple[list[bytes], bytes | None]:
    lines: list[bytes] = []
    try:
        sock = socket.create_connection((host, int(port)), timeout=plan.timeout)
    except TimeoutError:
        return lines, b"connecting"
    except (OSError, ValueError):
        return lines, b"writing"
    try:
        sock.settimeout(plan.timeout)
        try:
            sock.sendall(plan.data)
        except OSError:
            return lines, b"writing"
        f = sock.makefile("rb")
        try:
            for _ in range(plan.lines):
                line = f.readline(1 << 20)
                if not line.endswith(b"\r\n"):
                    return lines, b"reading"
                lines.append(line[:-2])
        except OSError:
            return lines, b"reading"
    finally:
        sock.close()
    return lines, None


async def _transfer_later(c: Client, host: str, port: str, plan: _Plan) -> None:
    lines: list[bytes] = []
    phase: bytes | None = None
    writer = None
    try:
        try:
            reader, writer = await asyncio.wait_for(asyncio.open_connection(host, int(port)), plan.timeout)
        except TimeoutError:
            phase = b"connecting"
        except (OSError, ValueError):
            phase = b"writing"  # refused: Valkey's connect is non-blocking, its first write fails
        if phase is None:
            assert writer is not None
            try:
                writer.write(plan.data)
                await asyncio.wait_for(writer.drain(), plan.timeout)
            except (TimeoutError, OSError):
                phase = b"writing"
        if phase is None:
            try:
                for _ in range(plan.lines):
                    line = await asyncio.wait_for(reader.readline(), plan.timeout)
                    if not line.endswith(b"\r\n"):
                        phase = b"reading"
                        break
                    lines.append(line[:-2])
            except (TimeoutError, OSError, ValueError):
                phase = b"reading"
    finally:
        if writer is not None:
            writer.close()
    if c.blocked is None or c.blocked.btype is not Elsewhere:
        return  # the client went away or was unblocked meanwhile
    server = c.server
    server.blocking.answer(c, plan.finish(c, lines, phase))
    if server.ready_keys:
        server.blocking.serve()

"""A minimal asyncio RESP client for load tests: one socket, hiredis replies.

Why not redis-py's asyncio client: a thousand of them cost more CPU in the
test process than the server spends answering, and the test would then
measure the client. This one encodes a request, writes it and reads one
reply; errors come back as ``hiredis.ReplyError`` values, not exceptions,
so a caller can tell a refusal from a dropped connection.
"""

from __future__ import annotations

import asyncio
from typing import Any

import hiredis


def encode(*args: bytes | str | int) -> bytes:
    parts = [a if isinstance(a, bytes) else str(a).encode() for a in args]
    return b"*%d\r\n" % len(parts) + b"".join(b"$%d\r\n%s\r\n" % (len(p), p) for p in parts)


class AsyncConn:
    """One connection; requests are sent and answered one at a time."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer
        self.parser = hiredis.Reader(replyError=hiredis.ReplyError)

    @classmethod
    async def open(cls, port: int, host: str = "127.0.0.1") -> AsyncConn:
        reader, writer = await asyncio.open_connection(host, port)
        return cls(reader, writer)

    async def call(self, *args: bytes | str | int) -> Any:
        self.writer.write(encode(*args))
        return await self.reply()

    async def reply(self) -> Any:
        while True:
            got = self.parser.gets()
            if got is not False:
                return got
            data = await self.reader.read(65536)
            if not data:
                raise ConnectionError("server closed the connection")
            self.parser.feed(data)

    async def close(self) -> None:
        self.writer.close()
        try:
            await self.writer.wait_closed()
        except OSError:
            pass

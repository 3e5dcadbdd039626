"""A fake transport: an in-process stand-in for an asyncio transport, for tests that feed a
``Connection`` reads by hand and compare what it wrote (the request
reader's paths against each other, byte for byte)."""

from __future__ import annotations

from typing import Any


class FakeTransport:
    """What Connection uses of an asyncio transport, keeping the writes."""

    def __init__(self) -> None:
        self.written = b""
        self.closed = False

    def write(self, data: bytes) -> None:
        assert not self.closed, "write after close"
        self.written += data

    def close(self) -> None:
        self.closed = True

    abort = close

    def is_closing(self) -> bool:
        return self.closed

    def get_write_buffer_size(self) -> int:
        return 0

    def pause_reading(self) -> None:
        pass

    def resume_reading(self) -> None:
        pass

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return ("127.0.0.1", 6379) if name in ("peername", "sockname") else default

"""What the services know of the objects above them, as typing Protocols.

A service is handed the ``Server`` (server.py) and reaches a few things the
layers above it own: a client's connection (network/connection.py), the
script that runs (execution/scripting), the append-only log (execution/
persist). It must not import them, not even for type hints, so each of
those is typed here by just what the services use of it, and each service
module types the server itself with a Protocol of its own listing the
attributes it reads and writes. mypy checks, where server.py hands itself
to a service, that the real objects fit.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from ..protocol.table import Command
    from .client import Client


class Transport(Protocol):
    """A connection's transport (asyncio's, or a stand-in while a script
    holds the loop), as far as a service writes to it, closes it or
    measures it."""

    def write(self, data: bytes) -> None: ...
    def get_extra_info(self, name: str, default: Any = None) -> Any: ...
    def is_closing(self) -> bool: ...
    def close(self) -> None: ...
    def abort(self) -> None: ...
    def get_write_buffer_size(self) -> int: ...


class Peer(Protocol):
    """A client's connection (``Server.connections``): its transport, its
    client once announced, and what the services ask of it."""

    # Since when (s) its output has been over the soft limit, 0 while it is not (limits.py).
    obuf_soft_since: int

    @property
    def transport(self) -> Transport | None: ...
    @property
    def client(self) -> Client | None: ...

    def query_buffer(self) -> tuple[int, int, int, int]: ...
    def unsent(self) -> int: ...
    def resume(self) -> None: ...
    def run_unblocked(self) -> None: ...
    def answer_unblocked(self, reply: bytes) -> None: ...


class ScriptRun(Protocol):
    """The script that runs now (``Server.scripting.run``)."""

    @property
    def caller(self) -> Client: ...
    @property
    def argv(self) -> list[bytes]: ...


class Scripting(Protocol):
    """The scripting engine (``Server.scripting``)."""

    @property
    def run(self) -> ScriptRun | None: ...

    def command_flags(self, cmd: Command, argv: list[bytes]) -> tuple[bool, bool]: ...


class AppendLog(Protocol):
    """The append-only log (``Server.aof``): a write made outside a command."""

    def alone(self, dbid: int, argv: list[bytes]) -> None: ...

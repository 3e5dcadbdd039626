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
    def close(self) -> None: ...
    def abort(self) -> None: ...
    def get_write_buffer_size(self) -> int: ...


class Peer(Protocol):
    """A client's connection (``Server.connections``)."""

    @property
    def transport(self) -> Transport | None: ...

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

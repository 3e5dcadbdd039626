"""What persistence uses of the server, as a typing Protocol.

The RDB snapshots, the append-only log and their loading at start-up call
one another with the server in hand, so they share one list of what they
use of it: ``PersistHost``. They do not import server.py (a layer above);
mypy checks, where the server hands itself over, that it fits.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from ...services.limits import MemoryLimitHost
from ...values.record import ValueHost
from .child import ForkHost

if TYPE_CHECKING:
    import asyncio

    from ...keyspace.db import Db
    from ...services.client import Client
    from ...services.config import Config
    from ...services.switches import Switches
    from ...util.clock import Clock
    from ...util.log import Log
    from ..scripting.engine import Engine
    from .acks import AofOffsets
    from .aof import Aof
    from .loading import Loading
    from .oneoff import OneOffRewrite
    from .snapshot import Snapshots


class PersistHost(ValueHost, MemoryLimitHost, ForkHost, Protocol):
    """The server (server.py), as persistence uses it: what the value
    types' loaders read of it too."""

    aof: Aof | None
    aof_offsets: AofOffsets
    clock: Clock
    config: Config
    dbs: list[Db]
    dirty: int
    loading: bool
    in_exec: bool
    load_state: Loading
    log: Log
    loop: asyncio.AbstractEventLoop | None
    oneoff: OneOffRewrite
    scripting: Engine
    snapshots: Snapshots
    switches: Switches

    def internal_client(self) -> Client:
        """A client with no connection, to replay commands as."""
        ...

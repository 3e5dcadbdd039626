"""CLUSTER, as a standalone Valkey answers it.

The server is never a cluster node, so every CLUSTER subcommand but one
gets Valkey's standalone answer. KEYSLOT works: it is pure arithmetic, and
it lets a user check which slot a queue's hash tag lands on before moving
the queue to Valkey Cluster (see ``slots.py``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..protocol.resp import integer
from ..util.errors import CommandError
from ..util.slots import keyslot as slot_of

if TYPE_CHECKING:
    from ..services.client import Client

_DISABLED = b"ERR This instance has cluster support disabled"


def keyslot(c: Client, argv: list[bytes]) -> bytes:
    return integer(slot_of(argv[2]))


def disabled(c: Client, argv: list[bytes]) -> bytes:
    raise CommandError(_DISABLED)

"""EMQ.VERSION: what this server's job core can do, as capability tokens.

The answer is derived from the registration table (each row lists the
tokens it provides, in table order), never kept as a second list: a
connector that requires a token gets it only because a registered row
serves it, and a table without that row no longer claims it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ...services.client import Client


def version(c: Client, argv: list[bytes]) -> bytes:
    """EMQ.VERSION -> "enqueue claim claim.pause ..." (one bulk string)."""
    return c.server.table.version_reply

"""Closing a client from inside the server: CLIENT KILL and ACL DELUSER
(whose deleted user's clients are disconnected) both end connections this way."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .client import Client


def kill_client(c: Client, victim: Client) -> None:
    """Close a connection. The caller itself gets its reply first and is
    closed after it, as Valkey does. Another victim is gone at once, as
    Valkey frees it in the command: a later CLIENT LIST or KILL in the same
    pipeline no longer sees it, and its unsent replies are dropped."""
    if victim is c:
        c.closing = True
        c.close_after_reply = True
        return
    close_now(victim)


def close_now(victim: Client) -> None:
    """Close a client that is not the one running a command, at once and
    without its unsent output (CLIENT KILL, client eviction)."""
    victim.closing = True
    conn = victim.server.connections.get(victim.id)
    if conn is not None and conn.transport is not None:
        conn.transport.abort()
    victim.unwatch()
    victim.server.client_disconnected(conn, victim)

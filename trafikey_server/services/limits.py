"""Valkey's per-client and server-wide limits, with Valkey's texts.

Each limit is checked where it costs least: admission (maxclients,
protected mode) once per connection; the query-buffer and output-buffer
limits once per read, and only when a limit applies; idle timeouts and the
soft output-buffer limit from the periodic tick; maxmemory only for commands
flagged deny-oom, which leave dispatch's fast path while a limit is set
(``apply_maxmemory``), so that the common request pays nothing.

Used memory is the dataset as Valkey counts it (memory.py): while a limit
is set it is tracked on every write, and each command off the fast path
first runs the evictions the policy allows (Valkey's processCommand), then
is refused as OOM if it is deny-oom and nothing more could be evicted.
"""

from __future__ import annotations

import ipaddress
import re
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Protocol

from .clientmem import output
from .config import register_apply
from .memory import EVICT_FAIL

if TYPE_CHECKING:
    from ..protocol.table import Command, Table
    from ..util.log import Log
    from .acl import Acl
    from .client import Client
    from .clientmem import ClientMemory
    from .config import Config
    from .host import Peer, Scripting, Transport
    from .memory import Memory
    from .tracking import Tracking


class MemoryLimitHost(Protocol):
    """What maxmemory and min-replicas-to-write use of the server (server.py):
    they choose the command table it serves."""

    base_table: Table
    client_memory: ClientMemory
    config: Config
    disk_error: bytes | None
    maxmemory: int
    memory: Memory
    noreplicas: bool
    table: Table


class LimitsHost(MemoryLimitHost, Protocol):
    """What the other limits use of the server (server.py)."""

    acl: Acl
    clients: dict[int, Client]
    huge_bulk: BulkSearch
    log: Log
    max_bulk: int
    obuf_limited: bool
    obuf_normal: tuple[int, int, int] | None
    obuf_pubsub: tuple[int, int, int] | None
    obuf_watch: set[Peer]
    rejected_connections: int
    tracking: Tracking

    @property
    def connections(self) -> Mapping[int, Peer]: ...
    @property
    def scripting(self) -> Scripting: ...


MAXCLIENTS = b"-ERR max number of clients reached\r\n"
NOREPLICAS = b"NOREPLICAS Not enough good replicas to write."
OOM = b"OOM command not allowed when used memory > 'maxmemory'."
LOADING = b"LOADING Valkey is loading the dataset in memory"
MISCONF = (
    b"MISCONF Valkey is configured to save RDB snapshots, but it's currently unable to persist to disk. "
    b"Commands that may modify the data set are disabled, because this instance is configured to report "
    b"errors during writes if RDB snapshotting fails (stop-writes-on-bgsave-error option). Please check the "
    b"Valkey logs for details about the RDB error."
)
PROTECTED = (
    b"-DENIED Running in protected mode because protected mode is enabled and no password is set for the "
    b"default user. In this mode connections are only accepted from the loopback interface. If you want to "
    b"connect from external computers, you may adopt one of the following solutions: 1) Just disable "
    b"protected mode sending the command 'CONFIG SET protected-mode no' from the loopback interface by "
    b"connecting from the same host the server is running, however MAKE SURE it's not publicly accessible "
    b"from internet if you do so. Use CONFIG REWRITE to make this change permanent. 2) Alternatively you can "
    b"just disable the protected mode by editing the configuration file, and setting the protected mode "
    b"option to 'no', and then restarting the server. 3) If you started the server manually just for "
    b"testing, restart it with the '--protected-mode no' option. 4) Set up an authentication password for "
    b"the default user. NOTE: You only need to do one of the above things in order for the server to start "
    b"accepting connections from the outside.\r\n"
)
# Before AUTH, Valkey lets the query buffer hold at most 1 MB.
UNAUTH_QUERY_BUFFER = 1024 * 1024


# -- admission ------------------------------------------------------------------


def _is_local(peer: object) -> bool:
    if not isinstance(peer, tuple):
        return True  # a Unix socket
    try:
        return ipaddress.ip_address(peer[0].split("%", 1)[0]).is_loopback
    except ValueError:
        return False


def admit(server: LimitsHost, transport: Transport) -> bool:
    """Valkey's accept order: the client count first, then protected mode
    (refused while no password protects the default user and the peer is
    not on a loopback interface). A refusal is written and the connection
    closed; it counts in rejected_connections."""
    refusal = None
    if len(server.clients) >= server.config.values["maxclients"]:
        refusal = MAXCLIENTS
    elif (server.config.values["protected-mode"] and server.acl.default.nopass
          and not _is_local(transport.get_extra_info("peername"))):
        refusal = PROTECTED
    if refusal is None:
        return True
    server.rejected_connections += 1
    transport.write(refusal)
    transport.close()
    return False


# -- input and output buffers -----------------------------------------------------


def query_buffer_exceeded(c: Client, pending: int) -> bool:
    """The bytes of a request still being read, against
    client-query-buffer-limit (1 MB before AUTH). Valkey closes such a
    client without a reply."""
    limit = c.server.config.values["client-query-buffer-limit"]
    if not c.authenticated:
        limit = min(limit, UNAUTH_QUERY_BUFFER)
    if pending <= limit:
        return False
    c.server.log.warning(f"Closing client that reached max query buffer length: addr={c.addr}")
    c.server.qbuf_disconnections += 1
    return True


def parse_obuf(value: str) -> dict[str, tuple[int, int, int]]:
    words = value.split()
    return {words[i]: (int(words[i + 1]), int(words[i + 2]), int(words[i + 3])) for i in range(0, len(words), 4)}


def apply_obuf(server: LimitsHost, value: str) -> None:
    """Keep the normal class's limits where a read can see them at the cost
    of one check, None while they are all zero (Valkey's default)."""
    limits = parse_obuf(value)
    normal = limits.get("normal", (0, 0, 0))
    server.obuf_normal = normal if normal[0] or normal[1] else None
    pubsub = limits.get("pubsub", (0, 0, 0))
    server.obuf_pubsub = pubsub if pubsub[0] or pubsub[1] else None
    # The normal class turns the check of every read's replies on; the pubsub
    # class is checked where subscribed clients get their volume, on each
    # write of pushed messages (Connection.flush).
    server.obuf_limited = server.obuf_normal is not None


def obuf_class(server: LimitsHost, c: Client) -> tuple[int, int, int] | None:
    """The limits of the client's class: pub/sub while it is subscribed."""
    if getattr(c, "subscriptions", 0):
        return server.obuf_pubsub
    return server.obuf_normal


def check_output(conn: Peer, c: Client, limits: tuple[int, int, int] | None, extra: int = 0) -> None:
    """After a write: what the transport still holds for the client against
    its class's hard limit (closed at once) and soft limit (closed once it
    has stayed over it for more than soft-seconds), as Valkey's
    checkClientOutputBufferLimits: omem, the output past the 16 KiB reply
    buffer, ``extra`` bytes of replies not handed over yet included. The
    unsent replies are dropped."""
    if limits is None or conn.transport is None:
        return
    hard, soft, secs = limits
    used = output(conn.unsent() + extra)[2]
    over = bool(hard) and used >= hard
    if not over and soft and used >= soft:
        now = int(time.time())
        if conn.obuf_soft_since == 0:
            conn.obuf_soft_since = now
            c.server.obuf_watch.add(conn)
        elif now - conn.obuf_soft_since > secs:
            over = True
    elif not over:
        conn.obuf_soft_since = 0
        c.server.obuf_watch.discard(conn)
    if over:
        close_for_output(c)


def close_for_output(c: Client) -> None:
    """Close c for overcoming its output-buffer limit, its unsent output
    dropped: Valkey frees such a client before anything more is written."""
    server = c.server
    server.log.warning(f"Client addr={c.addr} scheduled to be closed ASAP for overcoming of output buffer limits.")
    server.obuf_disconnections += 1
    c.closing = True
    conn = server.connections.get(c.id)
    if conn is not None:
        server.obuf_watch.discard(conn)
        if conn.transport is not None:
            conn.transport.abort()


def beyond_output_limit(c: Client, items: int, least: int) -> bool:
    """Whether a reply of ``items`` entries of at least ``least`` bytes each
    must pass the hard limit of c's output class: c is then closed without
    a reply. A random pick with repetition (HRANDFIELD, SRANDMEMBER,
    ZRANDMEMBER with a negative count) has no bound of its own; Valkey stops
    producing it once the client is marked to close."""
    limits = obuf_class(c.server, c)
    if limits is None or not limits[0] or items * least < limits[0]:
        return False
    close_for_output(c)
    return True


def measure(server: LimitsHost, conn: Peer, c: Client) -> None:
    """Client memory after c's buffers changed, while maxmemory-clients is
    set: its output-buffer limit first (a client over it is closed for
    that, never evicted: Valkey enforces the limit as the output grows),
    then its memory, then the eviction of the largest clients."""
    check_output(conn, c, obuf_class(server, c))
    mem = server.client_memory
    if c.closing:
        mem.forget(c)
    else:
        mem.update(c)
    mem.evict()


# A read holding a bulk length of the default limit's digit count (512 MB has 9).
_HUGE_BULK = re.compile(rb"\$\d{9}").search
# A compiled pattern's search: where in a read such a length starts, or None.
BulkSearch = Callable[[bytes], "re.Match[bytes] | None"]


def huge_bulk_pattern(limit: int) -> BulkSearch:
    """A length with as many digits as proto-max-bulk-len may be over it:
    such a read goes to the exact parser (``Server.huge_bulk``)."""
    digits = len(str(limit))
    return _HUGE_BULK if digits == 9 else re.compile(rb"\$\d{%d}" % digits).search


def apply_proto_max_bulk_len(server: LimitsHost, value: int) -> None:
    server.huge_bulk = huge_bulk_pattern(value)
    server.max_bulk = value


# -- maxmemory ----------------------------------------------------------------------


# Commands whose write and deny-oom flags come from the script they run
# (Valkey's evalGetCommandFlags and fcallGetCommandFlags).
SCRIPT_RUNNERS = frozenset((b"eval", b"eval_ro", b"evalsha", b"evalsha_ro", b"fcall", b"fcall_ro"))


def apply_maxmemory(server: MemoryLimitHost, value: int) -> None:
    """While a limit is set, used memory is tracked on every write
    (memory.py) and every command leaves the fast path (a table of the
    server's own): Valkey runs its evictions before any command, a read
    included, so that what a command frees is invalidated before its reply.
    Neither costs anything without a limit. Write commands leave the fast
    path too while min-replicas-to-write refuses them (``noreplicas``), and
    the script commands under either."""
    server.maxmemory = value
    memory = server.memory
    if value:
        memory.start()
        memory.after_limit_set()
    else:
        memory.stop()
        memory.oom = False
    base = server.base_table
    noreplicas = server.noreplicas
    disk_error = server.disk_error is not None
    if value or noreplicas or disk_error:
        # Refused writes (and PING, under MISCONF) and the script commands
        # leave the fast path for write_refusal's checks.
        server.table = base.with_fast({} if value else {
            k: v for k, v in base.fast.items()
            if not (v.write or v.bname in SCRIPT_RUNNERS or (disk_error and v.bname == b"ping"))})
    else:
        server.table = base
    pause = getattr(server, "pause", None)
    if pause is not None and pause.end:  # CLIENT PAUSE keeps the fast path off (pause.py)
        pause.hide_fast()
    faults = getattr(server, "faults", None)
    if faults is not None and faults.rules:  # so do fault rules (faults.py)
        faults.hide_fast()
    if getattr(server, "loading", False):  # and a load at start-up, for -LOADING (persist/loading.py)
        server.table = server.table.with_fast({})
    server.client_memory.configure()  # maxmemory-clients may be a percentage of it


def apply_min_replicas(server: MemoryLimitHost) -> None:
    """Valkey's checkGoodReplicasStatus: with min-replicas-to-write and
    min-replicas-max-lag both set, a primary needs that many good replicas
    to write, and this server never has any."""
    v = server.config.values
    server.noreplicas = bool(v["min-replicas-to-write"] and v["min-replicas-max-lag"])
    apply_maxmemory(server, server.maxmemory)


def write_refusal(c: Client, cmd: Command, argv: list[bytes], oom: bool = True) -> bytes | None:
    """Valkey's processCommand checks on the memory, the disk and the
    replicas, in its order: over maxmemory a deny-oom command is refused
    (queued in MULTI or not) and so is an EXEC whose queue holds one; a
    write (or an EXEC of writes), and PING, while the last background save
    or AOF write failed (MISCONF, see persist/snapshot.py); a write while
    there are not enough good replicas.
    A script command counts as a write and as deny-oom as its script's
    flags say."""
    server = c.server
    write, denyoom = cmd.write, cmd.denyoom
    if cmd.bname in SCRIPT_RUNNERS:
        write, denyoom = server.scripting.command_flags(cmd, argv)
    elif c.multi and cmd.bname == b"exec":
        for q, qargv in c.multi:
            if q.bname in SCRIPT_RUNNERS:
                qw, qd = server.scripting.command_flags(q, qargv)
            else:
                qw, qd = q.write, q.denyoom
            write = write or qw
            denyoom = denyoom or qd
    if oom and server.maxmemory:
        # performEvictions before every command; its verdict is also the
        # state a script's first write is judged by (pre_command_oom_state).
        memory = server.memory
        evicted = memory.evicted_keys
        out = memory.oom = memory.perform_evictions() == EVICT_FAIL
        if memory.evicted_keys != evicted and c.out is not None:
            # The client hears of keys evicted for its command before the
            # command's reply, as Valkey sends them (its own tracking
            # invalidations included, which otherwise wait for the reply).
            server.tracking.flush_pending(c)
            if c.pushed:
                c.out.extend(c.pushed)
                c.pushed = None
        if out and denyoom:
            return OOM
    if server.disk_error is not None and (write or cmd.bname == b"ping"):
        return server.disk_error  # Valkey's writeCommandsDeniedByDiskError, PING too
    if write and server.noreplicas:
        return NOREPLICAS
    return None


# -- the periodic tick ---------------------------------------------------------------


def cron(server: LimitsHost) -> None:
    """Once a second: idle clients past ``timeout`` are closed, the soft
    output-buffer limit is re-checked for clients that have not read, and
    evictions run while maxmemory is set and used memory is over it."""
    now = time.time()
    if server.maxmemory:
        server.memory.perform_evictions()
    # Every client measured (INFO's mem_clients_normal), then evicted over
    # maxmemory-clients (Valkey's clientsCron, then beforeSleep).
    server.client_memory.refresh()
    server.client_memory.evict()
    timeout = server.config.values["timeout"]
    if timeout:
        for cid, c in list(server.clients.items()):
            if now - c.last_interaction > timeout:
                conn = server.connections.get(cid)
                if conn is not None and conn.transport is not None:
                    server.log.verbose("Closing idle client")
                    c.closing = True
                    conn.transport.close()
    for conn in list(server.obuf_watch):
        client = conn.client
        if client is None or client.closing:
            server.obuf_watch.discard(conn)
            continue
        check_output(conn, client, obuf_class(server, client))


register_apply("maxmemory", apply_maxmemory)
register_apply("maxmemory-clients", lambda server, value: server.client_memory.configure())
register_apply("proto-max-bulk-len", apply_proto_max_bulk_len)
register_apply("client-output-buffer-limit", apply_obuf)
register_apply("min-replicas", lambda server, value: apply_min_replicas(server))

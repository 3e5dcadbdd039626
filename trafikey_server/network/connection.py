"""The network side of a client: bytes in, requests out, replies back.

``data_received`` parses every complete request in the read, runs them in
order and sends all their replies with one ``write``. The common case is all
hiredis: ``feed``, then ``gets`` until it runs dry, then one check that the
read was framed as Valkey requires, then the requests run. Valkey's exact
framing rules live in ``parser.PyParser``; the connection switches to it for
inline requests, and replays the reads since the last request boundary
through it when hiredis rejects the input or would accept what Valkey
refuses, so that the requests before a malformed one still run, nothing of
the malformed one does, and the error text is Valkey's.

hiredis skips the two bytes after a bulk without looking at them, where
Valkey requires CRLF there. The check counts CRs instead of looking: in a
read without a CR that lacks its LF, a well-framed run of requests holds
exactly one CR per header line, one per bulk terminator and those inside
the arguments, and any terminator without its CR leaves the count short
(see ``_crs``). Nothing is executed before the count is right.

The reads since the last request boundary are kept by reference (never
copied) for the replay. A request that grows past ``RETAIN_LIMIT`` in flight
with large arguments moves to the exact parser, which holds one copy of it
where hiredis and the replay would hold two, and knows the bulk it is
reading, as client memory counts it; one of many small arguments stays on
hiredis.

When the compiled reader is built (protocol/creader.pyx), it replaces
hiredis and the checks above, chosen once at import: one call per read
returns every request the read completes, checked as it splits them, and at
the first byte it is not certain of it hands the bytes from the start of
that request on to the exact parser, which goes on as in the replay.
"""

from __future__ import annotations

import asyncio
import re
from bisect import bisect_left
from collections.abc import Callable
from itertools import chain
from time import time
from typing import TYPE_CHECKING, Any, Final, Protocol

import hiredis

from ..commands.client import log_info
from ..execution.dispatch import POSTPONED, execute
from ..protocol.parser import INLINE_MAX, PyParser
from ..services.client import Client
from ..services.clientmem import BIG_ARG, POINTER
from ..services.limits import BulkSearch, admit, check_output, measure, obuf_class, query_buffer_exceeded
from ..util import native
from ..util.errors import ProtocolError
from ..util.log import VERBOSE
from .tls import certificate_user

if TYPE_CHECKING:
    from ..server import Server



class KernelReader(Protocol):
    """The compiled request reader (protocol/creader.pyx). It is loaded by
    name (util/native.py), so mypy never reads it: what is used of it is
    stated here."""

    @property
    def idle(self) -> bool: ...

    def len(self) -> int: ...
    def open_bulk(self) -> int: ...
    def open_args(self) -> tuple[int, int]: ...
    def feed(self, data: bytes, max_bulk: int, out: list[list[bytes]]) -> bytes | None: ...


# The compiled request reader, or None: the pure path (hiredis and the checks below).
_k: Final = native.load("protocol.creader")

# How a connection frames requests at a request boundary (``Connection.mode``):
# the exact parser alone, hiredis with the framing checks, or the compiled
# reader. The server takes the fastest built; the tests take each in turn.
EXACT, HIREDIS, KERNEL = 0, 1, 2

# Valkey reads a bulk this long into a query buffer of its own (PROTO_MBULK_BIG_ARG).
RETAIN_LIMIT: Final = BIG_ARG
# hiredis allocates a request's whole argument list as soon as it reads the
# count (a ``*300000000`` header would ask for gigabytes) and waits patiently
# for a bulk of any declared size, where Valkey grows lazily and refuses a
# count over INT_MAX or a bulk over proto-max-bulk-len at once. A read that
# holds such a long number never reaches hiredis: the exact parser takes it,
# and so does a read that completes such a number begun in the read before.
# Two patterns, each led by a literal byte that re's prefix scan finds fast,
# cost a quarter of one alternation on a typical pipelined read.
_HUGE_COUNT: Final = re.compile(rb"\*\d{6}").search
# (The bulk-length pattern, sized to proto-max-bulk-len, is limits.huge_bulk_pattern.)
# hiredis also allocates RESP3 sets ('~'), pushes ('>') and attributes ('|')
# eagerly, and a request may not hold one at all: a read with one of these
# bytes before a long number goes to the exact parser too. The membership
# tests keep the regex off the common read.
_HUGE_AGG: Final = re.compile(rb"[~>|%]\d{6}").search
# Inside a request Valkey accepts only bulk strings ('$'); hiredis also reads
# a simple string ('+'), a verbatim string ('=') and a big number ('(') as
# plain bytes, so such an item would pass for an argument; and it returns a
# RESP3 set ('~') or attribute ('|') at the top level as a list, where Valkey
# reads that line as an inline request. Each starts a line, so a read that
# holds one of these bytes right after a newline, or starts with one right
# after a read that ended with a newline, also goes to the exact parser,
# which refuses it with Valkey's "expected '$', got '+'". The bytes are rare
# in requests: a read without them costs five memchr scans; a payload that
# holds one after a newline only takes the slower, exact path.
_TYPED_ITEM: Final = b"+=(~|"
_LONE_CR: Final = re.compile(rb"\r[^\n]").search
# Valkey 9.1 refuses a header line whose CR is not followed by LF ("invalid
# CRLF in request") where hiredis looks for the pair and would wait, or read
# on. A CR without its LF in a read (a pair cut by the read boundary aside)
# sends the read to the exact parser: one scan per read, none per request.
# With every CR followed by its LF, a bulk terminator is CRLF as soon as its
# first byte is a CR, which the count of CRs after each read checks.
# Enough bytes either side of a read boundary to hold any length that is
# too long but not already visible whole on one side.
_TAIL: Final = 12


def _split_length(window: bytes, huge_bulk: BulkSearch) -> bool:
    return _HUGE_COUNT(window) is not None or _HUGE_AGG(window) is not None or huge_bulk(window) is not None


_FIRST: Final = (b"",)


def _crs(reqs: list[list[bytes]]) -> int:
    """The CRs a well-framed run of these requests holds: one per header
    line (``*N`` and each ``$N``), one per bulk terminator, and those of the
    arguments. The join puts two CRs before each argument: one C-level join
    and count per read, nothing per request; it also raises TypeError on an
    item that is not a bulk string, which saves a loop over the arguments."""
    return len(reqs) + b"\r\r".join(chain(_FIRST, *reqs)).count(13)


def _digits(lens: list[int]) -> int:
    """The decimal digits of all these lengths: sorted once, then one
    bisection per power of ten, all in C."""
    if not lens:
        return 0
    lens = sorted(lens)
    n = total = len(lens)
    top = lens[-1]
    p = 10
    while p <= top:
        total += n - bisect_left(lens, p)
        p *= 10
    return total


def _size(reqs: list[list[bytes]]) -> int:
    """The bytes these requests take on the wire as hiredis read them (the
    lengths are canonical: hiredis and Valkey both refuse a leading zero or
    sign), for a read that ends inside a request; no loop over arguments."""
    lens = list(map(len, chain.from_iterable(reqs)))
    counts = list(map(len, reqs))
    return sum(lens) + 5 * len(lens) + _digits(lens) + 3 * len(counts) + _digits(counts)


class Connection(asyncio.Protocol):
    __slots__ = ("server", "client", "transport", "mode", "reader", "py", "retained", "retained_len", "boundary", "crs",
                 "fed", "queued", "tail", "obuf_soft_since", "held", "held_data", "span", "span_head", "pending",
                 "backlog")

    def __init__(self, server: Server, mode: int = -1,
                 new_reader: Callable[[], hiredis.Reader | KernelReader] | None = None) -> None:
        self.server = server
        self.client: Client | None = None
        self.transport: Any = None
        self.mode = mode if mode >= 0 else HIREDIS if _k is None else KERNEL
        if new_reader is None:
            new_reader = _k.Reader if _k is not None and self.mode == KERNEL else hiredis.Reader
        self.reader: hiredis.Reader | KernelReader = new_reader()
        self.py: PyParser | None = None
        # Bytes read and not yet parsed after the last read: with a new
        # read, the most any request completed by it can take.
        self.backlog = 0
        # Reads since the last request boundary (the first may be the tail
        # of a read: the start of a request).
        self.retained: list[bytes] = []
        self.retained_len = 0
        # Bytes fed to hiredis since the end of the last request it
        # returned, and the CRs among them (see _crs).
        self.fed = 0
        self.crs = 0
        # Requests read and checked but not run yet: those after a request
        # that waits (CLIENT PAUSE, a blocking command).
        self.queued: list[list[bytes]] | None = None
        # True when everything fed to hiredis so far formed whole requests.
        # hiredis's has_data() alone cannot tell: it is also False when a read
        # ends between two items of a request.
        self.boundary = True
        # The end of the last read fed to hiredis when it stopped inside a
        # line, None when it ended with a newline: the checks above must see
        # a length or an item cut in two by the read boundary.
        self.tail: bytes | None = None
        # Bytes fed to hiredis since its last CR, and the first byte of the
        # line they begin (after that CR's LF): Valkey refuses a '*' or '$'
        # header line that grows past 64 KiB without one, where hiredis would
        # wait for ever. Kept only across reads that end inside a line.
        self.span = 0
        self.span_head = 0
        # When the output buffer first stood over the soft limit (seconds), 0 if not.
        self.obuf_soft_since = 0
        # A request waiting for CLIENT PAUSE to end (pause.py), and reads
        # that arrived while it waits.
        self.held: list[bytes] | None = None
        self.held_data: list[bytes] = []
        # What the client is sent this turn of the event loop, replies and
        # pushed frames in order: written once, after every read of the
        # turn is served (flush_writes).
        self.pending: list[bytes] | None = None

    # -- asyncio.Protocol ----------------------------------------------------

    def connection_made(self, transport: Any) -> None:
        if self.client is not None:
            # Served raw while a busy script held the loop (scripting/busy.py),
            # now announced by the event loop: only the transport changes.
            closed = getattr(self.transport, "closed", False)
            self.transport = transport
            self.client.transport = transport
            if closed or self.client.closing:
                transport.close()
            return
        self.transport = transport
        server = self.server
        if not admit(server, transport):
            return
        peer = transport.get_extra_info("peername")
        sock = transport.get_extra_info("sockname")
        if isinstance(sock, str):
            # A unix socket: both addresses are the configured path, written
            # as Valkey 9.1 writes them ("path:0" taken for a host, port 0).
            peer = sock = f"[{server.config.values['unixsocket']}:0]:0"
        if not server.metrics.turn_open:  # an accept is a cycle of the event loop too
            open_turn(server)
        c = Client(server, server.next_client_id(), format_addr(peer), format_addr(sock))
        sockobj = transport.get_extra_info("socket")
        if sockobj is not None:
            c.fd = sockobj.fileno()
        c.transport = transport
        self.client = c
        server.client_connected(self, c)
        if transport.get_extra_info("sslcontext") is not None:
            certificate_user(server, c, transport)  # tls-auth-clients-user
        if server.log.level <= VERBOSE:
            if isinstance(sock, str):  # Valkey's connUnixAcceptHandler line
                server.log.verbose(f"Accepted connection to {server.config.values['unixsocket']}")
            else:
                server.log.verbose(f"Accepted {c.addr}")

    def pause_writing(self) -> None:
        """The transport holds more than its high-water mark: the client
        reads slower than it is written to, and used memory counts it."""
        c = self.client
        if c is not None:
            self.server.client_memory.writing(c, self, True)

    def resume_writing(self) -> None:
        c = self.client
        if c is not None:
            self.server.client_memory.writing(c, self, False)

    def connection_lost(self, exc: Exception | None) -> None:
        c = self.client
        if c is not None and not c.closing and self.server.log.level <= VERBOSE:
            self.server.log.verbose(f"Client closed connection {log_info(c)}")
        if c is not None:
            c.unwatch()
            self.server.client_disconnected(self, c)
        self.client = None

    def data_received(self, data: bytes) -> None:
        c = self.client
        if c is None or c.closing:
            return
        if self.held is not None:
            self.held_data.append(data)
            if c.blocked is not None:  # a blocked client is still read: its buffer stays bounded
                pending = sum(map(len, self.held_data))
                if pending > 1048576 and query_buffer_exceeded(c, pending):
                    c.closing = True
                    self.transport.close()
            return
        c.tot_net_in += len(data)
        c.last_interaction = time()  # CLIENT LIST idle=, as Valkey stamps each read
        if not self.server.metrics.turn_open:
            open_turn(self.server)
        out: list[bytes] = []
        c.out = out  # what CLIENT INFO reports as not yet sent (obl=)
        # A request as large as COMMANDLOG's large-request threshold may end
        # in this read: the commands it completes are observed (observe.py).
        big = self.backlog + len(data) >= self.server.large_request
        if big:
            self.server.observer.big_read(True)
        # Inline requests, and every request before AUTH (Valkey refuses a
        # long one with a protocol error), go to the exact parser.
        if self.py is not None or (self.boundary and (data[0] != 42 or not c.authenticated)):
            self._run_python(data, out)
        else:
            self._run_fast(data, out)
        c.out = None
        # The bytes read and not yet parsed, as Valkey's query buffer: hiredis
        # trims what it has parsed once that passes 1 KB, so its length is
        # within 1 KB of it; the limits are 1 MB at the least. The compiled
        # reader counts exactly the bytes not yet made into arguments.
        py = self.py
        pending = self.reader.len() if py is None else len(py.buf) - py.pos
        self.backlog = pending
        if big:
            self.server.observer.big_read(False)
        if pending > 1048576 and query_buffer_exceeded(c, pending):
            c.closing = True
            out.clear()
        server = self.server
        if out and not c.closing and (server.obuf_limited or (c.subscriptions and server.obuf_pubsub is not None)):
            # The read's replies against the hard limit before any is sent:
            # a client whose replies pass it gets none (Valkey checks as
            # each reply is added, and frees the client before writing).
            check_output(self, c, obuf_class(server, c), sum(map(len, out)))
            if c.closing:
                out.clear()
                self.pending = None
        self._send(c, out)
        if server.maxmemory and not c.closing:  # an open request's input can evict keys
            _, qalloc, args, args_len = self.query_buffer()
            server.client_memory.hold_input(c, qalloc + args_len + POINTER * args)
        if server.client_memory.limit:  # maxmemory-clients: the read grew the buffers
            measure(server, self, c)

    def _send(self, c: Client, out: list[bytes]) -> None:
        """Queue a read's replies for the end of the turn, as Valkey fills
        the client's buffer and writes every buffer before it sleeps: the
        reads that arrive together are served before any write, so the
        peers' wake-ups on loopback are paid once a turn rather than once a
        read (a third of a pipelined request's CPU). A closing client, and
        one served while a script holds the loop (busy.py: no end of turn
        comes), is written now."""
        server = self.server
        if out and not c.closing and server.busy_run is None:
            pending = self.pending
            if pending is not None:
                pending += out
                return
            self.pending = out
            self._queue(server)
            return
        if self.pending is not None:  # output queued before this read: first
            out[:0] = self.pending
            self.pending = None
        aof = server.aof
        if aof is not None and aof.hold(self, out):
            return  # sent once this turn's records are written (and fsynced under always)
        if out:
            payload = out[0] if len(out) == 1 else b"".join(out)
            c.tot_net_out += len(payload)
            self.transport.write(payload)
            if self.server.obuf_limited:
                check_output(self, c, obuf_class(self.server, c))
        if c.closing:
            self.transport.close()

    def push(self, payload: bytes) -> None:
        """Client.push for a client that is not running a request. Frames
        wait for the end of the event loop's turn with the replies and go
        out in one write: a PUBLISH to many subscribers costs one write per
        subscriber per turn, not one per message."""
        pending = self.pending
        if pending is not None:
            pending.append(payload)
            return
        self.pending = [payload]
        self._queue(self.server)

    def query_buffer(self) -> tuple[int, int, int, int]:
        """Valkey's query buffer: the bytes read and not yet made into
        arguments (qbuf=); what it costs, which for a bulk of ``BIG_ARG`` or
        more is the whole bulk from when its length is read (Valkey
        allocates it then); and the open request's arguments read so far
        (count, bytes). Reads held behind CLIENT PAUSE or a blocked request
        wait in the buffer too."""
        py = self.py
        reader = self.reader
        if py is not None:
            n, bulk = len(py.buf) - py.pos, py.open_bulk()
            args, args_len = py.open_args()
        elif self.mode == KERNEL:
            if TYPE_CHECKING:
                assert not isinstance(reader, hiredis.Reader)
            n, bulk = reader.len(), reader.open_bulk()
            args, args_len = reader.open_args()
        elif self.boundary or not self.retained_len:
            n, bulk, args, args_len = 0, -1, 0, 0
        else:  # hiredis keeps the open request whole: the exact parser reads a copy
            probe = PyParser(self.server.max_bulk)
            probe.feed(b"".join(self.retained))
            try:
                probe.next()
            except ProtocolError:
                pass
            n, bulk = len(probe.buf) - probe.pos, probe.open_bulk()
            args, args_len = probe.open_args()
        if self.held_data:
            n += sum(map(len, self.held_data))
        return n, (max(n, bulk + 2) if bulk >= BIG_ARG else n), args, args_len

    def unsent(self) -> int:
        """Output produced for the client and not yet taken by the socket:
        queued for the end of the turn, or held by the transport."""
        n = sum(map(len, self.pending)) if self.pending else 0
        transport = self.transport
        return n if transport is None else n + transport.get_write_buffer_size()

    def _queue(self, server: Server) -> None:
        """Have this connection written at the end of the turn."""
        queue = server.write_queue
        queue.append(self)
        if server.loop is None:  # no event loop (start-up): at once
            flush_writes(server)
        elif not server.metrics.turn_open:
            open_turn(server)

    def flush(self) -> None:
        """Write what was queued this turn (or hold it behind the records
        the append-only log has still to write), then check the
        output-buffer limit of the client's class."""
        pending = self.pending
        self.pending = None
        c = self.client
        transport = self.transport
        if not pending or c is None or c.closing or transport is None:
            return
        payload = pending[0] if len(pending) == 1 else b"".join(pending)
        server = self.server
        aof = server.aof
        if aof is not None and aof.hold(self, [payload]):
            return
        c.tot_net_out += len(payload)
        transport.write(payload)
        if server.obuf_limited or (c.subscriptions and server.obuf_pubsub is not None):
            check_output(self, c, obuf_class(server, c))

    def _log_protocol_error(self, msg: str) -> None:
        """Valkey's verbose line for a client closed on bad input."""
        log = self.server.log
        if log.level > VERBOSE or self.client is None:
            return
        if msg == "unbalanced quotes in request":
            msg = "unbalanced quotes in inline request"  # the log's words differ from the reply's
        log.verbose(f"Protocol error ({msg}) from client: {log_info(self.client)}. Query buffer: *redacted*")

    # -- CLIENT PAUSE (pause.py) and blocking commands (blocking.py) ---------------

    def _hold(self, req: list[bytes]) -> None:
        """Keep a request that cannot run yet and stop reading: it waits
        for the pause to end, or (``client.blocked`` set) for a key."""
        self.held = req
        c = self.client
        if c is not None and c.blocked is not None:
            # Reads go on (into held_data), as Valkey keeps reading a
            # blocked client: a disconnect must unblock it at once (a client
            # that waited for a pause before it blocked is read again).
            if self.transport is not None and not self.transport.is_closing():
                self.transport.resume_reading()
            return
        if self.transport is not None:
            self.transport.pause_reading()
        self.server.pause.hold(self)

    def _rerun(self, c: Client, req: list[bytes]) -> list[bytes] | None:
        """Run a held request again: its reply and the frames pushed to the
        client while it ran (``c.out`` still collecting), or None when it is
        held again (blocked again keeping its deadline, or paused)."""
        c.out = out = []
        reply = execute(c, req)
        if reply is POSTPONED:
            c.out = None
            self._hold(req)
            return None
        out.append(reply)
        if c.pushed is not None:  # frames pushed to c while it ran: after its reply
            out += c.pushed
            c.pushed = None
        return out

    def resume(self) -> None:
        """The pause ended: run the held request, then the rest of what was
        already read, then the reads that came meanwhile."""
        c = self.client
        req, self.held = self.held, None
        if c is None or req is None or c.closing:
            return
        out = self._rerun(c, req)
        if out is not None:
            self._continue(out)

    def run_unblocked(self) -> None:
        """A key the held request waits for is ready: run it again now, as
        Valkey re-executes it in the command that served it; the requests
        after it wait for the end of this event-loop turn."""
        c = self.client
        req, self.held = self.held, None
        if c is None or req is None or c.closing:
            return
        out = self._rerun(c, req)
        if out is None:
            return
        c.out = None
        self._send(c, out)
        self._later()

    def answer_unblocked(self, reply: bytes) -> None:
        """The held request ends without running again (timeout, CLIENT
        UNBLOCK): its reply now, the requests after it later."""
        c = self.client
        self.held = None
        if c is None or c.closing:
            return
        self._send(c, [reply])
        self._later()

    def _later(self) -> None:
        loop = self.server.loop or asyncio.get_event_loop()
        loop.call_soon(self._go_on)

    def _go_on(self) -> None:
        c = self.client
        if c is None or c.closing or self.held is not None:
            return
        out: list[bytes] = []
        c.out = out
        self._continue(out)

    def _continue(self, out: list[bytes]) -> None:
        """Run what was read after a held request, then the reads that came
        meanwhile."""
        c = self.client
        assert c is not None
        if self.transport is not None and not self.transport.is_closing():
            self.transport.resume_reading()
        if not c.closing:
            queued = self.queued
            if queued is not None:
                self.queued = None
                self._run(queued, out)
            if self.py is not None and self.held is None and not c.closing:
                self._drain(out)
        c.out = None
        self._send(c, out)
        pending, self.held_data = self.held_data, []
        for data in pending:
            if self.held is not None:
                self.held_data.append(data)
            else:
                self.data_received(data)

    # -- the two parsers -------------------------------------------------------

    def _run_hiredis(self, data: bytes, out: list[bytes]) -> None:
        retained = self.retained
        retained.append(data)
        self.retained_len += len(data)
        tail = self.tail
        if (
            _HUGE_COUNT(data) is not None
            or ((126 in data or 62 in data or 124 in data or 37 in data) and _HUGE_AGG(data) is not None)
            or self.server.huge_bulk(data) is not None
            or (43 in data and data.find(b"\n+") >= 0)
            or (61 in data and data.find(b"\n=") >= 0)
            or (40 in data and data.find(b"\n(") >= 0)
            or (126 in data and data.find(b"\n~") >= 0)
            or (124 in data and data.find(b"\n|") >= 0)
            or _LONE_CR(data) is not None
            or (data[0] in _TYPED_ITEM if tail is None
                else (tail[-1] == 13 and data[0] != 10) or _split_length(tail + data[:_TAIL], self.server.huge_bulk))
        ):
            self._fallback(out)
            return
        # A length cut into several short reads is seen whole: the tail holds
        # up to _TAIL bytes of the line still open, across reads.
        if data[-1] == 10:
            self.tail = None
        elif tail is not None and len(data) < _TAIL and 10 not in data:
            self.tail = (tail + data)[-_TAIL:]
        else:
            self.tail = data[-_TAIL:]
        if data.endswith(b"\r\n"):
            self.span = 0
        elif self._long_header(data):
            self._fallback(out)
            return
        self.crs += data.count(13)
        self.fed += len(data)
        reader = self.reader
        if TYPE_CHECKING:  # free at run time: the kind of reader is chosen once
            assert isinstance(reader, hiredis.Reader)
        reader.feed(data)
        self.boundary = False
        self._hiredis_loop(data, out)

    def _long_header(self, data: bytes) -> bool:
        """Whether a '*' or '$' line is now open past Valkey's 64 KiB
        (the exact parser then answers "too big mbulk/bulk count string")."""
        cr = data.rfind(13)
        if cr >= 0 or not self.span:
            start = cr + 1
            if start < len(data) and data[start] == 10:
                start += 1
            self.span = len(data) - start
            if self.span:
                self.span_head = data[start]
        else:
            self.span += len(data)
        return self.span > INLINE_MAX and self.span_head in (42, 36)

    def _hiredis_loop(self, data: bytes, out: list[bytes]) -> None:
        """Take every request the read completes, check their framing, then
        run them: a malformed request must not run, nor any after it."""
        reader = self.reader
        if TYPE_CHECKING:
            assert isinstance(reader, hiredis.Reader)
        gets = reader.gets
        has_data = reader.has_data
        reqs: list[list[bytes]] = []
        more = True
        while True:
            try:
                req = gets()
            except (hiredis.ProtocolError, TypeError, ValueError, MemoryError):
                # TypeError: a RESP3 map or set inside a request with an
                # aggregate as a key, which hiredis cannot hash; MemoryError:
                # an attribute header with a count too long to allocate.
                self._fallback(out)
                return
            if req is False:
                break
            if type(req) is not list:
                # A top-level non-array cannot come from hiredis here unless
                # an inline request follows RESP in the same read.
                self._fallback(out)
                return
            reqs.append(req)
            # hiredis's has_data() is also False when a read ends between
            # two items of a request: only right after a request does it
            # tell a boundary.
            more = has_data()
        if not reqs:
            if self.retained_len > RETAIN_LIMIT and self.crs << 10 < self.fed:
                # A request of large arguments in flight: the exact parser
                # holds one copy of it, where hiredis and the replay hold two.
                self._fallback(out)
            return
        try:
            crs = _crs(reqs)
        except TypeError:
            # An item other than a bulk string inside a request (the join
            # takes bytes only): the exact parser gives Valkey's error.
            self._fallback(out)
            return
        if not more:
            # The read ends at a request boundary, with a LF as it must.
            if data[-1] != 10 or self.crs != crs:
                self._fallback(out)
                return
            self.boundary = True
            self.retained.clear()
            self.retained_len = self.fed = self.crs = 0
        else:
            # The read ends inside a request: the requests before it are
            # checked alone; the open one starts the next run.
            rest = self.fed - _size(reqs)
            end = len(data) - rest
            if not 0 < end < len(data) or data[end - 1] != 10 or self.crs - data.count(13, end) != crs:
                self._fallback(out)
                return
            left = data[end:]
            self.retained = [left]
            self.retained_len = self.fed = rest
            self.crs = left.count(13)
        self._run(reqs, out)

    def _run_kernel(self, data: bytes, out: list[bytes]) -> None:
        """The compiled reader's turn: run what the read completes; at a
        byte it does not take, the exact parser goes on from the start of
        that request (after the requests before it, or once they are done
        waiting: ``_continue`` runs the queued ones first)."""
        reader = self.reader
        if TYPE_CHECKING:
            assert not isinstance(reader, hiredis.Reader)
        reqs: list[list[bytes]] = []
        rest = reader.feed(data, self.server.max_bulk, reqs)
        if rest is None:
            self.boundary = reader.idle
            if reqs:
                self._run(reqs, out)
            return
        c = self.client
        assert c is not None
        py = self.py = PyParser(self.server.max_bulk)
        py.feed(rest)
        if reqs:
            self._run(reqs, out)
        py.auth_required = not c.authenticated and c.server.acl.auth_required()
        if self.held is None and not c.closing:
            self._drain(out)

    def _run_fast(self, data: bytes, out: list[bytes]) -> None:
        mode = self.mode
        if mode == KERNEL:
            self._run_kernel(data, out)
        elif mode == HIREDIS:
            self._run_hiredis(data, out)
        else:
            self._run_python(data, out)

    def _run(self, reqs: list[list[bytes]], out: list[bytes]) -> None:
        c = self.client
        assert c is not None
        self.server.metrics.turn_cmds += len(reqs)
        for i, req in enumerate(reqs):
            if not req:
                continue
            reply = execute(c, req)
            if reply is POSTPONED:
                self._hold(req)
                if i + 1 < len(reqs):
                    self.queued = reqs[i + 1:]
                return
            out.append(reply)
            if c.pushed is not None:  # frames pushed to c while it ran: after its reply
                out += c.pushed
                c.pushed = None
            if c.closing:
                return

    def _fallback(self, out: list[bytes]) -> None:
        """Replay the reads since the last request boundary through the
        exact parser; none of their requests has run."""
        c = self.client
        assert c is not None
        retained = self.retained
        self.reader = hiredis.Reader()
        py = PyParser(self.server.max_bulk)
        py.auth_required = not c.authenticated and c.server.acl.auth_required()
        py.feed(retained[0] if len(retained) == 1 else b"".join(retained))
        retained.clear()
        self.retained_len = self.fed = self.crs = 0
        self.py = py
        self._drain(out)

    def _run_python(self, data: bytes, out: list[bytes]) -> None:
        py = self.py
        if py is None:
            py = self.py = PyParser(self.server.max_bulk)
        assert self.client is not None
        py.auth_required = not self.client.authenticated and self.client.server.acl.auth_required()
        py.feed(data)
        self._drain(out)

    def _drain(self, out: list[bytes]) -> None:
        c = self.client
        py = self.py
        assert c is not None and py is not None
        while True:
            try:
                req = py.next()
            except ProtocolError as e:
                out.append(e.reply())
                c.server.count_error(b"ERR Protocol error")  # an error reply like any other, as Valkey counts it
                c.closing = True
                self._log_protocol_error(e.msg)
                return
            if req is None:
                break
            if not req:
                continue
            self.server.metrics.turn_cmds += 1
            reply = execute(c, req)
            if reply is POSTPONED:
                self._hold(req)
                return
            out.append(reply)
            if c.pushed is not None:  # frames pushed to c while it ran: after its reply
                out += c.pushed
                c.pushed = None
            if c.closing:
                return
            py.auth_required = not c.authenticated and c.server.acl.auth_required()
        if py.idle():
            # Back to hiredis at a request boundary.
            self.py = None
            self.boundary = True
            self.tail = None
            self.span = 0
            self.retained = []
            self.retained_len = self.fed = self.crs = 0


def open_turn(server: Server) -> None:
    """The first read or output of a turn of the event loop: the turn's end
    (its writes) comes once everything ready in this turn has run."""
    loop = server.loop
    if loop is not None:  # without one (start-up, a test's bare server) output goes at once
        server.metrics.open_turn()
        loop.call_soon(flush_writes, server)


def flush_writes(server: Server) -> None:
    """End of the event loop's turn: every connection with output writes,
    measured first under maxmemory-clients. The turn counts as a cycle of
    the event loop (metrics.py)."""
    if server.metrics.turn_open:
        server.metrics.close_turn()
    server.tracking.broadcast_due()
    queue = server.write_queue
    server.write_queue = []
    if server.client_memory.limit:
        # Measured with the turn's output still queued, as Valkey counts
        # output when it is added (the transport takes a write only on the
        # loop's next iteration, so after the writes it would not show yet).
        for conn in queue:
            c = conn.client
            if c is not None and not c.closing:
                measure(server, conn, c)
    for conn in queue:
        if conn.pending is not None:
            conn.flush()


def format_addr(info: object) -> str:
    if not info:
        return ""
    if isinstance(info, tuple):
        host, port = info[0], info[1]
        return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    return str(info)

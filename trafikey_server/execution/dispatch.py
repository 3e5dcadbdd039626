"""From a parsed request to an encoded reply.

``execute`` is Valkey's processCommand in small: find the row, check arity,
authentication and transaction state, then ``call`` the handler. Every
source of commands (a socket, EXEC, a script) goes through here, so the same
checks and statistics apply everywhere. All facts about a command come from
its row in the table.
"""

from __future__ import annotations

import sys
import time as _time
from time import time
from typing import TYPE_CHECKING, Final, Protocol

from ..protocol.args import cstr
from ..protocol.keyspecs import request_keys
from ..protocol.resp import QUEUED
from ..services.acl import CTX_MULTI, CTX_TOPLEVEL, error_text
from ..services.blocking import Blocked
from ..services.faults import REFUSING, Rule
from ..services.limits import LOADING, write_refusal
from ..services.observe import redact
from ..services.tracking import refresh_hooks
from ..util.errors import CommandError
from ..util.slots import CROSSSLOT, same_slot

if TYPE_CHECKING:
    from ..protocol.table import Command
    from ..services.client import Client
    from ..values.record import Settings

# Bound once: compiled, a Final name is a C static, where an imported name
# would be looked up in the module's globals on every request.
perf_counter_ns: Final = _time.perf_counter_ns

BUSY_EVAL: Final = b"BUSY Valkey is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE."
BUSY_FUNCTION: Final = b"BUSY Valkey is busy running a script. You can only call FUNCTION KILL or SHUTDOWN NOSAVE."

# What a RESP2 client in pub/sub mode may still run.
SUBSCRIBED_RESP2: Final = frozenset((b"ping", b"subscribe", b"ssubscribe", b"unsubscribe", b"sunsubscribe",
                                     b"psubscribe", b"punsubscribe", b"quit", b"reset"))

# Commands that run at once even inside MULTI.
_TX_CONTROL: Final = frozenset((b"exec", b"discard", b"multi", b"watch", b"quit", b"reset"))

NOAUTH: Final = CommandError(b"NOAUTH Authentication required.")


class Configured(Protocol):
    """A server (server.py), as far as its settings are read."""

    @property
    def config(self) -> Settings: ...


def busy_error(server: Configured, eval_mode: bool) -> bytes:
    """Valkey's BUSY text for the running script's kind; it names Redis
    under extended-redis-compatibility."""
    msg = BUSY_EVAL if eval_mode else BUSY_FUNCTION
    if server.config.values["extended-redis-compatibility"]:
        msg = msg.replace(b"Valkey", b"Redis", 1)
    return msg

# execute's answer for a request that must wait for CLIENT PAUSE to end
# (pause.py): the connection keeps the request and runs it later.
POSTPONED: Final = bytes(bytearray(b"postponed"))


def _sanitize(s: bytes) -> bytes:
    return s.replace(b"\r", b" ").replace(b"\n", b" ")


def unknown_command(argv: list[bytes]) -> CommandError:
    """Valkey's text: the name and the first 128 bytes of the arguments."""
    args = b""
    for a in argv[1:]:
        if len(args) >= 128:
            break
        args += b"'%s' " % cstr(a)[: 128 - len(args)]
    return CommandError(_sanitize(
        b"ERR unknown command '%s', with args beginning with: %s" % (cstr(argv[0])[:128], args)))


# Not commands: HTTP's request line and header, sent to a server by a
# browser tricked into cross-protocol scripting.
CROSS_PROTOCOL: Final = frozenset((b"post", b"host:"))


def cross_protocol(c: Client) -> bytes:
    """Valkey's securityWarningCommand: the connection is closed without a
    reply, and the replies to the requests before it in the same read are
    not sent; the warning is logged at most once a minute."""
    server = c.server
    now = time()
    if abs(now - server.security_warned) > 60:
        host, _, port = c.addr.rpartition(":")
        server.log.warning(
            "Possible SECURITY ATTACK detected. It looks like somebody is sending POST or Host: commands to Valkey. "
            "This is likely due to an attacker attempting to use Cross Protocol Scripting to compromise your Valkey "
            f"instance. Connection from {host.strip('[]')}:{port} aborted.")
        server.security_warned = now
    c.closing = True
    if c.out is not None:
        c.out.clear()
    c.pushed = None
    return b""


def resolve(c: Client, argv: list[bytes]) -> Command:
    """The row for argv (a subcommand's row for container commands), or a
    CommandError Valkey would reject the request with."""
    table = c.server.table
    cmd = table.commands.get(argv[0])
    if cmd is None:
        cmd = table.commands.get(argv[0].lower())
        if cmd is None:
            c.last_cmd = b"NULL"
            raise unknown_command(argv)
    if cmd.subcommands and len(argv) >= 2:
        sub = cmd.subcommands.get(argv[1].lower())
        if sub is None:
            c.last_cmd = b"NULL"
            raise CommandError(_sanitize(
                b"ERR unknown subcommand '%s'. Try %s HELP." % (cstr(argv[1])[:128], cmd.bname.upper())))
        cmd = sub
    # CLIENT LIST's cmd= field: Valkey records the command before checking
    # its arity, and also for commands that only get queued by MULTI.
    c.last_cmd = cmd.bname
    a = cmd.arity
    n = len(argv)
    if (n != a) if a > 0 else (n < -a):
        cmd.rejected_calls += 1
        msg = f"wrong number of arguments for '{cmd.name}' command".encode()
        if cmd.bname == b"exec":  # rejectCommand on EXEC ends the transaction, in MULTI or not
            raise CommandError(_end_exec(c, msg, argv))
        raise CommandError(b"ERR " + msg)
    return cmd


def execute(c: Client, argv: list[bytes]) -> bytes:
    """Run one request from a client and return its encoded reply.

    The common case (an authenticated client whose user may run
    anything on any key (``unrestricted``), outside MULTI, no busy
    script, no slot checks, a plain command spelled as the table or in
    capitals, the right number of arguments) goes straight to ``call``;
    everything else takes Valkey's full sequence of checks below."""
    server = c.server
    fast = server.table.fast
    name = argv[0]
    # The table's maps are replaced, never changed in place (Table.with_fast):
    # the same map and the same name give the same command.
    if c.fast_map is fast and name == c.fast_name:
        cmd = c.fast_cmd
    else:
        cmd = fast.get(name)
        if cmd is not None:
            c.fast_map = fast
            c.fast_name = name
            c.fast_cmd = cmd
    if (cmd is not None and c.multi is None and c.unrestricted and server.busy_run is None
            and not server.slot_checks):
        a = cmd.arity
        if (len(argv) == a) if a > 0 else (len(argv) >= -a):
            c.last_cmd = cmd.bname
            # call(), inlined: this is the path of nearly every request.
            t0 = perf_counter_ns()
            try:
                reply = cmd.handler(c, argv)
            except Exception:
                return _failed(c, cmd, argv, t0)
            if cmd.write:
                server.dirty += 1
                if server.aof is not None:
                    server.aof.feed(c, cmd, argv, reply)
            cmd.calls += 1
            us = (perf_counter_ns() - t0) // 1000
            cmd.usec += us
            if server.latency_tracking:  # LATENCY HISTOGRAM, INFO latencystats
                cmd.timed(us)
            c.tot_cmds += 1
            # MONITOR, COMMANDLOG, LATENCY (observe.py)
            if us >= server.observe_us or len(reply) >= server.large_reply:
                server.observer.record(c, cmd, argv, us, len(reply))
            if server.ready_keys:  # clients blocked on a key this made ready (blocking.py)
                server.blocking.serve()
            return reply
    reply = _execute(c, argv) if not c.hooks else _hooked(c, argv)
    if server.ready_keys:
        server.blocking.serve()
    return reply


def _hooked(c: Client, argv: list[bytes]) -> bytes:
    """A request from a client with per-request extras (``Client.hooks``):
    client tracking (the client is the current client while its command
    runs; invalidations of its own keys and pushes to it follow its reply)
    and CLIENT REPLY OFF|SKIP (the reply is dropped; pushes still go out,
    the connection appends them after it)."""
    # Valkey's resetClient after the previous request, done before this one.
    c.reply_skip = c.reply_skip_next
    c.reply_skip_next = False
    t = c.track
    early = None
    if t is None or not t.on:
        reply = _execute(c, argv)
    else:
        tracking = c.server.tracking
        tracking.limit()
        # Keys dropped from a full table are told before this request runs,
        # so ahead of its reply (Valkey sends them from processCommand).
        early, c.pushed = c.pushed, None
        tracking.current = c
        try:
            reply = _execute(c, argv)
            if tracking.pending:
                tracking.flush_pending(c)  # pushed: they follow the reply
        finally:
            tracking.current = None
        if c.multi is None and not c.last_cmd.startswith(b"client|"):
            t.caching = False  # CLIENT CACHING covers the next command or transaction only
    if reply is POSTPONED:
        return reply
    if c.reply_off or c.reply_skip:
        reply = b""
    refresh_hooks(c)
    return b"".join(early) + reply if early else reply


def _failed(c: Client, cmd: Command, argv: list[bytes], t0: int) -> bytes:
    """A handler raised: a command error is its reply; anything else is a
    bug in the handler, answered as an internal error so that the
    connection lives on."""
    e = sys.exc_info()[1]
    if type(e) is Blocked:
        # The client now waits (blocking.py): no reply and no statistics
        # until it is unblocked, as in Valkey; MONITOR sees it now.
        observer = c.server.observer
        if observer.monitors and not cmd.admin and "skip_monitor" not in cmd.flags:
            observer.feed(c, argv)
        return POSTPONED
    if isinstance(e, CommandError):
        cmd.failed_calls += 1
        c.server.count_error(e.msg)
        reply = e.reply()
    else:  # a bug in a handler must not take the connection down
        cmd.failed_calls += 1
        c.server.log.warning(f"internal error in '{cmd.name}': {e!r}")
        msg = b"ERR internal error in '%s': %s" % (cmd.bname, type(e).__name__.encode())
        c.server.count_error(msg)
        reply = b"-" + msg + b"\r\n"
    cmd.calls += 1
    us = (perf_counter_ns() - t0) // 1000
    cmd.usec += us
    c.tot_cmds += 1
    server = c.server
    if server.latency_tracking:
        cmd.timed(us)
    if us >= server.observe_us or len(reply) >= server.large_reply or c.in_exec:
        server.observer.record(c, cmd, argv, us, len(reply))
    return reply


def _execute(c: Client, argv: list[bytes]) -> bytes:
    server = c.server
    if not c.authenticated and server.acl.auth_required():
        # Valkey refuses an unauthenticated client before it looks at the
        # command's arity or even whether the command exists.
        root = server.table.lookup(argv[0])
        if root is None or not root.no_auth:
            if root is None and argv[0].lower() in CROSS_PROTOCOL:
                return cross_protocol(c)
            if root is not None:
                root.rejected_calls += 1
                if root.bname == b"exec":
                    return _exec_abort(c, NOAUTH.msg)
            if c.multi is not None:
                flag_transaction(c)
            server.count_error(NOAUTH.msg)
            return NOAUTH.reply()
    try:
        cmd = resolve(c, argv)
    except CommandError as e:
        if argv[0].lower() in CROSS_PROTOCOL:  # checked before the lookup in Valkey: only unknown names can match
            return cross_protocol(c)
        if c.multi is not None:
            flag_transaction(c)
        server.count_error(e.msg)
        return e.reply()
    if c.multi is not None and cmd.no_multi:
        flag_transaction(c)
        cmd.rejected_calls += 1
        err = b"ERR Command '%s' not allowed inside a transaction" % cmd.bname
        server.count_error(err)
        return b"-" + err + b"\r\n"
    if not c.acl.unrestricted:
        refused = _acl_refusal(c, cmd, argv)
        if refused is not None:
            return refused
    if (server.busy_run is not None and not cmd.allow_busy) or (server.loading and not cmd.loading):
        # Served while the files load (persist/loading.py), or while a
        # script runs too long (one loaded from the AOF too): Valkey's
        # loading check comes before its busy one.
        if server.loading and not cmd.loading:
            msg = LOADING
        else:
            assert server.busy_run is not None
            msg = busy_error(server, server.busy_run.eval_mode)
        # Valkey refuses a write for a disk error or want of replicas before it says BUSY
        # (it skips maxmemory while a script is busy).
        if server.noreplicas or server.disk_error is not None:
            refusal = write_refusal(c, cmd, argv, oom=False)
            if refusal is not None:
                msg = refusal
        cmd.rejected_calls += 1  # rejectCommand
        if c.multi is not None:
            if cmd.bname == b"exec":
                # rejectCommand on EXEC: execCommandAbort ends the transaction.
                c.discard_multi()
                msg = b"EXECABORT Transaction discarded because of: " + msg
                server.count_error(msg)
                return b"-" + msg + b"\r\n"
            flag_transaction(c)
        server.count_error(msg)
        return b"-" + msg + b"\r\n"
    if server.slot_checks and not _slots_ok(c, cmd, argv):
        server.count_error(CROSSSLOT)
        if c.multi is not None:
            if cmd.bname == b"exec":
                c.discard_multi()
            else:
                flag_transaction(c)
        return b"-" + CROSSSLOT + b"\r\n"
    if server.maxmemory or server.noreplicas or server.disk_error is not None:
        oom = write_refusal(c, cmd, argv)
        if oom is not None:
            cmd.rejected_calls += 1
            if c.multi is not None:
                if cmd.bname == b"exec":
                    c.discard_multi()
                    oom = b"EXECABORT Transaction discarded because of: " + oom
                else:
                    flag_transaction(c)
            server.count_error(oom)
            return b"-" + oom + b"\r\n"
    if c.subscriptions and c.resp == 2 and (cmd.parent or cmd).bname not in SUBSCRIBED_RESP2:
        return _reject(c, cmd, b"Can't execute '%s': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / "
                           b"RESET are allowed in this context" % cmd.bname)
    if server.pause.end and server.pause.must_wait(c, cmd, argv):
        return POSTPONED
    if c.multi is not None:
        root = cmd.parent or cmd
        if root.bname not in _TX_CONTROL:
            # A doomed transaction answers QUEUED but keeps nothing, as
            # Valkey's queueMultiCommand (CLIENT LIST shows multi=0).
            if not (c.multi_error or c.watch_dirty):
                c.multi.append((cmd, argv))
            return QUEUED
    if server.faults.rules and (cmd.parent or cmd).bname != b"trafikey.fault":
        rule = server.faults.match(c, cmd, argv)
        if rule is not None:
            return _fault(c, cmd, argv, rule)
    return call(c, cmd, argv)


def _fault(c: Client, cmd: Command, argv: list[bytes], rule: Rule) -> bytes:
    """A fault rule fires on this request (services/faults.py). A refusing
    rule answers for the command, which does not run: an error counted as
    Valkey counts a refusal (EXEC refused ends its transaction, as Valkey's
    execCommandAbort, or discards it before a redirection), or the
    connection closed with no reply. The others run it as ``call`` does
    (it writes, propagates and counts) and then lose its reply, cut it, or
    hold it. A request that blocks spends nothing: the rule is tried again
    when it runs again. MONITOR sees the request, then a line that names
    the rule."""
    server = c.server
    faults = server.faults
    kind = rule.kind
    if kind in REFUSING:
        faults.spend(rule)
        observer = server.observer
        if observer.monitors:
            if not cmd.admin and "skip_monitor" not in cmd.flags:
                observer.feed(c, redact(cmd, argv))
            _monitor_fault(c, rule)
        if kind == b"drop":
            c.closing = True
            if cmd.bname == b"exec":
                c.discard_multi()
            return b""
        cmd.rejected_calls += 1
        msg = faults.error_text(rule, c, cmd, argv)
        if cmd.bname == b"exec":
            if kind == b"error":
                return _exec_abort(c, msg)
            c.discard_multi()
        server.count_error(msg)
        return b"-" + msg + b"\r\n"
    reply = call(c, cmd, argv)
    if reply is POSTPONED:
        return reply
    faults.spend(rule)
    if server.observer.monitors:
        _monitor_fault(c, rule)
    if kind == b"delay":
        assert isinstance(rule.value, int)
        server.blocking.delay(c, reply, rule.value)
        return POSTPONED
    c.closing = True
    c.pushed = None  # nothing follows the lost or cut reply
    if kind == b"cut":
        assert isinstance(rule.value, int)
        return reply[:rule.value]
    return b""  # drop-after: the reply is lost


def _monitor_fault(c: Client, rule: Rule) -> None:
    line = [b"TRAFIKEY.FAULT", b"FIRED", b"%d" % rule.id, rule.kind.upper()]
    if rule.arg is not None:
        line.append(rule.arg)
    c.server.observer.feed(c, line)


def _reject(c: Client, cmd: Command, msg: bytes) -> bytes:
    """Valkey's rejectCommandFormat: an ERR, counted; a transaction being
    queued is doomed, and EXEC itself ends it (execCommandAbort)."""
    cmd.rejected_calls += 1
    if cmd.bname == b"exec":
        return _exec_abort(c, msg)
    if c.multi is not None:
        flag_transaction(c)
    msg = b"ERR " + msg
    c.server.count_error(msg)
    return b"-" + msg + b"\r\n"


def _acl_refusal(c: Client, cmd: Command, argv: list[bytes]) -> bytes | None:
    """Valkey's ACL check in processCommand: NOPERM, and a transaction
    being queued is doomed."""
    reason, pos = c.acl.denial(cmd, argv)
    if not reason:
        return None
    c.server.acl.log.denial(c, cmd, argv, reason, pos, CTX_TOPLEVEL if c.multi is None else CTX_MULTI)
    cmd.rejected_calls += 1
    msg = b"NOPERM " + error_text(reason, c.acl, cmd)
    if cmd.bname == b"exec":
        return _exec_abort(c, msg)
    if c.multi is not None:
        flag_transaction(c)
    c.server.count_error(msg)
    return b"-" + msg + b"\r\n"


def _exec_abort(c: Client, msg: bytes) -> bytes:
    """Valkey's execCommandAbort: EXEC refused before it runs ends the
    transaction, and says why."""
    msg = _end_exec(c, msg, [b"EXEC"])
    c.server.count_error(msg)
    return b"-" + msg + b"\r\n"


def _end_exec(c: Client, msg: bytes, argv: list[bytes]) -> bytes:
    """execCommandAbort but its count: the transaction discarded, MONITOR
    told (it saw MULTI), and the error's text."""
    c.discard_multi()
    if c.server.observer.monitors:
        c.server.observer.feed(c, argv)
    return b"EXECABORT Transaction discarded because of: " + msg


def _slots_ok(c: Client, cmd: Command, argv: list[bytes]) -> bool:
    """Valkey Cluster's CROSSSLOT rule: one request's keys share a slot,
    and so do all the keys of the commands a transaction queued, checked
    when EXEC arrives."""
    if cmd.bname == b"exec" and c.multi:
        return same_slot(k for qcmd, qargv in c.multi for k in request_keys(qcmd, qargv))
    if not cmd.key_specs:
        return True
    return same_slot(request_keys(cmd, argv))
def flag_transaction(c: Client) -> None:
    """Valkey's flagTransaction: an error while queuing dooms the
    transaction (EXEC will answer EXECABORT) and frees what was queued."""
    c.multi_error = True
    c.multi = []


def call(c: Client, cmd: Command, argv: list[bytes]) -> bytes:
    """Run a resolved command, keeping its statistics (``execute``'s fast
    path is this function inlined)."""
    t0 = perf_counter_ns()
    try:
        reply = cmd.handler(c, argv)
        if cmd.write:
            server = c.server
            server.dirty += 1
            if server.aof is not None:
                server.aof.feed(c, cmd, argv, reply)
    except Exception:
        reply = _failed(c, cmd, argv, t0)
        if c.server.tracking.clients:  # Valkey remembers a read's keys even when it failed
            c.server.tracking.after_call(cmd, argv)
        return reply
    cmd.calls += 1
    us = (perf_counter_ns() - t0) // 1000
    cmd.usec += us
    c.tot_cmds += 1
    server = c.server
    if server.latency_tracking:
        cmd.timed(us)
    # In EXEC the reply a command is logged with is the transaction's so far.
    if us >= server.observe_us or len(reply) >= server.large_reply or c.in_exec:
        server.observer.record(c, cmd, argv, us, len(reply))
    if server.tracking.clients:  # client-side caching: the keys a read read
        server.tracking.after_call(cmd, argv)
    return reply

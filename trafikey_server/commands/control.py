"""Server commands: databases, TIME, SHUTDOWN, INFO, CONFIG, COMMAND (DEBUG is debug.py)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..execution.persist.acks import AofAck
from ..execution.persist.acks import reply as ack_reply
from ..execution.persist.oneoff import rewrite_child
from ..protocol import commandinfo, keyspecs
from ..protocol.resp import OK, ZERO, array, bulk, bulks, integer, status
from ..services.blocking import may_block
from ..services.config import ConfigError, Option
from ..services.config_rewrite import NO_FILE, rewrite
from ..util import glob
from ..util.errors import CommandError, syntax
from ..util.parsing import to_int
from .info import render

if TYPE_CHECKING:
    from ..protocol.table import Command
    from ..services.client import Client


def _flush_mode(argv: list[bytes]) -> None:
    if len(argv) > 2 or (len(argv) == 2 and argv[1].lower() not in (b"sync", b"async")):
        raise syntax()


def flushall(c: Client, argv: list[bytes]) -> bytes:
    """Valkey's flushAllDataAndResetRDB: every key removed is a change; a
    background save (of data now gone) is stopped; with save rules set the
    empty dataset is saved at once, which leaves no change to save."""
    _flush_mode(argv)
    srv = c.server
    removed = sum(db.clear() for db in srv.dbs)
    srv.tracking.flushed()
    srv.dirty += removed - 1  # dispatch counts the command itself as one
    snaps = srv.snapshots
    if snaps.child_pid:
        snaps.kill_child()
    if snaps.rules() and snaps.save():
        snaps.dirty_at_save = srv.dirty + 1  # the save holds this FLUSHALL too
    return OK


def flushdb(c: Client, argv: list[bytes]) -> bytes:
    _flush_mode(argv)
    c.server.dirty += c.db.clear() - 1  # every key removed is a change (dispatch counts one)
    c.server.tracking.flushed()
    return OK


def dbsize(c: Client, argv: list[bytes]) -> bytes:
    return integer(len(c.db))


def swapdb(c: Client, argv: list[bytes]) -> bytes:
    a = to_int(argv[1])
    if a is None:
        raise CommandError(b"ERR invalid first DB index")
    b = to_int(argv[2])
    if b is None:
        raise CommandError(b"ERR invalid second DB index")
    dbs = c.server.dbs
    if not (0 <= a < len(dbs) and 0 <= b < len(dbs)):
        raise CommandError(b"ERR DB index is out of range")
    if a != b:
        c.server.swap_dbs(a, b)
    return OK


def time(c: Client, argv: list[bytes]) -> bytes:
    us = c.server.clock.us()
    s = b"%d" % (us // 1_000_000)
    u = b"%d" % (us % 1_000_000)
    return b"*2\r\n" + bulk(s) + bulk(u)


# -- COMMAND ------------------------------------------------------------------


def command(c: Client, argv: list[bytes]) -> bytes:
    return array([commandinfo.info(cmd, c.resp) for cmd in c.server.table.ordered])


def command_count(c: Client, argv: list[bytes]) -> bytes:
    return integer(len(c.server.table.ordered))


def _find(c: Client, name: bytes) -> Command | None:
    """``get`` or ``client|setname``: a row or a subcommand row."""
    head, sep, tail = name.lower().partition(b"|")
    cmd = c.server.table.lookup(head)
    if cmd is not None and sep:
        return cmd.subcommands.get(tail)
    return cmd


def command_info(c: Client, argv: list[bytes]) -> bytes:
    if len(argv) == 2:
        return command(c, argv)
    out = []
    for name in argv[2:]:
        cmd = _find(c, name)
        out.append(c.r.null if cmd is None else commandinfo.info(cmd, c.resp))
    return array(out)


def command_docs(c: Client, argv: list[bytes]) -> bytes:
    if len(argv) == 2:
        cmds = list(c.server.table.ordered)
    else:
        cmds = [cmd for cmd in (_find(c, n) for n in argv[2:]) if cmd is not None]
    return c.r.map([(bulk(cmd.bname), commandinfo.docs(cmd, c.resp)) for cmd in cmds])


def command_list(c: Client, argv: list[bytes]) -> bytes:
    cmds = list(c.server.table.everything())
    if len(argv) == 2:
        return bulks([cmd.bname for cmd in cmds])
    if len(argv) != 5 or argv[2].lower() != b"filterby":
        raise syntax()
    kind, arg = argv[3].lower(), argv[4]
    if kind == b"module":
        # The job core's rows present themselves as the commands of a module named "emq".
        # A row of no module (Valkey's own) matches no name, not even "".
        return bulks([cmd.bname for cmd in cmds if "module" in cmd.docs and cmd.docs["module"].encode() == arg])
    if kind == b"aclcat":
        want = "@" + arg.decode(errors="replace").lower()
        return bulks([cmd.bname for cmd in cmds if want in cmd.acl_categories])
    if kind == b"pattern":
        return bulks([cmd.bname for cmd in cmds if glob.match(arg.lower(), cmd.bname)])
    raise syntax()


def _getkeys(c: Client, argv: list[bytes]) -> list[tuple[bytes, tuple[str, ...]]]:
    """The keys of the full command in argv[2:], by the same key-spec walk
    that the cluster-slot check uses (``keyspecs.py``)."""
    sub = argv[2:]
    cmd = keyspecs.resolve(c.server.table, sub)
    return [(sub[pos], flags) for pos, flags in keyspecs.keys_and_flags(cmd, sub)]


def command_getkeys(c: Client, argv: list[bytes]) -> bytes:
    return bulks([k for k, _ in _getkeys(c, argv)])


def command_getkeysandflags(c: Client, argv: list[bytes]) -> bytes:
    r = c.r
    out = []
    for k, flags in _getkeys(c, argv):
        fs = r.set_header(len(flags)) + b"".join(b"+%s\r\n" % f.encode() for f in flags)
        out.append(b"*2\r\n" + bulk(k) + fs)
    return array(out)


_COMMAND_HELP = [
    b"COMMAND <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    b"(no subcommand)",
    b"    Return details about all commands.",
    b"COUNT",
    b"    Return the total number of commands in this server.",
    b"LIST",
    b"    Return a list of all commands in this server.",
    b"INFO [<command-name> ...]",
    b"    Return details about multiple commands.",
    b"    If no command names are given, documentation details for all",
    b"    commands are returned.",
    b"DOCS [<command-name> ...]",
    b"    Return documentation details about multiple commands.",
    b"    If no command names are given, documentation details for all",
    b"    commands are returned.",
    b"GETKEYS <full-command>",
    b"    Return the keys from a full command.",
    b"GETKEYSANDFLAGS <full-command>",
    b"    Return the keys and the access flags from a full command.",
    b"HELP",
    b"    Print this help.",
]
_COMMAND_HELP_REPLY = array([b"+%s\r\n" % line for line in _COMMAND_HELP])


def command_help(c: Client, argv: list[bytes]) -> bytes:
    return _COMMAND_HELP_REPLY


# -- LASTSAVE, SHUTDOWN, DEBUG ---------------------------------------------------


def lastsave(c: Client, argv: list[bytes]) -> bytes:
    return integer(c.server.snapshots.lastsave)


def save(c: Client, argv: list[bytes]) -> bytes:
    snaps = c.server.snapshots
    if snaps.child_pid:
        raise CommandError(b"ERR Background save already in progress")
    snaps.saves += 1
    if not snaps.save():
        raise CommandError(b"ERR")
    return OK


def bgsave(c: Client, argv: list[bytes]) -> bytes:
    snaps = c.server.snapshots
    schedule = False
    if len(argv) > 1:
        opt = argv[1].lower()
        # SCHEDULE only matters while another kind of child runs (an AOF
        # rewrite in Valkey); with none, it starts the save at once.
        if len(argv) == 2 and opt == b"schedule":
            schedule = True
        elif len(argv) == 2 and opt == b"cancel":
            if snaps.child_pid:
                c.server.log.notice("Background saving will be aborted due to user request")
                snaps.kill_child()
                snaps.last_bgsave_ok = False
                return status(b"Background saving cancelled")
            if snaps.scheduled:
                snaps.scheduled = False
                return status(b"Scheduled background saving cancelled")
            raise CommandError(b"ERR Background saving is currently not in progress or scheduled")
        else:
            raise syntax()
    if snaps.child_pid:
        raise CommandError(b"ERR Background save already in progress")
    if rewrite_child(c.server).child_pid or c.in_exec:
        # Valkey does not fork beside another child, nor in the middle of a
        # transaction: it schedules, or refuses when not asked to schedule.
        if not (schedule or c.in_exec):
            raise CommandError(b"ERR Another child process is active (AOF?): can't BGSAVE right now. "
                               b"Use BGSAVE SCHEDULE in order to schedule a BGSAVE whenever possible.")
        snaps.scheduled = True
        c.server.log.notice("Background saving scheduled due to user request" if schedule
                            else "Background saving scheduled to run after transaction execution")
        return status(b"Background saving scheduled")
    if not snaps.bgsave():
        raise CommandError(b"ERR")
    return status(b"Background saving started")


def shutdown(c: Client, argv: list[bytes]) -> bytes:
    opts = {a.lower() for a in argv[1:]}
    if len(opts) != len(argv) - 1 or not opts <= {b"nosave", b"save", b"now", b"force", b"abort"}:
        raise syntax()
    if {b"nosave", b"save"} <= opts or (b"abort" in opts and len(opts) > 1):
        raise syntax()
    if b"abort" in opts:
        if not c.server.abort_shutdown():
            raise CommandError(b"ERR No shutdown in progress.")
        return OK
    c.server.scripting.debugging.kill_all()
    if not c.server.snapshots.shutdown_save(b"save" in opts, b"nosave" in opts, b"force" in opts):
        raise CommandError(b"ERR Errors trying to SHUTDOWN. Check logs.")
    c.server.request_shutdown()
    c.closing = True
    return b""


def local_client(c: Client) -> bool:
    """A connection from this machine, as Valkey's ``local`` settings mean it."""
    host = c.addr.rpartition(":")[0].strip("[]")
    return host in ("127.0.0.1", "::1") or not c.addr or host.startswith("::ffff:127.")


# -- CONFIG -----------------------------------------------------------------------


def _config_pairs(c: Client, pattern: bytes) -> list[tuple[str, Option]]:
    opts = c.server.config.options
    pat = pattern.decode(errors="replace").lower()
    if not any(ch in pat for ch in "*?["):
        # An exact name is echoed as sent, case included, like Valkey.
        opt = opts.get(pat)
        return [] if opt is None else [(pattern.decode(errors="replace"), opt)]
    bpat = pat.encode()
    return [(name, opt) for name, opt in opts.items()
            if not opt.hidden and glob.match(bpat, name.encode())]


def config_get(c: Client, argv: list[bytes]) -> bytes:
    cfg = c.server.config
    seen: dict[str, str] = {}
    for pattern in argv[2:]:
        for name, opt in _config_pairs(c, pattern):
            if name not in seen:
                seen[name] = opt.show(cfg.values[opt.name])
    return c.r.bulk_map((k.encode(), v.encode()) for k, v in seen.items())


def _set_failed(name: bytes, reason: str) -> CommandError:
    return CommandError(b"ERR CONFIG SET failed (possibly related to argument '%s') - %s"
                        % (name, reason.encode()))


def config_set(c: Client, argv: list[bytes]) -> bytes:
    if len(argv) % 2:
        raise syntax()
    cfg = c.server.config
    chosen: list[tuple[bytes, Option, bytes]] = []
    names: set[str] = set()
    for i in range(2, len(argv), 2):
        opt = cfg.options.get(argv[i].decode(errors="replace").lower())
        if opt is None:
            raise CommandError(b"ERR Unknown option or number of arguments for CONFIG SET - '%s'" % argv[i])
        if not opt.mutable:
            raise _set_failed(argv[i], "can't set immutable config")
        if opt.protected:
            allowed = c.server.config.values.get("enable-protected-configs", "no")
            if allowed == "no" or (allowed == "local" and not local_client(c)):
                raise _set_failed(argv[i], "can't set protected config")
        if opt.name in names:
            raise _set_failed(argv[i], "duplicate parameter")
        names.add(opt.name)
        chosen.append((argv[i], opt, argv[i + 1]))
    # All values parse before any is stored: CONFIG SET is all-or-nothing.
    parsed: list[tuple[bytes, Option, Any]] = []
    for name, opt, text in chosen:
        try:
            parsed.append((name, opt, opt.parse(text.decode(errors="replace"))))
        except ConfigError as e:
            raise _set_failed(name, str(e)) from None
    old = {opt.name: cfg.values[opt.name] for _, opt, _ in parsed}
    applied: list[Option] = []
    # Every value is stored before any is applied, as Valkey does: options
    # that only work together (a TLS certificate and its key) can change in one call.
    for _, opt, value in parsed:
        cfg.values[opt.name] = value
    try:
        for _, opt, value in parsed:
            if opt.apply is not None:
                applied.append(opt)
                opt.apply(c.server, value)
    except ConfigError as e:
        # Valkey's restoreBackupConfig: the old values back, and every
        # apply already run (the failed one too) run again with them.
        cfg.values.update(old)
        for done in applied:
            assert done.apply is not None
            try:
                done.apply(c.server, old[done.name])
            except ConfigError as again:
                c.server.log.warning(f"Failed applying restored failed CONFIG SET command: {again}")
        raise _set_failed(applied[-1].name.encode() if applied else parsed[0][0], str(e)) from None
    return OK


def config_resetstat(c: Client, argv: list[bytes]) -> bytes:
    srv = c.server
    for cmd in srv.table.ordered:
        cmd.reset_stats()
    srv.error_stats.clear()
    srv.total_error_replies = 0
    srv.expired_keys = 0
    srv.expired_fields = 0
    srv.scripting.evicted = 0
    srv.memory.reset_stats()
    srv.client_memory.evicted = 0
    srv.rejected_connections = srv.qbuf_disconnections = srv.obuf_disconnections = 0
    srv.metrics.reset()
    # The network totals start again from zero (each client keeps its own).
    net_in, net_out = srv.net_bytes()
    srv.net_in_gone -= net_in
    srv.net_out_gone -= net_out
    srv.faults.reset_stats()
    return OK


def config_rewrite(c: Client, argv: list[bytes]) -> bytes:
    cfg = c.server.config
    if not cfg.file:
        raise CommandError(f"ERR {NO_FILE}")
    try:
        rewrite(cfg, users=c.server.acl.config_lines())
    except OSError as e:
        c.server.log.warning(f"CONFIG REWRITE failed: {e.strerror}")
        raise CommandError(f"ERR Rewriting config file: {e.strerror}") from None
    c.server.log.notice("CONFIG REWRITE executed with success.")
    return OK


_CONFIG_HELP = array([b"+%s\r\n" % line for line in (
    b"CONFIG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    b"GET <pattern>",
    b"    Return parameters matching the glob-like <pattern> and their values.",
    b"SET <directive> <value>",
    b"    Set the configuration <directive> to <value>.",
    b"RESETSTAT",
    b"    Reset statistics reported by the INFO command.",
    b"REWRITE",
    b"    Rewrite the configuration file.",
    b"HELP",
    b"    Print this help.",
)])


def config_help(c: Client, argv: list[bytes]) -> bytes:
    return _CONFIG_HELP


def config(c: Client, argv: list[bytes]) -> bytes:
    """The container row: dispatch routes every call to a subcommand row
    (arity -2 guarantees one), so this only answers if that ever changes."""
    raise CommandError(b"ERR unknown subcommand '%s'. Try CONFIG HELP." % argv[1] if len(argv) > 1
                       else b"ERR wrong number of arguments for 'config' command")


def info(c: Client, argv: list[bytes]) -> bytes:
    text = render(c.server, [a.decode(errors="replace") for a in argv[1:]]).encode()
    return c.r.verbatim(text)


# -- WAIT / WAITAOF: a standalone server with no replicas ---------------------------


def _ms_deadline(c: Client, arg: bytes) -> int:
    """A timeout in milliseconds as Valkey's getTimeoutFromObjectOrReply
    reads it: an absolute server-clock deadline, 0 for none."""
    t = to_int(arg)
    if t is None:
        raise CommandError(b"ERR timeout is not an integer or out of range")
    if t < 0:
        raise CommandError(b"ERR timeout is negative")
    if t > 0:
        now = c.server.clock.ms()
        if t > (1 << 63) - 1 - now:
            raise CommandError(b"ERR timeout is out of range")
        t += now
    return t


def wait(c: Client, argv: list[bytes]) -> bytes:
    """No replica ever acknowledges: 0 at once when that is enough (or the
    client may not block), else 0 when the timeout ends the wait."""
    numreplicas = to_int(argv[1])
    if numreplicas is None:
        raise CommandError(b"ERR value is not an integer or out of range")
    deadline = _ms_deadline(c, argv[2])
    if numreplicas <= 0 or not may_block(c):
        return ZERO
    c.server.blocking.block(c, [], type(None), deadline, ZERO)


def waitaof(c: Client, argv: list[bytes]) -> bytes:
    """The local copy counts once an fsync covered the client's last write
    (persist/acks.py); no replica ever acknowledges. What is not reached
    yet is waited for, until the timeout or CLIENT UNBLOCK (the counts
    then), or until appendonly is turned off (an error)."""
    numlocal = to_int(argv[1])
    if numlocal is None:
        raise CommandError(b"ERR value is not an integer or out of range")
    if not 0 <= numlocal <= 1:
        raise CommandError(b"ERR value is out of range, value must between 0 and 1")
    numreplicas = to_int(argv[2])
    if numreplicas is None or numreplicas < 0:
        raise CommandError(b"ERR value is out of range, must be positive")
    deadline = _ms_deadline(c, argv[3])
    server = c.server
    if numlocal and server.aof is None:
        raise CommandError(b"ERR WAITAOF cannot be used when numlocal is set but appendonly is disabled.")
    offsets = server.aof_offsets
    acklocal = 1 if server.aof is not None and offsets.synced >= c.woff else 0
    if (numreplicas <= 0 and acklocal >= numlocal) or not may_block(c):
        return ack_reply(acklocal)
    offsets.waiters.add(c)
    server.blocking.block(c, [], AofAck, deadline, ack_reply(acklocal), data=(c.woff, numlocal, numreplicas))

"""MONITOR, SLOWLOG, LATENCY and MEMORY: watching the server from a client.

What they report is gathered by observe.py (durations, MONITOR lines) and
by INFO's memory readings. Memory figures are estimates: a Python process
does not allocate per key the way Valkey's allocator does, so MEMORY USAGE
adds up the sizes Valkey's encodings would take, and MEMORY STATS reports
the used memory those estimates add up to (services/memory.py).
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from ..protocol.resp import OK, array, bulk, bulks, integer
from ..services.acl import lookup
from ..services.memory import BASE, EXPIRES_SLOT, MAIN_SLOT, estimate
from ..services.observe import CommandLog
from ..util import latency as hdr
from ..util.errors import CommandError, syntax
from ..util.parsing import to_int

if TYPE_CHECKING:
    from ..protocol.table import Command
    from ..services.client import Client


def _help(lines: list[bytes]) -> bytes:
    return array([b"+%s\r\n" % line for line in lines])


def _container(name: bytes) -> CommandError:
    return CommandError(b"ERR unknown subcommand. Try %s HELP." % name)


# -- MONITOR ----------------------------------------------------------------------------


def monitor(c: Client, argv: list[bytes]) -> bytes:
    """From now on the client receives a line for each command the server
    runs. Asked twice, Valkey ignores the second request without a reply."""
    observer = c.server.observer
    if c in observer.monitors:
        return b""
    observer.add_monitor(c)
    return OK


# -- SLOWLOG ----------------------------------------------------------------------------

_SLOWLOG_HELP = _help([
    b"SLOWLOG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    b"GET [<count>]",
    b"    Return top <count> entries from the slowlog (default: 10, -1 mean all).",
    b"    Entries are made of:",
    b"    id, timestamp, time in microseconds, arguments array, client IP and port,",
    b"    client name",
    b"LEN",
    b"    Return the length of the slowlog.",
    b"RESET",
    b"    Reset the slowlog.",
    b"HELP",
    b"    Print this help.",
])


def slowlog(c: Client, argv: list[bytes]) -> bytes:
    raise _container(b"SLOWLOG")


def slowlog_help(c: Client, argv: list[bytes]) -> bytes:
    return _SLOWLOG_HELP


def slowlog_len(c: Client, argv: list[bytes]) -> bytes:
    return integer(len(c.server.observer.slowlog))


def slowlog_reset(c: Client, argv: list[bytes]) -> bytes:
    c.server.observer.slowlog.clear()
    return OK


def _log_entries(log: CommandLog, count: int) -> bytes:
    if count == -1:
        count = len(log)
    entries = []
    for i, (eid, when, measure, args, peer, name) in enumerate(log.entries):
        if i >= count:
            break
        entries.append(array([integer(eid), integer(when), integer(measure), bulks(args), bulk(peer), bulk(name)]))
    return array(entries)


def _log_count(arg: bytes) -> int:
    n = to_int(arg)
    if n is None or n < -1:
        raise CommandError(b"ERR count should be greater than or equal to -1")
    return n


def slowlog_get(c: Client, argv: list[bytes]) -> bytes:
    if len(argv) > 3:
        raise CommandError(b"ERR unknown subcommand or wrong number of arguments for '%s'. Try SLOWLOG HELP."
                           % argv[1])
    return _log_entries(c.server.observer.slowlog, _log_count(argv[2]) if len(argv) == 3 else 10)


# -- COMMANDLOG -------------------------------------------------------------------------

_COMMANDLOG_HELP = _help([
    b"COMMANDLOG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    b"GET <count> <type>",
    b"    Return top <count> entries of the specified <type> from the commandlog (-1 mean all).",
    b"    Entries are made of:",
    b"    id, timestamp,",
    b"        time in microseconds for type of slow,",
    b"        or size in bytes for type of large-request,",
    b"        or size in bytes for type of large-reply",
    b"    arguments array, client IP and port,",
    b"    client name",
    b"LEN <type>",
    b"    Return the length of the specified type of commandlog.",
    b"RESET <type>",
    b"    Reset the specified type of commandlog.",
    b"HELP",
    b"    Print this help.",
])


def _log_of(c: Client, arg: bytes) -> CommandLog:
    log = c.server.observer.logs.get(arg.lower())
    if log is None:
        raise CommandError(b"ERR type should be one of the following: slow, large-request, large-reply")
    return log


def commandlog(c: Client, argv: list[bytes]) -> bytes:
    raise _container(b"COMMANDLOG")


def commandlog_help(c: Client, argv: list[bytes]) -> bytes:
    return _COMMANDLOG_HELP


def commandlog_get(c: Client, argv: list[bytes]) -> bytes:
    count = _log_count(argv[2])  # the count is read before the type
    return _log_entries(_log_of(c, argv[3]), count)


def commandlog_len(c: Client, argv: list[bytes]) -> bytes:
    return integer(len(_log_of(c, argv[2])))


def commandlog_reset(c: Client, argv: list[bytes]) -> bytes:
    _log_of(c, argv[2]).clear()
    return OK


# -- LATENCY ----------------------------------------------------------------------------

_LATENCY_HELP = _help([
    b"LATENCY <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    b"DOCTOR",
    b"    Return a human readable latency analysis report.",
    b"GRAPH <event>",
    b"    Return an ASCII latency graph for the <event> class.",
    b"HISTORY <event>",
    b"    Return time-latency samples for the <event> class.",
    b"LATEST",
    b"    Return the latest latency samples for all events.",
    b"RESET [<event> ...]",
    b"    Reset latency data of one or more <event> classes.",
    b"    (default: reset all data for all event classes)",
    b"HISTOGRAM [COMMAND ...]",
    b"    Return a cumulative distribution of latencies in the format of a histogram for the specified command "
    b"names.",
    b"    If no commands are specified then all histograms are replied.",
    b"HELP",
    b"    Print this help.",
])


def latency(c: Client, argv: list[bytes]) -> bytes:
    raise _container(b"LATENCY")


def latency_help(c: Client, argv: list[bytes]) -> bytes:
    return _LATENCY_HELP


def _histogram(c: Client, cmd: Command) -> bytes:
    """Valkey's fillCommandCDF: the calls, then each power-of-two bucket
    (µs) that holds calls with the calls up to it."""
    r = c.r
    counts = cmd.latency_counts()
    points = hdr.cdf(counts)
    return (r.map_header(2) + bulk(b"calls") + integer(sum(counts.values())) + bulk(b"histogram_usec")
            + r.map_header(len(points)) + b"".join(integer(us) + integer(n) for us, n in points))


def latency_histogram(c: Client, argv: list[bytes]) -> bytes:
    """LATENCY HISTOGRAM [command ...]: every command with a histogram, or
    those named (a container names its subcommands too; unknown names are
    skipped, a name given twice answers twice)."""
    table = c.server.table
    if len(argv) == 2:
        chosen = [cmd for cmd in table.everything() if cmd.latency_counts()]
    else:
        chosen = []
        for name in argv[2:]:
            cmd = lookup(table, name)
            if cmd is None:
                continue
            chosen.extend(x for x in cmd.all_commands() if x.latency_counts())
    return c.r.map_header(len(chosen)) + b"".join(bulk(cmd.bname) + _histogram(c, cmd) for cmd in chosen)


def latency_latest(c: Client, argv: list[bytes]) -> bytes:
    rows = []
    for event, series in c.server.observer.latency.items():
        when, ms = series.samples[-1]
        rows.append(array([bulk(event.encode()), integer(when), integer(ms), integer(series.max)]))
    return array(rows)


def latency_history(c: Client, argv: list[bytes]) -> bytes:
    series = c.server.observer.latency.get(argv[2].decode(errors="replace"))
    if series is None:
        return array([])
    return array([array([integer(when), integer(ms)]) for when, ms in series.samples])


def latency_reset(c: Client, argv: list[bytes]) -> bytes:
    events = c.server.observer.latency
    if len(argv) == 2:
        n = len(events)
        events.clear()
        return integer(n)
    n = 0
    for name in argv[2:]:
        if events.pop(name.decode(errors="replace"), None) is not None:
            n += 1
    return integer(n)


def latency_doctor(c: Client, argv: list[bytes]) -> bytes:
    """Valkey's report, without its event-specific advice (the events this
    server records are command latencies, where the advice is the slow log)."""
    observer = c.server.observer
    threshold = c.server.config.values.get("latency-monitor-threshold", 0)
    if not observer.latency and threshold == 0:
        return c.r.verbatim(
            b"I'm sorry, Dave, I can't do that. Latency monitoring is disabled in this Valkey instance. You may "
            b"use \"CONFIG SET latency-monitor-threshold <milliseconds>.\" in order to enable it.\n")
    if not observer.latency:
        return c.r.verbatim(b"No latency spike was observed during the lifetime of this Valkey instance, not "
                            b"in the slightest bit.\n")
    now = int(time.time())
    lines = [b"Latency spikes are observed in this Valkey instance.\n\n"]
    for i, (event, series) in enumerate(observer.latency.items(), 1):
        values = [ms for _, ms in series.samples]
        n = len(values)
        avg = sum(values) // n
        mad = sum(abs(v - avg) for v in values) // n
        period = (now - series.samples[0][0]) / n
        lines.append(b"%d. %s: %d latency spikes (average %dms, mean deviation %dms, period %.2f sec). "
                     b"Worst all time event %dms.\n" % (i, event.encode(), n, avg, mad, period, series.max))
    lines.append(b"\nThere are latency events logged that are not easy to fix. Please get some "
                 b"help from Valkey community, providing this report in your help request.\n")
    return c.r.verbatim(b"".join(lines))


# -- MEMORY -----------------------------------------------------------------------------

_MEMORY_HELP = _help([
    b"MEMORY <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    b"DOCTOR",
    b"    Return memory problems reports.",
    b"MALLOC-STATS",
    b"    Return internal statistics report from the memory allocator.",
    b"PURGE",
    b"    Attempt to purge dirty pages for reclamation by the allocator.",
    b"STATS",
    b"    Return information about the memory usage of the server.",
    b"USAGE <key> [SAMPLES <count>]",
    b"    Return memory in bytes used by <key> and its value. Nested values are",
    b"    sampled up to <count> times (default: 5, 0 means sample all).",
    b"HELP",
    b"    Print this help.",
])


def memory(c: Client, argv: list[bytes]) -> bytes:
    raise _container(b"MEMORY")


def memory_help(c: Client, argv: list[bytes]) -> bytes:
    return _MEMORY_HELP


def memory_usage(c: Client, argv: list[bytes]) -> bytes:
    samples = 5
    i = 3
    while i < len(argv):
        if argv[i].lower() == b"samples" and i + 1 < len(argv):
            n = to_int(argv[i + 1])
            if n is None:
                raise CommandError(b"ERR value is not an integer or out of range")
            samples = n
            if samples < 0:
                raise syntax()
            if samples == 0:
                samples = 1 << 62
            i += 2
        else:
            raise syntax()
    value = c.db.peek(argv[2])
    if value is None:
        return c.r.null
    return integer(estimate(argv[2], value, samples))


def memory_stats(c: Client, argv: list[bytes]) -> bytes:
    s = c.server
    mem = s.memory
    dataset = mem.dataset()
    overhead = mem.overhead()
    rss = overhead + dataset  # total.allocated: used_memory
    peak = max(mem.peak, rss)
    startup = BASE
    keys = sum(len(db) for db in s.dbs)
    r = c.r
    pairs: list[tuple[bytes, bytes]] = []

    def put(name: bytes, enc: bytes) -> None:
        pairs.append((bulk(name), enc))

    for name, v in ((b"peak.allocated", peak), (b"total.allocated", rss), (b"startup.allocated", startup),
                    (b"replication.backlog", 0), (b"replicas.repl.buffer", 0), (b"clients.slaves", 0),
                    (b"clients.normal", s.client_memory.total), (b"cluster.links", 0), (b"cluster.slot_import", 0),
                    (b"cluster.slot_export", 0), (b"aof.buffer", 0), (b"lua.caches", 0),
                    (b"functions.caches", 0)):
        put(name, integer(v))
    for db in s.dbs:
        if db.id == 0 or len(db):
            put(b"db.%d" % db.id, r.map([(bulk(b"overhead.hashtable.main"), integer(len(db) * MAIN_SLOT)),
                                         (bulk(b"overhead.hashtable.expires"),
                                          integer(len(db.expires) * EXPIRES_SLOT))]))
    put(b"overhead.db.hashtable.lut", integer(0))
    put(b"overhead.db.hashtable.rehashing", integer(0))
    put(b"overhead.total", integer(overhead))
    put(b"db.dict.rehashing.count", integer(0))
    put(b"keys.count", integer(keys))
    put(b"keys.bytes-per-key", integer(dataset // keys if keys else 0))
    put(b"dataset.bytes", integer(dataset))
    net = rss - startup
    put(b"dataset.percentage", r.double(100.0 * dataset / net if net > 0 else 0.0))
    put(b"peak.percentage", r.double(100.0 * rss / peak if peak else 0.0))
    for name in (b"allocator.allocated", b"allocator.active", b"allocator.resident"):
        put(name, integer(rss))
    put(b"allocator.muzzy", integer(0))
    for name in (b"allocator-fragmentation", b"allocator-rss", b"rss-overhead"):
        put(name + b".ratio", r.double(1.0))
        put(name + b".bytes", integer(0))
    put(b"fragmentation", r.double(1.0))
    put(b"fragmentation.bytes", integer(0))
    return r.map(pairs)


def memory_doctor(c: Client, argv: list[bytes]) -> bytes:
    if c.server.memory.used() < 5 * 1024 * 1024:
        text = (b"Hi Sam, this instance is empty or is using very little memory, my issues detector can't be "
                b"used in these conditions. Please, leave for your mission on Earth and fill it with some data. "
                b"The new Sam and I will be back to our programming as soon as I finished rebooting.\n")
    else:
        text = (b"Hi Sam, I can't find any memory issue in your instance. "
                b"I can only account for what occurs on this base.\n")
    return c.r.verbatim(text)

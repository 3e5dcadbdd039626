"""Consumer-group commands: XGROUP (CREATE, SETID, DESTROY, CREATECONSUMER,
DELCONSUMER, HELP), XACK, XPENDING, XCLAIM, XAUTOCLAIM, XINFO GROUPS and
XINFO CONSUMERS, as Valkey 9's ``t_stream.c`` has them (XREADGROUP shares
XREAD's code in ``stream.py``).

None of these tells WATCH or tracking of a change, as in Valkey, whose
group commands do not signal the key modified (XGROUP CREATE MKSTREAM does,
for the key it adds). XCLAIM and XAUTOCLAIM are logged as the XCLAIMs
(FORCE JUSTID, with the delivery time and count) that rebuild each pending
entry they touched, as Valkey propagates them.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from ..execution.persist.aof import propagate
from ..protocol.args import cstr, word
from ..protocol.resp import EMPTY_ARRAY, ONE, ZERO, array_header, bulk, integer
from ..util.errors import CommandError
from ..util.parsing import int64, to_int
from ..values.stream import INVALID_ENTRIES_READ, MAX_ID, Consumer, Group, Nack, Stream, entry_reply, fmt_id
from .stream import (
    create_consumer,
    error_format,
    get_stream,
    help_reply,
    lag_reply,
    now_ms,
    parse_id,
    parse_interval,
    range_bounds,
    setid_effect,
    subcommand_error,
    xclaim_effect,
    xinfo_stream_of,
)

if TYPE_CHECKING:
    from ..services.client import Client

_NOT_INTEGER = b"ERR value is not an integer or out of range"


def _int(arg: bytes, err: bytes = _NOT_INTEGER) -> int:
    v = to_int(arg)
    if v is None:
        raise CommandError(err)
    return v


# -- XGROUP ------------------------------------------------------------------------

_XGROUP_HELP = [
    b"CREATE <key> <groupname> <id|$> [option]",
    b"    Create a new consumer group. Options are:",
    b"    * MKSTREAM",
    b"      Create the empty stream if it does not exist.",
    b"    * ENTRIESREAD entries_read",
    b"      Set the group's entries_read counter (internal use).",
    b"CREATECONSUMER <key> <groupname> <consumer>",
    b"    Create a new consumer in the specified group.",
    b"DELCONSUMER <key> <groupname> <consumer>",
    b"    Remove the specified consumer.",
    b"DESTROY <key> <groupname>",
    b"    Remove the specified group.",
    b"SETID <key> <groupname> <id|$> [ENTRIESREAD entries_read]",
    b"    Set the current group ID and entries_read counter.",
]


def xgroup_help(c: Client, argv: list[bytes]) -> bytes:
    return help_reply(argv, _XGROUP_HELP)


def _xgroup(c: Client, argv: list[bytes]) -> tuple[Stream | None, Group | None, bool, int]:
    """xgroupCommand's common part: the options after the ID (MKSTREAM,
    ENTRIESREAD), the stream and the group, with Valkey's errors in its
    order."""
    sub = word(argv[1])
    mkstream = False
    entries_read = INVALID_ENTRIES_READ
    n = len(argv)
    i = 5
    create = sub == b"create"
    setid = sub == b"setid"
    while i < n:
        opt = word(argv[i])
        if create and opt == b"mkstream":
            mkstream = True
            i += 1
        elif (create or setid) and opt == b"entriesread" and i + 1 < n:
            entries_read = _int(argv[i + 1])
            if entries_read < 0 and entries_read != INVALID_ENTRIES_READ:
                raise CommandError(b"ERR value for ENTRIESREAD must be positive or -1")
            i += 2
        else:
            raise subcommand_error(argv)
    s = get_stream(c.db, argv[2])
    g = None
    if not mkstream:
        if s is None:
            raise CommandError(b"ERR The XGROUP subcommand requires the key to exist. Note that for CREATE you may "
                               b"want to use the MKSTREAM option to create an empty stream automatically.")
        g = s.groups.get(argv[3])
        if g is None and sub in (b"setid", b"createconsumer", b"delconsumer"):
            raise error_format(b"-NOGROUP No such consumer group '%s' for key name '%s'"
                               % (cstr(argv[3]), cstr(argv[2])))
    elif s is not None:
        g = s.groups.get(argv[3])
    return s, g, mkstream, entries_read


def xgroup_create(c: Client, argv: list[bytes]) -> bytes:
    s, _, _, entries_read = _xgroup(c, argv)
    if not 5 <= len(argv) <= 8:
        raise subcommand_error(argv)
    key = argv[2]
    if cstr(argv[4]) == b"$":
        sid = s.last_id if s is not None else 0
    else:
        sid = parse_id(argv[4], 0, True)
    db = c.db
    if s is None:
        s = Stream()
        db.add(key, s)
    if argv[3] in s.groups:
        raise CommandError(b"BUSYGROUP Consumer Group name already exists")
    s.groups[argv[3]] = Group(sid, entries_read)
    db.notify(b"xgroup-create", key)
    return b"+OK\r\n"


def xgroup_setid(c: Client, argv: list[bytes]) -> bytes:
    s, g, _, entries_read = _xgroup(c, argv)
    if len(argv) not in (5, 7):
        raise subcommand_error(argv)
    assert s is not None and g is not None
    sid = s.last_id if cstr(argv[4]) == b"$" else parse_id(argv[4])
    g.last_id = sid
    g.entries_read = entries_read
    c.db.notify(b"xgroup-setid", argv[2])
    return b"+OK\r\n"


def xgroup_destroy(c: Client, argv: list[bytes]) -> bytes:
    s, g, _, _ = _xgroup(c, argv)
    assert s is not None
    if g is None:
        return ZERO
    del s.groups[argv[3]]
    db = c.db
    db.notify(b"xgroup-destroy", argv[2])
    db.signal_ready(argv[2])  # blocked XREADGROUPs of the group answer NOGROUP
    return ONE


def xgroup_createconsumer(c: Client, argv: list[bytes]) -> bytes:
    _, g, _, _ = _xgroup(c, argv)
    assert g is not None
    if argv[4] in g.consumers:
        return ZERO
    create_consumer(c, g, argv[4], argv[2])
    return ONE


def xgroup_delconsumer(c: Client, argv: list[bytes]) -> bytes:
    _, g, _, _ = _xgroup(c, argv)
    assert g is not None
    consumer = g.consumers.pop(argv[4], None)
    if consumer is None:
        return ZERO
    for sid in consumer.pel:
        g.pel.pop(sid, None)
    c.db.notify(b"xgroup-delconsumer", argv[2])
    propagate(c, [argv])
    return integer(len(consumer.pel))


# -- XACK / XPENDING -------------------------------------------------------------------


def _group_of(c: Client, key: bytes, name: bytes) -> tuple[Stream | None, Group | None]:
    s = get_stream(c.db, key, True)
    return s, (s.groups.get(name) if s is not None else None)


def xack(c: Client, argv: list[bytes]) -> bytes:
    _, g = _group_of(c, argv[1], argv[2])
    if g is None:
        return ZERO
    ids = [parse_id(a, 0, True) for a in argv[3:]]
    acked = 0
    for sid in ids:
        nack = g.pel.pop(sid, None)
        if nack is not None:
            del nack.consumer.pel[sid]
            acked += 1
    return integer(acked)


def _nogroup(key: bytes, name: bytes) -> CommandError:
    return error_format(b"-NOGROUP No such key '%s' or consumer group '%s'" % (cstr(key), cstr(name)))


def xpending(c: Client, argv: list[bytes]) -> bytes:
    n = len(argv)
    if n != 3 and not 6 <= n <= 9:
        raise CommandError(b"ERR syntax error")
    minidle = count = 0
    start = end = 0
    consumername = None
    if n >= 6:
        at = 3
        if word(argv[3]) == b"idle":
            minidle = _int(argv[4])
            if n < 8:
                raise CommandError(b"ERR syntax error")
            at += 2
        count = max(_int(argv[at + 2]), 0)
        start, end = range_bounds(argv[at], argv[at + 1])
        if at + 3 < n:
            consumername = argv[at + 3]
    _, g = _group_of(c, argv[1], argv[2])
    if g is None:
        raise _nogroup(argv[1], argv[2])
    if n == 3:
        if not g.pel:
            r = c.r
            return b"*4\r\n" + ZERO + r.null + r.null + r.null_array
        pel = g.pending()
        owners = [(name, len(g.consumers[name].pel)) for name in g.consumer_names() if g.consumers[name].pel]
        return (b"*4\r\n" + integer(len(pel)) + bulk(fmt_id(pel[0])) + bulk(fmt_id(pel[-1]))
                + array_header(len(owners))
                + b"".join(b"*2\r\n" + bulk(name) + bulk(b"%d" % k) for name, k in owners))
    source: Group | Consumer = g
    if consumername is not None:
        consumer = g.consumers.get(consumername)
        if consumer is None:
            return EMPTY_ARRAY
        source = consumer
    now = now_ms(c)
    out = [b""]
    k = 0
    for sid in source.pending(start, end):
        if not count:
            break
        nack = source.pel[sid]
        if minidle and now - nack.delivery_time < minidle:
            continue
        k += 1
        count -= 1
        out.append(b"*4\r\n" + bulk(fmt_id(sid)) + bulk(nack.consumer.name)
                   + integer(max(now - nack.delivery_time, 0)) + integer(nack.delivery_count))
    out[0] = array_header(k)
    return b"".join(out)


# -- XCLAIM / XAUTOCLAIM -------------------------------------------------------------------


def _claimer(c: Client, g: Group, name: bytes, key: bytes, now: int) -> Consumer:
    consumer = g.consumers.get(name)
    if consumer is None:
        consumer = create_consumer(c, g, name, key)
    consumer.seen_time = now
    return consumer


def _give(g: Group, sid: int, nack: Nack, consumer: Consumer) -> None:
    if nack.consumer is not consumer:
        if nack.consumer is not None:
            nack.consumer.pel.pop(sid, None)
        consumer.pel[sid] = nack
        nack.consumer = consumer


class _ClaimArgs:
    """XCLAIM's arguments after the consumer, as parsed: min-idle-time, the
    IDs (their arguments too, which the log repeats as sent), the delivery
    time (IDLE or TIME, the last given, else now), RETRYCOUNT (-1: not
    given), FORCE, JUSTID and LASTID (0: not given)."""

    __slots__ = ("minidle", "ids", "id_at", "deliverytime", "retrycount", "force", "justid", "last_id")

    def __init__(self) -> None:
        self.minidle = 0
        self.ids: list[int] = []
        self.id_at = 5  # argv's index of the first ID
        self.deliverytime = -1
        self.retrycount = -1
        self.force = False
        self.justid = False
        self.last_id = 0


def _claim_args(argv: list[bytes], now: int) -> _ClaimArgs:
    """xclaimCommand's parsing, with its errors in its order: min-idle-time,
    the IDs up to the first argument that is not one, then the options."""
    a = _ClaimArgs()
    a.minidle = max(_int(argv[4], b"ERR Invalid min-idle-time argument for XCLAIM"), 0)
    n = len(argv)
    j = 5
    while j < n:
        try:
            a.ids.append(parse_id(argv[j], 0, True))
        except CommandError:
            break
        j += 1
    while j < n:
        more = n - 1 - j
        opt = word(argv[j])
        if opt == b"force":
            a.force = True
        elif opt == b"justid":
            a.justid = True
        elif opt == b"idle" and more:
            j += 1
            a.deliverytime = now - _int(argv[j], b"ERR Invalid IDLE option argument for XCLAIM")
        elif opt == b"time" and more:
            j += 1
            a.deliverytime = _int(argv[j], b"ERR Invalid TIME option argument for XCLAIM")
        elif opt == b"retrycount" and more:
            j += 1
            a.retrycount = _int(argv[j], b"ERR Invalid RETRYCOUNT option argument for XCLAIM")
        elif opt == b"lastid" and more:
            j += 1
            a.last_id = parse_id(argv[j], 0, True)
        else:
            raise error_format(b"Unrecognized XCLAIM option '%s'" % cstr(argv[j]))
        j += 1
    if a.deliverytime < 0 or a.deliverytime > now:
        a.deliverytime = now
    return a


def xclaim(c: Client, argv: list[bytes]) -> bytes:
    """XCLAIM: the group's last ID moved up to LASTID, then each pending
    entry named given to the consumer (created if new) unless it was
    delivered more recently than min-idle-time; an entry deleted from the
    stream leaves the group's pending list. Each change is logged as the
    XCLAIM that rebuilds it (carrying the group's last ID); a last ID moved
    that no such XCLAIM carries is logged as XGROUP SETID."""
    key, groupname = argv[1], argv[2]
    s, g = _group_of(c, key, groupname)
    if s is None or g is None:
        raise _nogroup(key, groupname)
    now = now_ms(c)
    a = _claim_args(argv, now)
    moved = False
    if a.last_id > g.last_id:
        g.last_id = a.last_id
        moved = True
    consumer = _claimer(c, g, argv[3], key, now)
    minidle, justid = a.minidle, a.justid
    out = [b""]
    k = 0
    effects: list[list[bytes]] = []
    for pos, sid in enumerate(a.ids):
        nack = g.pel.get(sid)
        fields = s.get(sid)
        if fields is None:
            if nack is not None:
                effects.append(xclaim_effect(key, groupname, g, argv[a.id_at + pos], nack))
                moved = False
                del g.pel[sid]
                nack.consumer.pel.pop(sid, None)
            continue
        if a.force and nack is None:
            nack = Nack(now, 1, consumer)  # a forced entry: owned from the start, never too fresh
            g.pel[sid] = nack
            consumer.pel[sid] = nack
        elif nack is None or (minidle and now - nack.delivery_time < minidle):
            continue
        elif nack.consumer is not consumer:
            nack.consumer.pel.pop(sid, None)
        nack.delivery_time = a.deliverytime
        if a.retrycount >= 0:
            nack.delivery_count = a.retrycount
        elif not justid:
            nack.delivery_count = int64(nack.delivery_count + 1)
        if nack.consumer is not consumer:
            consumer.pel[sid] = nack
            nack.consumer = consumer
        out.append(bulk(fmt_id(sid)) if justid else entry_reply(sid, fields))
        k += 1
        consumer.active_time = now
        effects.append(xclaim_effect(key, groupname, g, argv[a.id_at + pos], nack))
        moved = False
    if moved:
        effects.append(setid_effect(key, groupname, g))
    propagate(c, effects)
    out[0] = array_header(k)
    return b"".join(out)


_COUNT_MAX = ((1 << 63) - 1) // 16
# Valkey allocates 16 bytes per COUNT up front (the deleted IDs) and refuses
# a COUNT whose allocation fails; the machine's memory is where it fails.
_ALLOC_LIMIT = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")


def xautoclaim(c: Client, argv: list[bytes]) -> bytes:
    key, groupname = argv[1], argv[2]
    minidle = max(_int(argv[4], b"ERR Invalid min-idle-time argument for XAUTOCLAIM"), 0)
    start, ex = parse_interval(argv[5], 0)
    if ex:
        if start == MAX_ID:
            raise CommandError(b"ERR invalid start ID for the interval")
        start += 1
    count = 100
    justid = False
    n = len(argv)
    j = 6
    while j < n:
        more = n - 1 - j
        opt = word(argv[j])
        if opt == b"count" and more:
            v = to_int(argv[j + 1])
            if v is None or not 1 <= v <= _COUNT_MAX:
                raise CommandError(b"ERR COUNT must be > 0")
            count = v
            j += 1
        elif opt == b"justid":
            justid = True
        else:
            raise CommandError(b"ERR syntax error")
        j += 1
    s, g = _group_of(c, key, groupname)
    if s is None or g is None:
        raise _nogroup(key, groupname)
    if count * 16 > _ALLOC_LIMIT:
        raise CommandError(b"ERR Insufficient memory, failed allocating transient memory, COUNT too high.")
    now = now_ms(c)
    consumer = _claimer(c, g, argv[3], key, now)
    attempts = count * 10
    pel = g.pel.after(start, attempts + 1)  # all the walk can see, and the cursor after it
    i = 0
    claimed: list[bytes] = []
    deleted: list[int] = []
    effects: list[list[bytes]] = []
    while attempts > 0 and count and i < len(pel):
        attempts -= 1
        sid = pel[i]
        i += 1
        nack = g.pel[sid]
        fields = s.get(sid)
        if fields is None:
            effects.append(xclaim_effect(key, groupname, g, fmt_id(sid), nack))
            del g.pel[sid]
            nack.consumer.pel.pop(sid, None)
            deleted.append(sid)
            count -= 1
            continue
        if minidle and now - nack.delivery_time < minidle:
            continue
        if nack.consumer is not consumer:
            nack.consumer.pel.pop(sid, None)
        nack.delivery_time = now
        if not justid:
            nack.delivery_count = int64(nack.delivery_count + 1)
        if nack.consumer is not consumer:
            consumer.pel[sid] = nack
            nack.consumer = consumer
        claimed.append(bulk(fmt_id(sid)) if justid else entry_reply(sid, fields))
        count -= 1
        consumer.active_time = now
        effects.append(xclaim_effect(key, groupname, g, fmt_id(sid), nack))
    cursor = pel[i] if i < len(pel) else 0
    propagate(c, effects)
    return (b"*3\r\n" + bulk(fmt_id(cursor)) + array_header(len(claimed)) + b"".join(claimed)
            + array_header(len(deleted)) + b"".join(bulk(fmt_id(sid)) for sid in deleted))


# -- XINFO GROUPS / CONSUMERS --------------------------------------------------------


def xinfo_groups(c: Client, argv: list[bytes]) -> bytes:
    s = xinfo_stream_of(c, argv)
    r = c.r
    out = [array_header(len(s.groups))]
    for name in sorted(s.groups):
        g = s.groups[name]
        out += [r.map_header(6), bulk(b"name"), bulk(name), bulk(b"consumers"), integer(len(g.consumers)),
                bulk(b"pending"), integer(len(g.pel)), bulk(b"last-delivered-id"), bulk(fmt_id(g.last_id)),
                bulk(b"entries-read"), integer(g.entries_read) if g.entries_read != INVALID_ENTRIES_READ else r.null,
                bulk(b"lag"), lag_reply(c, s, g)]
    return b"".join(out)


def xinfo_consumers(c: Client, argv: list[bytes]) -> bytes:
    s = xinfo_stream_of(c, argv)
    g = s.groups.get(argv[3])
    if g is None:
        raise error_format(b"-NOGROUP No such consumer group '%s' for key name '%s'" % (cstr(argv[3]), cstr(argv[2])))
    r = c.r
    now = now_ms(c)
    out = [array_header(len(g.consumers))]
    for name in g.consumer_names():
        consumer = g.consumers[name]
        inactive = now - consumer.active_time if consumer.active_time != -1 else -1
        out += [r.map_header(4), bulk(b"name"), bulk(name), bulk(b"pending"), integer(len(consumer.pel)),
                bulk(b"idle"), integer(max(now - consumer.seen_time, 0)), bulk(b"inactive"), integer(inactive)]
    return b"".join(out)


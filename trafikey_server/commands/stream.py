"""Stream commands: XADD, XRANGE/XREVRANGE, XLEN, XDEL, XTRIM, XSETID,
XREAD and XREADGROUP (blocking or not), XINFO STREAM and XINFO HELP.

The rules, the order in which arguments are checked (it decides which error
a bad request gets), the keyspace events and the replies are Valkey 9's
``t_stream.c``; the structure is ``values/stream.py`` (an ID is one int,
``ms << 64 | seq``). The consumer-group commands are ``stream_group.py``,
which shares the ID parsing, the entry replies and the group bookkeeping
kept here.

Valkey writes several of these commands to the append-only file as other
commands (XADD with the ID it generated and an approximate trim made exact,
XREADGROUP as the XCLAIMs that rebuild its pending entries plus an XGROUP
SETID): their handlers hand those effects to the log themselves
(``propagate``) and the log's rule for them adds nothing.

A blocked XREAD or XREADGROUP waits through ``services/blocking.py``: XADD
signals its key ready on every entry added, and XREADGROUP also wakes when
its key is deleted or replaced or its group destroyed, to answer with the
error its rerun then finds. XREAD's ``$`` stands for the last ID at the time
it blocked (Valkey rewrites the argument; the rerun reads the IDs back from
the blocked state).
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Final

from ..execution.persist.aof import propagate
from ..protocol.args import cstr, word
from ..protocol.resp import EMPTY_ARRAY, ZERO, array_header, bulk, integer, stream_id
from ..services.blocking import may_block
from ..util.errors import CommandError, syntax, wrong_args, wrongtype
from ..util.parsing import LLONG_MAX, int64, to_int
from ..values.stream import (
    INVALID_ENTRIES_READ,
    MAX_ID,
    SEQ_MASK,
    Consumer,
    Group,
    Nack,
    Stream,
    entry_reply,
    fmt_id,
    id_ms,
    make_id,
)

if TYPE_CHECKING:
    from ..keyspace.db import Db
    from ..services.client import Client

_UINT64_MAX: Final = (1 << 64) - 1
INVALID_ID: Final = b"ERR Invalid stream ID specified as stream command argument"
_EXHAUSTED: Final = b"ERR The stream has exhausted the last possible ID, unable to add more items"
_TOP_ITEM: Final = b"ERR The ID specified in XADD is equal or smaller than the target stream top item"
_ZERO_ID: Final = b"ERR The ID specified in XADD must be greater than 0-0"
_BOTH_STRATEGIES: Final = b"ERR syntax error, MAXLEN and MINID options at the same time are not compatible"
NO_SUCH_KEY: Final = b"ERR no such key"
_SPACES: Final = b" \t\n\v\f\r"


# -- helpers shared with stream_group.py ------------------------------------------


def error_format(text: bytes) -> CommandError:
    """addReplyErrorFormat: newlines in the formatted text become spaces;
    a text starting with ``-`` carries its own error code."""
    text = text.replace(b"\r", b" ").replace(b"\n", b" ")
    return CommandError(text[1:] if text.startswith(b"-") else b"ERR " + text)


def _string2ull(s: bytes) -> int | None:
    """Valkey's string2ull: string2ll, else strtoull over the whole text."""
    v = to_int(s)
    if v is not None:
        return v if v >= 0 else None
    t = s.lstrip(_SPACES)
    neg = False
    if t[:1] in (b"+", b"-"):
        neg = t[:1] == b"-"
        t = t[1:]
    if not t or not t.isdigit() or not t.isascii():
        return None
    v = int(t)
    if v > _UINT64_MAX:
        return None  # ERANGE
    return (-v) & _UINT64_MAX if neg else v


def parse_id(arg: bytes, missing_seq: int = 0, strict: bool = False) -> int:
    """streamParseIDOrReply (``strict``: streamParseStrictIDOrReply): ``ms-seq``,
    ``ms`` (the sequence is ``missing_seq``), ``-`` and ``+`` unless strict."""
    # The form every reply gives back (XACK, XCLAIM take IDs by the ten):
    # two runs of at most 19 ASCII digits, which strtoull reads as int()
    # does, leading zeros included, and which cannot pass 64 bits.
    ms_text, dash, seq_text = arg.partition(b"-")
    if (dash and 0 < len(ms_text) < 20 and 0 < len(seq_text) < 20 and ms_text.isdigit()
            and seq_text.isdigit()):
        return int(ms_text) << 64 | int(seq_text)
    sid, _ = _parse_id(arg, missing_seq, strict, False)
    return sid


def _parse_id(arg: bytes, missing_seq: int, strict: bool, auto_seq: bool) -> tuple[int, bool]:
    """streamGenericParseIDOrReply; with ``auto_seq`` the form ``ms-*`` is
    accepted and the second value says whether a sequence was given."""
    if len(arg) > 127:
        raise CommandError(INVALID_ID)
    buf = cstr(arg)
    if buf == b"-" or buf == b"+":
        if strict:
            raise CommandError(INVALID_ID)
        return (0 if buf == b"-" else MAX_ID), True
    ms_text, dash, seq_text = buf.partition(b"-")
    ms = _string2ull(ms_text)
    if ms is None:
        raise CommandError(INVALID_ID)
    if not dash:
        return make_id(ms, missing_seq), True
    if auto_seq and seq_text == b"*":
        return make_id(ms, 0), False
    seq = _string2ull(seq_text)
    if seq is None:
        raise CommandError(INVALID_ID)
    return make_id(ms, seq), True


def parse_interval(arg: bytes, missing_seq: int) -> tuple[int, bool]:
    """streamParseIntervalIDOrReply: an ID, exclusive when written ``(ID``."""
    if len(arg) > 1 and arg[0] == 40:  # '('
        return parse_id(arg[1:], missing_seq, True), True
    return parse_id(arg, missing_seq), False


def range_bounds(start_arg: bytes, end_arg: bytes) -> tuple[int, int]:
    """The start and end of an XRANGE-like request, exclusive bounds moved
    inward with Valkey's errors at the edges."""
    start, ex = parse_interval(start_arg, 0)
    if ex:
        if start == MAX_ID:
            raise CommandError(b"ERR invalid start ID for the interval")
        start += 1
    end, ex = parse_interval(end_arg, SEQ_MASK)
    if ex:
        if end == 0:
            raise CommandError(b"ERR invalid end ID for the interval")
        end -= 1
    return start, end


# The running transaction (its reply list, unique while it runs) and the
# time it started.
_unit: Final[list[object]] = [None, 0]


def now_ms(c: Client) -> int:
    """Valkey's commandTimeSnapshot: a transaction's commands all see the
    time it started (a script already runs on a stopped clock), so its
    generated IDs, delivery times and consumer times agree."""
    if c.in_exec:
        unit = _unit
        if unit[0] is not c.exec_out:
            unit[0] = c.exec_out
            unit[1] = c.server.clock.ms()
        return unit[1]  # type: ignore[return-value]
    if c.server.loading:
        # The clock stands at 0 while a file loads (so that nothing
        # expires); the consumers and pending entries it rebuilds get the
        # time of day, as in Valkey.
        return time.time_ns() // 1_000_000 + c.server.clock.offset_ms
    return c.server.clock.ms()


def get_stream(db: Db, key: bytes, read: bool = False) -> Stream | None:
    """The stream under key (WRONGTYPE for another type); a read that finds
    no key raises ``keymiss`` as Valkey's lookupKeyRead does."""
    v = db.get(key)
    if v is None:
        if read:
            db.notify(b"keymiss", key)
        return None
    if type(v) is Stream:
        return v
    raise wrongtype()


def logging(c: Client) -> bool:
    """Whether the append-only file records what this command does (it
    opens only after start-up's replay)."""
    return c.server.aof is not None




def last_valid_id(s: Stream) -> int:
    """streamLastValidID: the last live entry's ID (0 when empty)."""
    return s.edge_id(False)


def lag_reply(c: Client, s: Stream, g: Group) -> bytes:
    """streamReplyWithCGLag: entries not yet delivered to the group, or null
    when that cannot be told."""
    if not s.entries_added:
        return ZERO
    if g.entries_read != INVALID_ENTRIES_READ and not s.range_has_tombstones(g.last_id):
        return integer(int64(s.entries_added - g.entries_read))
    read = s.estimate_entries_read(g.last_id)
    if read != INVALID_ENTRIES_READ:
        return integer(int64(s.entries_added - read))
    return c.r.null


def xclaim_effect(key: bytes, group: bytes, g: Group, sid_arg: bytes, nack: Nack) -> list[bytes]:
    """streamPropagateXCLAIM: the XCLAIM that recreates a pending entry as it is."""
    return [b"XCLAIM", key, group, nack.consumer.name, b"0", sid_arg, b"TIME", b"%d" % nack.delivery_time,
            b"RETRYCOUNT", b"%d" % nack.delivery_count, b"FORCE", b"JUSTID", b"LASTID", fmt_id(g.last_id)]


def setid_effect(key: bytes, group: bytes, g: Group) -> list[bytes]:
    """streamPropagateGroupID."""
    return [b"XGROUP", b"SETID", key, group, fmt_id(g.last_id), b"ENTRIESREAD", b"%d" % g.entries_read]


def create_consumer(c: Client, g: Group, name: bytes, key: bytes) -> Consumer:
    """streamCreateConsumer (the caller knows the name is new)."""
    consumer = Consumer(name, now_ms(c))
    g.consumers[name] = consumer
    c.db.notify(b"xgroup-createconsumer", key)
    return consumer


def help_reply(argv: list[bytes], lines: list[bytes]) -> bytes:
    """addReplyHelp: the command's name as sent, in capitals, heads it."""
    out = [array_header(len(lines) + 3),
           b"+%s <subcommand> [<arg> [value] [opt] ...]. Subcommands are:\r\n" % cstr(argv[0]).upper()]
    out += [b"+%s\r\n" % line for line in lines]
    out.append(b"+HELP\r\n+    Print this help.\r\n")
    return b"".join(out)


def subcommand_error(argv: list[bytes]) -> CommandError:
    """addReplySubcommandSyntaxError."""
    return error_format(b"unknown subcommand or wrong number of arguments for '%s'. Try %s HELP."
                        % (cstr(argv[1])[:128], cstr(argv[0]).upper()))


# -- XADD / XTRIM ------------------------------------------------------------------


class _Trim:
    """streamAddTrimArgs."""

    __slots__ = ("maxlen", "minid", "approx", "limit", "arg_at", "nomkstream", "sid", "id_given", "seq_given")

    def __init__(self) -> None:
        self.maxlen: int | None = None
        self.minid: int | None = None
        self.approx = False
        self.limit = 0
        self.arg_at = 0
        self.nomkstream = False
        self.sid = 0
        self.id_given = False
        self.seq_given = True

    @property
    def strategy(self) -> bool:
        return self.maxlen is not None or self.minid is not None


def _trim_args(c: Client, argv: list[bytes], xadd: bool) -> tuple[_Trim, int]:
    """streamParseAddOrTrimArgsOrReply: the options and, for XADD, the
    position of the ID argument."""
    t = _Trim()
    n = len(argv)
    i = 2
    limit_given = False
    while i < n:
        more = n - 1 - i
        arg = argv[i]
        if xadd and cstr(arg) == b"*":
            break
        opt = word(arg)
        if (opt == b"maxlen" or opt == b"minid") and more:
            if t.strategy:
                raise CommandError(_BOTH_STRATEGIES)
            t.approx = False
            nxt = cstr(argv[i + 1])
            if more >= 2 and nxt == b"~":
                t.approx = True
                i += 1
            elif more >= 2 and nxt == b"=":
                i += 1
            if opt == b"maxlen":
                v = to_int(argv[i + 1])
                if v is None:
                    raise CommandError(b"ERR value is not an integer or out of range")
                if v < 0:
                    raise CommandError(b"ERR The MAXLEN argument must be >= 0.")
                t.maxlen = v
            else:
                t.minid = parse_id(argv[i + 1], 0, True)
            i += 1
            t.arg_at = i
        elif opt == b"limit" and more:
            v = to_int(argv[i + 1])
            if v is None:
                raise CommandError(b"ERR value is not an integer or out of range")
            if v < 0:
                raise CommandError(b"ERR The LIMIT argument must be >= 0.")
            t.limit = v
            limit_given = True
            i += 1
        elif xadd and opt == b"nomkstream":
            t.nomkstream = True
        elif xadd:
            t.sid, t.seq_given = _parse_id(arg, 0, True, True)
            t.id_given = True
            break
        else:
            raise syntax()
        i += 1
    if t.limit and not t.strategy:
        raise CommandError(b"ERR syntax error, LIMIT cannot be used without specifying a trimming strategy")
    if not xadd and not t.strategy:
        raise CommandError(b"ERR syntax error, XTRIM must be called with a trimming strategy")
    if c.server.loading:
        t.limit = 0  # the file holds exact trims (mustObeyClient)
    elif limit_given:
        if not t.approx:
            raise CommandError(b"ERR syntax error, LIMIT cannot be used without the special ~ option")
    elif t.approx:
        limit = 100 * c.server.config.values["stream-node-max-entries"]
        t.limit = 10000 if limit <= 0 else min(limit, 1000000)
    else:
        t.limit = 0
    return t, i


def _node_limits(c: Client) -> tuple[int, int]:
    return c.server.stream_node_limits


def _trim(s: Stream, t: _Trim) -> int:
    return s.trim(t.maxlen, t.minid, t.approx, t.limit)


def _exact_trim_arg(s: Stream, t: _Trim) -> bytes:
    """streamRewriteTrimArgument: what an approximate trim left, as the
    exact argument that leaves the same."""
    if t.maxlen is not None:
        return b"%d" % len(s)
    return fmt_id(s.edge_id(True, False))


_U64: Final = (1 << 64) - 1
_PLAIN: Final = _Trim()  # XADD key * ...: no option, a generated ID


def xadd(c: Client, argv: list[bytes]) -> bytes:
    t, idpos = (_PLAIN, 2) if argv[2] == b"*" else _trim_args(c, argv, True)
    field_pos = idpos + 1
    nfields = len(argv) - field_pos
    if nfields < 2 or nfields % 2:
        raise wrong_args(b"xadd")
    if t.id_given and t.seq_given and t.sid == 0:
        raise CommandError(_ZERO_ID)
    key = argv[1]
    db = c.db
    s = get_stream(db, key)
    if s is None:
        if t.nomkstream:
            return c.r.null
        s = Stream()
        db.add(key, s)
    last_ms, last_seq = s.last_ms, s.last_seq
    if last_ms == _U64 and last_seq == _U64:
        raise CommandError(_EXHAUSTED)
    if not t.id_given:  # the clock's ms, or the ID after the last one
        ms = now_ms(c)
        if ms > last_ms:
            seq = 0
        elif last_seq == _U64:
            ms, seq = last_ms + 1, 0
        else:
            ms, seq = last_ms, last_seq + 1
    else:
        last = s.last_id
        if t.seq_given:
            sid = t.sid
        elif id_ms(last) == id_ms(t.sid):
            if last & SEQ_MASK == SEQ_MASK:
                raise CommandError(_TOP_ITEM)
            sid = last + 1
        else:
            sid = t.sid
        if sid <= last:
            raise CommandError(_TOP_ITEM)
        ms, seq = sid >> 64, sid & SEQ_MASK
    s.append(ms, seq, argv[field_pos:], _node_limits(c))
    db.modified(key, b"xadd")
    trimmed = t is not _PLAIN and t.strategy
    if trimmed and _trim(s, t):
        db.notify(b"xtrim", key)
    if c.server.aof is not None:  # logging(c), inline on this path
        # What the file records: the ID given, an approximate trim as the
        # exact one it made.
        logged = argv[:]
        if trimmed and t.approx:
            logged[t.arg_at - 1] = b"="
            logged[t.arg_at] = _exact_trim_arg(s, t)
        if not t.id_given or not t.seq_given:
            logged[idpos] = b"%d-%d" % (ms, seq)
        propagate(c, [logged])
    db.signal_ready(key)
    return stream_id(ms, seq)


def xtrim(c: Client, argv: list[bytes]) -> bytes:
    t, _ = _trim_args(c, argv, False)
    key = argv[1]
    db = c.db
    s = get_stream(db, key)
    if s is None:
        return ZERO
    deleted = _trim(s, t)
    if deleted:
        db.modified(key, b"xtrim")
        logged = argv
        if t.approx:
            logged = argv[:]
            logged[t.arg_at - 1] = b"="
            logged[t.arg_at] = _exact_trim_arg(s, t)
        propagate(c, [logged])
    return integer(deleted)


# -- reads ------------------------------------------------------------------------


def _range_reply(s: Stream, start: int, end: int, count: int, rev: bool) -> bytes:
    """The array of the entries within [start, end], at most count (0: all)."""
    replies, n = s.range_replies(start, end, count, rev)
    return array_header(n) + b"".join(replies)


def _xrange(c: Client, argv: list[bytes], rev: bool) -> bytes:
    start, end = range_bounds(argv[3], argv[2]) if rev else range_bounds(argv[2], argv[3])
    count = -1
    n = len(argv)
    j = 4
    while j < n:
        if word(argv[j]) == b"count" and n - j - 1 >= 1:
            v = to_int(argv[j + 1])
            if v is None:
                raise CommandError(b"ERR value is not an integer or out of range")
            count = max(v, 0)
            j += 2
        else:
            raise syntax()
    s = get_stream(c.db, argv[1], True)
    if s is None:
        return EMPTY_ARRAY
    if count == 0:
        return c.r.null_array
    return _range_reply(s, start, end, count if count > 0 else 0, rev)


def xrange(c: Client, argv: list[bytes]) -> bytes:
    return _xrange(c, argv, False)


def xrevrange(c: Client, argv: list[bytes]) -> bytes:
    return _xrange(c, argv, True)


def xlen(c: Client, argv: list[bytes]) -> bytes:
    s = get_stream(c.db, argv[1], True)
    return ZERO if s is None else integer(len(s))


# -- XDEL / XSETID ------------------------------------------------------------------


def xdel(c: Client, argv: list[bytes]) -> bytes:
    key = argv[1]
    db = c.db
    s = get_stream(db, key)
    if s is None:
        return ZERO
    ids = [parse_id(a, 0, True) for a in argv[2:]]
    deleted = 0
    for sid in ids:
        if s.delete(sid):
            if sid > s.max_deleted_id:
                s.max_deleted_id = sid
            deleted += 1
    if deleted:
        db.modified(key, b"xdel")
    return integer(deleted)


def xsetid(c: Client, argv: list[bytes]) -> bytes:
    sid = parse_id(argv[2], 0, True)
    max_xdel = 0
    entries_added = -1
    n = len(argv)
    i = 3
    while i < n:
        more = n - 1 - i
        opt = word(argv[i])
        if opt == b"entriesadded" and more:
            v = to_int(argv[i + 1])
            if v is None:
                raise CommandError(b"ERR value is not an integer or out of range")
            if v < 0:
                raise CommandError(b"ERR entries_added must be positive")
            entries_added = v
            i += 2
        elif opt == b"maxdeletedid" and more:
            max_xdel = parse_id(argv[i + 1], 0, True)
            if sid < max_xdel:
                raise CommandError(b"ERR The ID specified in XSETID is smaller than the provided max_deleted_entry_id")
            i += 2
        else:
            raise syntax()
    key = argv[1]
    db = c.db
    s = get_stream(db, key)
    if s is None:
        raise CommandError(NO_SUCH_KEY)
    if sid < s.max_deleted_id:
        raise CommandError(b"ERR The ID specified in XSETID is smaller than current max_deleted_entry_id")
    if len(s):
        if sid < last_valid_id(s):
            raise CommandError(b"ERR The ID specified in XSETID is smaller than the target stream top item")
        if entries_added != -1 and len(s) > entries_added:
            raise CommandError(b"ERR The entries_added specified in XSETID is smaller than the target stream length")
    s.last_id = sid
    if entries_added != -1:
        s.entries_added = entries_added
    if max_xdel:
        s.max_deleted_id = max_xdel
    db.notify(b"xsetid", key)
    return b"+OK\r\n"


# -- XREAD / XREADGROUP ---------------------------------------------------------------


def _ms_timeout(c: Client, arg: bytes) -> int:
    """getTimeoutFromObjectOrReply in milliseconds: an absolute deadline on
    the server's clock, 0 for none."""
    v = to_int(arg)
    if v is None:
        raise CommandError(b"ERR timeout is not an integer or out of range")
    if v < 0:
        raise CommandError(b"ERR timeout is negative")
    if v > 0:
        now = c.server.clock.ms()
        if v > LLONG_MAX - now:
            raise CommandError(b"ERR timeout is out of range")
        v += now
    return v


_NEW: Final = -1  # XREADGROUP's ">"


def xread(c: Client, argv: list[bytes]) -> bytes:
    return _xread(c, _read_args(c, argv, False))


def xreadgroup(c: Client, argv: list[bytes]) -> bytes:
    return _xread(c, _read_args(c, argv, True))


_UNBALANCED: Final = b"ERR Unbalanced '%s' list of streams: for each stream key an ID or '%s' must be specified."
_MEANINGLESS: Final = (b"ERR The %s ID is meaningless in the context of XREADGROUP: you want to read the history "
                       b"of this consumer by specifying a proper ID, or use the > ID to get new messages. The %s ID "
                       b"would just return an empty result set.")


class _ReadArgs:
    """XREAD / XREADGROUP's arguments, as parsed: BLOCK (an absolute deadline,
    0 for none, -1 when not given), COUNT (0: all), NOACK, GROUP's group and
    consumer (group None for XREAD) and the STREAMS keys with their ID
    arguments, still unread."""

    __slots__ = ("timeout", "count", "noack", "group", "consumer", "keys", "id_args")

    def __init__(self) -> None:
        self.timeout = -1
        self.count = 0
        self.noack = False
        self.group: bytes | None = None
        self.consumer = b""
        self.keys: list[bytes] = []
        self.id_args: list[bytes] = []


def _read_args(c: Client, argv: list[bytes], grouped: bool) -> _ReadArgs:
    """xreadCommand's option loop, with its errors in its order: each option
    as it comes, STREAMS ending the loop, then a missing STREAMS or GROUP."""
    a = _ReadArgs()
    n = len(argv)
    i = 1
    while i < n:
        more = n - i - 1
        opt = word(argv[i])
        if opt == b"block" and more:
            i += 1
            a.timeout = _ms_timeout(c, argv[i])
        elif opt == b"count" and more:
            i += 1
            v = to_int(argv[i])
            if v is None:
                raise CommandError(b"ERR value is not an integer or out of range")
            a.count = max(v, 0)
        elif opt == b"streams" and more:
            at = i + 1
            half, odd = divmod(n - at, 2)
            if odd:
                raise CommandError(_UNBALANCED % ((b"xreadgroup", b">") if grouped else (b"xread", b"$")))
            a.keys = argv[at:at + half]
            a.id_args = argv[at + half:]
            break
        elif opt == b"group" and more >= 2:
            if not grouped:
                raise CommandError(b"ERR The GROUP option is only supported by XREADGROUP. You called XREAD instead.")
            a.group = argv[i + 1]
            a.consumer = argv[i + 2]
            i += 2
        elif opt == b"noack":
            if not grouped:
                raise CommandError(b"ERR The NOACK option is only supported by XREADGROUP. You called XREAD instead.")
            a.noack = True
        else:
            raise syntax()
        i += 1
    if not a.keys:
        raise syntax()
    if grouped and a.group is None:
        raise CommandError(b"ERR Missing GROUP option for XREADGROUP")
    return a


def _start_ids(c: Client, a: _ReadArgs) -> tuple[list[int], list[Group]]:
    """The ID each stream is read after, and for XREADGROUP each stream's
    group: xreadCommand's walk over the keys, each looked up (a missing one
    raises ``keymiss``), its group checked, then its ID argument read
    (``$`` the stream's last ID, or the one pinned when the request blocked;
    ``+`` just below it; ``>`` new entries for the group)."""
    db = c.db
    grouped = a.group is not None
    resumed = c.server.blocking.resumed(c)
    pinned: list[int] | None = resumed.data if resumed is not None else None  # type: ignore[assignment]
    ids: list[int] = []
    groups: list[Group] = []
    for k, key in enumerate(a.keys):
        arg = a.id_args[k]
        s = get_stream(db, key, True)
        if a.group is not None:
            g = s.groups.get(a.group) if s is not None else None
            if g is None:
                raise error_format(b"-NOGROUP No such key '%s' or consumer group '%s' in XREADGROUP with GROUP option"
                                   % (cstr(key), cstr(a.group)))
            groups.append(g)
        text = cstr(arg)
        if text == b"$":
            if grouped:
                raise CommandError(_MEANINGLESS % (b"$", b"$"))
            if pinned is not None:
                ids.append(pinned[k])
            else:
                ids.append(s.last_id if s is not None else 0)
        elif text == b"+":
            if grouped:
                raise CommandError(_MEANINGLESS % (b"+", b"+"))
            # The last entry: from just below the last ID (an empty stream
            # that never had one reads from 0-0 and finds nothing).
            ids.append(s.last_id - 1 if s is not None and s.last_id else 0)
        elif text == b">":
            if not grouped:
                raise CommandError(b"ERR The > ID can be specified only when calling XREADGROUP using the GROUP "
                                   b"<group> <consumer> option.")
            ids.append(_NEW)
        else:
            ids.append(parse_id(arg, 0, True))
    return ids, groups


def _xread(c: Client, a: _ReadArgs) -> bytes:
    """XREAD / XREADGROUP applied: each stream with entries after its ID
    served (a group's consumer created and its pending entries moved), the
    group's effects logged; with nothing served, the client blocks if it
    asked to and may."""
    ids, groups = _start_ids(c, a)
    db = c.db
    keys = a.keys
    group = a.group
    grouped = group is not None
    now = now_ms(c)
    served: list[bytes] = []
    # What the append-only file will record, gathered only while it is on.
    effects: list[list[bytes]] | None = [] if logging(c) else None
    for k, key in enumerate(keys):
        s = get_stream(db, key, True)
        if s is None:
            continue
        gt = ids[k]
        sync = history = False
        consumer: Consumer | None = None
        g: Group | None = None
        if group is not None:
            g = groups[k]
            if gt != _NEW:
                sync = history = True
            elif len(s):
                if last_valid_id(s) > g.last_id:
                    sync = True
                    gt = g.last_id
            consumer = g.consumers.get(a.consumer)
            if consumer is None:
                consumer = create_consumer(c, g, a.consumer, key)
                if a.noack and effects is not None:
                    effects.append([b"XGROUP", b"CREATECONSUMER", key, group, a.consumer])
            consumer.seen_time = now
        elif len(s) and last_valid_id(s) > gt:
            sync = True
        if not sync:
            continue
        start = gt + 1 if gt != MAX_ID else 0
        if history:
            assert consumer is not None
            body = _history_reply(c, s, start, a.count, consumer, now)
        elif g is not None:
            assert consumer is not None and group is not None
            body = _group_reply(s, start, a.count, g, consumer, a.noack, now, key, group, effects)
        else:
            body = _range_reply(s, start, MAX_ID, a.count, False)
        served.append(bulk(key) + body if c.resp == 3 else b"*2\r\n" + bulk(key) + body)
    if effects:
        propagate(c, effects)
    if served:
        head = array_header(len(served)) if c.resp == 2 else b"%%%d\r\n" % len(served)
        return head + b"".join(served)
    if a.timeout != -1:
        if not may_block(c):
            return c.r.null_array
        if effects:  # a NOACK consumer created before blocking: logged now, as Valkey's call() does
            c.server.aof.close_unit()  # type: ignore[union-attr]
        c.server.blocking.block(c, keys, Stream, a.timeout, c.r.null_array, grouped,
                                None if grouped else ids)
    return c.r.null_array


def _group_reply(s: Stream, start: int, count: int, g: Group, consumer: Consumer, noack: bool, now: int,
                 key: bytes, groupname: bytes, effects: list[list[bytes]] | None) -> bytes:
    """streamReplyWithRange with a group: new entries for a consumer, each
    moving the group's last ID and counter and (unless NOACK) entering the
    pending lists, logged as the XCLAIM that recreates it."""
    out = [b""]
    n = 0
    moved = False
    # The stream does not change while it is read: its first ID and its
    # greatest deleted ID (range_has_tombstones's test) are taken once.
    first = s.first_id
    md = s.max_deleted_id if len(s) else 0
    for sid, node, i in s.spans(start, MAX_ID):
        if sid > g.last_id:
            if (g.entries_read != INVALID_ENTRIES_READ and g.last_id >= first
                    and not (md and g.last_id <= md)):
                g.entries_read = int64(g.entries_read + 1)
            else:
                g.entries_read = s.estimate_entries_read(sid)
            g.last_id = sid
            moved = True
        out.append(node.entry_reply(i, sid))
        if not noack:
            nack = g.pel.get(sid)
            if nack is None:
                nack = Nack(now, 1, consumer)
                g.pel[sid] = nack
            else:
                nack.consumer.pel.pop(sid, None)
                nack.consumer = consumer
                nack.delivery_time = now
                nack.delivery_count = 1
            consumer.pel[sid] = nack
            consumer.active_time = now
            if effects is not None:
                effects.append(xclaim_effect(key, groupname, g, fmt_id(sid), nack))
        n += 1
        if n == count:
            break
    if moved and effects is not None:
        effects.append(setid_effect(key, groupname, g))
    out[0] = array_header(n)
    return b"".join(out)


def _history_reply(c: Client, s: Stream, start: int, count: int, consumer: Consumer, now: int) -> bytes:
    """streamReplyWithRangeFromConsumerPEL: the consumer's own pending
    entries from start; one deleted since is its ID with a null."""
    out = [b""]
    n = 0
    for sid in consumer.pending(start):
        if count and n >= count:
            break
        fields = s.get(sid)
        if fields is None:
            out.append(b"*2\r\n" + bulk(fmt_id(sid)) + c.r.null_array)
        else:
            out.append(entry_reply(sid, fields))
            nack = consumer.pel[sid]
            nack.delivery_time = now
            nack.delivery_count = int64(nack.delivery_count + 1)
        n += 1
    out[0] = array_header(n)
    return b"".join(out)


# -- XINFO ------------------------------------------------------------------------------

_XINFO_HELP: Final = [
    b"CONSUMERS <key> <groupname>",
    b"    Show consumers of <groupname>.",
    b"GROUPS <key>",
    b"    Show the stream consumer groups.",
    b"STREAM <key> [FULL [COUNT <count>]",
    b"    Show information about the stream.",
]


def xinfo_help(c: Client, argv: list[bytes]) -> bytes:
    return help_reply(argv, _XINFO_HELP)


def xinfo_stream_of(c: Client, argv: list[bytes]) -> Stream:
    """XINFO's common step: the stream at argv[2], or Valkey's error."""
    s = get_stream(c.db, argv[2], True)
    if s is None:
        raise CommandError(NO_SUCH_KEY)
    return s


def xinfo_stream(c: Client, argv: list[bytes]) -> bytes:
    s = xinfo_stream_of(c, argv)
    opts = argv[3:]
    full = bool(opts)
    count = 10
    if opts:
        if len(opts) not in (1, 3) or word(opts[0]) != b"full":
            raise subcommand_error(argv)
        if len(opts) == 3:
            if word(opts[1]) != b"count":
                raise subcommand_error(argv)
            v = to_int(opts[2])
            if v is None:
                raise CommandError(b"ERR value is not an integer or out of range")
            count = 10 if v < 0 else v
    r = c.r
    out = [r.map_header(9 if full else 10),
           bulk(b"length"), integer(len(s)),
           bulk(b"radix-tree-keys"), integer(s.node_count()),
           bulk(b"radix-tree-nodes"), integer(s.rax_nodes()),
           bulk(b"last-generated-id"), bulk(fmt_id(s.last_id)),
           bulk(b"max-deleted-entry-id"), bulk(fmt_id(s.max_deleted_id)),
           bulk(b"entries-added"), integer(s.entries_added),
           bulk(b"recorded-first-entry-id"), bulk(fmt_id(s.first_id))]
    if not full:
        out += [bulk(b"groups"), integer(len(s.groups))]
        for label, rev in ((b"first-entry", False), (b"last-entry", True)):
            out.append(bulk(label))
            for sid, fields in s.range(0, MAX_ID, rev):
                out.append(entry_reply(sid, fields))
                break
            else:
                out.append(r.null)
        return b"".join(out)
    out += [bulk(b"entries"), _range_reply(s, 0, MAX_ID, count, False), bulk(b"groups"),
            array_header(len(s.groups))]
    for name in sorted(s.groups):
        g = s.groups[name]
        out += [r.map_header(7), bulk(b"name"), bulk(name), bulk(b"last-delivered-id"), bulk(fmt_id(g.last_id)),
                bulk(b"entries-read"),
                integer(g.entries_read) if g.entries_read != INVALID_ENTRIES_READ else r.null,
                bulk(b"lag"), lag_reply(c, s, g), bulk(b"pel-count"), integer(len(g.pel)), bulk(b"pending")]
        pel = g.pending()
        if count:
            pel = pel[:count]
        out.append(array_header(len(pel)))
        for sid in pel:
            nack = g.pel[sid]
            out.append(b"*4\r\n" + bulk(fmt_id(sid)) + bulk(nack.consumer.name) + integer(nack.delivery_time)
                       + integer(nack.delivery_count))
        out += [bulk(b"consumers"), array_header(len(g.consumers))]
        for cname in g.consumer_names():
            consumer = g.consumers[cname]
            out += [r.map_header(5), bulk(b"name"), bulk(cname), bulk(b"seen-time"), integer(consumer.seen_time),
                    bulk(b"active-time"), integer(consumer.active_time), bulk(b"pel-count"),
                    integer(len(consumer.pel)), bulk(b"pending")]
            cpel = consumer.pending()
            if count:
                cpel = cpel[:count]
            out.append(array_header(len(cpel)))
            for sid in cpel:
                nack = consumer.pel[sid]
                out.append(b"*3\r\n" + bulk(fmt_id(sid)) + integer(nack.delivery_time) + integer(nack.delivery_count))
    return b"".join(out)

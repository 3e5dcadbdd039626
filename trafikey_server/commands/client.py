"""CLIENT: the connection's own identity and switches, and the view of all
connections (LIST, INFO, KILL) in Valkey's format.

A connection's line in CLIENT LIST is Valkey's field list, in Valkey's
order, so tools that split it on spaces and ``=`` (redis-cli, client
libraries, dashboards) find every field they expect. The buffer and
memory fields are Valkey's model of the connection (services/clientmem.py):
the query buffer, the 16 KiB reply buffer and the output past it, the
arguments of the request in hand and the transaction state.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING, TypeVar

from ..protocol.args import cstr, word
from ..protocol.resp import OK, array, bulk, integer
from ..services.clientmem import REPLY_BUFFER, buffers, queue_of
from ..services.kill import kill_client as _kill
from ..util.errors import CommandError, syntax
from ..util.parsing import to_int
from .connection import set_client_name

if TYPE_CHECKING:
    from ..services.client import Client


# Client types CLIENT LIST / KILL accept; connections here are "normal", or
# "pubsub" while subscribed (Valkey's getClientType).
_TYPES = {b"normal": "normal", b"master": "primary", b"primary": "primary", b"slave": "replica",
          b"replica": "replica", b"pubsub": "pubsub"}
_FLAG_CHARS = frozenset(b"bcdeirtuxABEIMNOPRSTU")
_CAPA_CHARS = frozenset(b"r")


_HELP = (
    b'CLIENT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:',
    b'CACHING (YES|NO)',
    b'    Enable/disable tracking of the keys for next command in OPTIN/OPTOUT modes.',
    b'CAPA <option> [options...]',
    b'    The client claims its some capability options. Options are:',
    b'    * REDIRECT',
    b'      The client can handle redirection during primary and replica failover in standalone mode.',
    b'GETREDIR',
    b'    Return the client ID we are redirecting to when tracking is enabled.',
    b'GETNAME',
    b'    Return the name of the current connection.',
    b'ID',
    b'    Return the ID of the current connection.',
    b'INFO',
    b'    Return information about the current client connection.',
    b'KILL <ip:port>',
    b'    Kill connection made from <ip:port>.',
    b'KILL <option> <value> [<option> <value> [...]]',
    b'    Kill connections. Options are:',
    b'    * ADDR (<ip:port>|<unixsocket>:0)',
    b'      Kill connections made from the specified address.',
    b'    * LADDR (<ip:port>|<unixsocket>:0)',
    b'      Kill connections made to the specified local address.',
    b'    * TYPE (NORMAL|PRIMARY|REPLICA|PUBSUB)',
    b'      Kill connections by type.',
    b'    * USER <username>',
    b'      Kill connections authenticated by <username>.',
    b'    * SKIPME (YES|NO)',
    b'      Skip killing current connection (default: yes).',
    b'    * ID <client-id> [<client-id>...]',
    b'      Kill connections by client IDs.',
    b'    * MAXAGE <maxage>',
    b'      Kill connections older than the specified age.',
    b'    * FLAGS <flags>',
    b'      Kill connections that include the specified flags.',
    b'    * NAME <client-name>',
    b'      Kill connections with the specified name.',
    b'    * IDLE <idle>',
    b'      Kill connections with idle time greater than or equal to <idle> seconds.',
    b'    * LIB-NAME <library-name>',
    b'      Kill connections with the specified library name.',
    b'    * LIB-VER <library-version>',
    b'      Kill connections with the specified library version.',
    b'    * DB <db-id>',
    b'      Kill connections currently operating on the specified database ID.',
    b'    * CAPA <capa>',
    b'      Kill connections currently with the specified capa.',
    b'    * IP <ip>',
    b'      Kill connections made from the specified ip.',
    b'LIST [options ...]',
    b'    Return information about client connections. Options:',
    b'    * TYPE (NORMAL|PRIMARY|REPLICA|PUBSUB)',
    b'      Return clients of specified type.',
    b'    * USER <username>',
    b'      Return clients authenticated by <username>.',
    b'    * ADDR <ip:port>',
    b'      Return clients connected from the specified address.',
    b'    * LADDR <ip:port>',
    b'      Return clients connected to the specified local address.',
    b'    * ID <client-id> [<client-id>...]',
    b'      Return clients with the specified IDs.',
    b'    * SKIPME (YES|NO)',
    b'      Exclude the current client from the list (default: no).',
    b'    * MAXAGE <maxage>',
    b'      List connections older than the specified age.',
    b'    * FLAGS <flags>',
    b'      Return clients with the specified flags.',
    b'    * NAME <client-name>',
    b'      Return clients with the specified name.',
    b'    * IDLE <idle>',
    b'      Return clients with idle time greater than or equal to <idle> seconds.',
    b'    * LIB-NAME <lib-name>',
    b'      Return clients with the specified lib name.',
    b'    * LIB-VER <lib-version>',
    b'      Return clients with the specified lib version.',
    b'    * DB <db-id>',
    b'      Return clients currently operating on the specified database ID.',
    b'    * CAPA <capa>',
    b'      Return connections currently with the specified capa.',
    b'    * IP <ip>',
    b'      Return connections made from the specified ip.',
    b'UNPAUSE',
    b'    Stop the current client pause, resuming traffic.',
    b'PAUSE <timeout> [WRITE|ALL]',
    b'    Suspend all, or just write, clients for <timeout> milliseconds.',
    b'REPLY (ON|OFF|SKIP)',
    b'    Control the replies sent to the current connection.',
    b'SETNAME <name>',
    b'    Assign the name <name> to the current connection.',
    b'SETINFO <option> <value>',
    b'    Set client meta attr. Options are:',
    b'    * LIB-NAME: the client lib name.',
    b'    * LIB-VER: the client lib version.',
    b'UNBLOCK <clientid> [TIMEOUT|ERROR]',
    b'    Unblock the specified blocked client.',
    b'TRACKING (ON|OFF) [REDIRECT <id>] [BCAST] [PREFIX <prefix> [...]]',
    b'         [OPTIN] [OPTOUT] [NOLOOP]',
    b'    Control server assisted client side caching.',
    b'TRACKINGINFO',
    b'    Report tracking status for the current connection.',
    b'NO-EVICT (ON|OFF)',
    b'    Protect current client connection from eviction.',
    b'NO-TOUCH (ON|OFF)',
    b'    Will not touch LRU/LFU stats when this mode is on.',
    b'IMPORT-SOURCE (ON|OFF)',
    b'    Mark this connection as an import source if import-mode is enabled.',
    b"    Sync tools can set their connections into 'import-source' state to visit",
    b'    expired keys.',
    b'HELP',
    b'    Print this help.',
)


def client_id(c: Client, argv: list[bytes]) -> bytes:
    return integer(c.id)


def client_setname(c: Client, argv: list[bytes]) -> bytes:
    set_client_name(c, argv[2])
    return OK


def client_getname(c: Client, argv: list[bytes]) -> bytes:
    return bulk(c.name) if c.name else c.r.null


def client_setinfo(c: Client, argv: list[bytes]) -> bytes:
    attr = argv[2].lower()
    if attr not in (b"lib-name", b"lib-ver"):
        raise CommandError(b"ERR Unrecognized option '%s'" % argv[2])
    value = argv[3]
    if not all(33 <= ch <= 126 for ch in value):
        raise CommandError(b"ERR %s cannot contain spaces, newlines or special characters." % argv[2])
    if attr == b"lib-name":
        c.lib_name = value
    else:
        c.lib_ver = value
    return OK


def _on_off(arg: bytes) -> bool:
    low = arg.lower()
    if low == b"on":
        return True
    if low == b"off":
        return False
    raise syntax()


def client_no_evict(c: Client, argv: list[bytes]) -> bytes:
    """In or out of eviction's buckets at once; an evictable client over
    the limit goes at the end of the turn, as in Valkey's beforeSleep."""
    c.no_evict = _on_off(argv[2])
    c.server.client_memory.update(c)
    return OK


def client_no_touch(c: Client, argv: list[bytes]) -> bytes:
    c.no_touch = _on_off(argv[2])
    return OK


_HELP_REPLY = array([b"+%s\r\n" % line for line in _HELP])


def client_help(c: Client, argv: list[bytes]) -> bytes:
    return _HELP_REPLY


# -- one connection's line ------------------------------------------------------------


def _type_of(c: Client) -> str:
    return "pubsub" if c.subscriptions else "normal"


def _flags(c: Client) -> str:
    """Valkey's flag letters, in its order, for the states this server has."""
    out = "O" if c in c.server.observer.monitors else ""  # MONITOR mode
    if c.subscriptions:
        out += "P"  # pub/sub mode
    if c.multi is not None or c.in_exec:
        out += "x"
    if c.blocked is not None or _paused(c):
        out += "b"
    t = c.track
    if t is not None and t.on:
        out += "t" + ("R" if t.broken else "") + ("B" if t.bcast else "")
    if c.watch_dirty:
        out += "d"
    if c.close_after_reply:
        out += "c"
    if c.addr.endswith(":0"):  # a unix socket's "[path:0]:0": no TCP peer has port 0
        out += "U"
    if c.readonly:
        out += "r"
    if c.no_evict:
        out += "e"
    if c.no_touch:
        out += "T"
    if c.import_source:
        out += "I"
    return out or "N"


def _held(c: Client) -> list[bytes] | None:
    """The request a blocking command or CLIENT PAUSE holds for c."""
    conn = c.server.connections.get(c.id)
    return None if conn is None else conn.held


def _paused(c: Client) -> bool:
    """Held by CLIENT PAUSE: Valkey blocks such a client too (postponed)."""
    return _held(c) is not None


def _unsent_here(c: Client) -> int:
    """Replies the caller has produced that its connection does not hold
    yet: those of earlier requests in the same read, and inside EXEC the
    transaction's reply so far (Valkey has them in its output buffer)."""
    n = sum(map(len, c.out)) if c.out else 0
    if c.in_exec:
        n += sum(map(len, c.exec_out))
    return n


def _line(c: Client, caller: Client, argv: list[bytes], now: float) -> str:
    """The CLIENT LIST line of c. Only the caller is in the middle of a
    request, so only its line shows argument memory and output it has not
    handed to its connection yet, as on Valkey. Inside EXEC Valkey keeps
    EXEC's argument bytes but counts the running command's argument
    pointers. A blocked client keeps its request's arguments."""
    conn = c.server.connections.get(c.id)
    if c is caller:
        held = c.exec_argv if c.exec_argv is not None else argv
        b = buffers(c, conn, held, _unsent_here(c), len(argv))
    else:
        b = buffers(c, conn, None if conn is None else conn.held)
    # Valkey 9 shows -1 until the connection first used MULTI or WATCH.
    multi = len(queue_of(c)) if c.mstate else -1
    now_s = int(now)
    return (
        f"id={c.id} addr={c.addr} laddr={c.laddr} fd={c.fd} name={_text(c.name)} "
        f"age={now_s - c.ctime} idle={now_s - int(c.last_interaction)} flags={_flags(c)} "
        f"capa={'r' if c.capa_redirect else ''} "
        f"db={c.db.id} sub={len(c.channels)} psub={len(c.patterns)} ssub={len(c.shard_channels)} "
        f"multi={multi} watch={len(c.watched)} qbuf={b.qbuf} qbuf-free={b.qbuf_free} "
        f"argv-mem={b.argv_mem} multi-mem={b.multi_mem} rbs={REPLY_BUFFER} rbp={REPLY_BUFFER} obl={b.obl} "
        f"oll={b.oll} omem={b.omem} tot-mem={b.tot_mem} events=r "
        f"cmd={_text(c.last_cmd)} user={_text(c.user)} redir={_redir(c)} resp={c.resp} lib-name={_text(c.lib_name)} "
        f"lib-ver={_text(c.lib_ver)} tot-net-in={c.tot_net_in} tot-net-out={c.tot_net_out} "
        f"tot-cmds={c.tot_cmds}\n"
    )


def _redir(c: Client) -> int:
    t = c.track
    return t.redirect if t is not None and t.on else -1


def _text(b: bytes) -> str:
    return b.decode("utf-8", "surrogateescape")


def _encode(s: str) -> bytes:
    return s.encode("utf-8", "surrogateescape")


def info_line(c: Client, argv: list[bytes]) -> bytes:
    """c's CLIENT INFO line, without its newline, while c runs argv (the
    client-info of an ACL LOG entry)."""
    return _encode(_line(c, c, argv, time.time()))[:-1]


def list_text(clients: list[Client]) -> str:
    """The CLIENT LIST lines of these clients as none of them would see
    them (no request in hand): the crash report's client list."""
    now = time.time()
    return "".join(_line(x, x, [], now) for x in clients)


def client_info(c: Client, argv: list[bytes]) -> bytes:
    return c.r.verbatim(_encode(_line(c, c, argv, time.time())))


# -- filters shared by LIST and KILL ------------------------------------------------

Pred = Callable[["Client"], bool]
_V = TypeVar("_V")


def _bound(value: _V, test: Callable[[Client, _V], bool]) -> Pred:
    """``test`` with ``value`` fixed now (the filter loop rebinds its names)."""
    return lambda x: test(x, value)


def _ip(addr: str) -> str:
    host = addr.rpartition(":")[0]
    return host[1:-1] if host.startswith("[") else host


def _positive(arg: bytes, what: bytes) -> int:
    v = to_int(arg)
    if v is None:
        raise CommandError(b"ERR %s is not an integer or out of range" % what)
    if v <= 0:
        raise CommandError(b"ERR %s should be greater than 0" % what)
    return v


def _db_index(c: Client, arg: bytes, what: bytes) -> int:
    v = to_int(arg)
    if v is None:
        raise CommandError(b"ERR %s is not an integer or out of range" % what)
    n = len(c.server.dbs)
    if not 0 <= v < n:
        raise CommandError(b"ERR %s number should be between 0 and %d" % (what, n - 1))
    return v


def _client_type(arg: bytes) -> str:
    arg = cstr(arg)
    t = _TYPES.get(arg.lower())
    if t is None:
        raise CommandError(b"ERR Unknown client type '%s'" % arg)
    return t


def _user(c: Client, arg: bytes) -> bytes:
    """A user of the ACL by its whole name (Valkey looks it up by length;
    only the error text stops at a NUL)."""
    if arg not in c.server.acl.users:
        raise CommandError(b"ERR No such user '%s'" % cstr(arg))
    return arg


def _chars(arg: bytes, allowed: frozenset[int], what: bytes, where: bytes) -> bytes:
    arg = cstr(arg)
    if any(ch not in allowed for ch in arg):
        raise CommandError(b"ERR Unknown %s found in the %s filter: %s" % (what, where, arg))
    return arg


def _ids(argv: list[bytes], i: int) -> tuple[set[int], int]:
    """The IDs after ID / NOT-ID: every following argument that reads as an
    integer, possibly none (Valkey then matches no client for ID and
    excludes none for NOT-ID)."""
    ids: set[int] = set()
    while i < len(argv):
        v = to_int(argv[i])
        if v is None:
            break
        if v < 1:
            raise CommandError(b"ERR client-id should be greater than 0")
        ids.add(v)
        i += 1
    return ids, i


def _parse_filters(c: Client, argv: list[bytes], start: int, skipme: bool) -> tuple[list[Pred], bool]:
    """Predicates for the filter arguments from argv[start], and whether the
    caller excludes itself (SKIPME). As in Valkey each option is one field
    of a filter: given twice, the later value wins, except that ID and
    NOT-ID lists add up. A NOT- filter keeps what the plain one drops."""
    fields: dict[bytes, Pred] = {}
    ids: set[int] | None = None
    not_ids: set[int] | None = None
    i = start
    n = len(argv)
    while i < n:
        opt = cstr(argv[i]).lower()
        if opt == b"id":
            got, i = _ids(argv, i + 1)
            ids = got if ids is None else ids | got
            continue
        if opt == b"not-id":
            got, i = _ids(argv, i + 1)
            not_ids = got if not_ids is None else not_ids | got
            continue
        if i + 1 >= n:
            raise syntax()
        val = argv[i + 1]
        i += 2
        neg = opt.startswith(b"not-")
        base = opt[4:] if neg else opt
        pred: Pred
        if base == b"type":
            t = _client_type(val)
            pred = _bound(t, lambda x, t: t == _type_of(x))
        elif base == b"user":
            u = _user(c, val)
            pred = _bound(u, lambda x, u: x.user == u)
        elif base == b"addr":
            a = _text(cstr(val))
            pred = _bound(a, lambda x, a: x.addr == a)
        elif base == b"laddr":
            a = _text(cstr(val))
            pred = _bound(a, lambda x, a: x.laddr == a)
        elif base == b"ip":
            a = _text(cstr(val))
            pred = _bound(a, lambda x, a: _ip(x.addr) == a)
        elif base == b"name":
            v = cstr(val)
            pred = _bound(v, lambda x, v: bool(x.name) and x.name == v)
        elif base == b"lib-name":
            pred = _bound(val, lambda x, v: bool(x.lib_name) and x.lib_name == v)
        elif base == b"lib-ver":
            pred = _bound(val, lambda x, v: bool(x.lib_ver) and x.lib_ver == v)
        elif base == b"flags":
            f = _chars(val, _FLAG_CHARS, b"flags", b"NOT-FLAGS" if neg else b"provided")
            pred = _bound(f, lambda x, f: all(ch in _flags(x).encode() for ch in f))
        elif base == b"capa":
            f = _chars(val, _CAPA_CHARS, b"capa", b"NOT-CAPA" if neg else b"provided")
            pred = _bound(f, lambda x, f: not f)  # no connection has claimed a capability
        elif base == b"db":
            d = _db_index(c, val, b"NOT-DB" if neg else b"DB")
            pred = _bound(d, lambda x, d: x.db.id == d)
        elif not neg and base == b"skipme":
            low = cstr(val).lower()
            if low not in (b"yes", b"no"):
                raise syntax()
            skipme = low == b"yes"
            continue
        elif not neg and base == b"maxage":
            age = _positive(val, b"maxage")
            pred = _bound(age, lambda x, age: int(time.time()) - x.ctime >= age)
        elif not neg and base == b"idle":
            idle = _positive(val, b"idle")
            pred = _bound(idle, lambda x, idle: int(time.time()) - int(x.last_interaction) >= idle)
        else:
            raise syntax()
        fields[opt] = _negate(neg, pred)
    preds = list(fields.values())
    if ids is not None:
        preds.append(_bound(ids, lambda x, ids: x.id in ids))
    if not_ids is not None:
        preds.append(_bound(not_ids, lambda x, ids: x.id not in ids))
    return preds, skipme


def _negate(neg: bool, pred: Pred) -> Pred:
    return (lambda x: not pred(x)) if neg else pred


def _matching(c: Client, preds: list[Pred], skipme: bool) -> list[Client]:
    return [x for x in list(c.server.clients.values())
            if not (skipme and x is c) and all(p(x) for p in preds)]


def client_list(c: Client, argv: list[bytes]) -> bytes:
    if len(argv) == 3:
        # Valkey reads filters only from four arguments on: one alone (even
        # ID, which may take no value) is a syntax error.
        raise syntax()
    preds, skipme = _parse_filters(c, argv, 2, skipme=False)
    now = time.time()
    text = "".join(_line(x, c, argv, now) for x in _matching(c, preds, skipme))
    return c.r.verbatim(_encode(text))


# -- KILL -------------------------------------------------------------------------------


def client_kill(c: Client, argv: list[bytes]) -> bytes:
    if len(argv) == 3:
        # The old form: one address, and an error when nobody has it.
        addr = _text(cstr(argv[2]))
        for x in list(c.server.clients.values()):
            if x.addr == addr:
                _kill(c, x)
                return OK
        raise CommandError(b"ERR No such client")
    preds, skipme = _parse_filters(c, argv, 2, skipme=True)
    victims = _matching(c, preds, skipme)
    for x in victims:
        _kill(c, x)
    return integer(len(victims))


# -- UNBLOCK (blocking.py) ------------------------------------------------------------


def client_unblock(c: Client, argv: list[bytes]) -> bytes:
    """CLIENT UNBLOCK id [TIMEOUT|ERROR]: the reason is checked before the id."""
    error = False
    if len(argv) == 4:
        reason = word(argv[3])
        if reason == b"error":
            error = True
        elif reason != b"timeout":
            raise CommandError(b"ERR CLIENT UNBLOCK reason should be TIMEOUT or ERROR")
    cid = to_int(argv[2])
    if cid is None:
        raise CommandError(b"ERR value is not an integer or out of range")
    target = c.server.clients.get(cid)
    if target is None:
        return integer(0)
    return integer(1 if c.server.blocking.unblock(target, error) else 0)


# -- PAUSE / UNPAUSE (pause.py) ----------------------------------------------------------


def client_pause(c: Client, argv: list[bytes]) -> bytes:
    """CLIENT PAUSE timeout [WRITE|ALL]: the mode is checked before the
    timeout, as Valkey does."""
    pause_all = True
    if len(argv) >= 4:
        mode = argv[3].lower()
        if mode == b"write":
            pause_all = False
        elif mode != b"all":
            raise CommandError(b"ERR CLIENT PAUSE mode must be WRITE or ALL")
    ms = to_int(argv[2])
    if ms is None:
        raise CommandError(b"ERR timeout is not an integer or out of range")
    if ms < 0:
        raise CommandError(b"ERR timeout is negative")
    c.server.pause.start(ms, pause_all)
    return OK


def client_unpause(c: Client, argv: list[bytes]) -> bytes:
    c.server.pause.stop()
    return OK


def log_info(c: Client) -> str:
    """A client as Valkey's log lines describe it: its CLIENT LIST line,
    with the name and user hidden while hide-user-data-from-log is on."""
    line = _line(c, c, [], time.time()).rstrip("\n")
    if c.server.config.values.get("hide-user-data-from-log", True):
        line = line.replace(f" name={_text(c.name)} ", " name=*redacted* ", 1)
        line = line.replace(f" user={_text(c.user)} ", " user=*redacted* ", 1)
    return line

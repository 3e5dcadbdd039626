"""CLIENT: the connection's own identity and switches, and the view of all
connections (LIST, INFO, KILL) in Valkey's format.

A connection's line in CLIENT LIST is Valkey's field list, in Valkey's
order, so tools that split it on spaces and ``=`` (redis-cli, client
libraries, dashboards) find every field they expect. Fields that describe
Valkey's own buffers are reported as Valkey reports them for an idle
connection: the reply buffer is one 16 KiB block and memory is that block
plus the current request's arguments (see ``_line``).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from ..errors import CommandError, syntax
from ..parsing import to_int
from ..resp import OK, array, bulk, integer
from .connection import set_client_name

if TYPE_CHECKING:
    from ..client import Client

# Valkey's reply buffer for a new connection (16 KiB plus allocator slack),
# and what the client struct and that buffer cost before any request.
_REPLY_BUFFER = 16392
_BASE_MEMORY = 16976
_POINTER = 8
# Client types CLIENT LIST / KILL accept; only "normal" connections exist here.
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
    c.no_evict = _on_off(argv[2])
    return OK


def client_no_touch(c: Client, argv: list[bytes]) -> bytes:
    c.no_touch = _on_off(argv[2])
    return OK


_HELP_REPLY = array([b"+%s\r\n" % line for line in _HELP])


def client_help(c: Client, argv: list[bytes]) -> bytes:
    return _HELP_REPLY


# -- one connection's line ------------------------------------------------------------


def _flags(c: Client) -> str:
    """Valkey's flag letters, in its order, for the states this server has."""
    out = ""
    if c.multi is not None or c.in_exec:
        out += "x"
    if c.watch_dirty:
        out += "d"
    if c.close_after_reply:
        out += "c"
    if c.no_evict:
        out += "e"
    if c.no_touch:
        out += "T"
    return out or "N"


def _multi_mem(c: Client) -> int:
    """Valkey counts a queued command as its argument bytes plus one pointer
    per argument."""
    if not c.multi:
        return 0
    return sum(sum(map(len, args)) + _POINTER * len(args) for _, args in c.multi)


def _line(c: Client, caller: Client, argv: list[bytes], now: float) -> str:
    """The CLIENT LIST line of c. Only the caller is in the middle of a
    request, so only its line shows argument memory, as on Valkey."""
    if c is caller:
        argv_mem = sum(map(len, argv))
        argv_ptrs = _POINTER * len(argv)
    else:
        argv_mem = argv_ptrs = 0
    multi_mem = _multi_mem(c)
    if c.multi is not None:
        multi = len(c.multi)
    else:
        # Valkey 9 shows -1 until the connection first used MULTI or WATCH.
        multi = 0 if c.watched else -1
    watch = 0 if c.watch_dirty else len(c.watched)
    return (
        f"id={c.id} addr={c.addr} laddr={c.laddr} fd={c.fd} name={_text(c.name)} "
        f"age={int(now - c.created)} idle={int(now - c.last_interaction)} flags={_flags(c)} capa= "
        f"db={c.db.id} sub=0 psub=0 ssub=0 multi={multi} watch={watch} qbuf=0 qbuf-free=0 "
        f"argv-mem={argv_mem} multi-mem={multi_mem} rbs={_REPLY_BUFFER} rbp={_REPLY_BUFFER} obl=0 oll=0 "
        f"omem=0 tot-mem={_BASE_MEMORY + argv_mem + argv_ptrs + multi_mem} events=r "
        f"cmd={_text(c.last_cmd)} user={_text(c.user)} redir=-1 resp={c.resp} lib-name={_text(c.lib_name)} "
        f"lib-ver={_text(c.lib_ver)} tot-net-in={c.tot_net_in} tot-net-out={c.tot_net_out} "
        f"tot-cmds={c.tot_cmds}\n"
    )


def _text(b: bytes) -> str:
    return b.decode("utf-8", "surrogateescape")


def _encode(s: str) -> bytes:
    return s.encode("utf-8", "surrogateescape")


def client_info(c: Client, argv: list[bytes]) -> bytes:
    return c.r.verbatim(_encode(_line(c, c, argv, time.monotonic())))


# -- filters shared by LIST and KILL ------------------------------------------------

Pred = Callable[["Client"], bool]


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
    t = _TYPES.get(arg.lower())
    if t is None:
        raise CommandError(b"ERR Unknown client type '%s'" % arg)
    return t


def _user(arg: bytes) -> bytes:
    if arg != b"default":  # the only user until ACLs arrive
        raise CommandError(b"ERR No such user '%s'" % arg)
    return arg


def _chars(arg: bytes, allowed: frozenset[int], what: bytes, where: bytes) -> bytes:
    if any(ch not in allowed for ch in arg):
        raise CommandError(b"ERR Unknown %s found in the %s filter: %s" % (what, where, arg))
    return arg


def _ids(argv: list[bytes], i: int) -> tuple[set[int], int]:
    """The IDs after ID / NOT-ID: every following argument that reads as an
    integer; at least one."""
    ids: set[int] = set()
    while i < len(argv):
        v = to_int(argv[i])
        if v is None:
            break
        if v < 1:
            raise CommandError(b"ERR client-id should be greater than 0")
        ids.add(v)
        i += 1
    if not ids:
        raise syntax()
    return ids, i


def _parse_filters(c: Client, argv: list[bytes], start: int, skipme: bool) -> tuple[list[Pred], bool]:
    """Predicates for the filter arguments from argv[start], and whether the
    caller excludes itself (SKIPME). A NOT- filter keeps what the plain one
    drops."""
    preds: list[Pred] = []
    i = start
    n = len(argv)
    while i < n:
        opt = argv[i].lower()
        neg = opt.startswith(b"not-")
        base = opt[4:] if neg else opt
        if base == b"id":
            ids, i = _ids(argv, i + 1)
            preds.append(_negate(neg, lambda x, ids=ids: x.id in ids))
            continue
        if i + 1 >= n:
            raise syntax()
        val = argv[i + 1]
        i += 2
        pred: Pred
        if base == b"type":
            t = _client_type(val)
            pred = lambda x, t=t: t == "normal"  # noqa: E731 - every connection here is a normal client
        elif base == b"user":
            u = _user(val)
            pred = lambda x, u=u: x.user == u  # noqa: E731
        elif base == b"addr":
            a = _text(val)
            pred = lambda x, a=a: x.addr == a  # noqa: E731
        elif base == b"laddr":
            a = _text(val)
            pred = lambda x, a=a: x.laddr == a  # noqa: E731
        elif base == b"ip":
            a = _text(val)
            pred = lambda x, a=a: _ip(x.addr) == a  # noqa: E731
        elif base == b"name":
            pred = lambda x, v=val: bool(x.name) and x.name == v  # noqa: E731
        elif base == b"lib-name":
            pred = lambda x, v=val: bool(x.lib_name) and x.lib_name == v  # noqa: E731
        elif base == b"lib-ver":
            pred = lambda x, v=val: bool(x.lib_ver) and x.lib_ver == v  # noqa: E731
        elif base == b"flags":
            f = _chars(val, _FLAG_CHARS, b"flags", b"NOT-FLAGS" if neg else b"provided")
            pred = lambda x, f=f: all(ch in _flags(x).encode() for ch in f)  # noqa: E731
        elif base == b"capa":
            f = _chars(val, _CAPA_CHARS, b"capa", b"NOT-CAPA" if neg else b"provided")
            pred = lambda x, f=f: not f  # noqa: E731 - no connection has claimed a capability
        elif base == b"db":
            d = _db_index(c, val, opt.upper())
            pred = lambda x, d=d: x.db.id == d  # noqa: E731
        elif not neg and base == b"skipme":
            low = val.lower()
            if low not in (b"yes", b"no"):
                raise syntax()
            skipme = low == b"yes"
            continue
        elif not neg and base == b"maxage":
            age = _positive(val, b"maxage")
            pred = lambda x, age=age: time.monotonic() - x.created >= age  # noqa: E731
        elif not neg and base == b"idle":
            idle = _positive(val, b"idle")
            pred = lambda x, idle=idle: time.monotonic() - x.last_interaction >= idle  # noqa: E731
        else:
            raise syntax()
        preds.append(_negate(neg, pred))
    return preds, skipme


def _negate(neg: bool, pred: Pred) -> Pred:
    return (lambda x: not pred(x)) if neg else pred


def _matching(c: Client, preds: list[Pred], skipme: bool) -> list[Client]:
    return [x for x in list(c.server.clients.values())
            if not (skipme and x is c) and all(p(x) for p in preds)]


def client_list(c: Client, argv: list[bytes]) -> bytes:
    preds, skipme = _parse_filters(c, argv, 2, skipme=False)
    now = time.monotonic()
    text = "".join(_line(x, c, argv, now) for x in _matching(c, preds, skipme))
    return c.r.verbatim(_encode(text))


# -- KILL -------------------------------------------------------------------------------


def _kill(c: Client, victim: Client) -> None:
    """Close a connection. The caller itself gets its reply first and is
    closed after it, as Valkey does."""
    if victim is c:
        c.closing = True
        c.close_after_reply = True
        return
    conn = c.server.connections.get(victim.id)
    if conn is not None and conn.transport is not None:
        conn.transport.close()


def client_kill(c: Client, argv: list[bytes]) -> bytes:
    if len(argv) == 3:
        # The old form: one address, and an error when nobody has it.
        addr = _text(argv[2])
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

"""CLIENT subcommands against Valkey.

CLIENT LIST / INFO lines name connections by id, address, file descriptor
and age, which differ between two servers. Tests open the same named
connections ("roles") on both, drive them identically, and compare the lines
after replacing those values with role names; every other field, and the
order of the fields, must match Valkey's exactly. Filters are written with
placeholders ({id_a}, {addr_a}, {laddr}) filled in per server, and always
restricted to the test's own connections, since the servers are shared with
the rest of the suite.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from helpers.resp_wire import Wire, encode, reply_end

# -- the simple subcommands --------------------------------------------------------


def test_names_and_info(pair23) -> None:  # type: ignore[no-untyped-def]
    p = pair23
    p.check_all(("CLIENT", "GETNAME"), ("CLIENT", "SETNAME", "a b"), ("CLIENT", "SETNAME", "worker-1"),
                ("CLIENT", "GETNAME"), ("CLIENT", "SETNAME", ""), ("CLIENT", "GETNAME"),
                ("CLIENT", "SETINFO", "lib-name", "a b"), ("CLIENT", "SETINFO", "lib-foo", "x"),
                ("CLIENT", "SETINFO", "LIB-VER", "1.2"), ("CLIENT", "SETINFO", "lib-name", "redis-py"),
                ("CLIENT", "NO-EVICT", "maybe"), ("CLIENT", "NO-EVICT", "on"), ("CLIENT", "NO-TOUCH", "OFF"),
                ("CLIENT", "SETNAME"), ("CLIENT", "NOSUCH"), ("CLIENT",))


def test_client_id_is_an_integer(pair) -> None:  # type: ignore[no-untyped-def]
    v, t = pair.both("CLIENT", "ID")
    assert v[:1] == t[:1] == b":"
    assert int(t[1:-2]) > 0


def test_help_and_arity(pair23) -> None:  # type: ignore[no-untyped-def]
    pair23.check_all(("CLIENT", "HELP"), ("client", "help"), ("CLIENT", "HELP", "x"), ("CLIENT", "INFO", "x"),
                     ("CLIENT", "KILL"), ("CLIENT", "LIST", "x"))


# -- errors of the LIST and KILL filters ----------------------------------------------

# Every one of these fails, or matches no connection, on any server: the
# replies are compared byte for byte.
NO_MATCH = 10**15  # an ID no connection has
FILTER_ERRORS: list[tuple[bytes | str | int, ...]] = [
    ("TYPE", "foo"), ("TYPE",), ("TYPE", "normal", "SKIPME"), ("NOT-TYPE", "foo"), ("TYPE", b"x\x00y"),
    ("ID", "abc"), ("ID", "0"), ("ID", "-1"), ("ID", NO_MATCH, "abc"), ("ID", "+5"), ("ID", "05"),
    ("ID", "9223372036854775808"), ("ID", NO_MATCH, "-3"), ("ID", b"1\x00"), ("NOT-ID", "0"), ("NOT-ID", "x"),
    ("ID", NO_MATCH), ("ID", NO_MATCH, "TYPE", "normal"), ("ID", NO_MATCH, "ID", NO_MATCH + 1),
    ("USER", "nosuch"), ("NOT-USER", "nosuch"), ("USER", "DEFAULT"), ("USER", b"default\x00"),
    ("USER", b"no\x00body"), ("USER", "default", "USER", "nosuch"),
    ("SKIPME", "maybe"), ("SKIPME", b"yes\x00x"), ("NOT-SKIPME", "yes"),
    ("MAXAGE", "abc"), ("MAXAGE", "0"), ("MAXAGE", "-1"), ("MAXAGE", "9223372036854775808"),
    ("MAXAGE", "5", "MAXAGE", "0"), ("MAXAGE", b"1\x00"), ("NOT-MAXAGE", "5"),
    ("IDLE", "abc"), ("IDLE", "0"), ("IDLE", "-5"), ("IDLE", "5", "IDLE", "x"), ("NOT-IDLE", "5"),
    ("FLAGS", "z"), ("FLAGS", "Nz"), ("NOT-FLAGS", "z"), ("FLAGS", b"z\x00y"), ("NOT-FLAGS", b"q\x00"),
    ("FLAGS", b"N\xff"), ("CAPA", "x"), ("CAPA", "rx"), ("NOT-CAPA", "x"), ("CAPA", b"x\x00"),
    ("DB", "16"), ("DB", "-1"), ("DB", "abc"), ("db", "99"), ("NOT-DB", "99"), ("not-db", "x"), ("DB", b"0\x00"),
    ("FOO", "bar"), ("NAME",), ("NAME", "x", "LIB-VER"), ("a", "b", "c"),
]


def _ids(filters: tuple[bytes | str | int, ...]) -> str:
    return " ".join(repr(a)[:20] if isinstance(a, bytes) else str(a) for a in filters)


@pytest.mark.parametrize("filters", FILTER_ERRORS, ids=[_ids(f) for f in FILTER_ERRORS])
def test_filter_errors(pair23, filters: tuple[bytes | str | int, ...]) -> None:  # type: ignore[no-untyped-def]
    pair23.check("CLIENT", "LIST", *filters)
    pair23.check("CLIENT", "KILL", *filters)


def test_kill_old_form_errors(pair) -> None:  # type: ignore[no-untyped-def]
    # Three arguments are the old form: an address, whatever it looks like.
    pair.check_all(("CLIENT", "KILL", "1.2.3.4:5"), ("CLIENT", "KILL", "ID"), ("CLIENT", "KILL", "NAME"),
                   ("CLIENT", "KILL", ""), ("client", "kill", "not-an-address"))


# -- the same named connections on both servers ----------------------------------------


class Side:
    """Named connections ("roles") to one server, with what is needed to
    fill in filters for them and to read back what the server says."""

    def __init__(self, port: int, roles: list[str]) -> None:
        self.port = port
        self.w = {r: Wire(port) for r in roles}
        self.ids: dict[str, int] = {}
        self.addrs: dict[str, str] = {}
        for role, w in self.w.items():
            line = _body(w.call("CLIENT", "INFO")).decode()
            fields = dict(f.split("=", 1) for f in line.split())
            self.ids[role] = int(fields["id"])
            self.addrs[role] = fields["addr"]
            self.laddr = fields["laddr"]

    def close(self) -> None:
        for w in self.w.values():
            w.close()

    def fill(self, arg: bytes | str | int) -> bytes:
        """An argument with {id_<role>}, {addr_<role>}, {all} and {laddr}
        replaced by this server's values."""
        if isinstance(arg, int):
            return b"%d" % arg
        b = arg.encode() if isinstance(arg, str) else arg
        b = b.replace(b"{laddr}", self.laddr.encode())
        b = b.replace(b"{all}", " ".join(str(i) for i in self.ids.values()).encode())
        for role in self.w:
            b = b.replace(b"{id_%s}" % role.encode(), str(self.ids[role]).encode())
            b = b.replace(b"{addr_%s}" % role.encode(), self.addrs[role].encode())
        return b

    def args(self, args: tuple[bytes | str | int, ...]) -> list[bytes]:
        """Fill in each argument; {all} expands to several."""
        out: list[bytes] = []
        for a in args:
            filled = self.fill(a)
            out.extend(filled.split(b" ") if a == "{all}" else [filled])
        return out

    def call(self, role: str, *args: bytes | str | int) -> bytes:
        return self.w[role].call(*self.args(args))

    def lines(self, reply: bytes, caller: str | None = None) -> list[list[tuple[str, str]]]:
        """The lines of a CLIENT LIST / INFO reply as (field, value) pairs,
        values that name this server's connections replaced by role names.
        What only time and the allocator decide is masked: age and idle
        (whole seconds), fd, the byte counters (replies carry IDs of
        different lengths) and rbs/rbp (Valkey shrinks an idle connection's
        reply buffer within a second); tot-mem is kept less rbs."""
        assert reply[:1] in (b"$", b"="), reply
        out = []
        for line in _body(reply).decode("utf-8", "surrogateescape").splitlines():
            pairs = [tuple(f.split("=", 1)) for f in line.split(" ")]
            fields = dict(pairs)
            role_of = {str(i): r for r, i in self.ids.items()}
            norm = []
            for k, v in pairs:
                if k == "id":
                    v = role_of.get(v, "?")
                elif k == "addr":
                    v = next((r for r, a in self.addrs.items() if a == v), "?")
                elif k == "laddr":
                    v = "<laddr>" if v == self.laddr else v
                elif k in ("fd", "age", "idle", "tot-net-in", "tot-net-out", "rbs", "rbp"):
                    v = "?"
                elif k == "tot-mem":
                    v = str(int(v) - int(fields["rbs"]))
                norm.append((k, v))
            if caller is not None and dict(norm)["id"] == caller:
                # The caller's argument bytes include filled-in IDs and
                # addresses, whose lengths differ between the servers.
                norm = [(k, "?" if k in ("argv-mem", "tot-mem") else v) for k, v in norm]
            out.append(norm)
        return out


def _body(reply: bytes) -> bytes:
    """The text of a bulk or verbatim string reply."""
    body = reply[reply.index(b"\r\n") + 2 : -2]
    return body[4:] if reply[:1] == b"=" else body


@pytest.fixture
def sides(valkey_server, trafikey_server) -> Iterator[tuple[Side, Side]]:  # type: ignore[no-untyped-def]
    """Connections me, a, b, c and d to each server."""
    roles = ["me", "a", "b", "c", "d"]
    v, t = Side(valkey_server.port, roles), Side(trafikey_server.port, roles)
    yield v, t
    v.close()
    t.close()


def assert_same_reply(v: Side, t: Side, role: str, *args: bytes | str | int) -> bytes:
    """The same request from the same role on both; the replies must match."""
    rv, rt = v.call(role, *args), t.call(role, *args)
    assert rt == rv, f"{role}: {args!r}\n valkey:   {rv!r}\n trafikey: {rt!r}"
    return rv


def assert_same_lines(v: Side, t: Side, role: str, *args: bytes | str | int, templated: bool = True) -> list:
    """A CLIENT LIST / INFO from role on both; the normalised lines must match."""
    rv, rt = v.call(role, *args), t.call(role, *args)
    caller = role if templated else None
    lv, lt = v.lines(rv, caller), t.lines(rt, caller)
    assert lt == lv, f"{role}: {args!r}\n valkey:   {lv!r}\n trafikey: {lt!r}"
    return lv


def _setup(v: Side, t: Side) -> None:
    """Connections in the states CLIENT LIST describes: named and in another
    database over RESP3 (a), watching keys in two databases (b), in MULTI
    with queued commands (c), with no-evict and no-touch (d)."""
    assert_same_reply(v, t, "me", "FLUSHALL")
    for role, *args in (
        ("a", "CLIENT", "SETNAME", "alpha"), ("a", "CLIENT", "SETINFO", "LIB-NAME", "libA"),
        ("a", "CLIENT", "SETINFO", "LIB-VER", "1.0"), ("a", "SELECT", "3"),
        ("b", "WATCH", "w1", "w2"), ("b", "SELECT", "1"), ("b", "WATCH", "w3", "w1"),
        ("c", "MULTI"), ("c", "SET", "x", "y"), ("c", "GET", "x"),
        ("d", "CLIENT", "NO-EVICT", "on"), ("d", "CLIENT", "NO-TOUCH", "on"),
    ):
        assert_same_reply(v, t, role, *args)
    for side in (v, t):
        side.call("a", "HELLO", "3")  # the reply holds the ID: not compared


def test_list_and_info_lines(sides: tuple[Side, Side]) -> None:
    v, t = sides
    _setup(v, t)
    lines = assert_same_lines(v, t, "me", "CLIENT", "LIST", "ID", "{all}")
    assert [dict(line)["id"] for line in lines] == ["me", "a", "b", "c", "d"]
    for role in ("me", "a", "b", "d"):  # c would only queue it
        assert_same_lines(v, t, role, "CLIENT", "INFO", templated=False)
    # A touched watch dooms b's transaction-to-be: watches dropped, and
    # while c waits in MULTI a queuing error empties its queue.
    assert_same_reply(v, t, "me", "SET", "w2", "1")
    assert_same_reply(v, t, "c", "NOSUCH")
    assert_same_reply(v, t, "c", "GET", "z")
    assert_same_lines(v, t, "me", "CLIENT", "LIST", "ID", "{all}")
    for role, *args in (("b", "MULTI"), ("b", "GET", "x"), ("b", "EXEC"), ("c", "EXEC"), ("b", "RESET")):
        assert_same_reply(v, t, role, *args)
    assert_same_lines(v, t, "me", "CLIENT", "LIST", "ID", "{all}")


@pytest.mark.parametrize("proto", [2, 3])
def test_transaction_state_fields(valkey_server, trafikey_server, proto: int) -> None:  # type: ignore[no-untyped-def]
    """multi=, watch=, multi-mem= and the transaction part of tot-mem along
    the life of a connection: -1 until its first MULTI or WATCH, queued
    commands, watched keys in several databases, UNWATCH, flushes that keep
    the watches, EXEC."""
    v, t = Side(valkey_server.port, ["me", "x"]), Side(trafikey_server.port, ["me", "x"])
    if proto == 3:
        for side in (v, t):
            side.call("me", "HELLO", "3")
    steps: list[tuple[str, ...]] = [
        ("UNWATCH",), ("EXEC",), ("WATCH",), ("MULTI",), ("DISCARD",), ("WATCH", "k1"), ("WATCH", "k1", "k2", "k2"),
        ("UNWATCH",), ("RESET",), ("SELECT", "2"), ("WATCH", "a", "b", "c", "d", "e", "f", "g"), ("SELECT", "0"),
        ("WATCH", "z"), ("MULTI",), ("SET", "k", "v"), ("GET", "abc"), ("INCR", "n"), ("EXEC",),
        ("WATCH", "k1", "k2"), ("FLUSHDB",), ("MULTI",), ("PING",), ("EXEC",), ("WATCH", "k1"), ("SWAPDB", "0", "5"),
    ]
    for step in steps:
        assert_same_reply(v, t, "x", *step)
        assert_same_lines(v, t, "me", "CLIENT", "LIST", "ID", "{id_x}")
    v.close()
    t.close()


def test_info_inside_exec_and_in_a_pipeline(valkey_server, trafikey_server) -> None:  # type: ignore[no-untyped-def]
    """Inside EXEC Valkey still counts the queue (multi=, multi-mem=) and
    shows the transaction's reply so far as unsent output (obl=); in a
    pipeline, the replies to the earlier requests of the same read."""
    out = {}
    for name, port in (("v", valkey_server.port), ("t", trafikey_server.port)):
        side = Side(port, ["me"])
        w = side.w["me"]
        w.send_raw(encode("MULTI") + encode("SET", "x", "y" * 50) + encode("CLIENT", "INFO") + encode("GET", "x")
                   + encode("EXEC"))
        replies = [w.read_reply() for _ in range(5)]
        exec_reply = replies[4]
        second = reply_end(exec_reply, exec_reply.index(b"\r\n") + 2)
        info_in_exec = exec_reply[second : reply_end(exec_reply, second)]
        w.send_raw(encode("ECHO", "z" * 100) + encode("PING") + encode("CLIENT", "INFO"))
        later = [w.read_reply() for _ in range(3)]
        out[name] = (replies[:4], side.lines(info_in_exec), later[:2], side.lines(later[2]))
        side.close()
    assert out["t"] == out["v"]


def test_byte_and_command_counters(valkey_server, trafikey_server) -> None:  # type: ignore[no-untyped-def]
    """tot-net-in, tot-net-out and tot-cmds for identical traffic."""
    out = []
    for port in (valkey_server.port, trafikey_server.port):
        w = Wire(port)
        for cmd in (("SET", "cnt", "1"), ("GET", "cnt"), ("PING",), ("ECHO", "x" * 300), ("NOSUCH",), ("GET",)):
            w.call(*cmd)
        fields = dict(f.split("=", 1) for f in _body(w.call("CLIENT", "INFO")).decode().split())
        out.append({k: fields[k] for k in ("tot-net-in", "tot-net-out", "tot-cmds", "cmd", "argv-mem")})
        w.close()
    assert out[1] == out[0]


# -- which connections a filter selects ------------------------------------------------

# Restricted to the test's connections by a leading "ID {all}".
SELECT = [
    "", "TYPE normal", "TYPE pubsub", "TYPE master", "TYPE slave", "TYPE primary", "TYPE replica",
    "TYPE PubSub TYPE Normal", "TYPE normal TYPE pubsub", "NOT-TYPE normal", "NOT-TYPE pubsub",
    "TYPE normal NOT-TYPE normal", "USER default", "NOT-USER default",
    "ADDR {addr_a}", "ADDR {addr_a} ADDR {addr_b}", "NOT-ADDR {addr_a}", "NOT-ADDR {addr_a} NOT-ADDR {addr_b}",
    "ADDR {addr_a} NOT-ADDR {addr_b}", "ADDR 127.0.0.1", "LADDR {laddr}", "NOT-LADDR {laddr}",
    "LADDR 127.0.0.1:1", "IP 127.0.0.1", "NOT-IP 127.0.0.1", "IP {addr_a}", "IP 127.0.0",
    "NAME alpha", "NAME ALPHA", "NAME beta NAME alpha", "NAME alpha NAME beta", "NOT-NAME alpha",
    "NAME alpha NOT-NAME alpha", "LIB-NAME libA", "LIB-NAME LIBA", "NOT-LIB-NAME libA", "LIB-VER 1.0",
    "NOT-LIB-VER 1.0", "FLAGS x", "FLAGS N", "FLAGS d", "FLAGS eT", "FLAGS Te", "FLAGS ee", "FLAGS xN",
    "NOT-FLAGS N", "NOT-FLAGS eN", "NOT-FLAGS eT", "NOT-FLAGS Nx", "CAPA r", "NOT-CAPA r",
    "DB 3", "DB 0", "NOT-DB 3", "DB 3 DB 0", "DB 0 DB 3", "SKIPME yes", "SKIPME no", "SKIPME YES",
    "SKIPME yes SKIPME no", "MAXAGE 100000", "IDLE 100000", "NOT-ID {id_a}", "NOT-ID {id_a} NOT-ID {id_b}",
    "NOT-ID {id_a} {id_b} TYPE normal", "TYPE normal NOT-ID", "NOT-ID TYPE normal",
]
# Empty values and NUL bytes: Valkey reads most values as C strings.
SELECT_BYTES: list[tuple[bytes, ...]] = [
    (b"NAME", b""), (b"NOT-NAME", b""), (b"LIB-NAME", b""), (b"NOT-LIB-NAME", b""), (b"FLAGS", b""),
    (b"NOT-FLAGS", b""), (b"CAPA", b""), (b"NOT-CAPA", b""), (b"IP", b""), (b"ADDR", b""),
    (b"NAME", b"alpha\x00junk"), (b"NOT-NAME", b"alpha\x00junk"), (b"LIB-NAME", b"libA\x00"),
    (b"NOT-LIB-NAME", b"libA\x00"), (b"FLAGS", b"N\x00z"), (b"CAPA", b"\x00x"), (b"ADDR", b"{addr_a}\x00x"),
    (b"NOT-ADDR", b"{addr_a}\x00x"), (b"LADDR", b"{laddr}\x00x"), (b"IP", b"127.0.0.1\x00x"),
    (b"NOT-IP", b"127.0.0.1\x00"), (b"TYPE", b"normal\x00"), (b"NOT-TYPE", b"normal\x00"),
    (b"SKIPME", b"yes\x00"), (b"NAME\x00", b"alpha"), (b"type\x00x", b"normal"),
]
# Self-restricting: only the IDs given can match.
SELECT_IDS = [
    "ID {id_a}", "ID {id_a} ID {id_b}", "ID {id_a} {id_b} NOT-ID {id_b}", "ID ID {id_a}", "ID {id_a} ID",
    "ID {id_a} NOT-ID", "ID TYPE normal", "ID ID", "ID ID ID", "SKIPME no ID", "ID NOT-ID",
    f"ID {NO_MATCH} ID {{id_me}}", f"ID {{id_me}} ID {NO_MATCH}", "ID {id_me} {id_a} {id_me}",
]


def _select_cases() -> list[tuple[tuple[bytes | str, ...], str]]:
    cases: list[tuple[tuple[bytes | str, ...], str]] = []
    cases += [(("ID", "{all}", *f.split()), f) for f in SELECT]
    cases += [((b"ID", "{all}", *f), repr(b" ".join(f))) for f in SELECT_BYTES]
    cases += [(tuple(f.split()), f) for f in SELECT_IDS]
    return cases


@pytest.mark.parametrize(("filters", "label"), _select_cases(), ids=[c[1] for c in _select_cases()])
def test_list_selects_like_valkey(sides: tuple[Side, Side], filters: tuple[bytes | str, ...], label: str) -> None:
    v, t = sides
    _setup(v, t)
    assert_same_lines(v, t, "me", "CLIENT", "LIST", *filters)


# -- KILL -------------------------------------------------------------------------------


def _alive(w: Wire) -> bool:
    """Whether the server still answers on this connection."""
    try:
        return w.call("PING") == b"+PONG\r\n"
    except OSError:  # reset, broken pipe, or closed (ConnectionError)
        return False


def _killed(side: Side) -> list[str]:
    """The roles whose connections the server closed."""
    return [role for role, w in side.w.items() if not _alive(w)]


KILL = [
    "ID {id_a}", "ID {id_a} {id_b}", "ID {id_a} ID {id_b}", "ADDR {addr_a}", "ADDR {addr_a} ADDR {addr_b}",
    "NAME alpha", "NOT-NAME alpha ID {all}", "LADDR {laddr} ID {id_a} {id_b}", "IP 127.0.0.1 NAME alpha",
    "USER default NAME alpha", "FLAGS x ID {all}", "FLAGS eT ID {all}", "NOT-FLAGS N ID {all}", "LIB-NAME libA",
    "LIB-VER 1.0 ID {all}", "DB 3 ID {all}", "NOT-DB 0 ID {all}", "TYPE normal ID {all}",
    "TYPE pubsub ID {all}", "SKIPME no ID {id_me} {id_a}", "SKIPME yes ID {all}", "MAXAGE 100000 ID {all}",
    "IDLE 100000 ID {all}", "ID ID", "NOT-ID {id_a} ID {all}", "ID {id_me}",
]


@pytest.mark.parametrize("filters", KILL)
def test_kill_closes_the_same_connections(sides: tuple[Side, Side], filters: str) -> None:
    v, t = sides
    _setup(v, t)
    rv = v.call("me", "CLIENT", "KILL", *filters.split())
    rt = t.call("me", "CLIENT", "KILL", *filters.split())
    assert rt == rv
    assert _killed(t) == _killed(v)


def test_kill_old_form(sides: tuple[Side, Side]) -> None:
    v, t = sides
    assert_same_reply(v, t, "me", "CLIENT", "KILL", "{addr_a}")
    assert_same_reply(v, t, "me", "CLIENT", "KILL", "{addr_a}")  # gone: "No such client"
    assert_same_reply(v, t, "me", "CLIENT", "KILL", b"{addr_b}\x00junk")  # read up to the NUL
    assert _killed(t) == _killed(v) == ["a", "b"]


@pytest.mark.parametrize("kill", [("{addr_me}",), ("SKIPME", "no", "ID", "{id_me}"), ("ID", "{id_me}", "SKIPME", "no")])
def test_kill_yourself(sides: tuple[Side, Side], kill: tuple[str, ...]) -> None:
    """The reply comes first, then the connection closes; a request after
    it in the same write is not answered."""
    v, t = sides
    out = []
    for side in (v, t):
        w = side.w["me"]
        w.send_raw(encode(*side.args(("CLIENT", "KILL", *kill))) + encode("PING"))
        out.append(w.read_until_closed())
    assert out[1] == out[0]


def test_kill_yourself_inside_exec(sides: tuple[Side, Side]) -> None:
    """Valkey runs the rest of the transaction but sends nothing after the
    reply to the KILL."""
    v, t = sides
    out = []
    for side in (v, t):
        side.call("a", "DEL", "after-kill")
        w = side.w["me"]
        w.send_raw(b"".join(encode(*side.args(cmd)) for cmd in (
            ("MULTI",), ("PING",), ("CLIENT", "KILL", "ID", "{id_me}", "SKIPME", "no"), ("SET", "after-kill", "1"),
            ("EXEC",), ("PING",))))
        out.append((w.read_until_closed(), side.call("a", "GET", "after-kill")))
    assert out[1] == out[0]


def test_killed_connection_is_gone_at_once(sides: tuple[Side, Side]) -> None:
    """Later requests in the same write no longer see the victim."""
    v, t = sides
    out = []
    for side in (v, t):
        w = side.w["me"]
        w.send_raw(b"".join(encode(*side.args(cmd)) for cmd in (
            ("CLIENT", "KILL", "ID", "{id_a}"), ("CLIENT", "KILL", "ID", "{id_a}"), ("CLIENT", "KILL", "{addr_a}"),
            ("CLIENT", "LIST", "ID", "{id_a}"))))
        out.append([w.read_reply() for _ in range(4)])
    assert out[1] == out[0]


# -- ages: whole wall-clock seconds ----------------------------------------------------


def test_age_idle_maxage_idle_filters(valkey_server, trafikey_server) -> None:  # type: ignore[no-untyped-def]
    """Valkey's age= and idle= are differences of whole wall-clock seconds,
    and MAXAGE / IDLE keep connections at least that old / idle. The
    connections are made late in a second and read just after the next one
    begins: half a second later, both servers count a whole second."""
    while True:
        while not 0.6 <= time.time() % 1 <= 0.75:
            time.sleep(0.01)
        second = int(time.time())
        v, t = Side(valkey_server.port, ["me", "old"]), Side(trafikey_server.port, ["me", "old"])
        if int(time.time()) == second:
            break
        v.close()
        t.close()
    time.sleep(second + 1.15 - time.time())
    results = []
    for side in (v, t):
        selected = [[dict(line)["id"] for line in side.lines(side.call("me", "CLIENT", "LIST", "ID", "{all}", *f))]
                    for f in (("MAXAGE", "1"), ("MAXAGE", "2"), ("IDLE", "1"), ("IDLE", "2"),
                              ("MAXAGE", "1", "IDLE", "1"))]
        line = _body(side.call("me", "CLIENT", "LIST", "ID", "{id_old}")).decode()
        fields = dict(f.split("=", 1) for f in line.split())
        results.append((selected, fields["age"], fields["idle"]))
    v.close()
    t.close()
    assert results[1] == results[0]


# -- real clients ----------------------------------------------------------------------


def test_redis_py_connects(trafikey_server, valkey_server) -> None:  # type: ignore[no-untyped-def]
    import redis

    for proto in (2, 3):
        results = []
        for port in (valkey_server.port, trafikey_server.port):
            r = redis.Redis(port=port, protocol=proto, client_name="probe")
            r.flushall()
            r.set("a", "1")
            r.hset("h", mapping={"f": "v", "g": "w"})
            r.zadd("z", {"m": 1.5, "n": 2})
            with r.pipeline(transaction=True) as pipe:
                pipe.incr("a").get("a").hgetall("h").zrange("z", 0, -1, withscores=True)
                results.append((r.client_getname(), pipe.execute()))
            r.close()
        assert results[0] == results[1]


def test_redis_py_client_list_and_kill(trafikey_server, valkey_server) -> None:  # type: ignore[no-untyped-def]
    """redis-py parses CLIENT LIST / INFO into dicts and kills by filter."""
    import redis

    results = []
    for port in (valkey_server.port, trafikey_server.port):
        r = redis.Redis(port=port, client_name="lister")
        victim = redis.Redis(port=port, client_name="victim-py")
        victim.ping()
        mine = r.client_list(client_id=[r.client_id(), victim.client_id()])
        info = r.client_info()
        killed = r.client_kill_filter(_id=victim.client_id())
        results.append(([(c["name"], c["db"], c["flags"], c["cmd"]) for c in mine],
                        {k: info[k] for k in ("name", "db", "flags", "cmd", "user", "resp", "multi")}, killed))
        r.close()
        victim.close()
    assert results[1] == results[0]


def test_redis_py_asyncio(trafikey_server, valkey_server) -> None:  # type: ignore[no-untyped-def]
    import asyncio

    import redis.asyncio as aredis

    async def run(port: int, proto: int) -> list[object]:
        r = aredis.Redis(port=port, protocol=proto)
        await r.flushall()
        out = [await r.set("k", "v"), await r.get("k"), await r.zadd("z", {"a": 1}), await r.zpopmin("z")]
        await r.aclose()
        return out

    for proto in (2, 3):
        assert asyncio.run(run(trafikey_server.port, proto)) == asyncio.run(run(valkey_server.port, proto))

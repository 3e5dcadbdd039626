"""Server and introspection rows a standalone server answers: READONLY,
READWRITE, ASKING, ROLE and MODULE, byte for byte against Valkey 9.1.2 in
RESP2 and RESP3, refusals included (with enable-module-command off and on)."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
from helpers.pair import Pair
from helpers.resp_wire import Wire
from helpers.servers import start_trafikey, start_valkey


def assert_empty_keyspace(p: Pair) -> None:
    assert p.check("DBSIZE") == b":0\r\n"


def test_cluster_routing_words_standalone(pair23: Pair) -> None:
    pair23.check("SET", "k", "v")
    pair23.check_all(("READONLY",), ("READWRITE",), ("ASKING",), ("READONLY", "x"), ("READWRITE", "x"),
                     ("ASKING", "x"), ("GET", "k"), ("DBSIZE",))


def _repl_offset(w: Wire) -> int:
    info = w.call("INFO", "replication")
    return int(info.split(b"master_repl_offset:", 1)[1].split(b"\r\n", 1)[0])


def test_role_of_a_primary_without_replicas(pair23: Pair) -> None:
    """ROLE names the primary, its replication offset (INFO's
    master_repl_offset: 0 until a backlog exists, which an earlier SYNC
    to the shared Valkey may have made) and no replicas."""
    for w in (pair23.v, pair23.t):
        before = _repl_offset(w)
        role = w.call("ROLE")
        assert role in {b"*3\r\n$6\r\nmaster\r\n:%d\r\n*0\r\n" % o for o in (before, _repl_offset(w))}, role
    pair23.check("ROLE", "x")
    assert_empty_keyspace(pair23)


def test_replicaof_no_one_on_a_primary(pair23: Pair) -> None:
    """A primary answers REPLICAOF / SLAVEOF NO ONE with +OK and stays one;
    the port of an address is checked before anything else. (No address is
    sent to Valkey: it would start following it.)"""
    pair23.check("SET", "k", "v")
    pair23.check_all(("REPLICAOF", "NO", "ONE"), ("replicaof", "no", "one"), ("SLAVEOF", "No", "oNe"),
                     ("REPLICAOF", "NO\0x", "ONE\0y"), ("REPLICAOF", "NO ONE"), ("REPLICAOF",),
                     ("REPLICAOF", "NO", "ONE", "x"), ("REPLICAOF", "127.0.0.1", "x"),
                     ("REPLICAOF", "127.0.0.1", "65536"), ("SLAVEOF", "127.0.0.1", "-1"),
                     ("REPLICAOF", "NO", "TWO"), ("SET", "k2", "v2"), ("GET", "k"), ("DBSIZE",))
    for w in (pair23.v, pair23.t):
        assert w.call("ROLE").startswith(b"*3\r\n$6\r\nmaster\r\n")


def test_replicaof_an_address_is_refused(pair23: Pair) -> None:
    """This server does not replicate: a valid address is refused and
    nothing changes (Valkey would start following it, so it is not asked)."""
    t = pair23.t
    t.call("FLUSHALL")
    t.call("SET", "k", "v")
    for cmd in ("REPLICAOF", "SLAVEOF"):
        assert t.call(cmd, "127.0.0.1", "6379") == (
            b"-ERR this server does not replicate: REPLICAOF and SLAVEOF serve only NO ONE, "
            b"which leaves it the primary it always is\r\n")
    assert t.call("ROLE").startswith(b"*3\r\n$6\r\nmaster\r\n")
    assert t.call("SET", "k2", "v") == b"+OK\r\n"
    assert t.call("DBSIZE") == b":2\r\n"
    t.call("FLUSHALL")


def test_module_list_help_and_syntax(pair23: Pair) -> None:
    pair23.check_all(("MODULE", "LIST"), ("MODULE", "HELP"), ("MODULE", "help"), ("MODULE", "LIST", "x"),
                     ("MODULE", "HELP", "x"), ("MODULE", "FOO"), ("MODULE",), ("MODULE", "UNLOAD"),
                     ("MODULE", "LOAD"))
    assert_empty_keyspace(pair23)


@pytest.fixture(scope="module", params=["no", "yes"], ids=["modules-off", "modules-on"])
def module_pair(request: pytest.FixtureRequest) -> Iterator[tuple[Wire, Wire]]:
    v = start_valkey("--enable-module-command", request.param)
    t = start_trafikey("--enable-module-command", request.param)
    try:
        yield Wire(v.port), Wire(t.port)
    finally:
        v.stop()
        t.stop()


@pytest.mark.parametrize("cmd", [
    ("MODULE", "LOAD", "/nonexistent/module.so"),
    ("MODULE", "LOAD", "/nonexistent/module.so", "a", "b"),
    ("MODULE", "LOADEX", "/nonexistent/module.so"),
    ("MODULE", "LOADEX", "/nonexistent/module.so", "CONFIG", "n", "v", "ARGS", "x"),
    ("MODULE", "LOADEX", "/nonexistent/module.so", "CONFIG"),
    ("MODULE", "UNLOAD", "nosuch"),
    ("MODULE", "UNLOAD", "a", "b"),
    ("MODULE", "LIST"),
])
def test_module_refusals(module_pair: tuple[Wire, Wire], cmd: tuple[str, ...]) -> None:
    v, t = module_pair
    before = v.call("DBSIZE"), t.call("DBSIZE")
    assert t.call(*cmd) == v.call(*cmd), cmd
    assert (v.call("DBSIZE"), t.call("DBSIZE")) == before


# -- LOLWUT: the plain version line exactly; the random art by its frame ------------------

def test_lolwut_version_line(pair23: Pair) -> None:
    for v in ("0", "1", "4", "7", "8", "10", "-1", "4294967297"):
        pair23.check("LOLWUT", "VERSION", v)
        pair23.check("LOLWUT", "version", v, "extra", "args")
    pair23.check_all(("LOLWUT", "VERSION", "x"), ("LOLWUT", "VERSION", "5", "x"), ("LOLWUT", "VERSION", "6", "1", "y"),
                     ("LOLWUT", "foo"), ("LOLWUT", "VERSION"), ("LOLWUT", "1.5"), ("LOLWUT", "1", "1", "x"),
                     ("LOLWUT", "1", "1", "0.5", "0.25", "1"))
    assert_empty_keyspace(pair23)


@pytest.mark.parametrize("args", [(), ("VERSION", "5"), ("VERSION", "6"), ("VERSION", "9"), ("VERSION", "4294967301"),
                                  ("1", "1", "0.5", "0.25")])
def test_lolwut_art_frame(pair23: Pair, args: tuple[str, ...]) -> None:
    """The art is random in Valkey: compare the reply type and the closing caption line."""
    v, t = pair23.both("LOLWUT", *args)
    assert t[:1] == v[:1]
    assert t.endswith(b" Valkey ver. 9.1.2\n\r\n")
    assert v.endswith(b" Valkey ver. 9.1.2\n\r\n")
    v_last = v.rstrip(b"\r\n").split(b"\n")[-1].removeprefix(b"txt:")
    t_last = t.rstrip(b"\r\n").split(b"\n")[-1].removeprefix(b"txt:")
    assert t_last == v_last
    if args and args[0] == "1":
        assert t.split(b"\n")[-3:] == v.split(b"\n")[-3:]


def test_memory_malloc_stats_and_purge(pair23: Pair) -> None:
    pair23.check_all(("MEMORY", "MALLOC-STATS"), ("MEMORY", "PURGE"), ("MEMORY", "malloc-stats", "x"),
                     ("MEMORY", "PURGE", "x"), ("MEMORY", "HELP"))
    assert_empty_keyspace(pair23)


# -- CLIENT CAPA, CLIENT IMPORT-SOURCE, and the flags READONLY sets ----------------------------

def _flags(p: Pair) -> tuple[bytes, bytes]:
    """The flags= and capa= fields of CLIENT INFO on both sides."""
    v, t = p.both("CLIENT", "INFO")
    return tuple(re.search(rb"flags=\S+ capa=\S*", x).group() for x in (v, t))  # type: ignore[union-attr,return-value]


def assert_same_flags(p: Pair) -> bytes:
    v, t = _flags(p)
    assert t == v
    return v


def test_client_capa(pair23: Pair) -> None:
    assert assert_same_flags(pair23) == b"flags=N capa="
    pair23.check_all(("CLIENT", "CAPA"), ("CLIENT", "CAPA", "foo"))
    assert assert_same_flags(pair23) == b"flags=N capa="
    pair23.check_all(("CLIENT", "CAPA", "foo", "REDIRECT"), ("CLIENT", "CAPA", "redirect"))
    assert assert_same_flags(pair23) == b"flags=N capa=r"
    pair23.check("RESET")
    assert assert_same_flags(pair23) == b"flags=N capa=r"


def test_readonly_flag(pair23: Pair) -> None:
    pair23.check_all(("READONLY",), ("CLIENT", "NO-EVICT", "ON"), ("CLIENT", "NO-TOUCH", "ON"))
    assert assert_same_flags(pair23) == b"flags=reT capa="
    pair23.check("READWRITE")
    assert assert_same_flags(pair23) == b"flags=eT capa="
    pair23.check_all(("READONLY",), ("RESET",))
    assert assert_same_flags(pair23) == b"flags=N capa="


def test_client_import_source(pair23: Pair) -> None:
    off = ("CONFIG", "SET", "import-mode", "no")
    pair23.check_all(off, ("CLIENT", "IMPORT-SOURCE"), ("CLIENT", "IMPORT-SOURCE", "on", "x"),
                     ("CLIENT", "IMPORT-SOURCE", "ON"), ("CLIENT", "IMPORT-SOURCE", "x"),
                     ("CLIENT", "IMPORT-SOURCE", "off"), ("CLIENT", "IMPORT-SOURCE", "OFF"))
    try:
        pair23.check_all(("CONFIG", "SET", "import-mode", "yes"), ("CLIENT", "IMPORT-SOURCE", "x"),
                         ("CLIENT", "IMPORT-SOURCE", "on"), ("READONLY",), ("CLIENT", "NO-TOUCH", "ON"))
        assert assert_same_flags(pair23) == b"flags=rTI capa="
        pair23.check_all(off, ("CLIENT", "IMPORT-SOURCE", "ON"))
        assert assert_same_flags(pair23) == b"flags=rTI capa="
        pair23.check("CLIENT", "IMPORT-SOURCE", "OFF")
        assert assert_same_flags(pair23) == b"flags=rT capa="
        pair23.check_all(("CONFIG", "SET", "import-mode", "yes"), ("CLIENT", "IMPORT-SOURCE", "on"), ("RESET",))
        assert assert_same_flags(pair23) == b"flags=N capa="
    finally:
        pair23.check(*off)
    assert_empty_keyspace(pair23)


# -- SCRIPT DEBUG: every mode and refusal as Valkey (sessions: scripting/test_debugger.py) ---------

def test_script_debug(pair23: Pair) -> None:
    pair23.check_all(("SCRIPT", "DEBUG", "NO"), ("SCRIPT", "DEBUG", "no", "LUA"), ("SCRIPT", "DEBUG", "x"),
                     ("SCRIPT", "DEBUG", "x", "lua"), ("SCRIPT", "DEBUG", "x", "y"), ("SCRIPT", "DEBUG", "yes", "y"),
                     ("SCRIPT", "DEBUG"), ("SCRIPT", "DEBUG", "no", "lua", "z"), ("SCRIPT", "HELP"))
    pair23.check_all(("MULTI",), ("SCRIPT", "DEBUG", "x", "y"), ("SCRIPT", "DEBUG", "x"), ("SCRIPT", "DEBUG", "no"),
                     ("SCRIPT", "DEBUG", "no", "lua", "z"), ("EXEC",))
    assert_empty_keyspace(pair23)


@pytest.mark.parametrize("mode", ["YES", "sync"])
def test_script_debug_on_and_off(pair23: Pair, mode: str) -> None:
    """On, then off again before any EVAL: the next EVAL runs as usual."""
    pair23.check_all(("SCRIPT", "DEBUG", mode), ("SCRIPT", "DEBUG", mode, "lua"), ("SCRIPT", "DEBUG", "NO"),
                     ("EVAL", "return 1", "0"))


# -- LATENCY GRAPH ------------------------------------------------------------------------------

def test_latency_graph_without_samples(pair23: Pair) -> None:
    pair23.check_all(("LATENCY", "RESET"), ("LATENCY", "GRAPH", "command"), ("LATENCY", "GRAPH", "nosuch"),
                     ("LATENCY", "GRAPH"), ("LATENCY", "GRAPH", "a", "b"))


@pytest.fixture(scope="module")
def debug_pair() -> Iterator[tuple[Wire, Wire]]:
    args = ("--enable-debug-command", "yes", "--latency-monitor-threshold", "1")
    v = start_valkey(*args)
    t = start_trafikey(*args)
    try:
        yield Wire(v.port), Wire(t.port)
    finally:
        v.stop()
        t.stop()


@pytest.mark.parametrize("proto", [2, 3])
def test_latency_graph_frame(debug_pair: tuple[Wire, Wire], proto: int) -> None:
    """A spike's milliseconds differ between the servers: the graph must be
    the same with the numbers of the header taken out."""
    for w in debug_pair:
        w.call("HELLO", str(proto))
        assert w.call("LATENCY", "RESET") in (b":0\r\n", b":1\r\n")
        assert w.call("DEBUG", "SLEEP", "0.02") == b"+OK\r\n"
    v, t = (w.call("LATENCY", "GRAPH", "command") for w in debug_pair)
    assert re.sub(rb"\d+", b"N", t) == re.sub(rb"\d+", b"N", v), (v, t)
    # The header rule, the curve and the margin byte for byte; the label
    # ("0s" or "1s" ago, as the second turns) by its form.
    assert t.split(b"\n")[2:8] == v.split(b"\n")[2:8]
    assert re.fullmatch(rb"[0-9]\ns\n\r\n", b"\n".join(t.split(b"\n")[8:]))

"""The command table against Valkey 9.1.2's: COMMAND INFO and COMMAND DOCS of
every row this server serves, COMMAND COUNT, COMMAND LIST and its filters,
the whole COMMAND reply, and COMMAND GETKEYS / GETKEYSANDFLAGS, in RESP2 and
RESP3.

The rows Valkey has and this server does not serve are read from the
command table (``tools/gen_unserved.py``); Valkey's replies are compared
without them, so a container (ACL, LATENCY, ...) is held to Valkey's bytes
for the subcommands it serves. Valkey lists a container's subcommands in the
iteration order of its hash table: up to ``ONE_BUCKET`` of them fit one
bucket and come in the same order on every start, so that order is compared
too; a bigger container's order follows the hash seed Valkey draws at each
start (``test_valkey_orders_only_big_containers_per_start`` checks both), so
there the subcommand entries are compared byte for byte in any order.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest
from helpers.resp_wire import Wire, reply_end
from helpers.servers import Proc, start_valkey

from trafikey_server.protocol.table import Table, default_table, load_rows

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT / "tools"))

from gen_unserved import DOC, unserved, valkey_rows  # noqa: E402

TABLE = default_table()
# Valkey's hash-table bucket holds seven entries on 64-bit builds.
ONE_BUCKET = 7
SERVED = [cmd.name for cmd in TABLE.everything() if not cmd.extension]
EXTENSIONS = {cmd.bname for cmd in TABLE.everything() if cmd.extension}


@pytest.fixture(scope="module")
def unserved_rows(valkey_server: Proc) -> set[bytes]:
    """The rows of Valkey's table this server's table does not serve."""
    return {n.encode() for n in unserved(valkey_rows(valkey_server.port), Table(load_rows()))}


# -- reading replies apart ------------------------------------------------------


def _split(reply: bytes) -> tuple[bytes, list[bytes]]:
    """An aggregate's type byte and its elements as sent (a map's keys and
    values in turn)."""
    eol = reply.index(b"\r\n")
    kind, count, pos = reply[:1], int(reply[1:eol]), eol + 2
    out = []
    while pos < len(reply):
        end = reply_end(reply, pos)
        out.append(reply[pos:end])
        pos = end
    assert len(out) == count * (2 if kind == b"%" else 1), reply[:80]
    return kind, out


def _join(kind: bytes, elements: list[bytes]) -> bytes:
    return kind + b"%d\r\n" % (len(elements) // 2 if kind == b"%" else len(elements)) + b"".join(elements)


def _text(bulk: bytes) -> bytes:
    return bulk.split(b"\r\n", 2)[1]


def _names(reply: bytes) -> list[bytes]:
    return [_text(e) for e in _split(reply)[1]]


def _entries(reply: bytes) -> dict[bytes, bytes]:
    """COMMAND / COMMAND INFO without names: each entry by its name."""
    return {_text(_split(e)[1][0]): e for e in _split(reply)[1]}


def _orders(port: int) -> dict[bytes, list[bytes]]:
    """Each command's subcommand names, in the order the server lists them."""
    w = Wire(port)
    try:
        return {n: _names(_split(e)[1][9]) for n, e in _entries(w.call("COMMAND")).items()}
    finally:
        w.close()


class Shape:
    """COMMAND INFO / DOCS replies put in the form compared: subcommands in
    ``drop`` left out, and those of the containers in ``big`` (Valkey's order
    for them changes at every start) sorted; the rest stays as sent."""

    def __init__(self, drop: set[bytes], big: set[bytes]) -> None:
        self.drop = drop
        self.big = big

    def _subcommands(self, entries: list[tuple[bytes, bytes]]) -> list[bytes]:
        kept = [e for e in entries if e[0] not in self.drop]
        if kept and kept[0][0].split(b"|", 1)[0] in self.big:
            kept.sort()
        return [raw for _, raw in kept]

    def info_entry(self, entry: bytes) -> bytes:
        kind, fields = _split(entry)
        skind, subs = _split(fields[9])
        kept = self._subcommands([(_text(_split(s)[1][0]), s) for s in subs])
        return _join(kind, [*fields[:9], _join(skind, kept)])

    def docs_entry(self, docmap: bytes) -> bytes:
        kind, fields = _split(docmap)
        for i in range(0, len(fields), 2):
            if _text(fields[i]) == b"subcommands":
                skind, pairs = _split(fields[i + 1])
                kept = self._subcommands([(_text(pairs[j]), pairs[j] + pairs[j + 1])
                                          for j in range(0, len(pairs), 2)])
                fields[i + 1] = skind + b"%d\r\n" % (len(kept) * (1 if skind == b"%" else 2)) + b"".join(kept)
        return _join(kind, fields)

    def info(self, reply: bytes) -> bytes:
        kind, entries = _split(reply)
        return _join(kind, [e if e in (b"*-1\r\n", b"_\r\n") else self.info_entry(e) for e in entries])

    def docs(self, reply: bytes) -> bytes:
        kind, fields = _split(reply)
        return _join(kind, [f if i % 2 == 0 else self.docs_entry(f) for i, f in enumerate(fields)])


@pytest.fixture(scope="module")
def big(valkey_server: Proc) -> set[bytes]:
    """Valkey's containers of more than ``ONE_BUCKET`` subcommands."""
    return {n for n, subs in _orders(valkey_server.port).items() if len(subs) > ONE_BUCKET}


@pytest.fixture(scope="module")
def theirs(unserved_rows: set[bytes], big: set[bytes]) -> Shape:
    return Shape(unserved_rows, big)


@pytest.fixture(scope="module")
def ours(big: set[bytes]) -> Shape:
    return Shape(set(), big)


# -- every served row -----------------------------------------------------------


def test_info_of_every_row(pair23, ours: Shape, theirs: Shape) -> None:  # type: ignore[no-untyped-def]
    for name in SERVED:
        v, t = pair23.both("COMMAND", "INFO", name)
        assert ours.info(t) == theirs.info(v), name


def test_docs_of_every_row(pair23, ours: Shape, theirs: Shape) -> None:  # type: ignore[no-untyped-def]
    for name in SERVED:
        v, t = pair23.both("COMMAND", "DOCS", name)
        assert ours.docs(t) == theirs.docs(v), name


def test_containers_are_valkeys_bytes(pair23, unserved_rows: set[bytes], big: set[bytes]) -> None:  # type: ignore[no-untyped-def]
    """No reshaping where there is nothing to reshape: the containers whose
    order Valkey keeps and whose subcommands are all served, and several
    rows at once (an unknown name gives a null in INFO, nothing in DOCS)."""
    partial = {n.split(b"|", 1)[0] for n in unserved_rows if b"|" in n}
    full = [cmd.name for cmd in TABLE.ordered if not cmd.extension and cmd.subcommands
            and cmd.bname not in big | partial]
    assert "config" in full and "command" in full
    for name in full:
        pair23.check("COMMAND", "INFO", name)
        pair23.check("COMMAND", "DOCS", name)
    pair23.check("COMMAND", "INFO", "get", "nosuch", "SET", "Client|SetName", "client|nosuch", "get|x", "config")
    pair23.check("COMMAND", "DOCS", "get", "nosuch", "ZADD", "config|get", "object")


@pytest.mark.parametrize("args", [("COMMAND",), ("COMMAND", "INFO")])
def test_every_entry_of_command(pair23, unserved_rows: set[bytes], ours: Shape, theirs: Shape,  # type: ignore[no-untyped-def]
                                args: tuple[str, ...]) -> None:
    """The whole table at once: Valkey lists its commands in its (seeded)
    hash order, so entries are compared by name, each byte for byte."""
    v, t = pair23.both(*args)
    mine = {n: ours.info_entry(e) for n, e in _entries(t).items() if n not in EXTENSIONS}
    assert mine == {n: theirs.info_entry(e) for n, e in _entries(v).items() if n not in unserved_rows}
    assert len(_split(t)[1]) == len(mine) + len({n for n in EXTENSIONS if b"|" not in n})


def test_every_entry_of_command_docs(pair23, unserved_rows: set[bytes], ours: Shape,  # type: ignore[no-untyped-def]
                                     theirs: Shape) -> None:
    v, t = pair23.both("COMMAND", "DOCS")

    def by_name(reply: bytes, shape: Shape, leave: set[bytes]) -> dict[bytes, bytes]:
        fields = _split(reply)[1]
        return {_text(fields[i]): shape.docs_entry(fields[i + 1])
                for i in range(0, len(fields), 2) if _text(fields[i]) not in leave}

    assert by_name(t, ours, EXTENSIONS) == by_name(v, theirs, unserved_rows)


def test_valkey_orders_only_big_containers_per_start(valkey_server: Proc) -> None:
    """The premise of comparing big containers in any order: a second
    Valkey lists the small containers' subcommands in the same order as the
    first, and the big ones (CLIENT has twenty) in another."""
    other = start_valkey()
    try:
        first, second = _orders(valkey_server.port), _orders(other.port)
    finally:
        other.stop()
    small = [n for n, subs in first.items() if 0 < len(subs) <= ONE_BUCKET]
    big = [n for n, subs in first.items() if len(subs) > ONE_BUCKET]
    assert len(small) > 10 and b"client" in big
    assert all(first[n] == second[n] for n in small)
    assert any(first[n] != second[n] for n in big)


# -- COMMAND COUNT and COMMAND LIST ---------------------------------------------


def test_count(pair, unserved_rows: set[bytes]) -> None:  # type: ignore[no-untyped-def]
    """Valkey's count less the commands not served, plus this server's own."""
    v, t = pair.both("COMMAND", "COUNT")
    ours = int(t[1:-2]) - len({n for n in EXTENSIONS if b"|" not in n})
    assert ours == int(v[1:-2]) - len({n for n in unserved_rows if b"|" not in n})


def test_list_is_valkeys_less_the_unserved(pair, unserved_rows: set[bytes]) -> None:  # type: ignore[no-untyped-def]
    v, t = pair.both("COMMAND", "LIST")
    ours = _names(t)
    assert len(ours) == len(set(ours))
    assert set(ours) - EXTENSIONS == set(_names(v)) - unserved_rows


@pytest.fixture(scope="module")
def categories(valkey_server: Proc) -> list[str]:
    w = Wire(valkey_server.port)
    try:
        return [n.decode() for n in _names(w.call("ACL", "CAT"))]
    finally:
        w.close()


def test_list_by_every_acl_category(pair23, unserved_rows: set[bytes], categories: list[str]) -> None:  # type: ignore[no-untyped-def]
    assert len(categories) == 21
    for cat in [*categories, *(c.upper() for c in categories[:3])]:
        v, t = pair23.both("COMMAND", "LIST", "FILTERBY", "ACLCAT", cat)
        assert set(_names(t)) - EXTENSIONS == set(_names(v)) - unserved_rows, cat


@pytest.mark.parametrize("pattern", [
    "*", "z*", "Z*", "*|*", "client|*", "CLIENT|*", "h?et", "[a-c]*", "*range*", "x[^a]*", "acl|*",
    "latency|h*", "*store", "\\*", "nosuch*", "",
])
def test_list_by_pattern(pair23, unserved_rows: set[bytes], pattern: str) -> None:  # type: ignore[no-untyped-def]
    v, t = pair23.both("COMMAND", "LIST", "FILTERBY", "PATTERN", pattern)
    assert set(_names(t)) - EXTENSIONS == set(_names(v)) - unserved_rows


@pytest.mark.parametrize("args", [
    ("FILTERBY", "MODULE", "x"), ("FILTERBY", "MODULE", "lua"), ("FILTERBY", "MODULE", ""),
    ("FILTERBY", "ACLCAT", "nosuch"), ("FILTERBY", "ACLCAT", "@read"), ("FILTERBY", "PATTERN", "zzzz*"),
    ("FILTERBY", "foo", "x"), ("FILTERBY", "ACLCAT"), ("FILTERBY",), ("x",), ("x", "y", "z"),
    ("FILTERBY", "PATTERN", "a", "extra"),
])
def test_list_refusals_and_empty_filters(pair23, args: tuple[str, ...]) -> None:  # type: ignore[no-untyped-def]
    pair23.check("COMMAND", "LIST", *args)


# -- COMMAND GETKEYS / GETKEYSANDFLAGS ------------------------------------------

GETKEYS = [
    ("get", "k"), ("GET", "k"), ("set", "k", "v", "EX", "10", "GET"), ("getex", "k", "PERSIST"),
    ("mset", "a", "1", "b", "2"), ("msetnx", "a", "1", "b", "2"), ("mget", "a", "b", "c"),
    ("del", "a", "b"), ("unlink", "a"), ("exists", "a", "a"), ("rename", "a", "b"), ("copy", "a", "b", "DB", "1"),
    ("lmove", "a", "b", "LEFT", "RIGHT"), ("blmove", "a", "b", "LEFT", "RIGHT", "0"), ("rpoplpush", "a", "b"),
    ("blpop", "a", "b", "0"), ("lmpop", "2", "a", "b", "LEFT", "COUNT", "2"), ("blmpop", "0", "1", "a", "LEFT"),
    ("zmpop", "1", "z", "MIN"), ("bzmpop", "0", "2", "a", "b", "MAX"), ("bzpopmin", "a", "b", "0"),
    ("zunionstore", "d", "2", "a", "b", "WEIGHTS", "1", "2"), ("zinterstore", "d", "1", "a"),
    ("zinter", "3", "a", "b", "c"), ("zunion", "2", "a", "b", "WITHSCORES"), ("zdiff", "2", "a", "b"),
    ("zdiffstore", "d", "2", "a", "b"), ("zintercard", "2", "a", "b", "LIMIT", "1"),
    ("zrangestore", "d", "s", "0", "-1"), ("sintercard", "2", "a", "b"), ("sinterstore", "d", "a", "b"),
    ("smove", "a", "b", "m"), ("sort", "k", "BY", "w_*", "GET", "#", "STORE", "d"), ("sort_ro", "k"),
    ("eval", "return 1", "2", "a", "b", "x"), ("evalsha_ro", "a" * 40, "1", "k"), ("eval", "return 1", "0"),
    ("fcall", "f", "1", "k", "arg"), ("fcall_ro", "f", "0"),
    ("xread", "COUNT", "1", "STREAMS", "a", "b", "0", "0"), ("xread", "BLOCK", "0", "STREAMS", "a", "$"),
    ("xreadgroup", "GROUP", "g", "c", "STREAMS", "s", ">"), ("xadd", "s", "*", "f", "v"),
    ("xgroup", "create", "s", "g", "$"), ("xinfo", "stream", "s"), ("object", "encoding", "k"),
    ("memory", "usage", "k"), ("pfcount", "a", "b"), ("pfmerge", "d", "a", "b"), ("bitop", "AND", "d", "a", "b"),
    ("lcs", "a", "b"), ("georadius", "g", "0", "0", "1", "km", "STORE", "d"),
    ("georadiusbymember", "g", "m", "1", "km", "STOREDIST", "d"), ("geosearchstore", "d", "s", "FROMMEMBER", "m",
                                                                   "BYRADIUS", "1", "km"),
    ("migrate", "h", "1", "", "0", "5", "KEYS", "a", "b"), ("migrate", "h", "1", "k", "0", "5"),
    ("watch", "a", "b"), ("hset", "h", "f", "v"), ("setbit", "b", "7", "1"), ("bitfield_ro", "b", "GET", "u8", "0"),
    ("restore", "k", "0", "x"), ("dump", "k"), ("touch", "a", "b"), ("delifeq", "k", "v"),
    ("msetex", "2", "a", "1", "b", "2", "EX", "10"),
    ("ping",), ("publish", "c", "m"), ("subscribe", "c"), ("nosuch", "a"), ("get",), ("get", "a", "b"),
    ("time", "x"), ("zunionstore", "d", "x", "a"), ("zinter", "0", "a"), ("zinter", "-1", "a"),
    ("zinter", "5", "a", "b"), ("eval", "return 1", "3", "a"), ("lmpop", "0", "a", "LEFT"),
    ("xread", "STREAMS", "a", "b", "0"), ("client", "id"), ("config", "get", "x"), ("client", "nosuch"),
]


def test_getkeys(pair23) -> None:  # type: ignore[no-untyped-def]
    for args in GETKEYS:
        pair23.check("COMMAND", "GETKEYS", *args)
        pair23.check("COMMAND", "GETKEYSANDFLAGS", *args)


# -- the exceptions -------------------------------------------------------------


def documented_exceptions(page: str) -> dict[bytes, str]:
    """The table of docs/compatibility.md between the exceptions markers:
    each row Valkey has that this server does not serve, and why."""
    block = page.split("<!-- exceptions:begin -->", 1)[1].split("<!-- exceptions:end -->", 1)[0]
    out: dict[bytes, str] = {}
    for line in block.splitlines():
        m = re.fullmatch(r"\| ([A-Z][A-Z_ -]*) \| (.+) \|", line.strip())
        if m:
            out[m.group(1).lower().replace(" ", "|").encode()] = m.group(2).strip()
    return out


def _listed(port: int) -> set[bytes]:
    w = Wire(port)
    try:
        return set(_names(w.call("COMMAND", "LIST")))
    finally:
        w.close()


def test_unserved_rows_are_the_documented_exceptions(trafikey_server: Proc, valkey_server: Proc,
                                                       unserved_rows: set[bytes]) -> None:
    """Every row of Valkey's COMMAND LIST is served but the exceptions
    docs/compatibility.md names with a reason: asked of both servers, and as
    tools/gen_unserved.py derives it from the command table."""
    documented = documented_exceptions(DOC.read_text())
    assert documented and all(documented.values())
    theirs, ours = _listed(valkey_server.port), _listed(trafikey_server.port)
    assert sorted(theirs - ours) == sorted(documented)
    assert sorted(unserved_rows) == sorted(documented)

"""COMMAND family against Valkey: HELP, GETKEYS, LIST filters and the job
core's rows (every row's INFO and DOCS are in test_command_table.py)."""

from __future__ import annotations

import pytest

from trafikey_server.protocol.table import default_table

TABLE = default_table()


def test_info_several_and_unknown(pair23) -> None:
    pair23.check("COMMAND", "INFO", "get", "nosuchcmd", "SET", "client|setname")
    pair23.check("COMMAND", "DOCS", "get", "nosuchcmd", "zadd")


def test_count_is_our_rows(pair) -> None:
    assert pair.t.call("COMMAND", "COUNT") == b":%d\r\n" % len(TABLE.ordered)


def test_command_all_rows(pair) -> None:
    reply = pair.t.call("COMMAND")
    assert reply.startswith(b"*%d\r\n" % len(TABLE.ordered))


def test_help(pair23) -> None:
    pair23.check("COMMAND", "HELP")


@pytest.mark.parametrize("args", [
    ("get", "k"), ("set", "a", "b", "EX", "10"), ("mset", "a", "1", "b", "2"),
    ("mget", "a", "b", "c"), ("del", "a", "b"), ("zunionstore", "d", "2", "a", "b", "WEIGHTS", "1", "2"),
    ("zinter", "3", "a", "b", "c"), ("zrangestore", "d", "s", "0", "-1"), ("rename", "a", "b"),
    ("copy", "a", "b", "DB", "1"), ("zintercard", "2", "a", "b", "LIMIT", "1"),
    ("ping",), ("nosuch", "a"), ("get",), ("get", "a", "b"), ("hset", "h", "f", "v"),
    ("set", "k", "v", "GET"), ("set", "k", "v", "get"), ("time", "x"), ("zunionstore", "d", "x", "a"),
    ("zinter", "0", "a"), ("zinter", "-1", "a"), ("zinter", "5", "a", "b"),
])
def test_getkeys(pair23, args) -> None:
    pair23.check("COMMAND", "GETKEYS", *args)
    pair23.check("COMMAND", "GETKEYSANDFLAGS", *args)


def _names_of(reply: bytes) -> set[bytes]:
    return set(reply.split(b"\r\n")[2::2])


@pytest.mark.parametrize("args", [
    ("FILTERBY", "ACLCAT", "hash"), ("FILTERBY", "ACLCAT", "sortedset"), ("FILTERBY", "PATTERN", "z*"),
    ("FILTERBY", "PATTERN", "CLIENT|*"), ("FILTERBY", "PATTERN", "h?et"),
])
def test_list_filter_matches_valkey_on_served(pair23, args) -> None:
    """Valkey serves more commands, in dict order: ours must be exactly its
    answer restricted to the commands we serve."""
    served = {cmd.bname for cmd in TABLE.everything() if not cmd.extension}
    v, t = pair23.both("COMMAND", "LIST", *args)
    assert _names_of(t) == _names_of(v) & served
    assert _names_of(t)


@pytest.mark.parametrize("args", [
    ("FILTERBY", "ACLCAT", "nosuch"), ("FILTERBY", "MODULE", "x"),
    ("FILTERBY", "foo", "x"), ("x",), ("FILTERBY", "PATTERN", "zzzz*"),
])
def test_list_filters(pair23, args) -> None:
    pair23.check("COMMAND", "LIST", *args)


def test_list_served_names(pair) -> None:
    """Every name we list is one Valkey lists too (Valkey lists more)."""
    ours = set(pair.t.call("COMMAND", "LIST").split(b"\r\n")[2::2])
    theirs = set(pair.v.call("COMMAND", "LIST").split(b"\r\n")[2::2])
    ext = {cmd.bname for cmd in TABLE.everything() if cmd.extension}
    assert ours and ours - ext <= theirs
    assert len(ours) == sum(1 for _ in TABLE.everything())


def test_extension_rows_are_not_valkeys(pair) -> None:
    """The rows this server adds (the job core, the test clock) are ones
    Valkey does not have; everything else is Valkey's own row."""
    ext = {cmd.bname for cmd in TABLE.everything() if cmd.extension}
    theirs = set(pair.v.call("COMMAND", "LIST").split(b"\r\n")[2::2])
    assert ext and not ext & theirs


def test_list_filter_by_module(pair) -> None:
    emq = _names_of(pair.t.call("COMMAND", "LIST", "FILTERBY", "MODULE", "emq"))
    assert emq == {cmd.bname for cmd in TABLE.ordered if cmd.bname.startswith(b"emq.")}

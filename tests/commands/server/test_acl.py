"""ACL users, command categories and key patterns, compared with Valkey 9.1.2.

Each test runs the same steps on a Valkey and a trafikey-server of this
module's own (users are server-wide state, so the session's shared pair is
left alone) over several connections, and every reply must be the same bytes.
Users a test creates are deleted when it ends.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from helpers.resp_wire import Twin
from helpers.servers import Proc, own_pair


@pytest.fixture(scope="module")
def servers() -> Iterator[tuple[Proc, Proc]]:
    with own_pair() as pair:
        yield pair


@pytest.fixture
def twin(servers: tuple[Proc, Proc]) -> Iterator[Twin]:
    tw = Twin(servers[0].port, servers[1].port)
    yield tw
    tw.close()
    admin = Twin(servers[0].port, servers[1].port)
    users = admin.conn(0)
    for w in users:
        names = [n for n in _bulks(w.call("ACL", "USERS")) if n != b"default"]
        if names:
            w.call("ACL", "DELUSER", *names)
        w.call("ACL", "SETUSER", "default", "reset", "on", "nopass", "~*", "&*", "+@all")
        w.call("FLUSHALL")
    admin.close()


def _bulks(reply: bytes) -> list[bytes]:
    """The items of a flat array of bulk strings."""
    lines = reply.split(b"\r\n")
    return [lines[i + 1] for i in range(1, len(lines) - 1, 2) if lines[i].startswith(b"$")]


def test_default_user(twin: Twin) -> None:
    for args in (("ACL", "LIST"), ("ACL", "USERS"), ("ACL", "WHOAMI"), ("ACL", "GETUSER", "default"),
                 ("ACL", "GETUSER", "nobody"), ("ACL", "CAT"), ("ACL", "HELP")):
        twin.check(0, *args)
    twin.both(0, "HELLO", "3")  # client ids differ; RESP3 shapes are compared next
    twin.check(0, "ACL", "GETUSER", "default")
    twin.check(0, "ACL", "GETUSER", "nobody")


SETUSER_CASES = [
    ("alice",),
    ("alice", "on", ">pw", "~emq:{orders}:*", "+@all", "-flushall"),
    ("alice", "on", ">pw", "%R~r:*", "%W~w:*", "+get", "+set", "+@hash", "resetchannels"),
    ("alice", "~a", "allkeys"),
    ("alice", "allkeys", "~a"),
    ("alice", "~a", "~b", "%R~a", "%W~c", "%RW~d"),
    ("alice", "%rw~a", "%wr~b"),
    ("alice", "<pw"),
    ("alice", ">pw", "<pw"),
    ("alice", ">a", ">b", ">a", "<a"),
    ("alice", "#abc"),
    ("alice", "#" + "a" * 64, "!" + "a" * 64),
    ("alice", "#" + "A" * 64),
    ("alice", "+get|x"),
    ("alice", "+client|id", "-client|id"),
    ("alice", "+client|id", "+client|setname", "-client"),
    ("alice", "+config|get", "-@all"),
    ("alice", "on", "nopass", ">p"),
    ("alice", ">p", "nopass"),
    ("alice", ">p", "resetpass"),
    ("alice", "on", ">p", "~k", "+get", "reset"),
    ("alice", "%X~a"),
    ("alice", "%~a"),
    ("alice", "%R"),
    ("alice", "%"),
    ("alice", "%RR~a"),
    ("alice", "+select|0"),
    ("alice", "+client|id|x"),
    ("alice", "+client|"),
    ("alice", "allcommands", "-@dangerous", "allkeys", "allchannels"),
    ("alice", "+@all", "-@keyspace", "+del"),
    ("alice", "-@all", "+@hash", "-hset", "+@hash"),
    ("alice", "+@read", "+@write", "-@read"),
    ("alice", "nocommands", "+GET", "+Set"),
    ("alice", "ON", "OFF"),
    ("alice", "&chan", "&chan", "&other"),
    ("alice", "allchannels", "&x"),
    ("alice", "&*", "resetchannels"),
    ("alice", "bogus"),
    ("alice", "+nosuch"),
    ("alice", "+@nosuch"),
    ("alice", "-nosuch"),
    ("alice", "~a b"),
    ("alice", ""),
    ("a b",),
    ("a\x00b",),
    ("alice", "+@transaction", "+@connection", "+@scripting", "+@sortedset", "+@string"),
]


@pytest.mark.parametrize("args", SETUSER_CASES, ids=[" ".join(a)[:60] for a in SETUSER_CASES])
def test_setuser_and_describe(twin: Twin, args: tuple[str, ...]) -> None:
    twin.check(0, "ACL", "SETUSER", *args)
    twin.check(0, "ACL", "LIST")
    twin.check(0, "ACL", "GETUSER", args[0])
    twin.check(0, "ACL", "USERS")


def test_setuser_is_all_or_nothing(twin: Twin) -> None:
    twin.check(0, "ACL", "SETUSER", "bob", "on", ">pw", "~k", "+get")
    twin.check(0, "ACL", "SETUSER", "bob", "off", "+set", "+nosuch")
    twin.check(0, "ACL", "LIST")
    twin.check(0, "ACL", "SETUSER", "carol", "on", "bogus")
    twin.check(0, "ACL", "USERS")


def test_subcommand_arity_and_errors(twin: Twin) -> None:
    for args in (("ACL",), ("ACL", "WHOAMI", "x"), ("ACL", "USERS", "x"), ("ACL", "LIST", "x"),
                 ("ACL", "SETUSER"), ("ACL", "GETUSER"), ("ACL", "GETUSER", "a", "b"), ("ACL", "DELUSER"),
                 ("ACL", "nope"), ("ACL", "CAT", "a", "b"), ("ACL", "CAT", "nope"), ("ACL", "LOAD"),
                 ("ACL", "SAVE"), ("ACL", "DELUSER", "default"), ("ACL", "DELUSER", "x", "default"),
                 ("ACL", "GENPASS", "0"), ("ACL", "GENPASS", "4097"), ("ACL", "GENPASS", "x"),
                 ("ACL", "GENPASS", "1", "2"), ("ACL", "DRYRUN", "nobody", "get", "x"),
                 ("ACL", "DRYRUN", "default", "nosuch", "x"), ("ACL", "DRYRUN", "default", "get"),
                 ("ACL", "DRYRUN", "default", "get", "x")):
        twin.check(0, *args)


def test_genpass_lengths(twin: Twin) -> None:
    for bits in ("1", "4", "5", "255", "256", "4096"):
        rv, rt = twin.both(0, "ACL", "GENPASS", bits)
        assert rt.split(b"\r\n")[0] == rv.split(b"\r\n")[0]  # same length; the hex itself is random
        assert all(ch in b"0123456789abcdef" for ch in rt.split(b"\r\n")[1])
    rv, rt = twin.both(0, "ACL", "GENPASS")
    assert rt[:4] == rv[:4] == b"$64\r"


def test_cat_lists_the_commands_both_serve(twin: Twin) -> None:
    """Valkey lists a category's commands in its hash table's order, which
    changes from run to run: compared as sets, over the commands both serve."""
    from trafikey_server.protocol.table import default_table

    ours = {c.bname for c in default_table().everything() if not c.extension}
    for cat in _bulks(twin.check(0, "ACL", "CAT")):
        rv, rt = twin.both(0, "ACL", "CAT", cat)
        assert set(_bulks(rt)) & ours == set(_bulks(rv)) & ours, cat


def test_deluser_disconnects_its_clients(twin: Twin) -> None:
    twin.check(0, "ACL", "SETUSER", "bob", "on", ">pw", "allkeys", "+@all")
    twin.check(1, "AUTH", "bob", "pw")
    twin.check(1, "ACL", "WHOAMI")
    twin.check(0, "ACL", "DELUSER", "bob", "nobody", "bob")
    for w in twin.conn(1):
        assert w.read_until_closed() == b""
    twin.check(0, "ACL", "USERS")
    # A client deleting its own user gets its reply, then is closed.
    twin.check(0, "ACL", "SETUSER", "self", "on", "nopass", "allkeys", "+@all")
    twin.check(2, "AUTH", "self", "any")
    twin.check(2, "ACL", "DELUSER", "self")
    for w in twin.conn(2):
        assert w.read_until_closed() == b""


def test_command_and_key_permissions(twin: Twin) -> None:
    twin.check(0, "SET", "r:1", "v")
    twin.check(0, "HSET", "w:h", "f", "v")
    twin.check(0, "ACL", "SETUSER", "carol", "on", ">pw", "%R~r:*", "%W~w:*", "~rw:*", "+get", "+set",
               "+@hash", "+mget", "+mset", "+del", "+exists", "+copy", "+rename", "+eval", "+multi", "+exec",
               "+client|getname", "+acl|whoami")
    twin.check(1, "AUTH", "carol", "pw")
    for args in (("GET", "r:1"), ("GET", "w:1"), ("GET", "rw:1"), ("SET", "w:1", "x"), ("SET", "r:1", "x"),
                 ("SET", "w:1", "x", "GET"), ("SET", "rw:1", "x", "GET"), ("HSET", "r:1", "a", "b"),
                 ("HSET", "w:h", "a", "b"), ("HGET", "w:h", "a"), ("HLEN", "w:h"), ("PING",),
                 ("CONFIG", "SET", "x", "y"), ("CLIENT", "ID"), ("CLIENT", "GETNAME"),
                 ("CLIENT", "SETNAME", "x"), ("ACL", "WHOAMI"),
                 ("ACL", "LIST"), ("MGET", "r:1", "r:2", "w:1"), ("MSET", "w:1", "a", "w:2", "b"),
                 ("MSET", "w:1", "a", "r:2", "b"), ("DEL", "w:1"), ("DEL", "r:1"), ("EXISTS", "w:1", "x"),
                 ("COPY", "r:1", "w:2"), ("COPY", "w:1", "r:2"), ("RENAME", "rw:1", "rw:2"),
                 ("GET",), ("NOSUCH", "x"), ("CLIENT", "NOSUCH"), ("FLUSHALL",), ("AUTH", "carol", "pw"),
                 ("AUTH", "carol", "bad"), ("QUIT",)):
        twin.check(1, *args)


def test_nokey_rights_and_first_arg_rules(twin: Twin) -> None:
    twin.check(0, "ACL", "SETUSER", "dan", "on", "nopass", "-@all", "+select|0", "+get", "resetkeys")
    twin.check(1, "AUTH", "dan", "x")
    for args in (("SELECT", "0"), ("SELECT", "1"), ("GET", "k"), ("SET", "k", "v")):
        twin.check(1, *args)


def test_changes_apply_to_connected_clients(twin: Twin) -> None:
    twin.check(0, "ACL", "SETUSER", "erin", "on", ">pw", "~*", "+get")
    twin.check(1, "AUTH", "erin", "pw")
    twin.check(1, "SET", "k", "v")
    twin.check(0, "ACL", "SETUSER", "erin", "+set")
    twin.check(1, "SET", "k", "v")
    twin.check(0, "ACL", "SETUSER", "erin", "off", "resetpass")
    twin.check(1, "GET", "k")  # off stops new logins, not this connection
    twin.check(2, "AUTH", "erin", "pw")
    # The default user itself can be narrowed: every connection on it follows.
    twin.check(0, "ACL", "SETUSER", "default", "-flushall", "-@dangerous")
    twin.check(3, "FLUSHALL")
    twin.check(3, "KEYS", "*")
    twin.check(3, "GET", "k")
    twin.check(0, "ACL", "SETUSER", "default", "+@all")
    twin.check(3, "FLUSHALL")


def test_transactions(twin: Twin) -> None:
    twin.check(0, "ACL", "SETUSER", "fay", "on", ">pw", "~q:*", "+@all", "-flushdb")
    twin.check(1, "AUTH", "fay", "pw")
    for args in (("MULTI",), ("SET", "q:1", "a"), ("GET", "x"), ("FLUSHDB",), ("EXEC",), ("MULTI",),
                 ("SET", "q:1", "a"), ("INCR", "q:2"), ("EXEC",), ("MULTI",), ("SET", "q:1", "b")):
        twin.check(1, *args)
    # A command queued while allowed, refused by the time EXEC runs it.
    twin.check(0, "ACL", "SETUSER", "fay", "-set")
    twin.check(1, "EXEC")
    twin.check(1, "GET", "q:1")


def test_scripts_run_as_the_caller(twin: Twin) -> None:
    twin.check(0, "ACL", "SETUSER", "gil", "on", ">pw", "~emq:{orders}:*", "+@all", "-flushall")
    twin.check(1, "AUTH", "gil", "pw")
    for script in ("return server.call('get','x')", "return server.call('flushall')",
                   "return redis.pcall('get','x')", "return redis.pcall('flushall')",
                   "return server.call('set','emq:{orders}:a','1')",
                   "return server.acl_check_cmd('get','x')", "return server.acl_check_cmd('get','emq:{orders}:a')",
                   "return server.acl_check_cmd('flushall')", "return server.acl_check_cmd('nosuch')"):
        twin.check(1, "EVAL", script, "0")
    twin.check(1, "EVAL", "return server.call('get', KEYS[1])", "1", "x")
    twin.check(1, "EVAL", "return server.call('get', KEYS[1])", "1", "emq:{orders}:a")
    twin.check(0, "ACL", "SETUSER", "gil", "-eval")
    twin.check(1, "EVAL", "return 1", "0")
    twin.check(1, "EVALSHA", "e0e1f9fabfc9d4800c877a703b823ac0578ff8db", "0")
    twin.check(1, "INFO", "errorstats")


def test_dryrun(twin: Twin) -> None:
    twin.check(0, "ACL", "SETUSER", "hal", "on", "~k:*", "+get", "+client|id")
    for args in (("hal", "get", "k:1"), ("hal", "get", "x"), ("hal", "set", "k:1", "v"), ("hal", "client", "id"),
                 ("hal", "client", "list"), ("hal", "mget", "k:1", "x"), ("hal", "GET", "k:1")):
        twin.check(0, "ACL", "DRYRUN", *args)

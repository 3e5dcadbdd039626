"""TRAFIKEY.SNAPSHOT: the keyspace saved under a name and restored exactly.

Exactness is checked on what the server would hand another server: DUMP of
every key (the RDB form of the value, a stream's groups, consumers and
pending entries included), its PEXPIRETIME, its hash fields' expiry times
and OBJECT ENCODING, and DEBUG DIGEST over everything.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import redis
from helpers.every_type import FAR, commands, load
from helpers.resp_wire import Wire, wait_blocked
from helpers.servers import Proc, start_trafikey

BRAND = b"{emq}:version"


@pytest.fixture(scope="module")
def srv() -> Iterator[Proc]:
    p = start_trafikey("--enable-debug-command", "yes", "--enable-clock-command", "yes")
    yield p
    p.stop()


@pytest.fixture
def w(srv: Proc) -> Iterator[Wire]:
    """A raw connection on a flushed keyspace (brand written back), no
    snapshots, the clock on the system time."""
    c = Wire(srv.port)
    assert c.call("FLUSHALL") == b"+OK\r\n"
    c.call("SET", BRAND, "echomq:6.0.0")  # as the server wrote it at start
    r = redis.Redis(port=srv.port)
    names = r.execute_command("TRAFIKEY.SNAPSHOT", "LIST")
    if names:
        r.execute_command("TRAFIKEY.SNAPSHOT", "DEL", *names)
    r.close()
    c.call("TRAFIKEY.CLOCK", "RELEASE")
    yield c
    c.call("TRAFIKEY.CLOCK", "RELEASE")
    c.close()


def digest(w: Wire) -> bytes:
    return w.call("DEBUG", "DIGEST")


def state(port: int) -> dict[tuple[int, bytes], tuple[bytes, ...]]:
    """Every key of every database as DUMP, PEXPIRETIME, encoding and, for a
    hash, its fields' expiry times."""
    out: dict[tuple[int, bytes], tuple[bytes, ...]] = {}
    for dbid in range(16):
        r = redis.Redis(port=port, db=dbid)
        keys = sorted(r.keys("*"))
        p = r.pipeline(transaction=False)
        for k in keys:
            p.dump(k)
            p.pexpiretime(k)
            p.object("encoding", k)
            p.type(k)
        res = p.execute()
        for i, k in enumerate(keys):
            dump, when, enc, typ = res[4 * i:4 * i + 4]
            fields = b""
            if typ == b"hash":
                names = sorted(r.hkeys(k))
                fields = repr(r.execute_command("HPEXPIRETIME", k, "FIELDS", len(names), *names)).encode()
            out[(dbid, k)] = (dump, str(when).encode(), enc, fields)
        r.close()
    return out


def change_everything(w: Wire) -> None:
    """Writes of every kind after a SAVE: deletions, edits in place of every
    type, new keys, expiry changes, another database."""
    for c in [("DEL", "str:0", "hash:1"), ("APPEND", "raw:7", "more"), ("HSET", "hash:9", "name", "changed"),
              ("HPERSIST", "big:hash", "FIELDS", 1, "f1"), ("RPUSH", "list:2", "d"), ("SADD", "set:3", 99),
              ("ZADD", "zset:4", 7, "a"), ("XADD", "stream:5", "9999-1", "h", "x"), ("XACK", "stream:5", "grp", "6-1"),
              ("XREADGROUP", "GROUP", "grp", "bob", "STREAMS", "stream:13", ">"), ("PFADD", "hll:6", "zzz"),
              ("SET", "new", "key"), ("PERSIST", "str:40"), ("PEXPIREAT", "list:10", FAR + 1),
              ("SELECT", 5), ("SET", "other", "db"), ("SELECT", 0)]:
        assert not w.call(*c).startswith(b"-"), c


def test_every_type_round_trips(w: Wire, srv: Proc) -> None:
    load(w, commands(400))
    load(w, commands(50, db=3))
    before = state(srv.port)
    d0 = digest(w)
    assert w.call("TRAFIKEY.SNAPSHOT", "SAVE", "all") == b"+OK\r\n"
    change_everything(w)
    assert state(srv.port) != before
    assert w.call("TRAFIKEY.SNAPSHOT", "RESTORE", "all") == b"+OK\r\n"
    assert state(srv.port) == before
    assert digest(w) == d0
    # Restored twice, with writes between: the same each time.
    change_everything(w)
    assert w.call("TRAFIKEY.SNAPSHOT", "RESTORE", "all") == b"+OK\r\n"
    assert state(srv.port) == before


def test_writes_after_restore_leave_the_snapshot_alone(w: Wire, srv: Proc) -> None:
    load(w, commands(64))
    before = state(srv.port)
    w.call("TRAFIKEY.SNAPSHOT", "SAVE", "s")
    w.call("TRAFIKEY.SNAPSHOT", "RESTORE", "s")
    change_everything(w)  # edits in place of the restored values
    w.call("TRAFIKEY.SNAPSHOT", "RESTORE", "s")
    assert state(srv.port) == before


def test_hundred_thousand_keys(w: Wire) -> None:
    load(w, commands(100_000))
    load(w, commands(2_000, db=2))
    assert int(w.call("DBSIZE")[1:-2]) > 100_000
    d0 = digest(w)
    w.call("TRAFIKEY.SNAPSHOT", "SAVE", "big")
    change_everything(w)
    w.call("FLUSHDB")
    w.call("SET", BRAND, "echomq:6.0.0")  # the brand is the server's: put back as it was
    assert digest(w) != d0
    assert w.call("TRAFIKEY.SNAPSHOT", "RESTORE", "big") == b"+OK\r\n"
    assert digest(w) == d0


def test_save_replaces_del_counts_list_sorts(srv: Proc, w: Wire) -> None:
    w.call("SET", "k", "1")
    assert w.call("TRAFIKEY.SNAPSHOT", "SAVE", "b") == b"+OK\r\n"
    w.call("SET", "k", "2")
    assert w.call("TRAFIKEY.SNAPSHOT", "SAVE", "b") == b"+OK\r\n"  # replaces
    w.call("TRAFIKEY.SNAPSHOT", "SAVE", "a")
    w.call("TRAFIKEY.SNAPSHOT", "SAVE", "c\x00d")
    w.call("SET", "k", "3")
    w.call("TRAFIKEY.SNAPSHOT", "RESTORE", "b")
    assert w.call("GET", "k") == b"$1\r\n2\r\n"
    for proto in (2, 3):
        c = Wire(srv.port)
        c.call("HELLO", proto)
        assert c.call("TRAFIKEY.SNAPSHOT", "LIST") == b"*3\r\n$1\r\na\r\n$1\r\nb\r\n$3\r\nc\x00d\r\n"
        assert c.call("TRAFIKEY.SNAPSHOT", "RESTORE", "a") == b"+OK\r\n"
        c.close()
    assert w.call("TRAFIKEY.SNAPSHOT", "DEL", "a", "nope", "a", "c\x00d") == b":2\r\n"
    assert w.call("TRAFIKEY.SNAPSHOT", "LIST") == b"*1\r\n$1\r\nb\r\n"
    assert w.call("TRAFIKEY.SNAPSHOT", "DEL", "b") == b":1\r\n"
    assert w.call("TRAFIKEY.SNAPSHOT", "LIST") == b"*0\r\n"


def test_help(srv: Proc) -> None:
    for proto in (2, 3):
        c = Wire(srv.port)
        c.call("HELLO", proto)
        reply = c.call("TRAFIKEY.SNAPSHOT", "HELP")
        c.close()
        lines = reply.split(b"\r\n")
        assert lines[0] == b"*13"
        assert lines[1] == b"+TRAFIKEY.SNAPSHOT <subcommand> [<arg> ...]. Subcommands are:"
        assert [x for x in lines[1:] if x and not x.startswith(b"+    ")] == [
            b"+TRAFIKEY.SNAPSHOT <subcommand> [<arg> ...]. Subcommands are:", b"+SAVE <name>", b"+RESTORE <name>",
            b"+DEL <name> [<name> ...]", b"+LIST", b"+HELP"]


def test_errors_in_valkeys_words_and_nothing_written(w: Wire, valkey_server: Proc) -> None:
    """Arity and subcommand errors read as Valkey's for a container command
    (OBJECT there); an unknown name gets a text of its own. Each leaves the
    keyspace as it was."""
    load(w, commands(40))
    w.call("TRAFIKEY.SNAPSHOT", "SAVE", "kept")
    w.call("SET", "after", "save")
    d0 = digest(w)
    v = Wire(valkey_server.port)

    def like_valkey(valkey_args: tuple[object, ...], ours: tuple[object, ...]) -> None:
        expected = v.call(*valkey_args)
        if len(valkey_args) > 1:
            expected = expected.replace(b"'object|%s'" % str(valkey_args[1]).lower().encode(),
                                        b"'trafikey.snapshot|%s'" % str(ours[1]).lower().encode())
        expected = expected.replace(b"'object'", b"'trafikey.snapshot'").replace(b"OBJECT", b"TRAFIKEY.SNAPSHOT")
        assert expected.startswith(b"-ERR ")
        assert w.call(*ours) == expected

    like_valkey(("OBJECT",), ("TRAFIKEY.SNAPSHOT",))
    like_valkey(("OBJECT", "nosuch"), ("TRAFIKEY.SNAPSHOT", "nosuch"))
    like_valkey(("OBJECT", "ENCODING"), ("TRAFIKEY.SNAPSHOT", "SAVE"))
    like_valkey(("OBJECT", "ENCODING"), ("TRAFIKEY.SNAPSHOT", "RESTORE"))
    like_valkey(("OBJECT", "ENCODING"), ("TRAFIKEY.SNAPSHOT", "DEL"))
    like_valkey(("OBJECT", "ENCODING", "a", "b"), ("TRAFIKEY.SNAPSHOT", "SAVE", "a", "b"))
    like_valkey(("OBJECT", "ENCODING", "a", "b"), ("TRAFIKEY.SNAPSHOT", "RESTORE", "a", "b"))
    like_valkey(("OBJECT", "HELP", "x"), ("TRAFIKEY.SNAPSHOT", "HELP", "x"))
    like_valkey(("OBJECT", "HELP", "x"), ("TRAFIKEY.SNAPSHOT", "LIST", "x"))
    v.close()
    assert w.call("TRAFIKEY.SNAPSHOT", "RESTORE", "missing") == b"-ERR no snapshot named 'missing'\r\n"
    assert w.call("TRAFIKEY.SNAPSHOT", "RESTORE", "a\r\nb\x00c") == b"-ERR no snapshot named 'a  b'\r\n"
    assert digest(w) == d0
    assert w.call("TRAFIKEY.SNAPSHOT", "LIST") == b"*1\r\n$4\r\nkept\r\n"
    # Refused inside a script, as an admin command not meant for scripts.
    assert w.call("EVAL", "return redis.call('TRAFIKEY.SNAPSHOT', 'RESTORE', 'kept')", 0).startswith(
        b"-ERR This Valkey command is not allowed from script")
    assert digest(w) == d0


def test_watch_is_aborted(w: Wire, srv: Proc) -> None:
    w.call("SET", "stored", "1")
    w.call("TRAFIKEY.SNAPSHOT", "SAVE", "s")
    w.call("DEL", "stored")
    w.call("SET", "unrelated", "x")
    other = Wire(srv.port)
    for key in ("stored", "missing-both"):
        assert other.call("WATCH", key) == b"+OK\r\n"
        w.call("TRAFIKEY.SNAPSHOT", "RESTORE", "s")
        other.call("MULTI")
        other.call("SET", "t", "1")
        # "stored" comes back with the restore; a key absent on both sides
        # is untouched, as FLUSHALL leaves its watchers alone.
        assert other.call("EXEC") == (b"*-1\r\n" if key == "stored" else b"*1\r\n+OK\r\n")
    other.close()


def test_watch_of_a_key_the_restore_removes(w: Wire, srv: Proc) -> None:
    w.call("TRAFIKEY.SNAPSHOT", "SAVE", "empty")
    w.call("SET", "k", "1")
    other = Wire(srv.port)
    other.call("WATCH", "k")
    w.call("TRAFIKEY.SNAPSHOT", "RESTORE", "empty")
    other.call("MULTI")
    other.call("SET", "t", "1")
    assert other.call("EXEC") == b"*-1\r\n"
    other.close()


def test_tracking_clients_are_invalidated(w: Wire, srv: Proc) -> None:
    w.call("SET", "k", "1")
    w.call("TRAFIKEY.SNAPSHOT", "SAVE", "s")
    t = Wire(srv.port)
    t.call("HELLO", 3)
    assert t.call("CLIENT", "TRACKING", "ON") == b"+OK\r\n"
    assert t.call("GET", "k") == b"$1\r\n1\r\n"
    w.call("TRAFIKEY.SNAPSHOT", "RESTORE", "s")
    assert t.read_reply() == b">2\r\n$10\r\ninvalidate\r\n_\r\n"  # all keys, as after FLUSHALL
    assert t.call("PING") == b"+PONG\r\n"
    t.close()


def test_a_client_blocked_on_a_key_the_snapshot_holds_is_served(w: Wire, srv: Proc) -> None:
    w.call("RPUSH", "jobs", "first", "second")
    w.call("TRAFIKEY.SNAPSHOT", "SAVE", "s")
    w.call("DEL", "jobs")
    waiter = Wire(srv.port)
    waiter.send_raw(b"*3\r\n$5\r\nBLPOP\r\n$4\r\njobs\r\n$1\r\n0\r\n")
    wait_blocked(w)
    w.call("TRAFIKEY.SNAPSHOT", "RESTORE", "s")
    assert waiter.read_reply() == b"*2\r\n$4\r\njobs\r\n$5\r\nfirst\r\n"
    assert w.call("LRANGE", "jobs", 0, -1) == b"*1\r\n$6\r\nsecond\r\n"
    waiter.close()


def test_expiry_kept_and_keys_past_it_left_out(w: Wire) -> None:
    t0 = 1_900_000_000_000
    w.call("TRAFIKEY.CLOCK", "FREEZE", t0)
    w.call("SET", "short", "x", "PX", 1000)
    w.call("SET", "long", "y", "PXAT", t0 + 60_000)
    w.call("HSET", "h", "a", "1", "b", "2")
    w.call("HPEXPIREAT", "h", t0 + 500, "FIELDS", 1, "a")
    w.call("HPEXPIREAT", "h", t0 + 90_000, "FIELDS", 1, "b")
    w.call("TRAFIKEY.SNAPSHOT", "SAVE", "s")
    assert w.call("TRAFIKEY.SNAPSHOT", "RESTORE", "s") == b"+OK\r\n"
    assert w.call("PEXPIRETIME", "short") == b":%d\r\n" % (t0 + 1000)
    assert w.call("PEXPIRETIME", "long") == b":%d\r\n" % (t0 + 60_000)
    assert w.call("HPEXPIRETIME", "h", "FIELDS", 2, "a", "b") == b"*2\r\n:%d\r\n:%d\r\n" % (t0 + 500, t0 + 90_000)
    w.call("TRAFIKEY.CLOCK", "ADVANCE", 1001)  # past "short" and the field "a"
    w.call("SET", "short", "rewritten")
    assert w.call("TRAFIKEY.SNAPSHOT", "RESTORE", "s") == b"+OK\r\n"
    assert w.call("EXISTS", "short") == b":0\r\n"  # gone, as after loading a file
    assert w.call("DBSIZE") == b":3\r\n"  # long, h and the brand: "short" was not restored
    assert w.call("HGETALL", "h") == b"*2\r\n$1\r\nb\r\n$1\r\n2\r\n"
    assert w.call("PEXPIRETIME", "long") == b":%d\r\n" % (t0 + 60_000)
    # A hash field past its time when saved is not kept.
    w.call("TRAFIKEY.SNAPSHOT", "SAVE", "later")
    w.call("TRAFIKEY.CLOCK", "SET", t0)  # back before the field's time
    w.call("TRAFIKEY.SNAPSHOT", "RESTORE", "later")
    assert w.call("HGETALL", "h") == b"*2\r\n$1\r\nb\r\n$1\r\n2\r\n"


def test_clock_and_brand_are_left_alone(w: Wire) -> None:
    t0 = 1_900_000_000_000
    w.call("TRAFIKEY.CLOCK", "FREEZE", t0)
    brand = w.call("GET", BRAND)
    assert brand == b"$12\r\nechomq:6.0.0\r\n"
    w.call("SET", "k", "v")
    w.call("TRAFIKEY.SNAPSHOT", "SAVE", "s")
    w.call("TRAFIKEY.CLOCK", "ADVANCE", 5000)
    w.call("SET", BRAND, "echomq:4.0.0")
    w.call("TRAFIKEY.SNAPSHOT", "RESTORE", "s")
    assert w.call("TRAFIKEY.CLOCK", "GET") == b":%d\r\n" % (t0 + 5000)
    assert w.call("GET", BRAND) == b"$12\r\nechomq:4.0.0\r\n"
    assert w.call("GET", "k") == b"$1\r\nv\r\n"
    # No brand on the server: none after the restore, though the snapshot has one.
    w.call("DEL", BRAND)
    w.call("TRAFIKEY.SNAPSHOT", "RESTORE", "s")
    assert w.call("EXISTS", BRAND) == b":0\r\n"
    assert w.call("DBSIZE") == b":1\r\n"


def test_dirty_counts_the_keys(w: Wire) -> None:
    def changes() -> int:
        info = w.call("INFO", "persistence").decode()
        return int(info.split("rdb_changes_since_last_save:")[1].split("\r\n")[0])

    for i in range(10):
        w.call("SET", f"k{i}", i)  # 10 keys and the brand
    w.call("TRAFIKEY.SNAPSHOT", "SAVE", "s")
    before = changes()
    w.call("SET", "extra", "1")  # one change: 12 keys now
    w.call("TRAFIKEY.SNAPSHOT", "RESTORE", "s")
    # 12 removed, 10 restored (the brand is the server's, not the
    # snapshot's), and the command itself
    assert changes() == before + 1 + 12 + 10 + 1


def test_no_keyspace_events(w: Wire, srv: Proc) -> None:
    w.call("SET", "k", "1")
    w.call("TRAFIKEY.SNAPSHOT", "SAVE", "s")
    w.call("CONFIG", "SET", "notify-keyspace-events", "KEA")
    sub = Wire(srv.port)
    try:
        sub.call("PSUBSCRIBE", "__key*__:*")
        w.call("TRAFIKEY.SNAPSHOT", "RESTORE", "s")
        w.call("PUBLISH", "marker", "x")  # not a keyspace channel: nothing comes before the next event
        w.call("DEL", "k")
        assert sub.read_reply() == (b"*4\r\n$8\r\npmessage\r\n$10\r\n__key*__:*\r\n"
                                    b"$16\r\n__keyspace@0__:k\r\n$3\r\ndel\r\n")
    finally:
        w.call("CONFIG", "SET", "notify-keyspace-events", "")
        sub.close()

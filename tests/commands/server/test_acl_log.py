"""ACL LOG against Valkey 9.1.2, in RESP2 and RESP3.

The same denials (a command, a key, a channel, a password) are provoked on
a Valkey and a trafikey-server of this module's own (the log and its entry
ids are server-wide), at top level, while a transaction is queued, at EXEC
after the rules changed, and in scripts; then ACL LOG must be the same on
both. Only what depends on time or on the connection is masked: age-seconds,
the two timestamps, and in client-info the id, addresses, fd, ages and the
reply-buffer sizes (rbs, rbp and so tot-mem: Valkey resizes that buffer
over time). Refusals and the counters in INFO stats are compared as bytes.
"""

from __future__ import annotations

from collections.abc import Iterator

import hiredis
import pytest
from helpers.resp_wire import Twin, Wire
from helpers.servers import Proc, own_pair

_MASKED = (b"age-seconds", b"timestamp-created", b"timestamp-last-updated")
_MASKED_INFO = (b"id", b"addr", b"laddr", b"fd", b"age", b"idle", b"rbs", b"rbp", b"tot-mem")


@pytest.fixture(scope="module")
def servers() -> Iterator[tuple[Proc, Proc]]:
    with own_pair() as pair:
        yield pair


class LogTwin(Twin):
    """A Twin that also compares ACL LOG, masking what differs by nature."""

    def log(self, *extra: object) -> None:
        """ACL LOG on both, equal but for the masked fields."""
        wv, wt = self.conn(0)
        assert _masked(wt.call("ACL", "LOG", *extra)) == _masked(wv.call("ACL", "LOG", *extra))  # type: ignore[arg-type]


def _masked(reply: bytes) -> list:
    reader = hiredis.Reader()
    reader.feed(reply)
    entries = reader.gets()
    assert isinstance(entries, list), reply
    out = []
    for e in entries:
        pairs = list(e.items()) if isinstance(e, dict) else list(zip(e[::2], e[1::2], strict=True))
        fields = []
        for k, v in pairs:
            if k in _MASKED:
                v = type(v).__name__  # the value's RESP type stays compared
            elif k == b"client-info":
                v = [f for f in v.split(b" ") if f.split(b"=", 1)[0] not in _MASKED_INFO]
            fields.append((k, v))
        out.append(fields)
    return out


@pytest.fixture(params=[2, 3], ids=["resp2", "resp3"])
def twin(request: pytest.FixtureRequest, servers: tuple[Proc, Proc]) -> Iterator[LogTwin]:
    tw = LogTwin(servers[0].port, servers[1].port, request.param)
    tw.check(0, "ACL", "LOG", "RESET")
    tw.check(0, "ACL", "SETUSER", "alice", "on", ">pw", "~k*", "%R~r*", "&ch*", "+get", "+set", "+lpush",
             "+multi", "+exec", "+eval", "+fcall", "+publish", "+subscribe", "+ping", "+auth", "+hello")
    yield tw
    tw.check(0, "CONFIG", "SET", "acllog-max-len", "128")
    tw.check(0, "ACL", "DELUSER", "alice")
    tw.check(0, "FUNCTION", "FLUSH")
    tw.check(0, "ACL", "LOG", "RESET")
    tw.close()


def _as_alice(tw: LogTwin, n: int) -> None:
    tw.check(n, "AUTH", "alice", "pw")


def test_denials_at_top_level_and_grouping(twin: LogTwin) -> None:
    _as_alice(twin, 1)
    for step in [("GET", "other"), ("GET", "other"), ("GET", "other2"), ("SET", "rkey", "v"), ("GET", "rkey"),
                 ("LPUSH", "k1", "x"), ("DEL", "k1"), ("DEL", "k1"), ("CONFIG", "GET", "port"),
                 ("PUBLISH", "nope", "m"), ("PUBLISH", "chan", "m"), ("SUBSCRIBE", "ch1", "other")]:
        twin.check(1, *step)
    twin.log()
    twin.log("1")
    twin.log("0")
    twin.log("-3")
    twin.log("100")
    twin.log("2")


def test_authentication_failures(twin: LogTwin) -> None:
    for step in [("AUTH", "alice", "bad"), ("AUTH", "alice", "bad"), ("auth", "nobody", "x"),
                 ("HELLO", "2", "AUTH", "alice", "worse"), ("hello", "3", "auth", "nobody", "x"),
                 ("AUTH", "alice", "pw")]:
        twin.check(1, *step)
    twin.check(2, "MULTI")
    twin.check(2, "AUTH", "alice", "nope")
    twin.check(2, "EXEC")
    twin.log()


def test_transactions(twin: LogTwin) -> None:
    _as_alice(twin, 1)
    twin.check(1, "MULTI")
    twin.check(1, "GET", "other")  # refused while queued: context multi
    twin.check(1, "EXEC")
    # Rules changed between queuing and EXEC: refused at EXEC, logged then.
    twin.check(1, "MULTI")
    for step in [("GET", "k1"), ("SET", "k2", "v"), ("PUBLISH", "ch1", "m"), ("LPUSH", "k3", "x")]:
        twin.check(1, *step)
    twin.check(0, "ACL", "SETUSER", "alice", "-get", "resetchannels", "&other", "resetkeys", "~k2")
    twin.check(1, "EXEC")
    twin.log()


def test_scripts(twin: LogTwin) -> None:
    twin.check(0, "FUNCTION", "LOAD", "#!lua name=al\nserver.register_function('f', function(keys, args) "
                                      "return server.pcall('get', keys[1]) end)")
    _as_alice(twin, 1)
    twin.check(1, "EVAL", "return server.call('get', KEYS[1])", "1", "other")
    twin.check(1, "EVAL", "return server.pcall('lpush', 'k1', 'x')", "0")
    twin.check(1, "EVAL", "return server.pcall('del', 'k1')", "0")
    twin.check(1, "FCALL", "f", "1", "zz")
    twin.check(1, "EVAL", "return server.pcall('publish', 'other', 'm')", "0")
    twin.log()


def test_max_len_and_reset(twin: LogTwin) -> None:
    _as_alice(twin, 1)
    twin.check(0, "CONFIG", "SET", "acllog-max-len", "2")
    for key in ("a", "b", "c", "a"):
        twin.check(1, "GET", key)
    twin.log()
    twin.check(0, "CONFIG", "SET", "acllog-max-len", "5")
    twin.check(1, "GET", "d")
    twin.log()
    twin.check(0, "CONFIG", "SET", "acllog-max-len", "0")
    twin.check(1, "GET", "e")  # counted, not kept; the old entries go
    twin.log()
    twin.check(0, "CONFIG", "SET", "acllog-max-len", "128")
    twin.check(1, "GET", "f")
    twin.log()
    twin.check(0, "ACL", "LOG", "RESET")
    twin.check(0, "ACL", "LOG", "reset")
    twin.log()


def test_refusals(twin: LogTwin) -> None:
    _as_alice(twin, 1)
    twin.check(1, "GET", "x")
    for step in [("ACL", "LOG", "x"), ("ACL", "LOG", "1.5"), ("ACL", "LOG", "1", "2"),
                 ("ACL", "LOG", "RESET", "x"), ("ACL", "LOG", "99999999999999999999"), ("ACL", "LOG", "007"),
                 ("ACL", "LOG", "+1")]:
        assert twin.check(0, *step).startswith(b"-"), step
    twin.log()
    twin.check(1, "ACL", "LOG")  # alice may not read it: logged too
    twin.log()
    twin.check(0, "ACL", "LOG", "reset\0")  # the word is read as a C string
    twin.log()


def _counters(w: Wire) -> list[bytes]:
    return [line for line in w.call("INFO", "stats").split(b"\r\n") if line.startswith(b"acl_access_denied_")]


def test_info_counters(twin: LogTwin) -> None:
    """INFO stats' acl_access_denied_* grow as Valkey's do (the servers
    have seen the same denials since they started)."""
    wv, wt = twin.conn(0)
    assert _counters(wt) == _counters(wv)
    _as_alice(twin, 1)
    for step in [("GET", "x"), ("DEL", "k"), ("PUBLISH", "x", "m"), ("AUTH", "alice", "bad"), ("GET", "x")]:
        twin.check(1, *step)
    assert _counters(wt) == _counters(wv)
    assert len(_counters(wt)) == 6

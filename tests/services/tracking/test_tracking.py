"""Client-side caching compared with Valkey 9.1.2, byte for byte.

Each scenario runs the same steps against both servers with several
connections interleaved and returns everything each connection received, in
order: replies and the invalidation pushes between them. A push that is
expected is read where it arrives; that nothing more arrived is shown by a
PING whose reply comes next. Client IDs differ between the servers, so a
scenario writes them as ``<id:name>``.

Expiry: our server's clock is moved (TRAFIKEY.CLOCK); Valkey gets a TTL of
a few milliseconds and the test waits for the event itself (the push).
"""

from __future__ import annotations

import time

from helpers import tracking
from helpers.resp_wire import Wire, encode
from helpers.servers import Proc
from helpers.tracking import Env, assert_same_transcripts

# The fixture of helpers/tracking.py: a Valkey and a trafikey-server for the module.
servers = tracking.servers


# -- scenarios ------------------------------------------------------------------------------


def test_resp3_reader_and_writer(servers: tuple[Proc, Proc]) -> None:
    def sc(e: Env) -> None:
        a, w = e.client("a", 3), e.client("w")
        e.call(a, "CLIENT", "TRACKING", "on")
        e.call(w, "MSET", "k1", "1", "k2", "2", "k3", "3")
        e.call(a, "GET", "k1")
        e.call(a, "MGET", "k2", "k3", "missing")
        e.call(w, "INCR", "k1")
        e.call(w, "DEL", "k2", "k3", "missing")
        e.drain(a)
        e.call(w, "SET", "k1", "x")  # not read again since the invalidation: no message
        e.drain(a)
        e.call(a, "HSET", "h", "f", "1")  # a write is not a read
        e.call(w, "HSET", "h", "f", "2")
        e.drain(a)
        e.call(a, "HGET", "h", "f")
        e.call(a, "HDEL", "h", "f")  # its own write: the message follows the reply
        e.drain(a)
        e.call(a, "GET", "h")  # a failed read is remembered too
        e.call(w, "DEL", "h")
        e.drain(a)

    assert_same_transcripts(servers, sc)


def test_three_clients_and_noloop(servers: tuple[Proc, Proc]) -> None:
    def sc(e: Env) -> None:
        a, b, w = e.client("a", 3), e.client("b", 3), e.client("w")
        e.call(a, "CLIENT", "TRACKING", "on")
        e.call(b, "CLIENT", "TRACKING", "on", "NOLOOP")
        e.call(w, "MSET", "x", "1", "y", "2")
        e.call(a, "MGET", "x", "y")
        e.call(b, "GET", "x")
        e.call(b, "GET", "y")
        e.call(b, "SET", "y", "3")  # b's own change: b is not told, a is
        e.drain(a)
        e.drain(b)
        e.call(w, "SET", "x", "9")  # both told
        e.drain(b)
        e.drain(a)
        e.call(a, "GET", "x")
        e.call(b, "GET", "x")
        e.call(a, "APPEND", "x", "z")  # a is told after its reply, b at once
        e.drain(b)
        e.drain(a)
        e.client_list(w, "a", "b")

    assert_same_transcripts(servers, sc)


def test_transaction_and_script_ordering(servers: tuple[Proc, Proc]) -> None:
    def sc(e: Env) -> None:
        a, w = e.client("a", 3), e.client("w")
        e.call(a, "CLIENT", "TRACKING", "on")
        e.call(a, "MSET", "a{t}", "1", "b{t}", "2")
        e.call(a, "GET", "a{t}")
        e.call(a, "MULTI")
        e.call(a, "INCR", "a{t}")
        e.call(a, "GET", "b{t}")
        e.call(a, "EXEC")  # the message for a{t} follows EXEC's reply
        e.drain(a)
        e.call(w, "SET", "b{t}", "0")  # read inside the transaction: tracked
        e.drain(a)
        e.call(a, "GET", "a{t}")
        e.call(a, "MULTI")
        e.call(a, "FLUSHDB")
        e.call(a, "EXEC")
        e.drain(a)
        # Scripts: the keys their read commands read, not their key arguments.
        e.call(a, "EVAL", "redis.call('set', 'k3{t}', 'bar')", 2, "k1{t}", "k2{t}")
        e.call(w, "MSET", "k1{t}", "1", "k2{t}", "1", "k3{t}", "1")
        e.drain(a)
        e.call(a, "EVAL", "return redis.call('get', 'k2{t}')", 2, "k1{t}", "k2{t}")
        e.call(w, "MSET", "k1{t}", "2", "k2{t}", "2")
        e.drain(a)
        e.call(a, "EVAL_RO", "return redis.call('get', 'k1{t}')", 1, "k2{t}")
        e.call(w, "MSET", "k1{t}", "3", "k2{t}", "3")
        e.drain(a)
        e.call(a, "EVAL", "return redis.call('get', KEYS[1])", 1, "k1{t}")
        e.call(a, "EVAL", "return redis.call('incr', KEYS[1])", 1, "k1{t}")  # after the script's reply
        e.drain(a)

    assert_same_transcripts(servers, sc)


def test_optin_optout_and_caching(servers: tuple[Proc, Proc]) -> None:
    def sc(e: Env) -> None:
        a, w = e.client("a", 3), e.client("w")
        e.call(w, "MSET", "k1", "1", "k2", "2", "k3", "3")
        e.call(a, "CLIENT", "TRACKING", "on", "OPTIN")
        e.call(a, "GET", "k1")  # not tracked
        e.call(a, "CLIENT", "CACHING", "yes")
        e.call(a, "CLIENT", "TRACKINGINFO")
        e.call(a, "GET", "k2")  # tracked
        e.call(a, "GET", "k3")  # CACHING covered one command only
        e.call(w, "MSET", "k1", "x", "k2", "x", "k3", "x")
        e.drain(a)
        e.call(a, "CLIENT", "CACHING", "yes")
        e.call(a, "MULTI")
        e.call(a, "GET", "k1")
        e.call(a, "GET", "k3")
        e.call(a, "EXEC")  # ... or one transaction
        e.call(w, "MSET", "k1", "y", "k3", "y")
        e.drain(a)
        e.call(a, "CLIENT", "CACHING", "no")
        e.call(a, "CLIENT", "TRACKING", "on", "OPTOUT")
        e.call(a, "CLIENT", "TRACKING", "off")
        e.call(a, "CLIENT", "TRACKING", "on", "OPTOUT")
        e.call(a, "CLIENT", "CACHING", "no")
        e.call(a, "CLIENT", "TRACKINGINFO")
        e.call(a, "GET", "k1")  # not tracked
        e.call(a, "GET", "k2")  # tracked
        e.call(a, "CLIENT", "CACHING", "yes")
        e.call(w, "MSET", "k1", "z", "k2", "z")
        e.drain(a)

    assert_same_transcripts(servers, sc)


def test_bcast(servers: tuple[Proc, Proc]) -> None:
    def sc(e: Env) -> None:
        a, b, w = e.client("a", 3), e.client("b", 3), e.client("w")
        e.call(a, "CLIENT", "TRACKING", "on", "BCAST", "PREFIX", "b:", "PREFIX", "a:")
        e.call(b, "CLIENT", "TRACKING", "on", "BCAST", "NOLOOP")
        e.call(a, "CLIENT", "TRACKINGINFO")
        e.call(w, "MULTI")
        for k in ("b:2", "a:1", "c:1", "a:2", "b:1", "a:1"):
            e.call(w, "INCR", k)
        e.call(w, "EXEC")
        e.drain(a)  # one message per prefix, keys in order
        e.drain(b)
        e.call(b, "MSET", "b:9", "1", "zz", "1")  # b's own writes: not told to b
        e.call(w, "SET", "zy", "1")
        e.drain(b)
        e.drain(a)
        e.call(a, "CLIENT", "TRACKING", "on", "BCAST", "PREFIX", "c:")  # adding a prefix
        e.call(w, "SET", "c:5", "1")
        e.drain(a)
        e.call(a, "CLIENT", "TRACKINGINFO")
        e.call(w, "INFO", "stats")  # (checked below for the tracking fields only)
        e.log.pop()
        info = w.call("INFO", "stats")
        e.log.append(b"\n".join(line for line in info.split(b"\r\n") if line.startswith(b"tracking_")))
        e.client_list(w, "a", "b")

    assert_same_transcripts(servers, sc)


def test_switching_modes(servers: tuple[Proc, Proc]) -> None:
    def sc(e: Env) -> None:
        a, w = e.client("a", 3), e.client("w")
        e.call(a, "CLIENT", "TRACKING", "on")
        e.call(w, "SET", "key1", "1")
        e.call(a, "GET", "key1")
        e.call(a, "CLIENT", "TRACKING", "off")
        e.call(a, "CLIENT", "TRACKING", "on", "BCAST")
        e.call(w, "INCR", "key1")  # only the BCAST message, not the pre-BCAST key
        e.drain(a)
        e.call(a, "CLIENT", "TRACKING", "on")
        e.call(a, "CLIENT", "TRACKING", "on", "OPTIN")
        e.call(a, "CLIENT", "TRACKING", "off")
        e.call(a, "CLIENT", "TRACKINGINFO")
        e.call(a, "CLIENT", "GETREDIR")

    assert_same_transcripts(servers, sc)


def test_redirect_and_broken_redirect(servers: tuple[Proc, Proc]) -> None:
    def sc(e: Env) -> None:
        a, r, w = e.client("a", 3), e.client("r", 3), e.client("w")
        a2 = e.client("a2", 2)
        e.call(a, "CLIENT", "TRACKING", "on", "REDIRECT", e.id("r"))
        e.call(a2, "CLIENT", "TRACKING", "on", "REDIRECT", e.id("r"))
        e.call(a, "CLIENT", "GETREDIR")
        e.call(a, "CLIENT", "TRACKINGINFO")
        e.call(a2, "CLIENT", "TRACKINGINFO")
        e.call(w, "MSET", "k1", "1", "k2", "2")
        e.call(a, "GET", "k1")
        e.call(a2, "GET", "k2")
        e.call(w, "INCR", "k1")
        e.call(w, "INCR", "k2")
        e.read(r)
        e.read(r)
        e.drain(a)
        e.call(a, "GET", "k1")
        e.call(a2, "GET", "k1")
        e.call(w, "FLUSHALL")  # a RESP2 client's null is RESP2's, even when redirected to RESP3
        e.read(r)
        e.read(r)
        e.call(a, "GET", "k1")
        e.call(a2, "GET", "k1")
        e.call(r, "QUIT")
        r.close()
        e.call(w, "SET", "k1", "x")
        e.drain(a)  # tracking-redir-broken, in RESP3 only
        e.drain(a2)
        e.call(a, "CLIENT", "TRACKINGINFO")
        e.call(a2, "CLIENT", "TRACKINGINFO")
        e.client_list(w, "a", "a2")
        e.call(a, "CLIENT", "TRACKING", "on", "REDIRECT", e.id("r"))

    assert_same_transcripts(servers, sc)


def test_expiry(servers: tuple[Proc, Proc]) -> None:
    def sc(e: Env) -> None:
        a, b, w = e.client("a", 3), e.client("b", 3), e.client("w")
        e.call(a, "CLIENT", "TRACKING", "on")
        e.call(b, "CLIENT", "TRACKING", "on", "BCAST", "NOLOOP", "PREFIX", "exp")
        e.call(w, "MSET", "exp1", "1", "exp2", "2")
        e.call(a, "MGET", "exp1", "exp2")
        e.expire_now(w, "exp1")
        e.read(a)  # PEXPIRE is a write to exp1 (the sweep then finds a untracked)
        e.read(b)
        e.drain(a)
        e.drain(b)
        e.call(b, "SET", "expkey", "v", "PX", "1000000")  # b's own write: NOLOOP
        e.expire_now(b, "expkey")  # ... but its expiry is nobody's write
        e.read(b)
        e.drain(b)

    assert_same_transcripts(servers, sc)


def test_lazy_expiry_message_follows_reply(servers: tuple[Proc, Proc]) -> None:
    def sc(e: Env) -> None:
        a = e.client("a", 3)
        if not e.ours:
            e.call(a, "DEBUG", "SET-ACTIVE-EXPIRE", "0")
            e.log.pop()
        e.call(a, "CLIENT", "TRACKING", "on")
        e.call(a, "MULTI")
        e.call(a, "MSET", "x{t}", "1", "y{t}", "2")
        e.call(a, "PEXPIRE", "y{t}", 10 if e.ours else 5)
        e.call(a, "GET", "y{t}")
        e.call(a, "EXEC")  # y{t} is tracked from its GET
        if e.ours:
            # The clock moves and the read happens in one read of the socket:
            # the sweep cannot run in between, only the read finds it expired.
            a.send_raw(encode("TRAFIKEY.CLOCK", "ADVANCE", 20) + encode("MGET", "x{t}", "y{t}"))
            a.read_reply()
        else:
            time.sleep(0.01)
            a.send_raw(encode("MGET", "x{t}", "y{t}"))
        e.read(a)  # MGET's reply
        e.read(a)  # then the invalidation
        e.drain(a)
        if not e.ours:
            a.call("DEBUG", "SET-ACTIVE-EXPIRE", "1")

    assert_same_transcripts(servers, sc)


def test_tracking_table_max_keys(servers: tuple[Proc, Proc]) -> None:
    def sc(e: Env) -> None:
        a, w = e.client("a", 3), e.client("w")
        e.call(a, "CLIENT", "TRACKING", "on")
        e.call(a, "MGET", "k1", "k2", "k3", "k4")
        stats = w.call("INFO", "stats")
        e.log.append(b" ".join(x for x in stats.split(b"\r\n") if x.startswith(b"tracking_total")))
        e.call(w, "CONFIG", "SET", "tracking-table-max-keys", "1")
        # The next command of a tracking client applies the limit first (Valkey
        # drops random keys: only how many is compared).
        a.send_raw(encode("PING"))
        keys = set()
        for _ in range(3):
            msg = a.read_reply()
            assert msg.startswith(b">2\r\n$10\r\ninvalidate\r\n*1\r\n$2\r\nk"), msg
            keys.add(msg)
        e.read(a)
        e.log.append(b"%d distinct keys dropped" % len(keys))
        stats = w.call("INFO", "stats")
        e.log.append(b" ".join(x for x in stats.split(b"\r\n") if x.startswith(b"tracking_total")))
        e.call(w, "CONFIG", "SET", "tracking-table-max-keys", "1000000")

    log = assert_same_transcripts(servers, sc)
    assert b"tracking_total_keys:4 tracking_total_items:4" in log[2]


def test_client_reply(servers: tuple[Proc, Proc]) -> None:
    def sc(e: Env) -> None:
        a, w = e.client("a", 3), e.client("w")
        e.call(a, "CLIENT", "TRACKING", "on")
        e.call(w, "SET", "foo", "bar")
        e.call(a, "GET", "foo")
        a.send_raw(b"*3\r\n$6\r\nCLIENT\r\n$5\r\nREPLY\r\n$3\r\nOFF\r\n")
        a.send_raw(b"*2\r\n$3\r\nGET\r\n$3\r\nfoo\r\n*1\r\n$4\r\nPING\r\n")  # silenced
        e.call(w, "SET", "foo", "bar2")
        e.read(a)  # the push still arrives
        a.send_raw(b"*3\r\n$6\r\nCLIENT\r\n$5\r\nREPLY\r\n$4\r\nSKIP\r\n")
        e.call(a, "CLIENT", "REPLY", "ON")
        a.send_raw(b"*3\r\n$6\r\nCLIENT\r\n$5\r\nREPLY\r\n$4\r\nSKIP\r\n"
                   b"*3\r\n$6\r\nCLIENT\r\n$5\r\nREPLY\r\n$4\r\nSKIP\r\n"
                   b"*2\r\n$4\r\nECHO\r\n$1\r\n1\r\n")  # both SKIPs and the ECHO are silent
        e.call(a, "ECHO", "2")
        a.send_raw(b"*3\r\n$6\r\nCLIENT\r\n$5\r\nREPLY\r\n$4\r\nSKIP\r\n*1\r\n$4\r\nNOPE\r\n")  # errors too
        e.call(a, "ECHO", "3")
        e.call(a, "CLIENT", "REPLY", "MAYBE")
        e.call(a, "MULTI")
        e.call(a, "CLIENT", "REPLY", "OFF")
        e.call(a, "DISCARD")
        e.drain(a)

    assert_same_transcripts(servers, sc)


def test_refusals(servers: tuple[Proc, Proc]) -> None:
    def sc(e: Env) -> None:
        a, b = e.client("a", 2), e.client("b", 3)
        e.call(a, "SET", "k", "v")
        bad = [
            ("on", "OPTIN", "OPTOUT"), ("on", "PREFIX", "a"), ("on", "BCAST", "OPTIN"), ("on", "BCAST", "OPTOUT"),
            ("on", "REDIRECT", "999999"), ("on", "REDIRECT", "abc"), ("on", "REDIRECT", "0"),
            ("on", "REDIRECT", "-1"), ("maybe",), ("on", "foo"), ("on", "REDIRECT"), ("on", "PREFIX"),
            ("off", "REDIRECT", "999999"), ("on", "BCAST", "PREFIX", "ab", "PREFIX", "a"),
            ("on", "BCAST", "PREFIX", "a", "PREFIX", "ab"), ("on", "BCAST", "PREFIX", "a\0x", "PREFIX", "a"),
            ("on", "REDIRECT", str(e.id("b")), "REDIRECT", str(e.id("b"))), ("on\0x",), ("ON",),
        ]
        for args in bad:
            e.call(a, "CLIENT", "TRACKING", *args)
            e.call(a, "CLIENT", "TRACKING", "off")
        e.call(a, "CLIENT", "TRACKING")
        e.call(a, "CLIENT", "CACHING", "yes")
        e.call(a, "CLIENT", "CACHING", "maybe")
        e.call(a, "CLIENT", "TRACKING", "on", "BCAST", "PREFIX", "foo", "PREFIX", "bar")
        for args in (("on", "BCAST", "PREFIX", "fo"), ("on", "BCAST", "PREFIX", "barb"), ("on",),
                     ("on", "BCAST", "OPTIN")):
            e.call(a, "CLIENT", "TRACKING", *args)
        e.call(a, "CLIENT", "CACHING", "yes")
        e.call(a, "CLIENT", "TRACKING", "off")
        e.call(a, "CLIENT", "TRACKING", "on", "OPTIN")
        for args in (("yes", "x"), ("no",), ("maybe",)):
            e.call(a, "CLIENT", "CACHING", *args)
        e.call(a, "CLIENT", "TRACKING", "on", "OPTOUT")
        e.call(a, "CLIENT", "TRACKING", "on", "BCAST")
        e.call(a, "CLIENT", "GETREDIR", "x")
        e.call(a, "CLIENT", "TRACKINGINFO", "x")
        e.call(a, "CLIENT", "REPLY")
        e.call(a, "DBSIZE")
        e.call(a, "GET", "k")
        for w in (a, b):
            e.call(w, "CLIENT", "TRACKING", "off")
            e.call(w, "CLIENT", "TRACKINGINFO")
            e.call(w, "CLIENT", "TRACKING", "on", "optin", "noloop", "redirect", e.id("a"))
            e.call(w, "CLIENT", "CACHING", "YES")
            e.call(w, "CLIENT", "TRACKINGINFO")
            e.call(w, "CLIENT", "GETREDIR")
            e.call(w, "CLIENT", "TRACKING", "off")
            e.call(w, "CLIENT", "TRACKING", "on", "bcast")
            e.call(w, "CLIENT", "TRACKINGINFO")
            e.call(w, "CLIENT", "TRACKING", "off")

    assert_same_transcripts(servers, sc)


def test_info_and_disconnect(servers: tuple[Proc, Proc]) -> None:
    def fields(e: Env, w: Wire) -> None:
        info = w.call("INFO")
        e.log.append(b" ".join(x for x in info.split(b"\r\n") if x.startswith(b"tracking_")))

    def sc(e: Env) -> None:
        a, b, w = e.client("a", 2), e.client("b", 3), e.client("w")
        fields(e, w)
        e.call(a, "CLIENT", "TRACKING", "on", "REDIRECT", e.id("b"))
        e.call(b, "CLIENT", "TRACKING", "on", "BCAST", "PREFIX", "p:", "PREFIX", "q:")
        e.call(w, "MSET", "k1", "1", "k2", "2")
        e.call(a, "MGET", "k1", "k2")
        e.call(b, "GET", "k1")  # BCAST clients are not remembered per key
        fields(e, w)
        e.call(w, "SET", "k1", "3")
        e.read(b)
        fields(e, w)
        e.call(a, "QUIT")
        e.call(b, "RESET")
        fields(e, w)
        e.call(w, "SET", "k2", "3")  # a's entry, dropped lazily
        fields(e, w)

    assert_same_transcripts(servers, sc)


def test_resp2_redirect_through_pubsub(servers: tuple[Proc, Proc]) -> None:
    def sc(e: Env) -> None:
        r, a, w = e.client("r"), e.client("a"), e.client("w")
        quiet = e.client("quiet")  # RESP2, not subscribed: cannot be told
        other = e.client("other")  # subscribed to another channel: in Pub/Sub mode all the same
        e.call(r, "SUBSCRIBE", "__redis__:invalidate")
        e.call(other, "SUBSCRIBE", "elsewhere")
        e.call(a, "CLIENT", "TRACKING", "on", "REDIRECT", e.id("r"))
        e.call(w, "MSET", "k1", "1", "k2", "2")
        e.call(a, "MGET", "k1", "k2")
        e.call(w, "INCR", "k1")
        e.read(r)
        e.call(a, "SET", "k2", "x")  # a's own write: r is told at once
        e.read(r)
        e.call(a, "CLIENT", "TRACKING", "on", "REDIRECT", e.id("quiet"))
        e.call(a, "GET", "k1")
        e.call(w, "INCR", "k1")
        e.drain(quiet)
        e.call(a, "CLIENT", "TRACKING", "on", "REDIRECT", e.id("other"))
        e.call(a, "GET", "k1")
        e.call(w, "INCR", "k1")
        e.read(other)
        e.call(a, "GET", "k1")
        e.call(w, "FLUSHALL")  # a null, in a message
        e.read(other)
        e.call(a, "CLIENT", "TRACKING", "off")
        e.call(a, "CLIENT", "TRACKING", "on", "BCAST", "REDIRECT", e.id("r"), "PREFIX", "k")
        e.call(w, "MSET", "k9", "1", "k8", "1", "j1", "1")
        e.read(r)
        e.drain(r)
        e.client_list(w, "a")

    assert_same_transcripts(servers, sc)


def test_resp3_redirect_client_in_pubsub(servers: tuple[Proc, Proc]) -> None:
    def sc(e: Env) -> None:
        r, a, w = e.client("r", 3), e.client("a", 2), e.client("w")
        e.call(r, "SUBSCRIBE", "__redis__:invalidate")
        e.call(a, "CLIENT", "TRACKING", "on", "REDIRECT", e.id("r"))
        e.call(a, "GET", "k1")
        e.call(w, "SET", "k1", "1")
        e.read(r)  # a push, not a message
        r.send_raw(encode("CLIENT", "REPLY", "OFF"))
        e.call(a, "GET", "k1")
        e.call(w, "SET", "k1", "2")
        e.read(r)  # pushes still arrive while replies are off
        e.call(r, "CLIENT", "REPLY", "ON")
        e.call(r, "UNSUBSCRIBE")
        e.drain(r)

    assert_same_transcripts(servers, sc)


_WRITES: list[tuple[list[tuple[object, ...]], tuple[object, ...]]] = [
    ([("SET", "k", "v")], ("SET", "k", "w", "NX")),  # no change: no message
    ([("SET", "k", "v")], ("SET", "k", "w", "XX")),
    ([], ("SETNX", "k", "v")),
    ([("SET", "k", "v")], ("APPEND", "k", "x")),
    ([("SET", "k", "v")], ("SETRANGE", "k", "3", "x")),
    ([("SET", "k", "1")], ("INCRBYFLOAT", "k", "1.5")),
    ([("SET", "k", "v")], ("GETSET", "k", "w")),
    ([("SET", "k", "v")], ("GETDEL", "k")),
    ([("SET", "k", "v")], ("GETEX", "k", "PX", "100000")),
    ([("SET", "k", "v")], ("GETEX", "k")),
    ([("SET", "k", "v")], ("GETEX", "k", "PERSIST")),
    ([("SET", "k", "v", "PX", "100000")], ("GETEX", "k", "PERSIST")),
    ([], ("DEL", "k")),
    ([("SET", "k", "v")], ("UNLINK", "k", "k2")),
    ([("SET", "k", "v")], ("RENAME", "k", "k2")),
    ([("SET", "k", "v"), ("SET", "k2", "v")], ("RENAMENX", "k", "k2")),
    ([("SET", "k", "v")], ("COPY", "k", "k2")),
    ([("SET", "k", "v")], ("MOVE", "k", "1")),
    ([("SET", "k", "v")], ("EXPIRE", "k", "100")),
    ([("SET", "k", "v")], ("EXPIRE", "k", "-1")),
    ([("SET", "k", "v")], ("PERSIST", "k")),
    ([("SET", "k", "v", "EX", "100")], ("PERSIST", "k")),
    ([("SET", "k", "v")], ("TOUCH", "k")),
    ([("HSET", "k", "f", "1")], ("HSET", "k", "f", "1")),
    ([("HSET", "k", "f", "1")], ("HSETNX", "k", "f", "2")),
    ([("HSET", "k", "f", "1")], ("HDEL", "k", "nope")),
    ([("HSET", "k", "f", "1")], ("HDEL", "k", "f")),
    ([("HSET", "k", "f", "1")], ("HINCRBY", "k", "f", "1")),
    ([("ZADD", "k", "1", "m")], ("ZADD", "k", "1", "m")),
    ([("ZADD", "k", "1", "m")], ("ZADD", "k", "2", "m")),
    ([("ZADD", "k", "1", "m")], ("ZINCRBY", "k", "1", "m")),
    ([("ZADD", "k", "1", "m")], ("ZREM", "k", "nope")),
    ([("ZADD", "k", "1", "m", "2", "n")], ("ZPOPMIN", "k")),
    ([("ZADD", "k", "1", "m")], ("ZREMRANGEBYSCORE", "k", "5", "6")),
    ([("ZADD", "k", "1", "m")], ("ZUNIONSTORE", "k2", "1", "k")),
    ([("ZADD", "k", "1", "m")], ("ZRANGESTORE", "k2", "k", "5", "6")),
    ([("SET", "k", "v")], ("MSETNX", "k", "1", "k2", "2")),
    ([], ("MSETNX", "k", "1", "k2", "2")),
    ([("SET", "k", "v")], ("EVAL", "return redis.call('del', KEYS[1])", "1", "k")),
]


def test_every_kind_of_write_invalidates(servers: tuple[Proc, Proc]) -> None:
    def sc(e: Env) -> None:
        a, w = e.client("a", 3), e.client("w")
        e.call(a, "CLIENT", "TRACKING", "on")
        for setup, cmd in _WRITES:
            e.log.append(repr(cmd).encode())
            e.call(w, "DEL", "k", "k2")
            e.drain(a)
            for s in setup:
                e.call(w, *s)
            e.call(a, "EXISTS", "k", "k2")
            e.call(w, *cmd)
            e.drain(a)

    assert_same_transcripts(servers, sc)


def test_pipeline_databases_and_protocol_switch(servers: tuple[Proc, Proc]) -> None:
    def sc(e: Env) -> None:
        a, w = e.client("a", 3), e.client("w")
        e.call(a, "CLIENT", "TRACKING", "on")
        # One write of several requests: each invalidation of its own follows
        # the reply of the request that caused it.
        a.send_raw(encode("GET", "p") + encode("SET", "p", "1") + encode("GET", "p") + encode("INCR", "p")
                   + encode("MGET", "p", "q") + encode("DEL", "p", "q"))
        for _ in range(8):
            e.read(a)
        e.drain(a)
        # The table is by key name: a write to the same name in another
        # database invalidates it.
        e.call(a, "GET", "same")
        e.call(w, "SELECT", "3")
        e.call(w, "SET", "same", "x")
        e.drain(a)
        e.call(a, "GET", "same")
        e.call(w, "MOVE", "same", "0")
        e.drain(a)
        e.call(a, "SELECT", "3")
        e.call(a, "GET", "other")
        e.call(w, "SWAPDB", "0", "3")  # not a change of any key for tracking
        e.drain(a)
        # Keys read in RESP2 are told once the client speaks RESP3.
        a.call("HELLO", "2")  # (its reply holds the client ID)
        e.call(a, "GET", "r2")
        e.call(w, "SET", "r2", "1")
        e.drain(a)
        e.call(a, "GET", "r2")
        a.call("HELLO", "3")
        e.call(w, "SET", "r2", "2")
        e.drain(a)
        # A killed redirect target: the flag shows in CLIENT LIST and INFO.
        r = e.client("r", 3)
        e.call(a, "CLIENT", "TRACKING", "on", "REDIRECT", e.id("r"))
        e.call(w, "CLIENT", "KILL", "ID", e.id("r"))
        r.close()
        e.call(a, "GET", "z")
        e.call(w, "SET", "z", "1")
        e.drain(a)
        e.client_list(w, "a")
        e.call(w, "CLIENT", "LIST", "FLAGS", "R", "ID", e.id("a"), e.id("w"))
        e.log[-1] = e.log[-1][:20]

    assert_same_transcripts(servers, sc)

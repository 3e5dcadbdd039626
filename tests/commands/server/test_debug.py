"""DEBUG (commands/debug.py) against Valkey, which answers it only with the
debug command enabled: its argument counts and refusals, the test replies of
every RESP type, POPULATE, and the switches whose effect can be seen from
outside (checksums, the cron, scripts' denied commands)."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator

import pytest
from helpers.resp_wire import Wire
from helpers.servers import Proc, start_trafikey, start_valkey


@pytest.fixture(scope="module")
def debug_valkey() -> Iterator[Proc]:
    p = start_valkey("--enable-debug-command", "yes")
    yield p
    p.stop()


@pytest.fixture(scope="module")
def debug_trafikey() -> Iterator[Proc]:
    p = start_trafikey("--enable-debug-command", "yes")
    yield p
    p.stop()


def _wires(*procs: Proc, proto: int = 2) -> list[Wire]:
    out = []
    for p in procs:
        w = Wire(p.port)
        if proto == 3:
            w.call("HELLO", "3")
        w.call("FLUSHALL")
        out.append(w)
    return out


def test_debug_is_refused_by_default(pair) -> None:
    pair.check("DEBUG", "DIGEST")
    pair.check("DEBUG", "SLEEP", "0")


@pytest.mark.parametrize("mode", ["local", "no"])
def test_debug_local_mode(mode: str) -> None:
    """Our connections come from loopback: "local" allows them, "no" does not."""
    procs = [start_valkey("--enable-debug-command", mode), start_trafikey("--enable-debug-command", mode)]
    try:
        v, t = (Wire(p.port) for p in procs)
        assert v.call("DEBUG", "SLEEP", "0") == t.call("DEBUG", "SLEEP", "0")
        assert t.call("DEBUG", "SLEEP", "0") == (b"+OK\r\n" if mode == "local" else t.call("DEBUG", "DIGEST"))
    finally:
        for p in procs:
            p.stop()


def test_debug_digest_and_sleep(debug_valkey: Proc, debug_trafikey: Proc) -> None:
    v = Wire(debug_valkey.port)
    t = Wire(debug_trafikey.port)
    for w in (v, t):
        w.call("FLUSHALL")
    assert v.call("DEBUG", "DIGEST") == t.call("DEBUG", "DIGEST") == b"+" + b"0" * 40 + b"\r\n"
    for w in (v, t):
        w.call("SET", "a", "1")
        w.call("HSET", "h", "f", "v")
    dv, dt = v.call("DEBUG", "DIGEST"), t.call("DEBUG", "DIGEST")
    # The hash function is ours; shape and stability are what must hold.
    assert re.fullmatch(rb"\+[0-9a-f]{40}\r\n", dt) and dt != b"+" + b"0" * 40 + b"\r\n"
    assert re.fullmatch(rb"\+[0-9a-f]{40}\r\n", dv)
    assert t.call("DEBUG", "DIGEST") == dt
    for args in (("SLEEP", "0"), ("SLEEP", "0.01"), ("SLEEP", "x"), ("SLEEP", "0.01abc")):
        assert v.call("DEBUG", *args) == t.call("DEBUG", *args), args
    v.close()
    t.close()
    t.close()


def test_debug_digest_value(debug_valkey: Proc, debug_trafikey: Proc) -> None:
    """Per key: forty zeros for no key, else a digest that follows the value
    and its time to live, equal for a COPY (what Valkey's units compare)."""
    seen = []
    for p in (debug_valkey, debug_trafikey):
        w = Wire(p.port)
        w.call("FLUSHALL")
        w.call("RPUSH", "l", "a", "b")
        w.call("COPY", "l", "l2")
        w.call("SADD", "s", "x")
        first = w.call("DEBUG", "DIGEST-VALUE", "l", "l2", "nokey", "s")
        w.call("PEXPIRE", "l2", 100_000)
        with_ttl = w.call("DEBUG", "DIGEST-VALUE", "l2")
        w.call("RPUSH", "l", "c")
        changed = w.call("DEBUG", "DIGEST-VALUE", "l")
        lines = first.split(b"\r\n")
        assert lines[0] == b"*4" and lines[3] == b"+" + b"0" * 40
        assert lines[1] == lines[2] != lines[4]
        assert re.fullmatch(rb"\+[0-9a-f]{40}", lines[1])
        assert with_ttl != b"*1\r\n" + lines[2] + b"\r\n" and changed != b"*1\r\n" + lines[1] + b"\r\n"
        seen.append(w.call("DEBUG", "DIGEST-VALUE"))
        w.close()
    assert seen[0] == seen[1] == b"*0\r\n"


def test_debug_object(debug_valkey: Proc, debug_trafikey: Proc) -> None:
    """Valkey's fields in Valkey's order; the encoding as OBJECT ENCODING
    says; no key is Valkey's error; reading it is not a use of the key."""
    shape = re.compile(rb"\+Value at:0x[0-9a-f]+ refcount:(\d+) encoding:(\S+) serializedlength:(\d+) "
                       rb"lru:(\d+) lru_seconds_idle:(\d+)")
    seen = []
    clocks = []  # the LRU field of a key just written: Valkey's 24-bit LRU clock, in seconds
    for p in (debug_valkey, debug_trafikey):
        w = Wire(p.port)
        w.call("FLUSHALL")
        w.call("SET", "s", "hello")
        m = shape.match(w.call("DEBUG", "OBJECT", "s"))
        assert m
        clocks.append(int(m.group(4)))
        w.call("SET", "n", "12345")
        w.call("HSET", "h", "f", "v")
        w.call("SADD", "set", "1", "2")
        got = []
        for key in ("s", "n", "h", "set"):
            m = shape.match(w.call("DEBUG", "OBJECT", key))
            assert m, key
            got.append((m.group(1), m.group(2), int(m.group(5)) < 5))
        got.append(w.call("DEBUG", "OBJECT", "nokey"))
        seen.append(got)
        w.close()
    assert seen[0] == seen[1]
    assert seen[1][-1] == b"-ERR no such key\r\n"
    assert clocks[1] < 1 << 24 and abs(clocks[1] - clocks[0]) <= 5, clocks


@pytest.mark.parametrize("args", [
    ("NOSUCH",), ("SLEEP",), ("SLEEP", "1", "2"), ("OBJECT",), ("OBJECT", "k", "fast", "x"), ("POPULATE",),
    ("POPULATE", "1", "p", "2", "x"), ("PROTOCOL",), ("HELP", "x"), ("LOG",), ("ERROR",), ("DIGEST", "x"),
    ("REPLYBUFFER", "RESIZING"), ("PAUSE-CRON",), ("x" * 200,),
])
def test_unknown_subcommand_or_count(debug_valkey: Proc, debug_trafikey: Proc, args: tuple[str, ...]) -> None:
    """One refusal for a name Valkey does not know and for a count it does not take."""
    v, t = _wires(debug_valkey, debug_trafikey)
    assert v.call("DEBUG", *args) == t.call("DEBUG", *args)
    assert t.call("DBSIZE") == b":0\r\n"


@pytest.mark.parametrize("proto", [2, 3])
def test_protocol_replies(debug_valkey: Proc, debug_trafikey: Proc, proto: int) -> None:
    """Every test type, byte for byte, in RESP2 and RESP3; the push (RESP3
    only) is followed by a real reply."""
    v, t = _wires(debug_valkey, debug_trafikey, proto=proto)
    for name in ("string", "integer", "double", "bignum", "null", "array", "set", "map", "attrib", "push",
                 "verbatim", "true", "false", "nosuch", "STRING"):
        got = [w.call("DEBUG", "PROTOCOL", name) for w in (v, t)]
        if name == "push" and proto == 3:
            got = [g + w.read_reply() for g, w in zip(got, (v, t), strict=True)]
        assert got[0] == got[1], name
    assert v.call("PING") == t.call("PING") == b"+PONG\r\n"


@pytest.mark.parametrize("proto", [2, 3])
@pytest.mark.parametrize("script_resp", [2, 3])
def test_protocol_replies_seen_by_scripts(debug_valkey: Proc, debug_trafikey: Proc, proto: int,
                                          script_resp: int) -> None:
    """DEBUG is denied to scripts until SET-DISABLE-DENY-SCRIPTS 1; then a
    script reads each test type as Valkey converts it (an attribute is
    skipped for the reply after it)."""
    v, t = _wires(debug_valkey, debug_trafikey, proto=proto)
    body = f"redis.setresp({script_resp}); return redis.call('debug', 'protocol', ARGV[1])"
    try:
        assert v.call("EVAL", body, "0", "string") == t.call("EVAL", body, "0", "string")
        for w in (v, t):
            assert w.call("DEBUG", "SET-DISABLE-DENY-SCRIPTS", "1") == b"+OK\r\n"
        for name in ("string", "integer", "double", "bignum", "null", "array", "set", "map", "attrib",
                     "verbatim", "true", "false"):
            assert v.call("EVAL", body, "0", name) == t.call("EVAL", body, "0", name), name
    finally:
        for w in (v, t):
            w.call("DEBUG", "SET-DISABLE-DENY-SCRIPTS", "0")
    assert v.call("EVAL", body, "0", "string") == t.call("EVAL", body, "0", "string")


def test_populate(debug_valkey: Proc, debug_trafikey: Proc) -> None:
    """Keys and values as Valkey names them, a value cut or zero-padded to
    the size asked, keys already there left alone; the ``new`` event and
    watchers told; refusals with nothing written."""
    v, t = _wires(debug_valkey, debug_trafikey)
    subs = []
    for p, w in zip((debug_valkey, debug_trafikey), (v, t), strict=True):
        w.call("CONFIG", "SET", "notify-keyspace-events", "KEA")
        s = Wire(p.port)
        s.call("PSUBSCRIBE", "__key*__:*", "end")
        s.read_reply()
        subs.append(s)
        w.call("SET", "key:2", "mine")
        w.call("WATCH", "p:1")
    try:
        for args in (("3",), ("2", "p", "3"), ("2", "z", "12"), ("0",), ("-1",), ("x",), ("2", "q", "-2"),
                     ("2", "q", "x")):
            assert v.call("DEBUG", "POPULATE", *args) == t.call("DEBUG", "POPULATE", *args), args
        for w in (v, t):
            w.call("MULTI")
            w.call("PING")
        assert v.call("EXEC") == t.call("EXEC") == b"*-1\r\n"  # p:1 was written under the watch
        keys = ["key:0", "key:1", "key:2", "p:0", "p:1", "z:0", "z:1", "q:0"]
        assert v.call("MGET", *keys) == t.call("MGET", *keys)
        assert v.call("DBSIZE") == t.call("DBSIZE") == b":7\r\n"
        for w in (v, t):
            w.call("PUBLISH", "end", "x")
        events = []
        for s in subs:
            seen = []
            while True:
                r = s.read_reply()
                seen.append(r)
                if b"\r\npublish\r\n" in r or b"$3\r\nend\r\n" in r:
                    break
            events.append(seen)
        assert events[0] == events[1]
    finally:
        for s in subs:
            s.close()
        for w in (v, t):
            w.call("CONFIG", "SET", "notify-keyspace-events", "")


def test_error_and_log(debug_valkey: Proc, debug_trafikey: Proc) -> None:
    """ERROR answers its text as an error (newlines made spaces), counted in
    no error statistics; LOG writes a warning line to the log."""
    v, t = _wires(debug_valkey, debug_trafikey)
    for w in (v, t):
        w.call("CONFIG", "RESETSTAT")
    for text in ("FOO bar", "one\r\ntwo", "plain"):
        assert v.call("DEBUG", "ERROR", text) == t.call("DEBUG", "ERROR", text)
    errors = [re.sub(rb"\r\n", b"\n", w.call("INFO", "errorstats")) for w in (v, t)]
    assert errors[0] == errors[1]
    assert v.call("DEBUG", "LOG", "a line from the test") == t.call("DEBUG", "LOG", "a line from the test")
    assert "DEBUG LOG: a line from the test" in debug_trafikey.wait_output("DEBUG LOG: a line from the test")
    assert "DEBUG LOG: a line from the test" in debug_valkey.wait_output("DEBUG LOG: a line from the test")


@pytest.mark.parametrize("args", [
    ("QUICKLIST-PACKED-THRESHOLD", "0"), ("QUICKLIST-PACKED-THRESHOLD", "1"),
    ("QUICKLIST-PACKED-THRESHOLD", "1b"), ("QUICKLIST-PACKED-THRESHOLD", "100kb"),
    ("QUICKLIST-PACKED-THRESHOLD", "1mb"), ("QUICKLIST-PACKED-THRESHOLD", "3gb"),
    ("QUICKLIST-PACKED-THRESHOLD", "4gb"), ("QUICKLIST-PACKED-THRESHOLD", "5gb"),
    ("QUICKLIST-PACKED-THRESHOLD", "-1"), ("QUICKLIST-PACKED-THRESHOLD", "abc"),
    ("QUICKLIST-PACKED-THRESHOLD", "1x"), ("QUICKLIST-PACKED-THRESHOLD", "4095mb"),
    ("QUICKLIST-PACKED-THRESHOLD", "4293918721"), ("QUICKLIST-PACKED-THRESHOLD", "kb"),
    ("QUICKLIST-PACKED-THRESHOLD", ""), ("QUICKLIST-PACKED-THRESHOLD", "0B"),
    ("REPLYBUFFER", "PEAK-RESET-TIME", "never"),
    ("REPLYBUFFER", "PEAK-RESET-TIME", "RESET"), ("REPLYBUFFER", "PEAK-RESET-TIME", "100"),
    ("REPLYBUFFER", "PEAK-RESET-TIME", "abc"), ("REPLYBUFFER", "RESIZING", "0"), ("REPLYBUFFER", "FOO", "1"),
    ("DICT-RESIZING", "1"), ("PAUSE-CRON", "0"), ("SET-SKIP-CHECKSUM-VALIDATION", "0"),
    ("SET-ACTIVE-EXPIRE", "1"), ("AOF-FLUSH-SLEEP", "0"), ("LEAK", "x"), ("SET-DISABLE-DENY-SCRIPTS", "0"),
])
def test_switch_arguments(debug_valkey: Proc, debug_trafikey: Proc, args: tuple[str, ...]) -> None:
    v, t = _wires(debug_valkey, debug_trafikey)
    assert v.call("DEBUG", *args) == t.call("DEBUG", *args)


def test_change_repl_id(debug_valkey: Proc, debug_trafikey: Proc) -> None:
    for p in (debug_valkey, debug_trafikey):
        w = Wire(p.port)
        before = re.search(rb"master_replid:([0-9a-f]{40})", w.call("INFO", "replication"))
        assert w.call("DEBUG", "CHANGE-REPL-ID") == b"+OK\r\n"
        after = re.search(rb"master_replid:([0-9a-f]{40})", w.call("INFO", "replication"))
        assert before and after and before.group(1) != after.group(1)
        w.close()
        assert "Changing replication IDs after receiving DEBUG change-repl-id" in p.wait_output("Changing")


def test_listpack_and_quicklist(debug_valkey: Proc, debug_trafikey: Proc) -> None:
    v, t = _wires(debug_valkey, debug_trafikey)
    for w in (v, t):
        w.call("RPUSH", "small", "a", "b")
        w.call("CONFIG", "SET", "list-max-listpack-size", "2")
        w.call("RPUSH", "big", "a", "b", "c", "d", "e")
        w.call("CONFIG", "SET", "list-max-listpack-size", "-2")
        w.call("SET", "s", "x")
    for sub in ("LISTPACK", "QUICKLIST"):
        for key in ("small", "big", "s", "nokey"):
            assert v.call("DEBUG", sub, key) == t.call("DEBUG", sub, key), (sub, key)


def test_skip_checksum_validation(debug_valkey: Proc, debug_trafikey: Proc) -> None:
    """A payload whose checksum is wrong is refused until the switch is on,
    then restored; the version is checked either way."""
    v, t = _wires(debug_valkey, debug_trafikey)
    try:
        for w in (v, t):
            w.call("RPUSH", "l", "a", "b", "c")
        dumped = t.call("DUMP", "l")
        payload = dumped.split(b"\r\n", 1)[1][:-2]
        bad_crc = payload[:-1] + bytes([payload[-1] ^ 0xFF])
        bad_version = payload[:-10] + b"\xff\x00" + payload[-8:]
        for args in (("RESTORE", "x", "0", bad_crc), ("RESTORE", "y", "0", bad_version)):
            assert v.call(*args) == t.call(*args) == b"-ERR DUMP payload version or checksum are wrong\r\n"
        for w in (v, t):
            assert w.call("DEBUG", "SET-SKIP-CHECKSUM-VALIDATION", "1") == b"+OK\r\n"
        assert v.call("RESTORE", "x", "0", bad_crc) == t.call("RESTORE", "x", "0", bad_crc) == b"+OK\r\n"
        assert v.call("RESTORE", "y", "0", bad_version) == t.call("RESTORE", "y", "0", bad_version)
        assert v.call("LRANGE", "x", "0", "-1") == t.call("LRANGE", "x", "0", "-1")
        assert v.call("EXISTS", "y") == t.call("EXISTS", "y") == b":0\r\n"
    finally:
        for w in (v, t):
            w.call("DEBUG", "SET-SKIP-CHECKSUM-VALIDATION", "0")


def test_pause_cron_stops_active_expiry(debug_valkey: Proc, debug_trafikey: Proc) -> None:
    """With the cron paused, keys past their time stay stored (DBSIZE counts
    them) until a lookup; unpaused, the sweep takes them."""
    v, t = _wires(debug_valkey, debug_trafikey)
    try:
        for w in (v, t):
            assert w.call("DEBUG", "PAUSE-CRON", "1") == b"+OK\r\n"
            for i in range(20):
                w.call("SET", f"k{i}", "v", "PX", "10")
        time.sleep(0.3)
        assert v.call("DBSIZE") == t.call("DBSIZE") == b":20\r\n"
        assert v.call("GET", "k0") == t.call("GET", "k0") == b"$-1\r\n"
        assert v.call("DBSIZE") == t.call("DBSIZE") == b":19\r\n"
        for w in (v, t):
            w.call("DEBUG", "PAUSE-CRON", "0")
        for w in (v, t):
            deadline = time.monotonic() + 10
            while w.call("DBSIZE") != b":0\r\n" and time.monotonic() < deadline:
                time.sleep(0.05)
            assert w.call("DBSIZE") == b":0\r\n"
    finally:
        for w in (v, t):
            w.call("DEBUG", "PAUSE-CRON", "0")


def _crashing_pair(*extra: str) -> tuple[Proc, Proc]:
    args = ("--enable-debug-command", "yes", "--crash-memcheck-enabled", "no", *extra)
    return start_valkey(*args), start_trafikey(*args)


def test_segfault_reports_and_dies_of_the_signal() -> None:
    """DEBUG SEGFAULT: the report (its opening, the signal, the stacks, INFO,
    the clients, its end) in the log, then death by SIGSEGV, as Valkey."""
    procs = _crashing_pair()
    try:
        for p in procs:
            Wire(p.port).send_raw(b"*2\r\n$5\r\nDEBUG\r\n$8\r\nSEGFAULT\r\n")
        codes = [p.proc.wait(timeout=20) for p in procs]
        assert codes[0] == codes[1] == -11
        for p in procs:
            assert "crashed by signal: 11" in p.output()
        ours = procs[1].output()
        for section in ("BUG REPORT START", "------ STACK TRACE ------", "_segfault", "------ INFO OUTPUT ------",
                        "redis_version:", "------ CLIENT LIST OUTPUT ------", "BUG REPORT END"):
            assert section in ours, section
    finally:
        for p in procs:
            p.stop()


@pytest.mark.parametrize("sub, words", [("ASSERT", "ASSERTION FAILED"), ("PANIC", "Guru Meditation: DEBUG PANIC")])
def test_assert_and_panic_exit_under_use_exit_on_panic(sub: str, words: str) -> None:
    procs = _crashing_pair("--use-exit-on-panic", "yes")
    try:
        for p in procs:
            Wire(p.port).send_raw(b"*2\r\n$5\r\nDEBUG\r\n$%d\r\n%s\r\n" % (len(sub), sub.encode()))
        assert [p.proc.wait(timeout=20) for p in procs] == [1, 1]
        for p in procs:
            assert words in p.output()
        assert "------ STACK TRACE ------" in procs[1].output()
    finally:
        for p in procs:
            p.stop()


def test_abort_from_outside_during_a_sleep() -> None:
    """kill -ABRT while DEBUG SLEEP holds the server: reported at once (not
    after the sleep), then death by SIGABRT."""
    procs = _crashing_pair()
    try:
        for p in procs:
            Wire(p.port).send_raw(b"*3\r\n$5\r\nDEBUG\r\n$5\r\nSLEEP\r\n$2\r\n10\r\n")
        time.sleep(0.3)
        started = time.monotonic()
        for p in procs:
            p.proc.send_signal(6)
        assert [p.proc.wait(timeout=20) for p in procs] == [-6, -6]
        assert time.monotonic() - started < 5
        for p in procs:
            assert "crashed by signal: 6" in p.output()
    finally:
        for p in procs:
            p.stop()


def test_sigalrm_and_the_watchdog_leave_the_server_running() -> None:
    """SIGALRM from outside: its line and the stacks, and the sleep it
    interrupted ends with its reply. The watchdog: a cron tick late by more
    than watchdog-period sends SIGALRM itself."""
    procs = _crashing_pair()
    try:
        for p in procs:
            w = Wire(p.port)
            w.send_raw(b"*3\r\n$5\r\nDEBUG\r\n$5\r\nSLEEP\r\n$3\r\n0.6\r\n")
            time.sleep(0.2)
            p.proc.send_signal(14)
            assert w.read_reply() == b"+OK\r\n"
            assert "Received SIGALRM" in p.wait_output("Received SIGALRM")
            assert w.call("CONFIG", "SET", "watchdog-period", "200") == b"+OK\r\n"
            time.sleep(0.3)  # a tick arms the timer
            assert w.call("DEBUG", "SLEEP", "1") == b"+OK\r\n"
            assert "WATCHDOG TIMER EXPIRED" in p.wait_output("WATCHDOG TIMER EXPIRED")
            assert w.call("CONFIG", "SET", "watchdog-period", "0") == b"+OK\r\n"
            assert w.call("PING") == b"+PONG\r\n"
            assert p.proc.poll() is None
    finally:
        for p in procs:
            p.stop()


def test_object_finds_a_key_past_its_time(debug_valkey: Proc, debug_trafikey: Proc) -> None:
    """With active expiry off, a key past its time is still found by DEBUG
    OBJECT (and not expired by it); the next real lookup removes it."""
    v, t = _wires(debug_valkey, debug_trafikey)
    try:
        for w in (v, t):
            w.call("DEBUG", "SET-ACTIVE-EXPIRE", "0")
            w.call("SET", "key", "value", "PX", "1")
        time.sleep(0.05)
        got = [w.call("DEBUG", "OBJECT", "key").split(b" ")[2:4] for w in (v, t)]
        assert got[0] == got[1] == [b"refcount:1", b"encoding:embstr"]
        assert v.call("DBSIZE") == t.call("DBSIZE") == b":1\r\n"
        assert v.call("EXISTS", "key") == t.call("EXISTS", "key") == b":0\r\n"
        assert v.call("DEBUG", "OBJECT", "key") == t.call("DEBUG", "OBJECT", "key") == b"-ERR no such key\r\n"
    finally:
        for w in (v, t):
            w.call("DEBUG", "SET-ACTIVE-EXPIRE", "1")


@pytest.mark.parametrize("depth", ["0", "1"])
def test_debug_object_of_a_quicklist(debug_valkey: Proc, debug_trafikey: Proc, depth: str) -> None:
    """A quicklist's shape after Valkey's fields: its nodes, their average
    fill, the listpack limit, whether nodes are compressed, and (but under
    FAST) the uncompressed size."""
    seen = []
    for p in (debug_valkey, debug_trafikey):
        w = Wire(p.port)
        w.call("FLUSHALL")
        for name, value in (("list-max-listpack-size", "4"), ("list-compress-depth", depth)):
            assert w.call("CONFIG", "SET", name, value) == b"+OK\r\n"
        w.call("RPUSH", "l", *"abcdefghij")
        w.call("RPUSH", "one", "x")
        full = w.call("DEBUG", "OBJECT", "l")
        fast = w.call("DEBUG", "OBJECT", "l", "FAST")
        small = w.call("DEBUG", "OBJECT", "one")
        seen.append((full[full.index(b" ql_"):], fast[fast.index(b" ql_"):], b" ql_" in small))
        for name, value in (("list-max-listpack-size", "-2"), ("list-compress-depth", "0")):
            w.call("CONFIG", "SET", name, value)
        w.close()
    assert seen[0] == seen[1]

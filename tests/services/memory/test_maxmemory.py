"""maxmemory against Valkey 9.1: each policy's eviction, the OOM refusals,
OBJECT FREQ and IDLETIME, the evicted event stream, the INFO fields, and
scripts and transactions under OOM.

Each experiment runs the same way on both servers: a limit is set relative
to the server's own used_memory (the two count in their own way), keys are
written until the limit is near, then more, and the test compares what
kinds of keys survive and which replies came back. The ideas are those of
Valkey's unit/maxmemory (the memory limit honoured per policy, only
allkeys-* removing persistent keys, volatile-* removing only volatile keys,
propagation of evictions, the LRU/LFU value of a key just added), which
cannot run against another server (it is tagged external:skip).

The servers are this module's own: the limits and policies they set must
not reach the other tests.
"""

from __future__ import annotations

import socket
import time
from collections.abc import Callable, Iterator

import pytest
from helpers.aof_util import logged_runs, without_select
from helpers.keyevents import Watched, frame_parts
from helpers.resp_wire import Wire, encode
from helpers.servers import Proc, own_pair

OOM = b"-OOM command not allowed when used memory > 'maxmemory'.\r\n"
MARGIN = 40 * 1024


@pytest.fixture(scope="module")
def servers() -> Iterator[tuple[Proc, Proc]]:
    with own_pair() as pair:
        yield pair


def _reset(w: Wire) -> None:
    for name, value in (("maxmemory", "0"), ("maxmemory-policy", "noeviction"), ("lfu-log-factor", "10"),
                        # No LFU decay: a minute turning on one server only must not decide a test.
                        ("lfu-decay-time", "0"),
                        ("notify-keyspace-events", ""),
                        # Valkey allocates a command's latency histogram at its first call (25 KB):
                        # off, so that used memory grows with the keys alone.
                        ("latency-tracking", "no")):
        assert w.call("CONFIG", "SET", name, value) == b"+OK\r\n"
    assert w.call("FLUSHALL", "SYNC") == b"+OK\r\n"
    assert w.call("CONFIG", "RESETSTAT") == b"+OK\r\n"


@pytest.fixture
def both(servers: tuple[Proc, Proc]) -> Iterator[list[Wire]]:
    """A connection to Valkey and one to trafikey-server, limits off and
    keyspaces empty (again after the test)."""
    wires = [Wire(p.port) for p in servers]
    for w in wires:
        _reset(w)
    yield wires
    for w in wires:
        _reset(w)
        w.close()


def info(w: Wire, field: str, section: str = "everything") -> str:
    for line in w.call("INFO", section).decode().split("\r\n"):
        if line.startswith(field + ":"):
            return line.split(":", 1)[1]
    raise AssertionError(f"INFO has no {field}")


def used(w: Wire) -> int:
    return int(info(w, "used_memory", "memory"))


def limit_at(w: Wire, policy: str, margin: int = MARGIN) -> int:
    """maxmemory set at the server's own used memory plus margin."""
    limit = used(w) + margin
    assert w.call("CONFIG", "SET", "maxmemory", str(limit)) == b"+OK\r\n"
    assert w.call("CONFIG", "SET", "maxmemory-policy", policy) == b"+OK\r\n"
    return limit


def fill(w: Wire, limit: int, write: object) -> int:
    """Write keys (write(w, n)) until used memory is within 4 KB of the
    limit; how many."""
    n = 0
    while True:
        assert write(w, n) == b"+OK\r\n"  # type: ignore[operator]
        n += 1
        if used(w) + 4096 > limit:
            assert n > 10
            return n


def exists(w: Wire, keys: list[str]) -> list[bool]:
    return [w.call("EXISTS", k) == b":1\r\n" for k in keys]


# -- the limit, policy by policy -------------------------------------------------------


@pytest.mark.parametrize("policy", ["allkeys-random", "allkeys-lru", "allkeys-lfu", "volatile-lru",
                                    "volatile-lfu", "volatile-random", "volatile-ttl"])
def test_limit_honoured(both: list[Wire], policy: str) -> None:
    """Twice as many volatile keys as fit: every write succeeds, keys are
    evicted and used memory stays at the limit."""
    for w in both:
        limit = limit_at(w, policy)
        n = fill(w, limit, lambda w, i: w.call("SETEX", f"k:{i}", 10000, "x"))
        replies = {w.call("SETEX", f"more:{j}", 10000, "x") for j in range(n)}
        assert replies == {b"+OK\r\n"}, (w.port, replies)
        assert used(w) < limit + 4096
        assert int(info(w, "evicted_keys")) > 0


@pytest.mark.parametrize("policy", ["allkeys-random", "allkeys-lru", "volatile-lru", "volatile-random",
                                    "volatile-ttl", "volatile-lfu"])
def test_only_allkeys_evicts_persistent_keys(both: list[Wire], policy: str) -> None:
    """Keys without a TTL: allkeys-* evicts them, volatile-* cannot and
    refuses writes with Valkey's exact error."""
    outcomes = []
    for w in both:
        limit = limit_at(w, policy)
        n = fill(w, limit, lambda w, i: w.call("SET", f"k:{i}", "x"))
        errors = {r for r in (w.call("SET", f"more:{j}", "x") for j in range(n)) if r != b"+OK\r\n"}
        outcomes.append((errors, used(w) < limit + 4096 if policy.startswith("allkeys") else None,
                         int(info(w, "evicted_keys")) > 0))
    assert outcomes[0] == outcomes[1]
    assert outcomes[0][0] == (set() if policy.startswith("allkeys") else {OOM})


@pytest.mark.parametrize("policy", ["volatile-lru", "volatile-lfu", "volatile-random", "volatile-ttl"])
def test_volatile_policies_keep_persistent_keys(both: list[Wire], policy: str) -> None:
    for w in both:
        limit = limit_at(w, policy)

        def write(w: Wire, i: int) -> bytes:
            return w.call("SETEX", f"key:{i}", 10000, "x") if i % 2 else w.call("SET", f"key:{i}", "x")

        n = fill(w, limit, write)
        for j in range(n):
            w.call("SETEX", f"foo:{j}", 10000, "x")
        assert used(w) < limit + 4096
        assert all(exists(w, [f"key:{j}" for j in range(0, n, 2)])), w.port


def test_volatile_ttl_evicts_the_shortest_ttls_first(both: list[Wire]) -> None:
    """Half the keys expire in 1000 s, half in 100000 s, and as many keys
    again expiring in 50000 s make room: the short ones go first, then the
    new ones, on both servers."""
    survivors = []
    for w in both:
        limit = limit_at(w, "volatile-ttl")

        def write(w: Wire, i: int) -> bytes:
            return w.call("SETEX", f"long:{i}" if i % 2 else f"short:{i}", 100000 if i % 2 else 1000, "x")

        n = fill(w, limit, write)
        for j in range(n):
            assert w.call("SETEX", f"new:{j}", 50000, "x") == b"+OK\r\n"
        short = sum(exists(w, [f"short:{i}" for i in range(0, n, 2)]))
        long = sum(exists(w, [f"long:{i}" for i in range(1, n, 2)]))
        survivors.append((short, long, n // 2))
    for short, long, half in survivors:
        assert long > 0.8 * half, survivors  # the long TTLs are nearly all there
        assert short < 0.8 * half, survivors  # the short ones go first


def _wait_idle(w: Wire, key: str, seconds: int = 1) -> None:
    """Until the key has been idle that many seconds of the LRU clock (its
    unit)."""
    end = time.monotonic() + 5 + seconds
    while int(w.call("OBJECT", "IDLETIME", key)[1:]) < seconds:
        assert time.monotonic() < end
        time.sleep(0.05)


def test_allkeys_lru_keeps_the_keys_being_read(both: list[Wire]) -> None:
    filled: dict[int, tuple[int, int]] = {}  # port: (cold keys, limit)
    for w in both:
        limit = limit_at(w, "allkeys-lru")
        filled[w.port] = fill(w, limit, lambda w, i: w.call("SET", f"cold:{i}", "x" * 20)), limit
    # The hot keys are written after every cold one has aged two seconds of
    # the LRU clock: a hot key read within the last second must never tie
    # with the youngest cold key (the cause of this test's rare failures).
    for w in both:
        _wait_idle(w, f"cold:{filled[w.port][0] - 1}", 2)
    for w in both:
        n, limit = filled[w.port]
        hot = [f"hot:{i}" for i in range(20)]
        for k in hot:
            assert w.call("SET", k, "x" * 20) == b"+OK\r\n"
        # New keys (the hot ones read meanwhile) until evictions start, as
        # many again after: far fewer than the cold keys.
        j = extra = 0
        while extra < n // 4:
            assert w.call("SET", f"new:{j}", "x" * 20) == b"+OK\r\n"
            w.call("GET", hot[j % len(hot)])
            j += 1
            if extra or info(w, "evicted_keys", "stats") != "0":
                extra += 1
            assert j < 4 * n
        assert all(exists(w, hot)), w.port
        assert used(w) < limit + 4096


def test_allkeys_lfu_keeps_the_hot_keys(both: list[Wire]) -> None:
    freqs = []
    for w in both:
        assert w.call("CONFIG", "SET", "lfu-log-factor", "0") == b"+OK\r\n"
        limit = limit_at(w, "allkeys-lfu")
        hot = [f"hot:{i}" for i in range(20)]
        for k in hot:
            assert w.call("SET", k, "x" * 20) == b"+OK\r\n"
            for _ in range(10):
                w.call("GET", k)
        n = fill(w, limit, lambda w, i: w.call("SET", f"cold:{i}", "x" * 20))
        for j in range(n):
            assert w.call("SET", f"new:{j}", "x" * 20) == b"+OK\r\n"
        assert int(info(w, "evicted_keys")) > 0
        assert all(exists(w, hot)), w.port
        freqs.append([w.call("OBJECT", "FREQ", k) for k in hot])
    assert freqs[0] == freqs[1]  # lfu-log-factor 0: one more per access


def test_noeviction_refuses_and_writes_nothing(both: list[Wire]) -> None:
    """Filled to the limit, then the limit lowered well under the used
    memory: every deny-oom command is refused with Valkey's exact error and
    changes nothing; reads and deletes still run."""
    replies = []
    for w in both:
        limit = limit_at(w, "noeviction")
        fill(w, limit, lambda w, i: w.call("SET", f"k:{i}", "x" * 50))
        j = 0
        while (refused := w.call("SET", f"filler:{j}", "x" * 50)) == b"+OK\r\n":
            j += 1
        assert w.call("CONFIG", "SET", "maxmemory", str(used(w) - 20 * 1024)) == b"+OK\r\n"
        size = w.call("DBSIZE")
        got = [refused, w.call("SET", "refused", "v"), w.call("LPUSH", "list", "a"),
               w.call("APPEND", "k:0", "more"), w.call("INCR", "k:2"), w.call("EXISTS", "refused", "list"),
               w.call("GET", "k:0"), w.call("DEL", "k:1"), w.call("SET", "k:1", "v")]
        assert w.call("DBSIZE") == b":%d\r\n" % (int(size[1:-2]) - 1)
        replies.append(got)
    assert replies[0] == replies[1]
    assert replies[0][0] == OOM


def test_lowering_the_limit_evicts_without_another_command(both: list[Wire]) -> None:
    """CONFIG SET maxmemory below used memory: Valkey's eviction time proc
    empties the keyspace on its own."""
    for w in both:
        for i in range(50):
            w.call("SET", f"k:{i}", "v")
        assert w.call("CONFIG", "SET", "maxmemory-policy", "allkeys-lru") == b"+OK\r\n"
        assert w.call("CONFIG", "SET", "maxmemory", "1") == b"+OK\r\n"
    for w in both:
        end = time.monotonic() + 5
        while w.call("DBSIZE") != b":0\r\n":
            assert time.monotonic() < end
            time.sleep(0.02)
        assert info(w, "evicted_keys") == "50"


# -- OBJECT FREQ and IDLETIME ----------------------------------------------------------------


def test_object_freq_idletime_replies(both: list[Wire]) -> None:
    got = []
    for w in both:
        steps = [
            ("SET", "k", "v"), ("OBJECT", "IDLETIME", "k"), ("OBJECT", "FREQ", "k"),
            ("OBJECT", "IDLETIME", "missing"), ("OBJECT", "FREQ", "missing"), ("OBJECT", "FREQ"),
            ("OBJECT", "IDLETIME", "k", "extra"), ("CONFIG", "SET", "maxmemory-policy", "volatile-lfu"),
            ("OBJECT", "IDLETIME", "k"), ("SET", "n", "v"), ("OBJECT", "FREQ", "n"),
            ("CONFIG", "SET", "lfu-log-factor", "0"), ("GET", "n"), ("GET", "n"), ("HSET", "h", "f", "v"),
            ("HGET", "h", "f"), ("OBJECT", "FREQ", "n"), ("OBJECT", "FREQ", "n"), ("OBJECT", "FREQ", "h"),
            ("OBJECT", "FREQ", "missing"), ("CONFIG", "SET", "maxmemory-policy", "allkeys-lru"),
            ("OBJECT", "FREQ", "n"), ("DEL", "n"), ("SET", "n", "1"), ("GET", "n"), ("OBJECT", "IDLETIME", "n"),
        ]
        replies = [w.call(*s) for s in steps]
        assert w.call("HELLO", "3").startswith(b"%")
        replies += [w.call("OBJECT", "IDLETIME", "missing"), w.call("OBJECT", "FREQ", "missing")]
        got.append(replies)
    assert got[0] == got[1]


# -- events, INFO ----------------------------------------------------------------------------


def test_evicted_events(both: list[Wire]) -> None:
    """Every eviction raises ``evicted`` (class e), never ``del``."""
    streams = []
    for w in both:
        assert w.call("CONFIG", "SET", "notify-keyspace-events", "KEA") == b"+OK\r\n"
        for i in range(30):
            w.call("SET", f"k:{i}", "v")
        watched = Watched(w.port)
        try:
            assert w.call("CONFIG", "SET", "maxmemory-policy", "allkeys-random") == b"+OK\r\n"
            assert w.call("CONFIG", "SET", "maxmemory", "1") == b"+OK\r\n"
            frames = []
            while len(frames) < 60:
                frames.append(frame_parts(watched.wait_event()))
            assert watched.call("DBSIZE")[1] == []  # nothing more
        finally:
            watched.close()
        streams.append(sorted(frames))
    assert streams[0] == streams[1]
    assert {f[-1] for f in streams[0]} >= {b"evicted"}


def test_info_fields(both: list[Wire]) -> None:
    names = []
    for w in both:
        text = w.call("INFO", "memory").decode() + w.call("INFO", "stats").decode()
        names.append([line.split(":")[0] for line in text.split("\r\n") if ":" in line])
    assert names[0] == names[1]
    for field in ("evicted_keys", "total_eviction_exceeded_time", "current_eviction_exceeded_time",
                  "used_memory_dataset", "maxmemory_policy"):
        assert field in names[0]


def test_memory_figures_agree(both: list[Wire]) -> None:
    """used_memory = overhead + dataset; MEMORY STATS says the same; the
    dataset is the sum of MEMORY USAGE over the keys; and the limit sees it
    at once (no sampling delay)."""
    t = both[1]
    for i in range(20):
        t.call("SET", f"s:{i}", "x" * i)
        t.call("RPUSH", f"l:{i}", *range(i + 1))
        t.call("HSET", f"h:{i}", "f", "v" * i)
    t.call("EXPIRE", "s:1", 1000)
    for tracked in (False, True):
        if tracked:
            assert t.call("CONFIG", "SET", "maxmemory", "1gb") == b"+OK\r\n"
        u, overhead, dataset = (int(info(t, f)) for f in ("used_memory", "used_memory_overhead",
                                                           "used_memory_dataset"))
        assert u == overhead + dataset
        keys = [k for k in t.call("KEYS", "*").split(b"\r\n")[2::2]]
        assert dataset == sum(int(t.call("MEMORY", "USAGE", k)[1:-2]) for k in keys)
        stats = t.call("MEMORY", "STATS")
        assert b"total.allocated\r\n:%d\r\n" % u in stats
        assert b"dataset.bytes\r\n:%d\r\n" % dataset in stats
    now = used(t)
    assert t.call("CONFIG", "SET", "maxmemory", str(now + 10)) == b"+OK\r\n"
    assert t.call("SET", "big", "x" * 100) == b"+OK\r\n"
    assert t.call("SET", "refused", "v") == OOM


# -- scripts and transactions under OOM ---------------------------------------------------------------

_LIB = (
    "#!lua name=oomlib\n"
    "server.register_function('w', function(keys, args) return server.call('set', keys[1], 'v') end)\n"
    "server.register_function{function_name='ok', callback=function(keys, args) "
    "return server.call('set', keys[1], 'v') end, flags={'allow-oom'}}\n"
    "server.register_function{function_name='ro', callback=function(keys, args) "
    "return server.call('get', keys[1]) end, flags={'no-writes'}}\n"
)


def test_scripts_under_oom(both: list[Wire]) -> None:
    got = []
    for w in both:
        assert w.call("FUNCTION", "LOAD", "REPLACE", _LIB) == b"$6\r\noomlib\r\n"
        assert w.call("SET", "x", "1") == b"+OK\r\n"
        assert w.call("CONFIG", "SET", "maxmemory", "1") == b"+OK\r\n"
        got.append([
            w.call("EVAL", "return redis.call('set', KEYS[1], 'v')", 1, "a"),
            w.call("EVAL", "return redis.call('get', KEYS[1])", 1, "x"),
            w.call("EVAL", "redis.call('del', KEYS[1]); return redis.call('set', KEYS[1], 'v')", 1, "x"),
            w.call("EVAL", "#!lua\nreturn 1", 0),
            w.call("EVAL", "#!lua\nreturn redis.call('set', KEYS[1], 'v')", 1, "a"),
            w.call("EVAL", "#!lua flags=no-writes\nreturn redis.call('get', KEYS[1])", 1, "x"),
            w.call("EVAL", "#!lua flags=allow-oom\nreturn redis.call('set', KEYS[1], 'v')", 1, "b"),
            w.call("EVAL_RO", "return redis.call('get', KEYS[1])", 1, "x"),
            w.call("EVAL_RO", "#!lua\nreturn redis.call('get', KEYS[1])", 1, "x"),
            w.call("FCALL", "w", 1, "c"), w.call("FCALL", "ok", 1, "d"), w.call("FCALL", "ro", 1, "x"),
            w.call("FCALL_RO", "ro", 1, "x"), w.call("FCALL_RO", "w", 1, "x"),
            w.call("MGET", "a", "b", "c", "d", "x"),
        ])
    assert got[0] == got[1]


def test_multi_under_oom(both: list[Wire]) -> None:
    got = []
    for w in both:
        w.call("SET", "x", "1")
        assert w.call("CONFIG", "SET", "maxmemory", "1") == b"+OK\r\n"
        got.append([w.call(*c) for c in (
            ("MULTI",), ("GET", "x"), ("SET", "y", "1"), ("EXEC",),
            ("MULTI",), ("GET", "x"), ("DEL", "x"), ("EXEC",),
            ("SET", "x", "2"), ("MULTI",), ("EVAL", "return 1", 0), ("EXEC",), ("EXISTS", "x", "y"),
        )])
    assert got[0] == got[1]


# -- propagation ------------------------------------------------------------------------------------


def _evict_all(port: int) -> list[bytes]:
    """Valkey's "propagation with eviction": keys written, then a limit of
    one byte under allkeys-lru; the eviction time proc empties the keyspace;
    then a write once the limit is gone. And the same in MULTI: the limit is
    set by a queued CONFIG SET, the evictions follow the EXEC."""
    w = Wire(port)
    try:
        replies = [w.call("SET", f"asdf{i}", i) for i in range(1, 4)]
        replies += [w.call("CONFIG", "SET", "maxmemory-policy", "allkeys-lru"),
                    w.call("CONFIG", "SET", "maxmemory", "1")]
        end = time.monotonic() + 5
        while w.call("DBSIZE") != b":0\r\n":
            assert time.monotonic() < end
            time.sleep(0.02)
        replies += [w.call("CONFIG", "SET", "maxmemory", "0"), w.call("SET", "asdf4", "4")]
        replies += [w.call(*c) for c in (("MULTI",), ("INCR", "x"), ("CONFIG", "SET", "maxmemory", "1"),
                                         ("INCR", "x"), ("EXEC",))]
        end = time.monotonic() + 5
        while w.call("DBSIZE") != b":0\r\n":
            assert time.monotonic() < end
            time.sleep(0.02)
        replies.append(w.call("CONFIG", "SET", "maxmemory", "0"))
        return replies
    finally:
        w.close()


def test_evictions_are_logged_as_unlink() -> None:
    v, t = logged_runs(_evict_all)
    assert t.replies == v.replies
    assert t.keyspace == v.keyspace == {}

    def shape(log: list[list[bytes]]) -> list[list[bytes]]:
        # Which asdf key each UNLINK names follows the sampling: compare the kinds.
        return [[c[0], c[1][:4]] if c[0].lower() == b"unlink" else c for c in without_select(log)]

    assert shape(t.log) == shape(v.log)
    assert sorted(c[1] for c in t.log if c[0].lower() == b"unlink") == [b"asdf1", b"asdf2", b"asdf3", b"asdf4", b"x"]


@pytest.mark.parametrize("policy", ["volatile-random", "volatile-lru"])
def test_a_read_evicts_before_its_reply_after_earlier_evictions(both: list[Wire], policy: str) -> None:
    """Valkey evicts before any command, a read too, and a tracking client
    hears of an evicted key before that command's reply (Valkey's
    tracking unit). Keys evicted by an earlier round must not hide the
    keys written since from the next one."""
    got = []
    for w in both:
        limit_at(w, policy, 100 * 1024)
        # A first round: one volatile key written, then evicted.
        assert w.call("SET", "old", "x", "EX", "10000") == b"+OK\r\n"
        assert w.call("SETBIT", "big1", "1600000", "0") == b":0\r\n"
        assert w.call("EXISTS", "old") == b":0\r\n"
        assert w.call("DEL", "big1") == b":1\r\n"
        # The second round, as the unit runs it: a new volatile key,
        # tracked, then too much memory, then a read.
        assert w.call("HELLO", "3").startswith(b"%")
        assert w.call("CLIENT", "TRACKING", "on") == b"+OK\r\n"
        assert w.call("SETEX", "volatile-key", "10000", "x") == b"+OK\r\n"
        assert w.call("GET", "volatile-key") == b"$1\r\nx\r\n"
        assert w.call("SETBIT", "big2", "1600000", "0") == b":0\r\n"
        got.append(w.call("GETBIT", "big2", "0"))
        got.append(w.read_reply())
        assert w.call("CLIENT", "TRACKING", "off") == b"+OK\r\n"
        assert w.call("HELLO", "2").startswith(b"*")
    assert got[0:2] == got[2:4] == [b">2\r\n$10\r\ninvalidate\r\n*1\r\n$12\r\nvolatile-key\r\n", b":0\r\n"]


def _eviction_outcome(ctl: Wire, keys: bytes) -> tuple[bool, bool, bool]:
    """Whether keys were evicted, clients were evicted, and DBSIZE is still keys."""
    info = ctl.call("INFO", "stats").decode()
    evicted_keys = int(info.split("evicted_keys:")[1].split("\r\n")[0])
    evicted_clients = int(info.split("evicted_clients:")[1].split("\r\n")[0])
    return evicted_keys > 0, evicted_clients > 0, ctl.call("DBSIZE") == keys


def test_slow_readers_are_evicted_before_any_key() -> None:
    """Clients that send MGETs of a 100 KB value and read nothing, under
    maxmemory and maxmemory-clients: the clients go, every key stays (Valkey
    9.1 keeps a large reply as a reference to the value, so used memory
    does not grow with it). As in Valkey, on both servers."""
    expected = (False, True, True)  # keys evicted, clients evicted, every key still there
    outcomes = []
    with own_pair() as pair:
        for p in pair:
            ctl = Wire(p.port)
            ctl.call("CONFIG", "SET", "maxmemory", "11mb")
            ctl.call("CONFIG", "SET", "maxmemory-policy", "allkeys-lru")
            ctl.call("CONFIG", "SET", "maxmemory-clients", "3mb")
            ctl.call("CLIENT", "NO-EVICT", "on")
            for j in range(50):
                ctl.call("SETRANGE", j, 100000, "x")
            ctl.call("CONFIG", "RESETSTAT")
            readers = []
            for _ in range(20):
                w = Wire(p.port)
                w.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
                readers.append(w)

            keys = ctl.call("DBSIZE")
            deadline = time.monotonic() + 20
            while time.monotonic() < deadline and _eviction_outcome(ctl, keys) != expected:
                for w in list(readers):
                    try:
                        w.sock.sendall(encode("MGET", "1"))
                    except OSError:
                        readers.remove(w)
                time.sleep(0.01)
            outcomes.append(_eviction_outcome(ctl, keys))
            for w in readers:
                w.close()
            ctl.close()
    assert outcomes == [expected, expected]


def _stalled_requests(port: int, ctl: Wire) -> list[Wire]:
    """30 clients each sending 249 of a request's 250 arguments of 1000
    bytes, and no more."""
    stalled = []
    for _ in range(30):
        w = Wire(port)
        w.sock.sendall(b"*250\r\n" + b"".join(b"$1000\r\n" + b"x" * 1000 + b"\r\n" for _ in range(249)))
        stalled.append(w)
    ctl.call("PING")  # the requests are read before the check (one turn of the loop at least)
    time.sleep(0.3)
    return stalled


def _unread_replies(port: int, ctl: Wire) -> list[Wire]:
    """20 clients that send MGETs of a 100 KB value and read nothing, until
    something is evicted (20 s at most)."""
    readers = []
    for _ in range(20):
        w = Wire(port)
        w.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        readers.append(w)
    keys = ctl.call("DBSIZE")
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and _eviction_outcome(ctl, keys) == (False, False, True):
        for w in readers:
            w.sock.sendall(encode("MGET", "1"))
    return readers


def _unread_messages(port: int, ctl: Wire) -> list[Wire]:
    """20 subscribers that read nothing, and messages of 100 KB published
    to them until something is evicted (20 s at most)."""
    subscribers = []
    for _ in range(20):
        w = Wire(port)
        w.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        assert w.call("SUBSCRIBE", "bla").startswith(b"*3\r\n")
        subscribers.append(w)
    keys = ctl.call("DBSIZE")
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and _eviction_outcome(ctl, keys) == (False, False, True):
        assert ctl.call("PUBLISH", "bla", "x" * 100000) == b":20\r\n"
    return subscribers


@pytest.mark.parametrize("load", [_stalled_requests, _unread_replies, _unread_messages],
                         ids=["stalled-requests", "unread-replies", "unread-messages"])
def test_client_buffers_evict_keys_without_client_eviction(load: Callable[[int, Wire], list[Wire]]) -> None:
    """Without maxmemory-clients, what clients hold counts in used memory:
    requests stalled part way, replies and messages a client does not read
    make the server evict keys, and no client (Valkey's unit/maxmemory,
    "client eviction: false"). Over 5 MB of keys under an 11 MB limit, on
    both servers."""
    expected = (True, False, False)  # keys evicted, no client evicted, keys gone
    outcomes = []
    with own_pair() as pair:
        for p in pair:
            ctl = Wire(p.port)
            for name, value in (("maxmemory", "11mb"), ("maxmemory-policy", "allkeys-lru"),
                                ("maxmemory-clients", "0")):
                assert ctl.call("CONFIG", "SET", name, value) == b"+OK\r\n"
            assert ctl.call("FLUSHALL") == b"+OK\r\n"
            for j in range(50):
                ctl.call("SETRANGE", j, 100000, "x")
            ctl.call("CONFIG", "RESETSTAT")
            keys = ctl.call("DBSIZE")
            assert keys == b":50\r\n"
            clients = load(p.port, ctl)
            outcomes.append(_eviction_outcome(ctl, keys))
            for w in clients:
                w.close()
            ctl.close()
    assert outcomes == [expected, expected]

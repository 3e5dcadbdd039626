"""TRAFIKEY.CLOCK, the test clock (spec §5, decisions #14).

The clock exists so that lease expiry, schedules and key TTLs can be tested
without sleeping, which only works if *every* time-dependent path reads it:
TIME, lazy expiry, the periodic active-expiry sweep, and the EMQ verbs'
scores. Each of those is checked here against the value the test itself set,
never against a value read back from the server first.

Where a running (unfrozen) clock is involved, the server's reading is
bracketed between two readings of this process's wall clock taken before
and after the request (same machine, same clock): that is containment, not
a claim about how long anything takes. Liveness waits (the active sweep,
a running clock moving on) poll up to a generous deadline.

Error texts follow Valkey's conventions for container commands; where Valkey
has an equivalent (CONFIG's arity and unknown-subcommand errors, an
immutable option), the expected text is taken from Valkey itself with the
names substituted.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator

import pytest
import redis
from helpers.resp_wire import Wire
from helpers.servers import Proc, start_trafikey

DISABLED = b"-ERR TRAFIKEY.CLOCK is disabled: start the server with --enable-clock-command yes\r\n"
NOT_INT = b"-ERR value is not an integer or out of range\r\n"
MS_RANGE = b"-ERR ms is out of range\r\n"
T0 = 1_800_000_000_123  # a frozen "now" with a non-zero millisecond part
DEADLINE = 8.0  # seconds: liveness bound for polling, not a timing claim


def wall_ms() -> int:
    return time.time_ns() // 1_000_000


def clock(r: redis.Redis, *args: object) -> int:
    reply = r.execute_command("TRAFIKEY.CLOCK", *args)
    assert isinstance(reply, int), reply
    return reply


def assert_eventually(probe: Callable[[], object], want: object, what: str) -> None:
    end = time.monotonic() + DEADLINE
    while True:
        got = probe()
        if got == want:
            return
        if time.monotonic() > end:
            raise AssertionError(f"{what}: still {got!r} after {DEADLINE}s, want {want!r}")
        time.sleep(0.02)


@pytest.fixture
def w(emq_server: Proc, emq: redis.Redis) -> Iterator[Wire]:
    """A raw connection to the clock-enabled server (``emq`` flushes the
    keyspace and releases the clock before and after)."""
    conn = Wire(emq_server.port)
    yield conn
    conn.close()


# -- disabled unless enabled -------------------------------------------------------


@pytest.mark.parametrize("args", [
    ("GET",), ("FREEZE",), ("FREEZE", "1000"), ("ADVANCE", "1"), ("SET", "1000"), ("RELEASE",),
    ("get",),
], ids=" ".join)
def test_disabled_by_default(trafikey_server: Proc, args: tuple[str, ...]) -> None:
    """A plain start_trafikey(): every subcommand refuses with the exact text."""
    conn = Wire(trafikey_server.port)
    try:
        assert conn.call("TRAFIKEY.CLOCK", *args) == DISABLED
    finally:
        conn.close()


def test_disabled_clock_is_not_moved(trafikey_server: Proc) -> None:
    """A refused FREEZE really did nothing: TIME still follows the wall clock."""
    conn = Wire(trafikey_server.port)
    try:
        assert conn.call("TRAFIKEY.CLOCK", "FREEZE", "0") == DISABLED
        before = wall_ms() // 1000
        reply = conn.call("TIME")
        after = wall_ms() // 1000
    finally:
        conn.close()
    secs = int(reply.split(b"\r\n")[2])
    assert before <= secs <= after


def test_disabled_still_checks_arity(trafikey_server: Proc) -> None:
    """Arity is checked at dispatch, before any command runs (as Valkey
    checks it), so a malformed call gets the arity error even when disabled."""
    conn = Wire(trafikey_server.port)
    try:
        assert conn.call("TRAFIKEY.CLOCK", "ADVANCE") == (
            b"-ERR wrong number of arguments for 'trafikey.clock|advance' command\r\n"
        )
    finally:
        conn.close()


def test_disabled_explicitly_and_config(valkey_server: Proc) -> None:
    """``--enable-clock-command no`` is the default spelled out; CONFIG GET
    shows the option; it cannot be switched on at run time (Valkey's
    immutable-option refusal, with the name substituted)."""
    v = Wire(valkey_server.port)
    try:
        immutable = v.call("CONFIG", "SET", "daemonize", "yes")
    finally:
        v.close()
    assert b"daemonize" in immutable
    p = start_trafikey("--enable-clock-command", "no")
    try:
        conn = Wire(p.port)
        try:
            assert conn.call("TRAFIKEY.CLOCK", "GET") == DISABLED
            assert conn.call("CONFIG", "GET", "enable-clock-command") == (
                b"*2\r\n$20\r\nenable-clock-command\r\n$2\r\nno\r\n"
            )
            assert conn.call("CONFIG", "SET", "enable-clock-command", "yes") == immutable.replace(
                b"daemonize", b"enable-clock-command"
            )
            assert conn.call("TRAFIKEY.CLOCK", "GET") == DISABLED
        finally:
            conn.close()
    finally:
        p.stop()


def test_enabled_config_get(w: Wire) -> None:
    assert w.call("CONFIG", "GET", "enable-clock-command") == b"*2\r\n$20\r\nenable-clock-command\r\n$3\r\nyes\r\n"


# -- GET / FREEZE / ADVANCE / SET / RELEASE -------------------------------------------


def test_get_on_released_clock_is_wall_time(emq: redis.Redis) -> None:
    before = wall_ms()
    got = clock(emq, "GET")
    after = wall_ms()
    assert before <= got <= after


def test_freeze_at_ms_stays(emq: redis.Redis) -> None:
    """FREEZE ms answers ms; the clock then does not move however long we wait."""
    assert clock(emq, "FREEZE", T0) == T0
    time.sleep(0.05)
    assert clock(emq, "GET") == T0
    assert clock(emq, "GET") == T0


def test_freeze_now(emq: redis.Redis) -> None:
    """FREEZE without ms stops the clock at its current reading."""
    before = wall_ms()
    at = clock(emq, "FREEZE")
    after = wall_ms()
    assert before <= at <= after
    time.sleep(0.03)
    assert clock(emq, "GET") == at


def test_freeze_when_frozen_keeps_the_frozen_time(emq: redis.Redis) -> None:
    clock(emq, "FREEZE", T0)
    assert clock(emq, "FREEZE") == T0
    assert clock(emq, "GET") == T0


def test_freeze_zero(emq: redis.Redis) -> None:
    """0 is a non-negative integer: the epoch itself is a valid time."""
    assert clock(emq, "FREEZE", 0) == 0
    assert clock(emq, "GET") == 0


def test_advance_frozen_stays_frozen(emq: redis.Redis) -> None:
    clock(emq, "FREEZE", T0)
    assert clock(emq, "ADVANCE", 1500) == T0 + 1500
    assert clock(emq, "ADVANCE", 0) == T0 + 1500
    time.sleep(0.03)
    assert clock(emq, "GET") == T0 + 1500


def test_set_frozen_stays_frozen(emq: redis.Redis) -> None:
    """SET moves a frozen clock anywhere, backwards too, and it stays frozen."""
    clock(emq, "FREEZE", T0)
    assert clock(emq, "SET", T0 - 10_000) == T0 - 10_000
    time.sleep(0.03)
    assert clock(emq, "GET") == T0 - 10_000


def test_advance_running_keeps_running(emq: redis.Redis) -> None:
    """ADVANCE on a running clock adds an offset and the clock keeps going."""
    day = 86_400_000
    before = wall_ms()
    got = clock(emq, "ADVANCE", day)
    after = wall_ms()
    assert before + day <= got <= after + day
    assert_eventually(lambda: clock(emq, "GET") > got, True, "running clock after ADVANCE")
    before = wall_ms()
    now = clock(emq, "GET")
    after = wall_ms()
    assert before + day <= now <= after + day


def test_set_running_keeps_running(emq: redis.Redis) -> None:
    """SET on a running clock jumps to ms and keeps running from there."""
    target = 5_000_000
    before = wall_ms()
    got = clock(emq, "SET", target)
    assert target <= got <= target + (wall_ms() - before)
    assert_eventually(lambda: clock(emq, "GET") > got, True, "running clock after SET")


def test_freeze_running_offset_clock(emq: redis.Redis) -> None:
    """FREEZE with no ms on an advanced running clock freezes at the clock's
    reading (offset included), not at the wall time."""
    hour = 3_600_000
    clock(emq, "ADVANCE", hour)
    before = wall_ms()
    at = clock(emq, "FREEZE")
    after = wall_ms()
    assert before + hour <= at <= after + hour
    assert clock(emq, "GET") == at


def test_release_returns_to_wall_clock(emq: redis.Redis) -> None:
    """RELEASE drops both a freeze and an offset, and answers the wall time."""
    clock(emq, "FREEZE", 42)
    clock(emq, "ADVANCE", 1000)
    before = wall_ms()
    got = clock(emq, "RELEASE")
    after = wall_ms()
    assert before <= got <= after
    clock(emq, "ADVANCE", 1_000_000)
    before = wall_ms()
    got = clock(emq, "RELEASE")
    after = wall_ms()
    assert before <= got <= after
    before = wall_ms()
    got = clock(emq, "GET")
    after = wall_ms()
    assert before <= got <= after


def test_subcommands_are_case_insensitive(emq: redis.Redis) -> None:
    assert clock(emq, "freeze", T0) == T0
    assert clock(emq, "Advance", 1) == T0 + 1
    assert clock(emq, "get") == T0 + 1


def test_help(w: Wire) -> None:
    """HELP lists every subcommand, in Valkey's help layout: a header line
    naming the command, then each subcommand, ending with HELP."""
    reply = w.call("TRAFIKEY.CLOCK", "HELP")
    lines = [ln for ln in reply.split(b"\r\n") if ln.startswith(b"+")]
    assert reply.startswith(b"*%d\r\n" % len(lines))
    assert lines[0].startswith(b"+TRAFIKEY.CLOCK <subcommand> ")
    assert lines[0].endswith(b". Subcommands are:")
    heads = [ln[1:].split(b" ")[0] for ln in lines[1:] if not ln.startswith(b"+ ")]
    assert heads == [b"GET", b"FREEZE", b"ADVANCE", b"SET", b"RELEASE", b"HELP"]
    assert lines[-2:] == [b"+HELP", b"+    Print this help."]


# -- argument errors ----------------------------------------------------------------


def test_argument_errors(w: Wire, valkey_server: Proc) -> None:
    """Container and subcommand arity errors and the unknown-subcommand
    error in Valkey's wording (oracle: CONFIG on Valkey); ms parsed as
    Valkey parses integers; a refused call leaves the clock alone."""
    v = Wire(valkey_server.port)
    try:
        unknown = v.call("CONFIG", "NOPE").replace(b"CONFIG", b"TRAFIKEY.CLOCK")
        container = v.call("CONFIG").replace(b"'config'", b"'trafikey.clock'")
    finally:
        v.close()
    assert w.call("TRAFIKEY.CLOCK", "FREEZE", str(T0)) == b":%d\r\n" % T0

    def arity(sub: str) -> bytes:
        return b"-ERR wrong number of arguments for 'trafikey.clock|%s' command\r\n" % sub.encode()

    assert w.call("TRAFIKEY.CLOCK") == container
    assert w.call("TRAFIKEY.CLOCK", "NOPE") == unknown
    assert w.call("TRAFIKEY.CLOCK", "GET", "1") == arity("get")
    assert w.call("TRAFIKEY.CLOCK", "FREEZE", "1", "2") == arity("freeze")
    assert w.call("TRAFIKEY.CLOCK", "ADVANCE") == arity("advance")
    assert w.call("TRAFIKEY.CLOCK", "ADVANCE", "1", "2") == arity("advance")
    assert w.call("TRAFIKEY.CLOCK", "SET") == arity("set")
    assert w.call("TRAFIKEY.CLOCK", "SET", "1", "2") == arity("set")
    assert w.call("TRAFIKEY.CLOCK", "RELEASE", "now") == arity("release")
    for sub in ("FREEZE", "ADVANCE", "SET"):
        for bad in ("abc", "1.5", "+1", " 1", "1 ", "01", "", "0x10", "9223372036854775808", "1e3"):
            assert w.call("TRAFIKEY.CLOCK", sub, bad) == NOT_INT, (sub, bad)
        for neg in ("-1", "-9223372036854775808"):
            assert w.call("TRAFIKEY.CLOCK", sub, neg) == MS_RANGE, (sub, neg)
    assert w.call("TRAFIKEY.CLOCK", "GET") == b":%d\r\n" % T0


# -- everything reads the clock -----------------------------------------------------


def time_reply(ms: int) -> bytes:
    """TIME's reply for a clock at ms: two bulk strings, plain decimals."""
    secs, usecs = str(ms // 1000).encode(), str((ms % 1000) * 1000).encode()
    return b"*2\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n" % (len(secs), secs, len(usecs), usecs)


def test_time_follows_frozen_clock(w: Wire) -> None:
    """TIME = [seconds, microseconds] of the frozen ms, unchanged over time
    (Valkey writes microseconds as a plain decimal, no zero padding)."""
    w.call("TRAFIKEY.CLOCK", "FREEZE", str(T0))
    want = time_reply(T0)
    assert want == b"*2\r\n$10\r\n1800000000\r\n$6\r\n123000\r\n"
    assert w.call("TIME") == want
    time.sleep(0.02)
    assert w.call("TIME") == want
    w.call("TRAFIKEY.CLOCK", "ADVANCE", "877")  # a whole second: microseconds 0
    assert w.call("TIME") == time_reply(T0 + 877) == b"*2\r\n$10\r\n1800000001\r\n$1\r\n0\r\n"
    w.call("TRAFIKEY.CLOCK", "ADVANCE", "5")
    assert w.call("TIME") == b"*2\r\n$10\r\n1800000001\r\n$4\r\n5000\r\n"


def test_time_follows_offset_clock(emq: redis.Redis) -> None:
    day = 86_400_000
    clock(emq, "ADVANCE", day)
    before = wall_ms()
    secs, usecs = emq.time()
    after = wall_ms()
    assert before + day <= secs * 1000 + usecs // 1000 <= after + day


def test_lazy_expiry_follows_clock(emq: redis.Redis) -> None:
    """SET PX 1000 on a frozen clock: alive at +999, gone at +1001 (GET nil,
    TTL -2), with no wall time needed."""
    clock(emq, "FREEZE", T0)
    assert emq.set("k", "v", px=1000)
    assert emq.pexpiretime("k") == T0 + 1000
    clock(emq, "ADVANCE", 999)
    assert emq.get("k") == b"v"
    assert emq.pttl("k") == 1
    clock(emq, "ADVANCE", 2)
    assert emq.get("k") is None
    assert emq.ttl("k") == -2
    assert emq.pttl("k") == -2
    assert emq.exists("k") == 0


def test_lazy_expiry_boundary_is_valkeys(emq: redis.Redis) -> None:
    """At exactly its expire time a key is still there with PTTL 0: Valkey
    expires a key only when now > when (src/db.c timestampIsExpired:
    "The key expired if the current (virtual or real) time is greater than
    the expire time of the key"); one millisecond later it is gone."""
    clock(emq, "FREEZE", T0)
    assert emq.set("k", "v", px=1000)
    clock(emq, "ADVANCE", 1000)
    assert emq.pttl("k") == 0
    assert emq.ttl("k") == 0
    assert emq.get("k") == b"v"
    clock(emq, "ADVANCE", 1)
    assert emq.get("k") is None
    assert emq.ttl("k") == -2
    assert emq.pttl("k") == -2
    assert emq.exists("k") == 0


def test_lazy_expiry_on_other_commands(emq: redis.Redis) -> None:
    """Every read sees the clock's expiry: EXISTS, TYPE, ZSCORE, HGET."""
    clock(emq, "FREEZE", T0)
    emq.set("s", "v", px=10)
    emq.zadd("z", {"m": 1})
    emq.pexpire("z", 10)
    emq.hset("h", "f", "v")
    emq.pexpireat("h", T0 + 10)
    clock(emq, "ADVANCE", 11)
    assert emq.exists("s", "z", "h") == 0
    assert emq.type("z") == b"none"
    assert emq.zscore("z", "m") is None
    assert emq.hget("h", "f") is None


def test_pttl_shrinks_exactly_with_advance(emq: redis.Redis) -> None:
    """On a frozen clock PTTL moves by exactly what ADVANCE / SET moved, and
    TTL rounds as Valkey's does ((ms + 500) / 1000)."""
    clock(emq, "FREEZE", T0)
    emq.set("k", "v", px=5000)
    assert emq.pttl("k") == 5000
    assert emq.ttl("k") == 5
    clock(emq, "ADVANCE", 1234)
    assert emq.pttl("k") == 3766
    assert emq.ttl("k") == 4
    clock(emq, "ADVANCE", 3265)
    assert emq.pttl("k") == 501
    assert emq.ttl("k") == 1
    clock(emq, "ADVANCE", 2)
    assert emq.pttl("k") == 499
    assert emq.ttl("k") == 0
    clock(emq, "SET", T0 - 1000)  # backwards: the TTL grows again
    assert emq.pttl("k") == 6000
    assert emq.expiretime("k") == (T0 + 5000) // 1000


def test_expire_relative_uses_the_clock(emq: redis.Redis) -> None:
    """EXPIRE / SET EX compute the absolute time from the test clock."""
    clock(emq, "FREEZE", T0)
    emq.set("a", "v")
    assert emq.expire("a", 100)
    assert emq.pexpiretime("a") == T0 + 100_000
    emq.set("b", "v", ex=7)
    assert emq.pexpiretime("b") == T0 + 7000


def test_frozen_clock_holds_back_the_active_sweep(emq: redis.Redis) -> None:
    """Wall time passing does not expire keys while the clock is frozen: the
    periodic sweep (10 times a second) reads the test clock too."""
    clock(emq, "FREEZE", T0)
    emq.set("k", "v", px=100)
    time.sleep(0.4)
    assert emq.dbsize() == 1
    assert emq.pttl("k") == 100


def test_active_expiry_follows_clock(emq: redis.Redis) -> None:
    """Keys with TTLs of minutes, the clock advanced past them: the periodic
    sweep removes them without anyone touching them (DBSIZE never expires
    a key itself), keys without a TTL or with a later one stay."""
    clock(emq, "FREEZE", T0)
    pipe = emq.pipeline(transaction=False)
    for i in range(300):
        pipe.set(f"gone{i}", "v", px=60_000 + i)
    for i in range(5):
        pipe.set(f"keep{i}", "v")
        pipe.set(f"later{i}", "v", px=600_000)
    pipe.execute()
    assert emq.dbsize() == 310
    clock(emq, "ADVANCE", 60_300)
    assert_eventually(emq.dbsize, 10, "DBSIZE after advancing past 300 TTLs")
    assert sorted(emq.keys("*")) == sorted(
        [f"keep{i}".encode() for i in range(5)] + [f"later{i}".encode() for i in range(5)]
    )


def test_active_expiry_follows_running_offset(emq: redis.Redis) -> None:
    """The same with a running clock moved forward by ADVANCE."""
    emq.set("x", "v", ex=3600)
    emq.set("y", "v")
    clock(emq, "ADVANCE", 3_601_000)
    assert_eventually(emq.dbsize, 1, "DBSIZE after advancing a running clock past a TTL")
    assert emq.exists("y") == 1


# -- the job core's scores ------------------------------------------------------------

P = "emq:{clk}:"
PENDING, ACTIVE, SCHEDULE, DEAD = P + "pending", P + "active", P + "schedule", P + "dead"


def _claim(r: redis.Redis, lease: int) -> list[object]:
    return r.execute_command("EMQ.CLAIM", 3, PENDING, ACTIVE, P, lease)


def test_claim_deadline_from_clock(emq: redis.Redis) -> None:
    """CLAIM scores active at now + lease_ms; EXTEND re-scores from the
    clock's new now."""
    clock(emq, "FREEZE", T0)
    emq.execute_command("EMQ.ENQUEUE", 2, PENDING, P, "j", "p")
    assert _claim(emq, 30_000) == [b"j", b"p", 1]
    assert emq.zscore(ACTIVE, "j") == T0 + 30_000
    clock(emq, "ADVANCE", 500)
    assert emq.execute_command("EMQ.EXTEND", 2, ACTIVE, P, "j", "1", 1000) == 1
    assert emq.zscore(ACTIVE, "j") == T0 + 1500
    assert emq.execute_command("EMQ.EXTENDS", 2, ACTIVE, P, 2000, "j", "1") == [1]
    assert emq.zscore(ACTIVE, "j") == T0 + 2500


def test_claim_deadline_from_offset_clock(emq: redis.Redis) -> None:
    """A running clock moved a year ahead: the deadline is a year ahead too."""
    year = 365 * 86_400_000
    clock(emq, "ADVANCE", year)
    emq.execute_command("EMQ.ENQUEUE", 2, PENDING, P, "j", "p")
    before = wall_ms()
    _claim(emq, 1000)
    after = wall_ms()
    score = emq.zscore(ACTIVE, "j")
    assert before + year + 1000 <= score <= after + year + 1000


def test_delay_and_fail_scores_from_clock(emq: redis.Redis) -> None:
    """DELAY: schedule at now + delay_ms. FAIL with backoff: now + backoff_ms.
    FAIL past max_attempts: dead at now."""
    clock(emq, "FREEZE", T0)
    for i in ("d", "f", "x"):
        emq.execute_command("EMQ.ENQUEUE", 2, PENDING, P, i, "p")
    assert [_claim(emq, 10_000)[0] for _ in range(3)] == [b"d", b"f", b"x"]
    assert emq.execute_command("EMQ.DELAY", 3, ACTIVE, SCHEDULE, P, "d", "1", 700) == 1
    assert emq.zscore(SCHEDULE, "d") == T0 + 700
    clock(emq, "ADVANCE", 10)
    assert emq.execute_command("EMQ.FAIL", 5, ACTIVE, PENDING, SCHEDULE, DEAD, P, "f", "1", 3, 250) == b"scheduled"
    assert emq.zscore(SCHEDULE, "f") == T0 + 260
    assert emq.execute_command("EMQ.FAIL", 5, ACTIVE, PENDING, SCHEDULE, DEAD, P, "x", "1", 1, 0) == b"dead"
    assert emq.zscore(DEAD, "x") == T0 + 10


def test_promote_and_sweep_follow_clock(emq: redis.Redis) -> None:
    """PROMOTE moves a job exactly when its run-at ≤ now; STALLED.CHECK
    recovers a lease exactly when its deadline ≤ now."""
    clock(emq, "FREEZE", T0)
    assert emq.execute_command("EMQ.SCHEDULE", 2, SCHEDULE, P, "s", "p", T0 + 100) == b"s"
    promote = ("EMQ.PROMOTE", 3, SCHEDULE, PENDING, P)
    assert emq.execute_command(*promote) == 0
    clock(emq, "ADVANCE", 99)
    assert emq.execute_command(*promote) == 0
    clock(emq, "ADVANCE", 1)
    assert emq.execute_command(*promote) == 1
    assert _claim(emq, 50) == [b"s", b"p", 1]
    sweep = ("EMQ.STALLED.CHECK", 4, ACTIVE, PENDING, DEAD, P, 5)
    clock(emq, "ADVANCE", 49)
    assert emq.execute_command(*sweep) == [[], []]
    clock(emq, "ADVANCE", 1)
    assert emq.execute_command(*sweep) == [[b"s"], []]

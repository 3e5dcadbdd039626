"""Blocked XREAD and XREADGROUP against Valkey, with several clients:
who is woken by which XADD, what each reads, ``$`` and ``>`` semantics,
consumers of one group interleaved over several connections, the stream
deleted, retyped, renamed or its group destroyed under a blocked reader,
timeouts, CLIENT UNBLOCK, and the blocking forms inside MULTI and EVAL
(answered at once).

The scenario runner (Valkey on a short real timeout, trafikey-server on
its test clock) is the blocking layer's (tests/helpers/blocking.py).
Replies here carry no clock: every ID is explicit.
"""

from __future__ import annotations

from helpers import blocking as shared
from helpers.blocking import TMS, run
from helpers.stream_diff import same

proto = shared.proto
sides = shared.sides
Sides = tuple


def assert_scenario(sides: Sides, steps: list[tuple]) -> None:
    """The blocking layer's assert_scenario, with XPENDING's idle times compared
    within tolerance (helpers.stream_diff)."""
    v, t = sides
    want, got = run(v, steps), run(t, steps)
    commands = [s[2:] if s[0] == "call" else (s[0],) for s in steps if s[0] in ("call", "read", "info", "keys")]
    assert len(got) == len(want) == len(commands)
    for i, (cmd, a, b) in enumerate(zip(commands, want, got, strict=True)):
        assert same(cmd, a, b), f"reply {i} to {cmd!r}\n valkey:   {a!r}\n trafikey: {b!r}"


def state(key: str, *groups: str) -> list[tuple]:
    out: list[tuple] = [("call", 0, "XRANGE", key, "-", "+"), ("call", 0, "XINFO", "GROUPS", key)]
    for g in groups:
        out.append(("call", 0, "XPENDING", key, g))
        out.append(("call", 0, "XPENDING", key, g, "-", "+", "100"))
    return out


def test_xread_readers_all_served_by_one_xadd(sides: Sides) -> None:
    assert_scenario(sides, [
        ("call", 0, "XADD", "s", "1-0", "f", "v"),
        ("send", 1, ("XREAD", "BLOCK", "0", "STREAMS", "s", "$")), ("blocked", 1),
        ("send", 2, ("XREAD", "COUNT", "1", "BLOCK", "0", "STREAMS", "s", "$")), ("blocked", 2),
        ("send", 3, ("XREAD", "BLOCK", "0", "STREAMS", "other", "s", "$", "1-0")), ("blocked", 3),
        ("send", 4, ("XREAD", "BLOCK", "0", "STREAMS", "s", "5-0")), ("blocked", 4),
        ("info", "blocked_clients"), ("info", "total_blocking_keys"),
        ("call", 0, "XADD", "s", "2-0", "f", "w"),
        ("read", 1), ("read", 2), ("read", 3), ("blocked", 1),
        ("call", 0, "XADD", "s", "5-0", "f", "x"), ("blocked", 1),
        ("call", 0, "XADD", "s", "5-1", "f", "y"), ("read", 4), ("blocked", 0),
        *state("s"),
    ])


def test_xread_dollar_is_the_last_id_when_blocking(sides: Sides) -> None:
    """``$`` names the last ID at the time of the call: entries added
    and deleted meanwhile do not count, a later XADD does."""
    assert_scenario(sides, [
        ("call", 0, "XADD", "s", "3-0", "f", "v"),
        ("send", 1, ("XREAD", "BLOCK", "0", "STREAMS", "s", "$")), ("blocked", 1),
        ("call", 0, "MULTI"), ("call", 0, "XADD", "s", "4-0", "f", "v"), ("call", 0, "XDEL", "s", "4-0"),
        ("call", 0, "EXEC"),
        ("blocked", 1),
        ("call", 0, "XADD", "s", "5-0", "f", "v"), ("read", 1), ("blocked", 0),
        # A missing key: $ is 0-0, the first XADD serves it.
        ("send", 2, ("XREAD", "BLOCK", "0", "STREAMS", "new", "$")), ("blocked", 1),
        ("call", 0, "XADD", "new", "1-1", "a", "b"), ("read", 2), ("blocked", 0),
        # + on an empty stream waits; on a filled one answers at once.
        ("call", 0, "XADD", "e", "MAXLEN", "0", "1-0", "f", "v"),
        ("send", 3, ("XREAD", "BLOCK", "0", "STREAMS", "e", "+")), ("blocked", 1),
        ("call", 0, "XADD", "e", "2-0", "f", "v"), ("read", 3), ("blocked", 0),
        ("call", 3, "XREAD", "BLOCK", "0", "STREAMS", "s", "+"),
        ("call", 3, "XREAD", "BLOCK", "0", "STREAMS", "s", "e", "+", "+"),
        ("call", 3, "XREAD", "BLOCK", "0", "STREAMS", "s", "4-0"),
        *state("s"),
    ])


def test_xread_served_by_xadd_inside_a_transaction_with_count(sides: Sides) -> None:
    assert_scenario(sides, [
        ("send", 1, ("XREAD", "COUNT", "2", "BLOCK", "0", "STREAMS", "s", "$")), ("blocked", 1),
        ("send", 2, ("XREAD", "BLOCK", "0", "STREAMS", "s", "t", "$", "$")), ("blocked", 2),
        ("call", 0, "MULTI"),
        ("call", 0, "XADD", "t", "1-0", "f", "1"),
        ("call", 0, "XADD", "s", "1-0", "f", "1"), ("call", 0, "XADD", "s", "2-0", "f", "2"),
        ("call", 0, "XADD", "s", "3-0", "f", "3"),
        ("call", 0, "EXEC"),
        ("read", 1), ("read", 2), ("blocked", 0),
    ])


def test_xread_key_deleted_or_retyped_keeps_waiting(sides: Sides) -> None:
    assert_scenario(sides, [
        ("call", 0, "XADD", "s", "666", "f", "v"),
        ("send", 1, ("XREAD", "BLOCK", "0", "STREAMS", "s", "$")), ("blocked", 1),
        ("call", 0, "DEL", "s"), ("blocked", 1),
        ("call", 0, "XADD", "s", "667", "f", "v"), ("read", 1), ("blocked", 0),
        ("send", 1, ("XREAD", "BLOCK", "0", "STREAMS", "s", "$")), ("blocked", 1),
        ("call", 0, "SET", "s", "str"), ("blocked", 1),
        ("call", 0, "DEL", "s"), ("call", 0, "XADD", "s", "668-0", "f", "v"), ("read", 1), ("blocked", 0),
    ])


def test_xread_timeouts_and_client_unblock(sides: Sides) -> None:
    assert_scenario(sides, [
        ("call", 0, "XADD", "s", "1-0", "f", "v"),
        ("send", 1, ("XREAD", "BLOCK", TMS, "STREAMS", "s", "$")), ("blocked", 1),
        ("send", 2, ("XREADGROUP", "GROUP", "g", "c", "BLOCK", TMS, "STREAMS", "g", ">")),
        ("call", 0, "XGROUP", "CREATE", "s", "g", "$"),
        ("send", 3, ("XREADGROUP", "GROUP", "g", "c", "BLOCK", TMS, "STREAMS", "s", ">")), ("blocked", 2),
        ("read", 2),
        ("expire", 0), ("read", 1), ("read", 3),
        ("send", 1, ("XREAD", "BLOCK", "0", "STREAMS", "s", "$")), ("blocked", 1),
        ("call", 0, "CLIENT", "UNBLOCK", ("id", 1)), ("read", 1),
        ("send", 3, ("XREADGROUP", "GROUP", "g", "c", "BLOCK", "0", "STREAMS", "s", ">")), ("blocked", 1),
        ("call", 0, "CLIENT", "UNBLOCK", ("id", 3), "ERROR"), ("read", 3), ("blocked", 0),
        ("call", 0, "CLIENT", "UNBLOCK", ("id", 3), "ERROR"),
        *state("s", "g"),
    ])


def test_xreadgroup_consumers_share_new_entries(sides: Sides) -> None:
    assert_scenario(sides, [
        ("call", 0, "XGROUP", "CREATE", "s", "g", "$", "MKSTREAM"),
        ("send", 1, ("XREADGROUP", "GROUP", "g", "alice", "BLOCK", "0", "STREAMS", "s", ">")), ("blocked", 1),
        ("send", 2, ("XREADGROUP", "GROUP", "g", "bob", "COUNT", "1", "BLOCK", "0", "STREAMS", "s", ">")),
        ("blocked", 2),
        ("send", 3, ("XREADGROUP", "GROUP", "g", "carol", "NOACK", "BLOCK", "0", "STREAMS", "s", ">")),
        ("blocked", 3),
        ("send", 4, ("XREAD", "BLOCK", "0", "STREAMS", "s", "$")), ("blocked", 4),
        ("call", 0, "XADD", "s", "1-0", "f", "1"),
        ("read", 1), ("read", 4), ("blocked", 2),
        ("call", 0, "MULTI"), ("call", 0, "XADD", "s", "2-0", "f", "2"), ("call", 0, "XADD", "s", "3-0", "f", "3"),
        ("call", 0, "XADD", "s", "4-0", "f", "4"), ("call", 0, "EXEC"),
        ("read", 2), ("read", 3), ("blocked", 0),
        *state("s", "g"),
        ("call", 0, "XINFO", "STREAM", "s"),
    ])


def test_xreadgroup_interleaved_consumers_over_connections(sides: Sides) -> None:
    assert_scenario(sides, [
        ("call", 0, "XGROUP", "CREATE", "s", "g", "0", "MKSTREAM"),
        ("call", 0, "XGROUP", "CREATE", "s", "h", "0"),
        *[("call", 0, "XADD", "s", f"{i}-0", "n", str(i)) for i in range(1, 9)],
        ("call", 1, "XREADGROUP", "GROUP", "g", "alice", "COUNT", "2", "STREAMS", "s", ">"),
        ("call", 2, "XREADGROUP", "GROUP", "g", "bob", "COUNT", "2", "STREAMS", "s", ">"),
        ("call", 3, "XREADGROUP", "GROUP", "h", "alice", "COUNT", "3", "STREAMS", "s", ">"),
        ("call", 1, "XREADGROUP", "GROUP", "g", "alice", "COUNT", "1", "STREAMS", "s", ">"),
        ("call", 2, "XACK", "s", "g", "1-0", "3-0"),
        ("call", 3, "XCLAIM", "s", "g", "carol", "0", "2-0", "4-0", "JUSTID"),
        ("call", 1, "XREADGROUP", "GROUP", "g", "alice", "STREAMS", "s", "0"),
        ("call", 2, "XREADGROUP", "GROUP", "g", "bob", "STREAMS", "s", "0"),
        ("call", 3, "XAUTOCLAIM", "s", "g", "bob", "0", "0", "COUNT", "1"),
        ("call", 0, "XPENDING", "s", "g", "-", "+", "10", "bob"),
        ("call", 2, "XREADGROUP", "GROUP", "h", "bob", "STREAMS", "s", ">"),
        ("call", 1, "XGROUP", "DELCONSUMER", "s", "h", "alice"),
        ("call", 3, "XREADGROUP", "GROUP", "g", "carol", "COUNT", "10", "STREAMS", "s", ">"),
        *state("s", "g", "h"),
    ])


def test_xreadgroup_history_never_blocks(sides: Sides) -> None:
    assert_scenario(sides, [
        ("call", 0, "XGROUP", "CREATE", "s", "g", "$", "MKSTREAM"),
        ("call", 0, "XADD", "s", "666", "k", "v"), ("call", 0, "XDEL", "s", "666"),
        ("call", 1, "XREADGROUP", "GROUP", "g", "c", "BLOCK", "0", "STREAMS", "s", "0"),
        ("call", 1, "XREADGROUP", "GROUP", "g", "c", "BLOCK", "0", "STREAMS", "s", "700"),
        ("call", 0, "XADD", "s", "667", "k", "v"),
        ("call", 1, "XREADGROUP", "GROUP", "g", "c", "BLOCK", "0", "STREAMS", "s", "0"),
        ("call", 1, "XREADGROUP", "GROUP", "g", "c", "BLOCK", "0", "STREAMS", "s", ">"),
        ("call", 1, "XREADGROUP", "GROUP", "g", "c", "BLOCK", "0", "STREAMS", "s", "600"),
        ("call", 1, "XREADGROUP", "GROUP", "g", "c", "BLOCK", "0", "STREAMS", "s", "667"),
        ("call", 0, "XACK", "s", "g", "667"),
        ("call", 1, "XREADGROUP", "GROUP", "g", "c", "BLOCK", "0", "STREAMS", "s", "0"),
        # A stream that ran dry: > waits, then the next entry serves it.
        ("send", 1, ("XREADGROUP", "GROUP", "g", "c", "BLOCK", TMS, "STREAMS", "s", ">")), ("blocked", 1),
        ("call", 0, "MULTI"), ("call", 0, "XADD", "s", "668", "k", "v"), ("call", 0, "XDEL", "s", "668"),
        ("call", 0, "EXEC"), ("blocked", 1),
        ("expire", 0), ("read", 1),
        ("send", 1, ("XREADGROUP", "GROUP", "g", "c", "BLOCK", "0", "STREAMS", "s", ">")), ("blocked", 1),
        ("call", 0, "XADD", "s", "669", "k", "v"), ("read", 1), ("blocked", 0),
        *state("s", "g"),
    ])


def test_xreadgroup_woken_by_a_trim_only_when_entries_remain(sides: Sides) -> None:
    assert_scenario(sides, [
        ("call", 0, "XGROUP", "CREATE", "s", "g", "$", "MKSTREAM"),
        ("send", 1, ("XREADGROUP", "GROUP", "g", "c", "BLOCK", "0", "STREAMS", "s", ">")), ("blocked", 1),
        ("call", 0, "XADD", "s", "MAXLEN", "0", "1-0", "f", "v"), ("blocked", 1),
        ("call", 0, "XADD", "s", "MAXLEN", "1", "2-0", "f", "v"), ("read", 1), ("blocked", 0),
        *state("s", "g"),
    ])


def test_xreadgroup_stream_deleted_retyped_flushed(sides: Sides) -> None:
    def blocked_reader(i: int, key: str = "s") -> list[tuple]:
        return [("call", 0, "DEL", key), ("call", 0, "XADD", key, "666", "f", "v"),
                ("call", 0, "XGROUP", "CREATE", key, "g", "$"),
                ("send", i, ("XREADGROUP", "GROUP", "g", "alice", "BLOCK", "0", "STREAMS", key, ">")),
                ("blocked", 1)]

    assert_scenario(sides, [
        *blocked_reader(1), ("call", 0, "DEL", "s"), ("read", 1), ("blocked", 0),
        *blocked_reader(1), ("call", 0, "SET", "s", "v"), ("read", 1), ("blocked", 0),
        *blocked_reader(1), ("call", 0, "MULTI"), ("call", 0, "DEL", "s"), ("call", 0, "SADD", "s", "e"),
        ("call", 0, "EXEC"), ("read", 1), ("blocked", 0),
        *blocked_reader(1), ("call", 0, "FLUSHALL"), ("read", 1), ("blocked", 0),
        *blocked_reader(1), ("call", 0, "XGROUP", "DESTROY", "s", "g"), ("read", 1), ("blocked", 0),
        *blocked_reader(1), ("call", 0, "XGROUP", "CREATE", "s2", "g", "$", "MKSTREAM"),
        ("call", 0, "XADD", "s2", "100", "f1", "v1"), ("call", 0, "RENAME", "s2", "s"), ("read", 1), ("blocked", 0),
        *blocked_reader(1), ("call", 0, "XADD", "s3", "100", "f1", "v1"), ("call", 0, "RENAME", "s3", "s"),
        ("read", 1), ("blocked", 0),
        # SETID and DELCONSUMER wake nobody; the next XADD serves from the new position.
        *blocked_reader(1), ("call", 0, "XGROUP", "SETID", "s", "g", "0"), ("blocked", 1),
        ("call", 0, "XADD", "s", "667", "f", "v"), ("read", 1), ("blocked", 0),
        *blocked_reader(1), ("call", 0, "XGROUP", "DELCONSUMER", "s", "g", "alice"), ("blocked", 1),
        ("call", 0, "XGROUP", "CREATECONSUMER", "s", "g", "bob"), ("blocked", 1),
        ("call", 0, "XTRIM", "s", "MAXLEN", "0"), ("blocked", 1),
        ("call", 0, "XADD", "s", "700", "f", "v"), ("read", 1), ("blocked", 0),
        ("call", 0, "XINFO", "CONSUMERS", "s", "g"),
        ("call", 0, "XINFO", "GROUPS", "s"), ("call", 0, "XPENDING", "s", "g"),
    ])


def test_xreadgroup_swapped_db(sides: Sides) -> None:
    assert_scenario(sides, [
        ("call", 0, "SELECT", "9"), ("call", 0, "XADD", "s", "666", "f", "v"),
        ("call", 0, "XGROUP", "CREATE", "s", "g", "$"),
        ("call", 1, "SELECT", "9"),
        ("send", 1, ("XREADGROUP", "GROUP", "g", "alice", "BLOCK", "0", "STREAMS", "s", ">")), ("blocked", 1),
        ("call", 0, "SWAPDB", "4", "9"), ("read", 1), ("blocked", 0),
        ("call", 0, "SELECT", "4"), ("call", 0, "DEL", "s"), ("call", 0, "RPUSH", "s", "e"), ("call", 0, "SELECT", "9"),
        ("call", 0, "XADD", "s", "666", "f", "v"), ("call", 0, "XGROUP", "CREATE", "s", "g", "$"),
        ("send", 1, ("XREADGROUP", "GROUP", "g", "alice", "BLOCK", "0", "STREAMS", "s", ">")), ("blocked", 1),
        ("call", 0, "SWAPDB", "4", "9"), ("read", 1), ("blocked", 0),
        ("call", 0, "FLUSHALL"), ("call", 0, "SELECT", "0"),
    ])


def test_blocking_forms_inside_multi_and_eval_answer_at_once(sides: Sides) -> None:
    assert_scenario(sides, [
        ("call", 0, "XADD", "s", "1-0", "f", "v"),
        ("call", 0, "XGROUP", "CREATE", "s", "g", "$"),
        ("call", 1, "MULTI"),
        ("call", 1, "XREAD", "BLOCK", "0", "STREAMS", "s", "$"),
        ("call", 1, "XREAD", "BLOCK", "0", "STREAMS", "s", "0"),
        ("call", 1, "XREADGROUP", "GROUP", "g", "c", "BLOCK", "0", "STREAMS", "s", ">"),
        ("call", 1, "XADD", "s", "2-0", "f", "v"),
        ("call", 1, "XREAD", "BLOCK", "0", "STREAMS", "s", "1-0"),
        ("call", 1, "XREADGROUP", "GROUP", "g", "c", "BLOCK", "0", "STREAMS", "s", ">"),
        ("call", 1, "XREADGROUP", "GROUP", "g", "c", "BLOCK", "0", "STREAMS", "s", ">"),
        ("call", 1, "EXEC"),
        ("call", 1, "EVAL", "return redis.call('XREAD', 'BLOCK', '0', 'STREAMS', KEYS[1], '$')", "1", "s"),
        ("call", 1, "EVAL", "return redis.call('XREAD', 'BLOCK', '0', 'STREAMS', KEYS[1], '0')", "1", "s"),
        ("call", 1, "EVAL", "return redis.call('XREADGROUP', 'GROUP', 'g', 'd', 'BLOCK', '0', 'STREAMS', KEYS[1], '>')",
         "1", "s"),
        ("call", 1, "EVAL", "redis.call('XADD', KEYS[1], '3-0', 'f', 'v'); "
         "return redis.call('XREADGROUP', 'GROUP', 'g', 'd', 'BLOCK', '0', 'STREAMS', KEYS[1], '>')", "1", "s"),
        ("call", 1, "EVAL", "return redis.pcall('XREADGROUP', 'GROUP', 'nog', 'd', 'BLOCK', '0', 'STREAMS', "
         "KEYS[1], '>')", "1", "s"),
        ("call", 1, "FUNCTION", "LOAD", "REPLACE",
         "#!lua name=xs\nserver.register_function('xr', function(keys, args) "
         "return server.call('XREAD', 'BLOCK', '0', 'STREAMS', keys[1], '$') end)"),
        ("call", 1, "FCALL", "xr", "1", "s"),
        ("call", 1, "FUNCTION", "DELETE", "xs"),
        ("blocked", 0),
        *state("s", "g"),
    ])


def test_a_blocked_xreadgroup_served_after_a_script(sides: Sides) -> None:
    assert_scenario(sides, [
        ("call", 0, "XGROUP", "CREATE", "s", "g", "$", "MKSTREAM"),
        ("send", 1, ("XREADGROUP", "GROUP", "g", "c", "COUNT", "5", "BLOCK", "0", "STREAMS", "s", ">")),
        ("blocked", 1),
        ("send", 2, ("XREAD", "BLOCK", "0", "STREAMS", "s", "$")), ("blocked", 2),
        ("call", 0, "EVAL", "redis.call('XADD', KEYS[1], '1-0', 'a', '1'); "
         "redis.call('XADD', KEYS[1], '2-0', 'a', '2'); redis.call('XDEL', KEYS[1], '1-0'); return 1", "1", "s"),
        ("read", 1), ("read", 2), ("blocked", 0),
        *state("s", "g"),
    ])


def test_xreadgroup_blocked_on_several_streams(sides: Sides) -> None:
    assert_scenario(sides, [
        ("call", 0, "XGROUP", "CREATE", "a", "g", "$", "MKSTREAM"),
        ("call", 0, "XGROUP", "CREATE", "b", "g", "$", "MKSTREAM"),
        ("send", 1, ("XREADGROUP", "GROUP", "g", "c1", "COUNT", "2", "BLOCK", "0", "STREAMS", "a", "b", ">", ">")),
        ("blocked", 1),
        ("send", 2, ("XREAD", "COUNT", "1", "BLOCK", "0", "STREAMS", "a", "b", "$", "$")), ("blocked", 2),
        ("info", "total_blocking_keys"),
        ("call", 0, "XADD", "b", "1-0", "f", "v"), ("read", 1), ("read", 2), ("blocked", 0),
        ("send", 1, ("XREADGROUP", "GROUP", "g", "c1", "BLOCK", "0", "STREAMS", "a", "b", ">", ">")), ("blocked", 1),
        ("call", 0, "MULTI"), ("call", 0, "XADD", "a", "1-0", "f", "v"), ("call", 0, "XADD", "b", "2-0", "f", "v"),
        ("call", 0, "EXEC"), ("read", 1), ("blocked", 0),
        *state("a", "g"), *state("b", "g"),
    ])


def test_entries_taken_before_the_blocked_reader_is_served(sides: Sides) -> None:
    """A transaction adds an entry and reads it for another consumer of
    the same group: the blocked consumer finds nothing and keeps waiting."""
    assert_scenario(sides, [
        ("call", 0, "XGROUP", "CREATE", "s", "g", "$", "MKSTREAM"),
        ("send", 1, ("XREADGROUP", "GROUP", "g", "waiter", "BLOCK", "0", "STREAMS", "s", ">")), ("blocked", 1),
        ("call", 0, "MULTI"), ("call", 0, "XADD", "s", "1-0", "f", "v"),
        ("call", 0, "XREADGROUP", "GROUP", "g", "eager", "STREAMS", "s", ">"), ("call", 0, "EXEC"),
        ("blocked", 1),
        ("call", 2, "XADD", "s", "2-0", "f", "v"), ("read", 1), ("blocked", 0),
        *state("s", "g"),
    ])


def test_one_client_blocks_again_after_being_served(sides: Sides) -> None:
    assert_scenario(sides, [
        ("call", 0, "XGROUP", "CREATE", "s", "g", "$", "MKSTREAM"),
        *[step for i in range(1, 4) for step in (
            ("send", 1, ("XREADGROUP", "GROUP", "g", "loop", "COUNT", "1", "BLOCK", "0", "STREAMS", "s", ">")),
            ("blocked", 1),
            ("call", 2, "XADD", "s", f"{i}-0", "n", str(i)), ("read", 1), ("blocked", 0),
            ("call", 1, "XACK", "s", "g", f"{i}-0"))],
        *state("s", "g"),
    ])

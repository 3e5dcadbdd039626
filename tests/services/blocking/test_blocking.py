"""Blocking commands against Valkey, byte for byte, with several clients.

Each scenario is a list of steps run on both servers: clients that block,
the client that wakes them, and what each one reads, in RESP2 and RESP3.
A step's replies and the keyspace afterwards must be the same bytes on
both sides. Timeouts run on the test clock here (TRAFIKEY.CLOCK ADVANCE
times a client out at once) and on a short real timeout on Valkey; client
ids are looked up on each side.
"""

from __future__ import annotations

from helpers import blocking
from helpers.blocking import TMS, Side, T, assert_scenario
from helpers.resp_wire import encode

# The fixtures of helpers/blocking.py: the protocol (2 and 3) and the two sides.
proto = blocking.proto
sides = blocking.sides

# -- serving -----------------------------------------------------------------------------


def test_clients_served_in_the_order_they_blocked(sides: tuple[Side, Side]) -> None:
    assert_scenario(sides, [
        ("send", 1, ("BZPOPMIN", "z", "0")), ("blocked", 1),
        ("send", 2, ("BZPOPMAX", "z", "0")), ("blocked", 2),
        ("send", 3, ("BZMPOP", "0", "1", "z", "MIN", "COUNT", "2")), ("blocked", 3),
        ("info", "blocked_clients"), ("info", "total_blocking_keys"), ("info", "clients_in_timeout_table"),
        ("call", 0, "ZADD", "z", "1", "a", "2", "b", "3", "c", "4", "d", "5", "e"),
        ("read", 1), ("read", 2), ("read", 3), ("blocked", 0),
        ("info", "blocked_clients"), ("info", "total_blocking_keys"),
        ("keys",),
    ])


def test_one_member_serves_one_client(sides: tuple[Side, Side]) -> None:
    assert_scenario(sides, [
        ("send", 1, ("BZPOPMIN", "z", "0")), ("blocked", 1),
        ("send", 2, ("BZPOPMIN", "z", "0")), ("blocked", 2),
        ("call", 0, "ZADD", "z", "1", "a"), ("read", 1), ("blocked", 1),
        ("info", "blocked_clients"),
        ("call", 0, "ZADD", "z", "2", "b", "3", "c"), ("read", 2), ("blocked", 0),
        ("keys",),
    ])


def test_serve_order_across_keys_after_a_transaction(sides: tuple[Side, Side]) -> None:
    # Keys are served in the order the transaction made them ready; each
    # key's clients in the order they blocked.
    assert_scenario(sides, [
        ("send", 1, ("BZPOPMIN", "b", "a", "0")), ("blocked", 1),
        ("send", 2, ("BZPOPMAX", "a", "0")), ("blocked", 2),
        ("send", 3, ("BZMPOP", "0", "2", "a", "b", "MAX", "COUNT", "10")), ("blocked", 3),
        ("call", 0, "MULTI"),
        ("call", 0, "ZADD", "a", "1", "a1", "2", "a2"),
        ("call", 0, "ZADD", "b", "1", "b1"),
        ("call", 0, "ZADD", "a", "3", "a3"),
        ("call", 0, "EXEC"),
        ("read", 1), ("read", 2), ("read", 3), ("blocked", 0),
        ("keys",),
    ])


def test_a_key_added_and_removed_in_a_transaction_serves_nobody(sides: tuple[Side, Side]) -> None:
    assert_scenario(sides, [
        ("send", 1, ("BZPOPMIN", "z", "0"), ("PING", "after")), ("blocked", 1),
        ("call", 0, "MULTI"), ("call", 0, "ZADD", "z", "1", "a"), ("call", 0, "DEL", "z"),
        ("call", 0, "EXEC"),
        ("info", "blocked_clients"),
        ("call", 0, "SET", "z", "string"), ("info", "blocked_clients"),
        ("call", 0, "DEL", "z"), ("call", 0, "ZADD", "z", "7", "x"),
        ("read", 1), ("read", 1), ("blocked", 0), ("keys",),
    ])


def test_the_waker_pipeline_runs_after_the_served_client(sides: tuple[Side, Side]) -> None:
    # The blocked client is served right after ZADD, before the ZPOPMIN
    # that came in the same read.
    assert_scenario(sides, [
        ("send", 1, ("BZPOPMIN", "z", "0")), ("blocked", 1),
        ("send", 0, ("ZADD", "z", "1", "a"), ("ZPOPMIN", "z"), ("ZCARD", "z")),
        ("read", 0), ("read", 0), ("read", 0), ("read", 1), ("keys",),
    ])


def test_a_script_serves_after_it_ends(sides: tuple[Side, Side]) -> None:
    assert_scenario(sides, [
        ("send", 1, ("BZPOPMIN", "z", "0")), ("blocked", 1),
        ("call", 0, "EVAL", "redis.call('zadd', KEYS[1], 1, 'a'); redis.call('zadd', KEYS[1], 2, 'b');"
                            " return redis.call('zpopmin', KEYS[1])", "1", "z"),
        ("read", 1), ("keys",),
    ])


def test_the_blocked_client_pipeline_continues(sides: tuple[Side, Side]) -> None:
    assert_scenario(sides, [
        ("send", 1, ("BZPOPMIN", "z", "0"), ("ZCARD", "z"), ("BZPOPMAX", "z", "0"), ("RESET",), ("PING",)),
        ("blocked", 1), ("info", "blocked_clients"),
        ("call", 0, "ZADD", "z", "1", "a", "2", "b"),
        ("read", 1), ("read", 1), ("read", 1), ("read", 1), ("read", 1), ("keys",),
    ])


def test_blocked_in_another_database(sides: tuple[Side, Side]) -> None:
    assert_scenario(sides, [
        ("call", 1, "SELECT", "9"), ("send", 1, ("BZPOPMIN", "z", "0")), ("blocked", 1),
        ("call", 0, "ZADD", "z", "1", "a"), ("info", "blocked_clients"),
        ("call", 0, "SELECT", "9"), ("call", 0, "ZADD", "z", "2", "b"),
        ("read", 1), ("keys",),
    ])


def test_swapdb_serves_a_key_now_present(sides: tuple[Side, Side]) -> None:
    assert_scenario(sides, [
        ("send", 1, ("BZPOPMIN", "z", "0")), ("blocked", 1),
        ("call", 0, "SELECT", "9"), ("call", 0, "ZADD", "z", "2", "b"),
        ("call", 0, "SWAPDB", "0", "9"), ("read", 1), ("keys",),
    ])


# -- ending a wait without the key ------------------------------------------------------------


def test_timeouts(sides: tuple[Side, Side]) -> None:
    assert_scenario(sides, [
        ("send", 1, ("BZPOPMIN", "z", "y", T), ("PING",)), ("blocked", 1),
        ("info", "clients_in_timeout_table"),
        ("expire", 0), ("read", 1), ("read", 1),
        ("send", 2, ("BZMPOP", T, "2", "z", "y", "MAX", "COUNT", "3")), ("blocked", 1),
        ("expire", 0), ("read", 2),
        ("send", 3, ("BZPOPMAX", "z", T)), ("blocked", 1),
        ("expire", 0), ("read", 3), ("keys",),
    ])


def test_client_unblock(sides: tuple[Side, Side]) -> None:
    assert_scenario(sides, [
        ("send", 1, ("BZPOPMIN", "z", "0"), ("PING", "next")), ("blocked", 1),
        ("call", 0, "CLIENT", "UNBLOCK", ("id", 1)), ("read", 1), ("read", 1),
        ("send", 1, ("BZMPOP", "0", "1", "z", "MIN")), ("blocked", 1),
        ("call", 0, "CLIENT", "UNBLOCK", ("id", 1), "ERROR"), ("read", 1),
        ("send", 1, ("BZPOPMAX", "z", "0")), ("blocked", 1),
        ("call", 0, "CLIENT", "UNBLOCK", ("id", 1), "timeout"), ("read", 1),
        ("call", 0, "CLIENT", "UNBLOCK", ("id", 1)),
        ("call", 0, "CLIENT", "UNBLOCK", ("id", 1), "other"),
        ("call", 0, "CLIENT", "UNBLOCK", "notanumber"),
        ("call", 0, "CLIENT", "UNBLOCK", "999999"),
        ("call", 0, "CLIENT", "UNBLOCK", ("id", 1), "ERROR", "extra"),
        ("call", 0, "ZADD", "z", "1", "a"), ("keys",),
    ])


def test_kill_a_blocked_client(sides: tuple[Side, Side]) -> None:
    assert_scenario(sides, [
        ("send", 1, ("BZPOPMIN", "z", "0")), ("blocked", 1),
        ("send", 2, ("BZPOPMIN", "z", "0")), ("blocked", 2),
        ("call", 0, "CLIENT", "KILL", "ID", ("id", 1)), ("blocked", 1),
        ("info", "total_blocking_keys"),
        ("call", 0, "ZADD", "z", "1", "a", "2", "b"), ("read", 2), ("blocked", 0),
        ("info", "total_blocking_keys"), ("keys",),
    ])


def test_disconnect_of_a_blocked_client(sides: tuple[Side, Side]) -> None:
    v, t = sides
    for side in (v, t):
        side.conn(1).send_raw(encode("BZPOPMIN", "z", "0"))
        side.blocked(1)
        side.conns.pop(1).close()
        side.blocked(0)
    assert_scenario(sides, [("info", "total_blocking_keys"), ("call", 0, "ZADD", "z", "1", "a"), ("keys",)])


def test_real_time_timeout(sides: tuple[Side, Side]) -> None:
    # The server's clock running as the wall clock: a short real timeout.
    assert_scenario(sides, [
        ("call", 1, "BZPOPMIN", "z", "0.02"), ("call", 1, "BZMPOP", "0.01", "1", "z", "MIN"),
        ("call", 1, "WAIT", "1", "20"), ("call", 1, "WAITAOF", "0", "1", "20"),
    ])


# -- answering at once ------------------------------------------------------------------------


def test_inside_multi_and_scripts_answers_at_once(sides: tuple[Side, Side]) -> None:
    assert_scenario(sides, [
        ("call", 0, "MULTI"), ("call", 0, "BZPOPMIN", "z", "0"), ("call", 0, "BZMPOP", "0", "1", "z", "MAX"),
        ("call", 0, "BZPOPMAX", "z", "10"), ("call", 0, "WAIT", "1", "0"), ("call", 0, "WAITAOF", "0", "1", "0"),
        ("call", 0, "EXEC"),
        ("call", 0, "EVAL", "return redis.call('bzpopmin', KEYS[1], 0)", "1", "z"),
        ("call", 0, "EVAL", "return redis.call('bzmpop', 0, 1, KEYS[1], 'min')", "1", "z"),
        ("call", 0, "ZADD", "z", "1", "a", "2", "b"),
        ("call", 0, "MULTI"), ("call", 0, "BZPOPMIN", "z", "0"), ("call", 0, "BZMPOP", "0", "1", "z", "MAX"),
        ("call", 0, "EXEC"), ("keys",),
    ])


def test_non_blocking_replies(sides: tuple[Side, Side]) -> None:
    assert_scenario(sides, [
        ("call", 0, "ZADD", "z", "1", "a", "2.5", "b", "3", "c", "-inf", "m", "inf", "n"),
        ("call", 0, "ZADD", "y", "1", "q"),
        ("call", 0, "BZPOPMIN", "x", "z", "0"), ("call", 0, "BZPOPMAX", "z", "y", "0"),
        ("call", 0, "BZMPOP", "0", "3", "x", "y", "z", "MIN"),
        ("call", 0, "BZMPOP", "0", "2", "y", "z", "MAX", "COUNT", "2"),
        ("call", 0, "ZMPOP", "1", "x", "MIN"), ("call", 0, "ZMPOP", "2", "x", "z", "min", "count", "100"),
        ("call", 0, "ZMPOP", "1", "z", "MAX"), ("keys",),
    ])


def test_refusals_write_nothing(sides: tuple[Side, Side]) -> None:
    assert_scenario(sides, [
        ("call", 0, "ZADD", "z", "1", "a"), ("call", 0, "SET", "s", "v"),
        ("call", 0, "BZPOPMIN", "z", "x"), ("call", 0, "BZPOPMIN", "z", "-1"),
        ("call", 0, "BZPOPMIN", "z", "-0.0001"), ("call", 0, "BZPOPMIN", "z", "inf"),
        ("call", 0, "BZPOPMIN", "z", "-inf"), ("call", 0, "BZPOPMIN", "z", "nan"),
        ("call", 0, "BZPOPMIN", "z", " 1"), ("call", 0, "BZPOPMIN", "z", "1e300"),
        ("call", 0, "BZPOPMIN", "z", "9223372036854775"), ("call", 0, "BZPOPMAX", "s", "0"),
        ("call", 0, "BZPOPMAX", "s", "z", "0"), ("call", 0, "BZPOPMIN", "z"),
        ("call", 0, "ZMPOP", "0", "z", "MIN"), ("call", 0, "ZMPOP", "-1", "z", "MIN"),
        ("call", 0, "ZMPOP", "x", "z", "MIN"), ("call", 0, "ZMPOP", "2", "z", "MIN"),
        ("call", 0, "ZMPOP", "1", "z", "MID"), ("call", 0, "ZMPOP", "1", "z", "MIN", "COUNT"),
        ("call", 0, "ZMPOP", "1", "z", "MIN", "COUNT", "0"), ("call", 0, "ZMPOP", "1", "z", "MIN", "COUNT", "-2"),
        ("call", 0, "ZMPOP", "1", "z", "MIN", "COUNT", "1", "COUNT", "1"),
        ("call", 0, "ZMPOP", "1", "s", "MIN"), ("call", 0, "ZMPOP", "2", "s", "z", "MIN"),
        ("call", 0, "ZMPOP", "1", "z", "MIN", "LIMIT", "1"),
        ("call", 0, "BZMPOP", "x", "1", "z", "MIN"), ("call", 0, "BZMPOP", "-1", "1", "z", "MIN"),
        ("call", 0, "BZMPOP", "x", "0", "z", "MIN"), ("call", 0, "BZMPOP", "x", "1", "z", "MAX", "COUNT", "0"),
        ("call", 0, "BZMPOP", "0", "1", "s", "MIN"), ("call", 0, "BZMPOP", "0", "1", "z"),
        ("keys",),
    ])


def test_wait_and_waitaof(sides: tuple[Side, Side]) -> None:
    assert_scenario(sides, [
        ("call", 0, "WAIT", "0", "0"), ("call", 0, "WAIT", "-1", "5"), ("call", 0, "WAIT", "x", "0"),
        ("call", 0, "WAIT", "1", "x"), ("call", 0, "WAIT", "1", "-1"), ("call", 0, "WAIT", "1", "1.5"),
        ("call", 0, "WAITAOF", "0", "0", "0"), ("call", 0, "WAITAOF", "2", "0", "0"),
        ("call", 0, "WAITAOF", "x", "0", "0"), ("call", 0, "WAITAOF", "-1", "0", "0"),
        ("call", 0, "WAITAOF", "1", "0", "0"), ("call", 0, "WAITAOF", "0", "-1", "0"),
        ("call", 0, "WAITAOF", "0", "x", "0"), ("call", 0, "WAITAOF", "0", "0", "-1"),
        ("call", 0, "WAITAOF", "0", "0", "x"),
        ("send", 1, ("WAIT", "1", "0"), ("PING",)), ("blocked", 1),
        ("call", 0, "CLIENT", "UNBLOCK", ("id", 1)), ("read", 1), ("read", 1),
        ("send", 1, ("WAITAOF", "0", "1", "0")), ("blocked", 1),
        ("call", 0, "CLIENT", "UNBLOCK", ("id", 1), "ERROR"), ("read", 1),
        ("send", 2, ("WAIT", "3", TMS)), ("blocked", 1), ("expire", 0), ("read", 2),
    ])


def test_client_list_of_a_blocked_client(sides: tuple[Side, Side]) -> None:
    v, t = sides
    lines = []
    for side in (v, t):
        side.conn(1).call("CLIENT", "SETNAME", "waiter")
        side.conn(1).send_raw(encode("BZPOPMIN", "z", "k", "0"))
        side.blocked(1)
        text = side.ctl.call("CLIENT", "LIST").decode()
        line = next(x for x in text.split("\n") if "name=waiter" in x)
        fields = dict(f.split("=", 1) for f in line.split(" "))
        lines.append({k: fields[k] for k in ("flags", "cmd", "multi", "watch", "db", "events", "argv-mem", "tot-mem",
                                             "tot-cmds", "qbuf", "obl")})
        info = side.ctl.call("CLIENT", "INFO")
        assert b"flags=N" in info
        side.ctl.call("CLIENT", "UNBLOCK", side.ids[1])
        side.conn(1).read_reply()
    assert lines[1] == lines[0]


# -- with CLIENT PAUSE ---------------------------------------------------------------------------


def test_pause_write_holds_a_served_pop_until_unpause(sides: tuple[Side, Side]) -> None:
    assert_scenario(sides, [
        ("call", 0, "FUNCTION", "LOAD", "REPLACE", "#!lua name=blk\nserver.register_function{function_name='ro', "
                    "callback=function() return 'hello' end, flags={'no-writes'}}"),
        ("send", 1, ("BZPOPMIN", "z", "0")), ("blocked", 1),
        ("call", 0, "MULTI"), ("call", 0, "ZADD", "z", "1", "a"),
        ("call", 0, "CLIENT", "PAUSE", "100000", "WRITE"), ("call", 0, "EXEC"),
        ("blocked", 1), ("call", 2, "ZCARD", "z"),
        ("call", 2, "SCRIPT", "LOAD", "#!lua flags=no-writes\nreturn 2"),
        ("call", 2, "EVALSHA", "ae33f9227913b24d053a555637f98260b23bd3a3", "0"),
        ("call", 2, "FCALL", "ro", "0"), ("call", 2, "FCALL_RO", "ro", "0"), ("call", 2, "FUNCTION", "LIST"),
        ("call", 2, "EVAL", "#!lua flags=no-writes\nreturn redis.call('zcard', KEYS[1])", "1", "z"),
        ("call", 2, "EVAL_RO", "return redis.call('zcard', KEYS[1])", "1", "z"),
        ("call", 2, "MULTI"), ("call", 2, "EVAL", "#!lua flags=no-writes\nreturn 7", "0"), ("call", 2, "EXEC"),
        ("info", "blocked_clients"),
        ("call", 0, "CLIENT", "UNPAUSE"), ("read", 1), ("blocked", 0), ("keys",),
        ("call", 0, "FUNCTION", "FLUSH"),
    ])


def test_statistics_of_blocked_commands(sides: tuple[Side, Side]) -> None:
    # Counted once when served, timed out or unblocked, never when blocking.
    assert_scenario(sides, [
        ("call", 0, "CONFIG", "RESETSTAT"),
        ("send", 1, ("BZPOPMIN", "z", "0")), ("blocked", 1), ("stats", "bzpopmin"),
        ("call", 0, "ZADD", "z", "1", "a"), ("read", 1),
        ("send", 1, ("BZPOPMIN", "z", T)), ("blocked", 1), ("expire", 0), ("read", 1),
        ("send", 1, ("BZMPOP", "0", "1", "z", "MIN")), ("blocked", 1),
        ("call", 0, "CLIENT", "UNBLOCK", ("id", 1), "ERROR"), ("read", 1),
        ("send", 1, ("BZPOPMAX", "z", "0")), ("blocked", 1),
        ("call", 0, "CLIENT", "UNBLOCK", ("id", 1)), ("read", 1),
        ("stats", "bzpopmin", "bzmpop", "bzpopmax", "zadd"),
    ])


def test_client_unblock_does_not_release_a_paused_client(sides: tuple[Side, Side]) -> None:
    assert_scenario(sides, [
        ("call", 0, "CLIENT", "PAUSE", "100000", "WRITE"),
        ("send", 1, ("SET", "k", "v")), ("blocked", 1),
        ("call", 0, "CLIENT", "UNBLOCK", ("id", 1)), ("call", 0, "CLIENT", "UNBLOCK", ("id", 1), "ERROR"),
        ("keys",), ("call", 0, "CLIENT", "UNPAUSE"), ("read", 1), ("keys",),
    ])


def test_monitor_sees_a_blocking_command_once(sides: tuple[Side, Side]) -> None:
    v, t = sides
    seen = []
    for side in (v, t):
        mon = side.conn(9)
        mon.call("MONITOR")
        side.conn(1).send_raw(encode("BZPOPMIN", "z", "0"))
        side.blocked(1)
        side.conn(0).call("ZADD", "z", "1", "a")
        side.conn(1).read_reply()
        side.conn(0).call("PING", "end")
        lines = []
        while not lines or b'"PING" "end"' not in lines[-1]:
            lines.append(mon.read_reply().split(b"] ", 1)[1])
        seen.append(lines)
    assert seen[1] == seen[0]


def test_keys_made_by_other_commands_serve(sides: tuple[Side, Side]) -> None:
    # dbAdd is the one signal: every command that adds a sorted set serves.
    assert_scenario(sides, [
        ("call", 0, "ZADD", "src", "1", "a", "2", "b", "3", "c", "4", "d"),
        ("send", 1, ("BZPOPMIN", "u", "0")), ("blocked", 1),
        ("call", 0, "ZUNIONSTORE", "u", "1", "src"), ("read", 1),
        ("send", 1, ("BZPOPMAX", "r", "0")), ("blocked", 1),
        ("call", 0, "ZRANGESTORE", "r", "src", "0", "1"), ("read", 1),
        ("send", 1, ("BZPOPMIN", "n", "0")), ("blocked", 1),
        ("call", 0, "RENAME", "u", "n"), ("read", 1),
        ("send", 1, ("BZPOPMIN", "cp", "0")), ("blocked", 1),
        ("call", 0, "COPY", "src", "cp"), ("read", 1),
        ("call", 2, "SELECT", "9"), ("send", 2, ("BZMPOP", "0", "1", "src", "MAX")), ("blocked", 1),
        ("call", 0, "MOVE", "src", "9"), ("read", 2),
        ("send", 1, ("BZPOPMIN", "e", "0")), ("blocked", 1),
        ("call", 0, "ZADD", "e", "XX", "1", "a"), ("call", 0, "ZINTERSTORE", "e", "2", "cp", "missing"),
        ("info", "blocked_clients"), ("call", 0, "ZADD", "e", "NX", "5", "e"), ("read", 1),
        ("keys",),
    ])


_SLOW = """
redis.call('zadd', KEYS[1], 2, 'b')
local n = 0
for i = 1, tonumber(ARGV[1]) do n = n + i % 7 end
redis.call('zadd', KEYS[1], 1, 'a')
return 1
"""


def test_a_busy_script_serves_when_it_ends(sides: tuple[Side, Side]) -> None:
    # Other clients are answered (BUSY) while the script runs; the blocked
    # client is served only after it, so it gets the member added last.
    try:
        assert_scenario(sides, [
            ("call", 0, "CONFIG", "SET", "busy-reply-threshold", "50"),
            ("send", 1, ("BZPOPMIN", "z", "0")), ("blocked", 1),
            ("send", 0, ("EVAL", _SLOW, "1", "z", "10000000")), ("busy", 2),
            ("read", 0), ("read", 1), ("keys",),
        ])
    finally:
        for side in sides:
            side.ctl.call("CONFIG", "SET", "busy-reply-threshold", "5000")


def test_a_blocked_client_is_closed_past_the_query_buffer_limit(sides: tuple[Side, Side]) -> None:
    # Still read while it waits, it is held to client-query-buffer-limit.
    for side in sides:
        side.ctl.call("CONFIG", "SET", "client-query-buffer-limit", "1mb")
        try:
            waiter = side.conn(1)
            waiter.send_raw(encode("BZPOPMIN", "z", "0"))
            side.blocked(1)
            assert waiter.send_until_closed(encode("SET", "k", b"x" * (1 << 20)) * 2) == b""
            side.blocked(0)
            assert side.ctl.call("EXISTS", "k") == b":0\r\n"
        finally:
            side.ctl.call("CONFIG", "SET", "client-query-buffer-limit", "1gb")


def test_a_blocking_command_sent_during_a_pause_waits_for_it_then_for_its_key(sides: tuple[Side, Side]) -> None:
    assert_scenario(sides, [
        ("call", 0, "CLIENT", "PAUSE", "100000", "WRITE"),
        ("send", 1, ("BZPOPMIN", "z", "0"), ("PING", "after")), ("blocked", 1),
        ("info", "total_blocking_keys"), ("info", "clients_in_timeout_table"),
        ("call", 0, "CLIENT", "UNPAUSE"), ("blocked", 1), ("info", "total_blocking_keys"),
        ("call", 0, "ZADD", "z", "1", "a"), ("read", 1), ("read", 1), ("blocked", 0), ("keys",),
    ])


def test_a_client_blocked_after_a_pause_is_still_read(sides: tuple[Side, Side]) -> None:
    v, t = sides
    for side in (v, t):
        side.ctl.call("CLIENT", "PAUSE", "100000", "WRITE")
        side.conn(1).send_raw(encode("BZPOPMIN", "z", "0"))
        side.blocked(1)
        side.ctl.call("CLIENT", "UNPAUSE")
        side.blocked(1)
        side.conns.pop(1).close()  # its disconnect is seen while it waits for its key
        side.blocked(0)


def test_unblocked_error_counts_as_a_rejected_call() -> None:
    """CLIENT UNBLOCK ... ERROR: the blocked command's stats as Valkey 9.1
    keeps them (a call, a rejected call, no failed one) and the UNBLOCKED
    error counted once."""
    import re
    import time

    from helpers.resp_wire import Wire, wait_blocked
    from helpers.servers import own_pair

    seen = []
    with own_pair() as pair:
        for p in pair:
            r = Wire(p.port)
            r.call("CONFIG", "RESETSTAT")
            rd = Wire(p.port)
            rid = int(rd.call("CLIENT", "ID")[1:-2])
            rd.sock.sendall(encode("BLPOP", "list1", 0))
            wait_blocked(r, 1)
            assert r.call("CLIENT", "UNBLOCK", rid, "ERROR") == b":1\r\n"
            assert rd.read_reply() == b"-UNBLOCKED client unblocked via CLIENT UNBLOCK\r\n"
            time.sleep(0.05)
            info = r.call("INFO", "everything").decode()
            stat = re.search(r"cmdstat_blpop:calls=(\d+),.*,rejected_calls=(\d+),failed_calls=(\d+)", info)
            assert stat is not None
            seen.append((stat.groups(), re.findall(r"errorstat_\w+:count=\d+|total_error_replies:\d+", info)))
    assert seen[0] == seen[1] == (("1", "1", "0"), ["total_error_replies:1", "errorstat_UNBLOCKED:count=1"])

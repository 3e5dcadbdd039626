"""BLPOP, BRPOP, BLMOVE, BRPOPLPUSH and BLMPOP against Valkey, with several
clients: who is served, in which order, by which push, and what each reads.

The scenario runner and its two sides (Valkey on a short real timeout,
trafikey-server on its test clock) are the blocking layer's own
(tests/helpers/blocking.py); the list's state is read back with
LRANGE steps.
"""

from __future__ import annotations

from helpers import blocking as shared
from helpers.blocking import T, assert_scenario

# The blocking layer's fixtures: the protocol (2 and 3) and the two sides.
proto = shared.proto
sides = shared.sides
Sides = tuple


def state(*keys: str) -> list[tuple]:
    return [("call", 0, "LRANGE", k, "0", "-1") for k in keys] + [("call", 0, "DBSIZE")]


def test_clients_served_in_the_order_they_blocked(sides: Sides) -> None:
    assert_scenario(sides, [
        ("send", 1, ("BLPOP", "l", "0")), ("blocked", 1),
        ("send", 2, ("BRPOP", "l", "0")), ("blocked", 2),
        ("send", 3, ("BLMPOP", "0", "1", "l", "LEFT", "COUNT", "2")), ("blocked", 3),
        ("send", 4, ("BLMOVE", "l", "d", "RIGHT", "LEFT", "0")), ("blocked", 4),
        ("send", 5, ("BRPOPLPUSH", "l", "d", "0")), ("blocked", 5),
        ("info", "blocked_clients"), ("info", "total_blocking_keys"),
        ("call", 0, "RPUSH", "l", "a", "b", "c", "d", "e", "f", "g"),
        ("read", 1), ("read", 2), ("read", 3), ("read", 4), ("read", 5), ("blocked", 0),
        *state("l", "d"),
    ])


def test_one_element_serves_one_client(sides: Sides) -> None:
    assert_scenario(sides, [
        ("send", 1, ("BLPOP", "l", "0")), ("blocked", 1),
        ("send", 2, ("BRPOP", "l", "0")), ("blocked", 2),
        ("call", 0, "LPUSH", "l", "a"), ("read", 1), ("blocked", 1),
        ("call", 0, "RPUSH", "l", "b", "c"), ("read", 2), ("blocked", 0),
        *state("l"),
    ])


def test_first_non_empty_key_and_serve_order_after_a_transaction(sides: Sides) -> None:
    assert_scenario(sides, [
        ("send", 1, ("BLPOP", "b", "a", "0")), ("blocked", 1),
        ("send", 2, ("BRPOP", "a", "0")), ("blocked", 2),
        ("send", 3, ("BLMPOP", "0", "2", "a", "b", "RIGHT", "COUNT", "10")), ("blocked", 3),
        ("call", 0, "MULTI"),
        ("call", 0, "RPUSH", "a", "a1", "a2"),
        ("call", 0, "RPUSH", "b", "b1"),
        ("call", 0, "RPUSH", "a", "a3"),
        ("call", 0, "EXEC"),
        ("read", 1), ("read", 2), ("read", 3), ("blocked", 0),
        *state("a", "b"),
    ])


def test_a_script_serves_after_it_ends(sides: Sides) -> None:
    assert_scenario(sides, [
        ("send", 1, ("BLPOP", "l", "0")), ("blocked", 1),
        ("call", 0, "EVAL", "redis.call('rpush', KEYS[1], 'a', 'b'); return redis.call('lpop', KEYS[1])", "1", "l"),
        ("read", 1), ("blocked", 0), *state("l"),
    ])


def test_a_push_and_pop_in_a_transaction_serves_nobody(sides: Sides) -> None:
    assert_scenario(sides, [
        ("send", 1, ("BLPOP", "l", "0"), ("PING", "after")), ("blocked", 1),
        ("call", 0, "MULTI"), ("call", 0, "RPUSH", "l", "a"), ("call", 0, "LPOP", "l"), ("call", 0, "EXEC"),
        ("info", "blocked_clients"),
        ("call", 0, "SET", "l", "string"), ("info", "blocked_clients"),
        ("call", 0, "DEL", "l"), ("call", 0, "LPUSH", "l", "x"),
        ("read", 1), ("read", 1), ("blocked", 0), *state("l"),
    ])


def test_blmove_wakes_the_client_waiting_on_its_destination(sides: Sides) -> None:
    assert_scenario(sides, [
        ("send", 1, ("BLMOVE", "a", "b", "LEFT", "RIGHT", "0")), ("blocked", 1),
        ("send", 2, ("BRPOPLPUSH", "b", "c", "0")), ("blocked", 2),
        ("send", 3, ("BLPOP", "c", "0")), ("blocked", 3),
        ("call", 0, "RPUSH", "a", "x", "y"),
        ("read", 1), ("read", 2), ("read", 3), ("blocked", 0),
        *state("a", "b", "c"),
    ])


def test_blmove_onto_its_own_source(sides: Sides) -> None:
    assert_scenario(sides, [
        ("send", 1, ("BLMOVE", "a", "a", "LEFT", "RIGHT", "0")), ("blocked", 1),
        ("send", 2, ("BLPOP", "a", "0")), ("blocked", 2),
        ("call", 0, "RPUSH", "a", "x", "y"),
        ("read", 1), ("read", 2), ("blocked", 0), *state("a"),
    ])


def test_a_wrong_type_waits_for_a_list(sides: Sides) -> None:
    assert_scenario(sides, [
        ("send", 1, ("BLPOP", "k", "0")), ("blocked", 1),
        ("call", 0, "ZADD", "k", "1", "a"), ("info", "blocked_clients"),
        ("call", 0, "DEL", "k"), ("call", 0, "RPUSH", "k", "v"),
        ("read", 1), ("blocked", 0),
        ("send", 2, ("BZPOPMIN", "z", "0")), ("blocked", 1),
        ("call", 0, "RPUSH", "z", "v"), ("info", "blocked_clients"),
        ("call", 0, "DEL", "z"), ("call", 0, "ZADD", "z", "1", "m"), ("read", 2), ("blocked", 0),
    ])


def test_timeouts_and_unblock(sides: Sides) -> None:
    assert_scenario(sides, [
        ("send", 1, ("BLPOP", "l", T)), ("blocked", 1),
        ("send", 2, ("BLMOVE", "l", "d", "LEFT", "LEFT", T)), ("blocked", 2),
        ("send", 3, ("BLMPOP", T, "1", "l", "LEFT")), ("blocked", 3),
        ("send", 4, ("BRPOPLPUSH", "l", "d", T)), ("blocked", 4),
        ("expire", 0),
        ("read", 1), ("read", 2), ("read", 3), ("read", 4),
        ("send", 5, ("BRPOP", "l", "0")), ("blocked", 1),
        ("call", 0, "CLIENT", "UNBLOCK", ("id", 5)), ("read", 5),
        ("send", 6, ("BRPOPLPUSH", "l", "d", "0")), ("blocked", 1),
        ("call", 0, "CLIENT", "UNBLOCK", ("id", 6), "ERROR"), ("read", 6),
    ])

"""Random command sequences over a small pool of keys, against Valkey and us.

A hypothesis state machine issues commands of every family (strings, keys,
hashes, sorted sets, transactions) on a handful of keys, so types collide,
keys vanish and reappear, and WRONGTYPE and empty-key paths are hit often.
Every reply must be byte-identical to Valkey's. Commands whose replies depend
on randomness or on the passing of time are left out; they have their own
tests.
"""

from __future__ import annotations

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, rule, run_state_machine_as_test

KEYS = st.sampled_from(["k1", "k2", "k3", "{t}a", "{t}b"])
FIELDS = st.sampled_from(["f1", "f2", "f3", "a", "b"])
SMALL_INT = st.integers(min_value=-5, max_value=5).map(str)
VALUES = st.one_of(SMALL_INT, st.sampled_from(["", "x", "hello", "3.5", "-0", "9223372036854775807", "1e3"]))
SCORES = st.one_of(
    st.integers(min_value=-3, max_value=3).map(str),
    st.sampled_from(["1.5", "-inf", "+inf", "0.25", "2.5e-3", "nan", "x"]),
)
BOUNDS = st.sampled_from(["-inf", "+inf", "0", "(1", "1.5", "(2", "-1", "x"])
LEX = st.sampled_from(["-", "+", "[a", "(a", "[f1", "(f3", "b", "[z"])
RANKS = st.integers(min_value=-4, max_value=4).map(str)


class Differential(RuleBasedStateMachine):
    def __init__(self, pair) -> None:  # type: ignore[no-untyped-def]
        super().__init__()
        self.pair = pair
        # A failed example may leave a connection inside MULTI: start clean.
        pair.check("RESET")
        pair.check("FLUSHALL")

    def send(self, *args: str) -> None:
        self.pair.check(*args)

    @rule(k=KEYS, v=VALUES)
    def set(self, k: str, v: str) -> None:
        self.send("SET", k, v)

    @rule(k=KEYS)
    def get(self, k: str) -> None:
        self.send("GET", k)

    @rule(k=KEYS, n=SMALL_INT, op=st.sampled_from(["INCRBY", "DECRBY"]))
    def incrby(self, k: str, n: str, op: str) -> None:
        self.send(op, k, n)

    @rule(k=KEYS, v=VALUES)
    def append(self, k: str, v: str) -> None:
        self.send("APPEND", k, v)

    @rule(k=KEYS, a=RANKS, b=RANKS)
    def getrange(self, k: str, a: str, b: str) -> None:
        self.send("GETRANGE", k, a, b)

    @rule(k=KEYS, op=st.sampled_from(["STRLEN", "TYPE", "EXISTS", "GETDEL", "PERSIST", "TTL", "HLEN", "ZCARD"]))
    def unary(self, k: str, op: str) -> None:
        self.send(op, k)

    @rule(a=KEYS, b=KEYS, op=st.sampled_from(["RENAME", "RENAMENX", "COPY"]))
    def rename(self, a: str, b: str, op: str) -> None:
        self.send(op, a, b)

    @rule(ks=st.lists(KEYS, min_size=1, max_size=3),
          op=st.sampled_from(["DEL", "EXISTS", "MGET", "UNLINK", "TOUCH"]))
    def multi_key(self, ks: list[str], op: str) -> None:
        self.send(op, *ks)

    @rule(k=KEYS, secs=st.sampled_from(["100", "1000", "-1"]),
          flag=st.sampled_from([[], ["NX"], ["XX"], ["GT"], ["LT"]]))
    def expire(self, k: str, secs: str, flag: list[str]) -> None:
        self.send("EXPIRE", k, secs, *flag)

    @rule(k=KEYS, pairs=st.lists(st.tuples(FIELDS, VALUES), min_size=1, max_size=3))
    def hset(self, k: str, pairs: list[tuple[str, str]]) -> None:
        self.send("HSET", k, *[x for p in pairs for x in p])

    @rule(k=KEYS, f=FIELDS, op=st.sampled_from(["HGET", "HEXISTS", "HSTRLEN", "HDEL"]))
    def hfield(self, k: str, f: str, op: str) -> None:
        self.send(op, k, f)

    @rule(k=KEYS, op=st.sampled_from(["HGETALL", "HKEYS", "HVALS"]))
    def hall(self, k: str, op: str) -> None:
        self.send(op, k)

    @rule(k=KEYS, f=FIELDS, n=SMALL_INT)
    def hincrby(self, k: str, f: str, n: str) -> None:
        self.send("HINCRBY", k, f, n)

    @rule(k=KEYS,
          opts=st.sampled_from([[], ["NX"], ["XX"], ["GT"], ["LT"], ["CH"], ["XX", "CH"], ["INCR"], ["NX", "GT"]]),
          pairs=st.lists(st.tuples(SCORES, FIELDS), min_size=1, max_size=3))
    def zadd(self, k: str, opts: list[str], pairs: list[tuple[str, str]]) -> None:
        self.send("ZADD", k, *opts, *[x for p in pairs for x in p])

    @rule(k=KEYS, m=FIELDS, op=st.sampled_from(["ZSCORE", "ZRANK", "ZREVRANK", "ZREM"]))
    def zmember(self, k: str, m: str, op: str) -> None:
        self.send(op, k, m)

    @rule(k=KEYS, by=SCORES, m=FIELDS)
    def zincrby(self, k: str, by: str, m: str) -> None:
        self.send("ZINCRBY", k, by, m)

    @rule(k=KEYS, a=RANKS, b=RANKS, ws=st.booleans(), rev=st.booleans())
    def zrange(self, k: str, a: str, b: str, ws: bool, rev: bool) -> None:
        self.send("ZRANGE", k, a, b, *(["REV"] if rev else []), *(["WITHSCORES"] if ws else []))

    @rule(k=KEYS, a=BOUNDS, b=BOUNDS, ws=st.booleans())
    def zrangebyscore(self, k: str, a: str, b: str, ws: bool) -> None:
        self.send("ZRANGEBYSCORE", k, a, b, *(["WITHSCORES"] if ws else []))
        self.send("ZCOUNT", k, a, b)

    @rule(k=KEYS, a=LEX, b=LEX)
    def zlex(self, k: str, a: str, b: str) -> None:
        self.send("ZRANGEBYLEX", k, a, b)
        self.send("ZLEXCOUNT", k, a, b)

    @rule(k=KEYS, n=st.sampled_from([None, "0", "1", "2", "5"]), op=st.sampled_from(["ZPOPMIN", "ZPOPMAX"]))
    def zpop(self, k: str, n: str | None, op: str) -> None:
        self.send(op, k, *([n] if n is not None else []))

    @rule(dst=KEYS, srcs=st.lists(KEYS, min_size=1, max_size=2),
          op=st.sampled_from(["ZUNIONSTORE", "ZINTERSTORE", "ZDIFFSTORE"]))
    def zstore(self, dst: str, srcs: list[str], op: str) -> None:
        self.send(op, dst, str(len(srcs)), *srcs)

    @rule(k=KEYS, v=VALUES, wrap=st.booleans())
    def transaction(self, k: str, v: str, wrap: bool) -> None:
        self.send("MULTI")
        self.send("SET", k, v)
        self.send("INCR", k)
        self.send("GET", k)
        self.send("EXEC" if wrap else "DISCARD")

    @rule()
    def dbsize(self) -> None:
        self.send("DBSIZE")
        # KEYS answers in hash-table order on Valkey: compare as sets.
        v, t = self.pair.both("KEYS", "*")
        assert sorted(_bulks(v)) == sorted(_bulks(t))


def _bulks(reply: bytes) -> list[bytes]:
    """The elements of a flat array of bulk strings."""
    lines = reply.split(b"\r\n")
    assert lines[0].startswith(b"*")
    return lines[2:-1:2]


def test_random_sequences_match_valkey(pair) -> None:  # type: ignore[no-untyped-def]
    run_state_machine_as_test(
        lambda: Differential(pair),
        settings=settings(
            max_examples=60,
            stateful_step_count=40,
            deadline=None,
            suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
        ),
    )

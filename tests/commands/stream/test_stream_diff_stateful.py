"""Random command sequences on one stream with two consumer groups,
against Valkey and us.

A hypothesis state machine adds entries with explicit IDs (sometimes too
small, so the ID errors come up), deletes, trims exactly and
approximately over small listpack nodes, moves the last ID, reads, acks,
claims and autoclaims with several consumers in two groups, creates and
destroys the groups and their consumers, and reads everything back.
Every reply, in RESP2 and RESP3, must be Valkey's, clock-dependent numbers (idle times,
delivery times) within tolerance; after each example the whole keyspace
is compared too.
"""

from __future__ import annotations

from helpers.stream_diff import assert_alike, assert_same_state
from hypothesis import HealthCheck, Phase, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule, run_state_machine_as_test

KEY = "s"
GROUPS = st.sampled_from(["g1", "g2", "nog"])
CONSUMERS = st.sampled_from(["alice", "bob", "carol"])
MS = st.integers(min_value=0, max_value=40)
ID = st.one_of(
    st.tuples(MS, st.integers(min_value=0, max_value=2)).map(lambda t: f"{t[0]}-{t[1]}"),
    MS.map(str),
    st.sampled_from(["-", "+", "0", "(5", "(10-1", "x"]),
)
BOUND_START = st.sampled_from(["-", "0", "5", "(5", "10-1", "(20", "+"])
BOUND_END = st.sampled_from(["+", "40", "20", "(20", "10-0", "(5", "-"])
COUNTS = st.sampled_from([None, "0", "1", "2", "5", "100"])


class Streams(RuleBasedStateMachine):
    def __init__(self, pair) -> None:  # type: ignore[no-untyped-def]
        super().__init__()
        self.pair = pair
        self.next_ms = 1
        self.steps = 0
        pair.check("FLUSHALL")
        for w in (pair.v, pair.t):
            assert w.call("CONFIG", "SET", "stream-node-max-entries", "4") == b"+OK\r\n"
        self.send("XADD", KEY, "1-0", "f", "1")
        self.send("XGROUP", "CREATE", KEY, "g1", "0")
        self.send("XGROUP", "CREATE", KEY, "g2", "$")

    def send(self, *args: object) -> bytes:
        self.steps += 1
        return assert_alike(self.pair, *args)

    @rule(n=st.integers(min_value=1, max_value=4), seq=st.booleans(), fields=st.integers(min_value=1, max_value=3))
    def xadd(self, n: int, seq: bool, fields: int) -> None:
        for _ in range(n):
            self.next_ms += 1
            ident = f"{self.next_ms}-*" if seq else f"{self.next_ms}-0"
            self.send("XADD", KEY, ident, *[x for i in range(fields) for x in (f"f{i}", str(self.next_ms))])

    @rule(ident=ID)
    def xadd_any_id(self, ident: str) -> None:
        reply = self.send("XADD", KEY, ident, "f", "v")
        if reply.startswith(b"$"):  # the new last ID: later explicit IDs go past it
            self.next_ms = max(self.next_ms, int(reply.split(b"\r\n")[1].split(b"-")[0]))

    @rule(trim=st.sampled_from(["MAXLEN", "MINID"]), approx=st.sampled_from(["", "=", "~"]),
          arg=st.integers(min_value=0, max_value=30), limit=st.sampled_from([None, "0", "2", "5"]))
    def xadd_trimming(self, trim: str, approx: str, arg: int, limit: str | None) -> None:
        self.next_ms += 1
        opts = [trim, *([approx] if approx else []), str(arg)]
        if limit is not None:
            opts += ["LIMIT", limit]
        self.send("XADD", KEY, *opts, f"{self.next_ms}-0", "f", "v")

    @rule(trim=st.sampled_from(["MAXLEN", "MINID"]), approx=st.sampled_from(["", "=", "~"]),
          arg=st.integers(min_value=0, max_value=30), limit=st.sampled_from([None, "0", "2", "5"]))
    def xtrim(self, trim: str, approx: str, arg: int, limit: str | None) -> None:
        opts = [trim, *([approx] if approx else []), str(arg)]
        if limit is not None:
            opts += ["LIMIT", limit]
        self.send("XTRIM", KEY, *opts)

    @rule(ids=st.lists(ID, min_size=1, max_size=3))
    def xdel(self, ids: list[str]) -> None:
        self.send("XDEL", KEY, *ids)

    @rule(ahead=st.integers(min_value=-2, max_value=3), extra=st.booleans())
    def xsetid(self, ahead: int, extra: bool) -> None:
        ms = self.next_ms + ahead
        args = ["XSETID", KEY, f"{ms}-0"]
        if extra:
            args += ["ENTRIESADDED", str(self.next_ms + 5), "MAXDELETEDID", f"{max(ms - 1, 0)}-0"]
        reply = self.send(*args)
        if reply == b"+OK\r\n" and ms > self.next_ms:
            self.next_ms = ms

    @rule(start=BOUND_START, end=BOUND_END, count=COUNTS, rev=st.booleans())
    def xrange(self, start: str, end: str, count: str | None, rev: bool) -> None:
        tail = ["COUNT", count] if count is not None else []
        if rev:
            self.send("XREVRANGE", KEY, end, start, *tail)
        else:
            self.send("XRANGE", KEY, start, end, *tail)

    @rule(g=GROUPS, c=CONSUMERS, count=COUNTS, noack=st.booleans(),
          ident=st.sampled_from([">", ">", ">", "0", "5-0", "+", "$"]))
    def xreadgroup(self, g: str, c: str, count: str | None, noack: bool, ident: str) -> None:
        opts = (["COUNT", count] if count is not None else []) + (["NOACK"] if noack else [])
        self.send("XREADGROUP", "GROUP", g, c, *opts, "STREAMS", KEY, ident)

    @rule(ident=st.sampled_from(["0", "$", "+", "5-0", "20"]), count=COUNTS)
    def xread(self, ident: str, count: str | None) -> None:
        self.send("XREAD", *(["COUNT", count] if count is not None else []), "STREAMS", KEY, ident)

    @rule(g=GROUPS, ids=st.lists(ID, min_size=1, max_size=3))
    def xack(self, g: str, ids: list[str]) -> None:
        self.send("XACK", KEY, g, *ids)

    @rule(g=GROUPS, c=CONSUMERS, ids=st.lists(ID, min_size=1, max_size=3),
          opts=st.lists(st.sampled_from([["JUSTID"], ["FORCE"], ["RETRYCOUNT", "3"], ["TIME", "1000"],
                                         ["LASTID", "30-0"], ["IDLE", "0"]]), max_size=2),
          minidle=st.sampled_from(["0", "3600000"]))
    def xclaim(self, g: str, c: str, ids: list[str], opts: list[list[str]], minidle: str) -> None:
        self.send("XCLAIM", KEY, g, c, minidle, *ids, *[x for o in opts for x in o])

    @rule(g=GROUPS, c=CONSUMERS, start=st.sampled_from(["0", "5-0", "(5", "-"]),
          count=st.sampled_from([None, "1", "3"]), justid=st.booleans(),
          minidle=st.sampled_from(["0", "3600000"]))
    def xautoclaim(self, g: str, c: str, start: str, count: str | None, justid: bool, minidle: str) -> None:
        tail = (["COUNT", count] if count is not None else []) + (["JUSTID"] if justid else [])
        self.send("XAUTOCLAIM", KEY, g, c, minidle, start, *tail)

    @rule(g=GROUPS, c=st.one_of(st.none(), CONSUMERS), start=BOUND_START, end=BOUND_END,
          idle=st.sampled_from([None, "0", "3600000"]))
    def xpending(self, g: str, c: str | None, start: str, end: str, idle: str | None) -> None:
        self.send("XPENDING", KEY, g)
        self.send("XPENDING", KEY, g, *(["IDLE", idle] if idle is not None else []), start, end, "10",
                  *([c] if c is not None else []))

    @rule(g=GROUPS, op=st.sampled_from(["CREATE", "DESTROY", "SETID", "SETID-ER"]),
          ident=st.sampled_from(["0", "$", "5-0", "10"]))
    def xgroup(self, g: str, op: str, ident: str) -> None:
        if op == "CREATE":
            self.send("XGROUP", "CREATE", KEY, g, ident)
        elif op == "DESTROY":
            self.send("XGROUP", "DESTROY", KEY, g)
        elif op == "SETID":
            self.send("XGROUP", "SETID", KEY, g, ident)
        else:
            self.send("XGROUP", "SETID", KEY, g, ident, "ENTRIESREAD", "3")

    @rule(g=GROUPS, c=CONSUMERS, create=st.booleans())
    def consumer(self, g: str, c: str, create: bool) -> None:
        self.send("XGROUP", "CREATECONSUMER" if create else "DELCONSUMER", KEY, g, c)

    @rule(g=GROUPS)
    def info(self, g: str) -> None:
        self.send("XINFO", "GROUPS", KEY)
        self.send("XINFO", "CONSUMERS", KEY, g)
        self.send("XINFO", "STREAM", KEY)
        self.send("XLEN", KEY)

    @invariant()
    def full_info(self) -> None:
        if self.steps % 5 == 0:
            self.send("XINFO", "STREAM", KEY, "FULL")

    def teardown(self) -> None:
        assert_same_state(self.pair.v.port, self.pair.t.port)
        for w in (self.pair.v, self.pair.t):
            w.call("CONFIG", "SET", "stream-node-max-entries", "100")


def test_random_stream_sequences_match_valkey(pair23) -> None:  # type: ignore[no-untyped-def]
    run_state_machine_as_test(
        lambda: Streams(pair23),
        settings=settings(
            max_examples=30,
            stateful_step_count=40,
            deadline=None,
            # No shrinking: replaying against two live servers is slow, and
            # the unshrunk sequence is printed in full.
            phases=[Phase.explicit, Phase.reuse, Phase.generate],
            suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
        ),
    )

"""The list's own bookkeeping, checked in process after every write of a
random workload: the listpack size it keeps while small and the quicklist
nodes it follows while big (both decide OBJECT ENCODING, which the tests
against Valkey compare)."""

from __future__ import annotations

import random

from trafikey_server.execution.dispatch import execute
from trafikey_server.server import Server
from trafikey_server.services.client import Client
from trafikey_server.services.config import parse_args
from trafikey_server.values.list import lp_bytes


def test_the_kept_listpack_size_follows_every_write() -> None:
    """The growing check reads ``List.size`` instead of measuring the list:
    after each write of a random workload it equals the listpack's bytes
    (while small), and the followed quicklist nodes hold every element."""
    s = Server(parse_args(["--save", ""]))
    c = Client(s, s.next_client_id())
    rng = random.Random(5)
    for fill in (b"-2", b"-1", b"4", b"16"):
        execute(c, [b"CONFIG", b"SET", b"list-max-listpack-size", fill])
        for _ in range(1500):
            op = rng.choice([b"RPUSH", b"LPUSH", b"LPOP", b"RPOP", b"LREM", b"LTRIM", b"LSET", b"LINSERT", b"LMOVE"])
            e = rng.choice([b"a", b"b", b"%d" % rng.randint(-10**9, 10**9), b"x" * rng.choice([1, 50, 300, 1200])])
            args = {
                b"RPUSH": [e, e], b"LPUSH": [e], b"LPOP": [b"3"], b"RPOP": [b"2"], b"LREM": [b"1", b"a"],
                b"LTRIM": [b"1", b"-2"], b"LSET": [b"-1", e], b"LINSERT": [b"BEFORE", b"a", e],
                b"LMOVE": [b"l", b"LEFT", b"RIGHT"],
            }[op]
            execute(c, [op, b"l", *args])
            lst = s.dbs[0].stored(b"l")
            if lst is None:
                continue
            if not lst.big:
                assert lst.size == lp_bytes(lst)
            elif lst.nodes is not None:
                assert sum(n[0] for n in lst.nodes) == len(lst)

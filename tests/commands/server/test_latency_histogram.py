"""LATENCY HISTOGRAM and INFO latencystats against Valkey 9.1.2, RESP2 and RESP3.

How long a call takes differs between the two servers, so the bucket a call
lands in is the one thing not compared: the commands listed, their calls,
the reply's shape and types, and the buckets being Valkey's (powers of two
from 1024 ns, labelled in µs as its HdrHistogram labels them, counts
cumulative up to the calls) are. Replies with no histogram in them, the
refusals and latencystats' field names are compared as bytes.
"""

from __future__ import annotations

from collections.abc import Iterator

import hiredis
import pytest
from helpers.pair import Pair
from helpers.resp_wire import Wire

# Valkey's bucket labels: highest_equivalent_value(1024 << k) // 1000, and
# the label of the histogram's last slot (1 s and above).
LABELS = {1, 2, 4, 8, 16, 33, 66, 132, 264, 528, 1056, 2113, 4227, 8454, 16908, 33816, 67633, 135266,
          270532, 541065, 1073741}


@pytest.fixture
def lp(pair23: Pair) -> Iterator[Pair]:
    for w in (pair23.v, pair23.t):
        assert w.call("CONFIG", "SET", "latency-tracking", "yes") == b"+OK\r\n"
        assert w.call("CONFIG", "RESETSTAT") == b"+OK\r\n"
    yield pair23
    for w in (pair23.v, pair23.t):
        w.call("CONFIG", "SET", "latency-tracking", "yes", "latency-tracking-info-percentiles", "50 99 99.9")


def _read(reply: bytes) -> object:
    reader = hiredis.Reader()
    reader.feed(reply)
    return reader.gets()


def _pairs(v: object) -> list[tuple]:
    if isinstance(v, dict):
        return list(v.items())
    assert isinstance(v, list) and len(v) % 2 == 0, v
    return list(zip(v[::2], v[1::2], strict=True))


def _shape(w: Wire, *names: str) -> list[tuple]:
    """(command, calls, number of buckets > 0) per entry, after checking the
    buckets are Valkey's and cumulative."""
    out = []
    for name, hist in _pairs(_read(w.call("LATENCY", "HISTOGRAM", *names))):
        fields = _pairs(hist)
        assert [k for k, _ in fields] == [b"calls", b"histogram_usec"]
        calls = fields[0][1]
        points = _pairs(fields[1][1])
        assert points, name
        assert all(us in LABELS for us, _ in points), points
        assert [us for us, _ in points] == sorted(us for us, _ in points)
        counts = [n for _, n in points]
        assert counts == sorted(counts) and len(set(counts)) == len(counts) and counts[-1] == calls
        out.append((name, calls))
    return out


def test_histograms_of_named_commands(lp: Pair) -> None:
    for w in (lp.v, lp.t):
        for i in range(5):
            w.call("SET", "k%d" % i, "v")
        w.call("GET", "k1")
        w.call("GET", "k1", "extra")  # refused before it runs: not a call
        w.call("LPUSH", "k1", "x")  # a call that fails is a call
        w.call("CONFIG", "GET", "maxmemory")
        w.call("CONFIG", "GET", "port")
        w.call("EVAL", "server.call('incr', 'n'); return server.call('incr', 'n')", "0")
        w.pipeline([("MULTI",), ("SET", "k9", "v"), ("DEL", "k9"), ("EXEC",)])
    for names in [("set",), ("SET", "get"), ("lpush",), ("incr",), ("config",), ("config|get",), ("CONFIG|GET",),
                  ("set", "set"), ("nosuch", "get"), ("del", "exec", "multi", "eval")]:
        assert _shape(lp.t, *names) == _shape(lp.v, *names), names
    for names in [("nosuch",), ("config|nosuch",), ("get|x",), ("config|get|x",), ("hset",), ("config|set",)]:
        lp.check("LATENCY", "HISTOGRAM", *names)


def test_all_histograms(lp: Pair) -> None:
    """With no names, every command that has one (in an order of each
    server's own: Valkey walks a dict seeded at random)."""
    for w in (lp.v, lp.t):
        w.call("SET", "a", "1")
        w.call("INCR", "a")
        w.call("CLIENT", "GETNAME")
    assert sorted(_shape(lp.t)) == sorted(_shape(lp.v))


def test_tracking_off(lp: Pair) -> None:
    for w in (lp.v, lp.t):
        assert w.call("CONFIG", "SET", "latency-tracking", "no") == b"+OK\r\n"
        w.call("SET", "a", "1")
        w.call("GET", "a")
    lp.check("LATENCY", "HISTOGRAM", "set", "get")
    lp.check("INFO", "latencystats")
    for w in (lp.v, lp.t):
        assert w.call("CONFIG", "SET", "latency-tracking", "yes") == b"+OK\r\n"
        w.call("GET", "a")
    assert _shape(lp.t, "set", "get") == _shape(lp.v, "set", "get")


def _latencystats(w: Wire) -> list[tuple[bytes, list[bytes]]]:
    """latencystats' fields and the percentile names each one gives."""
    out = []
    for line in w.call("INFO", "latencystats").split(b"\r\n")[1:]:
        if line.startswith(b"latency_percentiles_usec_"):
            name, _, values = line.partition(b":")
            shown = [v.partition(b"=") for v in values.split(b",")] if values else []
            for _, eq, number in shown:
                whole, point, frac = number.partition(b".")
                assert eq and point and len(frac) == 3 and whole.isdigit() and frac.isdigit(), line
            out.append((name, [p for p, _, _ in shown]))
    return sorted(out)


@pytest.mark.parametrize("percentiles", ["50 99 99.9", "0 100", "25.5 99.99", ""])
def test_info_latencystats(lp: Pair, percentiles: str) -> None:
    for w in (lp.v, lp.t):
        assert w.call("CONFIG", "SET", "latency-tracking-info-percentiles", percentiles) == b"+OK\r\n"
        w.call("SET", "a", "1")
        w.call("CONFIG", "GET", "port")
    assert _latencystats(lp.t) == _latencystats(lp.v)


def test_refusals_and_rows(lp: Pair) -> None:
    lp.check("LATENCY", "HISTOGRAM", "nosuch")
    lp.check("CONFIG", "SET", "latency-tracking", "maybe")
    lp.check("CONFIG", "SET", "latency-tracking-info-percentiles", "101")
    lp.check("CONFIG", "SET", "latency-tracking-info-percentiles", "x")
    lp.check("CONFIG", "GET", "latency-tracking*")
    lp.check("COMMAND", "INFO", "latency|histogram")
    lp.check("COMMAND", "DOCS", "latency|histogram")

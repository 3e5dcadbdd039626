"""Strict request framing, compared with Valkey 9.1 whatever the read cuts.

Each example is a pipeline of requests (RESP and inline, writes among them),
valid or with one malformed frame somewhere in it. It is sent over one
connection per cut point: the bytes before the cut in one read, the rest in
another, then a half-close; plus once whole. Every connection's reply bytes
must equal Valkey's, and so must the keyspace afterwards (a malformed frame
writes nothing, nor does anything after it) and the error statistics.

Every connection of an example writes to keys of its own: the pipeline is a
template whose ``@@@@`` becomes a four-byte prefix per connection, so the
connections can run side by side and the keyspaces still compare.
"""

from __future__ import annotations

import select
import socket
import time
from collections.abc import Iterator

import pytest
from helpers.aof_util import keyspace
from helpers.resp_wire import Wire, encode
from helpers.servers import Proc, own_pair
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

KEY = b"@@@@"


@pytest.fixture(scope="module")
def servers() -> Iterator[tuple[Proc, Proc]]:
    with own_pair() as (v, t):
        yield v, t


def _connect(port: int) -> socket.socket:
    s = socket.create_connection(("127.0.0.1", port))
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return s


def _send(s: socket.socket, data: bytes) -> None:
    try:
        s.sendall(data)
    except OSError:
        pass  # closed after a protocol error: nothing more to send


def _read_all(socks: list[socket.socket], timeout: float = 10.0) -> list[bytes]:
    """Everything each socket receives until the server closes it."""
    out = [b""] * len(socks)
    open_ = {s.fileno(): i for i, s in enumerate(socks)}
    deadline = time.monotonic() + timeout
    while open_ and time.monotonic() < deadline:
        ready, _, _ = select.select([socks[i] for i in open_.values()], [], [], 0.5)
        for s in ready:
            i = open_[s.fileno()]
            try:
                got = s.recv(1 << 16)
            except ConnectionResetError:
                got = b""
            if got:
                out[i] += got
            else:
                del open_[s.fileno()]
    assert not open_, "a server kept a half-closed connection open"
    return out


def run_cuts(port: int, template: bytes, cuts: list[list[int]]) -> list[bytes]:
    """Send the template once per cut list (connection i uses prefix i),
    each piece in a read of its own, and collect each connection's replies."""
    socks = [_connect(port) for _ in cuts]
    datas = [template.replace(KEY, b"c%03d" % i) for i in range(len(cuts))]
    try:
        steps = max(len(c) for c in cuts) + 1
        for step in range(steps):
            for s, data, points in zip(socks, datas, cuts, strict=True):
                edges = [0, *points, len(data)]
                if step < len(edges) - 1:
                    piece = data[edges[step] : edges[step + 1]]
                    if piece:
                        _send(s, piece)
            time.sleep(0.01)  # the next piece arrives in a read of its own
        for s in socks:
            try:
                s.shutdown(socket.SHUT_WR)
            except OSError:
                pass
        return _read_all(socks)
    finally:
        for s in socks:
            s.close()


def error_stats(port: int) -> list[bytes]:
    w = Wire(port)
    try:
        info = w.call("INFO", "errorstats") + w.call("INFO", "stats")
    finally:
        w.close()
    return sorted(line for line in info.split(b"\r\n")
                  if line.startswith((b"errorstat_", b"total_error_replies")))


def reset(port: int) -> None:
    w = Wire(port)
    try:
        assert w.call("FLUSHALL") == b"+OK\r\n"
        assert w.call("CONFIG", "RESETSTAT") == b"+OK\r\n"
    finally:
        w.close()


def assert_cuts_agree(servers: tuple[Proc, Proc], template: bytes, cuts: list[list[int]]) -> None:
    v, t = servers
    for p in servers:
        reset(p.port)
    got_v = run_cuts(v.port, template, cuts)
    got_t = run_cuts(t.port, template, cuts)
    for c, rv, rt in zip(cuts, got_v, got_t, strict=True):
        assert rt == rv, f"cut at {c} of {template[:200]!r}"
    assert keyspace(t.port) == keyspace(v.port)
    assert error_stats(t.port) == error_stats(v.port)


def every_cut(template: bytes) -> list[list[int]]:
    return [[]] + [[i] for i in range(1, len(template))]


# -- the pipelines -------------------------------------------------------------

COMMANDS: list[tuple[bytes, ...]] = [
    (b"SET", KEY + b"s", b"v"), (b"SET", KEY + b"t", b"a\r\nb"), (b"APPEND", KEY + b"s", b"x"),
    (b"INCR", KEY + b"n"), (b"GET", KEY + b"s"), (b"PING",), (b"ECHO", b"\r"), (b"ECHO", b"\r\n"),
    (b"HSET", KEY + b"h", b"f", b"\n"), (b"DEL", KEY + b"t"), (b"MSET", KEY + b"a", b"1", KEY + b"b", b""),
    (b"SETRANGE", KEY + b"s", b"1", b"yz"),
]
INLINE = [b"PING", b"SET " + KEY + b"i 1", b"INCR " + KEY + b"n", b'ECHO "a b"', b"GET " + KEY + b"i", b""]


def resp(argv: tuple[bytes, ...]) -> bytes:
    return encode(*argv)


@st.composite
def pipelines(draw: st.DrawFn, malformed: bool) -> bytes:
    parts = []
    for _ in range(draw(st.integers(1, 4))):
        if draw(st.booleans()):
            parts.append(resp(draw(st.sampled_from(COMMANDS))))
        else:
            parts.append(draw(st.sampled_from(INLINE)) + draw(st.sampled_from([b"\r\n", b"\n"])))
    if malformed:
        bad = draw(bad_frames())
        # The replies to the requests before POST or Host: are sent only if
        # they were in an earlier read, which a cut cannot promise (two
        # pieces may reach the server together): the guard comes first here
        # (test_cross_protocol.py covers the rest, waiting for each reply).
        where = 0 if bad in GUARD else draw(st.integers(0, len(parts)))
        parts.insert(where, bad)
    return b"".join(parts)


@st.composite
def bad_frames(draw: st.DrawFn) -> bytes:
    """One frame Valkey refuses (or, for a few, reads as Valkey would: a
    bulk longer than declared leaves bytes that start a new request)."""
    argv = draw(st.sampled_from(COMMANDS))
    kind = draw(st.sampled_from(["terminator", "length", "header", "item", "inline", "guard"]))
    if kind == "terminator":
        # The two bytes after a bulk are not CRLF.
        i = draw(st.integers(0, len(argv) - 1))
        bad = draw(st.sampled_from([b"X\r", b"\n\r", b"XY", b"\nX", b"X\n", b"\r\r", b"\rX", b"\n\n", b"\r"]))
        head = b"*%d\r\n" % len(argv)
        body = [b"$%d\r\n%s\r\n" % (len(a), a) for a in argv]
        body[i] = b"$%d\r\n%s%s" % (len(argv[i]), argv[i], bad)
        return head + b"".join(body)
    if kind == "length":
        # A declared length one off from the bulk that follows.
        i = draw(st.integers(0, len(argv) - 1))
        delta = draw(st.sampled_from([-1, 1, 2]))
        body = [b"$%d\r\n%s\r\n" % (len(a) + (delta if j == i else 0), a) for j, a in enumerate(argv)]
        if len(argv[i]) + delta < 0:
            body[i] = b"$-1\r\n"
        return b"*%d\r\n" % len(argv) + b"".join(body)
    if kind == "header":
        return draw(st.sampled_from([
            b"*x\r\n", b"*1\n$4\r\nPING\r\n", b"*1\r\r\n$4\r\nPING\r\n", b"*1\r\n$4\rPING\r\n",
            b"*1\r\n$04\r\nPING\r\n",
            b"*01\r\n$4\r\nPING\r\n", b"*1\r\n$+4\r\nPING\r\n", b"*2\r\n$3\r\nGET\r\n$-1\r\n", b"*1\r\n$ 4\r\nPING\r\n",
            b"*-1\r\n", b"*0\r\n",
        ]))
    if kind == "item":
        return draw(st.sampled_from([
            b"*1\r\n+PING\r\n", b"*2\r\n$4\r\nECHO\r\n:1\r\n", b"*1\r\n*1\r\n$4\r\nPING\r\n", b"~1\r\n$4\r\nPING\r\n",
            b"|1\r\n$1\r\na\r\n$1\r\nb\r\n", b">1\r\n$4\r\nPING\r\n", b"%1\r\n$1\r\na\r\n$1\r\nb\r\n",
            b"*2\r\n$4\r\nECHO\r\n=5\r\ntxt:x\r\n", b"*2\r\n$4\r\nECHO\r\n(1\r\n", b"$4\r\nPING\r\n",
        ]))
    if kind == "inline":
        return draw(st.sampled_from([
            b'ECHO "a\r\n', b"ECHO 'a\r\n", b'ECHO "a"b\r\n', b"ECHO 'a'b\r\n", b'ECHO "\\x4\r\n',
            b'SET ' + KEY + b'q "v\r\n',
            b"ECHO 'it\\'s'\r\n", b'ECHO "\\"\r\n', b"ECHO a\"b\r\n", b'ECHO "a"\t"b"\r\n',
        ]))
    return draw(st.sampled_from(GUARD))


GUARD = [b"POST / HTTP/1.1\r\n", b"Host: localhost\r\n", encode("POST", "x"), encode("host:"), b"post\r\n",
         b"HOST: a\r\n"]


SETTINGS = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@pytest.mark.slow
@SETTINGS
@given(template=pipelines(malformed=False))
def test_valid_pipelines_at_every_cut(servers: tuple[Proc, Proc], template: bytes) -> None:
    assert_cuts_agree(servers, template, every_cut(template))


@SETTINGS
@given(template=pipelines(malformed=True))
def test_malformed_pipelines_at_every_cut(servers: tuple[Proc, Proc], template: bytes) -> None:
    assert_cuts_agree(servers, template, every_cut(template))


@pytest.mark.slow
@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(template=pipelines(malformed=True), data=st.data())
def test_malformed_pipelines_in_many_reads(servers: tuple[Proc, Proc], template: bytes, data: st.DataObject) -> None:
    """Several cuts per connection, down to one byte per read."""
    points = st.lists(st.integers(1, max(1, len(template) - 1)), min_size=2, max_size=6, unique=True).map(sorted)
    cuts = [data.draw(points) for _ in range(8)] + [list(range(1, len(template)))]
    assert_cuts_agree(servers, template, cuts)


# -- the examples, each at every cut ------------------------------------

EXAMPLES = [
    encode("PING") + b"*2\r\n$4\r\nPING\r\n$1\r\nab\r\n",
    encode("PING") + b"*3\r\n$3\r\nSET\r\n$1\r\n" + KEY + b"\r\n$1\r\nvX\r\n" + encode("SET", KEY + b"2", "w"),
    b"*3\r\n$3\r\nSET\r\n$4\r\n" + KEY + b"\r\n$1\r\nv\n\r\n" + encode("GET", KEY),
    b"*2\r\n$4\r\nECHO\r\n$2\r\n\r\nXY" + encode("SET", KEY, "w"),
    encode("SET", KEY, "v") + b"~1\r\n$4\r\nPING\r\n" + encode("GET", KEY),
    encode("SET", KEY, "v") + b"|1\r\n$1\r\na\r\n$1\r\nb\r\n" + encode("GET", KEY),
]


@pytest.mark.parametrize("template", EXAMPLES, ids=[f"example{i}" for i in range(len(EXAMPLES))])
def test_examples_at_every_cut(servers: tuple[Proc, Proc], template: bytes) -> None:
    assert_cuts_agree(servers, template, every_cut(template))


def test_a_long_pipeline_cut_inside_requests(servers: tuple[Proc, Proc]) -> None:
    """Reads that end inside a request, with requests completed before the
    cut: a malformed frame deep in a pipeline of writes."""
    good = b"".join(encode("SET", KEY + b"%d" % i, "v\r\n" * (i % 3)) for i in range(400))
    bad = b"*3\r\n$3\r\nSET\r\n$4\r\n" + KEY + b"\r\n$1\r\nvX\r\n"
    template = good + bad + good
    cuts = [[n, n + 3000, n + 5000] for n in range(1, 1200, 97)]
    assert_cuts_agree(servers, template, cuts)


def _huge_cases() -> list[bytes]:
    value = b"v" * (6 << 20)  # one large argument: moves to the exact parser
    crs = b"v\r" * (3 << 20)  # one full of CRs: stays on hiredis
    many = [b"RPUSH", KEY + b"l"] + [b"e%06d" % i for i in range(400_000)]  # 4.4 MB of small arguments
    many_bad = encode(*many)[:-2] + b"X\r\n"
    return [
        encode("SET", KEY, value) + encode("GET", KEY + b"x"),
        b"*3\r\n$3\r\nSET\r\n$4\r\n" + KEY + b"\r\n$%d\r\n" % len(crs) + crs + b"XY" + encode("SET", KEY, "w"),
        encode(*many) + encode("LLEN", KEY + b"l"),
        encode("SET", KEY, "v") + many_bad + encode("SET", KEY, "w"),
    ]


@pytest.mark.parametrize("case", range(4), ids=["big-value", "big-value-bad", "many-args", "many-args-bad"])
def test_requests_past_four_mib_in_flight(servers: tuple[Proc, Proc], case: int) -> None:
    """A request large enough that the reads kept for a replay would pass
    4 MiB: framed as strictly as a small one, in reads of 512 KiB."""
    template = _huge_cases()[case]
    assert_cuts_agree(servers, template, [list(range(1 << 19, len(template), 1 << 19))])


WORD_PIECES = ["a", "b", '"', "'", "\\", "x4", "1", " ", "\t", "n", "\x0b"]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(lines=st.lists(st.lists(st.sampled_from(WORD_PIECES), min_size=1, max_size=10).map("".join),
                      min_size=1, max_size=4))
@example(lines=['"\\"'])
@example(lines=["'a\\'"])
@example(lines=['"\\"\\"', '"ab\\"'])
def test_inline_words(servers: tuple[Proc, Proc], lines: list[str]) -> None:
    """Valkey 9.1's word splitting: quotes, escapes, a word going on after
    its closing quote, unbalanced quotes. An unknown command's error quotes
    its arguments back."""
    data = b"".join(b"XCMD " + line.encode() + b"\r\n" for line in lines) + b"PING\r\n"
    got = []
    for p in servers:
        s = _connect(p.port)
        try:
            s.sendall(data)
            s.shutdown(socket.SHUT_WR)
            got.append(_read_all([s])[0])
        finally:
            s.close()
    assert got[1] == got[0]

"""Client memory and maxmemory-clients, beside Valkey 9.1.2: the buffer
fields of CLIENT LIST, which clients eviction takes and in what order, and
what it leaves alone (CLIENT NO-EVICT). Memory figures come from each server's own model, so the
tests compare which clients go and the counters, and hold each figure to
the bounds Valkey's own suite uses."""

from __future__ import annotations

import re
import socket
import time
from collections.abc import Callable, Iterator
from functools import partial

import pytest
from helpers.resp_wire import Wire, encode
from helpers.servers import Proc, own_pair

KB = 1024
MB = 1024 * KB


@pytest.fixture
def pair() -> Iterator[tuple[Proc, Proc]]:
    with own_pair() as servers:
        yield servers


def fields(w: Wire, name: str) -> dict[str, str] | None:
    """The CLIENT LIST fields of the client called name, None if it is gone."""
    for line in w.call("CLIENT", "LIST").decode().splitlines():
        if f" name={name} " in line:
            return dict(f.split("=", 1) for f in line.split(" ") if "=" in f)
    return None


def until(check: Callable[[], object], what: str, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, what
        time.sleep(0.01)


def until_field(ctl: Wire, name: str, key: str, ok: Callable[[int], bool], what: str) -> None:
    """Wait until the named client's field passes ok (-1 once the client is gone)."""
    def check() -> bool:
        f = fields(ctl, name)
        return ok(-1 if f is None else int(f[key]))
    until(check, what)


def named(port: int, name: str) -> Wire:
    w = Wire(port)
    assert w.call("CLIENT", "SETNAME", name) == b"+OK\r\n"
    return w


def open_bulk(w: Wire, size: int, args: int = 1) -> None:
    """A request whose first bulk holds size bytes, all sent but its CRLF:
    it waits in the query buffer."""
    w.sock.sendall(b"*%d\r\n$%d\r\n" % (args, size) + b"v" * size)


def stat(w: Wire, name: str) -> int:
    return int(re.search(rb"\r\n" + name.encode() + rb":(\d+)", w.call("INFO", "all")).group(1))  # type: ignore[union-attr]


def closed(w: Wire) -> bool:
    """Whether the server closed w (nothing more arrives, or a reset)."""
    w.sock.settimeout(5)
    try:
        while w.sock.recv(1 << 20):
            pass
        return True
    except (ConnectionResetError, BrokenPipeError):
        return True
    except TimeoutError:
        return False


def test_query_buffer_fields(pair: tuple[Proc, Proc]) -> None:
    """An open bulk of 100 KB: qbuf counts its bytes (the headers are
    parsed), and tot-mem holds the whole bulk, as Valkey allocates it when
    it reads the length."""
    for p in pair:
        ctl = Wire(p.port)
        w = named(p.port, "q")
        w.sock.sendall(b"*1\r\n$100000\r\n" + b"v" * 60000)
        until_field(ctl, "q", "qbuf", lambda n: n == 60000, "the bulk's first part not read")
        f = fields(ctl, "q")
        assert f is not None
        assert 100000 <= int(f["tot-mem"]) < 100000 + 64 * KB, f
        assert int(f["qbuf-free"]) >= 40000, f
        w.sock.sendall(b"v" * 40000)
        until_field(ctl, "q", "qbuf", lambda n: n == 100000, "the bulk not read")
        w.sock.sendall(b"\r\n")
        assert w.read_reply().startswith(b"-ERR unknown command 'vvvv")
        f = fields(ctl, "q")  # (Valkey keeps the emptied buffer until its cron trims it: qbuf-free)
        assert f is not None and (f["qbuf"], f["argv-mem"]) == ("0", "0"), f


def test_a_query_buffer_over_the_limit_is_evicted(pair: tuple[Proc, Proc]) -> None:
    """The client goes without a reply, counted in evicted_clients; nothing
    it sent is run; the others stay."""
    for p in pair:
        ctl = Wire(p.port)
        assert ctl.call("CONFIG", "SET", "maxmemory-clients", "3000000") == b"+OK\r\n"
        other = named(p.port, "other")
        w = named(p.port, "big")
        try:
            w.sock.sendall(encode("SET", "k", "v" * 3000000)[:-2])
        except (ConnectionResetError, BrokenPipeError):
            pass  # cut off before the last bytes went
        assert closed(w), p.argv[:3]
        assert fields(ctl, "big") is None
        assert fields(ctl, "other") is not None
        assert stat(ctl, "evicted_clients") == 1
        assert ctl.call("EXISTS", "k") == b":0\r\n"
        assert other.call("PING") == b"+PONG\r\n"
        assert ctl.call("CONFIG", "RESETSTAT") == b"+OK\r\n"
        assert stat(ctl, "evicted_clients") == 0


def test_no_evict_keeps_a_client_over_the_limit(pair: tuple[Proc, Proc]) -> None:
    for p in pair:
        ctl = Wire(p.port)
        ctl.call("CLIENT", "NO-EVICT", "on")  # the control client too: eviction would take it
        ctl.call("CONFIG", "SET", "maxmemory-clients", "1mb")
        w = named(p.port, "kept")
        assert w.call("CLIENT", "NO-EVICT", "on") == b"+OK\r\n"
        open_bulk(w, 2 * MB)
        until_field(ctl, "kept", "qbuf", lambda n: n == 2 * MB, "the bulk not read")
        f = fields(ctl, "kept")
        assert f is not None and "e" in f["flags"] and int(f["tot-mem"]) > MB
        w.sock.sendall(b"\r\n")  # the request completes and runs: the client is still there
        assert w.read_reply().startswith(b"-ERR unknown command")
        assert stat(ctl, "evicted_clients") == 0


def _fill(port: int, name: str, size: int) -> Wire:
    w = named(port, name)
    open_bulk(w, size, args=2)
    return w


def test_largest_clients_go_first_and_only_until_under_the_limit(pair: tuple[Proc, Proc]) -> None:
    """Three clients each at 128 KB, 1 MB and 3 MB; each lower limit takes
    the largest ones left, and no more."""
    sizes = [128 * KB, MB, 3 * MB]
    seen = []
    for p in pair:
        ctl = named(p.port, "control")
        ctl.call("CLIENT", "NO-EVICT", "on")
        ws = [_fill(p.port, f"c{i}", size) for i, size in enumerate(sizes) for _ in range(3)]
        for i, size in enumerate(sizes):
            until(partial(_filled, ctl, f"c{i}", size), "not filled")
        mem = [int(_all(ctl, f"c{i}")[0]["tot-mem"]) for i in range(3)]
        total = 3 * sum(mem)
        left = []
        for i in (2, 1):
            total -= 3 * mem[i]
            ctl.call("CONFIG", "SET", "maxmemory-clients", total + int(fields(ctl, "control")["tot-mem"]))  # type: ignore[index]
            left.append(sorted(f["name"] for f in _all(ctl, "c") if f["name"] != "control"))
        seen.append((left, stat(ctl, "evicted_clients")))
        for w in ws:
            w.close()
    assert seen[0] == seen[1] == ([["c0"] * 3 + ["c1"] * 3, ["c0"] * 3], 6)


def _filled(ctl: Wire, prefix: str, size: int) -> bool:
    return all(int(f["qbuf"]) >= size for f in _all(ctl, prefix))


def _all(w: Wire, prefix: str) -> list[dict[str, str]]:
    out = []
    for line in w.call("CLIENT", "LIST").decode().splitlines():
        f = dict(x.split("=", 1) for x in line.split(" ") if "=" in x)
        if f.get("name", "").startswith(prefix):
            out.append(f)
    return out


def test_unread_output_counts_and_is_evicted(pair: tuple[Proc, Proc]) -> None:
    """A client that sends GETs of a 1 MB value and reads nothing: its
    output shows in omem and tot-mem, and past maxmemory-clients it goes."""
    for p in pair:
        ctl = Wire(p.port)
        ctl.call("SETRANGE", "k", MB, "v")
        w = named(p.port, "reader")
        w.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 64 * KB)
        w.sock.sendall(encode("GET", "k") * 24)
        until_field(ctl, "reader", "omem", lambda n: n > 4 * MB, f"no output held {p.argv[:3]}")
        f = fields(ctl, "reader")
        assert f is not None and int(f["tot-mem"]) > int(f["omem"]) > 4 * MB, f
        assert ctl.call("CONFIG", "SET", "maxmemory-clients", "3mb") == b"+OK\r\n"
        until_field(ctl, "reader", "omem", lambda n: n < 0, "not evicted")
        assert stat(ctl, "evicted_clients") == 1


def test_watched_keys_and_subscriptions_grow_a_client_until_evicted(pair: tuple[Proc, Proc]) -> None:
    """Valkey's smallest limit (128 KB) reached by WATCH, then by
    PSUBSCRIBE, one key or pattern at a time: the client is cut off."""
    for p in pair:
        ctl = Wire(p.port)
        ctl.call("CONFIG", "SET", "maxmemory-clients", "200000")
        for verb in ("WATCH", "PSUBSCRIBE"):
            w = Wire(p.port)
            n = 0
            try:
                while n < 200000:
                    w.sock.sendall(encode(verb, f"key:{n}"))
                    w.read_reply()
                    n += 1
            except (ConnectionError, AssertionError, OSError):
                pass
            assert 100 < n < 200000, (verb, n)
        assert stat(ctl, "evicted_clients") == 2


def test_percentage_of_maxmemory(pair: tuple[Proc, Proc]) -> None:
    """maxmemory-clients as N% applies to maxmemory, and only while it is set."""
    for p in pair:
        ctl = Wire(p.port)
        ctl.call("CONFIG", "SET", "maxmemory-clients", "10%")
        w = named(p.port, "pct")
        open_bulk(w, MB)
        until_field(ctl, "pct", "qbuf", lambda n: n == MB, "not filled")
        assert fields(ctl, "pct") is not None  # no maxmemory: no limit
        ctl.call("CONFIG", "SET", "maxmemory", "8mb")
        until_field(ctl, "pct", "qbuf", lambda n: n < 0, "not evicted at 10% of 8 MB")
        ctl.call("CONFIG", "SET", "maxmemory", "0")


# 249 of a request's 250 arguments.
DEAD = b"*250\r\n" + b"".join(b"$1000\r\n" + b"x" * 1000 + b"\r\n" for _ in range(249))


def _evicted_any(ctl: Wire) -> bool:
    return stat(ctl, "evicted_clients") > 0


def test_a_request_still_being_read_holds_its_arguments(pair: tuple[Proc, Proc]) -> None:
    """249 of a request's 250 arguments sent: argv-mem counts them, and 30
    such clients pass a 3 MB maxmemory-clients (Valkey's "input buffer of a
    dead client")."""
    seen = []
    for p in pair:
        ctl = Wire(p.port)
        ctl.call("CLIENT", "NO-EVICT", "on")
        w = named(p.port, "dead")
        w.sock.sendall(DEAD)
        until_field(ctl, "dead", "argv-mem", lambda n: n >= 249000, "the arguments not read")
        f = fields(ctl, "dead")
        assert f is not None
        seen.append((f["argv-mem"], f["qbuf"]))
        assert int(f["tot-mem"]) > 249000 + 249 * 8
        ctl.call("CONFIG", "SET", "maxmemory-clients", "3mb")
        others = []
        for _ in range(30):
            o = Wire(p.port)
            o.sock.sendall(DEAD)
            others.append(o)
        until(partial(_evicted_any, ctl), "no client evicted")
        for o in others:
            o.close()
    assert seen[0] == seen[1] == ("249000", "0")

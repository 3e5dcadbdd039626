"""EMQ.VERSION and the emq.* rows' COMMAND metadata.

A wire-6 connector sends EMQ.VERSION first and refuses a node that lacks any
of the fourteen job-core tokens, so the reply is pinned here as the spec
writes it (§3, EMQ.VERSION), not read back from the server. The spec also
says the list is *derived* from the registration table and never kept as a
second list; the only honest way to show that is to serve a different table
and watch the reply follow. ``trafikey_server.server.Server`` takes a table,
so these tests run one in-process, on its own event loop in a thread.

COMMAND GETKEYS for the emq verbs must follow Valkey's key-spec walk
(``getKeysUsingKeySpecs``): every verb declares one ``keynum`` spec
(begin_search index 1, keynumidx 0, firstkey 1, keystep 1), exactly the spec
of Valkey's ZINTERCARD. Where ZINTERCARD's fallback getkeys function agrees
with the spec walk (numkeys unparseable, negative, zero or too large all give
no keys), Valkey's answer for ZINTERCARD is the oracle for the emq rows.
"""

from __future__ import annotations

import asyncio
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import hiredis
import pytest
import redis
from helpers.resp_wire import Wire
from helpers.servers import Proc, free_port

from trafikey_server.protocol.table import Table, load_rows
from trafikey_server.server import Server
from trafikey_server.services.config import parse_args

# §3, EMQ.VERSION: "The job core's fourteen, in order".
FOURTEEN = (
    "enqueue claim claim.pause extend extends complete.flat schedule promote "
    "reschedule delay fail.flat reprocess requeue stalled.check"
)

# §3: each job-core row and the tokens it carries, in registration order.
ROW_TOKENS: list[tuple[str, list[str]]] = [
    ("emq.enqueue", ["enqueue"]),
    ("emq.claim", ["claim", "claim.pause"]),
    ("emq.extend", ["extend"]),
    ("emq.extends", ["extends"]),
    ("emq.complete", ["complete.flat"]),
    ("emq.schedule", ["schedule"]),
    ("emq.promote", ["promote"]),
    ("emq.reschedule", ["reschedule"]),
    ("emq.delay", ["delay"]),
    ("emq.fail", ["fail.flat"]),
    ("emq.reprocess", ["reprocess"]),
    ("emq.requeue", ["requeue"]),
    ("emq.stalled.check", ["stalled.check"]),
]

# §3: each verb's numkeys and its ARGV names (the optional ones last).
VERBS: dict[str, tuple[int, list[str]]] = {
    "emq.enqueue": (2, ["id", "payload"]),
    "emq.schedule": (2, ["id", "payload", "run_at_ms"]),
    "emq.claim": (3, ["lease_ms"]),
    "emq.extend": (2, ["id", "token", "lease_ms"]),
    "emq.extends": (2, ["lease_ms", "id", "token"]),
    "emq.complete": (2, ["id", "token"]),
    "emq.delay": (3, ["id", "token", "delay_ms"]),
    "emq.fail": (5, ["id", "token", "max_attempts", "backoff_ms", "reason"]),
    "emq.promote": (3, ["limit"]),
    "emq.reschedule": (2, ["id", "run_at_ms"]),
    "emq.reprocess": (3, ["id"]),
    "emq.requeue": (3, ["id", "token"]),
    "emq.stalled.check": (4, ["max_stalled", "limit"]),
}


def parse(reply: bytes) -> Any:
    """A RESP reply decoded (errors come back as hiredis.ReplyError)."""
    reader = hiredis.Reader()
    reader.feed(reply)
    return reader.gets()


def bulk(text: str) -> bytes:
    data = text.encode()
    return b"$%d\r\n%s\r\n" % (len(data), data)


# -- the pinned reply ------------------------------------------------------------


def test_version_pinned_resp2(emq_server: Proc) -> None:
    """RESP2: one bulk string, the fourteen tokens joined by single spaces."""
    w = Wire(emq_server.port)
    try:
        assert w.call("EMQ.VERSION") == bulk(FOURTEEN)
        assert w.call("emq.version") == bulk(FOURTEEN)
    finally:
        w.close()


def test_version_pinned_resp3(emq_server: Proc) -> None:
    """RESP3: still a blob string (``$``), not a verbatim string or an array."""
    w = Wire(emq_server.port)
    try:
        assert w.call("HELLO", "3").startswith(b"%")
        assert w.call("EMQ.VERSION") == bulk(FOURTEEN)
    finally:
        w.close()


def test_version_is_the_tokens_of_the_spec_table() -> None:
    """The spec's per-row table and its joined line say the same thing (a
    guard on this file's two literals, so neither can drift alone)."""
    assert " ".join(t for _, toks in ROW_TOKENS for t in toks) == FOURTEEN
    assert len(FOURTEEN.split()) == 14


def test_version_takes_no_arguments(emq_server: Proc) -> None:
    """Arity 1: any argument is Valkey's arity error, with the lower-case name."""
    w = Wire(emq_server.port)
    try:
        assert w.call("EMQ.VERSION", "x") == b"-ERR wrong number of arguments for 'emq.version' command\r\n"
    finally:
        w.close()


def test_version_needs_no_brand_or_data(emq: redis.Redis) -> None:
    """A connector sends EMQ.VERSION before anything else; it answers on an
    empty keyspace, and reading it writes nothing."""
    assert emq.dbsize() == 0
    assert emq.execute_command("EMQ.VERSION") == FOURTEEN.encode()
    assert emq.dbsize() == 0


def test_version_inside_multi(emq: redis.Redis) -> None:
    """Nothing forbids it in a transaction; EXEC carries the same bulk."""
    pipe = emq.pipeline(transaction=True)
    pipe.execute_command("EMQ.VERSION")
    assert pipe.execute() == [FOURTEEN.encode()]


# -- derived from the table: an in-process server with another table ------------------


@contextmanager
def serve_table(table: Table) -> Iterator[int]:
    """Run ``Server(config, table)`` on a free port in a thread with its own
    event loop; yield the port; then shut it down and join the thread."""
    port = free_port()
    config = parse_args(["--port", str(port), "--loglevel", "warning", "--save", "",
                         "--dir", tempfile.mkdtemp(prefix="trafikey-")])
    server = Server(config, table)
    loop = asyncio.new_event_loop()
    failure: list[BaseException] = []

    def run() -> None:
        asyncio.set_event_loop(loop)
        try:
            loop.run_until_complete(server.serve_forever())
        except BaseException as e:  # surfaced to the test below
            failure.append(e)

    thread = threading.Thread(target=run, name=f"trafikey-{port}", daemon=True)
    thread.start()
    try:
        deadline_client = redis.Redis(port=port, socket_connect_timeout=0.2)
        for _ in range(200):
            try:
                deadline_client.ping()
                break
            except redis.ConnectionError:
                if failure or not thread.is_alive():
                    raise RuntimeError(f"in-process server died: {failure!r}") from None
                threading.Event().wait(0.02)
        else:
            raise RuntimeError("in-process server did not answer PING")
        deadline_client.close()
        yield port
    finally:
        loop.call_soon_threadsafe(server.request_shutdown)
        thread.join(10)
        stopped = not thread.is_alive()
        if stopped:
            loop.close()
        assert stopped, "the in-process server did not stop"
        assert not failure, f"the in-process server failed: {failure!r}"


def _rows_without(name: str) -> list[dict[str, Any]]:
    rows = load_rows()
    kept = [r for r in rows if r["name"] != name]
    assert len(kept) == len(rows) - 1, f"no row named {name} in the table"
    return kept


def test_table_without_claim(valkey_server: Proc) -> None:
    """Serving the table minus the ``emq.claim`` row: ``claim claim.pause``
    vanish from EMQ.VERSION, EMQ.CLAIM becomes an unknown command (Valkey's
    exact text for a name it does not know, taken from Valkey itself, as are
    the COMMAND INFO / DOCS answers for it), and everything else is unchanged — the other verbs still run, COMMAND COUNT
    is one less, COMMAND INFO has no entry for it."""
    full = Table(load_rows())
    table = Table(_rows_without("emq.claim"))
    claim = ("EMQ.CLAIM", "3", "q{t}:pending", "q{t}:active", "q{t}:", "10")
    v = Wire(valkey_server.port)
    try:
        unknown = v.call(*claim)
        no_info = v.call("COMMAND", "INFO", "emq.claim")
        no_docs = v.call("COMMAND", "DOCS", "emq.claim")
    finally:
        v.close()
    assert unknown.startswith(b"-ERR unknown command 'EMQ.CLAIM'")

    with serve_table(table) as port:
        w = Wire(port)
        try:
            assert w.call("EMQ.VERSION") == bulk(
                "enqueue extend extends complete.flat schedule promote "
                "reschedule delay fail.flat reprocess requeue stalled.check"
            )
            assert w.call(*claim) == unknown
            assert w.call("COMMAND", "INFO", "emq.claim") == no_info
            assert w.call("COMMAND", "DOCS", "emq.claim") == no_docs
            assert w.call("COMMAND", "COUNT") == b":%d\r\n" % (len(full.ordered) - 1)
            # The rest of the job core still works on this server.
            assert w.call("EMQ.ENQUEUE", "2", "q{t}:pending", "q{t}:", "j1", "p") == b"$2\r\nj1\r\n"
            assert w.call("ZSCORE", "q{t}:pending", "j1") == b"$1\r\n1\r\n"
            assert w.call("EMQ.PROMOTE", "3", "q{t}:schedule", "q{t}:pending", "q{t}:") == b":0\r\n"
            assert w.call("COMMAND", "INFO", "emq.enqueue").startswith(b"*1\r\n*10\r\n$11\r\nemq.enqueue\r\n")
        finally:
            w.close()
    with pytest.raises(redis.ConnectionError):
        redis.Redis(port=port, socket_connect_timeout=0.5).ping()


@pytest.mark.parametrize("name", [n for n, _ in ROW_TOKENS])
def test_each_row_carries_its_own_tokens(name: str) -> None:
    """Leaving out any one job-core row removes exactly that row's tokens
    from EMQ.VERSION and keeps the others in order."""
    expected = " ".join(t for n, toks in ROW_TOKENS if n != name for t in toks)
    with serve_table(Table(_rows_without(name))) as port:
        r = redis.Redis(port=port)
        try:
            assert r.execute_command("EMQ.VERSION") == expected.encode()
        finally:
            r.close()


def test_order_is_the_table_order() -> None:
    """Moving the claim row to the end of the table moves its tokens to the
    end of the reply: the order is the table's, not a second list's."""
    rows = load_rows()
    claim = next(r for r in rows if r["name"] == "emq.claim")
    reordered = [r for r in rows if r["name"] != "emq.claim"] + [claim]
    expected = (
        "enqueue extend extends complete.flat schedule promote reschedule "
        "delay fail.flat reprocess requeue stalled.check claim claim.pause"
    )
    with serve_table(Table(reordered)) as port:
        r = redis.Redis(port=port)
        try:
            assert r.execute_command("EMQ.VERSION") == expected.encode()
            # The moved row is served as before.
            assert r.execute_command("EMQ.CLAIM", 3, "q{o}:pending", "q{o}:active", "q{o}:", 10) == []
        finally:
            r.close()


# -- COMMAND INFO / DOCS / GETKEYS for the emq rows -----------------------------------

KEYNUM_SPEC = [
    b"begin_search", [b"type", b"index", b"spec", [b"index", 1]],
    b"find_keys", [b"type", b"keynum", b"spec", [b"keynumidx", 0, b"firstkey", 1, b"keystep", 1]],
]


@pytest.mark.parametrize("name", list(VERBS))
def test_command_info_verb(emq_server: Proc, name: str) -> None:
    """Each verb: arity -2 (numkeys is checked by the verb itself, so the
    table only requires it), movablekeys, no legacy key range, and one
    keynum key spec that finds the numkeys keys after numkeys."""
    w = Wire(emq_server.port)
    try:
        info = parse(w.call("COMMAND", "INFO", name))
    finally:
        w.close()
    assert len(info) == 1 and info[0] is not None, info
    row = info[0]
    assert row[0] == name.encode()
    assert row[1] == -2
    assert b"movablekeys" in row[2]
    assert b"write" in row[2]
    assert row[3:6] == [0, 0, 0]
    specs = row[8]
    assert len(specs) == 1
    spec = specs[0]
    assert spec[0] == b"flags" and set(spec[1]) & {b"RW", b"RO", b"OW", b"RM"}, spec
    assert spec[2:] == KEYNUM_SPEC


def test_command_info_version(emq_server: Proc) -> None:
    """EMQ.VERSION: arity 1, no keys."""
    w = Wire(emq_server.port)
    try:
        row = parse(w.call("COMMAND", "INFO", "EMQ.VERSION"))[0]
    finally:
        w.close()
    assert row[0] == b"emq.version"
    assert row[1] == 1
    assert b"movablekeys" not in row[2]
    assert row[3:6] == [0, 0, 0]
    assert row[8] == []


def _flat_argument_names(args: list[Any]) -> list[tuple[bytes, bytes]]:
    out: list[tuple[bytes, bytes]] = []
    for a in args:
        d = dict(zip(a[::2], a[1::2], strict=True))
        if d[b"type"] == b"block":
            out.extend(_flat_argument_names(d[b"arguments"]))
        else:
            out.append((d[b"name"], d[b"type"]))
    return out


@pytest.mark.parametrize("name", list(VERBS))
def test_command_docs_verb(emq_server: Proc, name: str) -> None:
    """COMMAND DOCS documents the call as the spec writes it: numkeys, then
    exactly numkeys key arguments, then the verb's ARGV in the spec's order."""
    numkeys, argv_names = VERBS[name]
    w = Wire(emq_server.port)
    try:
        docs = parse(w.call("COMMAND", "DOCS", name))
    finally:
        w.close()
    assert docs[0] == name.encode()
    d = dict(zip(docs[1][::2], docs[1][1::2], strict=True))
    assert d[b"summary"]
    args = _flat_argument_names(d[b"arguments"])
    assert args[0] == (b"numkeys", b"integer")
    keys = args[1 : 1 + numkeys]
    assert [t for _, t in keys] == [b"key"] * numkeys, args
    assert [n for n, _ in args[1 + numkeys :]] == [a.encode() for a in argv_names]


@pytest.mark.parametrize("name", list(VERBS))
def test_getkeys_finds_the_declared_keys(emq_server: Proc, name: str) -> None:
    """COMMAND GETKEYS on a well-formed call names exactly the KEYS."""
    numkeys, _ = VERBS[name]
    keys = [f"q{{g}}:k{i}" for i in range(numkeys)]
    w = Wire(emq_server.port)
    try:
        got = parse(w.call("COMMAND", "GETKEYS", name, str(numkeys), *keys, "a1", "a2"))
        flags = parse(w.call("COMMAND", "GETKEYSANDFLAGS", name, str(numkeys), *keys, "a1", "a2"))
    finally:
        w.close()
    assert got == [k.encode() for k in keys]
    assert [k for k, _ in flags] == [k.encode() for k in keys]


def test_getkeys_claim_from_the_brief(emq_server: Proc) -> None:
    """The example the issue gives: ``COMMAND GETKEYS EMQ.CLAIM 3 a b c 10``."""
    w = Wire(emq_server.port)
    try:
        assert w.call("COMMAND", "GETKEYS", "EMQ.CLAIM", "3", "a", "b", "c", "10") == (
            b"*3\r\n$1\r\na\r\n$1\r\nb\r\n$1\r\nc\r\n"
        )
    finally:
        w.close()


@pytest.mark.parametrize("args", [
    ("3", "a", "b", "c", "10"),
    ("1", "a"),
    ("2", "a", "b"),
    ("5", "a", "b"),      # more keys announced than given
    ("0", "a"),           # no keys: the spec's last < first
    ("x", "a"),           # numkeys not an integer
    ("-1", "a", "b"),     # negative numkeys
], ids=" ".join)
def test_getkeys_keynum_spec_matches_valkey(valkey_server: Proc, emq_server: Proc, args: tuple[str, ...]) -> None:
    """The emq verbs' keynum spec walked as Valkey walks it. Oracle: Valkey's
    ZINTERCARD, whose one key spec is the same keynum spec; for these
    arguments its fallback getkeys function agrees with the spec walk."""
    v = Wire(valkey_server.port)
    t = Wire(emq_server.port)
    try:
        want = v.call("COMMAND", "GETKEYS", "ZINTERCARD", *args)
        got = t.call("COMMAND", "GETKEYS", "EMQ.CLAIM", *args)
    finally:
        v.close()
        t.close()
    assert got == want, f"COMMAND GETKEYS EMQ.CLAIM {' '.join(args)}\n valkey(ZINTERCARD): {want!r}\n trafikey: {got!r}"


def test_getkeys_version_has_no_keys(valkey_server: Proc, emq_server: Proc) -> None:
    """EMQ.VERSION declares no keys: Valkey's text for a keyless command,
    checked before arity (oracle: Valkey's TIME, arity 1 and keyless)."""
    v = Wire(valkey_server.port)
    t = Wire(emq_server.port)
    try:
        for extra in ((), ("x",)):
            want = v.call("COMMAND", "GETKEYS", "TIME", *extra)
            assert want == b"-ERR The command has no key arguments\r\n"
            assert t.call("COMMAND", "GETKEYS", "EMQ.VERSION", *extra) == want, extra
    finally:
        v.close()
        t.close()

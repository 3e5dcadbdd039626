"""The wire-6 and wire-4 connector paths, end to end over real sockets.

What travels on the wire is checked through INFO commandstats: a wire-6
connection must send the job core as native verbs and only the two
declared reads as EVALSHA; a wire-4 connection must send scripts only.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import redis
from helpers.servers import Proc, start_trafikey

from trafikey_server.connector import ConnectError, Connector, ReplyError, Unsupported
from trafikey_server.lua import SCRIPTS

P = b"emq:{orders}:"


def _calls(port: int) -> dict[str, int]:
    """Calls per command so far, from INFO commandstats."""
    info = redis.Redis(port=port).info("commandstats")
    return {k.removeprefix("cmdstat_"): int(v["calls"]) for k, v in info.items()}


def _delta(before: dict[str, int], after: dict[str, int]) -> dict[str, int]:
    return {k: n - before.get(k, 0) for k, n in after.items() if n != before.get(k, 0)}


@pytest.fixture(scope="module")
def wire4_trafikey() -> Iterator[Proc]:
    p = start_trafikey("--emq-brand", "echomq:4.0.0", "--enable-clock-command", "yes")
    yield p
    p.stop()


@pytest.fixture(scope="module")
def unbranded() -> Iterator[Proc]:
    p = start_trafikey("--emq-brand", "none")
    yield p
    p.stop()


def _lifecycle(emq: Connector) -> None:
    """enqueue -> claim -> fail -> claim -> complete, and the reads."""
    q = emq.queue(P)
    job = q.enqueue(b"*", b"hello")
    assert job is not None
    assert q.enqueue(job, b"again") is None  # idempotent admission
    assert q.state(job) == b"pending"
    assert q.counts() == [1, 0, 0, 0]
    claimed, payload, token = q.claim(60_000)
    assert (claimed, payload, token) == (job, b"hello", 1)
    assert q.state(job) == b"active"
    assert q.extend(job, token, 60_000) == 1
    assert q.fail(job, token, 3, 0, b"boom") == b"pending"
    claimed, _, token = q.claim(60_000)
    assert (claimed, token) == (job, 2)
    with pytest.raises(ReplyError, match=r"^EMQLEASE job \S+ is not held by token 1$"):
        q.complete(job, 1)  # the first claim's token is stale now
    assert q.complete(job, token) == 1
    assert q.state(job) is None
    assert q.counts() == [0, 0, 0, 0]


def test_wire6_sends_native_verbs(emq_server: Proc) -> None:
    r = redis.Redis(port=emq_server.port)
    r.flushall()
    r.set(b"{emq}:version", b"echomq:6.0.0")
    r.script_flush()
    before = _calls(emq_server.port)
    with Connector(port=emq_server.port, wire=6) as emq:
        _lifecycle(emq)
    d = _delta(before, _calls(emq_server.port))
    assert d.get("emq.enqueue") == 2 and d.get("emq.claim") == 2 and d.get("emq.fail") == 1
    assert d.get("emq.complete") == 2 and d.get("emq.extend") == 1 and d.get("emq.version") == 1
    # Only the declared reads travel as scripts: five reads, the first of
    # each answered NOSCRIPT, loaded, and sent again.
    assert d.get("evalsha") == 5 + 2 and d.get("script|load") == 2
    assert "eval" not in d


def test_wire6_refuses_other_scripts_client_side(emq_server: Proc) -> None:
    r = redis.Redis(port=emq_server.port)
    r.set(b"{emq}:version", b"echomq:6.0.0")
    with Connector(port=emq_server.port, wire=6) as emq:
        before = _calls(emq_server.port)
        for name in ("lane.enqueue", "flow.add", "bus.publish"):
            with pytest.raises(Unsupported) as e:
                emq.call(name, [P], [b"x"])
            assert e.value.args == (("wire6_unsupported", name),)
        sent = _delta(before, _calls(emq_server.port))
        assert not [k for k in sent if k.startswith(("emq.", "eval", "script", "fcall"))]


def test_wire6_needs_the_tokens(valkey_server: Proc) -> None:
    redis.Redis(port=valkey_server.port).set(b"{emq}:version", b"echomq:6.0.0")
    with pytest.raises(ConnectError, match="no native job core"):
        Connector(port=valkey_server.port, wire=6)


def test_wire6_needs_the_brand_and_never_writes_it(unbranded: Proc) -> None:
    r = redis.Redis(port=unbranded.port)
    r.delete(b"{emq}:version")
    with pytest.raises(ConnectError, match=r"echomq:6\.0\.0"):
        Connector(port=unbranded.port, wire=6)
    assert r.exists(b"{emq}:version") == 0
    r.set(b"{emq}:version", b"echomq:4.0.0")
    with pytest.raises(ConnectError):
        Connector(port=unbranded.port, wire=6)


def test_wire4_on_trafikey_runs_the_twins(wire4_trafikey: Proc) -> None:
    r = redis.Redis(port=wire4_trafikey.port)
    r.flushall()
    r.set(b"{emq}:version", b"echomq:4.0.0")
    with pytest.raises(ConnectError):
        Connector(port=wire4_trafikey.port, wire=6)
    before = _calls(wire4_trafikey.port)
    with Connector(port=wire4_trafikey.port, wire=4) as emq:
        _lifecycle(emq)
        with pytest.raises(Unsupported) as e:
            emq.queue(P).requeue(b"1", 1)
        assert e.value.args == (("wire4_unsupported", "requeue"),)
    d = _delta(before, _calls(wire4_trafikey.port))
    assert not any(k.startswith("emq.") for k in d)
    assert d.get("evalsha", 0) >= 10


def test_wire4_on_valkey_runs_the_twins(valkey_server: Proc) -> None:
    r = redis.Redis(port=valkey_server.port)
    r.flushall()
    r.script_flush()
    r.set(b"{emq}:version", b"echomq:4.0.0")
    with Connector(port=valkey_server.port, wire=4) as emq:
        _lifecycle(emq)
    loaded = r.script_exists(*(s.sha1 for s in SCRIPTS.values()))
    assert sum(loaded) >= 5  # loaded on demand, after NOSCRIPT


def test_pipeline_keeps_order_and_reports_errors(emq_server: Proc) -> None:
    r = redis.Redis(port=emq_server.port)
    r.flushall()
    r.set(b"{emq}:version", b"echomq:6.0.0")
    with Connector(port=emq_server.port, wire=6) as emq:
        q = emq.queue(P)
        replies = emq.pipeline([("enqueue", q.keys("enqueue"), [b"a", b"1"]),
                                ("enqueue", q.keys("enqueue"), [b"b", b"2"]),
                                ("complete", q.keys("complete"), [b"zz", b"1"]),
                                ("counts", q.keys("counts"), [])])
    assert replies[:2] == [b"a", b"b"]
    assert isinstance(replies[2], ReplyError) and str(replies[2]) == "EMQNOJOB job zz has no row"
    assert replies[3] == [2, 0, 0, 0]

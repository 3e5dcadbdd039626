"""The ``trafikey_faults`` fixture, used as a user's project uses it (a
small project run through ``pytester`` in its own process), and the
README's fault-injection example, run as printed."""

from __future__ import annotations

import pytest
from helpers.plugin_project import run, user_project
from helpers.readme import code_blocks

pytest_plugins = ["pytester"]


@pytest.fixture
def project(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    return user_project(pytester, monkeypatch)


SAMPLE = '''
import pytest
import redis
from redis.backoff import NoBackoff
from redis.retry import Retry


def no_retry(server):
    return server.client(retry=Retry(NoBackoff(), 0))


def test_every_kind_through_the_fixture(trafikey, trafikey_server, trafikey_faults, trafikey_clock):
    ids = [
        trafikey_faults.error("OOM", command="set", key="cache:*"),
        trafikey_faults.moved("10.0.0.1:6380", command="get", times=1),
        trafikey_faults.ask("10.0.0.2:6380", command="hget", times=1),
        trafikey_faults.drop(command="lpush", times=1),
        trafikey_faults.drop_after(command="rpush", times=1),
        trafikey_faults.cut(3, command="incrby", times=1),
        trafikey_faults.delay(500, command="decrby", times=1),
    ]
    assert ids == sorted(ids) and len(set(ids)) == 7
    assert [(r["id"], r["kind"]) for r in trafikey_faults.list()] == list(zip(ids, [
        b"ERROR", b"MOVED", b"ASK", b"DROP", b"DROP-AFTER", b"CUT", b"DELAY"]))
    with pytest.raises(redis.exceptions.OutOfMemoryError):
        trafikey.set("cache:1", "x")
    assert trafikey.set("plain", "x")
    with pytest.raises(redis.exceptions.MovedError):
        trafikey.get("plain")
    with pytest.raises(redis.exceptions.AskError):
        trafikey.hget("h", "f")
    c = no_retry(trafikey_server)
    with pytest.raises(redis.ConnectionError):
        c.lpush("l", "x")
    with pytest.raises(redis.ConnectionError):
        c.rpush("r", "x")
    with pytest.raises(redis.ConnectionError):
        c.incr("n")
    held = trafikey_server.client(socket_timeout=0.3, retry=Retry(NoBackoff(), 0))
    with pytest.raises(redis.TimeoutError):
        held.decr("d")
    held.close()
    c.close()
    assert trafikey.exists("cache:1", "l") == 0
    assert (trafikey.lrange("r", 0, -1), trafikey.get("n"), trafikey.get("d")) == ([b"x"], b"1", b"-1")
    assert trafikey_faults.delete(ids[0]) == 1
    assert trafikey.set("cache:1", "x")
    trafikey_faults.error("LOADING", command="ping")


def test_rules_are_gone_after_each_test(trafikey, trafikey_faults):
    assert trafikey_faults.list() == []
    assert trafikey.ping()


def test_the_session_server_has_faults(trafikey_server):
    r = trafikey_server.client(decode_responses=True)
    assert r.config_get("enable-fault-command") == {"enable-fault-command": "yes"}
    assert r.execute_command("TRAFIKEY.FAULT", "LIST") == []
    r.close()
'''


@pytest.mark.slow
def test_fixture_in_a_project(project: pytest.Pytester) -> None:
    project.makepyfile(test_sample=SAMPLE)
    run(project, "-v").assert_outcomes(passed=3)


def test_readme_example(project: pytest.Pytester) -> None:
    """The README's fault-injection example, as printed there, passes."""
    blocks = code_blocks("Fault injection")
    assert len(blocks) == 1
    project.makepyfile(test_readme=blocks[0])
    run(project).assert_outcomes(passed=1)

"""The pytest plugin's ``trafikey_snapshot`` fixture, used as a project uses
it (through ``pytester``, in a pytest process of its own), and the README's
example of it run as printed."""

from __future__ import annotations

import pytest
from helpers.plugin_project import run, user_project
from helpers.readme import code_blocks

pytest_plugins = ["pytester"]


@pytest.fixture
def project(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    return user_project(pytester, monkeypatch)


def test_readme_example_runs_as_printed(project: pytest.Pytester) -> None:
    blocks = code_blocks("Named snapshots")
    assert len(blocks) == 1
    project.makepyfile(test_readme_snapshots=blocks[0])
    result = run(project, "-v", "-W", "error")
    result.assert_outcomes(passed=2)


SAMPLE = '''
import pytest


@pytest.fixture(scope="session")
def dataset(trafikey_server, trafikey_snapshot):
    r = trafikey_server.client()
    r.flushall()
    r.rpush("queue", "a", "b", "c")
    r.set("counter", 10)
    trafikey_snapshot.save("base")
    trafikey_snapshot.save("spare")
    r.close()


def test_restore_before_each_test(trafikey, trafikey_snapshot, dataset):
    trafikey_snapshot.restore("base")
    assert trafikey.lpop("queue") == b"a"
    assert trafikey.incr("counter") == 11


def test_and_again(trafikey, trafikey_snapshot, dataset):
    trafikey_snapshot.restore("base")
    assert trafikey.lrange("queue", 0, -1) == [b"a", b"b", b"c"]
    assert trafikey.get("counter") == b"10"
    # the brand the server wrote at start stays
    assert trafikey.get("{emq}:version") == b"echomq:6.0.0"


def test_names_and_delete(trafikey_snapshot, dataset):
    assert trafikey_snapshot.names() == ["base", "spare"]
    assert trafikey_snapshot.delete("spare", "never") == 1
    assert trafikey_snapshot.names() == ["base"]


def test_unknown_name(trafikey_snapshot):
    import redis

    with pytest.raises(redis.ResponseError, match="no snapshot named 'nope'"):
        trafikey_snapshot.restore("nope")
'''


def test_fixture_methods(project: pytest.Pytester) -> None:
    project.makepyfile(test_sample=SAMPLE)
    result = run(project, "-v", "-W", "error")
    result.assert_outcomes(passed=4)

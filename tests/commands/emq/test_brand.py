"""The brand key ``{emq}:version`` (spec §4 step 2, §5; decisions #13).

A wire-6 connector reads ``GET {emq}:version`` before it sends anything and
requires ``echomq:6.0.0`` there; it never writes the key itself. So the
server writes it at start-up: the default brand, another one named by
``--emq-brand``, or none at all with ``--emq-brand none``.

Each case needs its own fresh process (the brand is written once, at
start-up, into database 0), so these tests start servers of their own
rather than use the suite's shared ones, which other tests flush.

Not tested here: "an existing value is never overwritten". That can only be
observed across a restart with a keyspace that survives it, i.e. once the
server has persistence; until then there is no honest way to have a value
present at start-up, and faking it (writing the key after start-up) would
test nothing.
"""

from __future__ import annotations

import os
import sys
import tempfile

import pytest
import redis
from helpers.resp_wire import Wire
from helpers.servers import ROOT, Proc, free_port, start_trafikey

BRAND_KEY = "{emq}:version"


def _config_get(name: str, value: str) -> bytes:
    n, v = name.encode(), value.encode()
    return b"*2\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n" % (len(n), n, len(v), v)


def assert_brand(p: Proc, brand: str | None, option_value: str) -> None:
    r = redis.Redis(port=p.port)
    w = Wire(p.port)
    try:
        if brand is None:
            assert r.exists(BRAND_KEY) == 0
            assert r.dbsize() == 0
        else:
            assert r.get(BRAND_KEY) == brand.encode()
            assert r.type(BRAND_KEY) == b"string"
            assert r.ttl(BRAND_KEY) == -1  # a plain persistent key
            assert r.dbsize() == 1  # nothing else is written at start-up
            assert r.keys("*") == [BRAND_KEY.encode()]
        for db in (1, 15):  # only database 0, where a connector reads it
            other = redis.Redis(port=p.port, db=db)
            try:
                assert other.dbsize() == 0
            finally:
                other.close()
        assert w.call("CONFIG", "GET", "emq-brand") == _config_get("emq-brand", option_value)
    finally:
        r.close()
        w.close()


def test_default_brand() -> None:
    """No option: ``{emq}:version`` = ``echomq:6.0.0``, what wire 6 requires."""
    p = start_trafikey()
    try:
        assert_brand(p, "echomq:6.0.0", "echomq:6.0.0")
    finally:
        p.stop()


def test_wire4_brand() -> None:
    """``--emq-brand echomq:4.0.0``: the brand a wire-4 node carries."""
    p = start_trafikey("--emq-brand", "echomq:4.0.0")
    try:
        assert_brand(p, "echomq:4.0.0", "echomq:4.0.0")
    finally:
        p.stop()


def test_no_brand() -> None:
    """``--emq-brand none``: the key is left absent, the keyspace empty."""
    p = start_trafikey("--emq-brand", "none")
    try:
        assert_brand(p, None, "none")
    finally:
        p.stop()


def _start_with_file(path: str) -> Proc:
    """trafikey-server with a config file, which (as for valkey-server) must
    come first on the command line, before any --option."""
    port = free_port()
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    argv = [sys.executable, "-m", "trafikey_server", path, "--port", str(port), "--save", "",
            "--dir", tempfile.mkdtemp(prefix="trafikey-")]
    return Proc(argv, port, cwd=str(ROOT), env=env)


def test_brand_from_config_file() -> None:
    """The option works from a valkey.conf-style file like any other."""
    fd, path = tempfile.mkstemp(suffix=".conf")
    try:
        with os.fdopen(fd, "w") as f:
            f.write("emq-brand echomq:4.0.0\n")
        p = _start_with_file(path)
        try:
            assert_brand(p, "echomq:4.0.0", "echomq:4.0.0")
        finally:
            p.stop()
    finally:
        os.unlink(path)


def test_brand_is_an_ordinary_key_once_written() -> None:
    """The brand is written at start-up only: after FLUSHALL it is gone and
    nothing puts it back (the server runs nothing on its own, spec §4), and
    a client may write it like any key."""
    p = start_trafikey()
    try:
        r = redis.Redis(port=p.port)
        try:
            assert r.get(BRAND_KEY) == b"echomq:6.0.0"
            r.flushall()
            assert r.exists(BRAND_KEY) == 0
            r.ping()
            assert r.dbsize() == 0
            r.set(BRAND_KEY, "echomq:4.0.0")
            assert r.get(BRAND_KEY) == b"echomq:4.0.0"
        finally:
            r.close()
    finally:
        p.stop()


def test_brand_is_a_start_up_option(valkey_server: Proc) -> None:
    """CONFIG SET emq-brand is refused as Valkey refuses an immutable option
    (text taken from Valkey, name substituted): the brand belongs to start-up."""
    v = Wire(valkey_server.port)
    try:
        immutable = v.call("CONFIG", "SET", "daemonize", "yes")
    finally:
        v.close()
    assert immutable.startswith(b"-ERR CONFIG SET failed")
    p = start_trafikey()
    try:
        w = Wire(p.port)
        try:
            assert w.call("CONFIG", "SET", "emq-brand", "echomq:4.0.0") == immutable.replace(b"daemonize", b"emq-brand")
            assert w.call("GET", BRAND_KEY) == b"$12\r\nechomq:6.0.0\r\n"
        finally:
            w.close()
    finally:
        p.stop()


@pytest.mark.parametrize("persistence", [["--appendonly", "no"], ["--appendonly", "yes"]],
                         ids=["rdb", "aof"])
def test_existing_brand_is_never_overwritten(persistence: list[str]) -> None:
    """Decisions #13: an existing ``{emq}:version`` is never overwritten.
    A first run writes echomq:4.0.0 and saves it (a snapshot, or the log);
    the second run starts onto that keyspace with the default brand
    (echomq:6.0.0) and must leave the saved value alone."""
    data = tempfile.mkdtemp(prefix="trafikey-brand-")
    port = free_port()
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    argv = [sys.executable, "-m", "trafikey_server", "--port", str(port), "--save", "", "--dir", data,
            *persistence]
    first = Proc([*argv, "--emq-brand", "echomq:4.0.0"], port, cwd=data, env=env)
    try:
        w = Wire(first.port)
        try:
            assert w.call("GET", BRAND_KEY) == b"$12\r\nechomq:4.0.0\r\n"
            if persistence[1] == "no":
                assert w.call("SAVE") == b"+OK\r\n"
        finally:
            w.close()
    finally:
        first.stop()
    assert os.listdir(data), "the first run left nothing on disk"
    second = Proc(argv, port, cwd=data, env=env)  # the default brand, echomq:6.0.0
    try:
        w = Wire(second.port)
        try:
            assert w.call("GET", BRAND_KEY) == b"$12\r\nechomq:4.0.0\r\n"
        finally:
            w.close()
    finally:
        second.stop()

"""Function libraries in the RDB file, both ways between this server and Valkey.

Valkey keeps each library's code in the snapshot (a FUNCTION2 record), so a
restart, DEBUG RELOAD or a file carried to the other server keeps the
functions; each scenario here runs the same steps on a real valkey-server
9.1.2 and compares the replies.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable, Iterator

import pytest
import redis
from helpers.servers import Proc, start_trafikey, start_valkey

LIB_A = b"#!lua name=liba\nserver.register_function('fa', function(keys, args) return server.call('GET', keys[1]) end)"
LIB_B = (b"#!lua name=libb\nserver.register_function{function_name='fb', callback=function(keys, args) "
         b"return args[1] end, flags={'no-writes'}, description='echo'}")
LIB_A2 = b"#!lua name=liba\nserver.register_function('fa2', function(keys, args) return 2 end)"


@pytest.fixture
def dirs() -> Iterator[tuple[str, str]]:
    a, b = tempfile.mkdtemp(prefix="fnv-"), tempfile.mkdtemp(prefix="fnt-")
    yield a, b
    shutil.rmtree(a, ignore_errors=True)
    shutil.rmtree(b, ignore_errors=True)


def _valkey(d: str) -> Proc:
    return start_valkey("--dir", d, "--dbfilename", "dump.rdb")


def _trafikey(d: str) -> Proc:
    return start_trafikey("--dir", d, "--dbfilename", "dump.rdb", "--emq-brand", "none")


def _functions(port: int) -> list:
    r = redis.Redis(port=port)
    return sorted(repr(x) for x in r.execute_command("FUNCTION", "LIST", "WITHCODE"))


def _fill(port: int) -> None:
    r = redis.Redis(port=port)
    r.function_load(LIB_A)
    r.function_load(LIB_B)
    r.set("k", "v")


def _saved(start: Callable[[str], Proc], d: str) -> list:
    """Libraries and a key written on a server started in d, saved there;
    the FUNCTION LIST it saved them with."""
    p = start(d)
    try:
        _fill(p.port)
        assert redis.Redis(port=p.port).save()
        return _functions(p.port)
    finally:
        p.stop()


def _loaded(start: Callable[[str], Proc], d: str, expected: list) -> None:
    """A server started on d's file has those libraries, and they run."""
    p = start(d)
    try:
        assert_loaded(p.port, expected)
    finally:
        p.stop()


def assert_loaded(port: int, expected: list) -> None:
    r = redis.Redis(port=port)
    assert _functions(port) == expected
    assert r.fcall("fa", 1, "k") == b"v"
    assert r.fcall_ro("fb", 0, "x") == b"x"


@pytest.mark.parametrize("source", ["valkey", "trafikey"])
def test_a_snapshot_carries_libraries_to_the_other_server(dirs: tuple[str, str], source: str) -> None:
    """The file one server saves starts the other with the same libraries."""
    vd, td = dirs
    first, second = (_valkey, _trafikey) if source == "valkey" else (_trafikey, _valkey)
    d1, d2 = (vd, td) if source == "valkey" else (td, vd)
    expected = _saved(first, d1)
    assert len(expected) == 2
    shutil.copy(os.path.join(d1, "dump.rdb"), os.path.join(d2, "dump.rdb"))
    _loaded(second, d2, expected)


def test_restart_keeps_libraries(dirs: tuple[str, str]) -> None:
    _, td = dirs
    _loaded(_trafikey, td, _saved(_trafikey, td))


def _reload_steps(port: int) -> list:
    """DEBUG RELOAD's forms over libraries, each reply or error as seen."""
    r = redis.Redis(port=port)
    out: list = []

    def step(*argv: str | bytes) -> None:
        try:
            out.append(r.execute_command(*argv))
        except redis.ResponseError as e:
            out.append(("error", str(e)))
        out.append(_functions(port))

    r.function_load(LIB_A)
    r.set("k", "v")
    step("DEBUG", "RELOAD")
    # The file now holds liba; loading it over a liba already here without
    # MERGE clashes, and nothing changes.
    step("DEBUG", "RELOAD", "NOFLUSH", "NOSAVE")
    # A library saved, then deleted: NOFLUSH NOSAVE loads it back without a clash.
    r.function_delete("liba")
    r.delete("k")
    step("DEBUG", "RELOAD", "NOFLUSH", "NOSAVE")
    # MERGE replaces a library of the same name with the file's.
    r.function_load(LIB_A2, replace=True)
    step("DEBUG", "RELOAD", "NOFLUSH", "MERGE", "NOSAVE")
    # A plain reload after FUNCTION FLUSH saves and loads no library.
    r.function_flush()
    step("DEBUG", "RELOAD")
    out.append(r.dbsize())
    return out


def test_debug_reload_and_libraries(valkey_server: Proc, trafikey_server: Proc) -> None:
    got = []
    for port in (valkey_server.port, trafikey_server.port):
        r = redis.Redis(port=port)
        r.function_flush()
        r.flushall()
        got.append(_reload_steps(port))
        r.flushall()
    assert got[1] == got[0]

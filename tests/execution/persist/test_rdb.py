"""RDB snapshots with real processes: round trips through SAVE, BGSAVE and
DEBUG RELOAD; files exchanged with valkey-server 9.1.2 both ways; damaged
files refused; background saves that do not block; save rules; the saves
SHUTDOWN and SIGTERM make, side by side with Valkey."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
from helpers.rdb_state import assert_same, populate, state
from helpers.resp_wire import Wire
from helpers.servers import ROOT, Proc, free_port, start_trafikey, start_valkey

from trafikey_server.util.crc64 import crc64


def wait_saved(r: redis.Redis, timeout: float = 60.0) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        info = r.info("persistence")
        if info["rdb_bgsave_in_progress"] == 0:
            return info
        time.sleep(0.05)
    raise AssertionError("background save did not finish")


def tk(d: str, *extra: str) -> Proc:
    return start_trafikey("--dir", d, "--emq-brand", "none", "--enable-debug-command", "yes", *extra)


@pytest.fixture
def d() -> Iterator[str]:
    path = tempfile.mkdtemp(prefix="rdb-")
    yield path
    shutil.rmtree(path, ignore_errors=True)


# -- the checksum --------------------------------------------------------------------------


def test_crc64_jones_check_value() -> None:
    # The catalogued check value of CRC-64/Jones (init 0, reflected, no xorout),
    # which Valkey's own crc64 self-test asserts.
    assert crc64(b"123456789") == 0xE9C6D914C4B8D9CA
    data = bytes(range(256)) * 40 + b"tail"
    from trafikey_server.util.crc64 import update

    assert update(update(0, data[:1001]), data[1001:]) == crc64(data)
    assert crc64(b"") == 0


# -- round trips ---------------------------------------------------------------------------


def test_save_then_restart(d: str) -> None:
    p = tk(d)
    try:
        r = redis.Redis(port=p.port)
        populate(r)
        before = state(p.port)
        assert r.save() is True
    finally:
        p.stop()
    raw = Path(d, "dump.rdb").read_bytes()
    assert raw.startswith(b"REDIS0011")
    assert int.from_bytes(raw[-8:], "little") == crc64(raw[:-8])
    p = tk(d)
    try:
        assert_same(state(p.port), before, encodings=False)
        info = redis.Redis(port=p.port).info("persistence")
        assert info["rdb_last_load_keys_loaded"] == len(before)
    finally:
        p.stop()


def test_bgsave_then_restart(d: str) -> None:
    p = tk(d)
    try:
        r = redis.Redis(port=p.port)
        populate(r)
        before = state(p.port)
        assert r.info("persistence")["rdb_changes_since_last_save"] > 0
        assert Wire(p.port).call("BGSAVE") == b"+Background saving started\r\n"
        info = wait_saved(r)
        assert info["rdb_last_bgsave_status"] == "ok"
        assert info["rdb_changes_since_last_save"] == 0
    finally:
        p.stop()
    p = tk(d)
    try:
        assert_same(state(p.port), before, encodings=False)
    finally:
        p.stop()


def test_debug_reload_keeps_everything(d: str) -> None:
    p = tk(d)
    try:
        r = redis.Redis(port=p.port)
        populate(r)
        before = state(p.port)
        assert r.execute_command("DEBUG", "RELOAD") == b"OK"
        assert_same(state(p.port), before, encodings=False)
        assert os.path.exists(os.path.join(d, "dump.rdb"))
    finally:
        p.stop()


def test_debug_reload_options_against_valkey(d: str) -> None:
    v = start_valkey("--enable-debug-command", "yes")
    t = tk(d)
    try:
        wv, wt = Wire(v.port), Wire(t.port)
        for args in (("DEBUG", "RELOAD", "BOGUS"), ("DEBUG", "RELOAD"), ("SET", "a", "1"),
                     ("DEBUG", "RELOAD", "NOSAVE", "NOFLUSH", "MERGE"), ("GET", "a"),
                     ("SET", "a", "2"), ("DEBUG", "RELOAD", "NOSAVE"), ("GET", "a")):
            assert wt.call(*args) == wv.call(*args), args
    finally:
        v.stop()
        t.stop()


def test_brand_is_written_after_loading(d: str) -> None:
    """A loaded keyspace keeps the brand it carries; a file without one gets
    the configured brand once loading is done."""
    p = start_trafikey("--dir", d)
    try:
        r = redis.Redis(port=p.port)
        r.set(b"{emq}:version", b"custom:1")
        r.set(b"other", b"x")
        r.save()
    finally:
        p.stop()
    p = start_trafikey("--dir", d)
    try:
        assert redis.Redis(port=p.port).get(b"{emq}:version") == b"custom:1"
    finally:
        p.stop()


# -- interchange with Valkey 9.1.2 ----------------------------------------------------------


def test_our_file_loads_into_valkey(d: str) -> None:
    p = tk(d)
    try:
        populate(redis.Redis(port=p.port))
        redis.Redis(port=p.port).save()
    finally:
        p.stop()
    p = tk(d)  # our own reading of our file
    try:
        ours = state(p.port)
    finally:
        p.stop()
    vdir = tempfile.mkdtemp(prefix="rdb-valkey-")
    shutil.copy(os.path.join(d, "dump.rdb"), os.path.join(vdir, "from-trafikey.rdb"))
    v = start_valkey("--dir", vdir, "--dbfilename", "from-trafikey.rdb")
    try:
        theirs = state(v.port)
        assert "Done loading RDB" in v.wait_output("Done loading RDB")
    finally:
        v.stop()
        shutil.rmtree(vdir, ignore_errors=True)
    assert len(theirs) >= 40
    assert_same(ours, theirs)


def test_valkey_file_loads_into_ours(d: str) -> None:
    v = start_valkey("--dir", d)
    try:
        populate(redis.Redis(port=v.port))
        redis.Redis(port=v.port).save()
    finally:
        v.stop()
    raw = Path(d, "dump.rdb").read_bytes()
    assert raw.startswith(b"VALKEY080")
    assert b"abc" * 100 not in raw  # the long repetitive string went in LZF-compressed
    v = start_valkey("--dir", d)  # Valkey's own reading of its file
    try:
        theirs = state(v.port)
    finally:
        v.stop()
    p = tk(d)
    try:
        ours = state(p.port)
        assert "keys loaded" in p.output()
    finally:
        p.stop()
    assert len(ours) >= 40
    assert_same(ours, theirs)


def _start_expecting_failure(d: str, *extra: str) -> tuple[int, str]:
    port = free_port()
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    out = subprocess.run([sys.executable, "-m", "trafikey_server", "--port", str(port), "--dir", d,
                          "--save", "", *extra], capture_output=True, text=True, env=env, timeout=60, cwd=d)
    return out.returncode, out.stdout + out.stderr


def _valkey_file_with(d: str, record: bytes) -> bytes:
    """A file Valkey saved (one key), with record put before its end and
    the checksum made right again, so only the record can be refused."""
    v = start_valkey("--dir", d)
    try:
        r = redis.Redis(port=v.port)
        r.set(b"fine", b"1")
        r.save()
    finally:
        v.stop()
    data = Path(d, "dump.rdb").read_bytes()
    assert data[-9] == 0xFF  # EOF, then the CRC-64
    body = data[:-9] + record + b"\xff"
    data = body + crc64(body).to_bytes(8, "little")
    Path(d, "dump.rdb").write_bytes(data)
    return data


def test_module_data_is_refused_by_name(d: str) -> None:
    before = _valkey_file_with(d, b"\xf7\x81\x00\x00\x00\x00\x00\x00\x00\x00")  # MODULE_AUX
    code, out = _start_expecting_failure(d)
    assert code != 0
    assert "module data" in out
    assert Path(d, "dump.rdb").read_bytes() == before


def test_a_library_that_does_not_load_is_refused(d: str) -> None:
    code_ = b"#!lua name=broken\nserver.register_function('f', function("  # under 64 bytes: a 1-byte length
    before = _valkey_file_with(d, b"\xf5" + bytes([len(code_)]) + code_)  # FUNCTION2
    code, out = _start_expecting_failure(d)
    assert code != 0
    assert "function library" in out and "Error compiling function" in out
    assert Path(d, "dump.rdb").read_bytes() == before


# -- damaged files ---------------------------------------------------------------------------


def _saved_file(d: str) -> bytes:
    p = tk(d)
    try:
        populate(redis.Redis(port=p.port))
        redis.Redis(port=p.port).save()
    finally:
        p.stop()
    return Path(d, "dump.rdb").read_bytes()


def _listing(d: str) -> dict[str, bytes]:
    return {name: Path(d, name).read_bytes() for name in sorted(os.listdir(d))}


def test_flipped_byte_is_refused(d: str) -> None:
    raw = bytearray(_saved_file(d))
    # A byte inside a string value: the file still parses, only the checksum can tell.
    at = raw.index(b"y" * 100) + 50
    raw[at] ^= 0x01
    Path(d, "dump.rdb").write_bytes(raw)
    before = _listing(d)
    code, out = _start_expecting_failure(d, "--save", "3600 1")
    assert code != 0
    assert "checksum" in out and "dump.rdb" in out
    assert _listing(d) == before


def test_flipped_byte_in_structure_is_refused(d: str) -> None:
    raw = bytearray(_saved_file(d))
    at = raw.index(b"hbigcount") - 2  # the length byte before the key, then the type byte
    raw[at] ^= 0x40
    Path(d, "dump.rdb").write_bytes(raw)
    before = _listing(d)
    code, out = _start_expecting_failure(d)
    assert code != 0
    assert "checksum" in out
    assert _listing(d) == before


@pytest.mark.parametrize("cut", [1, 8, 9, 500])
def test_truncated_file_is_refused(d: str, cut: int) -> None:
    raw = _saved_file(d)
    Path(d, "dump.rdb").write_bytes(raw[:-cut])
    before = _listing(d)
    code, out = _start_expecting_failure(d)
    assert code != 0
    assert "truncated" in out and "dump.rdb" in out
    assert _listing(d) == before


def test_rdbchecksum_no_writes_zero_and_skips_the_check(d: str) -> None:
    p = tk(d, "--rdbchecksum", "no")
    try:
        r = redis.Redis(port=p.port)
        r.set(b"a", b"b" * 50)
        r.save()
    finally:
        p.stop()
    raw = bytearray(Path(d, "dump.rdb").read_bytes())
    assert raw[-8:] == bytes(8)
    raw[raw.index(b"b" * 50) + 10] = ord("c")
    Path(d, "dump.rdb").write_bytes(raw)
    # Valkey loads it too: a zero checksum means "not computed".
    v = start_valkey("--dir", d)
    try:
        assert redis.Redis(port=v.port).get(b"a") == b"b" * 10 + b"c" + b"b" * 39
    finally:
        v.stop()
    p = tk(d)
    try:
        assert redis.Redis(port=p.port).get(b"a") == b"b" * 10 + b"c" + b"b" * 39
    finally:
        p.stop()


# -- background saves, rules, counters ---------------------------------------------------------


@pytest.mark.slow
def test_bgsave_does_not_block(d: str) -> None:
    p = tk(d)
    try:
        r = redis.Redis(port=p.port)
        pipe = r.pipeline(transaction=False)
        for i in range(300):
            pipe.mset({b"key:%d:%d" % (i, j): b"value-%d" % j for j in range(1000)})
        pipe.execute()
        assert r.dbsize() == 300_000
        # LASTSAVE counts seconds: start the save in a later second than the last one.
        first = r.lastsave()
        while int(time.time()) <= int(first.timestamp()):
            time.sleep(0.05)
        other = redis.Redis(port=p.port)
        assert Wire(p.port).call("BGSAVE") == b"+Background saving started\r\n"
        # A PING answered between two INFO replies that both say the save is
        # running was served while the child was saving.
        seen = 0
        while True:
            a = other.info("persistence")["rdb_bgsave_in_progress"]
            pong = other.ping()
            b = other.info("persistence")["rdb_bgsave_in_progress"]
            if a == 1 and b == 1 and pong:
                seen += 1
            if b == 0:
                break
            time.sleep(0.02)
        assert seen >= 1
        assert wait_saved(r)["rdb_last_bgsave_status"] == "ok"
        assert r.lastsave() > first
    finally:
        p.stop()
    p = tk(d)
    try:
        r = redis.Redis(port=p.port)
        assert r.dbsize() == 300_000
        assert r.get(b"key:299:999") == b"value-999"
    finally:
        p.stop()


def test_bgsave_errors_match_valkey(d: str) -> None:
    v = start_valkey()
    t = tk(d)
    try:
        wv, wt = Wire(v.port), Wire(t.port)
        for args in (("BGSAVE", "x"), ("BGSAVE", "SCHEDULE", "x"), ("BGSAVE", "CANCEL"), ("SAVE", "x")):
            assert wt.call(*args) == wv.call(*args), args
    finally:
        v.stop()
        t.stop()


def test_save_rule_triggers_a_background_save(d: str) -> None:
    p = tk(d, "--save", "1 1")
    try:
        r = redis.Redis(port=p.port)
        first = r.lastsave()
        r.set(b"a", b"1")
        deadline = time.monotonic() + 20
        while r.lastsave() == first and time.monotonic() < deadline:
            time.sleep(0.1)
        assert r.lastsave() > first
        info = wait_saved(r)
        assert info["rdb_changes_since_last_save"] == 0 and info["rdb_saves"] >= 1
    finally:
        p.stop()
    p = tk(d)
    try:
        assert redis.Redis(port=p.port).get(b"a") == b"1"
    finally:
        p.stop()


def test_change_counter_matches_valkey(d: str) -> None:
    v = start_valkey()
    t = tk(d)
    try:
        for port in (v.port, t.port):
            r = redis.Redis(port=port)
            assert r.info("persistence")["rdb_changes_since_last_save"] == 0
        # Writes that each change one thing (Valkey counts changes, e.g. the
        # fields an HSET set; this server counts successful write calls).
        seq = [("SET", "a", "1"), ("INCR", "a"), ("GET", "a"), ("HSET", "h", "f", "v"), ("DEL", "h"),
               ("ZADD", "z", "1", "m"), ("EXPIRE", "a", "100"), ("HINCRBY", "h", "f", "2")]
        got = []
        for port in (v.port, t.port):
            r = redis.Redis(port=port)
            counts = []
            for cmd in seq:
                r.execute_command(*cmd)
                counts.append(r.info("persistence")["rdb_changes_since_last_save"])
            r.save()
            counts.append(r.info("persistence")["rdb_changes_since_last_save"])
            counts.append(r.info("persistence")["rdb_saves"])
            got.append(counts)
        assert got[0] == got[1]
    finally:
        v.stop()
        t.stop()


# -- SHUTDOWN and SIGTERM, side by side with Valkey ----------------------------------------------


def _exit_case(start: Any, how: str, save_rules: str) -> bool:
    """Start a server with save rules, write a key, stop it as told; whether
    a snapshot was left."""
    d = tempfile.mkdtemp(prefix="rdb-exit-")
    try:
        p = start("--dir", d, "--save", save_rules)
        r = redis.Redis(port=p.port)
        r.set(b"k", b"v")
        if how == "sigterm":
            p.proc.send_signal(signal.SIGTERM)
        else:
            # A raw socket: the server closes it without a reply, which a
            # client library would answer with reconnect attempts.
            words = [b"SHUTDOWN", *(w.encode() for w in how.split())]
            with socket.create_connection(("127.0.0.1", p.port)) as s:
                s.sendall(b"*%d\r\n" % len(words) + b"".join(b"$%d\r\n%s\r\n" % (len(w), w) for w in words))
                s.settimeout(30)
                assert s.recv(100) == b""
        p.proc.wait(30)
        p.stop()
        return os.path.exists(os.path.join(d, "dump.rdb"))
    finally:
        shutil.rmtree(d, ignore_errors=True)


@pytest.mark.parametrize("how,rules", [
    ("sigterm", ""), ("sigterm", "3600 1"), ("", ""), ("", "3600 1"),
    ("SAVE", ""), ("NOSAVE", "3600 1"), ("NOW", "3600 1"),
])
def test_exit_saves_like_valkey(how: str, rules: str) -> None:
    ours = _exit_case(lambda *a: start_trafikey("--emq-brand", "none", *a), how, rules)
    theirs = _exit_case(start_valkey, how, rules)
    assert ours == theirs


def test_sigterm_snapshot_restores(d: str) -> None:
    p = tk(d, "--save", "3600 1")
    r = redis.Redis(port=p.port)
    r.hset(b"h", mapping={b"a": b"1"})
    p.proc.send_signal(signal.SIGTERM)
    assert p.proc.wait(30) == 0
    p.stop()
    p = tk(d)
    try:
        assert redis.Redis(port=p.port).hgetall(b"h") == {b"a": b"1"}
    finally:
        p.stop()


def test_failed_final_save_keeps_serving_like_valkey() -> None:
    """The directory vanishes under the server: SHUTDOWN SAVE fails, the
    server says so and keeps serving; SAVE and BGSAVE report the failure."""
    replies = []
    for start in (start_valkey, lambda *a: start_trafikey("--emq-brand", "none", *a)):
        d = tempfile.mkdtemp(prefix="rdb-gone-")
        p = start("--dir", d)
        try:
            w = Wire(p.port)
            w.call("SET", "k", "v")
            shutil.rmtree(d)
            got = [w.call("SHUTDOWN", "SAVE"), w.call("PING"), w.call("SAVE"),
                   w.call("GET", "k")]
            replies.append(got)
            assert p.proc.poll() is None
        finally:
            p.stop()
    assert replies[0] == replies[1]
    assert replies[1][0] == b"-ERR Errors trying to SHUTDOWN. Check logs.\r\n"

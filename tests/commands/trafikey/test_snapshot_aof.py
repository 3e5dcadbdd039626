"""A restore under ``appendonly yes``: the log's base is rewritten from the
restored keyspace, so a restart loads what the restore put in place and
the writes made after it."""

from __future__ import annotations

import tempfile

from helpers.aof_util import aof_dir, aof_server
from helpers.every_type import commands, load
from helpers.resp_wire import Wire


def test_restart_after_restore_loads_the_restored_data() -> None:
    d = tempfile.mkdtemp(prefix="trafikey-snap-aof-")
    p = aof_server(d, "--enable-debug-command", "yes", "--emq-brand", "none")
    try:
        w = Wire(p.port)
        load(w, commands(300))
        load(w, commands(30, db=4))
        assert w.call("TRAFIKEY.SNAPSHOT", "SAVE", "s") == b"+OK\r\n"
        saved = w.call("DEBUG", "DIGEST")
        w.call("FLUSHALL")
        w.call("SET", "gone", "after restore")
        # Inside a transaction: what the transaction wrote before the
        # restore is replaced by it, what it wrote after is logged.
        w.call("MULTI")
        w.call("SET", "before", "1")
        w.call("TRAFIKEY.SNAPSHOT", "RESTORE", "s")
        w.call("SET", "after", "2")
        assert w.call("EXEC") == b"*3\r\n+OK\r\n+OK\r\n+OK\r\n"
        w.call("DEL", "after")
        assert w.call("DEBUG", "DIGEST") == saved
        w.call("RPUSH", "list:2", "tail")  # a write after the restore, logged as usual
        expected = w.call("DEBUG", "DIGEST")
        w.close()
        files = sorted(f.name for f in aof_dir(d).iterdir())
        # The files from before the restore are gone: one base, one incremental file.
        assert len([f for f in files if f.endswith(".incr.aof")]) == 1
        assert len([f for f in files if ".base." in f]) == 1
    finally:
        p.stop()
    p = aof_server(d, "--enable-debug-command", "yes", "--emq-brand", "none")
    try:
        w = Wire(p.port)
        assert w.call("DEBUG", "DIGEST") == expected
        assert w.call("EXISTS", "gone", "before", "after") == b":0\r\n"
        assert w.call("TRAFIKEY.SNAPSHOT", "LIST") == b"*0\r\n"  # in memory only
        w.close()
    finally:
        p.stop()


def test_restore_during_a_background_rewrite() -> None:
    """A rewrite under way when a restore comes is dropped: its base would
    hold the keyspace before the restore."""
    d = tempfile.mkdtemp(prefix="trafikey-snap-aof-")
    p = aof_server(d, "--enable-debug-command", "yes", "--emq-brand", "none")
    try:
        w = Wire(p.port)
        load(w, commands(2000))
        w.call("TRAFIKEY.SNAPSHOT", "SAVE", "s")
        saved = w.call("DEBUG", "DIGEST")
        w.call("FLUSHALL")
        w.call("SET", "only", "this")
        assert w.call("BGREWRITEAOF") == b"+Background append only file rewriting started\r\n"
        assert w.call("TRAFIKEY.SNAPSHOT", "RESTORE", "s") == b"+OK\r\n"
        assert w.call("DEBUG", "DIGEST") == saved
        assert b"aof_rewrite_in_progress:0" in w.call("INFO", "persistence")
        w.close()
    finally:
        p.stop()
    p = aof_server(d, "--enable-debug-command", "yes", "--emq-brand", "none")
    try:
        w = Wire(p.port)
        assert w.call("DEBUG", "DIGEST") == saved
        w.close()
    finally:
        p.stop()

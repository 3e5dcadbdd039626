"""notify-keyspace-events through CONFIG SET / GET, the command line and
CONFIG REWRITE: the canonical text Valkey shows, and its refusals."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from helpers.keyevents import Watched, readable
from helpers.resp_wire import Wire
from helpers.servers import ROOT, Proc, free_port

# Spellings of every class, repeated and reordered, with and without A.
GOOD = ["", "A", "KEA", "AKEn", "nA", "Kgn", "E$lshzxetdn", "gKm", "mA", "Am", "KEnm", "K", "E", "m", "n",
        "dAx", "gg", "g$lshzxetd", "g$lshzxetdKE", "Elz", "tK", "eKx", "AAAA", "KKEE", "nmEK$",
        "\x00", "K\x00Q", "E\x00"]
BAD = ["Q", "gQ", "E g", "a", "k", "KEA ", " ", "G", "*", "é", "Q\x00K"]


def _get(w: Wire) -> bytes:
    return w.call("CONFIG", "GET", "notify-keyspace-events")


def test_canonical_text_matches_valkey(nvalkey: Proc, ntrafikey: Proc) -> None:
    v, t = Wire(nvalkey.port), Wire(ntrafikey.port)
    try:
        for flags in GOOD:
            for w in (v, t):
                assert w.call("CONFIG", "SET", "notify-keyspace-events", flags) == b"+OK\r\n", flags
            assert _get(t) == _get(v), flags
    finally:
        for w in (v, t):
            w.call("CONFIG", "SET", "notify-keyspace-events", "")
            w.close()


@pytest.mark.parametrize("flags", BAD)
def test_refusals_match_valkey(nvalkey: Proc, ntrafikey: Proc, flags: str) -> None:
    v, t = Wire(nvalkey.port), Wire(ntrafikey.port)
    try:
        for w in (v, t):
            w.call("CONFIG", "SET", "notify-keyspace-events", "Kz")
        got = [w.call("CONFIG", "SET", "notify-keyspace-events", flags) for w in (v, t)]
        assert got[0] == (b"-ERR CONFIG SET failed (possibly related to argument 'notify-keyspace-events') - "
                          b"Invalid event class character. Use 'Ag$lshzxeKEtmdn'.\r\n")
        assert got[1] == got[0]
        # Nothing changed, also with a good option beside it (CONFIG SET is all or nothing).
        got = [w.call("CONFIG", "SET", "hz", "11", "notify-keyspace-events", flags) for w in (v, t)]
        assert got[1] == got[0]
        for w in (v, t):
            assert _get(w) == b"*2\r\n$22\r\nnotify-keyspace-events\r\n$2\r\nzK\r\n"
            assert w.call("CONFIG", "GET", "hz") == b"*2\r\n$2\r\nhz\r\n$2\r\n10\r\n"
    finally:
        for w in (v, t):
            w.call("CONFIG", "SET", "notify-keyspace-events", "")
            w.close()


def test_n_under_A_is_on_but_not_shown(nvalkey: Proc, ntrafikey: Proc) -> None:
    """Valkey's text for A leaves n out; the flag is still on."""
    for p in (nvalkey, ntrafikey):
        w = Wire(p.port)
        w.call("FLUSHALL")
        assert w.call("CONFIG", "SET", "notify-keyspace-events", "AKEn") == b"+OK\r\n"
        assert _get(w).endswith(b"$3\r\nAKE\r\n")
        watched = Watched(p.port)
        _, events = watched.call("SET", "k", "v")
        assert readable(events)[:2] == [(b"__keyspace@0__:k", b"new"), (b"__keyevent@0__:new", b"k")]
        watched.close()
        w.call("CONFIG", "SET", "notify-keyspace-events", "")
        w.close()


def test_command_line_and_rewrite(tmp_path: Path) -> None:
    port = free_port()
    conf = tmp_path / "t.conf"
    conf.write_text(f"port {port}\nsave \"\"\nnotify-keyspace-events Elg\n")
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    # The command line wins over the file, as in Valkey.
    p = Proc([sys.executable, "-m", "trafikey_server", str(conf), "--notify-keyspace-events", "gxKE"], port,
             cwd=str(tmp_path), env=env)
    try:
        w = Wire(p.port)
        assert _get(w).endswith(b"$4\r\ngxKE\r\n")
        watched = Watched(p.port)
        _, events = watched.call("DEL", "nothing")
        assert events == []
        _, events = watched.call("SET", "k", "v")
        assert events == []  # no $ class: SET is not announced
        _, events = watched.call("DEL", "k")
        assert readable(events) == [(b"__keyspace@0__:k", b"del"), (b"__keyevent@0__:del", b"k")]
        watched.close()
        assert w.call("CONFIG", "SET", "notify-keyspace-events", "KEA") == b"+OK\r\n"
        assert w.call("CONFIG", "REWRITE") == b"+OK\r\n"
        assert 'notify-keyspace-events "AKE"' in conf.read_text().splitlines()
        w.close()
    finally:
        p.stop()

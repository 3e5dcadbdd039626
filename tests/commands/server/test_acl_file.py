"""ACL files (aclfile, ACL LOAD, ACL SAVE) and ``user`` lines in the
configuration, beside valkey-server 9.1.2: the same users loaded, the same
refusals in the same words (nothing changed after one), the same clients
closed, the same file saved, the same start-up refusals."""

from __future__ import annotations

import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from helpers.resp_wire import Wire
from helpers.servers import ROOT, Proc, free_port, start_trafikey, start_valkey, valkey_binary

USERS = b"user alice on nopass ~* +@all\nuser bob on >secret ~bob:* +get +set +subscribe &news\n"


@contextmanager
def with_aclfile(text: bytes) -> Iterator[list[tuple[Proc, Path]]]:
    """Both servers, each started on an aclfile (a name relative to dir)
    holding text."""
    out = []
    try:
        for start in (start_valkey, start_trafikey):
            d = Path(tempfile.mkdtemp(prefix="aclfile-"))
            (d / "users.acl").write_bytes(text)
            out.append((start("--dir", str(d), "--aclfile", "users.acl"), d))
        yield out
    finally:
        for srv, _ in out:
            srv.stop()


def test_users_loaded_from_the_file() -> None:
    with with_aclfile(USERS) as servers:
        seen = []
        for srv, _ in servers:
            w = Wire(srv.port)
            seen.append((w.call("ACL", "LIST"), w.call("AUTH", "bob", "secret"), w.call("GET", "bob:1"),
                         w.call("GET", "other")))
            w.close()
        assert seen[0] == seen[1]
        assert seen[0][1] == b"+OK\r\n"


def test_load_refusals_change_nothing() -> None:
    bad = {
        "duplicate": USERS + b"user alice on nopass ~* -@all\n",
        "duplicate default": USERS + b"user default on nopass ~* -@all\nuser default off\n",
        "no keyword": USERS + b"alice on\n",
        "no name": b"user\n",
        "unknown command": b"user carol on +nosuchcommand -get\n",
        "syntax": b"user carol on %Q~x badrule\n",
    }
    with with_aclfile(USERS) as servers:
        seen = []
        for srv, d in servers:
            w = Wire(srv.port)
            before = w.call("ACL", "LIST")
            replies = []
            for text in bad.values():
                (d / "users.acl").write_bytes(text)
                replies.append(w.call("ACL", "LOAD"))
            seen.append((replies, w.call("ACL", "LIST") == before))
            w.close()
        assert seen[0] == seen[1]
        assert all(r.startswith(b"-ERR ") for r in seen[0][0]) and seen[0][1]


def test_load_closes_the_clients_of_users_gone() -> None:
    """Clients of a deleted user, or subscribed to a channel the new rules
    refuse, are closed; the others stay and follow the new rules."""
    with with_aclfile(USERS) as servers:
        seen = []
        for srv, d in servers:
            alice, bob, other = Wire(srv.port), Wire(srv.port), Wire(srv.port)
            alice.call("AUTH", "alice", "x")
            bob.call("AUTH", "bob", "secret")
            bob.call("SUBSCRIBE", "news")
            (d / "users.acl").write_bytes(b"user bob on >secret ~bob:* +get +subscribe &other\n")
            loaded = other.call("ACL", "LOAD")
            gone = []
            for w in (alice, bob):
                try:
                    gone.append(w.read_until_closed(2.0))
                except AssertionError:
                    gone.append(b"still open")
            seen.append((loaded, gone, other.call("PING"), other.call("ACL", "USERS")))
            for w in (alice, bob, other):
                w.close()
        assert seen[0] == seen[1]
        assert seen[0][1] == [b"", b""]


def test_save_writes_the_users() -> None:
    with with_aclfile(USERS) as servers:
        saved = []
        for srv, d in servers:
            w = Wire(srv.port)
            w.call("ACL", "SETUSER", "carol", "on", ">pw", "~c:*", "+@read", "resetchannels", "&x")
            assert w.call("ACL", "SAVE") == b"+OK\r\n"
            saved.append((d / "users.acl").read_bytes())
            (d / "users.acl").write_bytes(b"")
            w.call("ACL", "LOAD")
            assert w.call("ACL", "USERS") == b"*1\r\n$7\r\ndefault\r\n"
            (d / "users.acl").write_bytes(saved[-1])
            assert w.call("ACL", "LOAD") == b"+OK\r\n"
            w.close()
        assert saved[0] == saved[1]


def test_load_and_save_without_a_file() -> None:
    v, t = start_valkey(), start_trafikey()
    try:
        replies = [(Wire(p.port).call("ACL", "LOAD"), Wire(p.port).call("ACL", "SAVE")) for p in (v, t)]
    finally:
        v.stop()
        t.stop()
    assert replies[0] == replies[1]


def _start_up(argv: list[str], cwd: str) -> tuple[int, str]:
    port = str(free_port())
    if argv[0] == "valkey":
        cmd = [valkey_binary(), "--port", port, *argv[1:]]
    else:
        cmd = [sys.executable, "-m", "trafikey_server", "--port", port, *argv[1:]]
    env = {"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=30, cwd=cwd, env=env)
    return out.returncode, out.stdout + out.stderr


def test_start_up_refusals() -> None:
    d = tempfile.mkdtemp(prefix="aclstart-")
    Path(d, "bad.acl").write_text("user alice on +nosuchcommand\n")
    Path(d, "good.acl").write_text("user alice on nopass\n")
    cases = {
        ("--user", "foo", "--user", "foo"): "Duplicate user found",
        ("--user", "default", "--user", "default"): "Duplicate user found",
        ("--dir", d, "--aclfile", "good.acl", "--user", "bob", "on"): "declare users directly in your valkey.conf, "
                                                                      "but not both",
        ("--dir", d, "--aclfile", "bad.acl"): "Aborting Valkey startup because of ACL errors: bad.acl:1: Error in "
                                             "applying operation '+nosuchcommand'",
        ("--dir", d, "--aclfile", "missing.acl"): "Aborting Valkey startup because of ACL errors: Error loading "
                                                 "ACLs, opening file 'missing.acl': No such file or directory",
        ("--user", "carol", "on", "+nosuchcommand"): "Critical error while loading ACLs. Exiting.",
    }
    for args, words in cases.items():
        for who in ("valkey", "trafikey"):
            code, out = _start_up([who, *args], d)
            assert code != 0 and words in out, (who, args, out[-600:])


def test_user_lines_in_the_configuration() -> None:
    args = ("--user", "alice", "on", "nopass", "~a:*", "+get", "--user", "default", "on", "nopass", "~*", "+@all",
            "-flushdb")
    v, t = start_valkey(*args), start_trafikey(*args)
    try:
        seen = [(Wire(p.port).call("ACL", "LIST"), Wire(p.port).call("FLUSHDB")) for p in (v, t)]
    finally:
        v.stop()
        t.stop()
    assert seen[0] == seen[1]
    assert seen[0][1].startswith(b"-NOPERM")

"""CLIENT LIST and CLIENT KILL's USER filter with users made by ACL SETUSER,
against Valkey: any user of the ACL is known to the filter, with or without
a connection of its own (redis-py's test_client_kill_filter_by_user kills
by a user whose only connection may already be gone)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from helpers.resp_wire import Wire
from helpers.servers import Proc, own_pair


@pytest.fixture(scope="module")
def servers() -> Iterator[tuple[Proc, Proc]]:
    # users of their own: the shared pair's ACL stays as other tests expect it
    with own_pair() as pair:
        yield pair


def _run(port: int, steps: list[tuple[str, ...]]) -> list[bytes]:
    admin = Wire(port)
    conns: list[Wire] = []
    out: list[bytes] = []
    try:
        for step in steps:
            if step[0] == "CONNECT":  # a connection authenticated as the user named
                w = Wire(port)
                out.append(w.call("AUTH", step[1], "pw"))
                conns.append(w)
            else:
                out.append(admin.call(*step))
        out.append(b"alive=%d" % sum(1 for w in conns if _alive(w)))
    finally:
        for w in conns:
            w.close()
        admin.close()
    return out


def _alive(w: Wire) -> bool:
    try:
        return w.call("PING") == b"+PONG\r\n"
    except OSError:
        return False


CASES: dict[str, list[tuple[str, ...]]] = {
    "no-connection": [
        ("ACL", "SETUSER", "lonely", "reset", "on", "nopass", "+get"),
        ("CLIENT", "KILL", "USER", "lonely"), ("CLIENT", "LIST", "USER", "lonely"),
        ("CLIENT", "KILL", "USER", "lonely", "SKIPME", "yes"), ("ACL", "DELUSER", "lonely"),
        ("CLIENT", "KILL", "USER", "lonely"), ("CLIENT", "LIST", "USER", "lonely"),
    ],
    "kill-its-connections": [
        ("ACL", "SETUSER", "victim", "reset", "on", ">pw", "+@all", "~*"),
        ("ACL", "SETUSER", "bystander", "reset", "on", ">pw", "+@all", "~*"),
        ("CONNECT", "victim"), ("CONNECT", "victim"), ("CONNECT", "bystander"),
        ("CLIENT", "KILL", "USER", "victim"), ("CLIENT", "KILL", "USER", "victim"),
        ("ACL", "DELUSER", "victim", "bystander"),
    ],
    "disabled-user-and-nul": [
        ("ACL", "SETUSER", "sleeper", "reset", "off"),
        ("CLIENT", "KILL", "USER", "sleeper"), ("CLIENT", "KILL", "NOT-USER", "sleeper", "USER", "sleeper"),
        ("CLIENT", "KILL", "USER", "sleeper\x00x"), ("CLIENT", "LIST", "USER", "Sleeper"),
        ("ACL", "DELUSER", "sleeper"),
    ],
}


@pytest.mark.parametrize("name", list(CASES))
def test_user_filter_knows_acl_users(servers: tuple[Proc, Proc], name: str) -> None:
    v, t = servers
    assert _run(t.port, CASES[name]) == _run(v.port, CASES[name])

"""A trafikey-server listening on TCP, a unix socket and TLS at once, and a
Valkey on TCP and its own unix socket, shared by the module's tests; the
``transport`` parameter runs a test over each of tcp, unix and tls."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers.certs import Certs, make_certs
from helpers.servers import start_valkey
from helpers.transports import TRANSPORTS, Endpoints, start_all_ways, wait_unix


@pytest.fixture(scope="session")
def certs(tmp_path_factory: pytest.TempPathFactory) -> Certs:
    return make_certs(tmp_path_factory.mktemp("certs"), clients=("client", "certuser"))


@pytest.fixture(scope="module")
def net(tmp_path_factory: pytest.TempPathFactory, certs: Certs) -> Iterator[Endpoints]:
    ep = start_all_ways(str(tmp_path_factory.mktemp("sock")), certs)
    yield ep
    assert ep.proc is not None
    ep.proc.stop()


@pytest.fixture(scope="module")
def oracle(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Endpoints]:
    """Valkey 9.1.2 on TCP and on a unix socket of its own (it has no TLS:
    TLS conversations are compared with its TCP replies)."""
    unix = str(Path(tmp_path_factory.mktemp("vsock")) / "valkey.sock")
    p = start_valkey("--unixsocket", unix, "--unixsocketperm", "700")
    wait_unix(unix, p.proc)
    yield Endpoints(p.port, unix, 0, None, p)
    p.stop()


@pytest.fixture(params=TRANSPORTS)
def transport(request: pytest.FixtureRequest) -> str:
    return str(request.param)

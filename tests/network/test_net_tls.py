"""TLS as Valkey's src/tls.c and tests/unit/tls.tcl describe it.

The Valkey oracle is built without TLS, so these cases are checked
directly: client certificates required, optional or not asked for,
tls-auth-clients-user, tls-protocols, tls-ciphers and
tls-prefer-server-ciphers, CONFIG SET of the certificate files, the
start-up refusals with Valkey's log lines, and real clients (redis-py,
redis-cli --tls) over it.
"""

from __future__ import annotations

import datetime
import shutil
import socket
import ssl
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
from cryptography import x509
from helpers.certs import Certs
from helpers.resp_wire import Wire, encode
from helpers.transports import Endpoints, client_context, dial, raw_socket, tls_args, trafikey_argv, trafikey_env

from trafikey_server.util.procs import free_port, wait_port

UPDATE_FAILED = b"Unable to update TLS configuration. Check server logs."


@pytest.fixture
def admin(net: Endpoints) -> Iterator[Wire]:
    """A TCP connection to change the server's configuration; what a test
    changes is put back after it."""
    w = Wire(net.port)
    keep = {name: w.call("CONFIG", "GET", name) for name in (
        "tls-auth-clients", "tls-auth-clients-user", "tls-protocols", "tls-ciphers", "tls-prefer-server-ciphers",
        "tls-cert-file", "tls-key-file", "tls-key-file-pass", "tls-ca-cert-file", "tls-ca-cert-dir",
        "tls-auto-reload-interval", "requirepass")}
    yield w
    back: list[bytes] = []
    for name, reply in keep.items():
        back += [name.encode(), reply.split(b"\r\n")[4]]
    assert w.call("CONFIG", "SET", *back) == b"+OK\r\n"  # at once: a certificate and its key together
    w.call("ACL", "DELUSER", "certuser", "urn:certuser", "urn:certuser:second")
    w.close()


def _ping(net: Endpoints, ctx: ssl.SSLContext) -> bytes:
    """PING over a new TLS connection made with ``ctx``: the reply, or the
    error that ended the connection, as text."""
    try:
        w = dial(net, "tls", ctx)
    except (ssl.SSLError, OSError) as e:
        return f"error: {e}".encode()
    try:
        return w.call("PING")
    except (ssl.SSLError, OSError, ConnectionError) as e:
        return f"error: {e}".encode()
    finally:
        w.close()


def _ctx(certs: Certs, client: str | None = "client", ca: str = "ca", **versions: ssl.TLSVersion) -> ssl.SSLContext:
    ctx = client_context(certs, client, ca)
    for attr, v in versions.items():
        setattr(ctx, attr, v)
    return ctx


def test_not_accepting_plain_connections_on_the_tls_port(net: Endpoints) -> None:
    s = socket.create_connection(("127.0.0.1", net.tls_port), timeout=10)
    s.sendall(encode("PING"))
    got = b""
    try:
        while chunk := s.recv(4096):
            got += chunk
    except ConnectionResetError:
        pass
    s.close()
    assert b"PONG" not in got


def test_tls_auth_clients(net: Endpoints, certs: Certs, admin: Wire) -> None:
    no_cert = _ctx(certs, None)
    rogue = _ctx(certs, "rogue")
    assert _ping(net, _ctx(certs)) == b"+PONG\r\n"
    assert _ping(net, no_cert).startswith(b"error")
    assert _ping(net, rogue).startswith(b"error")
    admin.call("CONFIG", "SET", "tls-auth-clients", "no")
    assert _ping(net, no_cert) == b"+PONG\r\n"
    admin.call("CONFIG", "SET", "tls-auth-clients", "optional")
    assert _ping(net, no_cert) == b"+PONG\r\n"
    assert _ping(net, _ctx(certs)) == b"+PONG\r\n"
    assert _ping(net, rogue).startswith(b"error")  # a certificate, when sent, must verify
    admin.call("CONFIG", "SET", "tls-auth-clients", "yes")
    assert _ping(net, no_cert).startswith(b"error")


def test_tls_protocols(net: Endpoints, certs: Certs, admin: Wire) -> None:
    only12 = _ctx(certs, maximum_version=ssl.TLSVersion.TLSv1_2)
    only13 = _ctx(certs, minimum_version=ssl.TLSVersion.TLSv1_3)
    assert _ping(net, only12) == _ping(net, only13) == b"+PONG\r\n"  # the default: TLSv1.2 and TLSv1.3
    assert admin.call("CONFIG", "SET", "tls-protocols", "TLSv1.2") == b"+OK\r\n"
    assert _ping(net, only13).startswith(b"error")
    assert _ping(net, only12) == b"+PONG\r\n"
    assert admin.call("CONFIG", "SET", "tls-protocols", "tlsv1.3") == b"+OK\r\n"  # any case, as Valkey
    assert _ping(net, only12).startswith(b"error")
    assert _ping(net, only13) == b"+PONG\r\n"
    assert admin.call("CONFIG", "SET", "tls-protocols", "TLSv1.2 SSLv3") == (
        b"-ERR CONFIG SET failed (possibly related to argument 'tls-protocols') - " + UPDATE_FAILED + b"\r\n")
    assert admin.call("CONFIG", "GET", "tls-protocols") == b"*2\r\n$13\r\ntls-protocols\r\n$7\r\ntlsv1.3\r\n"
    assert _ping(net, only13) == b"+PONG\r\n"  # the old context kept


def test_tls_ciphers(net: Endpoints, certs: Certs, admin: Wire) -> None:
    admin.call("CONFIG", "SET", "tls-protocols", "TLSv1.2")
    admin.call("CONFIG", "SET", "tls-ciphers", "DEFAULT:-ECDHE-ECDSA-AES128-GCM-SHA256")
    aes128, aes256 = _ctx(certs), _ctx(certs)
    aes128.set_ciphers("ECDHE-ECDSA-AES128-GCM-SHA256")
    aes256.set_ciphers("ECDHE-ECDSA-AES256-GCM-SHA384")
    assert _ping(net, aes128).startswith(b"error")
    assert _ping(net, aes256) == b"+PONG\r\n"
    admin.call("CONFIG", "SET", "tls-ciphers", "DEFAULT")
    assert _ping(net, aes128) == b"+PONG\r\n"
    assert admin.call("CONFIG", "SET", "tls-ciphers", "NO-SUCH-CIPHER").startswith(
        b"-ERR CONFIG SET failed (possibly related to argument 'tls-ciphers') - " + UPDATE_FAILED)


def test_tls_prefer_server_ciphers(net: Endpoints, certs: Certs, admin: Wire) -> None:
    admin.call("CONFIG", "SET", "tls-protocols", "TLSv1.2")
    admin.call("CONFIG", "SET", "tls-ciphers", "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-ECDSA-AES256-GCM-SHA384")

    def negotiated() -> str:
        ctx = _ctx(certs)
        ctx.set_ciphers("ECDHE-ECDSA-AES256-GCM-SHA384:ECDHE-ECDSA-AES128-GCM-SHA256")
        s = raw_socket(net, "tls", ctx)
        try:
            assert isinstance(s, ssl.SSLSocket)
            cipher = s.cipher()
            assert cipher is not None
            return cipher[0]
        finally:
            s.close()

    assert negotiated() == "ECDHE-ECDSA-AES256-GCM-SHA384"
    admin.call("CONFIG", "SET", "tls-prefer-server-ciphers", "yes")
    assert negotiated() == "ECDHE-ECDSA-AES128-GCM-SHA256"


def _served_cert_cn(net: Endpoints, certs: Certs) -> str:
    s = raw_socket(net, "tls", _ctx(certs))
    try:
        assert isinstance(s, ssl.SSLSocket)
        peer = s.getpeercert()
        assert peer
        return dict(x[0] for x in peer["subject"])["commonName"]
    finally:
        s.close()


def test_config_set_reloads_the_certificate(net: Endpoints, certs: Certs, admin: Wire) -> None:
    assert _served_cert_cn(net, certs) == "server"
    kept = dial(net, "tls")
    refused = b"-ERR CONFIG SET failed (possibly related to argument 'tls-cert-file') - " + UPDATE_FAILED + b"\r\n"
    assert admin.call("CONFIG", "SET", "tls-cert-file", "/no/such/file.crt") == refused
    assert admin.call("CONFIG", "SET", "tls-cert-file", certs.key("server")) == refused  # a key is no certificate
    assert admin.call("CONFIG", "GET", "tls-cert-file") == (
        b"*2\r\n$13\r\ntls-cert-file\r\n$%d\r\n%s\r\n" % (len(certs.crt("server")), certs.crt("server").encode()))
    assert _served_cert_cn(net, certs) == "server"
    # server2's certificate with server's key: the key does not match.
    assert admin.call("CONFIG", "SET", "tls-cert-file", certs.crt("server2")) == refused
    assert admin.call("CONFIG", "SET", "tls-cert-file", certs.crt("server2"),
                      "tls-key-file", certs.key("server2")) == b"+OK\r\n"
    assert _served_cert_cn(net, certs) == "server2"
    assert kept.call("PING") == b"+PONG\r\n"  # a connection made before keeps its session
    kept.close()


def test_ca_cert_dir(net: Endpoints, certs: Certs, admin: Wire, tmp_path: Path) -> None:
    """tls-ca-cert-dir: a folder of CA certificates under their hashed names
    (``openssl rehash``), in place of tls-ca-cert-file."""
    if shutil.which("openssl") is None:
        pytest.skip("no openssl command to name the CA files by their hash")
    folder = tmp_path / "cas"
    folder.mkdir()
    shutil.copy(certs.crt("ca"), folder / "ca.pem")
    subprocess.run(["openssl", "rehash", str(folder)], check=True, capture_output=True)
    assert admin.call("CONFIG", "SET", "tls-ca-cert-file", "", "tls-ca-cert-dir", str(folder)) == b"+OK\r\n"
    assert _ping(net, _ctx(certs)) == b"+PONG\r\n"
    assert _ping(net, _ctx(certs, "rogue")).startswith(b"error")
    # Neither a file nor a folder while client certificates are asked for: refused, the old context kept.
    assert admin.call("CONFIG", "SET", "tls-ca-cert-dir", "") == (
        b"-ERR CONFIG SET failed (possibly related to argument 'tls-ca-cert-dir') - " + UPDATE_FAILED + b"\r\n")
    assert _ping(net, _ctx(certs)) == b"+PONG\r\n"


def test_auto_reload(net: Endpoints, certs: Certs, admin: Wire, tmp_path: Path) -> None:
    """tls-auto-reload-interval: files changed in place are picked up
    within the interval, without a CONFIG SET."""
    crt, key = tmp_path / "live.crt", tmp_path / "live.key"
    shutil.copy(certs.crt("server"), crt)
    shutil.copy(certs.key("server"), key)
    assert admin.call("CONFIG", "SET", "tls-cert-file", str(crt), "tls-key-file", str(key),
                      "tls-auto-reload-interval", "1") == b"+OK\r\n"
    assert _served_cert_cn(net, certs) == "server"
    shutil.copy(certs.crt("server2"), crt)
    shutil.copy(certs.key("server2"), key)
    deadline = time.monotonic() + 10
    while _served_cert_cn(net, certs) != "server2":
        assert time.monotonic() < deadline, "the changed certificate was never loaded"
        time.sleep(0.1)
    assert admin.call("CONFIG", "SET", "tls-auto-reload-interval", "-1").startswith(b"-ERR CONFIG SET failed")


def test_encrypted_key_file(net: Endpoints, certs: Certs, admin: Wire) -> None:
    enc = certs.key("server-enc")
    assert admin.call("CONFIG", "SET", "tls-key-file", enc) == (
        b"-ERR CONFIG SET failed (possibly related to argument 'tls-key-file') - " + UPDATE_FAILED + b"\r\n")
    assert admin.call("CONFIG", "SET", "tls-key-file-pass", "1234") == b"+OK\r\n"
    assert admin.call("CONFIG", "SET", "tls-key-file", enc) == b"+OK\r\n"
    assert _ping(net, _ctx(certs)) == b"+PONG\r\n"


@pytest.mark.parametrize("field", ["CN", "URI"])
def test_tls_auth_clients_user(net: Endpoints, certs: Certs, admin: Wire, field: str) -> None:
    user = "certuser" if field == "CN" else "urn:certuser"
    assert admin.call("ACL", "SETUSER", user, "on", "nopass", "+@all", "~*") == b"+OK\r\n"
    admin.call("CONFIG", "SET", "requirepass", "pw")
    admin.call("CONFIG", "SET", "tls-auth-clients-user", field)
    named = dial(net, "tls", _ctx(certs, "certuser"))
    assert named.call("ACL", "WHOAMI") == b"$%d\r\n%s\r\n" % (len(user), user.encode())
    assert named.call("PING") == b"+PONG\r\n"
    named.close()
    # A certificate naming no user: the default user, which needs AUTH.
    other = dial(net, "tls")
    assert other.call("PING").startswith(b"-NOAUTH")
    assert other.call("AUTH", "pw") == b"+OK\r\n"
    assert other.call("ACL", "WHOAMI") == b"$7\r\ndefault\r\n"
    other.close()
    # A disabled user is not logged in by its certificate.
    admin.call("ACL", "SETUSER", user, "off")
    off = dial(net, "tls", _ctx(certs, "certuser"))
    assert off.call("PING").startswith(b"-NOAUTH")
    off.close()
    if field == "URI":
        # The first URI naming an enabled user is the one: the second, while the first is off.
        assert admin.call("ACL", "SETUSER", "urn:certuser:second", "on", "nopass", "+@all") == b"+OK\r\n"
        second = dial(net, "tls", _ctx(certs, "certuser"))
        assert second.call("ACL", "WHOAMI") == b"$19\r\nurn:certuser:second\r\n"
        second.close()
        admin.call("ACL", "SETUSER", user, "on")
        first = dial(net, "tls", _ctx(certs, "certuser"))
        assert first.call("ACL", "WHOAMI") == b"$12\r\nurn:certuser\r\n"
        first.close()
    # And with the option off, a certificate logs nobody in.
    admin.call("ACL", "SETUSER", user, "on")
    admin.call("CONFIG", "SET", "tls-auth-clients-user", "off")
    plain = dial(net, "tls", _ctx(certs, "certuser"))
    assert plain.call("PING").startswith(b"-NOAUTH")
    plain.close()


def test_switch_between_tcp_and_tls_ports(certs: Certs) -> None:
    """Valkey's "TLS: switch between tcp and tls ports", on a server of its own."""
    port = free_port()
    tls_port = free_port()
    proc = subprocess.Popen(trafikey_argv("--port", str(port), *tls_args(certs, tls_port)),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=trafikey_env())
    try:
        wait_port(port, proc)
        ep = Endpoints(port, "", tls_port, certs)
        w = dial(ep, "tls")
        assert w.call("CONFIG", "SET", "tls-port", "0") == b"+OK\r\n"
        assert w.call("CONFIG", "SET", "port", str(tls_port)) == b"+OK\r\n"
        w.close()
        plain = dial(Endpoints(tls_port), "tcp")
        assert plain.call("PING") == b"+PONG\r\n"
        assert plain.call("CONFIG", "SET", "port", "0") == b"+OK\r\n"
        assert plain.call("CONFIG", "SET", "tls-port", str(tls_port)) == b"+OK\r\n"
        plain.close()
        again = dial(ep, "tls")
        assert again.call("PING") == b"+PONG\r\n"
        lines = again.call("INFO", "server").decode()
        assert f"listener2:name=tls,bind=*,bind=-::*,port={tls_port}\r\n" in lines  # the default bind
        assert "listener0:name=tcp\r\n" in lines  # closed by CONFIG SET port 0: its bare name, as Valkey
        assert _info_tls(again)["tls_server_cert_serial"] != "none"
        assert again.call("CONFIG", "SET", "port", str(port)) == b"+OK\r\n"
        assert again.call("CONFIG", "SET", "tls-port", "0") == b"+OK\r\n"
        assert set(_info_tls(Wire(port)).values()) == {"none", "0"}  # TLS off: as Valkey without it
        again.close()
    finally:
        proc.terminate()
        proc.wait(10)


def _info_tls(w: Wire) -> dict[str, str]:
    text = w.call("INFO", "tls").split(b"\r\n", 1)[1].decode()
    return dict(line.split(":", 1) for line in text.split("\r\n") if ":" in line)


def test_info_tls(net: Endpoints, certs: Certs) -> None:
    """Valkey 9.1's INFO tls: the serial (hex) and seconds left of the
    server's and the CA's certificates; none and 0 for a client
    certificate that is not configured."""
    w = Wire(net.port)
    info = _info_tls(w)
    w.close()
    now = datetime.datetime.now(datetime.UTC)
    for who in ("server", "ca"):
        cert = x509.load_pem_x509_certificate(Path(certs.crt(who)).read_bytes())
        assert info[f"tls_{who}_cert_serial"] == f"{cert.serial_number:X}".rjust(
            len(info[f"tls_{who}_cert_serial"]), "0")
        left = (cert.not_valid_after_utc - now).total_seconds()
        assert abs(int(info[f"tls_{who}_cert_expires_in_seconds"]) - left) < 60
    assert (info["tls_client_cert_serial"], info["tls_client_cert_expires_in_seconds"]) == ("none", "0")


def test_client_list_of_a_tls_client(net: Endpoints) -> None:
    w = dial(net, "tls")
    here, there = w.sock.getsockname(), w.sock.getpeername()
    line = w.call("CLIENT", "INFO").decode()
    assert f" addr={here[0]}:{here[1]} laddr={there[0]}:{there[1]} " in line
    assert " flags=N " in line
    w.close()


def test_script_debug_refused_over_tls(net: Endpoints) -> None:
    """The debugger talks on the client's socket itself, which TLS does not
    allow here (Valkey debugs over TLS too): refused, nothing turned on."""
    w = dial(net, "tls")
    for mode in ("YES", "SYNC"):
        assert w.call("SCRIPT", "DEBUG", mode) == b"-ERR SCRIPT DEBUG is not supported on TLS connections\r\n"
    assert w.call("SCRIPT", "DEBUG", "NO") == b"+OK\r\n"
    assert w.call("EVAL", "return 1", "0") == b":1\r\n"
    w.close()


def _startup(*args: str) -> tuple[int, list[str]]:
    out = subprocess.run(trafikey_argv("--port", str(free_port()), *args), capture_output=True, text=True,
                         timeout=60, env=trafikey_env())
    lines = [parts[6] for parts in (line.split(" ", 6) for line in (out.stdout + out.stderr).splitlines())
             if len(parts) == 7 and parts[5] == "#"]
    return out.returncode, lines


@pytest.mark.slow
def test_startup_refusals(certs: Certs, tmp_path: Path) -> None:
    port = str(free_port())
    configure = "Failed to configure TLS. Check logs for more info."
    assert _startup("--tls-port", port) == (1, ["No tls-cert-file configured!", configure])
    assert _startup("--tls-port", port, "--tls-cert-file", certs.crt("server")) == (
        1, ["No tls-key-file configured!", configure])
    assert _startup("--tls-port", port, "--tls-cert-file", certs.crt("server"),
                    "--tls-key-file", certs.key("server")) == (
        1, ["Either tls-ca-cert-file or tls-ca-cert-dir must be specified when tls-cluster, "
            "tls-replication or tls-auth-clients are enabled!", configure])
    base = ("--tls-port", port, "--tls-ca-cert-file", certs.crt("ca"))
    code, lines = _startup(*base, "--tls-cert-file", str(tmp_path / "missing.crt"), "--tls-key-file",
                           certs.key("server"))
    assert code == 1 and lines[-1] == configure
    assert lines[0].startswith(f"Failed to load certificate: {tmp_path / 'missing.crt'}: ")
    code, lines = _startup(*base, "--tls-cert-file", certs.crt("server"), "--tls-key-file", certs.key("server2"))
    assert code == 1 and lines[-1] == configure
    assert lines[0].startswith(f"Failed to load private key: {certs.key('server2')}: ")
    assert _startup(*base, "--tls-cert-file", certs.crt("server"), "--tls-key-file", certs.key("server"),
                    "--tls-protocols", "TLSv1.4") == (
        1, ["Invalid tls-protocols specified. Use a combination of 'TLSv1', 'TLSv1.1', 'TLSv1.2' and 'TLSv1.3'.",
            configure])
    assert _startup(*base, "--tls-cert-file", certs.crt("server"), "--tls-key-file", certs.key("server"),
                    "--tls-dh-params-file", str(tmp_path / "dh.pem")) == (
        1, [f"Failed to load {tmp_path / 'dh.pem'}: No such file or directory", configure])


def test_certificates_out_of_their_validity_are_refused(net: Endpoints, certs: Certs, admin: Wire) -> None:
    """Valkey 9.1's fail-fast on expired certificates, at start-up and on CONFIG SET."""
    configure = "Failed to configure TLS. Check logs for more info."
    port = str(free_port())
    assert _startup("--tls-port", port, "--tls-cert-file", certs.crt("server-expired"), "--tls-key-file",
                    certs.key("server-expired"), "--tls-ca-cert-file", certs.crt("ca")) == (
        1, ["Server TLS certificate is invalid", configure])
    assert _startup("--tls-port", port, "--tls-cert-file", certs.crt("server"), "--tls-key-file", certs.key("server"),
                    "--tls-ca-cert-file", certs.crt("ca-expired")) == (
        1, ["One or more loaded CA certificates are invalid", configure])
    refused = b"-ERR CONFIG SET failed (possibly related to argument '%s') - " + UPDATE_FAILED + b"\r\n"
    assert admin.call("CONFIG", "SET", "tls-cert-file", certs.crt("server-expired"), "tls-key-file",
                      certs.key("server-expired")) == refused % b"tls-cert-file"
    assert admin.call("CONFIG", "SET", "tls-ca-cert-file", certs.crt("ca-expired")) == refused % b"tls-ca-cert-file"
    assert _ping(net, _ctx(certs)) == b"+PONG\r\n"


def test_redis_cli_tls(net: Endpoints, certs: Certs) -> None:
    base = ["redis-cli", "-h", "127.0.0.1", "-p", str(net.tls_port), "--tls", "--cacert", certs.crt("ca")]
    out = subprocess.run([*base, "--cert", certs.crt("client"), "--key", certs.key("client"), "PING"],
                         capture_output=True, text=True, timeout=30)
    assert out.stdout == "PONG\n"
    out = subprocess.run([*base, "PING"], capture_output=True, text=True, timeout=30)
    assert "PONG" not in out.stdout


@pytest.mark.slow
def test_redis_py_refuses_an_untrusted_server(net: Endpoints, certs: Certs) -> None:
    r = redis.Redis(host="127.0.0.1", port=net.tls_port, ssl=True, ssl_ca_certs=certs.crt("rogue-ca"),
                    ssl_certfile=certs.crt("client"), ssl_keyfile=certs.key("client"))
    with pytest.raises(redis.ConnectionError):
        r.ping()
    r.close()

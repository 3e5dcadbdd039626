"""TLS as Valkey's src/tls.c configures it, with Python's ssl module.

One server-side ``SSLContext`` is built from the tls-* options, in Valkey's
order and with its log lines for each refusal, and replaced whole only when
a new one builds (CONFIG SET of a tls-* file that cannot be read keeps the
old context, as Valkey's tlsConfigure does). Connections take the context
current when they are accepted; the handshake runs on the event loop
(``loop.connect_accepted_socket(..., ssl=ctx)``), so a TLS connection
reaches ``Connection.connection_made`` only once it is established.

What Python's ssl module cannot set is accepted and checked but has no
effect: the TLS 1.3 cipher suites (``tls-ciphersuites``: no
``SSL_CTX_set_ciphersuites`` binding) and the session cache's size and
timeout (OpenSSL's defaults stay).
"""

from __future__ import annotations

import os
import ssl
import time
import warnings
from typing import TYPE_CHECKING, Any

from ..services.acl import refresh
from ..services.config import ConfigError, register_apply

if TYPE_CHECKING:
    from ..server import Server
    from ..services.client import Client

_PROTOCOLS = {
    "tlsv1": ssl.TLSVersion.TLSv1,
    "tlsv1.1": ssl.TLSVersion.TLSv1_1,
    "tlsv1.2": ssl.TLSVersion.TLSv1_2,
    "tlsv1.3": ssl.TLSVersion.TLSv1_3,
}
_ORDER = list(_PROTOCOLS.values())
_NO_FLAG = {
    ssl.TLSVersion.TLSv1: ssl.OP_NO_TLSv1,
    ssl.TLSVersion.TLSv1_1: ssl.OP_NO_TLSv1_1,
    ssl.TLSVersion.TLSv1_2: ssl.OP_NO_TLSv1_2,
    ssl.TLSVersion.TLSv1_3: ssl.OP_NO_TLSv1_3,
}
# Valkey's REDIS_TLS_PROTO_DEFAULT.
_DEFAULT = {ssl.TLSVersion.TLSv1_2, ssl.TLSVersion.TLSv1_3}
# The TLS 1.3 suites OpenSSL knows (tls-ciphersuites is checked against them).
_SUITES = {"TLS_AES_128_GCM_SHA256", "TLS_AES_256_GCM_SHA384", "TLS_CHACHA20_POLY1305_SHA256",
           "TLS_AES_128_CCM_SHA256", "TLS_AES_128_CCM_8_SHA256"}
UPDATE_FAILED = "Unable to update TLS configuration. Check server logs."


class TlsError(Exception):
    """A context that cannot be built; the message is Valkey's log line."""


def openssl_text(e: BaseException) -> str:
    """OpenSSL's error string as Valkey logs it (ERR_error_string_n), from
    what Python's exception keeps of it."""
    if isinstance(e, ssl.SSLError) and e.library and e.reason:
        return f"{e.library} routines::{e.reason.lower().replace('_', ' ')}"
    if isinstance(e, OSError) and e.errno and e.strerror:
        return f"system library::{e.strerror}"
    return str(e)


def _protocols(text: str) -> set[ssl.TLSVersion]:
    if not text:
        return set(_DEFAULT)
    out = set()
    for word in text.split(" "):
        v = _PROTOCOLS.get(word.lower())
        if v is None:
            raise TlsError("Invalid tls-protocols specified. "
                           "Use a combination of 'TLSv1', 'TLSv1.1', 'TLSv1.2' and 'TLSv1.3'.")
        out.add(v)
    return out


def _key_password(value: str) -> Any:
    # Without a password OpenSSL would ask on the terminal; Valkey's
    # callback refuses instead, and so does an empty answer here.
    return value if value else (lambda: b"")


def build_context(v: dict[str, Any]) -> ssl.SSLContext:
    """The server context for these option values, or TlsError with the
    line Valkey logs for the first thing that fails."""
    cert, key = v["tls-cert-file"], v["tls-key-file"]
    if not cert:
        raise TlsError("No tls-cert-file configured!")
    if not key:
        raise TlsError("No tls-key-file configured!")
    if v["tls-auth-clients"] != "no" and not v["tls-ca-cert-file"] and not v["tls-ca-cert-dir"]:
        raise TlsError("Either tls-ca-cert-file or tls-ca-cert-dir must be specified when tls-cluster, "
                       "tls-replication or tls-auth-clients are enabled!")
    protocols = _protocols(v["tls-protocols"])
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    low, high = min(protocols, key=_ORDER.index), max(protocols, key=_ORDER.index)
    with warnings.catch_warnings():  # the TLSv1/OP_NO_* options are deprecated, and Valkey's
        warnings.simplefilter("ignore", DeprecationWarning)
        ctx.minimum_version = low
        ctx.maximum_version = high
        for version in _ORDER[_ORDER.index(low):_ORDER.index(high) + 1]:
            if version not in protocols:  # a hole in the range: "TLSv1.1 TLSv1.3"
                ctx.options |= _NO_FLAG[version]
    # OpenSSL's own cipher list, as Valkey leaves it without tls-ciphers (Python
    # sets a list of its own); OpenSSL 3 refuses TLS < 1.2 at its default level.
    ctx.set_ciphers("DEFAULT:@SECLEVEL=0" if low < ssl.TLSVersion.TLSv1_2 else "DEFAULT")
    ctx.options |= ssl.OP_NO_COMPRESSION | ssl.OP_NO_RENEGOTIATION | ssl.OP_SINGLE_DH_USE
    # Python prefers the server's cipher order by default; Valkey only with the option.
    ctx.options &= ~ssl.OP_CIPHER_SERVER_PREFERENCE
    try:
        ctx.load_cert_chain(cert, key, password=_key_password(v["tls-key-file-pass"]))
    except (ssl.SSLError, OSError) as e:
        # Python loads both at once where Valkey loads the chain, then the
        # key: the certificate is to blame when it does not load alone.
        try:
            ssl.create_default_context(cafile=cert)
        except (ssl.SSLError, OSError) as ce:
            raise TlsError(f"Failed to load certificate: {cert}: {openssl_text(ce)}") from None
        raise TlsError(f"Failed to load private key: {key}: {openssl_text(e)}") from None
    ca_file, ca_dir = v["tls-ca-cert-file"] or None, v["tls-ca-cert-dir"] or None
    if ca_file or ca_dir:
        try:
            ctx.load_verify_locations(cafile=ca_file, capath=ca_dir)
        except (ssl.SSLError, OSError) as e:
            raise TlsError(f"Failed to configure CA certificate(s) file/directory: {openssl_text(e)}") from None
    if v["tls-ciphers"]:
        try:
            ctx.set_ciphers(v["tls-ciphers"])
        except ssl.SSLError:
            raise TlsError(f"Failed to configure ciphers: {v['tls-ciphers']}") from None
    suites = v["tls-ciphersuites"]
    if suites and not any(s in _SUITES for s in suites.split(":")):
        raise TlsError(f"Failed to configure ciphersuites: {suites}")
    if not v["tls-session-caching"]:
        ctx.options |= ssl.OP_NO_TICKET
    if v["tls-prefer-server-ciphers"]:
        ctx.options |= ssl.OP_CIPHER_SERVER_PREFERENCE
    dh = v["tls-dh-params-file"]
    if dh:
        if not os.access(dh, os.R_OK):
            try:
                open(dh).close()
            except OSError as e:
                raise TlsError(f"Failed to load {dh}: {e.strerror}") from None
        try:
            ctx.load_dh_params(dh)
        except (ssl.SSLError, OSError):
            raise TlsError(f"{dh}: failed to read DH params.") from None
    ctx.verify_mode = verify_mode(v["tls-auth-clients"])
    _check_validity(ctx, v)
    return ctx


def _valid_now(cert: dict[str, Any]) -> bool:
    now = time.time()
    try:
        return ssl.cert_time_to_seconds(cert["notBefore"]) <= now <= ssl.cert_time_to_seconds(cert["notAfter"])
    except (KeyError, ValueError):
        return True


def _check_validity(ctx: ssl.SSLContext, v: dict[str, Any]) -> None:
    """Valkey 9.1 refuses certificates outside their validity period,
    at start-up and on CONFIG SET alike."""
    server = _decode(v["tls-cert-file"])
    if server is not None and not _valid_now(server):
        raise TlsError("Server TLS certificate is invalid")
    if v["tls-client-cert-file"]:
        client = _decode(v["tls-client-cert-file"])
        if client is not None and not _valid_now(client):
            raise TlsError("Client TLS certificate is invalid")
    cas = list(ctx.get_ca_certs())
    folder = v["tls-ca-cert-dir"]
    if folder:
        cas += [c for c in (_decode(os.path.join(folder, n)) for n in _listing(folder)) if c is not None]
    if not all(_valid_now(c) for c in cas):
        raise TlsError("One or more loaded CA certificates are invalid")


def _listing(folder: str) -> list[str]:
    try:
        return sorted(os.listdir(folder))
    except OSError:
        return []


def _decode(path: str) -> dict[str, Any] | None:
    """The first certificate of a PEM file, as ssl's getpeercert() shows one."""
    try:
        return ssl._ssl._test_decode_cert(path)  # type: ignore[attr-defined,no-any-return]
    except (ssl.SSLError, OSError, ValueError):
        return None


def _summary(cert: dict[str, Any]) -> tuple[str, float]:
    return str(cert.get("serialNumber", "none")), float(ssl.cert_time_to_seconds(cert["notAfter"]))


def _describe(ctx: ssl.SSLContext, v: dict[str, Any]) -> dict[str, tuple[str, float]]:
    out = {}
    server = _decode(v["tls-cert-file"])
    if server is not None:
        out["server"] = _summary(server)
    if v["tls-client-cert-file"]:
        client = _decode(v["tls-client-cert-file"])
        if client is not None:
            out["client"] = _summary(client)
    cas = [_summary(c) for c in ctx.get_ca_certs() if "notAfter" in c]
    folder = v["tls-ca-cert-dir"]
    if folder:
        for name in _listing(folder):
            cert = _decode(os.path.join(folder, name))
            if cert is not None and "notAfter" in cert:
                cas.append(_summary(cert))
    if cas:
        out["ca"] = min(cas, key=lambda c: c[1])
    return out


def verify_mode(auth_clients: str) -> ssl.VerifyMode:
    """tls-auth-clients, read for each accepted connection as Valkey does."""
    if auth_clients == "no":
        return ssl.CERT_NONE
    if auth_clients == "optional":
        return ssl.CERT_OPTIONAL
    return ssl.CERT_REQUIRED


_FILES = ("tls-cert-file", "tls-key-file", "tls-ca-cert-file", "tls-client-cert-file", "tls-client-key-file",
          "tls-dh-params-file")


class Tls:
    """The server's TLS context, configured at start-up and by CONFIG SET,
    and rebuilt by tls-auto-reload-interval when its files change."""

    def __init__(self, server: Server) -> None:
        self.server = server
        self.context: ssl.SSLContext | None = None
        # What the files looked like when the context was built, and when
        # they were last looked at (tls-auto-reload-interval).
        self.stamp: tuple[Any, ...] = ()
        self.checked = 0.0
        # (serial, expiry time) of the server, client and CA certificates.
        self.certs: dict[str, tuple[str, float]] = {}

    def _stamp(self) -> tuple[Any, ...]:
        """Each configured file's (and tls-ca-cert-dir's entries')
        identity, size and modification time."""
        v = self.server.config.values
        paths = [v[name] for name in _FILES if v[name]]
        folder = v["tls-ca-cert-dir"]
        if folder:
            try:
                paths += sorted(os.path.join(folder, f) for f in os.listdir(folder))
            except OSError:
                paths.append(folder)
        out: list[Any] = []
        for path in paths:
            try:
                st = os.stat(path)
                out.append((path, st.st_ino, st.st_size, st.st_mtime_ns))
            except OSError:
                out.append((path, None))
        return tuple(out)

    def cron(self) -> None:
        """Called about once a second: every tls-auto-reload-interval
        seconds, a new context if any of the files changed."""
        v = self.server.config.values
        interval = v["tls-auto-reload-interval"]
        if not interval or self.context is None or not v["tls-port"]:
            return
        now = time.monotonic()
        if now - self.checked < interval:
            return
        self.checked = now
        stamp = self._stamp()
        if stamp == self.stamp:
            self.server.log.debug("TLS materials unchanged, skipping reload")
            return
        if self.configure(True):
            self.server.log.notice("TLS materials reloaded successfully")
        else:
            self.stamp = stamp  # tried once; the old context stays until they change again
            self.server.log.warning("TLS materials reload failed, keeping the current ones")

    def configure(self, reconfigure: bool) -> bool:
        """Valkey's tlsConfigure: a new context, or False with the reason
        logged and the old context kept."""
        if not reconfigure and self.context is not None:
            return True
        stamp = self._stamp()
        try:
            ctx = build_context(self.server.config.values)
        except TlsError as e:
            self.server.log.warning(str(e))
            return False
        self.context = ctx
        self.stamp = stamp
        self.certs = _describe(ctx, self.server.config.values)
        return True

    def info(self) -> list[tuple[str, object]]:
        """INFO tls: each certificate's serial and seconds left, while TLS
        is on (``none`` and 0 otherwise, and for a missing client one); the
        CA's is the one of the trusted set that expires first."""
        on = self.context is not None and self.server.config.values["tls-port"]
        now = time.time()
        out: list[tuple[str, object]] = []
        for who in ("server", "client", "ca"):
            cert = self.certs.get(who) if on else None
            out.append((f"tls_{who}_cert_serial", cert[0] if cert else "none"))
            out.append((f"tls_{who}_cert_expires_in_seconds", int(cert[1] - now) if cert else 0))
        return out


    def context_for_accept(self) -> ssl.SSLContext | None:
        """The context a newly accepted connection handshakes with, its
        verification as tls-auth-clients says now."""
        ctx = self.context
        if ctx is not None:
            mode = verify_mode(self.server.config.values["tls-auth-clients"])
            if ctx.verify_mode != mode:
                ctx.verify_mode = mode
        return ctx


def certificate_user(server: Server, c: Client, transport: Any) -> None:
    """tls-auth-clients-user: a client whose verified certificate names an
    existing, enabled ACL user (its subject CN, or the first of its URI
    subject alternative names that does) is authenticated as that user
    from its first request, as with AUTH; otherwise it stays the default
    user."""
    field = server.config.values["tls-auth-clients-user"]
    if field == "off":
        return
    cert = transport.get_extra_info("peercert")
    if not cert:
        return
    if field == "CN":
        names = [value for rdn in cert.get("subject", ()) for key, value in rdn if key == "commonName"][:1]
    else:
        names = [value for kind, value in cert.get("subjectAltName", ()) if kind == "URI"]
    for name in names:
        user = server.acl.users.get(name.encode())
        if user is not None and user.enabled:
            c.authenticated = True
            c.acl = user
            c.user = user.name
            refresh(c)
            return


def _apply_tls(server: Server, value: object) -> None:
    """Valkey's applyTlsCfg: rebuild the context while TLS is in use."""
    if server.config.values["tls-port"] and not server.tls.configure(True):
        raise ConfigError(UPDATE_FAILED)


def _apply_tls_port(server: Server, value: int) -> None:
    """Valkey's applyTLSPort: a context if there is none yet, then the
    TLS listeners move to the new port (none for 0)."""
    if not server.tls.configure(False):
        raise ConfigError(UPDATE_FAILED)
    if not server.relisten_tls():
        raise ConfigError("Unable to listen on this port. Check server logs.")


register_apply("tls", _apply_tls)
register_apply("tls-port", _apply_tls_port)

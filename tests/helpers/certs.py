"""Certificates for TLS tests, made on the spot with ``cryptography``.

A CA, a server certificate for 127.0.0.1 and localhost, client
certificates signed by that CA (one per common name asked for, with the URI
subject alternative names ``urn:<cn>`` and ``urn:<cn>:second``), and a second CA with a client of
its own, which the server must not trust. Files are PEM, named
``<name>.crt`` and ``<name>.key`` in the folder given.
"""

from __future__ import annotations

import datetime
import ipaddress
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID


@dataclass
class Certs:
    folder: Path

    def crt(self, name: str) -> str:
        return str(self.folder / f"{name}.crt")

    def key(self, name: str) -> str:
        return str(self.folder / f"{name}.key")


def _name(cn: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.ORGANIZATION_NAME, "trafikey tests"),
                      x509.NameAttribute(NameOID.COMMON_NAME, cn)])


def _write(folder: Path, name: str, cert: x509.Certificate, key: ec.EllipticCurvePrivateKey,
           password: bytes | None = None) -> None:
    (folder / f"{name}.crt").write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    enc: serialization.KeySerializationEncryption = (
        serialization.BestAvailableEncryption(password) if password else serialization.NoEncryption())
    (folder / f"{name}.key").write_bytes(key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, enc))


def _ca(folder: Path, name: str, expired: bool = False) -> tuple[x509.Certificate, ec.EllipticCurvePrivateKey]:
    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.UTC) - datetime.timedelta(days=60 if expired else 0)
    cert = (x509.CertificateBuilder().subject_name(_name(name)).issuer_name(_name(name))
            .public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(days=1)).not_valid_after(now + datetime.timedelta(days=30))
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True,
                                         content_commitment=False, key_encipherment=False, data_encipherment=False,
                                         key_agreement=False, encipher_only=False, decipher_only=False), critical=True)
            .sign(key, hashes.SHA256()))
    _write(folder, name, cert, key)
    return cert, key


def _leaf(folder: Path, name: str, cn: str, ca: tuple[x509.Certificate, ec.EllipticCurvePrivateKey],
          server: bool, password: bytes | None = None, expired: bool = False) -> None:
    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.UTC) - datetime.timedelta(days=60 if expired else 0)
    if server:
        san: list[x509.GeneralName] = [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
        usage = [ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH]
    else:
        san = [x509.UniformResourceIdentifier(f"urn:{cn}"), x509.UniformResourceIdentifier(f"urn:{cn}:second")]
        usage = [ExtendedKeyUsageOID.CLIENT_AUTH]
    cert = (x509.CertificateBuilder().subject_name(_name(cn)).issuer_name(ca[0].subject)
            .public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(days=1)).not_valid_after(now + datetime.timedelta(days=30))
            .add_extension(x509.SubjectAlternativeName(san), critical=False)
            .add_extension(x509.ExtendedKeyUsage(usage), critical=False)
            .sign(ca[1], hashes.SHA256()))
    _write(folder, name, cert, key, password)


def make_certs(folder: Path, clients: tuple[str, ...] = ("client",)) -> Certs:
    """``ca``, ``server`` (and ``server2``, another certificate for the same
    names, for reloads), ``server-enc`` (the server's key encrypted with the
    password ``1234``), ``server-expired`` and ``ca-expired`` (past their
    validity), a client per name in ``clients``, and ``rogue-ca`` with its
    ``rogue`` client."""
    folder.mkdir(parents=True, exist_ok=True)
    ca = _ca(folder, "ca")
    _leaf(folder, "server", "server", ca, server=True)
    _leaf(folder, "server2", "server2", ca, server=True)
    key = serialization.load_pem_private_key((folder / "server.key").read_bytes(), None)
    (folder / "server-enc.key").write_bytes(key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
        serialization.BestAvailableEncryption(b"1234")))
    for cn in clients:
        _leaf(folder, cn, cn, ca, server=False)
    _leaf(folder, "server-expired", "server", ca, server=True, expired=True)
    _ca(folder, "ca-expired", expired=True)
    rogue = _ca(folder, "rogue-ca")
    _leaf(folder, "rogue", "rogue", rogue, server=False)
    return Certs(folder)

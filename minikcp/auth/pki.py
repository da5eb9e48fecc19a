"""The server's certificates and credentials: a CA, a serving certificate, an admin identity.

Made once with `cryptography` on first start and kept in the root directory with mode 0600.
"""

from __future__ import annotations

import datetime
import ipaddress
import os
import secrets
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

ADMIN_USER = "kcp-admin"
ADMIN_GROUP = "system:masters"
_VALIDITY = datetime.timedelta(days=3650)


@dataclass(frozen=True, slots=True)
class Credentials:
    ca_cert: Path
    serving_cert: Path
    serving_key: Path
    admin_cert: Path
    admin_key: Path
    admin_token: str


def write_private(path: Path, data: bytes) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    os.chmod(path, 0o600)


def _key() -> ec.EllipticCurvePrivateKey:
    return ec.generate_private_key(ec.SECP256R1())


def pem_key(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )


def _builder(
    subject: x509.Name, issuer: x509.Name, public_key: ec.EllipticCurvePublicKey
) -> x509.CertificateBuilder:
    now = datetime.datetime.now(datetime.UTC)
    return (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer)
        .public_key(public_key)
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + _VALIDITY)
    )


def ensure_credentials(root: Path, hosts: list[str]) -> Credentials:
    """Load the credentials under root, creating what is missing; reuses them on later starts."""
    root.mkdir(parents=True, exist_ok=True)
    os.chmod(root, 0o700)
    creds = Credentials(
        ca_cert=root / "ca.crt",
        serving_cert=root / "apiserver.crt",
        serving_key=root / "apiserver.key",
        admin_cert=root / "admin.crt",
        admin_key=root / "admin.key",
        admin_token="",
    )
    ca_key_path = root / "ca.key"
    if not creds.ca_cert.exists() or not ca_key_path.exists():
        ca_key = _key()
        name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "minikcp-ca")])
        ca = (
            _builder(name, name, ca_key.public_key())
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .add_extension(
                x509.KeyUsage(
                    digital_signature=True,
                    key_cert_sign=True,
                    crl_sign=True,
                    content_commitment=False,
                    key_encipherment=False,
                    data_encipherment=False,
                    key_agreement=False,
                    encipher_only=False,
                    decipher_only=False,
                ),
                critical=True,
            )
            .sign(ca_key, hashes.SHA256())
        )
        write_private(ca_key_path, pem_key(ca_key))
        write_private(creds.ca_cert, ca.public_bytes(serialization.Encoding.PEM))
        for stale in (creds.serving_cert, creds.admin_cert):
            stale.unlink(missing_ok=True)
    ca_key_loaded = serialization.load_pem_private_key(ca_key_path.read_bytes(), None)
    assert isinstance(ca_key_loaded, ec.EllipticCurvePrivateKey)
    ca_cert = x509.load_pem_x509_certificate(creds.ca_cert.read_bytes())

    if not creds.serving_cert.exists() or not _covers(creds.serving_cert, hosts):
        key = _key()
        sans: list[x509.GeneralName] = []
        for host in dict.fromkeys(["localhost", "127.0.0.1", *hosts]):
            try:
                sans.append(x509.IPAddress(ipaddress.ip_address(host)))
            except ValueError:
                sans.append(x509.DNSName(host))
        cert = (
            _builder(
                x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "minikcp")]),
                ca_cert.subject,
                key.public_key(),
            )
            .add_extension(x509.SubjectAlternativeName(sans), critical=False)
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
            .sign(ca_key_loaded, hashes.SHA256())
        )
        write_private(creds.serving_key, pem_key(key))
        write_private(creds.serving_cert, cert.public_bytes(serialization.Encoding.PEM))

    if not creds.admin_cert.exists():
        key = _key()
        cert = (
            _builder(
                x509.Name(
                    [
                        x509.NameAttribute(NameOID.ORGANIZATION_NAME, ADMIN_GROUP),
                        x509.NameAttribute(NameOID.COMMON_NAME, ADMIN_USER),
                    ]
                ),
                ca_cert.subject,
                key.public_key(),
            )
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False)
            .sign(ca_key_loaded, hashes.SHA256())
        )
        write_private(creds.admin_key, pem_key(key))
        write_private(creds.admin_cert, cert.public_bytes(serialization.Encoding.PEM))

    token_path = root / "admin-token"
    if not token_path.exists():
        write_private(token_path, secrets.token_urlsafe(32).encode())
    token = token_path.read_text().strip()
    return Credentials(
        ca_cert=creds.ca_cert,
        serving_cert=creds.serving_cert,
        serving_key=creds.serving_key,
        admin_cert=creds.admin_cert,
        admin_key=creds.admin_key,
        admin_token=token,
    )


def _covers(cert_path: Path, hosts: list[str]) -> bool:
    cert = x509.load_pem_x509_certificate(cert_path.read_bytes())
    try:
        san = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except x509.ExtensionNotFound:
        return False
    names = {str(v) for v in san.get_values_for_type(x509.IPAddress)}
    names |= set(san.get_values_for_type(x509.DNSName))
    wanted = {h for h in hosts if h not in ("0.0.0.0", "::")}
    return wanted <= names


def issue_client_certificate(
    root: Path, user: str, groups: tuple[str, ...], *, days: int = 365
) -> tuple[bytes, bytes]:
    """A client certificate (CN = user, O = each group) signed by the CA under root: PEM cert
    and PEM key. Nothing is written: the caller decides where the credentials go."""
    ca_key = serialization.load_pem_private_key((root / "ca.key").read_bytes(), None)
    assert isinstance(ca_key, ec.EllipticCurvePrivateKey)
    ca_cert = x509.load_pem_x509_certificate((root / "ca.crt").read_bytes())
    key = _key()
    subject = x509.Name(
        [x509.NameAttribute(NameOID.ORGANIZATION_NAME, g) for g in groups]
        + [x509.NameAttribute(NameOID.COMMON_NAME, user)]
    )
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(ca_cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=days))
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    return cert.public_bytes(serialization.Encoding.PEM), pem_key(key)


def load_ca(root: Path) -> x509.Certificate:
    return x509.load_pem_x509_certificate((root / "ca.crt").read_bytes())

"""Helpers of the workspace suites: the `kubectl-ws` plugin from this worktree, users, waiting."""

from __future__ import annotations

import datetime
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from tests.server_process import ServerProcess

REPO = Path(__file__).resolve().parents[2]


def plugin_dir(where: Path) -> Path:
    """A folder with a `kubectl-ws` that runs this worktree's plugin (not the installed one)."""
    where.mkdir(parents=True, exist_ok=True)
    script = where / "kubectl-ws"
    script.write_text(
        f'#!/bin/sh\nPYTHONPATH="{REPO}" exec "{sys.executable}" -m minikcp.cli.ws "$@"\n'
    )
    script.chmod(0o755)
    return where


class WorkspaceShell:
    """kubectl (with the plugin on PATH) against one kubeconfig file, as a user's shell."""

    def __init__(self, server: ServerProcess, home: Path, kubeconfig: Path) -> None:
        self.server = server
        self.home = home
        self.kubeconfig = kubeconfig
        self.path = f"{plugin_dir(home / 'bin')}{os.pathsep}{os.environ['PATH']}"

    @classmethod
    def fresh(cls, server: ServerProcess, home: Path) -> WorkspaceShell:
        home.mkdir(parents=True, exist_ok=True)
        kubeconfig = home / "config"
        shutil.copy(server.admin_kubeconfig, kubeconfig)
        return cls(server, home, kubeconfig)

    def env(self, **extra: str) -> dict[str, str]:
        return {
            "PATH": self.path,
            "HOME": str(self.home),
            "KUBECONFIG": str(self.kubeconfig),
            **extra,
        }

    def run(
        self, *args: str, check: bool = True, input: str | None = None, **env: str
    ) -> subprocess.CompletedProcess[str]:
        result = subprocess.run(
            list(args),
            capture_output=True,
            text=True,
            env=self.env(**env),
            input=input,
            timeout=60,
        )
        if check and result.returncode != 0:
            raise AssertionError(
                f"{' '.join(args)} failed ({result.returncode}):\n"
                f"stdout: {result.stdout}\nstderr: {result.stderr}"
            )
        return result

    def kubectl(self, *args: str, **kwargs: Any) -> subprocess.CompletedProcess[str]:
        return self.run("kubectl", *args, **kwargs)

    def minikcp(self, *args: str, **kwargs: Any) -> subprocess.CompletedProcess[str]:
        return self.run(sys.executable, "-m", "minikcp.cli.main", *args, **kwargs)


def eventually(check: Callable[[], bool], *, timeout: float = 20.0, what: str = "") -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what or check}")


def user_credentials(
    server: ServerProcess, where: Path, name: str, groups: tuple[str, ...]
) -> None:
    """A client certificate (cert.pem, key.pem) for `name` in `groups`, signed by the CA."""
    ca_key = serialization.load_pem_private_key((server.root / "ca.key").read_bytes(), None)
    ca_cert = x509.load_pem_x509_certificate((server.root / "ca.crt").read_bytes())
    assert isinstance(ca_key, ec.EllipticCurvePrivateKey)
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name(
        [x509.NameAttribute(NameOID.ORGANIZATION_NAME, g) for g in groups]
        + [x509.NameAttribute(NameOID.COMMON_NAME, name)]
    )
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(ca_cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(
            x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False
        )
        .sign(ca_key, hashes.SHA256())
    )
    where.mkdir(parents=True, exist_ok=True)
    (where / "cert.pem").write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    (where / "key.pem").write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )

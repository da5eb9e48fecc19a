"""A kubeconfig's server and credentials (mTLS, bearer token), as kubectl reads them."""

from __future__ import annotations

import base64
import os
import ssl
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import yaml


class KubeconfigError(Exception):
    """The kubeconfig lacks what a connection needs."""


@dataclass(frozen=True)
class Credentials:
    server: str  # as in the kubeconfig: https://host:port[/clusters/<path>]
    ssl: ssl.SSLContext
    headers: dict[str, str] = field(default_factory=dict)

    @property
    def base_url(self) -> str:
        parts = urlsplit(self.server)
        return f"{parts.scheme}://{parts.netloc}"

    @property
    def cluster(self) -> str:
        """The logical cluster of the server URL (`root` without a `/clusters/` prefix)."""
        path = urlsplit(self.server).path.strip("/").split("/")
        return path[1] if len(path) >= 2 and path[0] == "clusters" else "root"


def default_path() -> Path:
    """KUBECONFIG's first existing file, else ~/.kube/config (as kubectl)."""
    for name in os.environ.get("KUBECONFIG", "").split(os.pathsep):
        if name and Path(name).exists():
            return Path(name)
    return Path.home() / ".kube" / "config"


def from_kubeconfig(path: str | Path | None = None, context: str | None = None) -> Credentials:
    """The credentials of a kubeconfig's context (its current context by default)."""
    file = Path(path) if path is not None else default_path()
    config = yaml.safe_load(file.read_text()) or {}
    name = context or config.get("current-context", "")
    ctx = _named(config, "contexts", name, "context")
    cluster = _named(config, "clusters", ctx.get("cluster", ""), "cluster")
    user = _named(config, "users", ctx.get("user", ""), "user")
    if not cluster.get("server"):
        raise KubeconfigError(f"context {name!r} has no server")
    headers = {"Authorization": f"Bearer {user['token']}"} if user.get("token") else {}
    return Credentials(cluster["server"], ssl_context(cluster, user, file.parent), headers)


def _named(config: dict[str, Any], section: str, name: str, key: str) -> dict[str, Any]:
    for entry in config.get(section) or ():
        if entry.get("name") == name:
            return dict(entry.get(key) or {})
    raise KubeconfigError(f"no {key} {name!r} in the kubeconfig")


def _data(entry: dict[str, Any], key: str, base: Path) -> bytes | None:
    if entry.get(f"{key}-data"):
        return base64.b64decode(entry[f"{key}-data"])
    if entry.get(key):
        path = Path(entry[key])
        return (path if path.is_absolute() else base / path).read_bytes()
    return None


def ssl_context(cluster: dict[str, Any], user: dict[str, Any], base: Path) -> ssl.SSLContext:
    """TLS for a kubeconfig's cluster and user entries (files relative to `base`): the CA to
    trust, or none with insecure-skip-tls-verify, and the client certificate, if any."""
    ctx = ssl.create_default_context()
    if cluster.get("insecure-skip-tls-verify"):
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
    ca = _data(cluster, "certificate-authority", base)
    if ca is not None:
        ctx.load_verify_locations(cadata=ca.decode())
    cert = _data(user, "client-certificate", base)
    key = _data(user, "client-key", base)
    if cert is not None and key is not None:
        # ssl loads client credentials from files only: a private file, removed at once.
        fd, name = tempfile.mkstemp(prefix="minikcp-client-")
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(cert + b"\n" + key)
            ctx.load_cert_chain(name)
        finally:
            os.unlink(name)
    return ctx

"""kubeconfig files for logical clusters, in the shape kcp writes them."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import yaml

from minikcp.auth import pki


def _b64(path: Path) -> str:
    return base64.b64encode(path.read_bytes()).decode()


def build(
    creds: pki.Credentials, *, base_url: str, current: str = "root", clusters: tuple[str, ...] = ()
) -> dict[str, Any]:
    """Contexts `root`, `base`, `system:admin`, plus one per extra logical cluster path."""
    servers = {
        "root": f"{base_url}/clusters/root",
        "base": base_url,
        "system:admin": f"{base_url}/clusters/system:admin",
    }
    for name in clusters:
        servers[name] = f"{base_url}/clusters/{name}"
    ca = _b64(creds.ca_cert)
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {"name": name, "cluster": {"server": url, "certificate-authority-data": ca}}
            for name, url in servers.items()
        ],
        "users": [
            {
                "name": pki.ADMIN_USER,
                "user": {
                    "client-certificate-data": _b64(creds.admin_cert),
                    "client-key-data": _b64(creds.admin_key),
                },
            },
            {"name": "admin-token", "user": {"token": creds.admin_token}},
        ],
        "contexts": [
            {"name": name, "context": {"cluster": name, "user": pki.ADMIN_USER}} for name in servers
        ],
        "current-context": current,
        "preferences": {},
    }


def dump(config: dict[str, Any]) -> str:
    return yaml.safe_dump(config, sort_keys=False)


def write(path: Path, config: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(dump(config))
    tmp.chmod(0o600)
    tmp.replace(path)


def build_for_user(
    ca_cert: Path,
    *,
    user: str,
    cert_pem: bytes,
    key_pem: bytes,
    base_url: str,
    cluster: str,
) -> dict[str, Any]:
    """One context, named after the logical cluster, acting as `user` with a client certificate."""
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {
                "name": cluster,
                "cluster": {
                    "server": f"{base_url}/clusters/{cluster}",
                    "certificate-authority-data": _b64(ca_cert),
                },
            }
        ],
        "users": [
            {
                "name": user,
                "user": {
                    "client-certificate-data": base64.b64encode(cert_pem).decode(),
                    "client-key-data": base64.b64encode(key_pem).decode(),
                },
            }
        ],
        "contexts": [{"name": cluster, "context": {"cluster": cluster, "user": user}}],
        "current-context": cluster,
        "preferences": {},
    }

"""Where a benchmark sends its requests: a minikcp process it started, or any Kubernetes
endpoint named by a kubeconfig (so the same load can run against kube-apiserver + etcd)."""

from __future__ import annotations

import base64
import ssl
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import yaml


@dataclass
class Endpoint:
    """One API endpoint: the URL prefix of a cluster (`.../clusters/x` for minikcp, the server
    URL for kube-apiserver), how to reach it, and the processes whose CPU the server spends."""

    base_url: str
    ssl_context: ssl.SSLContext
    token: str | None = None
    pids: list[int] = field(default_factory=list)
    # PEM files for clients that cannot take an SSLContext (bench/watch_clients.py).
    ca_file: Path | None = None
    cert_file: Path | None = None
    key_file: Path | None = None

    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"} if self.token else {}


def from_kubeconfig(path: Path, pids: list[int], scratch: Path | None = None) -> Endpoint:
    """The current context's cluster and user of a kubeconfig (certificates inline or as files,
    client certificate or bearer token)."""
    config = yaml.safe_load(path.read_text())
    context_name = config.get("current-context")
    context = _named(config.get("contexts", []), context_name)["context"]
    cluster = _named(config.get("clusters", []), context["cluster"])["cluster"]
    user = _named(config.get("users", []), context["user"])["user"] or {}
    folder = scratch or Path(tempfile.mkdtemp(prefix="api-bench-"))
    ca = _pem(cluster, "certificate-authority", folder / "ca.crt", path.parent)
    cert = _pem(user, "client-certificate", folder / "client.crt", path.parent)
    key = _pem(user, "client-key", folder / "client.key", path.parent)
    ctx = ssl.create_default_context(cafile=str(ca) if ca else None)
    if cluster.get("insecure-skip-tls-verify"):
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
    if cert and key:
        ctx.load_cert_chain(cert, key)
    token = user.get("token")
    if token is None and user.get("tokenFile"):
        token = Path(user["tokenFile"]).read_text().strip()
    return Endpoint(
        base_url=str(cluster["server"]).rstrip("/"),
        ssl_context=ctx,
        token=token,
        pids=pids,
        ca_file=ca,
        cert_file=cert,
        key_file=key,
    )


def _named(entries: list[dict[str, object]], name: object) -> dict[str, dict[str, object]]:
    for entry in entries:
        if entry.get("name") == name:
            return entry  # type: ignore[return-value]
    raise SystemExit(f"kubeconfig: no entry named {name!r}")


def _pem(section: dict[str, object], key: str, target: Path, relative_to: Path) -> Path | None:
    inline = section.get(f"{key}-data")
    if isinstance(inline, str):
        target.write_bytes(base64.b64decode(inline))
        return target
    named = section.get(key)
    if isinstance(named, str):
        file = Path(named)
        return file if file.is_absolute() else relative_to / file
    return None

"""Kubeconfigs of physical clusters: flattening for storage, and connection settings from them.

Supported as kubectl does: client certificates (data or files), bearer tokens (inline or
`tokenFile`), basic auth, CA data or file, `insecure-skip-tls-verify`, `tls-server-name`, and
exec-plugin credentials, run through the `kubernetes` package's maintained exec provider.
"""

from __future__ import annotations

import asyncio
import base64
import datetime
import os
import ssl
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml


class KubeconfigError(ValueError):
    """A kubeconfig that cannot be used, with a message for the user."""


def _pick(items: Any, name: str, what: str) -> dict[str, Any]:
    for item in items or ():
        if isinstance(item, Mapping) and item.get("name") == name:
            value = item.get(what) or {}
            if not isinstance(value, dict):
                raise KubeconfigError(f"{what} {name!r} is not a mapping")
            return value
    raise KubeconfigError(f"kubeconfig has no {what} named {name!r}")


def load(text: str) -> dict[str, Any]:
    try:
        config = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise KubeconfigError(f"kubeconfig is not valid YAML: {exc}") from None
    if not isinstance(config, dict):
        raise KubeconfigError("kubeconfig is not a mapping")
    return config


def flatten(config: Mapping[str, Any], context: str | None, base_dir: Path) -> dict[str, Any]:
    """One context only, with every referenced file inlined (`kubectl config view --flatten
    --minify`): what is stored in the SyncTarget's Secret must stand on its own."""
    ctx_name = context or config.get("current-context") or ""
    if not ctx_name:
        raise KubeconfigError("kubeconfig has no current context; pass --context")
    ctx = _pick(config.get("contexts"), ctx_name, "context")
    cluster_name, user_name = ctx.get("cluster", ""), ctx.get("user", "")
    cluster = dict(_pick(config.get("clusters"), cluster_name, "cluster"))
    user = dict(_pick(config.get("users"), user_name, "user")) if user_name else {}

    def inline(section: dict[str, Any], file_key: str, data_key: str) -> None:
        path = section.pop(file_key, None)
        if path and not section.get(data_key):
            full = Path(os.path.expanduser(str(path)))
            if not full.is_absolute():
                full = base_dir / full
            try:
                section[data_key] = base64.b64encode(full.read_bytes()).decode()
            except OSError as exc:
                raise KubeconfigError(f"cannot read {file_key} {str(full)!r}: {exc}") from None

    inline(cluster, "certificate-authority", "certificate-authority-data")
    inline(user, "client-certificate", "client-certificate-data")
    inline(user, "client-key", "client-key-data")
    token_file = user.pop("tokenFile", None)
    if token_file and not user.get("token"):
        full = Path(os.path.expanduser(str(token_file)))
        if not full.is_absolute():
            full = base_dir / full
        try:
            user["token"] = full.read_text().strip()
        except OSError as exc:
            raise KubeconfigError(f"cannot read tokenFile {str(full)!r}: {exc}") from None
    if not cluster.get("server"):
        raise KubeconfigError(f"cluster {cluster_name!r} has no server")
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "current-context": ctx_name,
        "contexts": [{"name": ctx_name, "context": {"cluster": cluster_name, "user": user_name}}],
        "clusters": [{"name": cluster_name, "cluster": cluster}],
        "users": [{"name": user_name, "user": user}] if user_name else [],
    }


@dataclass
class Connection:
    """How to reach one cluster: base URL, TLS context, and how to authenticate."""

    server: str
    ssl: ssl.SSLContext | bool
    headers: dict[str, str] = field(default_factory=dict)
    exec_config: dict[str, Any] | None = None
    server_name: str | None = None  # tls-server-name: the name the certificate must carry
    _exec_expiry: float = 0.0

    async def auth_headers(self, *, refresh: bool = False) -> dict[str, str]:
        """Headers for the next request; exec credentials are fetched (again) when due."""
        if self.exec_config is not None and (refresh or time.time() >= self._exec_expiry):
            await self._run_exec()
        return self.headers

    async def _run_exec(self) -> None:
        # Imported when needed: the package is large and most kubeconfigs have no exec plugin.
        from kubernetes.config.exec_provider import ExecProvider
        from kubernetes.config.kube_config import ConfigNode

        assert self.exec_config is not None
        try:
            node = ConfigNode("exec", self.exec_config)  # type: ignore[no-untyped-call]
            provider = ExecProvider(node, os.getcwd())  # type: ignore[no-untyped-call]
            result = await asyncio.to_thread(provider.run)
        except Exception as exc:  # the provider raises ConfigException and OSErrors
            raise KubeconfigError(f"exec credential plugin failed: {exc}") from None
        if not isinstance(result, dict):
            raise KubeconfigError("exec credential plugin returned no status")
        token = result.get("token")
        if token:
            self.headers = {"Authorization": f"Bearer {token}"}
        cert, key = result.get("clientCertificateData"), result.get("clientKeyData")
        if cert and key and isinstance(self.ssl, ssl.SSLContext):
            _load_client_cert(self.ssl, cert.encode(), key.encode())
        expiry = result.get("expirationTimestamp")
        self._exec_expiry = _parse_expiry(expiry) - 30 if expiry else time.time() + 300


def _parse_expiry(text: str) -> float:
    try:
        return datetime.datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return time.time() + 300


def _b64(value: str, what: str) -> bytes:
    try:
        return base64.b64decode(value, validate=True)
    except ValueError:
        raise KubeconfigError(f"{what} is not valid base64") from None


def _load_client_cert(ctx: ssl.SSLContext, cert: bytes, key: bytes) -> None:
    # ssl reads certificates from files only: a private temporary directory, removed at once.
    with tempfile.TemporaryDirectory() as tmp:
        cert_path, key_path = Path(tmp) / "tls.crt", Path(tmp) / "tls.key"
        cert_path.write_bytes(cert)
        key_path.touch(mode=0o600)
        key_path.write_bytes(key)
        try:
            ctx.load_cert_chain(cert_path, key_path)
        except ssl.SSLError as exc:
            raise KubeconfigError(f"client certificate or key unusable: {exc}") from None


def connection(config: Mapping[str, Any]) -> Connection:
    """Connection settings for the current context of a flattened kubeconfig."""
    ctx_name = config.get("current-context") or ""
    if not ctx_name:
        raise KubeconfigError("kubeconfig has no current context")
    ctx = _pick(config.get("contexts"), ctx_name, "context")
    cluster = _pick(config.get("clusters"), ctx.get("cluster", ""), "cluster")
    user_name = ctx.get("user", "")
    user = _pick(config.get("users"), user_name, "user") if user_name else {}
    server = str(cluster.get("server") or "").rstrip("/")
    if not server.startswith(("https://", "http://")):
        raise KubeconfigError(f"server {server!r} is not an http(s) URL")
    tls: ssl.SSLContext | bool = False
    if server.startswith("https://"):
        # As client-go: a CA in the kubeconfig is the only one trusted; otherwise the system's.
        has_ca = bool(
            cluster.get("certificate-authority-data") or cluster.get("certificate-authority")
        )
        ctx_ssl = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        if not has_ca:
            ctx_ssl.load_default_certs()
        if cluster.get("insecure-skip-tls-verify"):
            ctx_ssl.check_hostname = False
            ctx_ssl.verify_mode = ssl.CERT_NONE
        elif cluster.get("certificate-authority-data"):
            ca = _b64(cluster["certificate-authority-data"], "certificate-authority-data")
            try:
                ctx_ssl.load_verify_locations(cadata=ca.decode())
            except (ssl.SSLError, UnicodeDecodeError) as exc:
                raise KubeconfigError(f"certificate-authority-data unusable: {exc}") from None
        elif cluster.get("certificate-authority"):
            try:
                ctx_ssl.load_verify_locations(cafile=str(cluster["certificate-authority"]))
            except (ssl.SSLError, OSError) as exc:
                raise KubeconfigError(f"certificate-authority unusable: {exc}") from None
        cert = user.get("client-certificate-data")
        key = user.get("client-key-data")
        if cert and key:
            _load_client_cert(
                ctx_ssl,
                _b64(cert, "client-certificate-data"),
                _b64(key, "client-key-data"),
            )
        elif user.get("client-certificate") and user.get("client-key"):
            try:
                ctx_ssl.load_cert_chain(str(user["client-certificate"]), str(user["client-key"]))
            except (ssl.SSLError, OSError) as exc:
                raise KubeconfigError(f"client certificate or key unusable: {exc}") from None
        tls = ctx_ssl
    headers: dict[str, str] = {}
    if user.get("token"):
        headers["Authorization"] = f"Bearer {user['token']}"
    elif user.get("tokenFile"):
        try:
            token = Path(str(user["tokenFile"])).read_text().strip()
        except OSError as exc:
            raise KubeconfigError(f"cannot read tokenFile: {exc}") from None
        headers["Authorization"] = f"Bearer {token}"
    elif user.get("username") is not None and user.get("password") is not None:
        pair = f"{user['username']}:{user['password']}".encode()
        headers["Authorization"] = "Basic " + base64.b64encode(pair).decode()
    exec_config = user.get("exec")
    if exec_config is not None and not isinstance(exec_config, dict):
        raise KubeconfigError("user exec is not a mapping")
    return Connection(
        server=server,
        ssl=tls,
        headers=headers,
        exec_config=exec_config,
        server_name=cluster.get("tls-server-name") or None,
    )

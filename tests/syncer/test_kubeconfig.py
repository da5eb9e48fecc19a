"""Kubeconfigs of physical clusters: flattening for the Secret, and connection settings."""

from __future__ import annotations

import base64
import ssl
from pathlib import Path
from typing import Any

import pytest

from minikcp.auth import pki
from minikcp.syncer import kubeconfig


@pytest.fixture(scope="module")
def creds(tmp_path_factory: pytest.TempPathFactory) -> pki.Credentials:
    return pki.ensure_credentials(tmp_path_factory.mktemp("pki"), ["127.0.0.1"])


def _config(cluster: dict[str, Any], user: dict[str, Any], ctx: str = "c") -> dict[str, Any]:
    return {
        "current-context": ctx,
        "contexts": [{"name": "c", "context": {"cluster": "k", "user": "u"}}],
        "clusters": [{"name": "k", "cluster": cluster}],
        "users": [{"name": "u", "user": user}],
    }


def test_flatten_inlines_files_relative_to_the_kubeconfig(
    tmp_path: Path, creds: pki.Credentials
) -> None:
    (tmp_path / "ca.crt").write_bytes(Path(creds.ca_cert).read_bytes())
    (tmp_path / "token").write_text("s3cret\n")
    config = _config(
        {"server": "https://127.0.0.1:1", "certificate-authority": "ca.crt"},
        {"tokenFile": "token"},
    )
    config["contexts"].append({"name": "other", "context": {"cluster": "x", "user": "y"}})
    flat = kubeconfig.flatten(config, None, tmp_path)
    cluster = flat["clusters"][0]["cluster"]
    assert "certificate-authority" not in cluster
    assert (
        base64.b64decode(cluster["certificate-authority-data"]) == Path(creds.ca_cert).read_bytes()
    )
    assert flat["users"][0]["user"] == {"token": "s3cret"}
    assert [c["name"] for c in flat["contexts"]] == ["c"]
    conn = kubeconfig.connection(flat)
    assert conn.headers == {"Authorization": "Bearer s3cret"}
    assert isinstance(conn.ssl, ssl.SSLContext) and conn.ssl.verify_mode == ssl.CERT_REQUIRED


@pytest.mark.parametrize(
    ("config", "context", "message"),
    [
        ({"contexts": []}, None, "no current context"),
        (_config({"server": "https://x"}, {}), "missing", "no context named 'missing'"),
        (_config({}, {}), None, "has no server"),
        (
            _config({"server": "https://x", "certificate-authority": "/nonexistent/ca"}, {}),
            None,
            "cannot read certificate-authority",
        ),
    ],
)
def test_flatten_errors(config: dict[str, Any], context: str | None, message: str) -> None:
    with pytest.raises(kubeconfig.KubeconfigError, match=message):
        kubeconfig.flatten(config, context, Path("/"))


def test_client_certificate_and_ca_data(creds: pki.Credentials) -> None:
    b64 = lambda p: base64.b64encode(Path(p).read_bytes()).decode()  # noqa: E731
    conn = kubeconfig.connection(
        _config(
            {"server": "https://127.0.0.1:1", "certificate-authority-data": b64(creds.ca_cert)},
            {
                "client-certificate-data": b64(creds.admin_cert),
                "client-key-data": b64(creds.admin_key),
            },
        )
    )
    assert conn.headers == {}
    assert isinstance(conn.ssl, ssl.SSLContext)
    assert conn.ssl.cert_store_stats()["x509_ca"] == 1


@pytest.mark.parametrize(
    ("cluster", "user", "headers"),
    [
        ({"insecure-skip-tls-verify": True}, {"token": "t"}, {"Authorization": "Bearer t"}),
        ({}, {"username": "a", "password": "b"}, {"Authorization": "Basic YTpi"}),
        ({}, {}, {}),
    ],
)
def test_auth_headers(cluster: dict[str, Any], user: dict[str, Any], headers: Any) -> None:
    conn = kubeconfig.connection(_config({"server": "https://h:1", **cluster}, user))
    assert conn.headers == headers
    if cluster.get("insecure-skip-tls-verify"):
        assert isinstance(conn.ssl, ssl.SSLContext) and conn.ssl.verify_mode == ssl.CERT_NONE


@pytest.mark.parametrize(
    ("cluster", "user", "message"),
    [
        ({"server": "ftp://h"}, {}, "not an http"),
        ({"server": "https://h", "certificate-authority-data": "@@"}, {}, "not valid base64"),
        (
            {"server": "https://h", "certificate-authority-data": "bm90IGEgY2VydA=="},
            {},
            "certificate-authority-data unusable",
        ),
        (
            {"server": "https://h"},
            {"client-certificate-data": "bm8=", "client-key-data": "bm8="},
            "client certificate or key unusable",
        ),
        ({"server": "https://h"}, {"exec": "sh"}, "exec is not a mapping"),
    ],
)
def test_connection_errors(cluster: dict[str, Any], user: dict[str, Any], message: str) -> None:
    with pytest.raises(kubeconfig.KubeconfigError, match=message):
        kubeconfig.connection(_config(cluster, user))


async def test_exec_plugin_credentials(tmp_path: Path) -> None:
    plugin = tmp_path / "plugin.sh"
    plugin.write_text(
        "#!/bin/sh\n"
        'echo \'{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential",'
        '"status":{"token":"from-plugin","expirationTimestamp":"2099-01-01T00:00:00Z"}}\'\n'
    )
    plugin.chmod(0o755)
    exec_config = {
        "apiVersion": "client.authentication.k8s.io/v1",
        "command": str(plugin),
        "interactiveMode": "Never",
    }
    conn = kubeconfig.connection(_config({"server": "https://h:1"}, {"exec": exec_config}))
    assert await conn.auth_headers() == {"Authorization": "Bearer from-plugin"}


async def test_failing_exec_plugin(tmp_path: Path) -> None:
    exec_config = {
        "apiVersion": "client.authentication.k8s.io/v1",
        "command": str(tmp_path / "missing"),
        "interactiveMode": "Never",
    }
    conn = kubeconfig.connection(_config({"server": "https://h:1"}, {"exec": exec_config}))
    with pytest.raises(kubeconfig.KubeconfigError, match="exec credential plugin failed"):
        await conn.auth_headers()

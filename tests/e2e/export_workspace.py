"""Steps of the APIExport virtual workspace suites: a provider exporting widgets and claiming
configmaps, consumers binding it (accepting the claim or not), clients of the virtual workspace."""

from __future__ import annotations

import json
import ssl
import urllib.error
import urllib.request
from dataclasses import dataclass
from typing import Any

from kubernetes import client, config

from tests.e2e import api_export_manifests as m
from tests.e2e.polling import eventually
from tests.server_process import ServerProcess

CLAIM = {"group": "", "resource": "configmaps", "all": True}
# Namespaces are claimed too: kopf lists namespaces before it starts (a consumer that accepts
# this claim lets a kopf operator run on its part of the virtual workspace).
NAMESPACES_CLAIM = {"group": "", "resource": "namespaces", "all": True}


@dataclass
class Setup:
    provider: str  # workspace path
    provider_cluster: str  # logical cluster name
    consumers: dict[str, str]  # path -> logical cluster name
    path: str  # /services/apiexport/<cluster>/<export>


def provider(server: ServerProcess, name: str, *, maximal: bool = False) -> tuple[str, str]:
    """A provider exporting widgets and claiming configmaps and namespaces; (path, logical
    cluster)."""
    path = m.workspace(server, name)
    widgets = m.schema()
    export = m.export([widgets["metadata"]["name"]])
    export["spec"]["permissionClaims"] = [CLAIM, NAMESPACES_CLAIM]
    if maximal:
        export["spec"]["maximalPermissionPolicy"] = {"local": {}}
    server.kubectl("apply", "-f", "-", cluster=path, input=m.as_yaml(widgets, export))
    eventually(lambda: m.identity_hash(server, path), what="the export's identity")
    found = m.get(server, path, "apiexport", m.EXPORT)
    return path, found["metadata"]["annotations"]["kcp.io/cluster"]


def consumer(
    server: ServerProcess,
    name: str,
    provider_path: str,
    *,
    accept: bool,
    claim: dict[str, Any] | None = None,
    applied: bool = True,
) -> str:
    """A workspace bound to the export (accepting the configmaps claim, as `claim` narrows it,
    or not); its logical cluster."""
    path = m.workspace(server, name)
    binding = m.binding(provider_path)
    if accept:
        binding["spec"]["permissionClaims"] = [{**(claim or CLAIM), "state": "Accepted"}]
    server.kubectl("apply", "-f", "-", cluster=path, input=m.as_yaml(binding))
    found = m.bound(server, path)
    if accept and applied:
        eventually(
            lambda: (
                m.get(server, path, "apibinding", "example")
                .get("status", {})
                .get("appliedPermissionClaims")
            ),
            what="the accepted claim applied",
        )
    return str(found["metadata"]["annotations"]["kcp.io/cluster"])


def endpoint(server: ServerProcess, provider_path: str) -> str:
    """The virtual workspace's path as the endpoint slice publishes it."""

    def published() -> str:
        found = m.get(server, provider_path, "apiexportendpointslice", m.EXPORT)
        endpoints = found.get("status", {}).get("endpoints") or []
        return str(endpoints[0]["url"]) if endpoints else ""

    url = eventually(published, what="the endpoint slice's URL")
    return "/services/" + url.split("/services/", 1)[1]


def api_client(server: ServerProcess, url: str) -> client.ApiClient:
    """The official client as the admin, with `url` as its server."""
    api = config.new_client_from_config(config_file=str(server.kubeconfig("root")))
    api.configuration.host = url
    return api


def widget(name: str, namespace: str = "default", size: int = 1) -> dict[str, Any]:
    return {
        "apiVersion": f"{m.GROUP}/v1",
        "kind": "Widget",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"size": size},
    }


def call(
    server: ServerProcess,
    method: str,
    path: str,
    body: dict[str, Any] | None = None,
    *,
    token: str = "",
    content_type: str = "application/json",
) -> tuple[int, dict[str, Any]]:
    """One request (the admin's, or a bearer token's); status code and decoded body."""
    ctx = ssl.create_default_context(cafile=str(server.root / "ca.crt"))
    if not token:
        ctx.load_cert_chain(server.root / "admin.crt", server.root / "admin.key")
    headers = {"Content-Type": content_type, "Accept": "application/json"}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(server.base_url + path, data=data, method=method, headers=headers)
    try:
        with urllib.request.urlopen(req, context=ctx, timeout=30) as resp:
            return resp.status, json.loads(resp.read() or b"{}")
    except urllib.error.HTTPError as err:
        with err:
            return err.code, json.loads(err.read() or b"{}")

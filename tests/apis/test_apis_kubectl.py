"""Real kubectl against a throwaway HTTP server that serves only this package's documents.

It checks what kubectl does with discovery and OpenAPI: resolving short names, `explain` reading
the field descriptions, `api-resources`, and client-side validation being skipped in favour of
server-side field validation (no request to /openapi/v2 when v3 is served).
"""

from __future__ import annotations

import asyncio
import os
import shutil
from collections.abc import AsyncIterator
from pathlib import Path

import orjson
import pytest
from aiohttp import web

from minikcp.apis import discovery, openapi
from minikcp.apis.catalog import Catalog

pytestmark = pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl not on PATH")

PREFIX = "/clusters/root"
_VERSION = {
    "major": "1",
    "minor": "32",
    "gitVersion": "v1.32.0-minikcp",
    "gitCommit": "0",
    "gitTreeState": "clean",
    "buildDate": "2025-01-01T00:00:00Z",
    "goVersion": "go1.23",
    "compiler": "gc",
    "platform": "linux/amd64",
}


def _json(body: bytes, content_type: str = "application/json") -> web.Response:
    return web.Response(body=body, headers={"Content-Type": content_type})


def _not_found() -> web.Response:
    status = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": "not found",
        "reason": "NotFound",
        "code": 404,
    }
    return web.Response(status=404, body=orjson.dumps(status), content_type="application/json")


def _make_app(catalog: Catalog, seen: list[str]) -> web.Application:
    async def handle(request: web.Request) -> web.StreamResponse:
        seen.append(request.path_qs)
        path = request.path.removeprefix(PREFIX).rstrip("/") or "/"
        accept = request.headers.get("Accept", "")
        aggregated = "as=APIGroupDiscoveryList" in accept and "v=v2;" in accept + ";"
        if path == "/version":
            return _json(orjson.dumps(_VERSION))
        if path in ("/api", "/apis"):
            if aggregated:
                body = discovery.aggregated(catalog, legacy=path == "/api")
                return _json(body, discovery.AGGREGATED_CONTENT_TYPE["v2"])
            if path == "/api":
                return _json(discovery.api_versions(catalog, server_address=request.host))
            return _json(discovery.api_group_list(catalog))
        if path == "/openapi/v3":
            return _json(openapi.openapi_v3_index(catalog, PREFIX))
        if path.startswith("/openapi/v3/"):
            doc = openapi.openapi_v3_document(catalog, path.removeprefix("/openapi/v3/"))
            return _json(doc.body) if doc is not None else _not_found()
        if path == "/openapi/v2":
            empty = openapi.openapi_v2_protobuf(catalog)
            return _json(empty.body, openapi.OPENAPI_V2_PROTOBUF_CONTENT_TYPE)
        parts = path.strip("/").split("/")
        if parts[0] == "api" and len(parts) == 2:
            body = discovery.api_resource_list(catalog, "", parts[1])
        elif parts[0] == "apis" and len(parts) == 3:
            body = discovery.api_resource_list(catalog, parts[1], parts[2])
        else:
            body = None
        return _json(body) if body is not None else _not_found()

    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", handle)
    return app


@pytest.fixture
async def server(tmp_path: Path) -> AsyncIterator[tuple[str, list[str], Path]]:
    seen: list[str] = []
    runner = web.AppRunner(_make_app(Catalog.builtin(), seen))
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    try:
        yield f"http://127.0.0.1:{port}{PREFIX}", seen, tmp_path
    finally:
        await runner.cleanup()


async def _kubectl(url: str, home: Path, *args: str) -> tuple[int, str, str]:
    env = dict(os.environ, HOME=str(home), KUBECONFIG=str(home / "none.kubeconfig"))
    proc = await asyncio.create_subprocess_exec(
        "kubectl",
        f"--server={url}",
        *args,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=env,
    )
    out, err = await asyncio.wait_for(proc.communicate(), timeout=60)
    return proc.returncode or 0, out.decode(), err.decode()


async def test_explain_prints_upstream_field_descriptions(
    server: tuple[str, list[str], Path],
) -> None:
    url, _, home = server
    code, out, err = await _kubectl(
        url, home, "explain", "--api-version=apps/v1", "deployment.spec"
    )
    assert code == 0, err
    assert "GROUP:      apps" in out
    assert "KIND:       Deployment" in out
    assert "Number of desired pods" in out
    assert "selector\t<LabelSelector> -required-" in out

    code, out, err = await _kubectl(url, home, "explain", "deploy.spec.template.spec.containers")
    assert code == 0, err
    assert "FIELD: containers <[]Container>" in out
    assert "List of containers belonging to the pod" in out
    assert "image\t<string>" in out


async def test_explain_core_and_maps(server: tuple[str, list[str], Path]) -> None:
    url, _, home = server
    code, out, err = await _kubectl(url, home, "explain", "cm.data")
    assert code == 0, err
    assert "FIELD: data <map[string]string>" in out
    code, out, err = await _kubectl(url, home, "explain", "svc.spec.ports.targetPort")
    assert code == 0, err
    assert "FIELD: targetPort <IntOrString>" in out


async def test_api_resources_lists_short_names_and_categories(
    server: tuple[str, list[str], Path],
) -> None:
    url, seen, home = server
    code, out, err = await _kubectl(url, home, "api-resources", "-o", "wide")
    assert code == 0, err
    rows = {line.split()[0]: line.split() for line in out.splitlines()[1:]}
    assert rows["deployments"][1] == "deploy"
    assert rows["customresourcedefinitions"][1] == "crd,crds"
    assert "all" in rows["pods"][-1]
    # Aggregated discovery: no per-group-version requests were needed.
    assert not any(p.startswith(f"{PREFIX}/apis/apps/v1") for p in seen)


async def test_create_validation_uses_server_side_field_validation(
    server: tuple[str, list[str], Path],
) -> None:
    url, seen, home = server
    manifest = home / "cm.yaml"
    manifest.write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\ndata: {a: b}\n")
    # The server has no configmaps endpoint, so the POST fails; what matters is that kubectl
    # chose server-side validation from the v3 document instead of fetching /openapi/v2.
    await _kubectl(url, home, "create", "-f", str(manifest), "--namespace=default")
    assert any(p.startswith(f"{PREFIX}/openapi/v3/api/v1?hash=") for p in seen)
    assert not any("/openapi/v2" in p for p in seen)
    posts = [p for p in seen if "/configmaps" in p]
    assert posts
    assert "fieldValidation=Strict" in posts[-1]

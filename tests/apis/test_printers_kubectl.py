"""Real kubectl renders the Tables these printers build, served by a throwaway stub API."""

from __future__ import annotations

import asyncio
import os
import shutil
import time
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

from minikcp.apis import printers
from minikcp.machinery import tables

pytestmark = pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl not on PATH")


def deployments(now: float) -> list[dict[str, Any]]:
    """Two deployments, created 5m30s and two hours before `now`."""
    return [
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {
                "name": name,
                "namespace": "default",
                "resourceVersion": "11",
                "creationTimestamp": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(now - age)),
                "labels": {"app": name},
            },
            "spec": {
                "replicas": 3,
                "selector": {"matchLabels": {"app": name}},
                "template": {"spec": {"containers": [{"name": "main", "image": f"{name}:1.0"}]}},
            },
            "status": {"readyReplicas": ready, "updatedReplicas": 3, "availableReplicas": ready},
        }
        for name, ready, age in (("web", 2, 330), ("api", 3, 7200))
    ]


async def _version(request: web.Request) -> web.Response:
    return web.json_response({"major": "1", "minor": "32", "gitVersion": "v1.32.0"})


async def _core_versions(request: web.Request) -> web.Response:
    return web.json_response({"kind": "APIVersions", "versions": ["v1"]})


async def _groups(request: web.Request) -> web.Response:
    version = {"groupVersion": "apps/v1", "version": "v1"}
    group = {"name": "apps", "versions": [version], "preferredVersion": version}
    return web.json_response({"kind": "APIGroupList", "apiVersion": "v1", "groups": [group]})


async def _core_resources(request: web.Request) -> web.Response:
    return web.json_response({"kind": "APIResourceList", "groupVersion": "v1", "resources": []})


async def _apps_resources(request: web.Request) -> web.Response:
    deployments = {
        "name": "deployments",
        "singularName": "deployment",
        "namespaced": True,
        "kind": "Deployment",
        "verbs": ["get", "list", "watch"],
        "shortNames": ["deploy"],
    }
    return web.json_response(
        {"kind": "APIResourceList", "groupVersion": "apps/v1", "resources": [deployments]}
    )


async def _list_deployments(request: web.Request) -> web.Response:
    now = time.time()
    items = deployments(now)
    if "as=Table" not in request.headers.get("Accept", ""):
        return web.json_response(
            {"kind": "DeploymentList", "apiVersion": "apps/v1", "items": items}
        )
    printer = printers.printer_for("apps", "Deployment")
    include = request.query.get("includeObject", "")
    rows = [tables.TableRow(printer.cells(d, now), tables.row_object(d, include)) for d in items]
    return web.json_response(tables.build_table(printer.columns, rows, resource_version="11"))


@pytest.fixture
async def server() -> Any:
    app = web.Application()
    app.router.add_get("/version", _version)
    app.router.add_get("/api", _core_versions)
    app.router.add_get("/apis", _groups)
    app.router.add_get("/api/v1", _core_resources)
    app.router.add_get("/apis/apps/v1", _apps_resources)
    app.router.add_get("/apis/apps/v1/namespaces/{namespace}/deployments", _list_deployments)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    yield f"http://127.0.0.1:{port}"
    await runner.cleanup()


async def kubectl(server: str, home: Path, *args: str) -> str:
    env = {"PATH": os.environ.get("PATH", ""), "HOME": str(home)}
    process = await asyncio.create_subprocess_exec(
        "kubectl",
        f"--server={server}",
        f"--cache-dir={home / 'cache'}",
        *args,
        env=env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(process.communicate(), timeout=30)
    assert process.returncode == 0, err.decode()
    return out.decode()


def _table(text: str) -> list[list[str]]:
    return [line.split() for line in text.strip().splitlines()]


async def test_kubectl_get_prints_server_columns(server: str, tmp_path: Path) -> None:
    out = await kubectl(server, tmp_path, "get", "deployments", "-n", "default")
    assert _table(out) == [
        ["NAME", "READY", "UP-TO-DATE", "AVAILABLE", "AGE"],
        ["web", "2/3", "3", "2", "5m30s"],
        ["api", "3/3", "3", "3", "120m"],
    ]


async def test_kubectl_get_wide_shows_priority_columns(server: str, tmp_path: Path) -> None:
    out = await kubectl(server, tmp_path, "get", "deploy", "-n", "default", "-o", "wide")
    assert _table(out)[:2] == [
        ["NAME", "READY", "UP-TO-DATE", "AVAILABLE", "AGE", "CONTAINERS", "IMAGES", "SELECTOR"],
        ["web", "2/3", "3", "2", "5m30s", "main", "web:1.0", "app=web"],
    ]


async def test_kubectl_show_labels_reads_row_metadata(server: str, tmp_path: Path) -> None:
    out = await kubectl(server, tmp_path, "get", "deployments", "-n", "default", "--show-labels")
    assert _table(out)[1] == ["web", "2/3", "3", "2", "5m30s", "app=web"]


async def test_kubectl_sort_by_uses_included_objects(server: str, tmp_path: Path) -> None:
    # --sort-by asks for includeObject=Object and sorts rows on the embedded objects.
    out = await kubectl(
        server,
        tmp_path,
        "get",
        "deployments",
        "-n",
        "default",
        "--sort-by=.spec.template.spec.containers[0].image",
    )
    assert [row[0] for row in _table(out)] == ["NAME", "api", "web"]

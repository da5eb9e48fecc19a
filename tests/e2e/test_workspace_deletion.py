"""Deleting a Workspace through real kubectl keeps Kubernetes' promises: a ConfigMap's finalizer
in a child workspace holds the deletion until a client removes it, and meanwhile nothing new can
be created anywhere in the tree."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests import server_process
from tests.e2e.polling import eventually
from tests.e2e.workspace_helpers import WorkspaceShell


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[server_process.ServerProcess]:
    proc = server_process.start_server(tmp_path_factory.mktemp("ws-delete-server"))
    yield proc
    assert proc.stop() == 0, proc.log()
    assert "Traceback" not in proc.log(), proc.log()


def test_a_finalizer_holds_the_workspace_deletion(
    server: server_process.ServerProcess, tmp_path: Path
) -> None:
    shell = WorkspaceShell.fresh(server, tmp_path / "home")
    shell.kubectl("ws", "create", "held", "--enter")
    shell.kubectl("ws", "create", "inner", "--enter")
    shell.kubectl(
        "create",
        "-f",
        "-",
        input=json.dumps(
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": "kept", "finalizers": ["example.com/hold"]},
            }
        ),
    )
    shell.kubectl("create", "configmap", "plain")
    shell.kubectl("ws", "root")
    shell.kubectl("delete", "workspace", "held", "--wait=false")
    inner = {"KUBECONFIG": str(server.kubeconfig("root:held:inner"))}
    top = {"KUBECONFIG": str(server.kubeconfig("root:held"))}

    def finalizing() -> bool:
        cm = json.loads(shell.kubectl("get", "configmap", "kept", "-o", "json", **inner).stdout)
        return bool(cm["metadata"].get("deletionTimestamp"))

    eventually(finalizing, what="the ConfigMap's deletion to start")
    for env in (top, inner):
        refused = shell.kubectl("create", "configmap", "late", check=False, **env)
        assert refused.returncode != 0
        assert 'configmaps "late" is forbidden: logical cluster' in refused.stderr
        assert "is being deleted: no new configmaps in it" in refused.stderr
    body = json.dumps({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "late"}})
    status, _, answer = server.request(
        "POST",
        "/clusters/root:held:inner/api/v1/namespaces",
        body.encode(),
        headers={"Content-Type": "application/json"},
    )
    refusal = json.loads(answer)
    assert (status, refusal["kind"], refusal["reason"], refusal["code"]) == (
        403,
        "Status",
        "Forbidden",
        403,
    )
    time.sleep(1.5)  # rechecked several times: still held
    row = shell.kubectl("get", "workspace", "held", "--no-headers").stdout.split()
    assert row[2] == "Terminating"
    assert "plain" in shell.kubectl("get", "configmaps", **inner).stdout

    shell.kubectl(
        "patch",
        "configmap",
        "kept",
        "--type=merge",
        "-p",
        '{"metadata":{"finalizers":null}}',
        **inner,
    )

    def gone() -> bool:
        got = shell.kubectl("get", "workspace", "held", check=False)
        return got.returncode != 0 and "NotFound" in got.stderr

    eventually(gone, what="the Workspace to go")
    _, _, body = server.request("GET", "/clusters/*/api/v1/configmaps")
    left = {i["metadata"]["name"] for i in json.loads(body)["items"]}
    assert not left & {"kept", "plain", "late"}


def test_minikcp_ws_delete_prints_progress_until_the_tree_is_gone(
    server: server_process.ServerProcess, tmp_path: Path
) -> None:
    shell = WorkspaceShell.fresh(server, tmp_path / "home")
    shell.kubectl("ws", "create", "doomed", "--enter")
    shell.kubectl("ws", "create", "below", "--enter")
    shell.kubectl("create", "configmap", "plain")
    shell.kubectl("ws", "root")
    result = shell.minikcp("ws", "delete", "doomed")
    lines = result.stdout.splitlines()
    assert lines[0] == 'Workspace "doomed" is being deleted with the workspaces below it.'
    assert lines[-1] == 'Workspace "doomed" deleted.'
    assert all(line.startswith("  phase ") for line in lines[1:-1]), lines
    assert shell.kubectl("get", "workspace", "doomed", check=False).returncode != 0
    missing = shell.minikcp("ws", "delete", "doomed", check=False)
    assert missing.returncode == 1
    assert missing.stderr.strip().splitlines() == [
        'Error: workspaces.tenancy.kcp.io "doomed" not found'
    ]

"""kcp-style kinds (Workspace, LogicalCluster) are served like built-ins: discovery, explain,
validation, defaults and tables, through real kubectl."""

from __future__ import annotations

import json

from tests.e2e.kubectl_runner import Kubectl


def test_discovery_lists_kcp_kinds(kubectl: Kubectl) -> None:
    out = kubectl("api-resources", "--api-group=tenancy.kcp.io", "-o", "wide").stdout
    header, row = out.splitlines()[:2]
    assert header.split()[:5] == ["NAME", "SHORTNAMES", "APIVERSION", "NAMESPACED", "KIND"]
    assert row.split()[:5] == ["workspaces", "ws", "tenancy.kcp.io/v1alpha1", "false", "Workspace"]
    out = kubectl("api-resources", "--categories=kcp", "-o", "name").stdout.split()
    assert out == [
        "apibindings.apis.kcp.io",
        "apiexportendpointslices.apis.kcp.io",
        "apiexports.apis.kcp.io",
        "apiresourceschemas.apis.kcp.io",
        "logicalclusters.core.kcp.io",
        "workspaces.tenancy.kcp.io",
        "synctargets.workload.kcp.io",
    ]


def test_explain_has_kcp_descriptions(kubectl: Kubectl) -> None:
    out = kubectl("explain", "workspaces.spec.URL").stdout
    assert "URL is where clients reach the workspace's logical cluster" in out
    out = kubectl("explain", "logicalcluster.status.phase").stdout
    assert "phase is where the logical cluster is in its life." in out
    assert "ENUM" in out and "Scheduling" in out


def test_invalid_workspace_is_422_and_stores_nothing(kubectl: Kubectl) -> None:
    manifest = {
        "apiVersion": "tenancy.kcp.io/v1alpha1",
        "kind": "Workspace",
        "metadata": {"name": "bad"},
        "spec": {"type": {"name": 7}},
    }
    failed = kubectl.fails("create", "-f", "-", input=json.dumps(manifest))
    assert "spec.type.name in body must be of type string" in failed.stderr
    gone = kubectl.fails("get", "workspace", "bad")
    assert 'workspaces.tenancy.kcp.io "bad" not found' in gone.stderr


def test_workspace_table_columns(kubectl: Kubectl) -> None:
    manifest = {**_workspace("cols"), "spec": {"type": {"name": "universal"}}}
    kubectl("apply", "--server-side", "-f", "-", input=json.dumps(manifest))
    applied = kubectl.get("workspace", "cols", managed_fields=True)
    (entry,) = applied["metadata"]["managedFields"]
    assert entry["manager"] == "kubectl"
    assert entry["fieldsV1"] == {"f:spec": {"f:type": {"f:name": {}}}}
    header = kubectl("get", "workspaces").stdout.splitlines()[0]
    assert header.split() == ["NAME", "TYPE", "PHASE", "URL", "AGE"]
    row = kubectl("get", "ws", "cols", "--no-headers").stdout.split()
    assert row[:2] == ["cols", "universal"]


def _workspace(name: str) -> dict[str, object]:
    return {
        "apiVersion": "tenancy.kcp.io/v1alpha1",
        "kind": "Workspace",
        "metadata": {"name": name},
    }


def test_workspace_status_write_checks_status_and_changes_nothing_when_invalid(
    kubectl: Kubectl,
) -> None:
    kubectl("create", "-f", "-", input=json.dumps(_workspace("stat")))
    before = kubectl.get("workspace", "stat")
    failed = kubectl.fails(
        "patch", "workspace", "stat", "--subresource=status", "--type=merge",
        "-p", json.dumps({"status": {"phase": 7, "conditions": "none"}}),
    )  # fmt: skip
    assert failed.stderr.splitlines() == [
        'The Workspace "stat" is invalid: ',
        '* status.phase: Invalid value: "integer": status.phase in body must be of type string: '
        '"integer"',
        '* status.conditions: Invalid value: "string": status.conditions in body must be of type '
        'array: "string"',
    ]
    after = kubectl.get("workspace", "stat")
    assert after["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]

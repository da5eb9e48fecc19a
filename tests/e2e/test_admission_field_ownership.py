"""A create's managedFields credit the writer with what it sent and what defaulting added, never
with what the strategy or mutating admission set afterwards (upstream's field manager runs
before both)."""

from __future__ import annotations

import json
from typing import Any

from tests.e2e.kubectl_runner import Kubectl


def _owned(obj: dict[str, Any], manager: str) -> dict[str, Any]:
    (entry,) = (e for e in obj["metadata"]["managedFields"] if e["manager"] == manager)
    assert entry["operation"] == "Update"
    fields = entry["fieldsV1"]
    assert isinstance(fields, dict)
    return fields


def test_workspace_admission_fields_are_nobodys(kubectl: Kubectl) -> None:
    manifest = {
        "apiVersion": "tenancy.kcp.io/v1alpha1",
        "kind": "Workspace",
        "metadata": {"name": "owned", "labels": {"team": "a"}},
        "spec": {"type": {"name": "universal"}},
    }
    kubectl("create", "-f", "-", input=json.dumps(manifest))
    created = kubectl.get("workspace", "owned", managed_fields=True)
    # Admission did set these: the URL, the cluster, the phase and the finalizer.
    assert created["spec"]["cluster"] and created["spec"]["URL"]
    assert created["metadata"]["finalizers"]
    assert [e["manager"] for e in created["metadata"]["managedFields"]] == ["kubectl-create"]
    owned = _owned(created, "kubectl-create")
    assert owned["f:metadata"] == {"f:labels": {".": {}, "f:team": {}}}
    assert owned["f:spec"]["f:type"]["f:name"] == {}
    assert set(owned["f:spec"]) == {"f:type"}  # not f:cluster nor f:URL


def test_workspace_with_nothing_sent_owns_only_the_defaulted_spec(kubectl: Kubectl) -> None:
    manifest = {
        "apiVersion": "tenancy.kcp.io/v1alpha1",
        "kind": "Workspace",
        "metadata": {"name": "bare"},
    }
    kubectl("create", "-f", "-", input=json.dumps(manifest))
    created = kubectl.get("workspace", "bare", managed_fields=True)
    assert created["spec"]["type"]["name"] == "universal"  # set by admission
    # kcp's CRD defaults `spec: {}` when decoding, before the field manager: that is the writer's.
    assert _owned(created, "kubectl-create") == {"f:spec": {}}


def test_pod_service_account_admission_fields_are_nobodys(kubectl: Kubectl) -> None:
    manifest = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "owned"},
        "spec": {"containers": [{"name": "app", "image": "nginx:1.27"}]},
    }
    kubectl("create", "-f", "-", input=json.dumps(manifest))
    created = kubectl.get("pod", "owned", managed_fields=True)
    spec = created["spec"]
    # The service account admission mounted the token and named the account.
    assert spec["serviceAccountName"] == "default"
    (volume,) = spec["volumes"]
    assert volume["name"].startswith("kube-api-access-")
    assert spec["containers"][0]["volumeMounts"][0]["name"] == volume["name"]
    owned = _owned(created, "kubectl-create")["f:spec"]
    # Defaults are the writer's, as upstream's decoding applies them before the field manager.
    assert owned["f:containers"] == {
        'k:{"name":"app"}': {
            ".": {},
            "f:image": {},
            "f:imagePullPolicy": {},
            "f:name": {},
            "f:resources": {},
            "f:terminationMessagePath": {},
            "f:terminationMessagePolicy": {},
        }
    }
    assert "f:dnsPolicy" in owned and "f:restartPolicy" in owned
    for admitted in ("f:serviceAccount", "f:serviceAccountName", "f:volumes"):
        assert admitted not in owned


def test_namespace_label_is_the_writers_finalizer_is_not(kubectl: Kubectl, cluster: str) -> None:
    name = f"ns-{cluster}"
    kubectl("create", "namespace", name)
    created = kubectl.get("namespace", name, managed_fields=True)
    assert created["spec"]["finalizers"] == ["kubernetes"]
    assert _owned(created, "kubectl-create") == {
        "f:metadata": {"f:labels": {".": {}, "f:kubernetes.io/metadata.name": {}}}
    }

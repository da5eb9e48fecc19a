"""What upstream sets after its field manager ran (the job strategy's generated selector and
labels, the service REST's IP families and cluster IPs) is nobody's in managedFields; the scheme
defaults are the creator's (real server, real kubectl)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.e2e.kubectl_runner import Kubectl

GENERATED_LABELS = (
    "f:batch.kubernetes.io/controller-uid",
    "f:batch.kubernetes.io/job-name",
    "f:controller-uid",
    "f:job-name",
)
ALLOCATED = ("f:clusterIP", "f:clusterIPs", "f:ipFamilies", "f:ipFamilyPolicy")
SERVICE_DEFAULTS = ("f:internalTrafficPolicy", "f:sessionAffinity", "f:type")
JOB_DEFAULTS = (
    "f:backoffLimit",
    "f:completionMode",
    "f:completions",
    "f:manualSelector",
    "f:parallelism",
    "f:podReplacementPolicy",
    "f:suspend",
)


def _owned(obj: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {e["manager"]: e["fieldsV1"] for e in obj["metadata"]["managedFields"]}


def _assert_job_generated_fields(job: dict[str, Any], owned: dict[str, Any]) -> None:
    uid = job["metadata"]["uid"]
    spec = job["spec"]
    assert spec["selector"] == {"matchLabels": {"batch.kubernetes.io/controller-uid": uid}}
    labels = spec["template"]["metadata"]["labels"]
    assert labels["controller-uid"] == labels["batch.kubernetes.io/controller-uid"] == uid
    assert labels["job-name"] == labels["batch.kubernetes.io/job-name"] == job["metadata"]["name"]
    assert job["metadata"]["labels"] == labels
    assert set(JOB_DEFAULTS) <= set(owned["f:spec"])
    assert "f:selector" not in owned["f:spec"]
    template_labels = owned["f:spec"]["f:template"].get("f:metadata", {}).get("f:labels", {})
    job_labels = owned.get("f:metadata", {}).get("f:labels", {})
    for label in GENERATED_LABELS:
        assert label not in template_labels and label not in job_labels


def _assert_service_allocations(service: dict[str, Any], owned: dict[str, Any]) -> None:
    spec = service["spec"]
    assert spec["ipFamilies"] == ["IPv4"] and spec["ipFamilyPolicy"] == "SingleStack"
    assert spec["clusterIP"] and spec["clusterIPs"] == [spec["clusterIP"]]
    assert set(SERVICE_DEFAULTS) <= set(owned["f:spec"])
    assert not set(ALLOCATED) & set(owned["f:spec"])


def test_kubectl_create_job(kubectl: Kubectl) -> None:
    kubectl("create", "job", "pi", "--image=busybox")
    job = kubectl.get("job", "pi", managed_fields=True)
    owned = _owned(job)
    assert list(owned) == ["kubectl-create"]
    _assert_job_generated_fields(job, owned["kubectl-create"])
    assert "f:metadata" not in owned["kubectl-create"]  # kubectl sent no labels


def test_kubectl_create_service(kubectl: Kubectl) -> None:
    kubectl("create", "service", "clusterip", "web", "--tcp=80:8080")
    service = kubectl.get("service", "web", managed_fields=True)
    owned = _owned(service)
    assert list(owned) == ["kubectl-create"]
    _assert_service_allocations(service, owned["kubectl-create"])
    port = owned["kubectl-create"]["f:spec"]["f:ports"]['k:{"port":80,"protocol":"TCP"}']
    assert {"f:name", "f:port", "f:protocol", "f:targetPort"} <= set(port)


def _manifests(tier: str) -> dict[str, Any]:
    service = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "front", "labels": {"tier": tier}},
        "spec": {"selector": {"app": "front"}, "ports": [{"name": "http", "port": 80}]},
    }
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "once"},
        "spec": {
            "template": {
                "metadata": {"labels": {"app": "once"}},
                "spec": {
                    "containers": [{"name": "c", "image": "busybox"}],
                    "restartPolicy": "Never",
                },
            }
        },
    }
    return {"apiVersion": "v1", "kind": "List", "items": [service, job]}


def test_kubectl_apply_then_apply_again(kubectl: Kubectl, workdir: Path) -> None:
    path = workdir / "front.json"
    path.write_text(json.dumps(_manifests("a")))
    kubectl("apply", "-f", str(path))
    service = kubectl.get("service", "front", managed_fields=True)
    job = kubectl.get("job", "once", managed_fields=True)
    _assert_service_allocations(service, _owned(service)["kubectl-client-side-apply"])
    owned_job = _owned(job)["kubectl-client-side-apply"]
    _assert_job_generated_fields(job, owned_job)
    # The Job shares its template's labels: the one sent is the creator's, as upstream's.
    assert owned_job["f:metadata"]["f:labels"] == {".": {}, "f:app": {}}

    # A second apply patches the label only: the allocations stay and stay nobody's.
    path.write_text(json.dumps(_manifests("b")))
    kubectl("apply", "-f", str(path))
    again = kubectl.get("service", "front", managed_fields=True)
    assert again["metadata"]["labels"] == {"tier": "b"}
    assert {k: again["spec"][k] for k in ("clusterIP", "ipFamilies", "ipFamilyPolicy")} == {
        k: service["spec"][k] for k in ("clusterIP", "ipFamilies", "ipFamilyPolicy")
    }
    for fields in _owned(again).values():
        assert not set(ALLOCATED) & set(fields.get("f:spec", {}))
    job_again = kubectl.get("job", "once", managed_fields=True)
    assert job_again["spec"]["selector"] == job["spec"]["selector"]


def test_server_side_apply_service(kubectl: Kubectl, workdir: Path) -> None:
    (service, _) = _manifests("a")["items"]
    path = workdir / "front.json"
    path.write_text(json.dumps(service))
    kubectl("apply", "--server-side", "-f", str(path))
    applied = kubectl.get("service", "front", managed_fields=True)
    owned = _owned(applied)
    assert list(owned) == ["kubectl"]
    assert set(owned["kubectl"]["f:spec"]) == {"f:ports", "f:selector"}
    assert applied["spec"]["ipFamilies"] == ["IPv4"] and applied["spec"]["clusterIP"]

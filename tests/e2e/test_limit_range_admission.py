"""LimitRange enforced on pods and claims: container defaults, min/max/ratio refusals with
upstream's messages, and LimitRanger's defaults counted by ResourceQuota after it."""

from __future__ import annotations

import json
from typing import Any

import pytest
import yaml

from tests.e2e.kubectl_runner import Kubectl
from tests.e2e.polling import eventually

pytestmark = pytest.mark.e2e

LIMITS = {
    "apiVersion": "v1",
    "kind": "LimitRange",
    "metadata": {"name": "limits"},
    "spec": {
        "limits": [
            {
                "type": "Container",
                "min": {"cpu": "100m"},
                "max": {"cpu": "1", "memory": "1Gi"},
                "default": {"cpu": "500m", "memory": "256Mi"},
                "defaultRequest": {"cpu": "200m", "memory": "128Mi"},
                "maxLimitRequestRatio": {"cpu": "4"},
            },
            {"type": "Pod", "max": {"memory": "1536Mi"}},
            {"type": "PersistentVolumeClaim", "min": {"storage": "1Gi"}, "max": {"storage": "5Gi"}},
        ]
    },
}


def _pod(name: str, *containers: dict[str, Any]) -> str:
    return json.dumps(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name},
            "spec": {"containers": list(containers)},
        }
    )


def _container(name: str, **resources: dict[str, str]) -> dict[str, Any]:
    out: dict[str, Any] = {"name": name, "image": "nginx"}
    if resources:
        out["resources"] = resources
    return out


def _claim(name: str, storage: str) -> str:
    return json.dumps(
        {
            "apiVersion": "v1",
            "kind": "PersistentVolumeClaim",
            "metadata": {"name": name},
            "spec": {
                "accessModes": ["ReadWriteOnce"],
                "resources": {"requests": {"storage": storage}},
            },
        }
    )


def test_defaults_applied_to_pods(kubectl: Kubectl) -> None:
    kubectl("create", "-f", "-", input=json.dumps(LIMITS))
    kubectl(
        "create",
        "-f",
        "-",
        input=_pod("web", _container("app"), _container("side", limits={"cpu": "800m"})),
    )
    pod = yaml.safe_load(kubectl("get", "pod", "web", "-o", "yaml").stdout)
    app, side = pod["spec"]["containers"]
    assert app["resources"] == {
        "limits": {"cpu": "500m", "memory": "256Mi"},
        "requests": {"cpu": "200m", "memory": "128Mi"},
    }
    # Pod defaulting already made the request equal to the limit given; memory is defaulted.
    assert side["resources"] == {
        "limits": {"cpu": "800m", "memory": "256Mi"},
        "requests": {"cpu": "800m", "memory": "128Mi"},
    }
    assert pod["metadata"]["annotations"]["kubernetes.io/limit-ranger"] == (
        "LimitRanger plugin set: cpu, memory request for container app; cpu, memory limit for "
        "container app; memory request for container side; memory limit for container side"
    )


def test_min_max_and_ratio_refused(kubectl: Kubectl) -> None:
    kubectl("create", "-f", "-", input=json.dumps(LIMITS))
    small = _container("small", requests={"cpu": "50m"}, limits={"cpu": "2"})
    refused = kubectl.fails("create", "-f", "-", input=_pod("x", small)).stderr
    assert (
        'pods "x" is forbidden: [minimum cpu usage per Container is 100m, but request is 50m, '
        "maximum cpu usage per Container is 1, but limit is 2, cpu max limit to request ratio "
        "per Container is 4, but provided ratio is 40.000000]" in refused
    )
    big = _container("big", requests={"memory": "800Mi"}, limits={"memory": "800Mi"})
    refused = kubectl.fails("create", "-f", "-", input=_pod("y", big, big | {"name": "b2"})).stderr
    assert (
        'pods "y" is forbidden: maximum memory usage per Pod is 1536Mi, but limit is 1600Mi'
        in refused
    )
    assert "NotFound" in kubectl.fails("get", "pod", "x").stderr
    refused = kubectl.fails("create", "-f", "-", input=_claim("tiny", "500Mi")).stderr
    assert (
        'persistentvolumeclaims "tiny" is forbidden: minimum storage usage per '
        "PersistentVolumeClaim is 1Gi, but request is 500Mi" in refused
    )
    refused = kubectl.fails("create", "-f", "-", input=_claim("huge", "10Gi")).stderr
    assert "maximum storage usage per PersistentVolumeClaim is 5Gi, but request is 10Gi" in refused
    kubectl("create", "-f", "-", input=_claim("fits", "2Gi"))


def test_quota_counts_what_limit_ranger_defaulted(kubectl: Kubectl) -> None:
    kubectl("create", "-f", "-", input=json.dumps(LIMITS))
    kubectl("create", "quota", "q", "--hard=requests.cpu=300m,limits.memory=1Gi")
    eventually(
        lambda: (kubectl.get("quota", "q").get("status") or {}).get("used"), what="quota status"
    )
    # No resources given: LimitRanger's defaults satisfy the quota's "must specify".
    kubectl("create", "-f", "-", input=_pod("a", _container("c")))
    used = kubectl.get("quota", "q")["status"]["used"]
    assert used == {"limits.memory": "256Mi", "requests.cpu": "200m"}
    refused = kubectl.fails("create", "-f", "-", input=_pod("b", _container("c"))).stderr
    assert (
        "exceeded quota: q, requested: requests.cpu=200m, used: requests.cpu=200m, limited: "
        "requests.cpu=300m" in refused
    )


def test_limit_ranges_are_per_logical_cluster(kubectl: Kubectl) -> None:
    kubectl("create", "-f", "-", input=json.dumps(LIMITS))
    other = Kubectl(kubectl.server, kubectl.cluster + "b")
    other("create", "-f", "-", input=_pod("free", _container("c")))
    assert other.get("pod", "free")["spec"]["containers"][0]["resources"] == {}
    refused = kubectl.fails(
        "create", "-f", "-", input=_pod("free", _container("c", requests={"cpu": "10m"}))
    ).stderr
    assert "minimum cpu usage per Container is 100m, but request is 10m" in refused

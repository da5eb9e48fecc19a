"""Service updates allocate and clear as upstream's service REST: type changes through kubectl
patch and apply, node ports kept across a PUT that leaves them out, and IP families this
single-stack cluster lacks refused with 422 Invalid, changing nothing (real server, kubectl)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import orjson
import pytest

from tests.e2e.kubectl_runner import Kubectl

JSON = {"Content-Type": "application/json"}
MERGE = {"Content-Type": "application/merge-patch+json"}
FAMILY_FIELDS = ("clusterIP", "clusterIPs", "ipFamilies", "ipFamilyPolicy")


def _patch(kubectl: Kubectl, name: str, patch: dict[str, Any]) -> dict[str, Any]:
    kubectl("patch", "service", name, "--type=merge", "-p", json.dumps(patch))
    return kubectl.get("service", name)["spec"]  # type: ignore[no-any-return]


def _node_ports(spec: dict[str, Any]) -> list[int]:
    return [p["nodePort"] for p in spec["ports"] if "nodePort" in p]


def test_cluster_ip_to_node_port_and_back(kubectl: Kubectl) -> None:
    kubectl("create", "service", "clusterip", "web", "--tcp=80:8080", "--tcp=443:8443")
    before = kubectl.get("service", "web")["spec"]
    assert _node_ports(before) == []

    spec = _patch(kubectl, "web", {"spec": {"type": "NodePort"}})
    node_ports = _node_ports(spec)
    assert len(node_ports) == 2 and len(set(node_ports)) == 2
    assert all(30000 <= port <= 32767 for port in node_ports)
    assert spec["clusterIP"] == before["clusterIP"]

    # A PUT that leaves the node ports out keeps them (ports matched by name).
    service = kubectl.get("service", "web")
    for port in service["spec"]["ports"]:
        del port["nodePort"]
    service["metadata"]["labels"] = {"put": "yes"}
    kubectl("replace", "-f", "-", input=json.dumps(service))
    assert _node_ports(kubectl.get("service", "web")["spec"]) == node_ports

    spec = _patch(kubectl, "web", {"spec": {"type": "LoadBalancer"}})
    assert _node_ports(spec) == node_ports

    # Back to ClusterIP: the node ports go, the cluster IP stays.
    spec = _patch(kubectl, "web", {"spec": {"type": "ClusterIP"}})
    assert _node_ports(spec) == [] and spec["clusterIP"] == before["clusterIP"]
    assert "externalTrafficPolicy" not in spec and "allocateLoadBalancerNodePorts" not in spec


def test_external_name_to_cluster_ip_and_back(kubectl: Kubectl) -> None:
    kubectl("create", "service", "externalname", "db", "--external-name=db.example.com")
    external = kubectl.get("service", "db")["spec"]
    assert not set(FAMILY_FIELDS) & set(external)

    patch = {"spec": {"type": "ClusterIP", "ports": [{"port": 5432}]}}
    spec = _patch(kubectl, "db", patch)
    assert spec["clusterIP"].startswith("10.") and spec["clusterIPs"] == [spec["clusterIP"]]
    assert spec["ipFamilies"] == ["IPv4"] and spec["ipFamilyPolicy"] == "SingleStack"
    shown = kubectl("get", "service", "db", "--no-headers").stdout.split()
    assert shown[1:3] == ["ClusterIP", spec["clusterIP"]]

    spec = _patch(
        kubectl, "db", {"spec": {"type": "ExternalName", "externalName": "db.example.com"}}
    )
    assert not set(FAMILY_FIELDS) & set(spec)
    assert spec["externalName"] == "db.example.com"


@pytest.mark.parametrize("mode", ["client-side", "server-side"])
def test_apply_changes_type(kubectl: Kubectl, workdir: Path, mode: str) -> None:
    manifest: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "front"},
        "spec": {"type": "NodePort", "selector": {"app": "front"}, "ports": [{"port": 80}]},
    }
    path = workdir / "front.json"
    apply = ("apply", "--server-side") if mode == "server-side" else ("apply",)

    def applied(service_type: str) -> dict[str, Any]:
        manifest["spec"]["type"] = service_type
        path.write_text(json.dumps(manifest))
        kubectl(*apply, "-f", str(path))
        return kubectl.get("service", "front")["spec"]  # type: ignore[no-any-return]

    assert len(_node_ports(applied("NodePort"))) == 1
    assert _node_ports(applied("ClusterIP")) == []
    assert len(_node_ports(applied("LoadBalancer"))) == 1
    manifest["spec"]["externalName"] = "front.example.com"
    external = applied("ExternalName")
    assert not set(FAMILY_FIELDS) & set(external) and _node_ports(external) == []
    assert "externalTrafficPolicy" not in external


def test_changed_ip_to_external_name_is_forbidden(kubectl: Kubectl) -> None:
    kubectl("create", "service", "clusterip", "pinned", "--tcp=80")
    before = kubectl.get("service", "pinned")
    # A cluster IP the client changed is its own: validation refuses it on ExternalName.
    path = kubectl.path("v1", "services", "pinned")
    patch = {
        "spec": {
            "type": "ExternalName",
            "externalName": "x.example.com",
            "clusterIPs": ["10.96.0.1"],
        }
    }
    code, _, answer = kubectl.server.request("PATCH", path, orjson.dumps(patch), headers=MERGE)
    status = orjson.loads(answer)
    assert (code, status["reason"]) == (422, "Invalid")
    causes = {(c["field"], c["message"]) for c in status["details"]["causes"]}
    assert ("spec.clusterIPs", "Forbidden: may not be set for ExternalName services") in causes
    assert kubectl.get("service", "pinned") == before


def _refused(kubectl: Kubectl, method: str, path: str, body: dict[str, Any]) -> dict[str, Any]:
    headers = MERGE if method == "PATCH" else JSON
    code, _, answer = kubectl.server.request(method, path, orjson.dumps(body), headers=headers)
    status: dict[str, Any] = orjson.loads(answer)
    assert (code, status["reason"], status["code"]) == (422, "Invalid", 422), status
    return status


def test_families_this_cluster_lacks_are_refused(kubectl: Kubectl) -> None:
    services = kubectl.path("v1", "services")
    service: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "v6"},
        "spec": {"ipFamilies": ["IPv6"], "ports": [{"port": 80}], "selector": {"a": "b"}},
    }
    status = _refused(kubectl, "POST", services, service)
    assert status["message"] == (
        'Service "v6" is invalid: spec.ipFamilies[0]: Invalid value: "IPv6": '
        "not configured on this cluster"
    )
    assert status["details"] == {
        "name": "v6",
        "kind": "Service",
        "causes": [
            {
                "reason": "FieldValueInvalid",
                "message": 'Invalid value: "IPv6": not configured on this cluster',
                "field": "spec.ipFamilies[0]",
            }
        ],
    }

    service["spec"] = {
        "ipFamilyPolicy": "RequireDualStack",
        "ports": [{"port": 80}],
        "selector": {"a": "b"},
    }
    status = _refused(kubectl, "POST", services, service)
    assert status["message"] == (
        'Service "v6" is invalid: spec.ipFamilyPolicy: Invalid value: "RequireDualStack": '
        "this cluster is not configured for dual-stack services"
    )

    service["spec"] = {"clusterIP": "fd00::10", "ports": [{"port": 80}]}
    status = _refused(kubectl, "POST", services, service)
    assert status["message"] == (
        'Service "v6" is invalid: spec.clusterIPs[0]: Invalid value: []string{"fd00::10"}: '
        "IPv6 is not configured on this cluster"
    )
    kubectl.fails("get", "service", "v6")

    # A headless Service without selector may ask for both families, as upstream.
    headless = {**service, "metadata": {"name": "both"}}
    headless["spec"] = {"clusterIP": "None", "ipFamilyPolicy": "RequireDualStack"}
    code, _, answer = kubectl.server.request("POST", services, orjson.dumps(headless), headers=JSON)
    assert code == 201, answer
    assert orjson.loads(answer)["spec"]["ipFamilies"] == ["IPv4", "IPv6"]

    # An update asking for a family the cluster lacks changes nothing.
    kubectl("create", "service", "clusterip", "web", "--tcp=80")
    before = kubectl.get("service", "web")
    status = _refused(
        kubectl,
        "PATCH",
        kubectl.path("v1", "services", "web"),
        {"spec": {"ipFamilyPolicy": "RequireDualStack", "type": "NodePort"}},
    )
    assert [c["field"] for c in status["details"]["causes"]] == ["spec.ipFamilyPolicy"]
    failed = kubectl.fails(
        "patch", "service", "web", "-p", '{"spec":{"ipFamilies":["IPv4","IPv6"]}}'
    )
    assert 'spec.ipFamilyPolicy: Invalid value: "SingleStack"' in failed.stderr
    assert kubectl.get("service", "web") == before


def test_health_check_node_port_follows_the_traffic_policy(kubectl: Kubectl) -> None:
    kubectl("create", "service", "loadbalancer", "edge", "--tcp=80")
    spec = _patch(kubectl, "edge", {"spec": {"externalTrafficPolicy": "Local"}})
    health = spec["healthCheckNodePort"]
    assert 30000 <= health <= 32767 and health not in _node_ports(spec)

    before = kubectl.get("service", "edge")
    status = _refused(
        kubectl,
        "PATCH",
        kubectl.path("v1", "services", "edge"),
        {"spec": {"healthCheckNodePort": health + 1}},
    )
    assert status["details"]["causes"] == [
        {
            "reason": "FieldValueInvalid",
            "message": f"Invalid value: {health + 1}: cannot change healthCheckNodePort on "
            "loadBalancer service with externalTraffic=Local during update",
            "field": "spec.healthCheckNodePort",
        }
    ]
    assert kubectl.get("service", "edge") == before

    # A policy the client changes while leaving the type that needs it is its own: refused.
    status = _refused(
        kubectl,
        "PATCH",
        kubectl.path("v1", "services", "edge"),
        {"spec": {"type": "ClusterIP", "externalTrafficPolicy": "Cluster"}},
    )
    assert status["message"] == (
        'Service "edge" is invalid: spec.externalTrafficPolicy: Invalid value: "Cluster": '
        "may only be set for externally-accessible services"
    )
    assert kubectl.get("service", "edge") == before

    spec = _patch(kubectl, "edge", {"spec": {"type": "ClusterIP", "externalTrafficPolicy": None}})
    assert "healthCheckNodePort" not in spec and _node_ports(spec) == []

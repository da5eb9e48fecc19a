"""`kubectl apply`, client-side and server-side, against a real minikcp server.

Each scenario checks what kubectl prints and what the server stored. The key scenarios run with
kubectl 1.32 (the default), 1.29 and 1.33 through the `any_kubectl` fixture.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import orjson
import pytest
import yaml

from tests.e2e.kubectl_runner import Kubectl, container_names, env_of, managers

pytestmark = pytest.mark.e2e

LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"


def deployment(name: str = "web") -> dict[str, Any]:
    """Three containers with env, ports and mounts, two volumes."""
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "labels": {"app": name, "tier": "frontend"}},
        "spec": {
            "replicas": 2,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {
                    "containers": [
                        {
                            "name": "nginx",
                            "image": "nginx:1.27",
                            "env": [
                                {"name": "A", "value": "1"},
                                {"name": "B", "value": "2"},
                                {"name": "C", "value": "3"},
                            ],
                            "ports": [{"name": "http", "containerPort": 80}],
                            "volumeMounts": [{"name": "data", "mountPath": "/data"}],
                        },
                        {"name": "sidecar", "image": "busybox:1.36", "args": ["sleep", "1d"]},
                        {"name": "logger", "image": "fluent-bit:3.0"},
                    ],
                    "volumes": [
                        {"name": "data", "emptyDir": {}},
                        {"name": "cache", "emptyDir": {}},
                    ],
                },
            },
        },
    }


def write(workdir: Path, name: str, *objects: dict[str, Any]) -> str:
    path = workdir / name
    path.write_text(yaml.safe_dump_all(objects, sort_keys=False))
    return str(path)


def template_spec(obj: dict[str, Any]) -> dict[str, Any]:
    return obj["spec"]["template"]["spec"]  # type: ignore[no-any-return]


def last_applied(obj: dict[str, Any]) -> Any:
    text = obj["metadata"]["annotations"][LAST_APPLIED]
    assert text.endswith("\n"), "kubectl stores compact JSON plus a newline"
    return json.loads(text)


def as_last_applied(manifest: dict[str, Any], namespace: str = "default") -> dict[str, Any]:
    """What kubectl records: the manifest with its namespace and an empty annotations map."""
    expected = copy.deepcopy(manifest)
    expected["metadata"]["namespace"] = namespace
    expected["metadata"].setdefault("annotations", {})
    return expected


# -- client-side apply --------------------------------------------------------------------------


def test_apply_twice_deployment(any_kubectl: Kubectl, workdir: Path) -> None:
    k = any_kubectl
    first = deployment()
    out = k("apply", "-f", write(workdir, "v1.yaml", first)).stdout
    assert out.strip() == "deployment.apps/web created"
    created = k.get("deployment", "web")
    assert last_applied(created) == as_last_applied(first)
    assert created["metadata"]["generation"] == 1

    # A server-side addition kubectl's apply does not own: it must survive the next apply.
    k(
        "patch",
        "deployment",
        "web",
        "--type=json",
        "-p",
        '[{"op":"add","path":"/spec/template/spec/containers/0/env/-",'
        '"value":{"name":"EXTRA","value":"x"}}]',
    )

    second = deployment()
    spec = template_spec(second)
    nginx, _sidecar, logger = spec["containers"]
    logger["image"] = "fluent-bit:3.1"
    nginx["env"] = [{"name": "C", "value": "3"}, {"name": "A", "value": "11"}]
    spec["containers"] = [logger, nginx]  # sidecar removed, order changed
    spec["volumes"] = [{"name": "data", "emptyDir": {}}]  # cache removed
    second["spec"]["replicas"] = 3
    del second["metadata"]["labels"]["tier"]
    applied = k("apply", "-f", write(workdir, "v2.yaml", second), "-v=9")
    assert applied.stdout.strip() == "deployment.apps/web configured"
    # The second apply is a strategic merge patch computed by kubectl.
    log = applied.stderr
    assert "application/strategic-merge-patch+json" in log
    assert "fieldManager=kubectl-client-side-apply" in log
    assert "$setElementOrder/containers" in log and "$setElementOrder/env" in log

    stored = k.get("deployment", "web")
    assert container_names(stored) == ["logger", "nginx"]
    # Server-only EXTRA keeps its place after the items the patch orders.
    assert env_of(stored, "nginx") == [("C", "3"), ("A", "11"), ("EXTRA", "x")]
    assert [v["name"] for v in template_spec(stored)["volumes"]] == ["data"]
    assert template_spec(stored)["containers"][0]["image"] == "fluent-bit:3.1"
    assert stored["spec"]["replicas"] == 3
    assert stored["metadata"]["labels"] == {"app": "web"}
    assert stored["metadata"]["generation"] == 3
    assert last_applied(stored) == as_last_applied(second)

    # Applying the same file again: EXTRA makes kubectl send a patch that only restates the
    # order, which changes nothing, so the server writes nothing.
    rv = stored["metadata"]["resourceVersion"]
    again = k("apply", "-f", str(workdir / "v2.yaml"))
    assert again.stdout.strip() == "deployment.apps/web configured"
    assert k.resource_version("deployment", "web") == rv

    k(
        "patch",
        "deployment",
        "web",
        "--type=json",
        "-p",
        '[{"op":"remove","path":"/spec/template/spec/containers/1/env/2"}]',
    )
    rv = k.resource_version("deployment", "web")
    again = k("apply", "-f", str(workdir / "v2.yaml"))
    assert again.stdout.strip() == "deployment.apps/web unchanged"
    assert k.resource_version("deployment", "web") == rv


def test_apply_removes_configmap_key(any_kubectl: Kubectl, workdir: Path) -> None:
    k = any_kubectl
    cm: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "settings"},
        "data": {"a": "1", "b": "2", "c": "3"},
    }
    assert k("apply", "-f", write(workdir, "cm.yaml", cm)).stdout.strip() == (
        "configmap/settings created"
    )
    cm["data"] = {"a": "1", "c": "33"}
    applied = k("apply", "-f", write(workdir, "cm.yaml", cm), "-v=9")
    assert applied.stdout.strip() == "configmap/settings configured"
    assert "application/strategic-merge-patch+json" in applied.stderr
    assert '"data":{"b":null,"c":"33"}' in applied.stderr.replace('\\"', '"')
    stored = k.get("configmap", "settings")
    assert stored["data"] == {"a": "1", "c": "33"}
    assert last_applied(stored) == as_last_applied(cm)

    rv = stored["metadata"]["resourceVersion"]
    assert k("apply", "-f", str(workdir / "cm.yaml")).stdout.strip() == (
        "configmap/settings unchanged"
    )
    assert k.resource_version("configmap", "settings") == rv


def test_apply_twice_service(kubectl: Kubectl, workdir: Path) -> None:
    svc: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "front"},
        "spec": {
            "selector": {"app": "web"},
            "ports": [
                {"name": "http", "port": 80, "targetPort": 8080},
                {"name": "https", "port": 443, "targetPort": 8443},
            ],
        },
    }
    kubectl("apply", "-f", write(workdir, "svc.yaml", svc))
    cluster_ip = kubectl.get("service", "front")["spec"]["clusterIP"]
    assert cluster_ip

    svc["spec"]["selector"] = {"app": "web", "tier": "frontend"}
    svc["spec"]["ports"] = [{"name": "https", "port": 443, "targetPort": 9443}]
    out = kubectl("apply", "-f", write(workdir, "svc.yaml", svc)).stdout
    assert out.strip() == "service/front configured"
    stored = kubectl.get("service", "front")
    assert stored["spec"]["ports"] == [
        {"name": "https", "port": 443, "protocol": "TCP", "targetPort": 9443}
    ]
    assert stored["spec"]["selector"] == {"app": "web", "tier": "frontend"}
    assert stored["spec"]["clusterIP"] == cluster_ip, "the allocated IP survives the apply"

    rv = stored["metadata"]["resourceVersion"]
    assert kubectl("apply", "-f", str(workdir / "svc.yaml")).stdout.strip() == (
        "service/front unchanged"
    )
    assert kubectl.resource_version("service", "front") == rv
    table = kubectl("get", "service", "front").stdout.splitlines()
    assert table[1].split()[:5] == ["front", "ClusterIP", cluster_ip, "<none>", "443/TCP"]


# -- server-side apply --------------------------------------------------------------------------


def minimal_deployment(name: str, replicas: int) -> dict[str, Any]:
    """An apply configuration that only states the replica count."""
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name},
        "spec": {"replicas": replicas},
    }


def test_server_side_apply_conflict_and_force(any_kubectl: Kubectl, workdir: Path) -> None:
    k = any_kubectl
    config = deployment("api")
    path = write(workdir, "api.yaml", config)
    out = k("apply", "--server-side", "-f", path).stdout
    assert out.strip() == "deployment.apps/api serverside-applied"
    shown = k.get("deployment", "api", managed_fields=True)
    owners = managers(shown)
    assert set(owners) == {("kubectl", "Apply")}
    applied = owners[("kubectl", "Apply")]
    assert "f:replicas" in applied["f:spec"]
    assert 'k:{"name":"nginx"}' in applied["f:spec"]["f:template"]["f:spec"]["f:containers"]
    entry = shown["metadata"]["managedFields"][0]
    assert entry["apiVersion"] == "apps/v1" and entry["fieldsType"] == "FieldsV1"
    assert "managedFields" not in k("get", "deployment", "api", "-o", "yaml").stdout
    assert "managedFields" not in k("get", "deployment", "api", "-o", "json").stdout

    rv = shown["metadata"]["resourceVersion"]
    assert k("apply", "--server-side", "-f", path).stdout.strip() == (
        "deployment.apps/api serverside-applied"
    )
    assert k.resource_version("deployment", "api") == rv, "an unchanged apply writes nothing"

    other = write(workdir, "other.yaml", minimal_deployment("api", 5))
    refused = k.fails("apply", "--server-side", "--field-manager=other", "-f", other)
    assert (
        'error: Apply failed with 1 conflict: conflict with "kubectl": .spec.replicas'
        in refused.stderr.splitlines()
    )
    assert "--force-conflicts" in refused.stderr
    unchanged = k.get("deployment", "api")
    assert unchanged["spec"]["replicas"] == 2
    assert unchanged["metadata"]["resourceVersion"] == rv

    forced = k("apply", "--server-side", "--field-manager=other", "--force-conflicts", "-f", other)
    assert forced.stdout.strip() == "deployment.apps/api serverside-applied"
    moved = k.get("deployment", "api", managed_fields=True)
    assert moved["spec"]["replicas"] == 5
    owners = managers(moved)
    assert owners[("other", "Apply")]["f:spec"] == {"f:replicas": {}}
    assert "f:replicas" not in owners[("kubectl", "Apply")]["f:spec"]

    # kubectl now conflicts with "other" in turn, unless it stops stating replicas.
    refused = k.fails("apply", "--server-side", "-f", path)
    assert 'conflict with "other": .spec.replicas' in refused.stderr

    # Fields kubectl alone owned go away when its configuration drops them.
    del config["spec"]["replicas"]
    del config["metadata"]["labels"]["tier"]
    nginx = template_spec(config)["containers"][0]
    nginx["env"] = [e for e in nginx["env"] if e["name"] != "B"]
    template_spec(config)["containers"].pop(1)  # sidecar
    k("apply", "--server-side", "-f", write(workdir, "api.yaml", config))
    pruned = k.get("deployment", "api")
    assert pruned["metadata"]["labels"] == {"app": "api"}
    assert env_of(pruned, "nginx") == [("A", "1"), ("C", "3")]
    assert container_names(pruned) == ["nginx", "logger"]
    assert pruned["spec"]["replicas"] == 5, "still owned by other"


def test_server_side_apply_raw_conflict_status(kubectl: Kubectl) -> None:
    """The 409 itself, as client libraries see it."""
    body = orjson.dumps(deployment("raw"))
    path = kubectl.path("apps/v1", "deployments", "raw")
    headers = {"Content-Type": "application/apply-patch+yaml"}
    code, _, _ = kubectl.server.request(
        "PATCH", path + "?fieldManager=kubectl", body, headers=headers
    )
    assert code == 201
    code, _, answer = kubectl.server.request(
        "PATCH",
        path + "?fieldManager=other",
        orjson.dumps(minimal_deployment("raw", 4)),
        headers=headers,
    )
    status = orjson.loads(answer)
    assert (code, status["reason"]) == (409, "Conflict")
    assert (
        status["message"] == 'Apply failed with 1 conflict: conflict with "kubectl": .spec.replicas'
    )
    assert status["details"]["causes"] == [
        {
            "reason": "FieldManagerConflict",
            "message": 'conflict with "kubectl"',
            "field": ".spec.replicas",
        }
    ]


def test_client_side_to_server_side_migration(any_kubectl: Kubectl, workdir: Path) -> None:
    k = any_kubectl
    config = deployment("mig")
    path = write(workdir, "mig.yaml", config)
    k("apply", "-f", path)
    before = k.get("deployment", "mig", managed_fields=True)
    assert ("kubectl-client-side-apply", "Update") in managers(before)

    # Same file, now server-side: kubectl migrates the client-side manager without conflicts.
    migrated = k("apply", "--server-side", "-f", path, "-v=6")
    assert migrated.stdout.strip() == "deployment.apps/mig serverside-applied"
    assert "Warning" not in migrated.stderr and "conflict" not in migrated.stderr
    after = k.get("deployment", "mig", managed_fields=True)
    owners = managers(after)
    assert ("kubectl-client-side-apply", "Update") not in owners
    assert "f:replicas" in owners[("kubectl", "Apply")]["f:spec"]
    assert after["spec"] == before["spec"]

    # What kubectl's client-side apply owned is now the applier's to remove.
    del config["metadata"]["labels"]["tier"]
    nginx = template_spec(config)["containers"][0]
    nginx["env"] = [e for e in nginx["env"] if e["name"] != "C"]
    template_spec(config)["volumes"].pop()  # cache
    out = k("apply", "--server-side", "-f", write(workdir, "mig.yaml", config)).stdout
    assert out.strip() == "deployment.apps/mig serverside-applied"
    stored = k.get("deployment", "mig")
    assert stored["metadata"]["labels"] == {"app": "mig"}
    assert env_of(stored, "nginx") == [("A", "1"), ("B", "2")]
    assert [v["name"] for v in template_spec(stored)["volumes"]] == ["data"]
    # The server keeps kubectl's last-applied annotation in step with server-side applies.
    assert last_applied(stored)["metadata"]["labels"] == {"app": "mig"}


def test_migration_patch_is_guarded_by_resource_version(kubectl: Kubectl, workdir: Path) -> None:
    """kubectl's migration replaces managedFields with a JSON patch that also replaces
    resourceVersion, so that a concurrent write makes it fail with 409 (and kubectl retries)."""
    kubectl("apply", "-f", write(workdir, "g.yaml", deployment("guard")))
    live = kubectl.get("deployment", "guard", managed_fields=True)
    rv = live["metadata"]["resourceVersion"]
    entries = copy.deepcopy(live["metadata"]["managedFields"])
    for entry in entries:
        entry["manager"], entry["operation"] = "kubectl", "Apply"
    path = kubectl.path("apps/v1", "deployments", "guard")
    headers = {"Content-Type": "application/json-patch+json"}

    def migrate(version: str) -> tuple[int, dict[str, Any]]:
        patch = [
            {"op": "replace", "path": "/metadata/managedFields", "value": entries},
            {"op": "replace", "path": "/metadata/resourceVersion", "value": version},
        ]
        code, _, body = kubectl.server.request(
            "PATCH", path + "?fieldManager=kubectl", orjson.dumps(patch), headers=headers
        )
        return code, orjson.loads(body)

    code, status = migrate(str(int(rv) - 1))
    assert (code, status["reason"]) == (409, "Conflict")
    assert "the object has been modified" in status["message"]
    assert kubectl.get("deployment", "guard", managed_fields=True) == live

    code, updated = migrate(rv)
    assert code == 200
    assert {(m["manager"], m["operation"]) for m in updated["metadata"]["managedFields"]} == {
        ("kubectl", "Apply")
    }
    assert updated["spec"] == live["spec"]


def test_server_side_apply_creates_configmap(kubectl: Kubectl, workdir: Path) -> None:
    cm: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "ssa"},
        "data": {"a": "1", "b": "2"},
    }
    path = write(workdir, "ssa.yaml", cm)
    assert kubectl("apply", "--server-side", "-f", path).stdout.strip() == (
        "configmap/ssa serverside-applied"
    )
    stored = kubectl.get("configmap", "ssa", managed_fields=True)
    assert stored["data"] == {"a": "1", "b": "2"}
    assert managers(stored) == {("kubectl", "Apply"): {"f:data": {"f:a": {}, "f:b": {}}}}
    assert LAST_APPLIED not in stored["metadata"].get("annotations", {})
    del cm["data"]["b"]
    kubectl("apply", "--server-side", "-f", write(workdir, "ssa.yaml", cm))
    assert kubectl.get("configmap", "ssa")["data"] == {"a": "1"}

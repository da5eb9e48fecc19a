"""`kubectl diff` and `--dry-run=server`: the server answers with the would-be object and
stores nothing."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.e2e.kubectl_runner import Kubectl

pytestmark = pytest.mark.e2e


def deployment(replicas: int, image: str = "nginx:1.27") -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "labels": {"app": "web"}},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "nginx", "image": image}]},
            },
        },
    }


def write(workdir: Path, obj: dict[str, Any]) -> str:
    path = workdir / f"{obj['metadata']['name']}.yaml"
    path.write_text(yaml.safe_dump(obj))
    return str(path)


def changed_lines(diff: str) -> list[str]:
    return [
        line
        for line in diff.splitlines()
        if line[:1] in "+-" and not line.startswith(("+++", "---"))
    ]


@pytest.mark.parametrize("server_side", [False, True], ids=["client-side", "server-side"])
def test_diff(kubectl: Kubectl, workdir: Path, server_side: bool) -> None:
    flags = ["--server-side"] if server_side else []
    path = write(workdir, deployment(2))
    kubectl("apply", *flags, "-f", path)
    # Conditions from long ago, so that a rewritten transition time would show in the diff.
    conditions = kubectl.get("deployment", "web")["status"]["conditions"]
    for condition in conditions:
        condition["lastTransitionTime"] = condition["lastUpdateTime"] = "2020-01-01T00:00:00Z"
    status_patch = json.dumps({"status": {"conditions": conditions}})
    kubectl(
        "patch", "deployment", "web", "--subresource=status", "--type=merge", "-p", status_patch
    )
    before = kubectl.get("deployment", "web", managed_fields=True)

    same = kubectl("diff", *flags, "-f", path)
    assert (same.returncode, same.stdout) == (0, "")

    changed = write(workdir, deployment(3, "nginx:1.28"))
    result = kubectl("diff", *flags, "-f", changed, check=False)
    assert result.returncode == 1, result.stderr
    lines = changed_lines(result.stdout)
    assert "-  replicas: 2" in lines and "+  replicas: 3" in lines
    assert "-      - image: nginx:1.27" in lines and "+      - image: nginx:1.28" in lines
    assert "-  generation: 1" in lines and "+  generation: 2" in lines
    assert not any("managedFields" in line for line in lines)
    # Conditions whose status stays the same keep their transition times.
    assert not any("lastTransitionTime" in line for line in lines)
    # A dry run: nothing stored.
    assert kubectl.get("deployment", "web", managed_fields=True) == before


def test_dry_run_create(kubectl: Kubectl, workdir: Path) -> None:
    out = kubectl(
        "create", "configmap", "cm", "--from-literal=a=1", "--dry-run=server", "-o", "json"
    ).stdout
    shown = json.loads(out)
    assert shown["data"] == {"a": "1"}
    assert shown["metadata"]["uid"] and shown["metadata"]["creationTimestamp"]
    assert "resourceVersion" not in shown["metadata"]
    missing = kubectl.fails("get", "configmap", "cm")
    assert 'configmaps "cm" not found' in missing.stderr

    applied = kubectl("apply", "-f", write(workdir, deployment(2)), "--dry-run=server")
    assert applied.stdout.strip() == "deployment.apps/web created (server dry run)"
    assert 'deployments.apps "web" not found' in kubectl.fails("get", "deploy", "web").stderr


def test_dry_run_apply_patch_scale(kubectl: Kubectl, workdir: Path) -> None:
    kubectl("apply", "-f", write(workdir, deployment(2)))
    before = kubectl.get("deployment", "web", managed_fields=True)

    out = kubectl(
        "apply", "-f", write(workdir, deployment(4)), "--dry-run=server", "-o", "json"
    ).stdout
    would_be = json.loads(out)
    assert would_be["spec"]["replicas"] == 4
    assert would_be["metadata"]["generation"] == 2

    out = kubectl(
        "apply",
        "--server-side",
        "-f",
        str(workdir / "web.yaml"),
        "--dry-run=server",
        "-o",
        "json",
    ).stdout
    assert json.loads(out)["spec"]["replicas"] == 4

    out = kubectl(
        "patch",
        "deployment",
        "web",
        "-p",
        '{"spec":{"replicas":7}}',
        "--dry-run=server",
        "-o",
        "json",
    ).stdout
    assert json.loads(out)["spec"]["replicas"] == 7

    out = kubectl("scale", "deployment", "web", "--replicas=9", "--dry-run=server").stdout
    assert out.strip() == "deployment.apps/web scaled (server dry run)"

    out = kubectl("label", "deployment", "web", "x=y", "--dry-run=server").stdout
    assert out.strip() == "deployment.apps/web labeled (server dry run)"

    assert kubectl.get("deployment", "web", managed_fields=True) == before


def test_dry_run_delete(kubectl: Kubectl) -> None:
    kubectl("create", "configmap", "cm", "--from-literal=a=1")
    before = kubectl.get("configmap", "cm")
    out = kubectl("delete", "configmap", "cm", "--dry-run=server").stdout
    assert out.strip() == 'configmap "cm" deleted (server dry run)'
    assert kubectl.get("configmap", "cm") == before

    # An object held by a finalizer: a dry-run delete does not mark it for deletion either.
    kubectl(
        "patch",
        "configmap",
        "cm",
        "--type=merge",
        "-p",
        '{"metadata":{"finalizers":["example.com/hold"]}}',
    )
    held = kubectl.get("configmap", "cm")
    kubectl("delete", "configmap", "cm", "--dry-run=server", "--wait=false")
    assert kubectl.get("configmap", "cm") == held

    # -l selects, then deletes one by one, each as a dry run.
    kubectl("create", "configmap", "other", "--from-literal=b=2")
    kubectl("label", "configmap", "other", "tier=x")
    out = kubectl("delete", "configmap", "-l", "tier=x", "--dry-run=server").stdout
    assert out.strip() == 'configmap "other" deleted (server dry run)'
    assert kubectl.get("configmap", "other")["metadata"]["labels"] == {"tier": "x"}

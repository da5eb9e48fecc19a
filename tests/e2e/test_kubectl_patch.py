"""`kubectl patch`, `edit`, `set image`, `rollout restart`, `label` and `annotate`.

Each scenario checks what kubectl prints and what the server stored.
"""

from __future__ import annotations

import datetime
import sys
from pathlib import Path

import orjson
import pytest
import yaml

from tests.e2e.kubectl_runner import Kubectl, container, container_names, env_of

pytestmark = pytest.mark.e2e

DEPLOYMENT = {
    "apiVersion": "apps/v1",
    "kind": "Deployment",
    "metadata": {"name": "web", "labels": {"app": "web"}},
    "spec": {
        "replicas": 2,
        "selector": {"matchLabels": {"app": "web"}},
        "template": {
            "metadata": {"labels": {"app": "web"}},
            "spec": {
                "containers": [
                    {
                        "name": "nginx",
                        "image": "nginx:1.27",
                        "env": [{"name": "MODE", "value": "dev"}, {"name": "LEVEL", "value": "1"}],
                        "ports": [{"containerPort": 80}],
                    },
                    {"name": "sidecar", "image": "busybox:1.36"},
                ]
            },
        },
    },
}


def create_web(k: Kubectl) -> dict[str, object]:
    k("create", "-f", "-", input=yaml.safe_dump(DEPLOYMENT))
    return k.get("deployment", "web")


def test_patch_types(any_kubectl: Kubectl) -> None:
    k = any_kubectl
    create_web(k)

    # strategic (the default): containers merge by name, the sidecar stays.
    out = k(
        "patch",
        "deployment",
        "web",
        "-p",
        '{"spec":{"template":{"spec":{"containers":[{"name":"nginx","image":"nginx:1.28"}]}}}}',
    ).stdout
    assert out.strip() == "deployment.apps/web patched"
    stored = k.get("deployment", "web")
    assert container_names(stored) == ["nginx", "sidecar"]
    assert container(stored, "nginx")["image"] == "nginx:1.28"
    assert env_of(stored, "nginx") == [("MODE", "dev"), ("LEVEL", "1")]
    assert stored["metadata"]["generation"] == 2

    # json: RFC 6902 operations.
    out = k(
        "patch",
        "deployment",
        "web",
        "--type=json",
        "-p",
        '[{"op":"replace","path":"/spec/replicas","value":4},'
        '{"op":"add","path":"/metadata/labels/team","value":"blue"}]',
    ).stdout
    assert out.strip() == "deployment.apps/web patched"
    stored = k.get("deployment", "web")
    assert stored["spec"]["replicas"] == 4
    assert stored["metadata"]["labels"] == {"app": "web", "team": "blue"}

    # A failing `test` operation: 422 Invalid, nothing written.
    rv = stored["metadata"]["resourceVersion"]
    failed = k.fails(
        "patch",
        "deployment",
        "web",
        "--type=json",
        "-p",
        '[{"op":"test","path":"/spec/replicas","value":7},'
        '{"op":"replace","path":"/spec/replicas","value":9}]',
        "-v=6",
    )
    assert "422 Unprocessable Entity" in failed.stderr
    assert (
        "The request is invalid: the server rejected our request due to an error in our request"
        in failed.stderr
    )
    after = k.get("deployment", "web")
    assert after["metadata"]["resourceVersion"] == rv
    assert after["spec"]["replicas"] == 4

    # merge: RFC 7386 replaces lists, so the sidecar goes.
    out = k(
        "patch",
        "deployment",
        "web",
        "--type=merge",
        "-p",
        '{"spec":{"template":{"spec":{"containers":[{"name":"nginx","image":"nginx:1.29"}]}}}}',
    ).stdout
    assert out.strip() == "deployment.apps/web patched"
    stored = k.get("deployment", "web")
    assert container_names(stored) == ["nginx"]
    assert container(stored, "nginx")["image"] == "nginx:1.29"
    assert "env" not in container(stored, "nginx")

    # A patch that changes nothing writes nothing.
    rv = stored["metadata"]["resourceVersion"]
    out = k("patch", "deployment", "web", "--type=merge", "-p", '{"spec":{"replicas":4}}').stdout
    assert out.strip() == "deployment.apps/web patched (no change)"
    assert k.resource_version("deployment", "web") == rv


def test_failed_json_patch_status(kubectl: Kubectl) -> None:
    """The 422 of a failed `test` as client libraries (kopf) see it."""
    kubectl("create", "configmap", "cm", "--from-literal=a=1")
    before = kubectl.get("configmap", "cm")
    patch = b'[{"op":"test","path":"/data/a","value":"2"},{"op":"remove","path":"/data/a"}]'
    code, _, body = kubectl.server.request(
        "PATCH",
        kubectl.path("v1", "configmaps", "cm"),
        patch,
        headers={"Content-Type": "application/json-patch+json"},
    )
    status = orjson.loads(body)
    assert (code, status["code"], status["reason"]) == (422, 422, "Invalid")
    assert status["message"].startswith(
        "the server rejected our request due to an error in our request"
    )
    assert kubectl.get("configmap", "cm") == before


def test_strategic_delete_directive(kubectl: Kubectl) -> None:
    create_web(kubectl)
    out = kubectl(
        "patch",
        "deployment",
        "web",
        "-p",
        '{"spec":{"template":{"spec":{"containers":[{"$patch":"delete","name":"sidecar"}]}}}}',
    ).stdout
    assert out.strip() == "deployment.apps/web patched"
    stored = kubectl.get("deployment", "web")
    assert container_names(stored) == ["nginx"]
    assert "$patch" not in orjson.dumps(stored).decode()

    # The same directive on an env item, and a new item merged by its key.
    kubectl(
        "patch",
        "deployment",
        "web",
        "-p",
        '{"spec":{"template":{"spec":{"containers":[{"name":"nginx","env":['
        '{"$patch":"delete","name":"MODE"},{"name":"NEW","value":"n"}]}]}}}}',
    )
    # Upstream's mergeSortedSlice puts an item the server did not have before server-only items.
    assert env_of(kubectl.get("deployment", "web"), "nginx") == [("NEW", "n"), ("LEVEL", "1")]


def test_strategic_patch_configmap(kubectl: Kubectl) -> None:
    kubectl("create", "configmap", "cm", "--from-literal=a=1", "--from-literal=b=2")
    out = kubectl("patch", "configmap", "cm", "-p", '{"data":{"a":null,"c":"3"}}').stdout
    assert out.strip() == "configmap/cm patched"
    assert kubectl.get("configmap", "cm")["data"] == {"b": "2", "c": "3"}
    # ConfigMaps have no patch strategies: $patch: replace swaps the whole map.
    kubectl("patch", "configmap", "cm", "-p", '{"data":{"$patch":"replace","z":"26"}}')
    assert kubectl.get("configmap", "cm")["data"] == {"z": "26"}


EDITOR = """
import sys, yaml
path = sys.argv[1]
with open(path) as f:
    obj = yaml.safe_load(f)
obj["spec"]["replicas"] = 5
for item in obj["spec"]["template"]["spec"]["containers"][0]["env"]:
    if item["name"] == "LEVEL":
        item["value"] = "debug"
with open(path, "w") as f:
    yaml.safe_dump(obj, f)
"""


def test_edit(any_kubectl: Kubectl, workdir: Path) -> None:
    k = any_kubectl
    before = create_web(k)
    script = workdir / "editor.py"
    script.write_text(EDITOR)
    edited = k("edit", "deployment", "web", env={"KUBE_EDITOR": f"{sys.executable} {script}"})
    assert edited.stdout.strip() == "deployment.apps/web edited"
    stored = k.get("deployment", "web")
    assert stored["spec"]["replicas"] == 5
    assert env_of(stored, "nginx") == [("MODE", "dev"), ("LEVEL", "debug")]
    assert container_names(stored) == ["nginx", "sidecar"]
    assert stored["metadata"]["generation"] == 2
    assert stored["metadata"]["uid"] == before["metadata"]["uid"]
    entries = k.get("deployment", "web", managed_fields=True)["metadata"]["managedFields"]
    assert "kubectl-edit" in {m["manager"] for m in entries}

    # An editor that changes nothing: kubectl sends nothing.
    rv = stored["metadata"]["resourceVersion"]
    untouched = k("edit", "deployment", "web", env={"KUBE_EDITOR": "true"})
    assert "Edit cancelled, no changes made." in untouched.stderr + untouched.stdout
    assert k.resource_version("deployment", "web") == rv


def test_set_image_and_rollout_restart(simulated_kubectl: Kubectl) -> None:
    # Rollouts need something to run the pods: a server acting as a physical cluster.
    kubectl = simulated_kubectl
    create_web(kubectl)
    out = kubectl("set", "image", "deployment/web", "nginx=nginx:1.28").stdout
    assert out.strip() == "deployment.apps/web image updated"
    stored = kubectl.get("deployment", "web")
    assert container(stored, "nginx")["image"] == "nginx:1.28"
    assert container(stored, "sidecar")["image"] == "busybox:1.36"
    assert stored["metadata"]["generation"] == 2

    out = kubectl("rollout", "restart", "deployment/web").stdout
    assert out.strip() == "deployment.apps/web restarted"
    restarted = kubectl.get("deployment", "web")
    stamp = restarted["spec"]["template"]["metadata"]["annotations"][
        "kubectl.kubernetes.io/restartedAt"
    ]
    age = datetime.datetime.now(datetime.UTC) - datetime.datetime.fromisoformat(stamp)
    assert abs(age.total_seconds()) < 300
    assert restarted["metadata"]["generation"] == 3
    kubectl("rollout", "status", "deployment/web", "--timeout=20s")
    assert kubectl.get("deployment", "web")["status"]["observedGeneration"] == 3


def test_label_and_annotate(kubectl: Kubectl) -> None:
    kubectl("create", "configmap", "cm", "--from-literal=a=1")
    assert kubectl("label", "configmap", "cm", "team=a", "env=dev").stdout.strip() == (
        "configmap/cm labeled"
    )
    refused = kubectl.fails("label", "configmap", "cm", "team=b")
    assert "'team' already has a value (a), and --overwrite is false" in refused.stderr
    assert kubectl.get("configmap", "cm")["metadata"]["labels"] == {"team": "a", "env": "dev"}
    kubectl("label", "configmap", "cm", "team=b", "--overwrite")
    assert kubectl("label", "configmap", "cm", "env-").stdout.strip() == "configmap/cm unlabeled"
    assert kubectl.get("configmap", "cm")["metadata"]["labels"] == {"team": "b"}

    assert kubectl("annotate", "configmap", "cm", "note=hello").stdout.strip() == (
        "configmap/cm annotated"
    )
    refused = kubectl.fails("annotate", "configmap", "cm", "note=bye")
    assert "--overwrite is false" in refused.stderr
    kubectl("annotate", "configmap", "cm", "note=bye", "--overwrite")
    stored = kubectl.get("configmap", "cm", managed_fields=True)
    assert stored["metadata"]["annotations"]["note"] == "bye"
    owners = {m["manager"]: m["fieldsV1"] for m in stored["metadata"]["managedFields"]}
    assert owners["kubectl-label"]["f:metadata"]["f:labels"] == {".": {}, "f:team": {}}
    # As on a real cluster: the stored object had no annotations, so the first annotator owns
    # the map itself too (kcp.io/cluster is added on read and never owned).
    assert owners["kubectl-annotate"]["f:metadata"]["f:annotations"] == {".": {}, "f:note": {}}
    kubectl("annotate", "configmap", "cm", "note-")
    stored = kubectl.get("configmap", "cm", managed_fields=True)
    assert "note" not in stored["metadata"].get("annotations", {})
    # The annotate manager owned nothing else, so its entry is gone.
    assert "kubectl-annotate" not in {m["manager"] for m in stored["metadata"]["managedFields"]}

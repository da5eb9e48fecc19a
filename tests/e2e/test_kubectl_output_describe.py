"""`kubectl describe` (with the events a controller would have recorded) and the discovery-driven
commands: `api-resources`, `api-versions`, `version`.

kubectl's describers query events by involvedObject field selectors and, for deployments,
replica sets by the deployment's label selector (kubectl pkg/describe/describe.go). The namespace
and secret describers never query events upstream, so no Events section is expected there.
"""

from __future__ import annotations

import datetime
import json
import re
from typing import Any

import pytest

from tests.e2e.workload_status import report_rolled_out
from tests.server_process import ServerProcess

pytestmark = pytest.mark.e2e


def _ago(**delta: float) -> str:
    then = datetime.datetime.now(datetime.UTC) - datetime.timedelta(**delta)
    return then.strftime("%Y-%m-%dT%H:%M:%SZ")


def _apply(server: ServerProcess, cluster: str, *items: dict[str, Any]) -> None:
    manifest = json.dumps({"apiVersion": "v1", "kind": "List", "items": list(items)})
    server.kubectl("apply", "-f", "-", cluster=cluster, input=manifest)


def _json(server: ServerProcess, cluster: str, *ref: str) -> dict[str, Any]:
    obj: dict[str, Any] = json.loads(
        server.kubectl("get", *ref, "-o", "json", cluster=cluster).stdout
    )
    return obj


def _event(
    name: str, involved: dict[str, Any], reason: str, message: str, source: str, *, count: int = 1
) -> dict[str, Any]:
    """A core/v1 Event as a controller records it about `involved` (a stored object)."""
    meta = involved["metadata"]
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": name, "namespace": meta.get("namespace", "default")},
        "involvedObject": {
            "apiVersion": involved["apiVersion"],
            "kind": involved["kind"],
            "name": meta["name"],
            "namespace": meta.get("namespace", ""),
            "uid": meta["uid"],
        },
        "reason": reason,
        "message": message,
        "type": "Normal",
        "source": {"component": source},
        "count": count,
        "firstTimestamp": _ago(hours=2, seconds=5),
        "lastTimestamp": _ago(minutes=12, seconds=5),
    }


def _events_section(described: str) -> list[list[str]]:
    """The rows under `Events:` as cells (kubectl separates them with 2+ spaces)."""
    lines = described.split("Events:", 1)[1].splitlines()
    assert lines[1].split() == ["Type", "Reason", "Age", "From", "Message"]
    assert lines[2].split() == ["----", "------", "----", "----", "-------"]
    return [re.split(r"\s{2,}", line.strip()) for line in lines[3:] if line.strip()]


_REQUEST_LINE = re.compile(
    r"round_trippers\.go:\d+\] (?:GET|POST|PUT|PATCH|DELETE|HEAD) (\S+) (\d{3}) ", re.M
)


def _describe(server: ServerProcess, cluster: str, *ref: str) -> tuple[str, str]:
    result = server.kubectl("describe", *ref, "-v=6", cluster=cluster)
    log = result.stderr
    # Every request kubectl made succeeded, except for kinds this server does not serve.
    # The status is read from the request line itself: the klog header's process ID can
    # look like a status code too.
    requests = [(match.group(1), int(match.group(2))) for match in _REQUEST_LINE.finditer(log)]
    assert requests, log
    failed = [
        (url, status)
        for url, status in requests
        if status >= 400 and not re.search(r"/(resourcequotas|limitranges)\?", url)
    ]
    assert not failed, failed
    return result.stdout, log


DEPLOYMENT = {
    "apiVersion": "apps/v1",
    "kind": "Deployment",
    "metadata": {"name": "web", "namespace": "default", "labels": {"app": "web"}},
    "spec": {
        "replicas": 2,
        "selector": {"matchLabels": {"app": "web"}},
        "template": {
            "metadata": {"labels": {"app": "web"}},
            "spec": {"containers": [{"name": "nginx", "image": "nginx:1.27"}]},
        },
    },
}


def test_describe_deployment_lists_replica_sets_and_events(
    server: ServerProcess, cluster: str
) -> None:
    _apply(
        server,
        cluster,
        DEPLOYMENT,
        {**DEPLOYMENT, "metadata": {**DEPLOYMENT["metadata"], "name": "other"}},
    )
    report_rolled_out(server, cluster, "web", 2)
    web = _json(server, cluster, "deployment", "web")
    other = _json(server, cluster, "deployment", "other")
    template = json.loads(json.dumps(web["spec"]["template"]))
    template["metadata"]["labels"]["pod-template-hash"] = "5d4f"
    replica_set = {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {
            "name": "web-5d4f",
            "namespace": "default",
            "labels": {"app": "web", "pod-template-hash": "5d4f"},
            "annotations": {"deployment.kubernetes.io/revision": "1"},
            "ownerReferences": [
                {
                    "apiVersion": "apps/v1",
                    "kind": "Deployment",
                    "name": "web",
                    "uid": web["metadata"]["uid"],
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
        },
        "spec": {
            "replicas": 2,
            "selector": {"matchLabels": {"app": "web", "pod-template-hash": "5d4f"}},
            "template": template,
        },
    }
    _apply(
        server,
        cluster,
        replica_set,
        _event(
            "web.1",
            web,
            "ScalingReplicaSet",
            "Scaled up replica set web-5d4f to 2",
            "deployment-controller",
            count=3,
        ),
        _event(
            "other.1",
            other,
            "ScalingReplicaSet",
            "Scaled up replica set other-1 to 2",
            "deployment-controller",
        ),
    )
    described, log = _describe(server, cluster, "deployment", "web")
    assert (
        "Replicas:               2 desired | 2 updated | 2 total | 2 available | 0 unavailable"
        in described
    )
    assert "OldReplicaSets:  <none>" in described
    assert "NewReplicaSet:   web-5d4f (0/2 replicas created)" in described
    assert _events_section(described) == [
        [
            "Normal",
            "ScalingReplicaSet",
            "12m (x3 over 120m)",
            "deployment-controller",
            "Scaled up replica set web-5d4f to 2",
        ]
    ]
    assert "labelSelector=app%3Dweb" in log
    assert f"involvedObject.uid%3D{web['metadata']['uid']}" in log
    # The server filtered by involvedObject: the other deployment's event is stored all the same.
    events = _json(server, cluster, "events")
    assert sorted(e["metadata"]["name"] for e in events["items"]) == ["other.1", "web.1"]


def test_describe_configmap_and_pod_show_their_events(server: ServerProcess, cluster: str) -> None:
    _apply(
        server,
        cluster,
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "cfg", "namespace": "default"},
            "data": {"k": "v"},
        },
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "web-0", "namespace": "default", "labels": {"app": "web"}},
            "spec": {"containers": [{"name": "app", "image": "nginx:1.27"}]},
        },
    )
    cfg = _json(server, cluster, "configmap", "cfg")
    pod = _json(server, cluster, "pod", "web-0")
    _apply(
        server,
        cluster,
        _event("cfg.1", cfg, "Synced", "config synced", "syncer"),
        _event(
            "web-0.1",
            pod,
            "Scheduled",
            "Successfully assigned default/web-0 to node-1",
            "default-scheduler",
        ),
    )
    described, _ = _describe(server, cluster, "configmap", "cfg")
    assert re.search(r"^Data\n====\nk:\n----\nv\n", described, re.M), described
    assert _events_section(described) == [["Normal", "Synced", "120m", "syncer", "config synced"]]

    described, _ = _describe(server, cluster, "pod", "web-0")
    assert re.search(r"^Status:\s+Pending$", described, re.M)
    assert re.search(r"^Node:\s+<none>$", described, re.M)
    assert re.search(r"^QoS Class:\s+BestEffort$", described, re.M)
    assert _events_section(described) == [
        [
            "Normal",
            "Scheduled",
            "120m",
            "default-scheduler",
            "Successfully assigned default/web-0 to node-1",
        ]
    ]
    assert pod["status"] == {"phase": "Pending", "qosClass": "BestEffort"}


def test_describe_namespace_and_secret(server: ServerProcess, cluster: str) -> None:
    server.kubectl("create", "namespace", "team", cluster=cluster)
    server.kubectl(
        "create",
        "secret",
        "generic",
        "creds",
        "-n",
        "team",
        "--from-literal=password=abc",
        cluster=cluster,
    )
    described, log = _describe(server, cluster, "namespace", "team")
    assert re.search(r"^Status:\s+Active$", described, re.M)
    assert re.search(r"^Labels:\s+kubernetes.io/metadata.name=team$", described, re.M)
    assert "Events:" not in described and "/events" not in log
    described, _ = _describe(server, cluster, "secret", "creds", "-n", "team")
    assert re.search(r"^Type:\s+Opaque$", described, re.M)
    assert re.search(r"^password:\s+3 bytes$", described, re.M)
    assert _json(server, cluster, "secret", "creds", "-n", "team")["data"] == {"password": "YWJj"}


# -- discovery ------------------------------------------------------------------------------------


def _discovered(server: ServerProcess, cluster: str) -> set[tuple[str, str]]:
    """(groupVersion, resource) of every top-level resource the server's legacy discovery lists."""
    out = set()
    status, _, body = server.request("GET", f"/clusters/{cluster}/apis")
    assert status == 200
    group_versions = ["v1"] + [
        v["groupVersion"] for g in json.loads(body)["groups"] for v in g["versions"]
    ]
    for gv in group_versions:
        path = "/api/v1" if gv == "v1" else f"/apis/{gv}"
        status, _, body = server.request("GET", f"/clusters/{cluster}{path}")
        assert status == 200
        for r in json.loads(body)["resources"]:
            if "/" not in r["name"]:
                out.add((gv, r["name"]))
    return out


def test_api_resources(server: ServerProcess, cluster: str) -> None:
    out = server.kubectl("api-resources", "-o", "wide", cluster=cluster).stdout.splitlines()
    header = re.split(r"\s{2,}", out[0].strip())
    assert header == [
        "NAME",
        "SHORTNAMES",
        "APIVERSION",
        "NAMESPACED",
        "KIND",
        "VERBS",
        "CATEGORIES",
    ]
    starts = [out[0].index(h) for h in header]
    rows = {}
    for line in out[1:]:
        cells = [line[a:b].strip() for a, b in zip(starts, [*starts[1:], None], strict=True)]
        rows[(cells[2], cells[0])] = cells
    assert set(rows) == _discovered(server, cluster)
    crud = "create,delete,deletecollection,get,list,patch,update,watch"
    assert rows[("v1", "pods")] == ["pods", "po", "v1", "true", "Pod", crud, "all"]
    assert rows[("v1", "namespaces")] == [
        "namespaces",
        "ns",
        "v1",
        "false",
        "Namespace",
        "create,delete,get,list,patch,update,watch",
        "",
    ]
    assert rows[("v1", "secrets")] == ["secrets", "", "v1", "true", "Secret", crud, ""]
    assert rows[("apps/v1", "deployments")] == [
        "deployments",
        "deploy",
        "apps/v1",
        "true",
        "Deployment",
        crud,
        "all",
    ]
    assert rows[("apiextensions.k8s.io/v1", "customresourcedefinitions")] == [
        "customresourcedefinitions",
        "crd,crds",
        "apiextensions.k8s.io/v1",
        "false",
        "CustomResourceDefinition",
        crud,
        "api-extensions",
    ]
    assert rows[("authorization.k8s.io/v1", "selfsubjectaccessreviews")] == [
        "selfsubjectaccessreviews",
        "",
        "authorization.k8s.io/v1",
        "false",
        "SelfSubjectAccessReview",
        "create",
        "",
    ]
    assert rows[("authentication.k8s.io/v1", "selfsubjectreviews")][3:6] == [
        "false",
        "SelfSubjectReview",
        "create",
    ]
    assert rows[("events.k8s.io/v1", "events")][:5] == [
        "events",
        "ev",
        "events.k8s.io/v1",
        "true",
        "Event",
    ]

    names = server.kubectl(
        "api-resources", "--namespaced=false", "-o", "name", cluster=cluster
    ).stdout.split()
    assert "namespaces" in names and "clusterroles.rbac.authorization.k8s.io" in names
    assert "configmaps" not in names and "roles.rbac.authorization.k8s.io" not in names
    apps = server.kubectl(
        "api-resources", "--api-group=apps", "-o", "name", cluster=cluster
    ).stdout.split()
    assert apps == [
        "controllerrevisions.apps",
        "daemonsets.apps",
        "deployments.apps",
        "replicasets.apps",
        "statefulsets.apps",
    ]


def test_api_versions_and_version(server: ServerProcess, cluster: str) -> None:
    versions = server.kubectl("api-versions", cluster=cluster).stdout.split()
    assert versions == sorted(versions)
    assert set(versions) == {gv for gv, _ in _discovered(server, cluster)}
    for expected in (
        "v1",
        "apps/v1",
        "batch/v1",
        "authorization.k8s.io/v1",
        "rbac.authorization.k8s.io/v1",
    ):
        assert expected in versions

    result = server.kubectl("version", "-o", "json", cluster=cluster)
    assert result.stderr == ""  # no version-skew warning: the dispatcher ran kubectl 1.32
    version = json.loads(result.stdout)
    assert version["clientVersion"]["minor"].startswith("32")
    server_version = version["serverVersion"]
    assert (server_version["major"], server_version["minor"]) == ("1", "32")
    assert server_version["gitVersion"].startswith("v1.32.")
    assert server_version["platform"] in ("linux/amd64", "linux/arm64")  # GOOS/GOARCH
    plain = server.kubectl("version", cluster=cluster).stdout
    assert f"Server Version: {server_version['gitVersion']}" in plain.splitlines()

"""`kubectl get` prints what it prints against a real 1.32 cluster: columns, cells, wide columns,
namespaces, labels, sorting, categories, watch rows and paging.

Expected headers and cells are those of kube-apiserver's printers (pkg/printers/internalversion
printers.go, 1.32) for the objects below; values the server allocates (cluster IPs, node ports,
creation times, uids) are read back from the stored object.
"""

from __future__ import annotations

import datetime
import json
import re
from typing import Any

import pytest

from tests.e2e.kubectl_output import (
    TABLE_BINARIES,
    StreamedOutput,
    Table,
    parse_table,
    parse_tables,
    require_binary,
)
from tests.e2e.workload_status import report_rolled_out
from tests.server_process import ServerProcess

pytestmark = pytest.mark.e2e

AGE = re.compile(r"^\d+s$")  # objects created by the test are seconds old


def _ago(**delta: float) -> str:
    then = datetime.datetime.now(datetime.UTC) - datetime.timedelta(**delta)
    return then.strftime("%Y-%m-%dT%H:%M:%SZ")


def _objects() -> list[dict[str, Any]]:
    """One object of every served kind, shaped so that every column has something to show."""
    web_template = {
        "metadata": {"labels": {"app": "web"}},
        "spec": {
            "containers": [
                {"name": "app", "image": "nginx:1.27"},
                {"name": "sidecar", "image": "busybox"},
            ]
        },
    }
    rbac = "rbac.authorization.k8s.io"
    ns = {"namespace": "default"}
    return [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team"}},
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "settings", **ns},
            "data": {"a": "1", "b": "2"},
            "binaryData": {"c": "AA=="},
        },
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": "creds", **ns},
            "type": "kubernetes.io/basic-auth",
            "stringData": {"username": "u", "password": "p"},
        },
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "robot", **ns}},
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": "web", **ns},
            "spec": {"selector": {"app": "web"}, "ports": [{"port": 80, "targetPort": 8080}]},
        },
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": "edge", **ns},
            "spec": {
                "type": "NodePort",
                "selector": {"app": "edge"},
                "ports": [
                    {"name": "https", "port": 443},
                    {"name": "dns", "port": 53, "protocol": "UDP"},
                ],
            },
        },
        {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": "web-1.abc", **ns},
            "involvedObject": {
                "kind": "Pod",
                "name": "web-1",
                "namespace": "default",
                "apiVersion": "v1",
                "fieldPath": "spec.containers{app}",
            },
            "reason": "Pulled",
            "message": "Container image already present",
            "type": "Normal",
            "source": {"component": "kubelet", "host": "node-1"},
            "count": 3,
            "firstTimestamp": _ago(days=3, hours=4, seconds=30),
            "lastTimestamp": _ago(hours=5, minutes=30, seconds=10),
        },
        {
            "apiVersion": "events.k8s.io/v1",
            "kind": "Event",
            "metadata": {"name": "sync-1", **ns},
            "eventTime": _ago(minutes=40, seconds=10).replace("Z", ".000000Z"),
            "reportingController": "example.com/ctl",
            "reportingInstance": "ctl-1",
            "action": "Sync",
            "reason": "Synced",
            "note": "all good",
            "type": "Normal",
            "regarding": {"kind": "Pod", "name": "web-1", "namespace": "default"},
        },
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "web-1", "labels": {"app": "web"}, **ns},
            "spec": web_template["spec"],
        },
        {
            "apiVersion": "v1",
            "kind": "Endpoints",
            "metadata": {"name": "web", **ns},
            "subsets": [
                {"addresses": [{"ip": "10.0.0.1"}, {"ip": "10.0.0.2"}], "ports": [{"port": 8080}]}
            ],
        },
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "web", "labels": {"app": "web"}, **ns},
            "spec": {
                "replicas": 3,
                "selector": {"matchLabels": {"app": "web"}},
                "template": web_template,
            },
        },
        {
            "apiVersion": "apps/v1",
            "kind": "ReplicaSet",
            "metadata": {"name": "web-abc", **ns},
            "spec": {
                "replicas": 2,
                "selector": {"matchLabels": {"app": "web", "pod-template-hash": "abc"}},
                "template": {
                    "metadata": {"labels": {"app": "web", "pod-template-hash": "abc"}},
                    "spec": {"containers": [{"name": "app", "image": "nginx:1.27"}]},
                },
            },
        },
        {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {"name": "migrate", **ns},
            "spec": {
                "template": {
                    "spec": {
                        "restartPolicy": "Never",
                        "containers": [{"name": "migrate", "image": "busybox"}],
                    }
                }
            },
        },
        {
            "apiVersion": "networking.k8s.io/v1",
            "kind": "Ingress",
            "metadata": {"name": "web", **ns},
            "spec": {
                "ingressClassName": "nginx",
                "tls": [{"hosts": ["a.example.com"]}],
                "rules": [{"host": "a.example.com"}, {"host": "b.example.com"}],
            },
        },
        {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {"name": "leader", **ns},
            "spec": {"holderIdentity": "node-1"},
        },
        {
            "apiVersion": f"{rbac}/v1",
            "kind": "Role",
            "metadata": {"name": "reader", **ns},
            "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}],
        },
        {
            "apiVersion": f"{rbac}/v1",
            "kind": "RoleBinding",
            "metadata": {"name": "read", **ns},
            "roleRef": {"apiGroup": rbac, "kind": "Role", "name": "reader"},
            "subjects": [
                {"kind": "User", "apiGroup": rbac, "name": "alice"},
                {"kind": "Group", "apiGroup": rbac, "name": "devs"},
                {"kind": "ServiceAccount", "name": "robot", "namespace": "default"},
            ],
        },
        {
            "apiVersion": f"{rbac}/v1",
            "kind": "ClusterRole",
            "metadata": {"name": "viewer"},
            "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["list"]}],
        },
        {
            "apiVersion": f"{rbac}/v1",
            "kind": "ClusterRoleBinding",
            "metadata": {"name": "view"},
            "roleRef": {"apiGroup": rbac, "kind": "ClusterRole", "name": "viewer"},
            "subjects": [{"kind": "User", "apiGroup": rbac, "name": "bob"}],
        },
        {
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition",
            "metadata": {"name": "widgets.example.com"},
            "spec": {
                "group": "example.com",
                "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
                "scope": "Namespaced",
                "versions": [
                    {
                        "name": "v1",
                        "served": True,
                        "storage": True,
                        "schema": {"openAPIV3Schema": {"type": "object"}},
                    }
                ],
            },
        },
    ]


# kubectl get <resource>/<name> for each object above, in the order kubectl prints the tables.
REFS = (
    "namespace/team",
    "configmap/settings",
    "secret/creds",
    "serviceaccount/robot",
    "service/web",
    "service/edge",
    "event/web-1.abc",
    "events.v1.events.k8s.io/sync-1",
    "pod/web-1",
    "endpoints/web",
    "deployment/web",
    "replicaset/web-abc",
    "job/migrate",
    "ingress/web",
    "lease/leader",
    "role/reader",
    "rolebinding/read",
    "clusterrole/viewer",
    "clusterrolebinding/view",
    "customresourcedefinition/widgets.example.com",
)


def _stored(server: ServerProcess, cluster: str, path: str) -> dict[str, Any]:
    status, _, body = server.request("GET", f"/clusters/{cluster}{path}")
    assert status == 200, body
    obj: dict[str, Any] = json.loads(body)
    return obj


def _cells(text: str) -> list[str]:
    return text.split("|")


def _expected(server: ServerProcess, cluster: str) -> list[tuple[list[str], list[list[str]]]]:
    """(wide header, wide cells of each row) per table; `AGE` stands for a seconds-old age.

    Headers and cells are written "|"-separated, as kubectl's columns may hold spaces.
    """
    web = _stored(server, cluster, "/api/v1/namespaces/default/services/web")
    edge = _stored(server, cluster, "/api/v1/namespaces/default/services/edge")
    https, dns = (p["nodePort"] for p in edge["spec"]["ports"])
    job = _stored(server, cluster, "/apis/batch/v1/namespaces/default/jobs/migrate")
    job_selector = job["spec"]["selector"]["matchLabels"]
    assert list(job_selector) == ["batch.kubernetes.io/controller-uid"]
    job_selector_text = ",".join(f"{k}={v}" for k, v in job_selector.items())
    rbac = "/apis/rbac.authorization.k8s.io/v1"
    role = _stored(server, cluster, f"{rbac}/namespaces/default/roles/reader")
    cluster_role = _stored(server, cluster, f"{rbac}/clusterroles/viewer")
    crd = _stored(
        server,
        cluster,
        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.example.com",
    )
    created = {
        kind: obj["metadata"]["creationTimestamp"]
        for kind, obj in (("role", role), ("clusterrole", cluster_role), ("crd", crd))
    }
    workload = "|CONTAINERS|IMAGES|SELECTOR"
    binding = "NAME|ROLE|AGE|USERS|GROUPS|SERVICEACCOUNTS"
    event = "LAST SEEN|TYPE|REASON|OBJECT|SUBOBJECT|SOURCE|MESSAGE|FIRST SEEN|COUNT|NAME"
    tables: list[tuple[str, list[str]]] = [
        ("NAME|STATUS|AGE", ["namespace/team|Active|AGE"]),
        ("NAME|DATA|AGE", ["configmap/settings|3|AGE"]),
        ("NAME|TYPE|DATA|AGE", ["secret/creds|kubernetes.io/basic-auth|2|AGE"]),
        ("NAME|SECRETS|AGE", ["serviceaccount/robot|0|AGE"]),
        (
            "NAME|TYPE|CLUSTER-IP|EXTERNAL-IP|PORT(S)|AGE|SELECTOR",
            [
                f"service/web|ClusterIP|{web['spec']['clusterIP']}|<none>|80/TCP|AGE|app=web",
                f"service/edge|NodePort|{edge['spec']['clusterIP']}|<none>|"
                f"443:{https}/TCP,53:{dns}/UDP|AGE|app=edge",
            ],
        ),
        (
            event,
            [
                "5h30m|Normal|Pulled|pod/web-1|spec.containers{app}|kubelet, node-1|"
                "Container image already present|3d4h|3|event/web-1.abc"
            ],
        ),
        (
            event,
            # A singleton event of the new API: seen once, at its eventTime.
            [
                "40m|Normal|Synced|pod/web-1||example.com/ctl, ctl-1|all good|40m|1|"
                "event.events.k8s.io/sync-1"
            ],
        ),
        (
            "NAME|READY|STATUS|RESTARTS|AGE|IP|NODE|NOMINATED NODE|READINESS GATES",
            ["pod/web-1|0/2|Pending|0|AGE|<none>|<none>|<none>|<none>"],
        ),
        ("NAME|ENDPOINTS|AGE", ["endpoints/web|10.0.0.1:8080,10.0.0.2:8080|AGE"]),
        (
            "NAME|READY|UP-TO-DATE|AVAILABLE|AGE" + workload,
            ["deployment.apps/web|3/3|3|3|AGE|app,sidecar|nginx:1.27,busybox|app=web"],
        ),
        (
            "NAME|DESIRED|CURRENT|READY|AGE" + workload,
            ["replicaset.apps/web-abc|2|0|0|AGE|app|nginx:1.27|app=web,pod-template-hash=abc"],
        ),
        (
            "NAME|STATUS|COMPLETIONS|DURATION|AGE" + workload,
            [f"job.batch/migrate|Running|0/1||AGE|migrate|busybox|{job_selector_text}"],
        ),
        (
            "NAME|CLASS|HOSTS|ADDRESS|PORTS|AGE",
            ["ingress.networking.k8s.io/web|nginx|a.example.com,b.example.com||80, 443|AGE"],
        ),
        ("NAME|HOLDER|AGE", ["lease.coordination.k8s.io/leader|node-1|AGE"]),
        ("NAME|CREATED AT", [f"role.rbac.authorization.k8s.io/reader|{created['role']}"]),
        (
            binding,
            ["rolebinding.rbac.authorization.k8s.io/read|Role/reader|AGE|alice|devs|default/robot"],
        ),
        (
            "NAME|CREATED AT",
            [f"clusterrole.rbac.authorization.k8s.io/viewer|{created['clusterrole']}"],
        ),
        (
            binding,
            ["clusterrolebinding.rbac.authorization.k8s.io/view|ClusterRole/viewer|AGE|bob||"],
        ),
        (
            "NAME|CREATED AT",
            [f"customresourcedefinition.apiextensions.k8s.io/widgets.example.com|{created['crd']}"],
        ),
    ]
    return [(_cells(header), [_cells(r) for r in rows]) for header, rows in tables]


# Wide-only (priority 1) columns per table, which plain `kubectl get` must hide.
_WIDE_ONLY = {
    "SELECTOR",
    "SUBOBJECT",
    "SOURCE",
    "FIRST SEEN",
    "COUNT",
    "IP",
    "NODE",
    "NOMINATED NODE",
    "READINESS GATES",
    "CONTAINERS",
    "IMAGES",
    "USERS",
    "GROUPS",
    "SERVICEACCOUNTS",
}


def _check_table(table: Table, header: list[str], rows: list[list[str]]) -> None:
    assert table.header == header
    assert len(table.rows) == len(rows), table.rows
    for row, cells in zip(table.rows, rows, strict=True):
        for name, want in zip(header, cells, strict=True):
            got = row[name]
            if want == "AGE":
                assert AGE.match(got), f"{name}: {got!r}"
            else:
                assert got == want, f"{header[0]} {name}: {got!r} != {want!r}"


@pytest.mark.parametrize("binary", TABLE_BINARIES)
def test_every_served_kind_prints_upstream_columns(
    server: ServerProcess, cluster: str, binary: str
) -> None:
    kubectl = require_binary(binary)
    manifest = json.dumps({"apiVersion": "v1", "kind": "List", "items": _objects()})
    server.kubectl("create", "-f", "-", cluster=cluster, binary=kubectl, input=manifest)
    report_rolled_out(server, cluster, "web", 3)
    expected = _expected(server, cluster)

    wide = parse_tables(server.kubectl("get", *REFS, "-o", "wide", cluster=cluster).stdout)
    assert len(wide) == len(expected)
    for table, (header, rows) in zip(wide, expected, strict=True):
        _check_table(table, header, rows)

    plain = parse_tables(server.kubectl("get", *REFS, cluster=cluster, binary=kubectl).stdout)
    assert len(plain) == len(expected)
    for table, (header, rows) in zip(plain, expected, strict=True):
        # Events name their object in OBJECT; NAME is a wide column there.
        hidden = _WIDE_ONLY | ({"NAME"} if header[0] == "LAST SEEN" else set())
        shown = [i for i, h in enumerate(header) if h not in hidden]
        _check_table(
            table, [header[i] for i in shown], [[cells[i] for i in shown] for cells in rows]
        )

    # The pod is stored, not run: it stays Pending with no IP or node.
    pod = _stored(server, cluster, "/api/v1/namespaces/default/pods/web-1")
    assert pod["status"]["phase"] == "Pending"
    assert "podIP" not in pod["status"] and "nodeName" not in pod["spec"]


@pytest.mark.parametrize("binary", TABLE_BINARIES)
def test_namespaces_labels_and_sorting(server: ServerProcess, cluster: str, binary: str) -> None:
    kubectl = require_binary(binary)
    items = [
        # name, namespace, replicas, labels: names and replicas sort differently.
        ("beta", "default", 1, {"app": "web", "tier": "front"}),
        ("gamma", "default", 3, {"app": "api"}),
        ("alpha", "other", 2, {}),
    ]
    objects: list[dict[str, Any]] = [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "other"}}
    ]
    for name, namespace, replicas, labels in items:
        objects.append(
            {
                "apiVersion": "apps/v1",
                "kind": "Deployment",
                "metadata": {"name": name, "namespace": namespace, "labels": labels},
                "spec": {
                    "replicas": replicas,
                    "selector": {"matchLabels": {"run": name}},
                    "template": {
                        "metadata": {"labels": {"run": name}},
                        "spec": {"containers": [{"name": "c", "image": "nginx"}]},
                    },
                },
            }
        )
    manifest = {"apiVersion": "v1", "kind": "List", "items": objects}
    server.kubectl("create", "-f", "-", cluster=cluster, input=json.dumps(manifest))
    for name, namespace, replicas, _ in items:
        report_rolled_out(server, cluster, name, replicas, namespace)

    def get(*args: str) -> Table:
        return parse_table(
            server.kubectl("get", "deployments", *args, cluster=cluster, binary=kubectl).stdout
        )

    every = get("-A")
    assert every.header == ["NAMESPACE", "NAME", "READY", "UP-TO-DATE", "AVAILABLE", "AGE"]
    assert [(r["NAMESPACE"], r["NAME"]) for r in every.rows] == [
        ("default", "beta"),
        ("default", "gamma"),
        ("other", "alpha"),
    ]
    assert every.row("NAME", "alpha")["READY"] == "2/2"

    labelled = get("--show-labels")
    assert labelled.header[-1] == "LABELS"
    assert labelled.row("NAME", "beta")["LABELS"] == "app=web,tier=front"
    assert labelled.row("NAME", "gamma")["LABELS"] == "app=api"

    by_column = get("-L", "app", "-L", "tier")
    assert by_column.header[-2:] == ["APP", "TIER"]
    assert (by_column.row("NAME", "beta")["APP"], by_column.row("NAME", "beta")["TIER"]) == (
        "web",
        "front",
    )
    assert (by_column.row("NAME", "gamma")["APP"], by_column.row("NAME", "gamma")["TIER"]) == (
        "api",
        "",
    )

    assert get("-A", "--sort-by=.metadata.name").column("NAME") == ["alpha", "beta", "gamma"]
    assert get("-A", "--sort-by=.spec.replicas").column("NAME") == ["beta", "alpha", "gamma"]
    stored = _stored(server, cluster, "/apis/apps/v1/deployments")
    replicas = {d["metadata"]["name"]: d["spec"]["replicas"] for d in stored["items"]}
    assert replicas == {"alpha": 2, "beta": 1, "gamma": 3}


def test_get_all_expands_the_all_category(server: ServerProcess, cluster: str) -> None:
    kept = {"Pod", "Service", "Deployment", "ReplicaSet", "Job"}
    manifest = {
        "apiVersion": "v1",
        "kind": "List",
        "items": [o for o in _objects() if o["kind"] in kept | {"ConfigMap", "Secret"}],
    }
    server.kubectl("create", "-f", "-", cluster=cluster, input=json.dumps(manifest))
    tables = parse_tables(server.kubectl("get", "all", cluster=cluster).stdout)
    # Upstream's `all` among the kinds served here: pods, services, deployments, replicasets and
    # jobs, one table each in discovery order; config maps and secrets are not in it.
    assert [t.column("NAME") for t in tables] == [
        ["pod/web-1"],
        ["service/edge", "service/web"],
        ["deployment.apps/web"],
        ["replicaset.apps/web-abc"],
        ["job.batch/migrate"],
    ]
    assert tables[0].header == ["NAME", "READY", "STATUS", "RESTARTS", "AGE"]


@pytest.mark.parametrize("binary", TABLE_BINARIES)
def test_watch_prints_header_once_then_rows(
    server: ServerProcess, cluster: str, binary: str
) -> None:
    kubectl = require_binary(binary)
    server.kubectl("create", "configmap", "first", "--from-literal=a=1", cluster=cluster)
    with StreamedOutput(server, cluster, kubectl, "get", "configmaps", "-w") as watch:
        header = watch.next_line()
        assert header.split() == ["NAME", "DATA", "AGE"]
        assert watch.next_line().split()[:2] == ["first", "1"]
        # Every namespace holds the root CA ConfigMap (root-ca-cert-publisher's).
        assert watch.next_line().split()[:2] == ["kube-root-ca.crt", "1"]
        server.kubectl("create", "configmap", "second", "--from-literal=a=1", cluster=cluster)
        added = watch.next_line().split()
        assert added[:2] == ["second", "1"] and AGE.match(added[2])
        server.kubectl("patch", "configmap", "second", "-p", '{"data":{"b":"2"}}', cluster=cluster)
        modified = watch.next_line().split()
        assert modified[:2] == ["second", "2"]
        err = watch.stop()
    assert err == ""
    assert watch.lines.empty(), "the header must not be repeated"
    second = _stored(server, cluster, "/api/v1/namespaces/default/configmaps/second")
    assert second["data"] == {"a": "1", "b": "2"}


def test_watch_output_watch_events(server: ServerProcess, cluster: str) -> None:
    server.kubectl("create", "configmap", "first", cluster=cluster)
    with StreamedOutput(
        server, cluster, "kubectl", "get", "configmaps", "-w", "--output-watch-events"
    ) as watch:
        assert watch.next_line().split() == ["EVENT", "NAME", "DATA", "AGE"]
        assert watch.next_line().split()[:3] == ["ADDED", "first", "0"]
        assert watch.next_line().split()[:3] == ["ADDED", "kube-root-ca.crt", "1"]
        server.kubectl("label", "configmap", "first", "x=y", cluster=cluster)
        assert watch.next_line().split()[:3] == ["MODIFIED", "first", "0"]
        server.kubectl("delete", "configmap", "first", cluster=cluster)
        assert watch.next_line().split()[:3] == ["DELETED", "first", "0"]


def test_chunked_list_pages_through_continue_tokens(server: ServerProcess, cluster: str) -> None:
    names = ["c3", "c1", "c5", "c2", "c4"]
    for name in names:
        server.kubectl("create", "configmap", name, cluster=cluster)
    result = server.kubectl("get", "configmaps", "--chunk-size=2", "-v=6", cluster=cluster)
    requests = re.findall(r"GET (\S+/configmaps\S*) 200", result.stderr)
    assert len(requests) == 3, result.stderr
    assert all("limit=2" in r for r in requests)
    assert "continue=" not in requests[0]
    assert all("continue=" in r for r in requests[1:])
    table = parse_table(result.stdout)
    assert table.header == ["NAME", "DATA", "AGE"]
    # With the namespace's root CA ConfigMap, which the last page brings.
    assert table.column("NAME") == [*sorted(names), "kube-root-ca.crt"]
    # The same list unpaged, straight from the server.
    listed = _stored(server, cluster, "/api/v1/namespaces/default/configmaps")
    assert [i["metadata"]["name"] for i in listed["items"]] == [*sorted(names), "kube-root-ca.crt"]

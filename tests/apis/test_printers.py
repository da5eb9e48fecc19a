"""Per-kind Table printers against kube-apiserver 1.32.

Most cases are re-expressed from kubernetes/kubernetes pkg/printers/internalversion/printers_test.go
(internal-type fixtures written as the v1 JSON the server stores). The server always prints wide,
so every expected row includes the priority > 0 cells.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from minikcp.apis import printers
from minikcp.apis.catalog import upstream_definitions
from minikcp.apis.printer_docs import FIELD_DOCS

NOW = 1_700_000_000.0


def ago(seconds: float) -> str:
    return datetime.fromtimestamp(NOW - seconds, UTC).isoformat().replace("+00:00", "Z")


def cells(group: str, kind: str, obj: dict[str, Any]) -> list[Any]:
    return printers.printer_for(group, kind).cells(obj, NOW)


def headers(group: str, kind: str) -> list[tuple[str, int]]:
    return [(c.name, c.priority) for c in printers.printer_for(group, kind).columns]


@pytest.mark.parametrize(
    ("group", "kind", "expected"),
    [
        (
            "",
            "Pod",
            [
                ("Name", 0),
                ("Ready", 0),
                ("Status", 0),
                ("Restarts", 0),
                ("Age", 0),
                ("IP", 1),
                ("Node", 1),
                ("Nominated Node", 1),
                ("Readiness Gates", 1),
            ],
        ),
        (
            "apps",
            "Deployment",
            [
                ("Name", 0),
                ("Ready", 0),
                ("Up-to-date", 0),
                ("Available", 0),
                ("Age", 0),
                ("Containers", 1),
                ("Images", 1),
                ("Selector", 1),
            ],
        ),
        (
            "",
            "Service",
            [
                ("Name", 0),
                ("Type", 0),
                ("Cluster-IP", 0),
                ("External-IP", 0),
                ("Port(s)", 0),
                ("Age", 0),
                ("Selector", 1),
            ],
        ),
        (
            "",
            "Event",
            [
                ("Last Seen", 0),
                ("Type", 0),
                ("Reason", 0),
                ("Object", 0),
                ("Subobject", 1),
                ("Source", 1),
                ("Message", 0),
                ("First Seen", 1),
                ("Count", 1),
                ("Name", 1),
            ],
        ),
        (
            "batch",
            "Job",
            [
                ("Name", 0),
                ("Status", 0),
                ("Completions", 0),
                ("Duration", 0),
                ("Age", 0),
                ("Containers", 1),
                ("Images", 1),
                ("Selector", 1),
            ],
        ),
        ("", "Namespace", [("Name", 0), ("Status", 0), ("Age", 0)]),
        ("", "Secret", [("Name", 0), ("Type", 0), ("Data", 0), ("Age", 0)]),
        ("", "ConfigMap", [("Name", 0), ("Data", 0), ("Age", 0)]),
        ("", "ServiceAccount", [("Name", 0), ("Secrets", 0), ("Age", 0)]),
        ("", "Endpoints", [("Name", 0), ("Endpoints", 0), ("Age", 0)]),
        (
            "apps",
            "ReplicaSet",
            [
                ("Name", 0),
                ("Desired", 0),
                ("Current", 0),
                ("Ready", 0),
                ("Age", 0),
                ("Containers", 1),
                ("Images", 1),
                ("Selector", 1),
            ],
        ),
        (
            "networking.k8s.io",
            "Ingress",
            [("Name", 0), ("Class", 0), ("Hosts", 0), ("Address", 0), ("Ports", 0), ("Age", 0)],
        ),
        ("coordination.k8s.io", "Lease", [("Name", 0), ("Holder", 0), ("Age", 0)]),
        (
            "rbac.authorization.k8s.io",
            "ClusterRoleBinding",
            [
                ("Name", 0),
                ("Role", 0),
                ("Age", 0),
                ("Users", 1),
                ("Groups", 1),
                ("ServiceAccounts", 1),
            ],
        ),
        ("rbac.authorization.k8s.io", "Role", [("Name", 0), ("Created At", 0)]),
        ("rbac.authorization.k8s.io", "ClusterRole", [("Name", 0), ("Created At", 0)]),
        ("apiextensions.k8s.io", "CustomResourceDefinition", [("Name", 0), ("Created At", 0)]),
    ],
)
def test_columns(group: str, kind: str, expected: list[tuple[str, int]]) -> None:
    assert headers(group, kind) == expected


@pytest.mark.parametrize(
    ("group", "kind", "column", "definition", "field"),
    [
        (
            "apps",
            "DaemonSet",
            "Desired",
            "io.k8s.api.apps.v1.DaemonSetStatus",
            "desiredNumberScheduled",
        ),
        ("batch", "CronJob", "Schedule", "io.k8s.api.batch.v1.CronJobSpec", "schedule"),
        (
            "",
            "PersistentVolumeClaim",
            "Volume",
            "io.k8s.api.core.v1.PersistentVolumeClaimSpec",
            "volumeName",
        ),
    ],
)
def test_column_descriptions_read_from_upstream_schemas_when_asked(
    group: str, kind: str, column: str, definition: str, field: str
) -> None:
    """Descriptions quoting the upstream schemas are read when a table is first built, not at
    import; what the table says is the schema's field description."""
    (found,) = [c for c in printers.printer_for(group, kind).columns if c.name == column]
    described = found.definition()["description"]
    assert described
    assert described == upstream_definitions()[definition]["properties"][field]["description"]


def test_column_definitions_quote_upstream_docs() -> None:
    pod = printers.printer_for("", "Pod").columns
    assert pod[0].definition() == {
        "name": "Name",
        "type": "string",
        "format": "name",
        "description": FIELD_DOCS["meta_v1.ObjectMeta.name"],
        "priority": 0,
    }
    assert FIELD_DOCS["meta_v1.ObjectMeta.name"].startswith(
        "Name must be unique within a namespace."
    )
    assert pod[4].description.startswith("CreationTimestamp is a timestamp representing")
    assert pod[5].description == (
        "podIP address allocated to the pod. Routable at least within the cluster. "
        "Empty if not yet allocated."
    )
    created = printers.DEFAULT.columns[1]
    assert (created.type, created.description) == ("date", pod[4].description)


def test_every_row_has_a_cell_per_column() -> None:
    for (group, kind), printer in printers._PRINTERS.items():
        assert len(printer.cells({}, NOW)) == len(printer.columns), (group, kind)


# --- apps and batch -------------------------------------------------------------------------------

TEMPLATE = {
    "spec": {
        "containers": [
            {"name": "fake-container1", "image": "fake-image1"},
            {"name": "fake-container2", "image": "fake-image2"},
        ]
    }
}


def test_deployment() -> None:
    deployment = {
        "metadata": {"name": "test1", "creationTimestamp": ago(-1.9)},
        "spec": {"replicas": 5, "template": TEMPLATE, "selector": {"matchLabels": {"foo": "bar"}}},
        "status": {
            "replicas": 10,
            "updatedReplicas": 2,
            "availableReplicas": 1,
            "unavailableReplicas": 4,
        },
    }
    assert cells("apps", "Deployment", deployment) == [
        "test1",
        "0/5",
        2,
        1,
        "0s",
        "fake-container1,fake-container2",
        "fake-image1,fake-image2",
        "foo=bar",
    ]


def test_deployment_as_users_see_it() -> None:
    web = {
        "metadata": {"name": "web", "creationTimestamp": ago(3600 + 1800)},
        "spec": {
            "replicas": 3,
            "selector": {
                "matchLabels": {"app": "web"},
                "matchExpressions": [
                    {"key": "tier", "operator": "In", "values": ["front", "edge"]},
                    {"key": "canary", "operator": "DoesNotExist"},
                ],
            },
            "template": {"spec": {"containers": [{"name": "nginx", "image": "nginx:1.27"}]}},
        },
        "status": {"readyReplicas": 2, "updatedReplicas": 3, "availableReplicas": 2},
    }
    assert cells("apps", "Deployment", web) == [
        "web",
        "2/3",
        3,
        2,
        "90m",
        "nginx",
        "nginx:1.27",
        "app=web,!canary,tier in (edge,front)",
    ]
    # spec.replicas defaults to 1; a selector with an impossible operator prints <invalid>
    del web["spec"]["replicas"]
    web["spec"]["selector"] = {"matchExpressions": [{"key": "x", "operator": "Like"}]}
    row = cells("apps", "Deployment", web)
    assert (row[1], row[7]) == ("2/1", "<invalid>")
    web["spec"]["selector"] = {}
    assert cells("apps", "Deployment", web)[7] == ""


def test_replica_set() -> None:
    rs = {
        "metadata": {"name": "web-7d4b9", "creationTimestamp": ago(45)},
        "spec": {"replicas": 3, "template": TEMPLATE, "selector": {"matchLabels": {"app": "web"}}},
        "status": {"replicas": 3, "readyReplicas": 1},
    }
    assert cells("apps", "ReplicaSet", rs) == [
        "web-7d4b9",
        3,
        3,
        1,
        "45s",
        "fake-container1,fake-container2",
        "fake-image1,fake-image2",
        "app=web",
    ]
    assert cells("apps", "ReplicaSet", {"metadata": {"name": "bare"}}) == [
        "bare",
        1,
        0,
        0,
        "<unknown>",
        "",
        "",
        "<none>",
    ]


def job(name: str, **fields: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "creationTimestamp": ago(-1.9), **fields.pop("metadata", {})},
        "spec": fields.pop("spec", {}),
        "status": fields,
    }


@pytest.mark.parametrize(
    ("obj", "expected"),
    [
        (job("job1", spec={"completions": 2}, succeeded=1), ["job1", "Running", "1/2", "", "0s"]),
        (
            job("job2", metadata={"creationTimestamp": ago(3650 * 86400)}),
            ["job2", "Running", "0/1", "", "10y"],
        ),
        (
            job("job3", startTime=ago(-60), completionTime=ago(-31 * 60)),
            ["job3", "Running", "0/1", "30m", "0s"],
        ),
        (job("job4", startTime=ago(20 * 60)), ["job4", "Running", "0/1", "20m", "0s"]),
        (
            job("job5", conditions=[{"type": "Complete", "status": "True"}]),
            ["job5", "Complete", "0/1", "", "0s"],
        ),
        (
            job("job6", conditions=[{"type": "Failed", "status": "True"}]),
            ["job6", "Failed", "0/1", "", "0s"],
        ),
        (
            job("job7", conditions=[{"type": "Suspended", "status": "True"}]),
            ["job7", "Suspended", "0/1", "", "0s"],
        ),
        (
            job("job8", conditions=[{"type": "FailureTarget", "status": "True"}]),
            ["job8", "FailureTarget", "0/1", "", "0s"],
        ),
        (
            job("job9", metadata={"deletionTimestamp": ago(0)}),
            ["job9", "Terminating", "0/1", "", "0s"],
        ),
        (
            job("par", spec={"parallelism": 3}, succeeded=1),
            ["par", "Running", "1/1 of 3", "", "0s"],
        ),
        (
            job("suspended-then-done", conditions=[{"type": "Complete", "status": "False"}]),
            ["suspended-then-done", "Running", "0/1", "", "0s"],
        ),
    ],
)
def test_job(obj: dict[str, Any], expected: list[Any]) -> None:
    assert cells("batch", "Job", obj)[:5] == expected


def test_job_wide() -> None:
    obj = job(
        "job1",
        spec={
            "completions": 2,
            "template": {
                "spec": {
                    "containers": [
                        {"name": "fake-job-container1", "image": "fake-job-image1"},
                        {"name": "fake-job-container2", "image": "fake-job-image2"},
                    ]
                }
            },
            "selector": {"matchLabels": {"job-label": "job-label-value"}},
        },
        succeeded=1,
    )
    assert cells("batch", "Job", obj) == [
        "job1",
        "Running",
        "1/2",
        "",
        "0s",
        "fake-job-container1,fake-job-container2",
        "fake-job-image1,fake-job-image2",
        "job-label=job-label-value",
    ]


# --- Service, Endpoints, Ingress ------------------------------------------------------------------


def service(name: str, **spec: Any) -> dict[str, Any]:
    status = spec.pop("status", {})
    return {"metadata": {"name": name}, "spec": spec, "status": status}


@pytest.mark.parametrize(
    ("obj", "expected"),
    [
        (
            service(
                "service1",
                clusterIPs=["1.2.3.4"],
                type="LoadBalancer",
                ports=[{"port": 80, "protocol": "TCP"}],
                status={"loadBalancer": {"ingress": [{"ip": "2.3.4.5"}, {"ip": "3.4.5.6"}]}},
            ),
            [
                "service1",
                "LoadBalancer",
                "1.2.3.4",
                "2.3.4.5,3.4.5.6",
                "80/TCP",
                "<unknown>",
                "<none>",
            ],
        ),
        (
            service(
                "service2",
                clusterIPs=["1.3.4.5"],
                type="LoadBalancer",
                ports=[
                    {"port": 80, "protocol": "TCP"},
                    {"port": 8090, "protocol": "UDP"},
                    {"port": 8000, "protocol": "TCP"},
                    {"port": 7777, "protocol": "SCTP"},
                ],
            ),
            [
                "service2",
                "LoadBalancer",
                "1.3.4.5",
                "<pending>",
                "80/TCP,8090/UDP,8000/TCP,7777/SCTP",
                "<unknown>",
                "<none>",
            ],
        ),
        # the server prints wide, so long load-balancer lists are not elided
        (
            service(
                "service4",
                clusterIPs=["1.5.6.7"],
                type="LoadBalancer",
                ports=[{"port": 80, "protocol": "TCP"}],
                selector={"foo": "bar"},
                status={
                    "loadBalancer": {
                        "ingress": [
                            {"ip": "2.3.4.5"},
                            {"ip": "3.4.5.6"},
                            {"ip": "5.6.7.8", "hostname": "host5678"},
                        ]
                    }
                },
            ),
            [
                "service4",
                "LoadBalancer",
                "1.5.6.7",
                "2.3.4.5,3.4.5.6,5.6.7.8",
                "80/TCP",
                "<unknown>",
                "foo=bar",
            ],
        ),
        (
            service(
                "lb-with-external",
                clusterIP="10.0.0.9",
                type="LoadBalancer",
                externalIPs=["9.9.9.9"],
                ports=[{"port": 443, "nodePort": 30443, "protocol": "TCP"}],
                status={"loadBalancer": {"ingress": [{"hostname": "lb.example.com"}]}},
            ),
            [
                "lb-with-external",
                "LoadBalancer",
                "10.0.0.9",
                "lb.example.com,9.9.9.9",
                "443:30443/TCP",
                "<unknown>",
                "<none>",
            ],
        ),
        (
            service(
                "web",
                clusterIP="10.96.0.10",
                ports=[{"port": 80}],
                selector={"app": "web", "tier": "front"},
            ),
            [
                "web",
                "ClusterIP",
                "10.96.0.10",
                "<none>",
                "80/TCP",
                "<unknown>",
                "app=web,tier=front",
            ],
        ),
        (
            service(
                "np", type="NodePort", clusterIP="10.0.0.2", ports=[{"port": 80, "nodePort": 30080}]
            ),
            ["np", "NodePort", "10.0.0.2", "<none>", "80:30080/TCP", "<unknown>", "<none>"],
        ),
        (
            service("headless", clusterIP="None"),
            ["headless", "ClusterIP", "None", "<none>", "<none>", "<unknown>", "<none>"],
        ),
        (
            service("ext", type="ExternalName", externalName="db.example.com"),
            ["ext", "ExternalName", "<none>", "db.example.com", "<none>", "<unknown>", "<none>"],
        ),
    ],
)
def test_service(obj: dict[str, Any], expected: list[Any]) -> None:
    assert cells("", "Service", obj) == expected


@pytest.mark.parametrize(
    ("subsets", "expected"),
    [
        (None, "<none>"),
        ([{"addresses": [{"ip": "10.0.0.1"}], "ports": [{"port": 8080}]}], "10.0.0.1:8080"),
        ([{"addresses": [{"ip": "fd00::1"}], "ports": [{"port": 80}]}], "[fd00::1]:80"),
        ([{"addresses": [{"ip": "10.0.0.1"}, {"ip": "10.0.0.2"}]}], "10.0.0.1,10.0.0.2"),
        (
            [
                {
                    "addresses": [{"ip": "1.1.1.1"}, {"ip": "2.2.2.2"}],
                    "ports": [{"port": 80}, {"port": 443}],
                }
            ],
            "1.1.1.1:80,2.2.2.2:80,1.1.1.1:443 + 1 more...",
        ),
        ([{"notReadyAddresses": [{"ip": "1.1.1.1"}], "ports": [{"port": 80}]}], ""),
    ],
)
def test_endpoints(subsets: Any, expected: str) -> None:
    obj = {"metadata": {"name": "web", "creationTimestamp": ago(61)}, "subsets": subsets}
    assert cells("", "Endpoints", obj) == ["web", expected, "61s"]


def test_ingress() -> None:
    ingress = {
        "metadata": {"name": "test1", "creationTimestamp": ago(3650 * 86400)},
        "spec": {
            "ingressClassName": "foo",
            "defaultBackend": {"service": {"name": "default-backend", "port": {"number": 80}}},
        },
        "status": {
            "loadBalancer": {"ingress": [{"ip": "2.3.4.5", "hostname": "localhost.localdomain"}]}
        },
    }
    assert cells("networking.k8s.io", "Ingress", ingress) == [
        "test1",
        "foo",
        "*",
        "2.3.4.5",
        "80",
        "10y",
    ]
    ingress["spec"] = {
        "rules": [{"host": h} for h in ("a.com", "b.com", "", "c.com", "d.com")],
        "tls": [{"hosts": ["a.com"]}],
    }
    assert cells("networking.k8s.io", "Ingress", ingress)[1:5] == [
        "<none>",
        "a.com,b.com,c.com + 2 more...",
        "2.3.4.5",
        "80, 443",
    ]

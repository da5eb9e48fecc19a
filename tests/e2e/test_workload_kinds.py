"""The workload kinds charts ship beside Deployments, through a real server and real kubectl.

A chart-like bundle (tests/e2e/chart_bundle.py) with one object of every kind is applied in two
logical clusters at once; each reads back with upstream's defaults and status, prints upstream's
table columns, explains from upstream's schema, and refuses bad input with upstream's 422s.
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
import yaml

from tests.e2e import chart_bundle
from tests.e2e.kubectl_runner import Kubectl
from tests.server_process import ServerProcess

pytestmark = pytest.mark.e2e

# kubectl's resource name of each kind in the bundle, with the header it prints for `get`.
HEADERS = {
    "statefulsets": ["NAME", "READY", "AGE"],
    "daemonsets": [
        "NAME",
        "DESIRED",
        "CURRENT",
        "READY",
        "UP-TO-DATE",
        "AVAILABLE",
        "NODE SELECTOR",
        "AGE",
    ],
    "controllerrevisions": ["NAME", "CONTROLLER", "REVISION", "AGE"],
    "cronjobs": ["NAME", "SCHEDULE", "TIMEZONE", "SUSPEND", "ACTIVE", "LAST SCHEDULE", "AGE"],
    "persistentvolumeclaims": [
        "NAME",
        "STATUS",
        "VOLUME",
        "CAPACITY",
        "ACCESS MODES",
        "STORAGECLASS",
        "VOLUMEATTRIBUTESCLASS",
        "AGE",
    ],
    "horizontalpodautoscalers": [
        "NAME",
        "REFERENCE",
        "TARGETS",
        "MINPODS",
        "MAXPODS",
        "REPLICAS",
        "AGE",
    ],
    "poddisruptionbudgets": [
        "NAME",
        "MIN AVAILABLE",
        "MAX UNAVAILABLE",
        "ALLOWED DISRUPTIONS",
        "AGE",
    ],
    "networkpolicies": ["NAME", "POD-SELECTOR", "AGE"],
    "ingressclasses": ["NAME", "CONTROLLER", "PARAMETERS", "AGE"],
    "endpointslices": ["NAME", "ADDRESSTYPE", "PORTS", "ENDPOINTS", "AGE"],
    "priorityclasses": ["NAME", "VALUE", "GLOBAL-DEFAULT", "AGE", "PREEMPTIONPOLICY"],
}


def _cells(line: str) -> list[str]:
    """A table line split into its cells (cells are separated by two or more spaces)."""
    return [c for c in re.split(r"\s{2,}", line.strip()) if c]


def _row(kubectl: Kubectl, resource: str) -> tuple[list[str], list[str]]:
    """The header and the one data row of `kubectl get <resource>`."""
    lines = kubectl("get", resource).stdout.splitlines()
    assert len(lines) == 2, lines
    return _cells(lines[0]), _cells(lines[1])


def _bundle(kubectl: Kubectl) -> dict[str, dict[str, Any]]:
    """Every object of the bundle as `kubectl get -o yaml` reads it, by kind."""
    names = ",".join(f"{r}" for r in HEADERS)
    listed = yaml.safe_load(kubectl("get", names, "-o", "yaml").stdout)
    return {item["kind"]: item for item in listed["items"]}


def test_chart_bundle_applies_and_reads_back_in_two_clusters(server: ServerProcess) -> None:
    first, second = Kubectl(server, "tkindsa"), Kubectl(server, "tkindsb")
    manifest = chart_bundle.manifest()
    for kubectl in (first, second):
        out = kubectl("apply", "-f", "-", input=manifest).stdout
        assert out.count(" created") == len(chart_bundle.objects()), out
    objects = _bundle(first)
    assert set(objects) == {o["kind"] for o in chart_bundle.objects()}

    sts = objects["StatefulSet"]
    assert sts["metadata"]["generation"] == 1
    assert sts["spec"]["podManagementPolicy"] == "OrderedReady"
    assert sts["spec"]["updateStrategy"] == {
        "type": "RollingUpdate",
        "rollingUpdate": {"partition": 0},
    }
    assert sts["spec"]["persistentVolumeClaimRetentionPolicy"] == {
        "whenDeleted": "Retain",
        "whenScaled": "Retain",
    }
    assert sts["spec"]["revisionHistoryLimit"] == 10
    claim = sts["spec"]["volumeClaimTemplates"][0]
    assert (claim["apiVersion"], claim["kind"]) == ("v1", "PersistentVolumeClaim")
    assert claim["spec"]["volumeMode"] == "Filesystem"
    assert claim["status"] == {"phase": "Pending"}
    assert sts["spec"]["template"]["spec"]["containers"][0]["imagePullPolicy"] == "IfNotPresent"
    # Nothing runs its pods here (no simulator, no SyncTarget): the status says so.
    (condition,) = sts["status"].pop("conditions")
    assert sts["status"] == {"availableReplicas": 0, "observedGeneration": 1, "replicas": 0}
    assert (condition["type"], condition["status"], condition["reason"]) == (
        "Available",
        "False",
        "Unschedulable",
    )
    assert condition["message"].startswith('no SyncTarget serves namespace "')

    ds = objects["DaemonSet"]
    assert ds["spec"]["updateStrategy"] == {
        "type": "RollingUpdate",
        "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 0},
    }
    assert ds["status"] == {
        "currentNumberScheduled": 0,
        "desiredNumberScheduled": 0,
        "numberMisscheduled": 0,
        "numberReady": 0,
    }
    cj = objects["CronJob"]
    assert {
        k: cj["spec"][k]
        for k in (
            "concurrencyPolicy",
            "suspend",
            "successfulJobsHistoryLimit",
            "failedJobsHistoryLimit",
        )
    } == {
        "concurrencyPolicy": "Allow",
        "suspend": False,
        "successfulJobsHistoryLimit": 3,
        "failedJobsHistoryLimit": 1,
    }
    assert cj["spec"]["jobTemplate"]["spec"]["template"]["spec"]["dnsPolicy"] == "ClusterFirst"
    pvc = objects["PersistentVolumeClaim"]
    assert pvc["spec"]["volumeMode"] == "Filesystem"
    assert pvc["status"] == {"phase": "Pending"}
    hpa = objects["HorizontalPodAutoscaler"]
    assert hpa["status"] == {"desiredReplicas": 0}
    pdb = objects["PodDisruptionBudget"]
    assert pdb["status"]["disruptionsAllowed"] == 0
    netpol = objects["NetworkPolicy"]
    assert netpol["spec"]["policyTypes"] == ["Ingress"]
    assert netpol["spec"]["ingress"][0]["ports"] == [{"port": 5432, "protocol": "TCP"}]
    assert objects["EndpointSlice"]["ports"] == [
        {"name": "postgres", "port": 5432, "protocol": "TCP"}
    ]
    assert objects["PriorityClass"]["preemptionPolicy"] == "PreemptLowerPriority"

    # Re-applying the unchanged bundle changes nothing (kubectl still sends the atomic lists that
    # defaults filled in, as it does against kube-apiserver).
    versions = {k: o["metadata"]["resourceVersion"] for k, o in objects.items()}
    first("apply", "-f", "-", input=manifest)
    again = _bundle(first)
    assert {k: o["metadata"]["resourceVersion"] for k, o in again.items()} == versions

    # The clusters are isolated: deleting in one leaves the other's objects alone.
    first("delete", "-f", "-", input=manifest)
    assert first("get", ",".join(HEADERS), "-o", "name").stdout == ""
    assert len(_bundle(second)) == len(chart_bundle.objects())


def test_tables_show_upstream_columns(kubectl: Kubectl) -> None:
    kubectl("apply", "-f", "-", input=chart_bundle.manifest())
    rows = {resource: _row(kubectl, resource) for resource in HEADERS}
    for resource, header in HEADERS.items():
        assert rows[resource][0] == header, resource
    assert rows["statefulsets"][1][1] == "0/3"
    assert rows["daemonsets"][1][1:7] == ["0", "0", "0", "0", "0", "kubernetes.io/os=linux"]
    assert rows["cronjobs"][1][1:6] == ["*/15 * * * *", "<none>", "False", "0", "<none>"]
    assert rows["persistentvolumeclaims"][1][1:4] == ["Pending", "standard", "<unset>"]
    assert rows["horizontalpodautoscalers"][1][1:6] == [
        "Deployment/shop-web",
        "cpu: <unknown>/70%",
        "2",
        "10",
        "0",
    ]
    assert rows["poddisruptionbudgets"][1][1:4] == ["N/A", "1", "0"]
    assert rows["networkpolicies"][1][1] == (
        "app.kubernetes.io/component=db,app.kubernetes.io/instance=shop"
    )
    assert rows["ingressclasses"][1][1:3] == ["k8s.io/ingress-nginx", "<none>"]
    assert rows["endpointslices"][1][1:4] == ["IPv4", "5432", "10.1.2.3,10.1.2.4"]
    assert rows["priorityclasses"][1][1:3] == ["100000", "false"]
    assert rows["priorityclasses"][1][-1] == "PreemptLowerPriority"
    assert rows["controllerrevisions"][1][1:3] == ["<none>", "1"]

    wide = kubectl("get", "sts", "-o", "wide").stdout.splitlines()
    assert wide[0].split() == ["NAME", "READY", "AGE", "CONTAINERS", "IMAGES"]
    assert wide[1].split()[-2:] == ["db", "postgres:16.4"]
    # `kubectl get all` lists the kinds in the `all` category.
    everything = kubectl("get", "all", "-o", "name").stdout.split()
    for name in (
        "statefulset.apps/shop-db",
        "daemonset.apps/shop-logs",
        "cronjob.batch/shop-report",
        "horizontalpodautoscaler.autoscaling/shop-web",
    ):
        assert name in everything


def test_discovery_short_names_and_explain(kubectl: Kubectl) -> None:
    resources = kubectl("api-resources", "--no-headers").stdout
    for line in (
        "statefulsets sts apps/v1 true StatefulSet",
        "daemonsets ds apps/v1 true DaemonSet",
        "cronjobs cj batch/v1 true CronJob",
        "persistentvolumeclaims pvc v1 true PersistentVolumeClaim",
        "horizontalpodautoscalers hpa autoscaling/v2 true HorizontalPodAutoscaler",
        "poddisruptionbudgets pdb policy/v1 true PodDisruptionBudget",
        "networkpolicies netpol networking.k8s.io/v1 true NetworkPolicy",
        "priorityclasses pc scheduling.k8s.io/v1 false PriorityClass",
        "ingressclasses networking.k8s.io/v1 false IngressClass",
        "endpointslices discovery.k8s.io/v1 true EndpointSlice",
        "controllerrevisions apps/v1 true ControllerRevision",
    ):
        assert line in [" ".join(row.split()) for row in resources.splitlines()], line
    explained = kubectl("explain", "sts.spec.volumeClaimTemplates").stdout
    assert "FIELD: volumeClaimTemplates <[]PersistentVolumeClaim>" in explained
    hpa = kubectl("explain", "hpa.spec.metrics.resource.target").stdout
    assert "averageUtilization\t<integer>" in hpa
    assert "VERSION:    v2" in hpa
    cj = kubectl("explain", "cronjob.spec", "--recursive").stdout
    assert "concurrencyPolicy\t<string>" in cj


def test_scale_and_status_subresources(kubectl: Kubectl) -> None:
    kubectl("apply", "-f", "-", input=chart_bundle.manifest())
    kubectl("scale", "statefulset/shop-db", "--replicas=5")
    scale = json.loads(
        kubectl("get", "--raw", kubectl.path("apps/v1", "statefulsets", "shop-db/scale")).stdout
    )
    assert scale["spec"] == {"replicas": 5}
    assert scale["status"]["selector"] == (
        "app.kubernetes.io/component=db,app.kubernetes.io/instance=shop"
    )
    assert kubectl.get("sts", "shop-db")["metadata"]["generation"] == 2
    # A claim binds through its status: the table then shows the volume's capacity and modes.
    bound = {
        "status": {
            "phase": "Bound",
            "accessModes": ["ReadWriteOnce"],
            "capacity": {"storage": "5Gi"},
        }
    }
    kubectl(
        "patch",
        "pvc",
        "shop-uploads",
        "--subresource=status",
        "--type=merge",
        "-p",
        json.dumps(bound),
    )
    kubectl("patch", "pvc", "shop-uploads", "--type=merge", "-p", '{"spec":{"volumeName":"pv-1"}}')
    _, row = _row(kubectl, "pvc")
    assert row[1:7] == ["Bound", "pv-1", "5Gi", "RWO", "standard", "<unset>"]
    # A spec write does not touch status.
    kubectl("patch", "hpa", "shop-web", "--type=merge", "-p", '{"status":{"desiredReplicas":7}}')
    assert kubectl.get("hpa", "shop-web")["status"] == {"desiredReplicas": 0}


BAD_INPUT = [
    (
        {"kind": "CronJob", "spec": {"schedule": "*/5 * * *"}},
        'spec.schedule: Invalid value: "*/5 * * *": '
        "expected exactly 5 fields, found 4: [*/5 * * *]",
    ),
    (
        {"kind": "CronJob", "spec": {"schedule": "0 0 * * *", "concurrencyPolicy": "Sometimes"}},
        'spec.concurrencyPolicy: Unsupported value: "Sometimes": supported values: "Allow", '
        '"Forbid", "Replace"',
    ),
    (
        {"kind": "StatefulSet", "spec": {"podManagementPolicy": "Random"}},
        "spec.podManagementPolicy: Invalid value: \"Random\": must be 'OrderedReady' or 'Parallel'",
    ),
    (
        {"kind": "StatefulSet", "spec": {"selector": {"matchLabels": {"app": "other"}}}},
        'spec.template.metadata.labels: Invalid value: map[string]string{"app":"bad"}: '
        "`selector` does not match template `labels`",
    ),
    (
        {"kind": "DaemonSet", "spec": {"updateStrategy": {"type": "Sideways"}}},
        'spec.updateStrategy.type: Unsupported value: "Sideways": supported values: "OnDelete", '
        '"RollingUpdate"',
    ),
    (
        {"kind": "PersistentVolumeClaim", "spec": {"accessModes": []}},
        "spec.accessModes: Required value: at least 1 access mode is required",
    ),
    (
        {"kind": "HorizontalPodAutoscaler", "spec": {"minReplicas": 5, "maxReplicas": 2}},
        "spec.maxReplicas: Invalid value: 2: must be greater than or equal to `minReplicas`",
    ),
    (
        {"kind": "PodDisruptionBudget", "spec": {"maxUnavailable": "120%"}},
        'spec.maxUnavailable: Invalid value: "120%": must not be greater than 100%',
    ),
    (
        {"kind": "PriorityClass", "value": 2000000000},
        "value: Forbidden: maximum allowed value of a user defined priority is 1000000000",
    ),
    (
        {"kind": "EndpointSlice", "endpoints": [{"addresses": ["not-an-ip"]}]},
        'endpoints[0].addresses[0]: Invalid value: "not-an-ip": must be a valid IPv4 address',
    ),
    (
        {"kind": "IngressClass", "spec": {"controller": ""}},
        "spec.controller: Required value",
    ),
    (
        {"kind": "NetworkPolicy", "spec": {"policyTypes": ["Sideways"]}},
        'spec.policyTypes[0]: Unsupported value: "Sideways": supported values: "Ingress", "Egress"',
    ),
]


def _bad(change: dict[str, Any]) -> dict[str, Any]:
    """The bundle's object of `change["kind"]` named `bad`, with `change` merged into it."""
    obj = next(o for o in chart_bundle.objects() if o["kind"] == change["kind"])
    obj = json.loads(json.dumps(obj))
    obj["metadata"]["name"] = "bad"
    if obj["kind"] == "StatefulSet" and "selector" in change.get("spec", {}):
        obj["spec"]["template"]["metadata"]["labels"] = {"app": "bad"}
    for key, value in change.items():
        if isinstance(value, dict):
            obj[key].update(value)
        else:
            obj[key] = value
    return obj


@pytest.mark.parametrize(
    ("change", "message"), BAD_INPUT, ids=[c["kind"] + str(i) for i, (c, _) in enumerate(BAD_INPUT)]
)
def test_bad_input_is_422_and_stores_nothing(
    kubectl: Kubectl, change: dict[str, Any], message: str
) -> None:
    obj = _bad(change)
    result = kubectl.fails("apply", "-f", "-", input=json.dumps(obj))
    assert "is invalid" in result.stderr, result.stderr
    assert message in result.stderr, result.stderr
    assert kubectl("get", obj["kind"].lower(), "--ignore-not-found", "-o", "name").stdout == ""


def test_update_rules(kubectl: Kubectl) -> None:
    kubectl("apply", "-f", "-", input=chart_bundle.manifest())
    forbidden = kubectl.fails(
        "patch", "sts", "shop-db", "--type=merge", "-p", '{"spec":{"serviceName":"other"}}'
    )
    assert (
        "spec: Forbidden: updates to statefulset spec for fields other than 'replicas', "
        "'ordinals', 'template', 'updateStrategy', 'persistentVolumeClaimRetentionPolicy' and "
        "'minReadySeconds' are forbidden"
    ) in forbidden.stderr
    kubectl("patch", "sts", "shop-db", "--type=merge", "-p", '{"spec":{"minReadySeconds":5}}')
    claim = kubectl.fails(
        "patch", "pvc", "shop-uploads", "--type=merge", "-p", '{"spec":{"storageClassName":"fast"}}'
    )
    assert "spec: Forbidden: spec is immutable after creation" in claim.stderr
    value = kubectl.fails("patch", "pc", "shop-high", "--type=merge", "-p", '{"value":5}')
    assert "value: Forbidden: may not be changed in an update." in value.stderr
    controller = kubectl.fails(
        "patch",
        "ingressclass",
        "shop-nginx",
        "--type=merge",
        "-p",
        '{"spec":{"controller":"example.com/other"}}',
    )
    assert (
        'spec.controller: Invalid value: "example.com/other": field is immutable'
        in controller.stderr
    )

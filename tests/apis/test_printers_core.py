"""Per-kind Table printers: the rest of core, coordination, RBAC and the default printer.

Cases re-expressed from kubernetes/kubernetes pkg/printers/internalversion/printers_test.go.
"""

from __future__ import annotations

from typing import Any

import pytest

from minikcp.apis import printers
from tests.apis.test_printers import ago, cells

# --- the rest of core -----------------------------------------------------------------------------


def test_namespace_secret_service_account_config_map() -> None:
    fresh = {"name": "x", "creationTimestamp": ago(-1.9)}
    assert cells("", "Namespace", {"metadata": fresh, "status": {"phase": "FooStatus"}}) == [
        "x",
        "FooStatus",
        "0s",
    ]
    assert cells("", "Namespace", {"metadata": {"name": "ns"}}) == ["ns", "Active", "<unknown>"]
    assert cells("", "Namespace", {"metadata": fresh, "status": {"phase": "Terminating"}})[1] == (
        "Terminating"
    )
    token = {
        "metadata": fresh,
        "type": "kubernetes.io/service-account-token",
        "data": {"t": "eA=="},
    }
    assert cells("", "Secret", token) == ["x", "kubernetes.io/service-account-token", 1, "0s"]
    assert cells("", "Secret", {"metadata": fresh}) == ["x", "Opaque", 0, "0s"]
    mixed = {"metadata": fresh, "data": {"a": "", "b": ""}, "stringData": {"b": "", "c": ""}}
    assert cells("", "Secret", mixed)[2] == 3
    assert cells(
        "", "ServiceAccount", {"metadata": fresh, "secrets": [{"name": "s1"}, {"name": "s2"}]}
    ) == [
        "x",
        2,
        "0s",
    ]
    assert cells("", "ServiceAccount", {"metadata": fresh}) == ["x", 0, "0s"]
    cm = {"metadata": fresh, "data": {"a": "1", "b": "2"}, "binaryData": {"c": "AA=="}}
    assert cells("", "ConfigMap", cm) == ["x", 3, "0s"]


def core_event(**fields: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": fields.pop("name", "event1")},
        "involvedObject": {
            "kind": "Deployment",
            "name": "Deployment Name",
            "fieldPath": "spec.containers{foo}",
        },
        "reason": "Event Reason",
        "message": "Message Data",
        "type": "Warning",
        **fields,
    }


DAY = 86400.0


@pytest.mark.parametrize(
    ("obj", "expected"),
    [
        (
            core_event(
                name="event2",
                source={"component": "kubelet", "host": "Node1"},
                firstTimestamp=ago(3 * DAY),
                lastTimestamp=ago(2 * DAY),
                count=6,
            ),
            ["2d", "kubelet, Node1", "3d", 6, "event2"],
        ),
        # without firstTimestamp: eventTime stands in
        (
            core_event(
                name="event3",
                source={"component": "kubelet", "host": "Node1"},
                eventTime=ago(3 * DAY),
                lastTimestamp=ago(3 * DAY),
                count=1,
            ),
            ["3d", "kubelet, Node1", "3d", 1, "event3"],
        ),
        # without lastTimestamp: the first time stands in
        (
            core_event(
                name="event5",
                source={"component": "kubelet", "host": "Node1"},
                eventTime=ago(3 * DAY),
                count=1,
            ),
            ["3d", "kubelet, Node1", "3d", 1, "event5"],
        ),
        # a series carries the last time and the count
        (
            core_event(
                name="event6",
                source={"component": "kubelet", "host": "Node1"},
                series={"count": 2, "lastObservedTime": ago(2 * DAY)},
                eventTime=ago(3 * DAY),
            ),
            ["2d", "kubelet, Node1", "3d", 2, "event6"],
        ),
        # a singleton of the new API has no count: it happened once
        (
            core_event(name="event7", source={"component": "kubelet"}, eventTime=ago(3 * DAY)),
            ["3d", "kubelet", "3d", 1, "event7"],
        ),
        # empty source: reportingComponent and reportingInstance
        (
            core_event(
                name="event8",
                reportingComponent="kubelet",
                reportingInstance="test",
                firstTimestamp=ago(3 * DAY),
                lastTimestamp=ago(2 * DAY),
                count=6,
            ),
            ["2d", "kubelet, test", "3d", 6, "event8"],
        ),
    ],
)
def test_event(obj: dict[str, Any], expected: list[Any]) -> None:
    last, source, first, count, name = expected
    assert cells("", "Event", obj) == [
        last,
        "Warning",
        "Event Reason",
        "deployment/Deployment Name",
        "spec.containers{foo}",
        source,
        "Message Data",
        first,
        count,
        name,
    ]


def test_event_object_cell_and_message() -> None:
    obj = core_event(involvedObject={"kind": "Node"}, message="  padded\n")
    row = cells("", "Event", obj)
    assert (row[3], row[6], row[0]) == ("node", "padded", "<unknown>")


def test_events_k8s_io_event() -> None:
    obj = {
        "apiVersion": "events.k8s.io/v1",
        "kind": "Event",
        "metadata": {"name": "web.17a"},
        "eventTime": ago(3 * DAY),
        "series": {"count": 4, "lastObservedTime": ago(300)},
        "reportingController": "deployment-controller",
        "reportingInstance": "cp-1",
        "action": "Scaling",
        "reason": "ScalingReplicaSet",
        "regarding": {"kind": "Deployment", "name": "web"},
        "note": "Scaled up replica set web-7d4b9 to 3",
        "type": "Normal",
    }
    assert cells("events.k8s.io", "Event", obj) == [
        "5m",
        "Normal",
        "ScalingReplicaSet",
        "deployment/web",
        "",
        "deployment-controller, cp-1",
        "Scaled up replica set web-7d4b9 to 3",
        "3d",
        4,
        "web.17a",
    ]
    legacy = {
        "metadata": {"name": "e"},
        "deprecatedFirstTimestamp": ago(DAY),
        "deprecatedLastTimestamp": ago(60),
        "deprecatedCount": 7,
        "deprecatedSource": {"component": "kubelet", "host": "n1"},
        "regarding": {"kind": "Pod", "name": "p", "fieldPath": "spec.containers{c}"},
    }
    assert cells("events.k8s.io", "Event", legacy) == [
        "60s",
        "",
        "",
        "pod/p",
        "spec.containers{c}",
        "kubelet, n1",
        "",
        "24h",
        7,
        "e",
    ]


# --- coordination, RBAC, default ------------------------------------------------------------------


def test_lease() -> None:
    lease = {
        "metadata": {"name": "kube-scheduler", "creationTimestamp": ago(7200)},
        "spec": {"holderIdentity": "cp-1_3f2a"},
    }
    assert cells("coordination.k8s.io", "Lease", lease) == ["kube-scheduler", "cp-1_3f2a", "120m"]
    assert cells("coordination.k8s.io", "Lease", {"metadata": {"name": "l"}})[1] == ""


@pytest.mark.parametrize("kind", ["RoleBinding", "ClusterRoleBinding"])
def test_bindings(kind: str) -> None:
    binding = {
        "metadata": {"name": "b", "creationTimestamp": ago(10)},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "view"},
        "subjects": [
            {"kind": "User", "name": "alice"},
            {"kind": "Group", "name": "devs"},
            {"kind": "ServiceAccount", "name": "ci", "namespace": "build"},
            {"kind": "User", "name": "bob"},
            {"kind": "Robot", "name": "r2"},
        ],
    }
    assert cells("rbac.authorization.k8s.io", kind, binding) == [
        "b",
        "ClusterRole/view",
        "10s",
        "alice, bob",
        "devs",
        "build/ci",
    ]


def test_default_printer_created_at() -> None:
    role = {"metadata": {"name": "reader", "creationTimestamp": "2024-05-06T07:08:09.5+02:00"}}
    assert cells("rbac.authorization.k8s.io", "Role", role) == ["reader", "2024-05-06T05:08:09Z"]
    assert cells("example.com", "Widget", {"metadata": {"name": "w"}}) == [
        "w",
        "0001-01-01T00:00:00Z",
    ]
    assert printers.printer_for("example.com", "Widget") is printers.DEFAULT


@pytest.mark.parametrize(
    ("created", "expected"),
    [
        ("2023-11-14T22:13:20.123456789Z", "0s"),  # nanoseconds, as some clients send
        ("2023-11-14T23:13:20+01:00", "0s"),
        ("0001-01-01T00:00:00Z", "<unknown>"),  # Go's zero time
        ("2023-11-14", "<unknown>"),
        ("yesterday", "<unknown>"),
        (None, "<unknown>"),
    ],
)
def test_age_of_odd_timestamps(created: Any, expected: str) -> None:
    obj = {"metadata": {"name": "ns", "creationTimestamp": created}}
    assert cells("", "Namespace", obj)[2] == expected

"""Protobuf bodies of the kinds Go controllers write (client-go 1.32+): core/v1 and events/v1
Event, coordination/v1 Lease, core/v1 Endpoints and apps/v1 ReplicaSet.

kubectl never sends these as protobuf, so the bodies are built here by a tiny encoder from field
numbers written out by hand from k8s.io/api generated.proto (release 1.33), not from the decoder's
tables; the expected dicts are what encoding/json prints for the Go objects upstream decodes.
"""

from __future__ import annotations

import pytest

from minikcp.machinery import errors, protobuf

SECONDS = 1_700_000_000  # 2023-11-14T22:13:20Z
WHEN = "2023-11-14T22:13:20Z"
WHEN_MICRO = "2023-11-14T22:13:20.123456Z"


def varint(n: int) -> bytes:
    n &= (1 << 64) - 1
    out = bytearray()
    while n >= 0x80:
        out.append(n & 0x7F | 0x80)
        n >>= 7
    return bytes([*out, n])


def ld(number: int, payload: bytes | str) -> bytes:
    """A length-delimited field (wire type 2)."""
    data = payload.encode() if isinstance(payload, str) else payload
    return varint(number << 3 | 2) + varint(len(data)) + data


def vi(number: int, n: int) -> bytes:
    """A varint field (wire type 0)."""
    return varint(number << 3) + varint(n)


def envelope(api_version: str, kind: str, raw: bytes) -> bytes:
    return b"k8s\x00" + ld(1, ld(1, api_version) + ld(2, kind)) + ld(2, raw)


def meta(name: str, namespace: str = "") -> bytes:
    """ObjectMeta{1: name, 3: namespace}."""
    return ld(1, name) + (ld(3, namespace) if namespace else b"")


def time(seconds: int, nanos: int = 0) -> bytes:
    """Time / MicroTime{1: seconds, 2: nanos}."""
    return vi(1, seconds) + (vi(2, nanos) if nanos else b"")


def test_lease_with_micro_times_and_pointer_ints() -> None:
    spec = (
        ld(1, "node-1")  # holderIdentity
        + vi(2, 40)  # leaseDurationSeconds
        + ld(4, time(SECONDS, 123_456_789))  # renewTime: MicroTime keeps microseconds
        + vi(5, 0)  # leaseTransitions: a present zero pointer still prints
    )
    body = envelope(
        "coordination.k8s.io/v1",
        "Lease",
        ld(1, meta("node-1", "kube-node-lease")) + ld(2, spec),
    )
    assert protobuf.decode_object(body) == {
        "kind": "Lease",
        "apiVersion": "coordination.k8s.io/v1",
        "metadata": {
            "name": "node-1",
            "namespace": "kube-node-lease",
            "creationTimestamp": None,
        },
        "spec": {
            "holderIdentity": "node-1",
            "leaseDurationSeconds": 40,
            "renewTime": WHEN_MICRO,
            "leaseTransitions": 0,
        },
    }


def test_core_event_with_involved_object_and_series() -> None:
    involved = ld(1, "Pod") + ld(2, "default") + ld(3, "web") + ld(4, "u1") + ld(5, "v1")
    involved += ld(7, "spec.containers{app}")
    raw = (
        ld(1, meta("web.17", "default"))
        + ld(2, involved)
        + ld(3, "BackOff")
        + ld(4, "Back-off restarting failed container")
        + ld(5, ld(1, "kubelet") + ld(2, "node-1"))  # source
        + ld(6, time(SECONDS))  # firstTimestamp
        + ld(7, time(SECONDS + 60, 999))  # lastTimestamp: Time drops the nanoseconds
        + vi(8, 5)  # count
        + ld(9, "Warning")
        + ld(11, vi(1, 4) + ld(2, time(SECONDS, 123_456_000)))  # series
        + ld(14, "kubelet")  # reportingComponent
    )
    assert protobuf.decode_object(envelope("v1", "Event", raw)) == {
        "kind": "Event",
        "apiVersion": "v1",
        "metadata": {"name": "web.17", "namespace": "default", "creationTimestamp": None},
        "involvedObject": {
            "kind": "Pod",
            "namespace": "default",
            "name": "web",
            "uid": "u1",
            "apiVersion": "v1",
            "fieldPath": "spec.containers{app}",
        },
        "reason": "BackOff",
        "message": "Back-off restarting failed container",
        "source": {"component": "kubelet", "host": "node-1"},
        "firstTimestamp": WHEN,
        "lastTimestamp": "2023-11-14T22:14:20Z",
        "count": 5,
        "type": "Warning",
        "eventTime": None,
        "series": {"count": 4, "lastObservedTime": WHEN_MICRO},
        "reportingComponent": "kubelet",
        "reportingInstance": "",
    }


def test_events_v1_event() -> None:
    raw = (
        ld(1, meta("n.1", "default"))
        + ld(2, time(SECONDS, 5_000))  # eventTime
        + ld(3, vi(1, 2) + ld(2, time(SECONDS)))  # series
        + ld(4, "example.com/controller")  # reportingController
        + ld(5, "controller-0")  # reportingInstance
        + ld(6, "Reconcile")  # action
        + ld(7, "Synced")  # reason
        + ld(8, ld(1, "Node") + ld(3, "node-1"))  # regarding
        + ld(10, "all good")  # note
        + ld(11, "Normal")  # type
        + vi(15, 0)  # deprecatedCount: omitempty, so a zero is not printed
    )
    assert protobuf.decode_object(envelope("events.k8s.io/v1", "Event", raw)) == {
        "kind": "Event",
        "apiVersion": "events.k8s.io/v1",
        "metadata": {"name": "n.1", "namespace": "default", "creationTimestamp": None},
        "eventTime": "2023-11-14T22:13:20.000005Z",
        "series": {"count": 2, "lastObservedTime": "2023-11-14T22:13:20.000000Z"},
        "reportingController": "example.com/controller",
        "reportingInstance": "controller-0",
        "action": "Reconcile",
        "reason": "Synced",
        "regarding": {"kind": "Node", "name": "node-1"},
        "note": "all good",
        "type": "Normal",
        "deprecatedSource": {},
        "deprecatedFirstTimestamp": None,
        "deprecatedLastTimestamp": None,
    }


def test_empty_events_print_their_non_omitempty_fields() -> None:
    assert protobuf.decode_object(envelope("v1", "Event", b"")) == {
        "kind": "Event",
        "apiVersion": "v1",
        "metadata": {"creationTimestamp": None},
        "involvedObject": {},
        "source": {},
        "firstTimestamp": None,
        "lastTimestamp": None,
        "eventTime": None,
        "reportingComponent": "",
        "reportingInstance": "",
    }
    series = protobuf.decode_object(envelope("events.k8s.io/v1", "Event", ld(3, b"")))["series"]
    assert series == {"count": 0, "lastObservedTime": None}  # no omitempty in events/v1


def test_endpoints_with_subsets() -> None:
    target = ld(1, "Pod") + ld(2, "default") + ld(3, "web-0")
    ready = ld(1, "10.0.0.1") + ld(2, target) + ld(3, "web-0") + ld(4, "node-1")
    subset = (
        ld(1, ready)  # addresses
        + ld(2, ld(1, "10.0.0.2"))  # notReadyAddresses
        + ld(2, b"")  # an address with no ip still prints "ip"
        + ld(3, ld(1, "http") + vi(2, 8080) + ld(3, "TCP") + ld(4, "kubernetes.io/h2c"))
        + ld(3, b"")  # a port with no number still prints "port"
    )
    body = envelope("v1", "Endpoints", ld(1, meta("web", "default")) + ld(2, subset))
    assert protobuf.decode_object(body) == {
        "kind": "Endpoints",
        "apiVersion": "v1",
        "metadata": {"name": "web", "namespace": "default", "creationTimestamp": None},
        "subsets": [
            {
                "addresses": [
                    {
                        "ip": "10.0.0.1",
                        "hostname": "web-0",
                        "nodeName": "node-1",
                        "targetRef": {"kind": "Pod", "namespace": "default", "name": "web-0"},
                    }
                ],
                "notReadyAddresses": [{"ip": "10.0.0.2"}, {"ip": ""}],
                "ports": [
                    {
                        "name": "http",
                        "port": 8080,
                        "protocol": "TCP",
                        "appProtocol": "kubernetes.io/h2c",
                    },
                    {"port": 0},
                ],
            }
        ],
    }


def test_replica_set() -> None:
    labels = ld(11, ld(1, "app") + ld(2, "web"))  # ObjectMeta.labels entry
    template = ld(1, labels) + ld(2, ld(2, ld(1, "app") + ld(2, "nginx")))  # spec.containers
    spec = vi(1, 3) + ld(2, ld(1, ld(1, "app") + ld(2, "web"))) + ld(3, template) + vi(4, 10)
    condition = ld(1, "ReplicaFailure") + ld(2, "True") + ld(3, time(SECONDS)) + ld(4, "Quota")
    status = vi(1, 2) + vi(3, 7) + vi(4, 2) + vi(7, 1) + ld(6, condition)
    raw = ld(1, meta("web-5d8", "default")) + ld(2, spec) + ld(3, status)
    assert protobuf.decode_object(envelope("apps/v1", "ReplicaSet", raw)) == {
        "kind": "ReplicaSet",
        "apiVersion": "apps/v1",
        "metadata": {"name": "web-5d8", "namespace": "default", "creationTimestamp": None},
        "spec": {
            "replicas": 3,
            "minReadySeconds": 10,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"creationTimestamp": None, "labels": {"app": "web"}},
                "spec": {"containers": [{"name": "app", "image": "nginx", "resources": {}}]},
            },
        },
        "status": {
            "replicas": 2,
            "readyReplicas": 2,
            "terminatingReplicas": 1,
            "observedGeneration": 7,
            "conditions": [
                {
                    "type": "ReplicaFailure",
                    "status": "True",
                    "lastTransitionTime": WHEN,
                    "reason": "Quota",
                }
            ],
        },
    }


def test_empty_replica_set() -> None:
    assert protobuf.decode_object(envelope("apps/v1", "ReplicaSet", b"")) == {
        "kind": "ReplicaSet",
        "apiVersion": "apps/v1",
        "metadata": {"creationTimestamp": None},
        "spec": {
            "selector": None,
            "template": {"metadata": {"creationTimestamp": None}, "spec": {"containers": None}},
        },
        "status": {"replicas": 0},
    }


@pytest.mark.parametrize(
    ("api_version", "kind", "expected"),
    [
        ("v1", "Event", True),
        ("events.k8s.io/v1", "Event", True),
        ("coordination.k8s.io/v1", "Lease", True),
        ("v1", "Endpoints", True),
        ("apps/v1", "ReplicaSet", True),
        ("networking.k8s.io/v1", "Ingress", True),
        ("v1", "Lease", False),
        ("v1", "EventsV1Event", False),  # the internal message name is no kind
    ],
)
def test_can_decode(api_version: str, kind: str, expected: bool) -> None:
    assert protobuf.can_decode(api_version, kind) is expected


def test_wrong_wire_type_is_a_bad_request_naming_the_field() -> None:
    # leaseDurationSeconds is a varint; sent length-delimited it cannot be decoded.
    with pytest.raises(errors.StatusError) as caught:
        protobuf.decode_object(envelope("coordination.k8s.io/v1", "Lease", ld(2, ld(2, b"x"))))
    assert caught.value.code == 400
    assert "wrong wireType = 2 for field spec.leaseDurationSeconds" in caught.value.message

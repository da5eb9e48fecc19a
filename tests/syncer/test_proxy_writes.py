"""Proxy mode's pure parts: the target's refusal as the upstream Status, the SyncTarget fields a
proxy write routes by, and how long a proxy write's downstream state waits for upstream."""

from __future__ import annotations

from typing import Any

import pytest

from minikcp.registry.objects import StoredObject
from minikcp.syncer import client as downstream
from minikcp.syncer import proxy_targets, proxy_writes, translate

QUOTA_REFUSAL: dict[str, Any] = {
    "kind": "Status",
    "apiVersion": "v1",
    "metadata": {},
    "status": "Failure",
    "message": 'configmaps "c" is forbidden: exceeded quota: q, requested: configmaps=1, '
    "used: configmaps=2, limited: configmaps=2",
    "reason": "Forbidden",
    "details": {"name": "c", "kind": "configmaps"},
    "code": 403,
}
INVALID: dict[str, Any] = {
    "kind": "Status",
    "apiVersion": "v1",
    "metadata": {},
    "status": "Failure",
    "message": 'Widget.example.com "w" is invalid: spec.replicas: Invalid value: 5: '
    "spec.replicas in body should be less than or equal to 3",
    "reason": "Invalid",
    "details": {
        "name": "w",
        "group": "example.com",
        "kind": "Widget",
        "causes": [
            {
                "reason": "FieldValueInvalid",
                "message": "Invalid value: 5: spec.replicas in body should be less than or "
                "equal to 3",
                "field": "spec.replicas",
            }
        ],
    },
    "code": 422,
}
THROTTLED: dict[str, Any] = {
    "kind": "Status",
    "apiVersion": "v1",
    "metadata": {},
    "status": "Failure",
    "message": "too many requests",
    "reason": "TooManyRequests",
    "details": {"retryAfterSeconds": 2},
    "code": 429,
}


@pytest.mark.parametrize("status", [QUOTA_REFUSAL, INVALID, THROTTLED])
def test_refusals_come_up_as_the_target_said_them(status: dict[str, Any]) -> None:
    exc = downstream.DownstreamError(
        status["code"], status["reason"], status["message"], status["details"]
    )
    assert proxy_writes.refused("east", exc).to_status() == status


@pytest.mark.parametrize(
    ("code", "message", "expected"),
    [
        (500, "etcd is away", "sync target east failed the write (500): etcd is away"),
        (504, "", "sync target east failed the write (504): "),
    ],
)
def test_server_errors_of_the_target_are_503(code: int, message: str, expected: str) -> None:
    answer = proxy_writes.refused("east", downstream.DownstreamError(code, "", message))
    assert (answer.code, answer.reason, answer.message) == (503, "ServiceUnavailable", expected)


def test_a_refusal_without_a_message_names_the_target() -> None:
    answer = proxy_writes.refused("east", downstream.DownstreamError(409, "Conflict", ""))
    assert (answer.code, answer.message) == (409, "sync target east refused the write (409)")


@pytest.mark.parametrize(
    ("stamp", "age", "waits"),
    [
        (None, 0.0, False),  # not written by a proxy write
        ("1000.250", 0.0, True),  # another replica's clock a little ahead
        ("1000", 4.5, True),
        ("1000", translate.PROXY_WRITE_GRACE, False),  # over: upstream has the last word
        ("1000", -5.0, False),  # a clock far behind: not trusted
        ("soon", 1.0, False),
    ],
)
def test_a_proxy_write_waits_for_its_upstream_write(
    stamp: str | None, age: float, waits: bool
) -> None:
    annotations = {} if stamp is None else {translate.PROXY_WRITE_ANNOTATION: stamp}
    live = {"metadata": {"name": "c", "annotations": annotations}}
    assert translate.awaits_upstream_write(live, 1000.0 + age) is waits


def _target(meta: dict[str, Any], spec: dict[str, Any], status: dict[str, Any]) -> StoredObject:
    obj = {
        "apiVersion": "workload.kcp.io/v1alpha1",
        "kind": "SyncTarget",
        "metadata": {"name": "east", "uid": "u-1", **meta},
        "spec": spec,
        "status": status,
    }
    return StoredObject.from_dict(obj, cluster="root:org", revision=7)


READY = {
    "conditions": [{"type": "Ready", "status": "True", "reason": "Ready"}],
    "lastSyncerHeartbeatTime": "2026-01-01T00:00:00Z",
}
DOWN = {
    "conditions": [
        {"type": "Ready", "status": "False", "reason": "ErrorHeartbeat", "message": "refused"}
    ],
    "lastSyncerHeartbeatTime": "2026-01-01T00:00:00Z",
}
REF = {"kubeconfigSecretRef": {"namespace": "kube-system", "name": "east-kubeconfig"}}


@pytest.mark.parametrize(
    ("meta", "spec", "status", "expected"),
    [
        (
            {},
            REF,
            READY,
            {
                "serves": frozenset({"root:org"}),
                "ready": True,
                "reached": True,
                "deleting": False,
                "secret": ("kube-system", "east-kubeconfig", "kubeconfig"),
            },
        ),
        (
            {"deletionTimestamp": "2026-01-01T00:00:00Z"},
            {**REF, "clusters": ["*"], "resources": ["widgets.example.com "]},
            DOWN,
            {
                "serves": frozenset({"*"}),
                "ready": False,
                "problem": "refused",
                "deleting": True,
                "resources": frozenset({"widgets.example.com"}),
            },
        ),
        (
            {},
            {},
            {},
            {
                "ready": False,
                "reached": False,
                "problem": "no Ready condition yet",
                "secret": ("", "", "kubeconfig"),
            },
        ),
    ],
)
def test_what_a_proxy_write_knows_of_a_stored_target(
    meta: dict[str, Any], spec: dict[str, Any], status: dict[str, Any], expected: dict[str, Any]
) -> None:
    target = proxy_targets.stored_target(_target(meta, spec, status))
    assert target.key == ("root:org", "east")
    assert target.ref == translate.TargetRef(cluster="root:org", name="east", uid="u-1")
    for field, value in expected.items():
        assert getattr(target, field) == value, field

"""Translation of upstream objects into downstream ones: table tests of the pure rules."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from minikcp.syncer import kinds, translate

T = translate.TargetRef(cluster="root", name="east", uid="u-1")
DEPLOYMENTS = kinds.strategy_for("deployments.apps")


def _deployment(**meta: Any) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {
            "name": "web",
            "namespace": "default",
            "uid": "up-uid",
            "resourceVersion": "42",
            "generation": 3,
            "creationTimestamp": "2026-01-01T00:00:00Z",
            "managedFields": [{"manager": "kubectl"}],
            "ownerReferences": [{"uid": "x"}],
            "finalizers": ["workload.kcp.io/syncer-abc"],
            "labels": {"app": "web"},
            "annotations": {
                "kcp.io/cluster": "root",
                "kubectl.kubernetes.io/last-applied-configuration": "{}",
                "deployment.kubernetes.io/revision": "2",
                translate.SPLIT_ANNOTATION: "{}",
                "keep": "me",
            },
            **meta,
        },
        "spec": {"replicas": 5, "template": {"spec": {"containers": [{"name": "c"}]}}},
        "status": {"replicas": 5},
    }


def test_namespace_name_is_deterministic_kcp_style() -> None:
    a = translate.downstream_namespace(T, "root", "default")
    assert a == translate.downstream_namespace(T, "root", "default")
    assert a.startswith("kcp-") and len(a) == 16
    assert a[4:].isalnum() and a[4:].islower()
    others = {
        translate.downstream_namespace(T, "root", "other"),
        translate.downstream_namespace(T, "root:org", "default"),
        translate.downstream_namespace(
            translate.TargetRef("root", "west", "u-2"), "root", "default"
        ),
    }
    assert a not in others and len(others) == 3


def test_locator_round_trip() -> None:
    ns = translate.namespace_object(T, "root:org", "team")
    assert ns["metadata"]["labels"] == {translate.TARGET_LABEL: T.key}
    assert translate.parse_locator(ns["metadata"]["annotations"]) == ("u-1", "root:org", "team")
    loc = orjson.loads(ns["metadata"]["annotations"][translate.LOCATOR_ANNOTATION])
    assert loc == {
        "syncTarget": {"cluster": "root", "name": "east", "uid": "u-1"},
        "cluster": "root:org",
        "namespace": "team",
    }


@pytest.mark.parametrize(
    "annotations",
    [None, {}, {translate.LOCATOR_ANNOTATION: "not json"}, {translate.LOCATOR_ANNOTATION: "{}"}],
)
def test_unreadable_locators(annotations: dict[str, str] | None) -> None:
    assert translate.parse_locator(annotations) is None


def _existing(cluster: str, *, terminating: bool = False) -> dict[str, Any]:
    ns = translate.namespace_object(T, cluster, "team")
    if terminating:
        ns["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    return ns


@pytest.mark.parametrize(
    ("existing", "refusal"),
    [
        (_existing("root:org"), None),
        (_existing("root:other"), "AlreadyExists"),
        ({"metadata": {"name": "kcp-x"}}, "AlreadyExists"),  # someone else's, no locator
        ({}, "AlreadyExists"),
        (_existing("root:org", terminating=True), "Conflict"),
    ],
)
def test_an_existing_namespace_takes_our_objects_only_when_ours_and_live(
    existing: dict[str, Any], refusal: str | None
) -> None:
    found = translate.existing_namespace_refusal(existing, ("u-1", "root:org", "team"), "kcp-x")
    assert (found[0] if found else None) == refusal
    if found:
        assert "kcp-x" in found[1]


def test_downstream_object_strips_server_fields() -> None:
    up = _deployment()
    down = translate.downstream_object(DEPLOYMENTS, up, T, "root", split={"east": 3, "west": 2})
    meta = down["metadata"]
    for key in (
        "uid",
        "resourceVersion",
        "generation",
        "creationTimestamp",
        "managedFields",
        "ownerReferences",
        "finalizers",
    ):
        assert key not in meta, key
    assert "status" not in down
    assert meta["namespace"] == translate.downstream_namespace(T, "root", "default")
    assert meta["name"] == "web"
    assert meta["labels"] == {"app": "web", translate.TARGET_LABEL: T.key}
    annotations = meta["annotations"]
    assert annotations["keep"] == "me"
    assert annotations[translate.UPSTREAM_UID_ANNOTATION] == "up-uid"
    assert annotations[translate.UPSTREAM_GENERATION_ANNOTATION] == "3"
    for gone in (
        "kcp.io/cluster",
        "kubectl.kubernetes.io/last-applied-configuration",
        "deployment.kubernetes.io/revision",
        translate.SPLIT_ANNOTATION,
    ):
        assert gone not in annotations
    assert down["spec"]["replicas"] == 3
    # The upstream object is untouched.
    assert up["spec"]["replicas"] == 5 and "uid" in up["metadata"]


def test_deletion_fields_are_stripped() -> None:
    up = _deployment(deletionTimestamp="2026-01-01T00:00:00Z", deletionGracePeriodSeconds=0)
    meta = translate.downstream_object(DEPLOYMENTS, up, T, "root")["metadata"]
    assert "deletionTimestamp" not in meta and "deletionGracePeriodSeconds" not in meta


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        (
            {
                "clusterIP": "10.0.0.1",
                "clusterIPs": ["10.0.0.1"],
                "ipFamilies": ["IPv4"],
                "ipFamilyPolicy": "SingleStack",
                "type": "NodePort",
                "ports": [{"port": 80, "nodePort": 30080}],
            },
            {"type": "NodePort", "ports": [{"port": 80}]},
        ),
        (
            {"clusterIP": "None", "clusterIPs": ["None"], "ports": [{"port": 80}]},
            {"clusterIP": "None", "clusterIPs": ["None"], "ports": [{"port": 80}]},
        ),
        (
            {"type": "LoadBalancer", "healthCheckNodePort": 31000, "ports": []},
            {"type": "LoadBalancer", "ports": []},
        ),
    ],
)
def test_service_allocations_are_left_to_each_cluster(
    spec: dict[str, Any], expected: dict[str, Any]
) -> None:
    svc = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s", "uid": "u"}}
    down = translate.downstream_object(
        kinds.strategy_for("services"), {**svc, "spec": spec}, T, "root"
    )
    assert down["spec"] == expected


@pytest.mark.parametrize(
    ("resource", "obj", "skip"),
    [
        ("configmaps", {"metadata": {"name": "kube-root-ca.crt"}}, True),
        ("configmaps", {"metadata": {"name": "app"}}, False),
        ("serviceaccounts", {"metadata": {"name": "default"}}, True),
        ("serviceaccounts", {"metadata": {"name": "builder"}}, False),
        (
            "secrets",
            {"metadata": {"name": "t"}, "type": "kubernetes.io/service-account-token"},
            True,
        ),
        ("secrets", {"metadata": {"name": "t"}, "type": "Opaque"}, False),
        ("deployments.apps", {"metadata": {"name": "default"}}, False),
        ("statefulsets.apps", {"metadata": {"name": "default"}}, False),
    ],
)
def test_never_synced(resource: str, obj: dict[str, Any], skip: bool) -> None:
    assert kinds.strategy_for(resource).never_synced(obj) is skip


@pytest.mark.parametrize(
    ("desired", "live", "drift"),
    [
        ({"a": 1}, {"a": 1, "b": 2}, False),  # extra fields downstream are not drift
        ({"a": 1}, {"a": 2}, True),
        ({"a": 1}, {}, True),
        ({"a": {"b": [1, 2]}}, {"a": {"b": [1, 2], "c": 0}}, False),
        ({"a": [1, 2]}, {"a": [1]}, True),
        ({"a": [{"n": "x"}]}, {"a": [{"n": "x", "default": True}]}, False),
        ({"a": [{"n": "x"}]}, {"a": [{"n": "y"}]}, True),
        ({"a": True}, {"a": 1}, True),  # JSON true is not 1
        ({"a": None}, {"a": None}, False),
        # Kubernetes drops empty values on output (template creationTimestamp: null, labels: {}).
        ({"a": None}, {}, False),
        ({"a": {}, "b": []}, {}, False),
        ({"a": {"b": None}}, {"a": {}}, False),
        ({"a": {"b": 1}}, {}, True),
        ({"spec": {"replicas": 3}}, {"spec": {"replicas": 3}, "status": {"replicas": 1}}, False),
    ],
)
def test_drifted(desired: Any, live: Any, drift: bool) -> None:
    assert translate.drifted(desired, live) is drift


def test_needs_apply_uses_the_applied_hash_and_drift() -> None:
    desired = translate.downstream_object(DEPLOYMENTS, _deployment(), T, "root", split={"east": 2})
    assert translate.needs_apply(desired, None)
    live = orjson.loads(orjson.dumps(desired))
    live["status"] = {"replicas": 2}
    live["metadata"]["uid"] = "down"
    assert not translate.needs_apply(desired, live)
    live["spec"]["replicas"] = 7  # scaled by hand downstream
    assert translate.needs_apply(desired, live)
    # A label removed upstream changes the hash, though the live object still holds everything.
    up = _deployment()
    up["metadata"]["labels"] = {}
    fewer = translate.downstream_object(DEPLOYMENTS, up, T, "root", split={"east": 2})
    live = orjson.loads(orjson.dumps(desired))
    assert translate.needs_apply(fewer, live)


def test_ownership() -> None:
    down = translate.downstream_object(
        kinds.strategy_for("configmaps"), {"metadata": {"name": "c"}}, T, "root"
    )
    assert translate.is_owned(down, T)
    assert not translate.is_owned({"metadata": {"name": "c"}}, T)
    other = translate.TargetRef("root", "west", "u-2")
    assert not translate.is_owned(down, other)
    assert T.finalizer.startswith(translate.FINALIZER_PREFIX) and T.finalizer != other.finalizer


def _stateful_set(partition: int | None) -> dict[str, Any]:
    rolling = {} if partition is None else {"partition": partition}
    return {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {"name": "db", "namespace": "default", "uid": "u", "generation": 2},
        "spec": {
            "replicas": 5,
            "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": rolling},
            "template": {"spec": {"containers": [{"name": "c"}]}},
        },
    }


@pytest.mark.parametrize(
    ("target", "partition", "replicas", "part"),
    [
        ("east", 0, 3, 0),
        ("west", 0, 2, 0),
        ("east", 4, 3, 3),  # east holds the lowest ordinals: the partition is east's first
        ("west", 4, 2, 1),
        ("west", 2, 2, 0),
        ("other", 2, 0, 0),  # not in the split: nothing to run
    ],
)
def test_stateful_set_gets_its_share_and_its_part_of_the_partition(
    target: str, partition: int, replicas: int, part: int
) -> None:
    ref = translate.TargetRef(cluster="root", name=target, uid="u-9")
    strategy = kinds.strategy_for("statefulsets.apps")
    up = _stateful_set(partition)
    down = translate.downstream_object(strategy, up, ref, "root", split={"east": 3, "west": 2})
    assert down["spec"]["replicas"] == replicas
    assert down["spec"]["updateStrategy"]["rollingUpdate"]["partition"] == part
    assert up["spec"]["replicas"] == 5 and up["spec"]["updateStrategy"]["rollingUpdate"] == {
        "partition": partition
    }


@pytest.mark.parametrize(
    ("resource", "kind", "spec"),
    [
        ("daemonsets.apps", "DaemonSet", {"template": {"spec": {"containers": [{"name": "c"}]}}}),
        ("cronjobs.batch", "CronJob", {"schedule": "*/5 * * * *", "jobTemplate": {"spec": {}}}),
        (
            "persistentvolumeclaims",
            "PersistentVolumeClaim",
            {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}},
        ),
    ],
)
def test_unsplit_kinds_go_whole_to_every_target(
    resource: str, kind: str, spec: dict[str, Any]
) -> None:
    strategy = kinds.strategy_for(resource)
    assert not strategy.splits_replicas and strategy.reports_status
    up = {"apiVersion": "v1", "kind": kind, "metadata": {"name": "x", "uid": "u"}, "spec": spec}
    for target in ("east", "west"):
        ref = translate.TargetRef(cluster="root", name=target, uid=target)
        assert translate.downstream_object(strategy, up, ref, "root")["spec"] == spec

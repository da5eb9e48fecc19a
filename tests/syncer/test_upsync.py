"""The upstream copy of a downstream pod, and who may change it."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from minikcp.machinery import errors, users
from minikcp.registry.objects import RequestContext
from minikcp.syncer import translate, upsync

TARGET = translate.TargetRef(cluster="root", name="east", uid="u-1")
DOWN = {
    "metadata": {
        "name": "web-abc",
        "namespace": "kcp-1234",
        "uid": "down-uid",
        "resourceVersion": "9",
        "labels": {"app": "web"},
        "annotations": {"kcp.io/cluster": "root", "note": "kept"},
        "ownerReferences": [{"kind": "ReplicaSet", "name": "web", "uid": "rs"}],
    },
    "spec": {"nodeName": "sim-node-0", "containers": [{"name": "web", "image": "nginx"}]},
    "status": {"phase": "Running", "podIP": "10.244.0.9"},
}


def test_upstream_pod() -> None:
    pod = upsync.upstream_pod(DOWN, TARGET, "default")
    assert pod["metadata"] == {
        "name": "web-abc",
        "namespace": "default",
        "labels": {"app": "web", upsync.UPSYNC_LABEL: TARGET.key},
        "annotations": {
            "note": "kept",
            upsync.TARGET_ANNOTATION: "east",
            upsync.DOWNSTREAM_NAMESPACE_ANNOTATION: "kcp-1234",
        },
    }
    assert pod["spec"] == DOWN["spec"] and pod["status"] == DOWN["status"]
    assert upsync.upsynced_from(pod) == TARGET.key
    assert upsync.downstream_location(pod) == ("kcp-1234", "web-abc")
    assert upsync.upsynced_from(DOWN) == ""


USER = users.UserInfo("alice", ("system:authenticated",))


@pytest.mark.parametrize(
    ("user", "allowed"),
    [(users.SYSTEM, True), (USER, False), (users.UserInfo("system:minikcp", ()), False)],
)
def test_only_in_process_writers(user: users.UserInfo, allowed: bool) -> None:
    pod: dict[str, Any] = upsync.upstream_pod(DOWN, TARGET, "default")
    ctx = RequestContext(cluster="root", user=user)
    hook = upsync.UpsyncedPods()
    for check in (
        lambda: hook.admit_create(ctx, pod),
        lambda: hook.admit_update(ctx, pod, pod),
    ):
        if allowed:
            asyncio.run(check())
            continue
        with pytest.raises(errors.StatusError) as refused:
            asyncio.run(check())
        assert refused.value.code == 403
        assert refused.value.message.startswith(
            'pods "web-abc" is forbidden: the pod runs on sync target east and is shown here '
            "read-only"
        )
    # Pods nobody upsynced are anybody's.
    asyncio.run(hook.admit_create(ctx, {"metadata": {"name": "mine"}}))

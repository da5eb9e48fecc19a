"""The StatefulSet controller's decisions (pure functions), against upstream's rules."""

from __future__ import annotations

from typing import Any

import pytest

from minikcp.simulator import controller_history
from minikcp.simulator import statefulset_pods as sts_pods
from tests.simulator.builders import NOW, template

CUR, UPD = "web-cur", "web-upd"


def sts(
    replicas: int = 3,
    *,
    parallel: bool = False,
    partition: int = 0,
    on_delete: bool = False,
    claims: tuple[str, ...] = (),
    start: int = 0,
) -> dict[str, Any]:
    strategy: dict[str, Any] = (
        {"type": "OnDelete"}
        if on_delete
        else {"type": "RollingUpdate", "rollingUpdate": {"partition": partition}}
    )
    spec: dict[str, Any] = {
        "replicas": replicas,
        "serviceName": "web",
        "selector": {"matchLabels": {"app": "web"}},
        "podManagementPolicy": "Parallel" if parallel else "OrderedReady",
        "updateStrategy": strategy,
        "template": template(),
    }
    if start:
        spec["ordinals"] = {"start": start}
    if claims:
        spec["volumeClaimTemplates"] = [
            {"metadata": {"name": c}, "spec": {"accessModes": ["ReadWriteOnce"]}} for c in claims
        ]
    return {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {"name": "web", "namespace": "default", "uid": "s-1", "generation": 2},
        "spec": spec,
    }


def pod(ordinal: int, state: str = "ready", revision: str = UPD) -> dict[str, Any]:
    """A pod of the set: "ready", "running" (not Ready yet), "terminating" or "pending"."""
    meta: dict[str, Any] = {
        "name": f"web-{ordinal}",
        "labels": {sts_pods.REVISION_LABEL: revision},
    }
    if state == "terminating":
        meta["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    if state == "pending":
        return {"metadata": meta, "status": {}}
    ready = "True" if state in ("ready", "terminating") else "False"
    return {
        "metadata": meta,
        "status": {
            "phase": "Running",
            "conditions": [
                {"type": "Ready", "status": ready, "lastTransitionTime": "2026-01-01T00:00:00Z"}
            ],
        },
    }


def pods(*specs: tuple[int, str, str]) -> dict[int, dict[str, Any]]:
    return {o: pod(o, state, rev) for o, state, rev in specs}


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("web-0", 0),
        ("web-12", 12),
        ("web-01", None),
        ("web-", None),
        ("web-x", None),
        ("db-1", None),
    ],
)
def test_ordinal_of_a_pod_name(name: str, expected: int | None) -> None:
    assert sts_pods.ordinal("web", name) == expected


@pytest.mark.parametrize(
    ("case", "the_set", "existing", "create", "delete"),
    [
        ("ordered: first pod", sts(), {}, [(0, UPD)], []),
        ("ordered: waits for a running pod", sts(), pods((0, "running", UPD)), [], []),
        ("ordered: next once ready", sts(), pods((0, "ready", UPD)), [(1, UPD)], []),
        ("parallel: all at once", sts(parallel=True), {}, [(0, UPD), (1, UPD), (2, UPD)], []),
        (
            "parallel: fills gaps despite unready pods",
            sts(parallel=True),
            pods((1, "running", UPD)),
            [(0, UPD), (2, UPD)],
            [],
        ),
        ("partition: low ordinals at current", sts(partition=2), {}, [(0, CUR)], []),
        ("start ordinal: pods from it", sts(start=5), {}, [(5, UPD)], []),
        (
            "start ordinal: partition counts from it",
            sts(partition=1, start=5),
            pods((5, "ready", CUR), (6, "ready", CUR), (7, "ready", CUR)),
            [],
            ["web-7"],
        ),
        (
            "start ordinal: below it is condemned",
            sts(start=1),
            pods((0, "ready", UPD), (1, "ready", UPD), (2, "ready", UPD), (3, "ready", UPD)),
            [],
            ["web-0"],
        ),
        (
            "partition: high ordinals at update",
            sts(partition=2),
            pods((0, "ready", CUR), (1, "ready", CUR)),
            [(2, UPD)],
            [],
        ),
        (
            "scale down: highest first, one at a time",
            sts(1),
            pods((0, "ready", UPD), (1, "ready", UPD), (2, "ready", UPD)),
            [],
            ["web-2"],
        ),
        (
            "scale down: waits for a terminating pod",
            sts(1),
            pods((0, "ready", UPD), (1, "ready", UPD), (2, "terminating", UPD)),
            [],
            [],
        ),
        (
            "scale down parallel: all at once",
            sts(1, parallel=True),
            pods((0, "ready", UPD), (1, "ready", UPD), (2, "ready", UPD)),
            [],
            ["web-2", "web-1"],
        ),
        (
            "update: highest old pod goes first",
            sts(),
            pods((0, "ready", CUR), (1, "ready", CUR), (2, "ready", CUR)),
            [],
            ["web-2"],
        ),
        (
            "update: waits for the replaced pod to be ready",
            sts(),
            pods((0, "ready", CUR), (1, "ready", CUR), (2, "running", UPD)),
            [],
            [],
        ),
        (
            "update: next lower once ready",
            sts(),
            pods((0, "ready", CUR), (1, "ready", CUR), (2, "ready", UPD)),
            [],
            ["web-1"],
        ),
        (
            "update: stops at the partition",
            sts(partition=2),
            pods((0, "ready", CUR), (1, "ready", CUR), (2, "ready", UPD)),
            [],
            [],
        ),
        (
            "OnDelete: nothing replaced",
            sts(on_delete=True),
            pods((0, "ready", CUR), (1, "ready", CUR), (2, "ready", CUR)),
            [],
            [],
        ),
        (
            "done",
            sts(),
            pods((0, "ready", UPD), (1, "ready", UPD), (2, "ready", UPD)),
            [],
            [],
        ),
    ],
)
def test_next_steps(
    case: str,
    the_set: dict[str, Any],
    existing: dict[int, dict[str, Any]],
    create: list[tuple[int, str]],
    delete: list[str],
) -> None:
    steps = sts_pods.next_steps(the_set, existing, CUR, UPD, NOW)
    assert (steps.create, steps.delete) == (create, delete), case


@pytest.mark.parametrize(
    ("existing", "expected"),
    [
        (
            [pod(0, "ready", CUR), pod(1, "ready", CUR), pod(2, "running", UPD)],
            {
                "replicas": 3,
                "readyReplicas": 2,
                "currentReplicas": 2,
                "updatedReplicas": 1,
                "currentRevision": CUR,
                "availableReplicas": 2,
            },
        ),
        (
            # Every pod updated and ready: the update revision becomes the current one.
            [pod(0, "ready", UPD), pod(1, "ready", UPD)],
            {
                "replicas": 2,
                "readyReplicas": 2,
                "currentReplicas": 2,
                "updatedReplicas": 2,
                "currentRevision": UPD,
                "availableReplicas": 2,
            },
        ),
        (
            # Not started yet: not counted; terminating: counted, but at no revision.
            [pod(0, "pending", UPD), pod(1, "terminating", UPD)],
            {"replicas": 1, "readyReplicas": 1, "currentRevision": CUR, "availableReplicas": 1},
        ),
    ],
)
def test_set_status(existing: list[dict[str, Any]], expected: dict[str, Any]) -> None:
    status = sts_pods.set_status(sts(), existing, CUR, UPD, 0, NOW)
    assert status == {
        "observedGeneration": 2,
        **expected,
        "updateRevision": UPD,
        "collisionCount": 0,
    }
    assert list(status)[:2] == ["observedGeneration", "replicas"]
    assert list(status)[-1] == "availableReplicas"


def test_new_pod_has_identity_storage_revision_and_owner() -> None:
    the_set = sts(claims=("data",))
    body = sts_pods.new_pod(the_set, template(), UPD, 4, "sim-node-1")
    meta = body["metadata"]
    assert meta["name"] == "web-4" and meta["generateName"] == "web-"
    assert meta["labels"] == {
        "app": "web",
        "statefulset.kubernetes.io/pod-name": "web-4",
        "apps.kubernetes.io/pod-index": "4",
        "controller-revision-hash": UPD,
    }
    assert meta["ownerReferences"][0]["controller"] is True
    assert body["spec"]["hostname"] == "web-4" and body["spec"]["subdomain"] == "web"
    assert body["spec"]["nodeName"] == "sim-node-1"
    assert body["spec"]["volumes"] == [
        {"name": "data", "persistentVolumeClaim": {"claimName": "data-web-4"}}
    ]


def test_claims_carry_the_selector_and_an_owner_only_when_deleted_with_the_set() -> None:
    the_set = sts(claims=("data", "logs"))
    claims = sts_pods.claims_for(the_set, 1)
    assert [c["metadata"]["name"] for c in claims] == ["data-web-1", "logs-web-1"]
    assert claims[0]["metadata"]["labels"] == {"app": "web"}
    assert "ownerReferences" not in claims[0]["metadata"]
    the_set["spec"]["persistentVolumeClaimRetentionPolicy"] = {"whenDeleted": "Delete"}
    (ref,) = sts_pods.claims_for(the_set, 1)[0]["metadata"]["ownerReferences"]
    assert (ref["kind"], ref["controller"], ref["blockOwnerDeletion"]) == (
        "StatefulSet",
        True,
        True,
    )


_SET_REF = {"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "web", "uid": "s-1"}
_POD_REF = {
    "apiVersion": "v1",
    "kind": "Pod",
    "name": "web-2",
    "uid": "p-2",
    "controller": True,
    "blockOwnerDeletion": True,
}
_OTHER = {"apiVersion": "v1", "kind": "ConfigMap", "name": "x", "uid": "c-1"}


@pytest.mark.parametrize(
    ("refs", "expected"),
    [
        # whenDeleted: Retain: the pod becomes the controller.
        ([], [_POD_REF]),
        # whenDeleted: Delete: the set's reference gives way to the pod's.
        ([{**_SET_REF, "controller": True, "blockOwnerDeletion": True}], [_POD_REF]),
        # Set already: nothing changes.
        ([_POD_REF], [_POD_REF]),
        # Another owner stays beside it.
        ([_OTHER, _SET_REF], [_OTHER, _POD_REF]),
        # Another controller holds the claim: ours are scrubbed, none added.
        ([{**_OTHER, "controller": True}, _SET_REF], [{**_OTHER, "controller": True}]),
    ],
)
def test_condemned_claim_refs(refs: list[dict[str, Any]], expected: list[dict[str, Any]]) -> None:
    claim = {"metadata": {"name": "data-web-2", "ownerReferences": refs}}
    condemned = {"metadata": {"name": "web-2", "uid": "p-2"}}
    assert sts_pods.condemned_claim_refs(claim, sts(), condemned) == expected


@pytest.mark.parametrize(
    ("data", "expected"), [(b"", 0x811C9DC5), (b"a", 0x050C5D7E), (b"foobar", 0x31F0B262)]
)
def test_fnv32_matches_the_reference_vectors(data: bytes, expected: int) -> None:
    assert controller_history.fnv32(data) == expected


def test_revisions_name_data_and_history() -> None:
    the_set = sts()
    first = controller_history.new_revision(the_set, 1, 0)
    assert (
        first["metadata"]["name"]
        == "web-" + first["metadata"]["labels"][controller_history.HASH_LABEL]
    )
    assert first["data"]["spec"]["template"]["$patch"] == "replace"
    assert controller_history.template_of(first) == template()
    # A collision changes the name, not the data.
    other = controller_history.new_revision(the_set, 1, 1)
    assert other["metadata"]["name"] != first["metadata"]["name"]
    assert controller_history.find_equal([other], first) == [other]
    changed = sts()
    changed["spec"]["template"] = template("nginx:2")
    assert (
        controller_history.find_equal([first], controller_history.new_revision(changed, 2, 0)) == []
    )
    history = [{"metadata": {"name": f"r{n}"}, "revision": n} for n in (3, 1, 2, 4)]
    surplus = controller_history.surplus(history, {"r4"}, 1)
    assert [r["metadata"]["name"] for r in surplus] == ["r1", "r2"]

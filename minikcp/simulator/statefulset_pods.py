"""The StatefulSet controller's decisions as pure functions (pkg/controller/statefulset).

Pods are `<set>-<ordinal>`, each with its claims `<template>-<set>-<ordinal>` from the
volumeClaimTemplates and the labels `controller-revision-hash` (the revision's name),
`statefulset.kubernetes.io/pod-name` and `apps.kubernetes.io/pod-index`. `next_steps` is one
pass of updateStatefulSet: missing pods created in ordinal order (OrderedReady waits for each to
be Running and Ready first; Parallel creates them all), pods beyond the replica count deleted
from the highest ordinal, then the rolling update from the highest ordinal down to the
partition, one pod at a time. `set_status` counts the pods as computeReplicaStatus does.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from minikcp.simulator import pod_lifecycle, rollout

REVISION_LABEL = "controller-revision-hash"
POD_NAME_LABEL = "statefulset.kubernetes.io/pod-name"
POD_INDEX_LABEL = "apps.kubernetes.io/pod-index"


def ordinal(set_name: str, pod_name: str) -> int | None:
    """The ordinal of `<set>-<ordinal>`, or None for a name of another form."""
    prefix = f"{set_name}-"
    if not pod_name.startswith(prefix):
        return None
    tail = pod_name[len(prefix) :]
    return int(tail) if tail.isdigit() and (tail == "0" or not tail.startswith("0")) else None


def pod_name(set_name: str, ordinal_: int) -> str:
    return f"{set_name}-{ordinal_}"


def claim_name(claim: str, set_name: str, ordinal_: int) -> str:
    return f"{claim}-{set_name}-{ordinal_}"


def start_ordinal(sts: Mapping[str, Any]) -> int:
    start = (sts.get("spec", {}).get("ordinals") or {}).get("start", 0)
    return start if isinstance(start, int) else 0


def is_parallel(sts: Mapping[str, Any]) -> bool:
    return bool(sts.get("spec", {}).get("podManagementPolicy") == "Parallel")


def update_strategy(sts: Mapping[str, Any]) -> tuple[str, int]:
    """(type, partition) of spec.updateStrategy."""
    strategy = sts.get("spec", {}).get("updateStrategy") or {}
    kind = strategy.get("type", "RollingUpdate")
    partition = (strategy.get("rollingUpdate") or {}).get("partition", 0)
    return kind, partition if isinstance(partition, int) else 0


def retention(sts: Mapping[str, Any]) -> tuple[str, str]:
    """(whenDeleted, whenScaled) of the claim retention policy; Retain unless set."""
    policy = sts.get("spec", {}).get("persistentVolumeClaimRetentionPolicy") or {}
    return policy.get("whenDeleted", "Retain"), policy.get("whenScaled", "Retain")


def revision_of(pod: Mapping[str, Any]) -> str:
    return str((pod.get("metadata", {}).get("labels") or {}).get(REVISION_LABEL, ""))


def is_terminating(pod: Mapping[str, Any]) -> bool:
    return bool(pod.get("metadata", {}).get("deletionTimestamp"))


def is_created(pod: Mapping[str, Any]) -> bool:
    return bool((pod.get("status") or {}).get("phase"))


def is_healthy(pod: Mapping[str, Any], min_ready: int, now: float) -> bool:
    """isRunningAndAvailable, and not on its way out."""
    return not is_terminating(pod) and pod_lifecycle.is_available(pod, min_ready, now)


def min_ready_seconds(sts: Mapping[str, Any]) -> int:
    value = sts.get("spec", {}).get("minReadySeconds", 0)
    return value if isinstance(value, int) else 0


# -- the objects --------------------------------------------------------------------------------


def new_pod(
    sts: Mapping[str, Any],
    template: Mapping[str, Any],
    revision_name: str,
    ordinal_: int,
    node: str,
) -> dict[str, Any]:
    """newVersionedStatefulSetPod: the template with the pod's identity, storage and revision."""
    meta = sts["metadata"]
    set_name = meta["name"]
    name = pod_name(set_name, ordinal_)
    template_meta = template.get("metadata") or {}
    labels = dict(template_meta.get("labels") or {})
    labels[POD_NAME_LABEL] = name
    labels[POD_INDEX_LABEL] = str(ordinal_)
    labels[REVISION_LABEL] = revision_name
    pod_meta: dict[str, Any] = {
        "name": name,
        "generateName": f"{set_name}-",
        "namespace": meta.get("namespace", ""),
        "labels": labels,
        "ownerReferences": [rollout.controller_ref(sts)],
    }
    if template_meta.get("annotations"):
        pod_meta["annotations"] = dict(template_meta["annotations"])
    spec = dict(template.get("spec") or {})
    spec["hostname"] = name
    service = sts.get("spec", {}).get("serviceName")
    if service:
        spec["subdomain"] = service
    claims = sts.get("spec", {}).get("volumeClaimTemplates") or ()
    if claims:
        claimed = {c.get("metadata", {}).get("name", "") for c in claims}
        volumes = [v for v in spec.get("volumes") or () if v.get("name") not in claimed]
        for claim in claims:
            claim_template = claim.get("metadata", {}).get("name", "")
            volumes.append(
                {
                    "name": claim_template,
                    "persistentVolumeClaim": {
                        "claimName": claim_name(claim_template, set_name, ordinal_)
                    },
                }
            )
        spec["volumes"] = volumes
    spec["nodeName"] = node
    return {"apiVersion": "v1", "kind": "Pod", "metadata": pod_meta, "spec": spec}


def claims_for(sts: Mapping[str, Any], ordinal_: int) -> list[dict[str, Any]]:
    """getPersistentVolumeClaims: the pod's claims, labelled with the set's selector; controlled
    by the set when its retention policy deletes them with it (updateClaimOwnerRefForSetAndPod:
    the garbage collector deletes them after the set)."""
    meta = sts["metadata"]
    spec = sts.get("spec", {})
    selector_labels = (spec.get("selector") or {}).get("matchLabels") or {}
    out = []
    for template in spec.get("volumeClaimTemplates") or ():
        template_meta = template.get("metadata") or {}
        claim_meta: dict[str, Any] = {
            "name": claim_name(template_meta.get("name", ""), meta["name"], ordinal_),
            "namespace": meta.get("namespace", ""),
            "labels": {**(template_meta.get("labels") or {}), **selector_labels},
        }
        if template_meta.get("annotations"):
            claim_meta["annotations"] = dict(template_meta["annotations"])
        if retention(sts)[0] == "Delete":
            claim_meta["ownerReferences"] = [rollout.controller_ref(sts)]
        out.append(
            {
                "apiVersion": "v1",
                "kind": "PersistentVolumeClaim",
                "metadata": claim_meta,
                "spec": dict(template.get("spec") or {}),
            }
        )
    return out


def condemned_claim_refs(
    claim: Mapping[str, Any], sts: Mapping[str, Any], pod: Mapping[str, Any]
) -> list[dict[str, Any]]:
    """updateClaimOwnerRefForSetAndPod for a pod a scale-down condemns under whenScaled: Delete:
    references to the set and the pod are scrubbed and the pod becomes the claim's controller,
    unless another controller holds the claim."""
    ours = {sts["metadata"].get("uid"), pod["metadata"].get("uid")}
    refs = [
        dict(r)
        for r in claim["metadata"].get("ownerReferences") or ()
        if isinstance(r, Mapping) and r.get("uid") not in ours
    ]
    if any(r.get("controller") for r in refs):
        return refs
    return [*refs, rollout.controller_ref({**pod, "apiVersion": "v1", "kind": "Pod"})]


def bound_claim_status(claim: Mapping[str, Any]) -> dict[str, Any]:
    """What the volume binder reports once a (simulated) volume of the requested size is bound."""
    spec = claim.get("spec", {})
    status: dict[str, Any] = {"phase": "Bound"}
    if spec.get("accessModes"):
        status["accessModes"] = list(spec["accessModes"])
    storage = ((spec.get("resources") or {}).get("requests") or {}).get("storage")
    if storage is not None:
        status["capacity"] = {"storage": storage}
    return status


# -- one pass -----------------------------------------------------------------------------------


@dataclass(slots=True)
class Steps:
    """What one pass does: pods to create (ordinal, revision name), pods to delete (names)."""

    create: list[tuple[int, str]] = field(default_factory=list)
    delete: list[str] = field(default_factory=list)


def next_steps(
    sts: Mapping[str, Any],
    pods: Mapping[int, Mapping[str, Any]],
    current_revision: str,
    update_revision: str,
    now: float,
) -> Steps:
    """One pass of updateStatefulSet over the set's pods by ordinal."""
    steps = Steps()
    monotonic = not is_parallel(sts)
    min_ready = min_ready_seconds(sts)
    start = start_ordinal(sts)
    end = start + rollout.replicas(sts)
    kind, partition = update_strategy(sts)

    def revision_for(ordinal_: int) -> str:
        keeps_current = kind == "RollingUpdate" and ordinal_ < start + partition
        return current_revision if keeps_current else update_revision

    for ordinal_ in range(start, end):
        pod = pods.get(ordinal_)
        if pod is None:
            steps.create.append((ordinal_, revision_for(ordinal_)))
            if monotonic:
                return steps
            continue
        if monotonic and not is_healthy(pod, min_ready, now):
            return steps
    condemned = sorted((o for o in pods if o < start or o >= end), reverse=True)
    for ordinal_ in condemned:
        pod = pods[ordinal_]
        if is_terminating(pod):
            if monotonic:
                return steps
            continue
        if monotonic:
            unhealthy = [o for o in condemned if not is_healthy(pods[o], min_ready, now)]
            if unhealthy and unhealthy[0] != ordinal_:
                return steps
        steps.delete.append(pod["metadata"]["name"])
        if monotonic:
            return steps
    if steps.create or steps.delete or kind != "RollingUpdate":
        return steps
    for ordinal_ in range(end - 1, start + max(partition, 0) - 1, -1):
        pod = pods.get(ordinal_)
        if pod is None:
            return steps
        if revision_of(pod) != update_revision and not is_terminating(pod):
            steps.delete.append(pod["metadata"]["name"])
            return steps
        if not is_healthy(pod, min_ready, now):
            return steps
    return steps


def set_status(
    sts: Mapping[str, Any],
    pods: list[Mapping[str, Any]],
    current_revision: str,
    update_revision: str,
    collision_count: int,
    now: float,
) -> dict[str, Any]:
    """computeReplicaStatus, then completeRollingUpdate; in the Go struct's field order."""
    min_ready = min_ready_seconds(sts)
    live = [p for p in pods if is_created(p) and not is_terminating(p)]
    current = sum(1 for p in live if revision_of(p) == current_revision)
    updated = sum(1 for p in live if revision_of(p) == update_revision)
    replicas = sum(1 for p in pods if is_created(p))
    ready = sum(1 for p in pods if is_created(p) and pod_lifecycle.is_ready(p))
    available = sum(
        1 for p in pods if is_created(p) and pod_lifecycle.is_available(p, min_ready, now)
    )
    kind, _ = update_strategy(sts)
    if kind == "RollingUpdate" and updated == replicas and ready == replicas:
        current_revision, current = update_revision, updated
    status: dict[str, Any] = {}
    generation = sts.get("metadata", {}).get("generation", 0)
    if generation:
        status["observedGeneration"] = generation
    status["replicas"] = replicas
    for key, value in (
        ("readyReplicas", ready),
        ("currentReplicas", current),
        ("updatedReplicas", updated),
    ):
        if value:
            status[key] = value
    status["currentRevision"] = current_revision
    status["updateRevision"] = update_revision
    status["collisionCount"] = collision_count
    conditions = (sts.get("status") or {}).get("conditions")
    if conditions:
        status["conditions"] = conditions
    status["availableReplicas"] = available
    return status

"""The DaemonSet controller's decisions as pure functions (pkg/controller/daemon).

One pod per simulated node whose labels the pod template's nodeSelector admits, with the
DaemonSet tolerations, a node affinity to its node, and the labels `controller-revision-hash`
(the template hash) and `pod-template-generation`. `next_steps` is manage plus rollingUpdate:
missing pods created, pods on nodes that should not run one deleted, then old pods replaced
within maxUnavailable (or, with maxSurge, a new pod beside the old one, which goes once the new
one is available). `daemon_status` counts as updateDaemonSetStatus.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from minikcp.simulator import nodes, pod_lifecycle, rollout

HASH_LABEL = "controller-revision-hash"
GENERATION_LABEL = "pod-template-generation"

# AddOrUpdateDaemonPodTolerations: daemons keep running where other pods would be evicted.
_TOLERATIONS = (
    ("node.kubernetes.io/not-ready", "NoExecute"),
    ("node.kubernetes.io/unreachable", "NoExecute"),
    ("node.kubernetes.io/disk-pressure", "NoSchedule"),
    ("node.kubernetes.io/memory-pressure", "NoSchedule"),
    ("node.kubernetes.io/pid-pressure", "NoSchedule"),
    ("node.kubernetes.io/unschedulable", "NoSchedule"),
)
_HOST_NETWORK_TOLERATION = ("node.kubernetes.io/network-unavailable", "NoSchedule")


def template_hash(ds: Mapping[str, Any]) -> str:
    """controller.ComputeHash of the template with the status's collision count."""
    status = ds.get("status") or {}
    return rollout.pod_template_hash(
        ds.get("spec", {}).get("template", {}), status.get("collisionCount")
    )


def hash_of(pod: Mapping[str, Any]) -> str:
    return str((pod.get("metadata", {}).get("labels") or {}).get(HASH_LABEL, ""))


def is_updated(ds: Mapping[str, Any], pod: Mapping[str, Any], hash_: str) -> bool:
    """util.IsPodUpdated: the pod's hash, or its template generation, is the current one."""
    labels = pod.get("metadata", {}).get("labels") or {}
    generation = str(ds.get("metadata", {}).get("generation", ""))
    return labels.get(HASH_LABEL) == hash_ or (
        HASH_LABEL not in labels and labels.get(GENERATION_LABEL) == generation
    )


def should_run(ds: Mapping[str, Any], node: str) -> bool:
    return nodes.selects(ds.get("spec", {}).get("template", {}).get("spec") or {}, node)


def min_ready_seconds(ds: Mapping[str, Any]) -> int:
    value = ds.get("spec", {}).get("minReadySeconds", 0)
    return value if isinstance(value, int) else 0


def _tolerations(spec: Mapping[str, Any]) -> list[dict[str, Any]]:
    existing = [dict(t) for t in spec.get("tolerations") or ()]
    wanted = list(_TOLERATIONS)
    if spec.get("hostNetwork"):
        wanted.append(_HOST_NETWORK_TOLERATION)
    for key, effect in wanted:
        existing = [t for t in existing if not (t.get("key") == key and t.get("effect") == effect)]
        existing.append({"key": key, "operator": "Exists", "effect": effect})
    return existing


def new_pod(ds: Mapping[str, Any], hash_: str, node: str) -> dict[str, Any]:
    """CreatePodTemplate + GetPodFromTemplate for one node (bound to it, as the scheduler
    would)."""
    meta = ds["metadata"]
    template = ds.get("spec", {}).get("template", {})
    template_meta = template.get("metadata") or {}
    labels = dict(template_meta.get("labels") or {})
    labels[GENERATION_LABEL] = str(meta.get("generation", 1))
    labels[HASH_LABEL] = hash_
    pod_meta: dict[str, Any] = {
        "generateName": f"{meta['name']}-",
        "namespace": meta.get("namespace", ""),
        "labels": labels,
        "ownerReferences": [rollout.controller_ref(ds)],
    }
    if template_meta.get("annotations"):
        pod_meta["annotations"] = dict(template_meta["annotations"])
    spec = dict(template.get("spec") or {})
    spec["tolerations"] = _tolerations(spec)
    affinity = dict(spec.get("affinity") or {})
    affinity["nodeAffinity"] = {
        "requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [
                {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node]}]}
            ]
        }
    }
    spec["affinity"] = affinity
    spec["nodeName"] = node
    return {"apiVersion": "v1", "kind": "Pod", "metadata": pod_meta, "spec": spec}


def fenceposts(ds: Mapping[str, Any], desired: int) -> tuple[int, int]:
    """(maxSurge, maxUnavailable) of a rolling update, scaled to the desired count (rounded
    up); both zero means one unavailable."""
    strategy = ds.get("spec", {}).get("updateStrategy") or {}
    rolling = strategy.get("rollingUpdate") or {}
    surge = rollout.scaled_value(rolling.get("maxSurge", 0), desired, True)
    unavailable = rollout.scaled_value(rolling.get("maxUnavailable", 1), desired, True)
    if surge == 0 and unavailable == 0:
        unavailable = 1
    return surge, unavailable


@dataclass(slots=True)
class Steps:
    """Nodes to create a pod on, pods (names) to delete."""

    create: list[str] = field(default_factory=list)
    delete: list[str] = field(default_factory=list)


def _split(
    ds: Mapping[str, Any], pods: Sequence[Mapping[str, Any]], hash_: str
) -> tuple[Mapping[str, Any] | None, Mapping[str, Any] | None]:
    """findUpdatedPodsOnNode: the node's new and old pod (the oldest of each)."""
    new = [p for p in pods if is_updated(ds, p, hash_)]
    old = [p for p in pods if not is_updated(ds, p, hash_)]
    first = rollout.by_creation
    return (first(new)[0] if new else None), (first(old)[0] if old else None)


def next_steps(
    ds: Mapping[str, Any],
    node_names: Sequence[str],
    pods_by_node: Mapping[str, Sequence[Mapping[str, Any]]],
    hash_: str,
    now: float,
) -> Steps:
    """manage, then rollingUpdate (terminating pods are not passed in)."""
    steps = Steps()
    min_ready = min_ready_seconds(ds)
    eligible = [n for n in node_names if should_run(ds, n)]
    surge, unavailable = fenceposts(ds, len(eligible))
    rolling = (ds.get("spec", {}).get("updateStrategy") or {}).get("type", "RollingUpdate") == (
        "RollingUpdate"
    )
    for node, pods in sorted(pods_by_node.items()):
        if node not in eligible:
            steps.delete.extend(p["metadata"]["name"] for p in pods)
    for node in eligible:
        pods = pods_by_node.get(node) or ()
        if not pods:
            steps.create.append(node)
            continue
        new, old = _split(ds, pods, hash_)
        keep = {id(p) for p in (new, old) if p is not None} if rolling and surge else set()
        if not keep:
            keep = {id(rollout.by_creation(pods)[0])}
        steps.delete.extend(p["metadata"]["name"] for p in pods if id(p) not in keep)
    if not rolling or steps.create or steps.delete:
        return steps
    allowed: list[str] = []
    candidates: list[str] = []
    budget_used = 0
    for node in eligible:
        new, old = _split(ds, pods_by_node.get(node) or (), hash_)
        if surge:
            if old is None:
                continue
            if new is None:
                if not pod_lifecycle.is_available(old, min_ready, now):
                    allowed.append(node)
                elif budget_used < surge:
                    candidates.append(node)
            elif pod_lifecycle.is_available(new, min_ready, now):
                steps.delete.append(old["metadata"]["name"])
            else:
                budget_used += 1
            continue
        if new is not None and old is not None:
            budget_used += 1
        elif new is not None:
            if not pod_lifecycle.is_available(new, min_ready, now):
                budget_used += 1
        elif old is not None:
            if not pod_lifecycle.is_available(old, min_ready, now):
                allowed.append(old["metadata"]["name"])
            elif budget_used < unavailable:
                candidates.append(old["metadata"]["name"])
    limit = surge if surge else unavailable
    remaining = min(max(limit - budget_used, 0), len(candidates))
    chosen = allowed + candidates[:remaining]
    if surge:
        steps.create.extend(chosen)
    else:
        steps.delete.extend(chosen)
    return steps


def daemon_status(
    ds: Mapping[str, Any],
    node_names: Sequence[str],
    pods_by_node: Mapping[str, Sequence[Mapping[str, Any]]],
    hash_: str,
    now: float,
) -> dict[str, Any]:
    """updateDaemonSetStatus (zero counts of omitempty fields left out)."""
    min_ready = min_ready_seconds(ds)
    desired = current = misscheduled = ready = available = updated = 0
    for node in node_names:
        pods = pods_by_node.get(node) or ()
        runs = should_run(ds, node)
        if not runs:
            misscheduled += 1 if pods else 0
            continue
        desired += 1
        if not pods:
            continue
        current += 1
        pod = rollout.by_creation(pods)[0]
        if pod_lifecycle.is_ready(pod):
            ready += 1
            if pod_lifecycle.is_available(pod, min_ready, now):
                available += 1
        if is_updated(ds, pod, hash_):
            updated += 1
    status: dict[str, Any] = {
        "currentNumberScheduled": current,
        "numberMisscheduled": misscheduled,
        "desiredNumberScheduled": desired,
        "numberReady": ready,
    }
    optional = {
        "observedGeneration": ds.get("metadata", {}).get("generation", 0),
        "updatedNumberScheduled": updated,
        "numberAvailable": available,
        "numberUnavailable": desired - available,
    }
    status.update({k: v for k, v in optional.items() if v})
    old = ds.get("status") or {}
    for kept in ("collisionCount", "conditions"):
        if kept in old:
            status[kept] = old[kept]
    return status

"""The deployment controller's arithmetic as pure functions over objects (dicts).

Ported from kubernetes pkg/controller/deployment (sync.go, rolling.go, recreate.go) and its
util package: the pod-template-hash, which ReplicaSet is new, its revision and annotations, and
how far a rolling update, a Recreate or a paused Deployment may scale each ReplicaSet. The
status and its conditions are in `deployment_conditions`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import orjson

POD_TEMPLATE_HASH = "pod-template-hash"
REVISION = "deployment.kubernetes.io/revision"
DESIRED_REPLICAS = "deployment.kubernetes.io/desired-replicas"
MAX_REPLICAS = "deployment.kubernetes.io/max-replicas"
# Deployment annotations a ReplicaSet does not inherit (deployment util's annotationsToSkip).
_NOT_COPIED = frozenset(
    {
        "kubectl.kubernetes.io/last-applied-configuration",
        REVISION,
        "deployment.kubernetes.io/revision-history",
        DESIRED_REPLICAS,
        MAX_REPLICAS,
        "deprecated.deployment.rollback.to",
    }
)

# rand.SafeEncodeString's alphabet: no vowels, no 0/1/3, so no words and no look-alikes.
_SAFE_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"


# -- the pod-template-hash ----------------------------------------------------------------------


def fnv32a(data: bytes) -> int:
    value = 0x811C9DC5
    for byte in data:
        value = ((value ^ byte) * 0x01000193) & 0xFFFFFFFF
    return value


def safe_encode(text: str) -> str:
    """rand.SafeEncodeString: each character mapped into the safe alphabet."""
    return "".join(_SAFE_ALPHABET[ord(c) % len(_SAFE_ALPHABET)] for c in text)


def pod_template_hash(template: Mapping[str, Any], collision_count: int | None = None) -> str:
    """controller.ComputeHash: FNV-1a of the template (+ collision count), safely encoded.

    Upstream hashes Go's printed struct; the JSON with sorted keys is the same idea: equal
    templates give equal hashes and a changed template almost surely a new one.
    """
    data = orjson.dumps(_without_hash_label(template), option=orjson.OPT_SORT_KEYS)
    if collision_count is not None:
        data += (collision_count & 0xFFFFFFFF).to_bytes(4, "little")
    return safe_encode(str(fnv32a(data)))


def _without_hash_label(template: Mapping[str, Any]) -> Mapping[str, Any]:
    labels = (template.get("metadata") or {}).get("labels") or {}
    if POD_TEMPLATE_HASH not in labels:
        return template
    meta = dict(template.get("metadata") or {})
    meta["labels"] = {k: v for k, v in labels.items() if k != POD_TEMPLATE_HASH}
    return {**template, "metadata": meta}


def equal_ignore_hash(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    """Whether two pod templates are equal but for the pod-template-hash label."""
    return _without_hash_label(a) == _without_hash_label(b)


# -- which ReplicaSet is which ------------------------------------------------------------------


def _created_order(rs: Mapping[str, Any]) -> tuple[str, str]:
    meta = rs.get("metadata", {})
    return (meta.get("creationTimestamp", ""), meta.get("name", ""))


def by_creation(replica_sets: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    return sorted(replica_sets, key=_created_order)


def find_new(
    deployment: Mapping[str, Any], replica_sets: Sequence[Mapping[str, Any]], template_hash: str
) -> Mapping[str, Any] | None:
    """FindNewReplicaSet: the oldest ReplicaSet whose template is the Deployment's."""
    template = deployment.get("spec", {}).get("template", {})
    for rs in by_creation(replica_sets):
        labels = rs.get("metadata", {}).get("labels") or {}
        rs_template = rs.get("spec", {}).get("template", {})
        if labels.get(POD_TEMPLATE_HASH) == template_hash or equal_ignore_hash(
            rs_template, template
        ):
            return rs
    return None


def revision(obj: Mapping[str, Any]) -> int:
    text = (obj.get("metadata", {}).get("annotations") or {}).get(REVISION, "")
    try:
        return int(text)
    except ValueError:
        return 0


def max_revision(replica_sets: Sequence[Mapping[str, Any]]) -> int:
    return max((revision(rs) for rs in replica_sets), default=0)


def replicas(obj: Mapping[str, Any]) -> int:
    value = obj.get("spec", {}).get("replicas")
    return value if isinstance(value, int) else 1


def count(obj: Mapping[str, Any], field: str) -> int:
    value = obj.get(field, 0)
    return value if isinstance(value, int) else 0


def status_count(rs: Mapping[str, Any], field: str) -> int:
    return count(rs.get("status") or {}, field)


# -- rolling update fenceposts ------------------------------------------------------------------


def scaled_value(value: int | str | None, total: int, round_up: bool) -> int:
    """intstr.GetScaledValueFromIntOrPercent."""
    if value is None:
        return 0
    if isinstance(value, int):
        return value
    percent = int(value.rstrip("%"))
    exact = percent * total / 100
    return math.ceil(exact) if round_up else math.floor(exact)


def is_rolling(deployment: Mapping[str, Any]) -> bool:
    kind = (deployment.get("spec", {}).get("strategy") or {}).get("type", "RollingUpdate")
    return bool(kind != "Recreate")


def fenceposts(deployment: Mapping[str, Any]) -> tuple[int, int]:
    """ResolveFenceposts: (maxSurge, maxUnavailable); never both 0."""
    rolling = (deployment.get("spec", {}).get("strategy") or {}).get("rollingUpdate") or {}
    desired = replicas(deployment)
    surge = scaled_value(rolling.get("maxSurge", "25%"), desired, True)
    unavailable = scaled_value(rolling.get("maxUnavailable", "25%"), desired, False)
    if surge == 0 and unavailable == 0:
        unavailable = 1
    return surge, unavailable


def max_surge(deployment: Mapping[str, Any]) -> int:
    return fenceposts(deployment)[0] if is_rolling(deployment) else 0


def max_unavailable(deployment: Mapping[str, Any]) -> int:
    desired = replicas(deployment)
    if not is_rolling(deployment) or desired == 0:
        return 0
    return min(fenceposts(deployment)[1], desired)


# -- scaling plans ------------------------------------------------------------------------------


def new_rs_replicas(
    deployment: Mapping[str, Any],
    new_rs: Mapping[str, Any],
    old_rss: Sequence[Mapping[str, Any]],
) -> int:
    """reconcileNewReplicaSet + NewRSNewReplicas: the new ReplicaSet's size for this step."""
    desired = replicas(deployment)
    current = replicas(new_rs)
    if current >= desired:
        return desired
    if not is_rolling(deployment):
        # Recreate: the new pods start once the old ones are gone.
        if any(replicas(rs) or status_count(rs, "replicas") for rs in old_rss):
            return current
        return desired
    all_pods = current + sum(replicas(rs) for rs in old_rss)
    max_total = desired + max_surge(deployment)
    if all_pods >= max_total:
        return current
    return current + min(max_total - all_pods, desired - current)


def old_rs_replicas(
    deployment: Mapping[str, Any],
    new_rs: Mapping[str, Any] | None,
    old_rss: Sequence[Mapping[str, Any]],
) -> dict[str, int]:
    """reconcileOldReplicaSets (rolling) or scaleDownOldReplicaSetsForRecreate: new sizes by name.

    Only ReplicaSets whose size changes are in the result.
    """
    sizes = {rs["metadata"]["name"]: replicas(rs) for rs in old_rss}
    if not is_rolling(deployment):
        return {name: 0 for name, size in sizes.items() if size}
    old_count = sum(sizes.values())
    if old_count == 0:
        return {}
    new_spec = replicas(new_rs) if new_rs is not None else 0
    new_available = status_count(new_rs, "availableReplicas") if new_rs is not None else 0
    min_available = replicas(deployment) - max_unavailable(deployment)
    max_scaled_down = old_count + new_spec - min_available - (new_spec - new_available)
    if max_scaled_down <= 0:
        return {}
    ordered = by_creation(old_rss)
    # Unhealthy old replicas go first (cleanupUnhealthyReplicas).
    cleaned = 0
    for rs in ordered:
        name = rs["metadata"]["name"]
        if cleaned >= max_scaled_down:
            break
        unhealthy = sizes[name] - status_count(rs, "availableReplicas")
        if sizes[name] == 0 or unhealthy <= 0:
            continue
        step = min(max_scaled_down - cleaned, unhealthy)
        sizes[name] -= step
        cleaned += step
    available = new_available + sum(
        min(status_count(rs, "availableReplicas"), sizes[rs["metadata"]["name"]]) for rs in old_rss
    )
    if available > min_available:
        budget = available - min_available
        for rs in ordered:
            name = rs["metadata"]["name"]
            if budget <= 0:
                break
            step = min(sizes[name], budget)
            sizes[name] -= step
            budget -= step
    return {
        rs["metadata"]["name"]: sizes[rs["metadata"]["name"]]
        for rs in old_rss
        if sizes[rs["metadata"]["name"]] != replicas(rs)
    }


def paused_replicas(
    deployment: Mapping[str, Any],
    new_rs: Mapping[str, Any] | None,
    old_rss: Sequence[Mapping[str, Any]],
) -> dict[str, int]:
    """The deployment controller's `scale` for a paused Deployment: no rollout, but the one
    active (or else the newest) ReplicaSet follows spec.replicas. Several active ones (a rollout
    paused half-way) keep their sizes here; upstream scales them proportionally."""
    everything = ([new_rs] if new_rs is not None else []) + list(old_rss)
    active = [rs for rs in everything if replicas(rs) > 0]
    if len(active) > 1:
        return {}
    if active:
        target = active[0]
    elif new_rs is not None:
        target = new_rs
    elif old_rss:
        target = by_creation(old_rss)[-1]
    else:
        return {}
    desired = replicas(deployment)
    if replicas(target) == desired:
        return {}
    return {target["metadata"]["name"]: desired}


# -- the new ReplicaSet -------------------------------------------------------------------------


def new_replica_set(
    deployment: Mapping[str, Any], template_hash: str, rs_revision: int, size: int
) -> dict[str, Any]:
    """The ReplicaSet the deployment controller creates for the current template."""
    meta = deployment["metadata"]
    spec = deployment.get("spec", {})
    template = orjson.loads(orjson.dumps(spec.get("template", {})))
    template.setdefault("metadata", {}).setdefault("labels", {})[POD_TEMPLATE_HASH] = template_hash
    selector = orjson.loads(orjson.dumps(spec.get("selector", {})))
    selector.setdefault("matchLabels", {})[POD_TEMPLATE_HASH] = template_hash
    rs_spec: dict[str, Any] = {"replicas": size, "selector": selector, "template": template}
    if spec.get("minReadySeconds"):
        rs_spec["minReadySeconds"] = spec["minReadySeconds"]
    return {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {
            "name": f"{meta['name']}-{template_hash}",
            "namespace": meta.get("namespace", ""),
            "labels": dict(template["metadata"]["labels"]),
            "annotations": rs_annotations(deployment, rs_revision),
            "ownerReferences": [controller_ref(deployment)],
        },
        "spec": rs_spec,
    }


def rs_annotations(deployment: Mapping[str, Any], rs_revision: int) -> dict[str, str]:
    """The annotations a ReplicaSet of this Deployment carries (SetNewReplicaSetAnnotations)."""
    inherited = deployment["metadata"].get("annotations") or {}
    annotations = {k: v for k, v in inherited.items() if k not in _NOT_COPIED}
    desired = replicas(deployment)
    annotations[REVISION] = str(rs_revision)
    annotations[DESIRED_REPLICAS] = str(desired)
    annotations[MAX_REPLICAS] = str(desired + max_surge(deployment))
    return annotations


def controller_ref(owner: Mapping[str, Any]) -> dict[str, Any]:
    meta = owner["metadata"]
    return {
        "apiVersion": owner.get("apiVersion", ""),
        "kind": owner.get("kind", ""),
        "name": meta["name"],
        "uid": meta["uid"],
        "controller": True,
        "blockOwnerDeletion": True,
    }


def controller_of(obj: Mapping[str, Any]) -> Mapping[str, Any] | None:
    for ref in obj.get("metadata", {}).get("ownerReferences") or ():
        if isinstance(ref, Mapping) and ref.get("controller"):
            return ref
    return None

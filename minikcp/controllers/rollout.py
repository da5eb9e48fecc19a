"""The deployment controller's arithmetic as pure functions over objects (dicts).

Ported from kubernetes pkg/controller/deployment (sync.go, rolling.go, progress.go) and its
util package: the pod-template-hash, which ReplicaSet is new, how far a rolling update may scale,
and the status with its Available and Progressing conditions. Times are epoch seconds; condition
times are written as Kubernetes writes them (RFC 3339, whole seconds).
"""

from __future__ import annotations

import datetime
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
NO_PROGRESS_DEADLINE = 2**31 - 1

# Condition reasons and messages, as deployment util words them.
NEW_RS_CREATED = "NewReplicaSetCreated"
FOUND_NEW_RS = "FoundNewReplicaSet"
RS_UPDATED = "ReplicaSetUpdated"
NEW_RS_AVAILABLE = "NewReplicaSetAvailable"
TIMED_OUT = "ProgressDeadlineExceeded"
PAUSED = "DeploymentPaused"
RESUMED = "DeploymentResumed"
MIN_AVAILABLE = "MinimumReplicasAvailable"
MIN_UNAVAILABLE = "MinimumReplicasUnavailable"

# rand.SafeEncodeString's alphabet: no vowels, no 0/1/3, so no words and no look-alikes.
_SAFE_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"


def rfc3339(at: float) -> str:
    return datetime.datetime.fromtimestamp(int(at), datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_time(text: str) -> float | None:
    try:
        return datetime.datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
    except (ValueError, AttributeError):
        return None


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


def _int(obj: Mapping[str, Any], field: str) -> int:
    value = obj.get(field, 0)
    return value if isinstance(value, int) else 0


def _status_count(rs: Mapping[str, Any], field: str) -> int:
    return _int(rs.get("status") or {}, field)


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
        if any(replicas(rs) or _status_count(rs, "replicas") for rs in old_rss):
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
    new_available = _status_count(new_rs, "availableReplicas") if new_rs is not None else 0
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
        unhealthy = sizes[name] - _status_count(rs, "availableReplicas")
        if sizes[name] == 0 or unhealthy <= 0:
            continue
        step = min(max_scaled_down - cleaned, unhealthy)
        sizes[name] -= step
        cleaned += step
    available = new_available + sum(
        min(_status_count(rs, "availableReplicas"), sizes[rs["metadata"]["name"]]) for rs in old_rss
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


# -- status and conditions ----------------------------------------------------------------------


def condition(status: Mapping[str, Any], kind: str) -> Mapping[str, Any] | None:
    for c in status.get("conditions") or ():
        if isinstance(c, Mapping) and c.get("type") == kind:
            return c
    return None


def set_condition(status: dict[str, Any], new: dict[str, Any]) -> None:
    """SetDeploymentCondition: same status and reason changes nothing; the same status keeps
    its transition time; the condition moves to the end."""
    current = condition(status, new["type"])
    if current is not None and current.get("status") == new["status"]:
        if current.get("reason") == new["reason"]:
            return
        new["lastTransitionTime"] = current.get("lastTransitionTime", new["lastTransitionTime"])
    remove_condition(status, new["type"])
    status.setdefault("conditions", []).append(new)


def remove_condition(status: dict[str, Any], kind: str) -> None:
    kept = [c for c in status.get("conditions") or () if c.get("type") != kind]
    if kept:
        status["conditions"] = kept
    else:
        status.pop("conditions", None)


def new_condition(kind: str, value: str, reason: str, message: str, now: float) -> dict[str, Any]:
    stamp = rfc3339(now)
    return {
        "type": kind,
        "status": value,
        "lastUpdateTime": stamp,
        "lastTransitionTime": stamp,
        "reason": reason,
        "message": message,
    }


def has_progress_deadline(deployment: Mapping[str, Any]) -> bool:
    deadline = deployment.get("spec", {}).get("progressDeadlineSeconds")
    return isinstance(deadline, int) and deadline != NO_PROGRESS_DEADLINE


def complete(deployment: Mapping[str, Any], status: Mapping[str, Any]) -> bool:
    """DeploymentComplete: every replica updated and available, the latest generation seen."""
    desired = replicas(deployment)
    return (
        _int(status, "updatedReplicas") == desired
        and _int(status, "replicas") == desired
        and _int(status, "availableReplicas") == desired
        and _int(status, "observedGeneration") >= _int(deployment["metadata"], "generation")
    )


def progressing(old: Mapping[str, Any], new: Mapping[str, Any]) -> bool:
    """DeploymentProgressing: more updated, ready or available replicas, or fewer old ones."""
    old_olds = _int(old, "replicas") - _int(old, "updatedReplicas")
    new_olds = _int(new, "replicas") - _int(new, "updatedReplicas")
    return (
        _int(new, "updatedReplicas") > _int(old, "updatedReplicas")
        or new_olds < old_olds
        or _int(new, "readyReplicas") > _int(old, "readyReplicas")
        or _int(new, "availableReplicas") > _int(old, "availableReplicas")
    )


def timed_out(deployment: Mapping[str, Any], status: Mapping[str, Any], now: float) -> bool:
    """DeploymentTimedOut: no progress for progressDeadlineSeconds since the last update."""
    if not has_progress_deadline(deployment):
        return False
    cond = condition(status, "Progressing")
    if cond is None or cond.get("reason") == NEW_RS_AVAILABLE:
        return False
    if cond.get("reason") == TIMED_OUT:
        return True
    since = parse_time(cond.get("lastUpdateTime", ""))
    deadline = deployment["spec"]["progressDeadlineSeconds"]
    return since is not None and since + deadline < now


def deployment_status(
    deployment: Mapping[str, Any],
    replica_sets: Sequence[Mapping[str, Any]],
    new_rs: Mapping[str, Any] | None,
    now: float,
    *,
    created_new_rs: bool = False,
) -> dict[str, Any]:
    """calculateStatus followed by syncRolloutStatus: the status the controller writes."""
    old_status: Mapping[str, Any] = deployment.get("status") or {}
    name = deployment["metadata"]["name"]
    paused = bool(deployment.get("spec", {}).get("paused"))
    previous = dict(old_status)
    seeded: dict[str, Any] = {"conditions": list(old_status.get("conditions") or ())}
    _pause_conditions(deployment, seeded, paused, now)
    previous["conditions"] = seeded.get("conditions", [])
    if has_progress_deadline(deployment) and new_rs is not None:
        # getNewReplicaSet records the new ReplicaSet before any progress is estimated.
        rs_name = new_rs["metadata"]["name"]
        if created_new_rs:
            set_condition(
                seeded,
                new_condition(
                    "Progressing",
                    "True",
                    NEW_RS_CREATED,
                    f'Created new replica set "{rs_name}"',
                    now,
                ),
            )
        elif condition(seeded, "Progressing") is None:
            set_condition(
                seeded,
                new_condition(
                    "Progressing", "True", FOUND_NEW_RS, f'Found new replica set "{rs_name}"', now
                ),
            )
        previous["conditions"] = seeded.get("conditions", [])
    available = sum(_status_count(rs, "availableReplicas") for rs in replica_sets)
    total = sum(replicas(rs) for rs in replica_sets)
    status: dict[str, Any] = {
        "observedGeneration": deployment["metadata"].get("generation", 0),
        "replicas": sum(_status_count(rs, "replicas") for rs in replica_sets),
        "updatedReplicas": _status_count(new_rs, "replicas") if new_rs is not None else 0,
        "readyReplicas": sum(_status_count(rs, "readyReplicas") for rs in replica_sets),
        "availableReplicas": available,
        "unavailableReplicas": max(total - available, 0),
    }
    if "collisionCount" in old_status:
        status["collisionCount"] = old_status["collisionCount"]
    if previous.get("conditions"):
        status["conditions"] = [dict(c) for c in previous["conditions"]]
    if available >= replicas(deployment) - max_unavailable(deployment):
        cond = new_condition(
            "Available", "True", MIN_AVAILABLE, "Deployment has minimum availability.", now
        )
    else:
        cond = new_condition(
            "Available",
            "False",
            MIN_UNAVAILABLE,
            "Deployment does not have minimum availability.",
            now,
        )
    set_condition(status, cond)
    if not paused:
        # A paused Deployment is only scaled (the controller's `sync`): no progress estimate.
        _rollout_conditions(deployment, previous, status, new_rs, name, now)
    # Zero counts are left out, as Go's omitempty does.
    for key in ("replicas", "updatedReplicas", "readyReplicas", "availableReplicas"):
        if not status[key]:
            del status[key]
    if not status["unavailableReplicas"]:
        del status["unavailableReplicas"]
    if not status["observedGeneration"]:
        del status["observedGeneration"]
    return status


def _pause_conditions(
    deployment: Mapping[str, Any], status: dict[str, Any], paused: bool, now: float
) -> None:
    """checkPausedConditions: Progressing Unknown while paused, and once resumed."""
    if not has_progress_deadline(deployment):
        return
    current = condition(status, "Progressing")
    if current is not None and current.get("reason") == TIMED_OUT:
        return  # a reported lack of progress is not overwritten
    paused_before = current is not None and current.get("reason") == PAUSED
    if paused and not paused_before:
        set_condition(
            status, new_condition("Progressing", "Unknown", PAUSED, "Deployment is paused", now)
        )
    elif not paused and paused_before:
        set_condition(
            status, new_condition("Progressing", "Unknown", RESUMED, "Deployment is resumed", now)
        )


def _rollout_conditions(
    deployment: Mapping[str, Any],
    previous: Mapping[str, Any],
    status: dict[str, Any],
    new_rs: Mapping[str, Any] | None,
    name: str,
    now: float,
) -> None:
    """syncRolloutStatus: the Progressing condition."""
    if not has_progress_deadline(deployment):
        remove_condition(status, "Progressing")
        return
    current = condition(previous, "Progressing")
    if (
        status["replicas"] == status["updatedReplicas"]
        and current is not None
        and current.get("reason") == NEW_RS_AVAILABLE
    ):
        return
    subject = f'ReplicaSet "{new_rs["metadata"]["name"]}"' if new_rs else f'Deployment "{name}"'
    if complete(deployment, status):
        set_condition(
            status,
            new_condition(
                "Progressing",
                "True",
                NEW_RS_AVAILABLE,
                f"{subject} has successfully progressed.",
                now,
            ),
        )
    elif progressing(previous, status):
        cond = new_condition("Progressing", "True", RS_UPDATED, f"{subject} is progressing.", now)
        if current is not None and current.get("status") == "True":
            cond["lastTransitionTime"] = current.get("lastTransitionTime", cond["lastUpdateTime"])
        # Progress bumps lastUpdateTime even when the reason stays (unlike set_condition).
        remove_condition(status, "Progressing")
        set_condition(status, cond)
    elif timed_out(deployment, status, now):
        set_condition(
            status,
            new_condition(
                "Progressing", "False", TIMED_OUT, f"{subject} has timed out progressing.", now
            ),
        )


def next_progress_check(
    deployment: Mapping[str, Any], status: Mapping[str, Any], now: float
) -> float | None:
    """requeueStuckDeployment: when to look again for a timed-out rollout (None: no need)."""
    cond = condition(status, "Progressing")
    if not has_progress_deadline(deployment) or cond is None:
        return None
    if complete(deployment, status) or cond.get("reason") == TIMED_OUT:
        return None
    since = parse_time(cond.get("lastUpdateTime", ""))
    if since is None:
        return None
    # A second more than the deadline: condition times have whole seconds.
    deadline: int = deployment["spec"]["progressDeadlineSeconds"]
    return max(since + deadline + 1.0, now)

"""A Deployment's status and its Available and Progressing conditions, as the deployment
controller computes them (pkg/controller/deployment sync.go calculateStatus, progress.go
syncRolloutStatus, util SetDeploymentCondition ...), as pure functions over dicts.

Times are epoch seconds; condition times are written as Kubernetes writes them (RFC 3339,
whole seconds), so a status computed again from unchanged inputs is equal and not rewritten.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from minikcp.machinery import timestamps
from minikcp.simulator import rollout

NO_PROGRESS_DEADLINE = 2**31 - 1

# Condition reasons, as deployment util words them.
NEW_RS_CREATED = "NewReplicaSetCreated"
FOUND_NEW_RS = "FoundNewReplicaSet"
RS_UPDATED = "ReplicaSetUpdated"
RS_CREATE_ERROR = "ReplicaSetCreateError"
NEW_RS_AVAILABLE = "NewReplicaSetAvailable"
TIMED_OUT = "ProgressDeadlineExceeded"
PAUSED = "DeploymentPaused"
RESUMED = "DeploymentResumed"
MIN_AVAILABLE = "MinimumReplicasAvailable"
MIN_UNAVAILABLE = "MinimumReplicasUnavailable"


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
    stamp = timestamps.rfc3339(now)
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
    desired = rollout.replicas(deployment)
    return (
        rollout.count(status, "updatedReplicas") == desired
        and rollout.count(status, "replicas") == desired
        and rollout.count(status, "availableReplicas") == desired
        and rollout.count(status, "observedGeneration")
        >= rollout.count(deployment["metadata"], "generation")
    )


def progressing(old: Mapping[str, Any], new: Mapping[str, Any]) -> bool:
    """DeploymentProgressing: more updated, ready or available replicas, or fewer old ones."""
    old_olds = rollout.count(old, "replicas") - rollout.count(old, "updatedReplicas")
    new_olds = rollout.count(new, "replicas") - rollout.count(new, "updatedReplicas")
    return (
        rollout.count(new, "updatedReplicas") > rollout.count(old, "updatedReplicas")
        or new_olds < old_olds
        or rollout.count(new, "readyReplicas") > rollout.count(old, "readyReplicas")
        or rollout.count(new, "availableReplicas") > rollout.count(old, "availableReplicas")
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
    since = timestamps.parse_rfc3339(cond.get("lastUpdateTime", ""))
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
    available = sum(rollout.status_count(rs, "availableReplicas") for rs in replica_sets)
    total = sum(rollout.replicas(rs) for rs in replica_sets)
    status: dict[str, Any] = {
        "observedGeneration": deployment["metadata"].get("generation", 0),
        "replicas": sum(rollout.status_count(rs, "replicas") for rs in replica_sets),
        "updatedReplicas": rollout.status_count(new_rs, "replicas") if new_rs is not None else 0,
        "readyReplicas": sum(rollout.status_count(rs, "readyReplicas") for rs in replica_sets),
        "availableReplicas": available,
        "unavailableReplicas": max(total - available, 0),
    }
    if "collisionCount" in old_status:
        status["collisionCount"] = old_status["collisionCount"]
    if previous.get("conditions"):
        status["conditions"] = [dict(c) for c in previous["conditions"]]
    if available >= rollout.replicas(deployment) - rollout.max_unavailable(deployment):
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
    _replica_failure(status, replica_sets, new_rs)
    # Zero counts are left out, as Go's omitempty does.
    for key in ("replicas", "updatedReplicas", "readyReplicas", "availableReplicas"):
        if not status[key]:
            del status[key]
    if not status["unavailableReplicas"]:
        del status["unavailableReplicas"]
    if not status["observedGeneration"]:
        del status["observedGeneration"]
    return status


def _replica_failure(
    status: dict[str, Any],
    replica_sets: Sequence[Mapping[str, Any]],
    new_rs: Mapping[str, Any] | None,
) -> None:
    """getReplicaFailures: a ReplicaSet's ReplicaFailure (the new one's first) shows here."""
    ordered = ([new_rs] if new_rs is not None else []) + [
        rs for rs in replica_sets if rs is not new_rs
    ]
    for rs in ordered:
        failed = condition(rs.get("status") or {}, "ReplicaFailure")
        if failed is not None:
            since = failed.get("lastTransitionTime", "")
            set_condition(
                status,
                {
                    "type": "ReplicaFailure",
                    "status": failed.get("status", "True"),
                    "lastUpdateTime": since,
                    "lastTransitionTime": since,
                    "reason": failed.get("reason", ""),
                    "message": failed.get("message", ""),
                },
            )
            return
    remove_condition(status, "ReplicaFailure")


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
    since = timestamps.parse_rfc3339(cond.get("lastUpdateTime", ""))
    if since is None:
        return None
    # A second more than the deadline: condition times have whole seconds.
    deadline: int = deployment["spec"]["progressDeadlineSeconds"]
    return max(since + deadline + 1.0, now)

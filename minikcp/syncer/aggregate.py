"""A Deployment's upstream status summarised from its targets' downstream statuses (pure).

Rules after Karmada's observedGeneration gating and the reference design (section 3.6): counts are
summed; a target whose object has not caught up with the upstream generation adds no updated
replicas; a stale (silent) target adds no ready or available replicas; observedGeneration
advances only when every placed target has observed the current generation; Available is the AND
of the targets' Available conditions. So `kubectl rollout status` and `kubectl wait
--for=condition=Available` finish exactly when every target has finished.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

_COUNTS = ("replicas", "updatedReplicas", "readyReplicas", "availableReplicas")


@dataclass(frozen=True, slots=True)
class TargetView:
    """What one target reports for one object (None status: no object there yet)."""

    name: str
    status: Mapping[str, Any] | None = None
    generation: int = 0  # downstream metadata.generation
    upstream_generation: int = 0  # the upstream generation the downstream object was made from
    stale: bool = False  # the target has stopped answering
    error: str = ""  # why the object is not there (e.g. a conflict with an unmanaged object)
    spec: Mapping[str, Any] | None = None  # the downstream object's spec (its share, its partition)


def _conditions(status: Mapping[str, Any] | None) -> dict[str, Mapping[str, Any]]:
    out: dict[str, Mapping[str, Any]] = {}
    for c in (status or {}).get("conditions") or ():
        if isinstance(c, Mapping) and isinstance(c.get("type"), str):
            out[c["type"]] = c
    return out


def count(value: Any) -> int:
    """A status count as an int (absent, null or malformed: 0)."""
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def observed(view: TargetView, generation: int) -> bool:
    """Whether the target's controller has observed the object made from `generation`."""
    if view.status is None or view.stale:
        return False
    return view.upstream_generation >= generation and count(
        view.status.get("observedGeneration")
    ) >= max(view.generation, 1)


def summarise(
    deployment: Mapping[str, Any], views: Sequence[TargetView], now: str
) -> dict[str, Any]:
    """The upstream status for `deployment` given its placed targets' views."""
    meta = deployment.get("metadata", {})
    generation = count(meta.get("generation")) or 1
    spec_replicas = deployment.get("spec", {}).get("replicas", 1)
    previous = deployment.get("status") or {}
    sums = dict.fromkeys(_COUNTS, 0)
    for view in views:
        s = view.status or {}
        sums["replicas"] += count(s.get("replicas"))
        if observed(view, generation) and view.upstream_generation == generation:
            sums["updatedReplicas"] += count(s.get("updatedReplicas"))
        if not view.stale:
            sums["readyReplicas"] += count(s.get("readyReplicas"))
            sums["availableReplicas"] += count(s.get("availableReplicas"))
    status: dict[str, Any] = {}
    all_observed = bool(views) and all(observed(v, generation) for v in views)
    if all_observed:
        status["observedGeneration"] = generation
    elif "observedGeneration" in previous:
        status["observedGeneration"] = previous["observedGeneration"]
    for key in _COUNTS:
        if sums[key]:
            status[key] = sums[key]
    unavailable = max(count(spec_replicas) - sums["availableReplicas"], 0)
    if unavailable:
        status["unavailableReplicas"] = unavailable
    conditions = _summarise_conditions(deployment, views, all_observed)
    status["conditions"] = _keep_times(conditions, _conditions(previous), now)
    return status


def _summarise_conditions(
    deployment: Mapping[str, Any], views: Sequence[TargetView], all_observed: bool
) -> list[dict[str, Any]]:
    name = deployment.get("metadata", {}).get("name", "")
    per_target = {v.name: _conditions(v.status) for v in views}
    stale = sorted(v.name for v in views if v.stale)
    missing = sorted(v.name for v in views if v.status is None and not v.stale)
    out: list[dict[str, Any]] = []

    unavailable = [
        n
        for n, conds in per_target.items()
        if n not in stale and conds.get("Available", {}).get("status") != "True"
    ]
    if stale:
        out.append(
            _cond(
                "Available",
                "False",
                "ClusterUnreachable",
                f"Sync targets not answering: {', '.join(stale)}.",
            )
        )
    elif unavailable:
        out.append(
            _cond(
                "Available",
                "False",
                "MinimumReplicasUnavailable",
                "Deployment does not have minimum availability on "
                f"{', '.join(sorted(unavailable))}.",
            )
        )
    else:
        out.append(
            _cond(
                "Available",
                "True",
                "MinimumReplicasAvailable",
                "Deployment has minimum availability.",
            )
        )

    exceeded = sorted(
        n
        for n, conds in per_target.items()
        if conds.get("Progressing", {}).get("reason") == "ProgressDeadlineExceeded"
    )
    done = all(
        conds.get("Progressing", {}).get("reason") == "NewReplicaSetAvailable"
        for conds in per_target.values()
    )
    if exceeded:
        out.append(
            _cond(
                "Progressing",
                "False",
                "ProgressDeadlineExceeded",
                f'ReplicaSet "{name}" has timed out progressing on {", ".join(exceeded)}.',
            )
        )
    elif done and all_observed and not missing:
        out.append(
            _cond(
                "Progressing",
                "True",
                "NewReplicaSetAvailable",
                f'ReplicaSet "{name}" has successfully progressed.',
            )
        )
    else:
        out.append(
            _cond(
                "Progressing", "True", "ReplicaSetUpdated", f'ReplicaSet "{name}" is progressing.'
            )
        )

    failures = [
        f"{n}: {conds['ReplicaFailure'].get('message', '')}"
        for n, conds in sorted(per_target.items())
        if conds.get("ReplicaFailure", {}).get("status") == "True"
    ]
    failures += [f"{v.name}: {v.error}" for v in views if v.error]
    if failures:
        out.append(_cond("ReplicaFailure", "True", "FailedCreate", "; ".join(failures)))
    return out


def _cond(kind: str, status: str, reason: str, message: str) -> dict[str, Any]:
    return {"type": kind, "status": status, "reason": reason, "message": message}


def _keep_times(
    conditions: list[dict[str, Any]], previous: Mapping[str, Mapping[str, Any]], now: str
) -> list[dict[str, Any]]:
    """As the deployment controller: a condition keeps lastTransitionTime while its status holds,
    and lastUpdateTime while its reason and message hold, so an unchanged input writes nothing."""
    for c in conditions:
        before = previous.get(c["type"])
        same_status = before is not None and before.get("status") == c["status"]
        same_text = (
            same_status
            and before is not None
            and before.get("reason") == c["reason"]
            and before.get("message") == c["message"]
        )
        c["lastUpdateTime"] = before.get("lastUpdateTime", now) if same_text and before else now
        c["lastTransitionTime"] = (
            before.get("lastTransitionTime", now) if same_status and before else now
        )
    return conditions


def status_differs(old: Mapping[str, Any] | None, new: Mapping[str, Any]) -> bool:
    return dict(old or {}) != dict(new)

"""StatefulSet, DaemonSet, CronJob and PersistentVolumeClaim statuses summarised from their
targets' downstream statuses (pure).

StatefulSets and DaemonSets follow the Deployment's rules (`aggregate.py`): counts are summed,
observedGeneration advances only when every target has observed the upstream generation it was
given, a target behind that generation adds no updated pods and a silent one no ready or
available pods. Each target counts at most what it is asked to run (its share of a StatefulSet,
its desiredNumberScheduled), so pods that one target is still removing never stand in for pods
another target lacks: `kubectl rollout status` finishes upstream exactly when it would on every
target (kubectl's viewers: `staging/src/k8s.io/kubectl/pkg/polymorphichelpers/rollout_status.go`).

A CronJob on several targets runs on each: the upstream status holds the latest schedule and
success times and every target's active Jobs. A claim is bound once it is bound everywhere: the
upstream PersistentVolumeClaim shows the status of its least advanced target (Lost, then Pending,
then Bound; ties by target name).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from minikcp.syncer.aggregate import TargetView, count, observed

_CLAIM_PHASES = {"Lost": 0, "Pending": 1, "Bound": 2}


def _generation(obj: Mapping[str, Any]) -> int:
    return count(obj.get("metadata", {}).get("generation")) or 1


def _observed_generation(
    previous: Mapping[str, Any], views: Sequence[TargetView], generation: int
) -> int | None:
    if views and all(observed(v, generation) for v in views):
        return generation
    kept = previous.get("observedGeneration")
    return kept if isinstance(kept, int) else None


def _updated(view: TargetView, generation: int) -> bool:
    """Whether the target's updated pods run the current upstream template."""
    return observed(view, generation) and view.upstream_generation == generation


def stateful_set(sts: Mapping[str, Any], views: Sequence[TargetView], now: str) -> dict[str, Any]:
    """The upstream status of `sts` given its placed targets' views (sorted by name or not)."""
    del now  # StatefulSets carry no condition times
    generation = _generation(sts)
    previous = sts.get("status") or {}
    replicas = ready = current = updated = available = 0
    for view in views:
        s = view.status or {}
        spec = view.spec or {}
        share = count(spec.get("replicas"))
        rolling = (spec.get("updateStrategy") or {}).get("rollingUpdate") or {}
        kept_back = min(count(rolling.get("partition")), share)
        replicas += count(s.get("replicas"))
        current += count(s.get("currentReplicas"))
        if not view.stale:
            ready += min(count(s.get("readyReplicas")), share)
            available += min(count(s.get("availableReplicas")), share)
        if _updated(view, generation):
            updated += min(count(s.get("updatedReplicas")), share - kept_back)
    status: dict[str, Any] = {}
    observed_generation = _observed_generation(previous, views, generation)
    if observed_generation is not None:
        status["observedGeneration"] = observed_generation
    status["replicas"] = replicas
    for key, value in (
        ("readyReplicas", ready),
        ("currentReplicas", current),
        ("updatedReplicas", updated),
    ):
        if value:
            status[key] = value
    status.update(_revisions(views, generation))
    status["availableReplicas"] = available
    return status


def _revisions(views: Sequence[TargetView], generation: int) -> dict[str, str]:
    """currentRevision and updateRevision of one target: the first (by name) still rolling, else
    the first. So they differ upstream exactly while some target's differ, which is what kubectl
    waits on for a StatefulSet without a rollingUpdate block."""
    reporting = sorted((v for v in views if v.status is not None), key=lambda v: v.name)
    if not reporting:
        return {}

    def rolling(view: TargetView) -> bool:
        s = view.status or {}
        return not observed(view, generation) or s.get("currentRevision") != s.get("updateRevision")

    chosen = next((v for v in reporting if rolling(v)), reporting[0]).status or {}
    return {
        key: chosen[key]
        for key in ("currentRevision", "updateRevision")
        if isinstance(chosen.get(key), str) and chosen[key]
    }


def daemon_set(ds: Mapping[str, Any], views: Sequence[TargetView], now: str) -> dict[str, Any]:
    """The upstream status of `ds`: every target runs the whole DaemonSet on its own nodes."""
    del now
    generation = _generation(ds)
    previous = ds.get("status") or {}
    desired = current = misscheduled = ready = updated = available = 0
    for view in views:
        s = view.status or {}
        wanted = count(s.get("desiredNumberScheduled"))
        desired += wanted
        current += count(s.get("currentNumberScheduled"))
        misscheduled += count(s.get("numberMisscheduled"))
        if not view.stale:
            ready += min(count(s.get("numberReady")), wanted)
            available += min(count(s.get("numberAvailable")), wanted)
        if _updated(view, generation):
            updated += min(count(s.get("updatedNumberScheduled")), wanted)
    status: dict[str, Any] = {
        "currentNumberScheduled": current,
        "numberMisscheduled": misscheduled,
        "desiredNumberScheduled": desired,
        "numberReady": ready,
    }
    observed_generation = _observed_generation(previous, views, generation)
    if observed_generation is not None:
        status["observedGeneration"] = observed_generation
    # The daemon set controller's own rule: unavailable = desired - available.
    for key, value in (
        ("updatedNumberScheduled", updated),
        ("numberAvailable", available),
        ("numberUnavailable", desired - available),
    ):
        if value:
            status[key] = value
    return status


def cron_job(cj: Mapping[str, Any], views: Sequence[TargetView], now: str) -> dict[str, Any]:
    """The latest schedule and success times of any target, and all targets' active Jobs (named
    in the upstream namespace, which is where the CronJob is)."""
    del now
    namespace = cj.get("metadata", {}).get("namespace", "")
    active: dict[tuple[str, str], dict[str, Any]] = {}
    times: dict[str, str] = {}
    for view in views:
        s = view.status or {}
        for ref in s.get("active") or ():
            if isinstance(ref, Mapping):
                moved = {**ref, "namespace": namespace} if "namespace" in ref else dict(ref)
                active[(str(ref.get("name", "")), str(ref.get("uid", "")))] = moved
        for key in ("lastScheduleTime", "lastSuccessfulTime"):
            stamp = s.get(key)
            # RFC 3339 times in UTC with a Z compare as strings.
            if isinstance(stamp, str) and stamp > times.get(key, ""):
                times[key] = stamp
    status: dict[str, Any] = {}
    if active:
        status["active"] = [active[k] for k in sorted(active)]
    status.update(sorted(times.items()))
    return status


def persistent_volume_claim(
    pvc: Mapping[str, Any], views: Sequence[TargetView], now: str
) -> dict[str, Any]:
    """The status of the least advanced target's claim (a target without it yet: Pending)."""
    del now
    if not views:
        return dict(pvc.get("status") or {})

    def rank(view: TargetView) -> tuple[int, str]:
        phase = (view.status or {}).get("phase", "Pending")
        return _CLAIM_PHASES.get(phase, _CLAIM_PHASES["Pending"]), view.name

    least = min(views, key=rank)
    if least.status is None:
        return {"phase": "Pending"}
    return dict(least.status)

"""The ReplicaSet controller and the kubelet for one ReplicaSet, or the kubelet for one pod.

The same pass runs a ReplicationController (upstream's replication manager is the ReplicaSet
controller over core/v1): the status resource, the event source and the form of the selector
differ (`PodOwner`).

A ReplicaSet gets pods of its template to its size (extra ones go: not ready first, then the
newest), each pod's status moves along its plan (`pod_lifecycle`), and the ReplicaSet's status
counts them. Pods are claimed first: released when the selector no longer matches them,
adopted when they have no controller and it does. Pods of an earlier ReplicaSet of the same
name do not count; the garbage collector removes them.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from minikcp.machinery import errors, selectors, timestamps
from minikcp.registry.objects import RequestContext, StoredObject
from minikcp.simulator import pod_lifecycle, rollout
from minikcp.simulator.pass_result import PassResult
from minikcp.simulator.workload_objects import WorkloadObjects

REPLICA_FAILURE = "ReplicaFailure"
# Pods a controller does not adopt: finished, or on their way out (FilterActivePods).
_INACTIVE_PHASES = ("Succeeded", "Failed")


@dataclass(frozen=True, slots=True)
class PodOwner:
    """What differs between the ReplicaSet controller and the replication manager: the status
    resource, the event source, and how the owner's selector reads."""

    resource: str
    component: str
    selector: Callable[[Mapping[str, Any]], selectors.LabelSelector]


def _label_selector(rs: Mapping[str, Any]) -> selectors.LabelSelector:
    try:
        return selectors.label_selector_from_dict(rs.get("spec", {}).get("selector"))
    except selectors.InvalidLabelSelectorError:
        return selectors.NOTHING


REPLICA_SET = PodOwner("replicasets", "replicaset-controller", _label_selector)
# How soon a ReplicaSet whose pods could not be created or deleted tries again.
RETRY_FAILED = 5.0


@dataclass(slots=True)
class Outcome:
    """What a pass left: the object as now stored, how many writes, when to look again."""

    obj: Mapping[str, Any]
    writes: int = 0
    next_at: float | None = None

    def due(self, at: float | None) -> None:
        if at is not None and (self.next_at is None or at < self.next_at):
            self.next_at = at


def replica_set_status(
    rs: Mapping[str, Any],
    pods: list[Mapping[str, Any]],
    now: float,
    *,
    failure: tuple[str, str] | None = None,
) -> dict[str, Any]:
    """The ReplicaSet controller's status from its pods (zero counts left out but replicas).

    `failure` is (reason, message) of a failed pod create or delete: a ReplicaFailure condition,
    kept as it was while the failure lasts and removed once one pass succeeds."""
    min_ready = rs.get("spec", {}).get("minReadySeconds", 0) or 0
    template_labels = rs.get("spec", {}).get("template", {}).get("metadata", {}).get("labels") or {}
    status: dict[str, Any] = {"replicas": len(pods)}
    counts = {
        "fullyLabeledReplicas": sum(
            1
            for p in pods
            if template_labels.items() <= (p.get("metadata", {}).get("labels") or {}).items()
        ),
        "readyReplicas": sum(1 for p in pods if pod_lifecycle.is_ready(p)),
        "availableReplicas": sum(1 for p in pods if pod_lifecycle.is_available(p, min_ready, now)),
        "observedGeneration": rs.get("metadata", {}).get("generation", 0),
    }
    status.update({k: v for k, v in counts.items() if v})
    before = [
        c
        for c in (rs.get("status") or {}).get("conditions") or ()
        if isinstance(c, Mapping) and c.get("type") == REPLICA_FAILURE
    ]
    if failure is not None:
        reason, message = failure
        status["conditions"] = before or [
            {
                "type": REPLICA_FAILURE,
                "status": "True",
                "lastTransitionTime": timestamps.rfc3339(now),
                "reason": reason,
                "message": message,
            }
        ]
    return status


async def _claim_pods(
    objects: WorkloadObjects,
    ctx: RequestContext,
    rs: Mapping[str, Any],
    selector: selectors.LabelSelector,
    outcome: Outcome,
) -> list[StoredObject]:
    """ClaimPods (ControllerRefManager): pods it controls that its selector no longer matches
    are released (the owner reference removed), active orphans it matches are adopted (its
    controller reference added). The pods it then controls."""
    claimed: list[StoredObject] = []
    release = functools.partial(_drop_owner, uid=rs["metadata"].get("uid"))
    adopt = functools.partial(_add_owner, ref=rollout.controller_ref(rs))
    for pod in objects.pods_of(ctx.cluster, rs):
        if selector.matches(pod.metadata.get("labels") or {}):
            claimed.append(pod)
            continue
        await objects.update("pods", ctx, pod.view(), release)
        outcome.writes += 1
    for pod in objects.orphan_pods(ctx.cluster, rs["metadata"].get("namespace", "")):
        view = pod.view()
        if view["metadata"].get("deletionTimestamp") or not selector.matches(
            view["metadata"].get("labels") or {}
        ):
            continue
        if (view.get("status") or {}).get("phase") in _INACTIVE_PHASES:
            continue
        try:
            adopted = await objects.update("pods", ctx, view, adopt)
        except errors.StatusError as exc:
            if exc.code not in (404, 409):
                raise
            continue  # gone meanwhile, or another controller's now
        claimed.append(adopted)
        outcome.writes += 1
    return claimed


def _drop_owner(pod: dict[str, Any], uid: str | None) -> None:
    refs = [r for r in pod["metadata"].get("ownerReferences") or () if r.get("uid") != uid]
    if refs:
        pod["metadata"]["ownerReferences"] = refs
    else:
        pod["metadata"].pop("ownerReferences", None)


def _add_owner(pod: dict[str, Any], ref: dict[str, Any]) -> None:
    if rollout.controller_of(pod) is not None:
        # Someone else took it meanwhile: the update refuses (as the apiserver would).
        raise errors.conflict("pods", pod["metadata"]["name"], "already has a controller")
    pod["metadata"]["ownerReferences"] = [*(pod["metadata"].get("ownerReferences") or ()), ref]


def deletion_order(pods: list[StoredObject]) -> list[StoredObject]:
    """Pods to remove first: not ready ones, then the newest (as the ReplicaSet controller)."""
    newest_first = sorted(
        pods,
        key=lambda p: (p.metadata.get("creationTimestamp", ""), p.metadata.get("name", "")),
        reverse=True,
    )
    return sorted(newest_first, key=lambda p: pod_lifecycle.is_ready(p.view()))


def finishes_termination(pod: Mapping[str, Any]) -> bool:
    """The kubelet ends a pod in graceful deletion at once (no containers to stop); finalizers
    still hold it."""
    meta = pod.get("metadata") or {}
    return bool(meta.get("deletionTimestamp")) and not meta.get("finalizers")


async def advance_pod(
    objects: WorkloadObjects,
    options: pod_lifecycle.SimulatorOptions,
    ctx: RequestContext,
    pod: Mapping[str, Any],
    deployment: Mapping[str, Any],
    now: float,
) -> Outcome:
    """The kubelet: the pod's status to the state its plan gives it now."""
    outcome = Outcome(pod)
    plan = pod_lifecycle.pod_plan(pod, deployment, options)
    state, next_change = pod_lifecycle.desired_state(plan, objects.started(pod), now)
    outcome.due(next_change)
    if pod_lifecycle.current_state(pod) != state:
        status = pod_lifecycle.pod_status(pod, state, now)
        outcome.obj = (await objects.write_status("pods", ctx, pod, status)).view()
        outcome.writes += 1
    return outcome


async def advance_pods(
    objects: WorkloadObjects,
    options: pod_lifecycle.SimulatorOptions,
    ctx: RequestContext,
    pods: list[Mapping[str, Any]],
    owner: Mapping[str, Any],
    min_ready: int,
    now: float,
    result: PassResult,
) -> list[Mapping[str, Any]]:
    """The kubelets of a controller's pods, each pod's status to its plan (a terminating pod is
    left as it is); the pass is due again at the next change. Returns the pods as now stored."""
    views = []
    for pod in pods:
        if pod.get("metadata", {}).get("deletionTimestamp"):
            views.append(pod)
            continue
        outcome = await advance_pod(objects, options, ctx, pod, owner, now)
        result.writes += outcome.writes
        # A pod that changed (became Ready) may let the next step go.
        result.again = result.again or bool(outcome.writes)
        result.due(outcome.next_at)
        ready = pod_lifecycle.is_ready(outcome.obj)
        if ready and not pod_lifecycle.is_available(outcome.obj, min_ready, now):
            result.due(now + 1.0)
        views.append(outcome.obj)
    return views


async def sync_replica_set(
    objects: WorkloadObjects,
    options: pod_lifecycle.SimulatorOptions,
    ctx: RequestContext,
    rs: Mapping[str, Any],
    deployment: Mapping[str, Any],
    now: float,
    owner: PodOwner = REPLICA_SET,
) -> Outcome:
    """Pods to the ReplicaSet's size, each pod's status to its plan, then the RS status
    (`owner`: a ReplicationController's resource, events and selector for one). Pods are
    claimed first; each pod created or deleted is an event on the owner, as the controllers'
    pod control records them."""
    outcome = Outcome(rs)
    pods = []
    for pod in await _claim_pods(objects, ctx, rs, owner.selector(rs), outcome):
        if not pod.metadata.get("deletionTimestamp"):
            pods.append(pod)
        elif finishes_termination(pod.view()):
            await objects.delete_pod(ctx, pod.view())
            outcome.writes += 1
    component = owner.component
    resource = owner.resource
    want = rollout.replicas(rs)
    failure: tuple[str, str] | None = None
    try:
        if len(pods) > want:
            for pod in deletion_order(pods)[: len(pods) - want]:
                await objects.delete_pod(ctx, pod.view())
                pods.remove(pod)
                outcome.writes += 1
                message = f"Deleted pod: {pod.metadata['name']}"
                await objects.record_event(ctx, rs, "SuccessfulDelete", message, component)
        for _ in range(want - len(pods)):
            created = await objects.create_pod(ctx, rs)
            pods.append(created)
            outcome.writes += 1
            message = f"Created pod: {created.metadata['name']}"
            await objects.record_event(ctx, rs, "SuccessfulCreate", message, component)
    except errors.StatusError as exc:
        # As the ReplicaSet controller: say why in a condition, and try again later.
        failure = ("FailedCreate" if len(pods) < want else "FailedDelete", exc.message)
        outcome.due(now + RETRY_FAILED)
    views: list[Mapping[str, Any]] = []
    for pod in pods:
        advanced = await advance_pod(objects, options, ctx, pod.view(), deployment, now)
        outcome.writes += advanced.writes
        outcome.due(advanced.next_at)
        views.append(advanced.obj)
    min_ready = rs.get("spec", {}).get("minReadySeconds", 0) or 0
    if min_ready and any(
        pod_lifecycle.is_ready(v) and not pod_lifecycle.is_available(v, min_ready, now)
        for v in views
    ):
        outcome.due(now + 1.0)
    status = replica_set_status(rs, views, now, failure=failure)
    if status != (rs.get("status") or {}):
        outcome.obj = (await objects.write_status(resource, ctx, rs, status)).view()
        outcome.writes += 1
    return outcome

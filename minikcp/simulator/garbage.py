"""What the garbage collector would do for the simulated controllers' children, in one place.

A child (pod, ControllerRevision, Job) whose controller reference names an owner that is gone,
or that now has another uid (deleted and created again), is deleted, with pods at once. Owners
call `collect` on every pass; once a garbage collector runs in the process this module goes.
"""

from __future__ import annotations

from typing import Any

from minikcp.registry.objects import RequestContext
from minikcp.simulator import job_pods, rollout
from minikcp.simulator.workload_objects import WorkloadObjects


async def collect(
    objects: WorkloadObjects,
    ctx: RequestContext,
    namespace: str,
    owner_kind: str,
    owner_name: str,
    owner_uid: str | None,
    resources: tuple[str, ...],
) -> int:
    """Delete the children in `resources` of (owner_kind, owner_name) not controlled by the
    owner of `owner_uid` (None: the owner is gone or going). Returns how many were deleted."""
    deleted = 0
    for plural in resources:
        for child in objects.owned(plural, ctx.cluster, namespace, owner_kind, owner_name):
            ref = rollout.controller_of(child.view())
            if owner_uid is not None and ref is not None and ref.get("uid") == owner_uid:
                continue
            if plural == "jobs":
                # Background propagation: the Job's pods go with it.
                job = child.view()
                await collect(
                    objects, ctx, namespace, "Job", job["metadata"]["name"], None, ("pods",)
                )
            if job_pods.TRACKING_FINALIZER in (child.metadata.get("finalizers") or ()):
                await objects.update("pods", ctx, child.view(), _release)
            await objects.delete(plural, ctx, child.view())
            deleted += 1
    return deleted


def _release(pod: dict[str, Any]) -> None:
    """The Job controller lets go of a pod of a Job that is gone."""
    finalizers = pod["metadata"].get("finalizers") or []
    pod["metadata"]["finalizers"] = [f for f in finalizers if f != job_pods.TRACKING_FINALIZER]

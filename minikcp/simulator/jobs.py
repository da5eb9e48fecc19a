"""The Job controller, the TTL-after-finished controller and Job pods' kubelets, one Job per
pass.

A pass runs the Job's pods (Running and Ready, then Succeeded or Failed after their run time,
`job_pods`), counts finished pods once (removing their tracking finalizer, as upstream),
creates or deletes pods as `job_pods.next_steps` says, and writes the status: startTime,
active/ready/terminating, succeeded/failed (and completedIndexes), and at the end the interim
and the terminal condition with completionTime. A finished Job with ttlSecondsAfterFinished
is deleted when that time is up (in the foreground). Deleting a Job's pods with it is the
garbage collector's; the Job controller only lets go of them: the tracking finalizer goes from a
pod whose Job is gone, was replaced, has finished or is being deleted (once the pod is
terminating), and from a pod with no controller (`release_orphan`), as upstream's orphan-pod
worker does, so nothing holds a pod the collector deletes or `--cascade=orphan` leaves.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from minikcp.machinery import propagation, timestamps
from minikcp.registry.objects import RequestContext, StoredObject
from minikcp.simulator import job_pods, pod_lifecycle, replica_set_pass, rollout
from minikcp.simulator.kind_controller import KindController, KindPass
from minikcp.simulator.pass_result import PassResult
from minikcp.simulator.workload_objects import WorkloadObjects

KIND = "Job"
_COMPONENT = "job-controller"
_TERMINAL = {"SuccessCriteriaMet": "Complete", "FailureTarget": "Failed"}


class JobController(KindController):
    kind = KIND
    group = "batch"
    resource = "jobs"
    # Indexed by their CronJob, for the CronJob controller.
    owner_kind = "CronJob"

    def _changed(self, new: StoredObject | None, old: StoredObject | None) -> None:
        super()._changed(new, old)
        obj = new or old
        assert obj is not None
        self._enqueue("", obj)  # its CronJob, if any

    async def sync(self, ctx: RequestContext, namespace: str, name: str, now: float) -> PassResult:
        found = await self._objects.find("jobs", ctx, namespace, name)
        result = PassResult()
        result.writes += await self._let_go(ctx, namespace, name, found)
        if found is None or found.metadata.get("deletionTimestamp"):
            return result
        await _JobPass(self._objects, self._options, ctx, found.view(), now, result).run()
        if result.writes:
            # Our writes wake nobody through the informer: tell the CronJob, if any.
            self._enqueue("", found)
        return result

    async def _let_go(
        self, ctx: RequestContext, namespace: str, name: str, found: StoredObject | None
    ) -> int:
        """syncOrphanPod and cleanupPodFinalizers for the pods whose controller reference names
        this Job: the tracking finalizer goes unless a running Job of that uid still counts the
        pod; a terminating pod nothing holds any more ends (the kubelet)."""
        job = found.view() if found is not None else None
        uid = job["metadata"].get("uid") if job is not None else None
        deleting = job is not None and bool(job["metadata"].get("deletionTimestamp"))
        finished = job is not None and job_pods.is_finished_job(job)
        writes = 0
        for stored in self._objects.owned("pods", ctx.cluster, namespace, KIND, name):
            pod = stored.view()
            ours = (rollout.controller_of(pod) or {}).get("uid") == uid
            settled = bool(pod["metadata"].get("deletionTimestamp")) or job_pods.is_finished(pod)
            # A Job being deleted no longer runs its pass, but still lets go of the pods the
            # collector deletes, as trackJobStatusAndRemoveFinalizers does.
            if ours and not finished and not (deleting and settled):
                continue
            if _tracked(pod):
                released = await self._objects.update("pods", ctx, pod, _drop_tracking_finalizer)
                pod = released.view()
                writes += 1
            if replica_set_pass.finishes_termination(pod):
                await self._objects.delete("pods", ctx, pod)
                writes += 1
        return writes


async def release_orphan(
    objects: WorkloadObjects, ctx: RequestContext, pod: Mapping[str, Any]
) -> tuple[Mapping[str, Any], int]:
    """syncOrphanPod for a pod with no controller (the garbage collector orphaned it): its
    tracking finalizer goes. Returns the pod as it is now and the writes."""
    if rollout.controller_of(pod) is not None or not _tracked(pod):
        return pod, 0
    return (await objects.update("pods", ctx, pod, _drop_tracking_finalizer)).view(), 1


class _JobPass(KindPass):
    kind = KIND

    async def run(self) -> None:
        job = self.obj
        status: Mapping[str, Any] = job.get("status") or {}
        if job_pods.is_finished_job(job):
            await self._expire(status)
            return
        owned = self.controlled("pods")
        active: list[Mapping[str, Any]] = []
        counted: list[Mapping[str, Any]] = []
        terminating = 0
        for pod in owned:
            if pod["metadata"].get("deletionTimestamp"):
                if job_pods.TRACKING_FINALIZER in (pod["metadata"].get("finalizers") or ()):
                    counted.append(pod)
                elif replica_set_pass.finishes_termination(pod):
                    await self.objects.delete("pods", self.ctx, pod)
                    self.result.writes += 1
                terminating += 1
                continue
            if not job_pods.is_finished(pod):
                pod = await self._kubelet(pod)
            if job_pods.is_finished(pod):
                if job_pods.TRACKING_FINALIZER in (pod["metadata"].get("finalizers") or ()):
                    counted.append(pod)
            else:
                active.append(pod)
        succeeded = status.get("succeeded", 0)
        failed = status.get("failed", 0)
        indexes = job_pods.parse_indexes(status.get("completedIndexes", ""))
        for pod in counted:
            if job_pods.phase(pod) == "Succeeded":
                succeeded += 1
                index = job_pods.index_of(pod)
                if index is not None:
                    indexes.add(index)
            else:
                failed += 1
        suspended = bool(job.get("spec", {}).get("suspend"))
        started = timestamps.parse_rfc3339(status.get("startTime", ""))
        if started is None and not suspended:
            started = self.now
        steps = job_pods.next_steps(job, active, succeeded, failed, indexes, started, self.now)
        doomed = {n for n in steps.delete}
        for pod in [p for p in active if p["metadata"]["name"] in doomed]:
            await self._release(pod)
            await self.objects.delete("pods", self.ctx, pod)
            active.remove(pod)
            self.result.writes += 2
            await self._event("SuccessfulDelete", f"Deleted pod: {pod['metadata']['name']}")
            if steps.finish is not None and steps.finish[0] == "FailureTarget":
                failed += 1
        for index in steps.create:
            body = job_pods.new_pod(job, index, self.objects.next_node())
            created = await self.objects.create("pods", self.ctx, body)
            active.append(created.view())
            self.result.writes += 1
            self.result.again = True
            await self._event("SuccessfulCreate", f"Created pod: {created.metadata['name']}")
        conditions = [dict(c) for c in status.get("conditions") or ()]
        completed = None
        if steps.finish is not None:
            completed = _finish(conditions, steps.finish, self.now)
        resumed = _suspension(conditions, suspended, self.now)
        new_status = _job_status(
            job,
            conditions,
            timestamps.rfc3339(self.now) if resumed else status.get("startTime"),
            completed,
            active,
            (succeeded, failed, terminating),
            indexes,
            started,
        )
        if new_status != (job.get("status") or {}):
            await self.objects.write_status("jobs", self.ctx, job, new_status)
            self.result.writes += 1
            # Finished now: the next pass starts the TTL clock.
            self.result.again = self.result.again or steps.finish is not None
            if steps.finish is not None and steps.finish[0] == "SuccessCriteriaMet":
                await self._event("Completed", "Job completed")
            elif steps.finish is not None:
                await self._event(steps.finish[1], steps.finish[2], "Warning")
        # Counted now: their finalizers go (after the status holds them, as upstream).
        for pod in counted:
            await self._release(pod)
            if pod["metadata"].get("deletionTimestamp"):
                self.result.again = True  # the kubelet ends it, now that nothing holds it
        deadline = job.get("spec", {}).get("activeDeadlineSeconds")
        if isinstance(deadline, int) and started is not None and steps.finish is None:
            self.result.due(started + deadline)

    async def _event(self, reason: str, message: str, event_type: str = "Normal") -> None:
        await self.objects.record_event(self.ctx, self.obj, reason, message, _COMPONENT, event_type)

    async def _kubelet(self, pod: Mapping[str, Any]) -> Mapping[str, Any]:
        """Running and Ready at once; Succeeded or Failed after its run time, or restarting its
        container (OnFailure)."""
        run_for, fails = job_pods.run_plan(pod, self.obj, self.options)
        started = self.objects.started(pod)
        ends = started + run_for
        if fails and (pod.get("spec") or {}).get("restartPolicy") == "OnFailure":
            plan = pod_lifecycle.Plan(pod_lifecycle.Behaviour.CRASH_LOOP, run_for)
            state, next_change = pod_lifecycle.desired_state(plan, started, self.now)
            if self.now < ends:
                state = pod_lifecycle.State(ready=True)  # running until its first exit
            self.result.due(next_change)
            if pod_lifecycle.current_state(pod) == state:
                return pod
            status = pod_lifecycle.pod_status(pod, state, self.now)
        elif self.now >= ends:
            status = job_pods.finished_status(pod, not fails, self.now)
        elif pod_lifecycle.current_state(pod) is None:
            status = pod_lifecycle.pod_status(pod, pod_lifecycle.State(ready=True), self.now)
            self.result.due(ends)
        else:
            self.result.due(ends)
            return pod
        self.result.writes += 1
        return (await self.objects.write_status("pods", self.ctx, pod, status)).view()

    async def _release(self, pod: Mapping[str, Any]) -> None:
        """Remove the tracking finalizer: the Job has counted the pod."""
        if not _tracked(pod):
            return
        await self.objects.update("pods", self.ctx, pod, _drop_tracking_finalizer)
        self.result.writes += 1

    async def _expire(self, status: Mapping[str, Any]) -> None:
        """The TTL-after-finished controller: delete the Job once its time is up."""
        ttl = self.obj.get("spec", {}).get("ttlSecondsAfterFinished")
        finished = timestamps.parse_rfc3339(status.get("completionTime", "")) or next(
            (
                timestamps.parse_rfc3339(c.get("lastTransitionTime", ""))
                for c in status.get("conditions") or ()
                if c.get("type") in ("Complete", "Failed")
            ),
            None,
        )
        if not isinstance(ttl, int) or finished is None:
            return
        if self.now < finished + ttl:
            self.result.due(finished + ttl)
            return
        # As ttlafterfinished: in the foreground, so the Job goes after its pods.
        await self.objects.delete(
            "jobs", self.ctx, self.obj, propagation=propagation.FOREGROUND_POLICY
        )
        self.result.writes += 1


def _tracked(pod: Mapping[str, Any]) -> bool:
    return job_pods.TRACKING_FINALIZER in (pod["metadata"].get("finalizers") or ())


def _drop_tracking_finalizer(pod: dict[str, Any]) -> None:
    kept = [f for f in pod["metadata"].get("finalizers") or () if f != job_pods.TRACKING_FINALIZER]
    if kept:
        pod["metadata"]["finalizers"] = kept
    else:
        pod["metadata"].pop("finalizers", None)


def _job_status(
    job: Mapping[str, Any],
    conditions: list[dict[str, Any]],
    start_time: str | None,
    completion_time: str | None,
    active: list[Mapping[str, Any]],
    counts: tuple[int, int, int],
    indexes: set[int],
    started: float | None,
) -> dict[str, Any]:
    """The Job's status in Go's field order (omitempty fields left out when empty)."""
    succeeded, failed, terminating = counts
    status: dict[str, Any] = {}
    if conditions:
        status["conditions"] = conditions
    if start_time is None and started is not None:
        start_time = timestamps.rfc3339(started)
    if start_time is not None:
        status["startTime"] = start_time
    if completion_time is not None:
        status["completionTime"] = completion_time
    if active:
        status["active"] = len(active)
    if succeeded:
        status["succeeded"] = succeeded
    if failed:
        status["failed"] = failed
    status["terminating"] = terminating
    if job_pods.is_indexed(job) and indexes:
        status["completedIndexes"] = job_pods.format_indexes(indexes)
    status["uncountedTerminatedPods"] = {}
    status["ready"] = sum(1 for p in active if pod_lifecycle.is_ready(p))
    return status


def _finish(
    conditions: list[dict[str, Any]], finish: tuple[str, str, str], now: float
) -> str | None:
    """The interim condition and the terminal one (no pods are left running: they were deleted
    at once); the completionTime of a success."""
    kind, reason, message = finish
    stamp = timestamps.rfc3339(now)
    for condition_type in (kind, _TERMINAL[kind]):
        if any(c.get("type") == condition_type for c in conditions):
            continue
        conditions.append(_condition(condition_type, "True", reason, message, stamp))
    return stamp if kind == "SuccessCriteriaMet" else None


def _suspension(conditions: list[dict[str, Any]], suspended: bool, now: float) -> bool:
    """The Suspended condition: True while spec.suspend, False (JobResumed) after. Returns
    whether the Job was resumed now (its startTime starts again)."""
    current = next((c for c in conditions if c.get("type") == "Suspended"), None)
    was_suspended = current is not None and current.get("status") == "True"
    if suspended == was_suspended:
        return False
    stamp = timestamps.rfc3339(now)
    new = (
        _condition("Suspended", "True", "JobSuspended", "Job suspended", stamp)
        if suspended
        else _condition("Suspended", "False", "JobResumed", "Job resumed", stamp)
    )
    conditions[:] = [c for c in conditions if c.get("type") != "Suspended"] + [new]
    return not suspended


def _condition(kind: str, value: str, reason: str, message: str, stamp: str) -> dict[str, Any]:
    return {
        "type": kind,
        "status": value,
        "lastProbeTime": stamp,
        "lastTransitionTime": stamp,
        "reason": reason,
        "message": message,
    }

"""The CronJob controller, one CronJob per pass, on the simulated clock (`--simulated-clock-offset`
seconds ahead of the real one).

A pass reconciles `status.active` with the CronJob's Jobs (finished ones leave it and a success
sets `lastSuccessfulTime`), starts the Job due now (`cronjob_plans.decide`; Replace deletes the
running ones first), writes the status, deletes finished Jobs beyond the history limits, and
comes back at the next activation. Jobs it deletes itself (history, Replace) go with
`propagationPolicy: Background`, as upstream's, so the garbage collector deletes their pods; what
a deleted CronJob owned is the collector's.
"""

from __future__ import annotations

import datetime
import time
from collections.abc import Mapping
from typing import Any

from minikcp.machinery import cron_schedule, errors, propagation, timestamps
from minikcp.registry.objects import RequestContext
from minikcp.simulator import cronjob_plans
from minikcp.simulator.kind_controller import KindController
from minikcp.simulator.pass_result import PassResult

KIND = "CronJob"
_COMPONENT = "cronjob-controller"


class CronJobController(KindController):
    kind = KIND
    group = "batch"
    resource = "cronjobs"

    async def sync(self, ctx: RequestContext, namespace: str, name: str, now: float) -> PassResult:
        objects = self._objects
        result = PassResult()
        # A CronJob being deleted starts nothing; its Jobs are the collector's.
        cj = await self._live(ctx, namespace, name)
        if cj is None:
            return result
        try:
            schedule = cron_schedule.parse(cj.get("spec", {}).get("schedule", ""))
        except cron_schedule.CronError as exc:
            await objects.record_event(ctx, cj, "UnparseableSchedule", str(exc), _COMPONENT)
            return result
        clock = time.time() + self._options.clock_offset
        jobs = objects.controlled("jobs", ctx.cluster, KIND, cj)
        status = dict(cj.get("status") or {})
        running, finished = cronjob_plans.reconcile_active(status, jobs)
        for job in finished:
            outcome = cronjob_plans.finished(job)
            await objects.record_event(
                ctx,
                cj,
                "SawCompletedJob",
                f"Saw completed job: {job['metadata']['name']}, condition: {outcome}",
                _COMPONENT,
            )
        decision = cronjob_plans.decide(
            cj, schedule, clock, [j["metadata"]["name"] for j in running]
        )
        if decision.skipped:
            await objects.record_event(
                ctx, cj, decision.skipped, _skip_message(decision), _COMPONENT
            )
        if decision.scheduled is not None:
            if decision.replace:
                for job in running:
                    await self._delete_job(ctx, job)
                    jobs.remove(job)
                    result.writes += 1
                status["active"] = []
            created = await self._start(ctx, cj, decision.scheduled, result)
            if created is not None:
                status["active"] = [*status.get("active", []), cronjob_plans.job_ref(created)]
                jobs.append(created)
            status["lastScheduleTime"] = timestamps.rfc3339(decision.scheduled.timestamp())
        if not status.get("active"):
            status.pop("active", None)
        if status != (cj.get("status") or {}):
            await objects.write_status("cronjobs", ctx, cj, status)
            result.writes += 1
        doomed = set(cronjob_plans.history_surplus(cj, jobs))
        for job in [j for j in jobs if j["metadata"]["name"] in doomed]:
            await self._delete_job(ctx, job)
            result.writes += 1
        upcoming = cronjob_plans.next_activation(cj, schedule, clock)
        if upcoming is not None:
            result.due(upcoming - self._options.clock_offset)
        return result

    async def _delete_job(self, ctx: RequestContext, job: Mapping[str, Any]) -> None:
        """deleteJob: in the background, so the garbage collector takes the Job's pods (a Job's
        own default would orphan them)."""
        await self._objects.delete("jobs", ctx, job, propagation=propagation.BACKGROUND_POLICY)

    async def _start(
        self,
        ctx: RequestContext,
        cj: Mapping[str, Any],
        scheduled: datetime.datetime,
        result: PassResult,
    ) -> Mapping[str, Any] | None:
        body = cronjob_plans.new_job(cj, scheduled)
        try:
            stored = await self._objects.create("jobs", ctx, body)
        except errors.StatusError as exc:
            if exc.reason == "AlreadyExists":
                return None  # started already (by an earlier pass that did not record it)
            await self._objects.record_event(
                ctx, cj, "FailedCreate", f"Error creating job: {exc.message}", _COMPONENT
            )
            raise
        result.writes += 1
        # Recorded in the informer at once, so no watch event wakes the Job controller: we do.
        self._enqueue("Job", stored)
        await self._objects.record_event(
            ctx, cj, "SuccessfulCreate", f"Created job {body['metadata']['name']}", _COMPONENT
        )
        return stored.view()


def _skip_message(decision: cronjob_plans.Decision) -> str:
    if decision.skipped == "JobAlreadyActive":
        return (
            "Not starting job because prior execution is running and concurrency policy is Forbid"
        )
    return "Missed scheduled time to start a job"

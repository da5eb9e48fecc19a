"""The CronJob controller's decisions as pure functions (pkg/controller/cronjob).

Times are timezone-aware datetimes in the CronJob's `spec.timeZone` (UTC when unset). The
activation due now is the most recent schedule time after the last one (or the CronJob's
creation), no later than `startingDeadlineSeconds` ago; a Job for it is named
`<cronjob>-<scheduled time in minutes since the epoch>` and carries the scheduled time in
`batch.kubernetes.io/cronjob-scheduled-timestamp`. Forbid skips an activation while a Job
runs, Replace deletes the running ones first; finished Jobs beyond the history limits go,
oldest first.
"""

from __future__ import annotations

import datetime
import zoneinfo
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from minikcp.machinery import cron_schedule, timestamps
from minikcp.simulator import rollout

SCHEDULED_ANNOTATION = "batch.kubernetes.io/cronjob-scheduled-timestamp"
# Beyond this many missed activations upstream warns (TooManyMissedTimes) and starts the last.
MANY_MISSED = 100


def zone(cj: Mapping[str, Any]) -> datetime.tzinfo:
    name = cj.get("spec", {}).get("timeZone")
    if isinstance(name, str) and name:
        try:
            return zoneinfo.ZoneInfo(name)
        except (zoneinfo.ZoneInfoNotFoundError, ValueError):
            pass
    return datetime.UTC


def at(seconds: float, tz: datetime.tzinfo) -> datetime.datetime:
    return datetime.datetime.fromtimestamp(seconds, tz)


def _stamp(obj: Mapping[str, Any], *path: str) -> float | None:
    value: Any = obj
    for key in path:
        value = value.get(key) if isinstance(value, Mapping) else None
    return timestamps.parse_rfc3339(value) if isinstance(value, str) else None


def most_recent(
    cj: Mapping[str, Any], schedule: cron_schedule.Schedule, now: float
) -> tuple[datetime.datetime | None, int]:
    """mostRecentScheduleTime: the latest activation due by `now` not yet started, and how many
    activations that one stands for (missed ones included)."""
    tz = zone(cj)
    earliest = _stamp(cj, "status", "lastScheduleTime") or _stamp(
        cj, "metadata", "creationTimestamp"
    )
    if earliest is None:
        earliest = now
    deadline = cj.get("spec", {}).get("startingDeadlineSeconds")
    if isinstance(deadline, int):
        earliest = max(earliest, now - deadline)
    latest: datetime.datetime | None = None
    count = 0
    t = schedule.next(at(earliest, tz))
    while t is not None and t.timestamp() <= now:
        latest, count = t, count + 1
        if count > MANY_MISSED:
            # Jump near `now` rather than walking every missed minute.
            count, latest = MANY_MISSED + 1, _last_before(schedule, at(now, tz), latest)
            break
        t = schedule.next(t)
    return latest, count


def _last_before(
    schedule: cron_schedule.Schedule, now: datetime.datetime, fallback: datetime.datetime
) -> datetime.datetime:
    latest = fallback
    t = schedule.next(now - datetime.timedelta(days=1))
    while t is not None and t <= now:
        latest = t
        t = schedule.next(t)
    return latest


def next_activation(
    cj: Mapping[str, Any], schedule: cron_schedule.Schedule, now: float
) -> float | None:
    """When the controller should look again: the next activation after `now`."""
    t = schedule.next(at(now, zone(cj)))
    return t.timestamp() if t is not None else None


def job_name(cj: Mapping[str, Any], scheduled: datetime.datetime) -> str:
    return f"{cj['metadata']['name']}-{int(scheduled.timestamp()) // 60}"


def rfc3339_in_zone(t: datetime.datetime) -> str:
    """Go's time.RFC3339 of a time in its zone: `Z` for UTC, else the offset."""
    text = t.replace(microsecond=0).isoformat()
    return text.replace("+00:00", "Z") if t.utcoffset() == datetime.timedelta(0) else text


def new_job(cj: Mapping[str, Any], scheduled: datetime.datetime) -> dict[str, Any]:
    """getJobFromTemplate2: the job template, named for its scheduled time, owned by the
    CronJob."""
    meta = cj["metadata"]
    template = cj.get("spec", {}).get("jobTemplate") or {}
    template_meta = template.get("metadata") or {}
    annotations = dict(template_meta.get("annotations") or {})
    annotations[SCHEDULED_ANNOTATION] = rfc3339_in_zone(scheduled)
    job_meta: dict[str, Any] = {
        "name": job_name(cj, scheduled),
        "namespace": meta.get("namespace", ""),
        "annotations": annotations,
        "ownerReferences": [rollout.controller_ref(cj)],
    }
    if template_meta.get("labels"):
        job_meta["labels"] = dict(template_meta["labels"])
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": job_meta,
        "spec": dict(template.get("spec") or {}),
    }


def job_ref(job: Mapping[str, Any]) -> dict[str, Any]:
    meta = job["metadata"]
    return {
        "kind": "Job",
        "namespace": meta.get("namespace", ""),
        "name": meta["name"],
        "uid": meta.get("uid", ""),
        "apiVersion": "batch/v1",
        "resourceVersion": meta.get("resourceVersion", ""),
    }


def finished(job: Mapping[str, Any]) -> str | None:
    """ "Complete" or "Failed" once the Job has finished, else None."""
    for c in (job.get("status") or {}).get("conditions") or ():
        if c.get("type") in ("Complete", "Failed") and c.get("status") == "True":
            return str(c["type"])
    return None


def reconcile_active(
    status: dict[str, Any], jobs: list[Mapping[str, Any]]
) -> tuple[list[Mapping[str, Any]], list[Mapping[str, Any]]]:
    """As syncCronJob: references to Jobs that are gone or finished leave `status.active`, and
    any succeeded Job moves lastSuccessfulTime forward. Returns the running Jobs of the active
    list and the finished ones that left it."""
    active_uids = {ref.get("uid") for ref in status.get("active") or ()}
    left: list[Mapping[str, Any]] = []
    for job in jobs:
        outcome = finished(job)
        if outcome is None:
            continue
        if job["metadata"].get("uid") in active_uids:
            left.append(job)
        completed = (job.get("status") or {}).get("completionTime")
        if outcome == "Complete" and completed:
            last = status.get("lastSuccessfulTime")
            if last is None or completed > last:
                status["lastSuccessfulTime"] = completed
    running = {j["metadata"].get("uid"): j for j in jobs if finished(j) is None}
    status["active"] = [ref for ref in status.get("active") or () if ref.get("uid") in running]
    kept = {ref.get("uid") for ref in status["active"]}
    return [j for uid, j in running.items() if uid in kept], left


def history_surplus(cj: Mapping[str, Any], jobs: Sequence[Mapping[str, Any]]) -> list[str]:
    """cleanupFinishedJobs: names of finished Jobs beyond successfulJobsHistoryLimit (3) and
    failedJobsHistoryLimit (1), oldest (by start time) first."""
    spec = cj.get("spec", {})
    out: list[str] = []
    for kind, field_name, default in (
        ("Complete", "successfulJobsHistoryLimit", 3),
        ("Failed", "failedJobsHistoryLimit", 1),
    ):
        limit = spec.get(field_name, default)
        limit = limit if isinstance(limit, int) else default
        done = [j for j in jobs if finished(j) == kind]
        done.sort(
            key=lambda j: ((j.get("status") or {}).get("startTime") or "", j["metadata"]["name"])
        )
        out.extend(j["metadata"]["name"] for j in done[: max(len(done) - limit, 0)])
    return out


@dataclass(frozen=True, slots=True)
class Decision:
    """What to do now: start a Job for `scheduled` (after deleting the running ones if
    `replace`), or nothing, with the reason (an upstream event reason) when one was skipped."""

    scheduled: datetime.datetime | None = None
    replace: bool = False
    skipped: str = ""
    missed: int = 0


def decide(
    cj: Mapping[str, Any],
    schedule: cron_schedule.Schedule,
    now: float,
    active: Sequence[str],
) -> Decision:
    """syncCronJob's scheduling: `active` are the names of the CronJob's running Jobs."""
    spec = cj.get("spec", {})
    if spec.get("suspend"):
        return Decision()
    scheduled, missed = most_recent(cj, schedule, now)
    if scheduled is None:
        return Decision()
    deadline = spec.get("startingDeadlineSeconds")
    if isinstance(deadline, int) and scheduled.timestamp() + deadline < now:
        return Decision(skipped="MissSchedule", missed=missed)
    last = _stamp(cj, "status", "lastScheduleTime")
    if job_name(cj, scheduled) in active or (last is not None and last == scheduled.timestamp()):
        return Decision()
    policy = spec.get("concurrencyPolicy", "Allow")
    if policy == "Forbid" and active:
        return Decision(skipped="JobAlreadyActive", missed=missed)
    return Decision(
        scheduled=scheduled, replace=policy == "Replace" and bool(active), missed=missed
    )

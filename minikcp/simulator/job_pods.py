"""The Job controller's decisions and a Job pod's kubelet, as pure functions
(pkg/controller/job).

A Job pod runs (Running and Ready) for `sim.minikcp.io/run-for` seconds (on the pod template
or the Job; default `--rollout-delay`), then succeeds, or fails with exit code 1 when
`sim.minikcp.io/fail` is "true" (with restartPolicy OnFailure its container restarts instead,
with the kubelet's back-off, and the restarts count against backoffLimit). Pods carry the
`batch.kubernetes.io/job-tracking` finalizer until the Job has counted them, as upstream.
`next_steps` gives the pods to create (by completion index for Indexed Jobs) or delete, and the
terminal condition once reached: SuccessCriteriaMet then Complete (CompletionsReached), or
FailureTarget then Failed (BackoffLimitExceeded, DeadlineExceeded), as 1.31+ write them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from minikcp.machinery import timestamps
from minikcp.simulator import pod_lifecycle, rollout

TRACKING_FINALIZER = "batch.kubernetes.io/job-tracking"
INDEX_ANNOTATION = "batch.kubernetes.io/job-completion-index"
INDEX_LABEL = "batch.kubernetes.io/job-completion-index"
RUN_FOR = "sim.minikcp.io/run-for"  # seconds a Job pod runs before it finishes
FAIL = "sim.minikcp.io/fail"  # "true": the Job's pods fail

COMPLETE_REASON = "CompletionsReached"
COMPLETE_MESSAGE = "Reached expected number of succeeded pods"
BACKOFF_REASON = "BackoffLimitExceeded"
BACKOFF_MESSAGE = "Job has reached the specified backoff limit"
DEADLINE_REASON = "DeadlineExceeded"
DEADLINE_MESSAGE = "Job was active longer than specified deadline"


def _pick(name: str, pod: Mapping[str, Any], job: Mapping[str, Any]) -> str | None:
    for source in (pod.get("metadata", {}), job.get("metadata", {})):
        value = (source.get("annotations") or {}).get(name)
        if isinstance(value, str):
            return value
    return None


def run_plan(
    pod: Mapping[str, Any], job: Mapping[str, Any], options: pod_lifecycle.SimulatorOptions
) -> tuple[float, bool]:
    """(seconds the pod runs, whether it then fails)."""
    run_for = options.rollout_delay
    text = _pick(RUN_FOR, pod, job)
    if text is not None:
        try:
            run_for = max(float(text), 0.0)
        except ValueError:
            pass
    fails = (_pick(FAIL, pod, job) or "").strip().lower() in ("true", "1", "yes")
    return run_for, fails


def phase(pod: Mapping[str, Any]) -> str:
    return str((pod.get("status") or {}).get("phase", ""))


def is_finished(pod: Mapping[str, Any]) -> bool:
    return phase(pod) in ("Succeeded", "Failed")


def is_active(pod: Mapping[str, Any]) -> bool:
    return not is_finished(pod) and not pod.get("metadata", {}).get("deletionTimestamp")


def index_of(pod: Mapping[str, Any]) -> int | None:
    text = (pod.get("metadata", {}).get("annotations") or {}).get(INDEX_ANNOTATION, "")
    return int(text) if isinstance(text, str) and text.isdigit() else None


def finished_status(pod: Mapping[str, Any], succeeded: bool, now: float) -> dict[str, Any]:
    """What the kubelet reports once the pod's containers exited (0, or 1 for a failure)."""
    status = pod_lifecycle.pod_status(pod, pod_lifecycle.State(ready=False), now)
    reason = "PodCompleted" if succeeded else "PodFailed"
    for condition in status["conditions"]:
        if condition["type"] in ("Ready", "ContainersReady"):
            condition["reason"] = reason
            condition.pop("message", None)
    stamp = timestamps.rfc3339(now)
    for container in status["containerStatuses"]:
        container["started"] = False
        container["state"] = {
            "terminated": {
                "exitCode": 0 if succeeded else 1,
                "reason": "Completed" if succeeded else "Error",
                "startedAt": status["startTime"],
                "finishedAt": stamp,
                "containerID": container["containerID"],
            }
        }
    status["phase"] = "Succeeded" if succeeded else "Failed"
    status.pop("podIP", None)
    status.pop("podIPs", None)
    return status


def new_pod(job: Mapping[str, Any], index: int | None, node: str) -> dict[str, Any]:
    """A pod of the Job's template (its labels carry the Job's selector already), tracked by
    the finalizer; with its completion index for an Indexed Job."""
    meta = job["metadata"]
    template = job.get("spec", {}).get("template", {})
    template_meta = template.get("metadata") or {}
    labels = dict(template_meta.get("labels") or {})
    annotations = dict(template_meta.get("annotations") or {})
    prefix = f"{meta['name']}-"
    spec = dict(template.get("spec") or {})
    if index is not None:
        prefix = f"{meta['name']}-{index}-"
        labels[INDEX_LABEL] = str(index)
        annotations[INDEX_ANNOTATION] = str(index)
        if spec.get("subdomain"):
            spec["hostname"] = f"{meta['name']}-{index}"
    pod_meta: dict[str, Any] = {
        "generateName": prefix,
        "namespace": meta.get("namespace", ""),
        "labels": labels,
        "ownerReferences": [rollout.controller_ref(job)],
        "finalizers": [TRACKING_FINALIZER],
    }
    if annotations:
        pod_meta["annotations"] = annotations
    spec["nodeName"] = node
    return {"apiVersion": "v1", "kind": "Pod", "metadata": pod_meta, "spec": spec}


# -- completed indexes ("0-2,5") ----------------------------------------------------------------


def parse_indexes(text: str) -> set[int]:
    out: set[int] = set()
    for part in text.split(","):
        first, _, last = part.partition("-")
        if first.isdigit():
            out.update(range(int(first), int(last if last.isdigit() else first) + 1))
    return out


def format_indexes(indexes: Iterable[int]) -> str:
    """Ordered intervals as the Job controller writes status.completedIndexes."""
    parts: list[str] = []
    run: list[int] = []
    for i in sorted(set(indexes)):
        if run and i == run[-1] + 1:
            run.append(i)
            continue
        if run:
            parts.append(_interval(run))
        run = [i]
    if run:
        parts.append(_interval(run))
    return ",".join(parts)


def _interval(run: list[int]) -> str:
    return str(run[0]) if len(run) == 1 else f"{run[0]}-{run[-1]}"


# -- one pass -----------------------------------------------------------------------------------


def completions(job: Mapping[str, Any]) -> int | None:
    value = job.get("spec", {}).get("completions")
    return value if isinstance(value, int) else None


def is_indexed(job: Mapping[str, Any]) -> bool:
    return bool(job.get("spec", {}).get("completionMode") == "Indexed")


def is_finished_job(job: Mapping[str, Any]) -> bool:
    return any(
        c.get("type") in ("Complete", "Failed") and c.get("status") == "True"
        for c in (job.get("status") or {}).get("conditions") or ()
    )


@dataclass(slots=True)
class Steps:
    """Pods to create (completion index, or None), pods (names) to delete, and the terminal
    condition reached: (type, reason, message) of SuccessCriteriaMet or FailureTarget."""

    create: list[int | None] = field(default_factory=list)
    delete: list[str] = field(default_factory=list)
    finish: tuple[str, str, str] | None = None


def restarts(pod: Mapping[str, Any]) -> int:
    status = pod.get("status") or {}
    return sum(
        c.get("restartCount", 0)
        for c in (status.get("initContainerStatuses") or [])
        + (status.get("containerStatuses") or [])
    )


def _past_restart_limit(
    job: Mapping[str, Any], active: Sequence[Mapping[str, Any]], limit: int
) -> bool:
    """pastBackoffLimitOnFailure: with restartPolicy OnFailure failures are container restarts
    in running pods; the Job fails once they reach backoffLimit (any, for a limit of 0)."""
    template_spec = job.get("spec", {}).get("template", {}).get("spec") or {}
    if template_spec.get("restartPolicy") != "OnFailure":
        return False
    total = sum(restarts(p) for p in active)
    return total > 0 if limit == 0 else total >= limit


def _succeeded(
    job: Mapping[str, Any],
    active: Sequence[Mapping[str, Any]],
    succeeded: int,
    succeeded_indexes: set[int],
) -> bool:
    """Without completions: one pod succeeded and none runs; else enough (indexes) succeeded."""
    want = completions(job)
    if want is None:
        return succeeded > 0 and not active
    return (len(succeeded_indexes) if is_indexed(job) else succeeded) >= want


def next_steps(
    job: Mapping[str, Any],
    active: Sequence[Mapping[str, Any]],
    succeeded: int,
    failed: int,
    succeeded_indexes: set[int],
    started: float | None,
    now: float,
) -> Steps:
    """manageJob with the pods still running, the counts so far, and when the Job started."""
    spec = job.get("spec", {})
    steps = Steps()
    backoff_limit = spec.get("backoffLimit", 6)
    deadline = spec.get("activeDeadlineSeconds")
    want = completions(job)
    if isinstance(backoff_limit, int) and (
        failed > backoff_limit or _past_restart_limit(job, active, backoff_limit)
    ):
        steps.finish = ("FailureTarget", BACKOFF_REASON, BACKOFF_MESSAGE)
    elif isinstance(deadline, int) and started is not None and now - started >= deadline:
        steps.finish = ("FailureTarget", DEADLINE_REASON, DEADLINE_MESSAGE)
    elif _succeeded(job, active, succeeded, succeeded_indexes):
        steps.finish = ("SuccessCriteriaMet", COMPLETE_REASON, COMPLETE_MESSAGE)
    if steps.finish is not None or spec.get("suspend"):
        steps.delete = [p["metadata"]["name"] for p in active]
        return steps
    parallelism = spec.get("parallelism", 1)
    parallelism = parallelism if isinstance(parallelism, int) else 1
    if want is None:
        wanted_active = parallelism if succeeded == 0 else len(active)
    elif is_indexed(job):
        running = {index_of(p) for p in active}
        missing = [i for i in range(want) if i not in succeeded_indexes and i not in running]
        room = max(parallelism - len(active), 0)
        steps.create = list(missing[:room])
        return steps
    else:
        wanted_active = min(parallelism, want - succeeded)
    if len(active) < wanted_active:
        steps.create = [None] * (wanted_active - len(active))
    elif len(active) > wanted_active:
        newest_first = sorted(
            active, key=lambda p: p["metadata"].get("creationTimestamp", ""), reverse=True
        )
        steps.delete = [p["metadata"]["name"] for p in newest_first[: len(active) - wanted_active]]
    return steps

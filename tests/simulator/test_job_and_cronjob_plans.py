"""The Job and CronJob controllers' decisions (pure functions), against upstream's rules."""

from __future__ import annotations

import datetime
from typing import Any

import pytest

from minikcp.machinery import cron_schedule
from minikcp.simulator import cronjob_plans, job_pods
from tests.simulator.builders import NOW

EVERY_MINUTE = cron_schedule.parse("*/1 * * * *")
T0 = 1_800_000_000.0  # 2027-01-15T08:00:00Z, a minute boundary


def job(**spec: Any) -> dict[str, Any]:
    return {"metadata": {"name": "j", "uid": "j-1"}, "spec": {"parallelism": 1, **spec}}


def running(*names: str, index: int | None = None) -> list[dict[str, Any]]:
    annotations = {} if index is None else {job_pods.INDEX_ANNOTATION: str(index)}
    return [
        {"metadata": {"name": n, "annotations": annotations}, "status": {"phase": "Running"}}
        for n in names
    ]


@pytest.mark.parametrize(
    ("case", "the_job", "active", "succeeded", "failed", "create", "delete", "finish"),
    [
        ("first pod", job(completions=1), [], 0, 0, [None], [], None),
        (
            "parallel up to completions",
            job(completions=3, parallelism=5),
            [],
            0,
            0,
            [None] * 3,
            [],
            None,
        ),
        (
            "parallel up to parallelism",
            job(completions=5, parallelism=2),
            running("a"),
            1,
            0,
            [None],
            [],
            None,
        ),
        ("done", job(completions=2), [], 2, 0, [], [], "SuccessCriteriaMet"),
        ("work queue: one success and none running", job(), [], 1, 0, [], [], "SuccessCriteriaMet"),
        ("work queue: waits for the rest", job(parallelism=2), running("a"), 1, 0, [], [], None),
        (
            "backoff limit exceeded",
            job(backoffLimit=1),
            running("a"),
            0,
            2,
            [],
            ["a"],
            "FailureTarget",
        ),
        (
            "within the backoff limit",
            job(backoffLimit=1, completions=1),
            [],
            0,
            1,
            [None],
            [],
            None,
        ),
        ("suspended: running pods go", job(suspend=True), running("a"), 0, 0, [], ["a"], None),
    ],
)
def test_job_next_steps(
    case: str,
    the_job: dict[str, Any],
    active: list[dict[str, Any]],
    succeeded: int,
    failed: int,
    create: list[int | None],
    delete: list[str],
    finish: str | None,
) -> None:
    steps = job_pods.next_steps(the_job, active, succeeded, failed, set(), NOW, NOW)
    assert (steps.create, steps.delete) == (create, delete), case
    assert (steps.finish[0] if steps.finish else None) == finish, case


def test_container_restarts_count_with_on_failure() -> None:
    on_failure = job(backoffLimit=2)
    on_failure["spec"]["template"] = {"spec": {"restartPolicy": "OnFailure"}}
    pod = running("a")[0]
    pod["status"]["containerStatuses"] = [{"restartCount": 1}]
    assert job_pods.next_steps(on_failure, [pod], 0, 0, set(), NOW, NOW).finish is None
    pod["status"]["containerStatuses"] = [{"restartCount": 2}]
    steps = job_pods.next_steps(on_failure, [pod], 0, 0, set(), NOW, NOW)
    assert steps.finish is not None and steps.finish[1] == "BackoffLimitExceeded"
    # With Never the restarts are not the kubelet's: failed pods count instead.
    never = job(backoffLimit=2)
    never["spec"]["template"] = {"spec": {"restartPolicy": "Never"}}
    assert job_pods.next_steps(never, [pod], 0, 0, set(), NOW, NOW).finish is None


def test_job_deadline_and_indexed_jobs() -> None:
    late = job_pods.next_steps(
        job(activeDeadlineSeconds=10), running("a"), 0, 0, set(), NOW - 10, NOW
    )
    assert late.finish == (
        "FailureTarget",
        "DeadlineExceeded",
        "Job was active longer than specified deadline",
    )
    indexed = job(completions=4, parallelism=2, completionMode="Indexed")
    steps = job_pods.next_steps(indexed, running("a", index=1), 1, 0, {0}, NOW, NOW)
    assert steps.create == [2]
    assert job_pods.next_steps(indexed, [], 4, 0, {0, 1, 2, 3}, NOW, NOW).finish is not None


@pytest.mark.parametrize(
    ("indexes", "text"),
    [(set(), ""), ({0}, "0"), ({0, 1, 2, 5}, "0-2,5"), ({3, 1, 4, 7, 8}, "1,3-4,7-8")],
)
def test_completed_indexes_round_trip(indexes: set[int], text: str) -> None:
    assert job_pods.format_indexes(indexes) == text
    assert job_pods.parse_indexes(text) == indexes


def cronjob(created: float = T0 - 30, last: float | None = None, **spec: Any) -> dict[str, Any]:
    stamp = datetime.datetime.fromtimestamp(created, datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    status = {}
    if last is not None:
        status["lastScheduleTime"] = datetime.datetime.fromtimestamp(last, datetime.UTC).strftime(
            "%Y-%m-%dT%H:%M:%SZ"
        )
    return {
        "metadata": {
            "name": "tick",
            "namespace": "default",
            "uid": "c-1",
            "creationTimestamp": stamp,
        },
        "spec": {"schedule": "*/1 * * * *", "jobTemplate": {"spec": {}}, **spec},
        "status": status,
    }


@pytest.mark.parametrize(
    ("case", "cj", "now", "active", "scheduled", "replace", "skipped"),
    [
        ("not due yet", cronjob(), T0 - 1, [], None, False, ""),
        ("due at the boundary", cronjob(), T0, [], T0, False, ""),
        ("due a little later", cronjob(), T0 + 20, [], T0, False, ""),
        ("started already", cronjob(last=T0), T0 + 20, [], None, False, ""),
        ("missed several: the latest", cronjob(), T0 + 185, [], T0 + 180, False, ""),
        ("suspended", cronjob(suspend=True), T0, [], None, False, ""),
        (
            "forbid while running",
            cronjob(concurrencyPolicy="Forbid"),
            T0,
            ["tick-1"],
            None,
            False,
            "JobAlreadyActive",
        ),
        ("replace the running", cronjob(concurrencyPolicy="Replace"), T0, ["tick-1"], T0, True, ""),
        ("allow beside the running", cronjob(), T0, ["tick-1"], T0, False, ""),
        (
            "too late for the deadline",
            cronjob(last=T0 - 60, startingDeadlineSeconds=10),
            T0 + 30,
            [],
            None,
            False,
            "",
        ),
        ("within the deadline", cronjob(startingDeadlineSeconds=10), T0 + 5, [], T0, False, ""),
    ],
)
def test_cronjob_decide(
    case: str,
    cj: dict[str, Any],
    now: float,
    active: list[str],
    scheduled: float | None,
    replace: bool,
    skipped: str,
) -> None:
    decision = cronjob_plans.decide(cj, EVERY_MINUTE, now, active)
    got = decision.scheduled.timestamp() if decision.scheduled is not None else None
    assert (got, decision.replace, decision.skipped) == (scheduled, replace, skipped), case


def test_job_for_an_activation() -> None:
    cj = cronjob(timeZone="Europe/Paris")
    cj["spec"]["jobTemplate"] = {
        "metadata": {"labels": {"team": "a"}, "annotations": {"note": "x"}},
        "spec": {"backoffLimit": 2},
    }
    scheduled = cronjob_plans.at(T0, cronjob_plans.zone(cj))
    body = cronjob_plans.new_job(cj, scheduled)
    assert body["metadata"]["name"] == f"tick-{int(T0) // 60}"
    assert body["metadata"]["labels"] == {"team": "a"}
    assert body["metadata"]["annotations"] == {
        "note": "x",
        cronjob_plans.SCHEDULED_ANNOTATION: "2027-01-15T09:00:00+01:00",
    }
    assert (
        body["metadata"]["ownerReferences"][0]["kind"] == ""
        or body["metadata"]["ownerReferences"][0]["controller"]
    )
    assert body["spec"] == {"backoffLimit": 2}
    assert cronjob_plans.next_activation(cj, EVERY_MINUTE, T0 + 1) == T0 + 60


def test_history_limits_keep_the_newest() -> None:
    def finished(name: str, kind: str, start: str) -> dict[str, Any]:
        return {
            "metadata": {"name": name},
            "status": {"startTime": start, "conditions": [{"type": kind, "status": "True"}]},
        }

    jobs = [
        finished("ok1", "Complete", "2026-01-01T00:01:00Z"),
        finished("ok2", "Complete", "2026-01-01T00:02:00Z"),
        finished("bad1", "Failed", "2026-01-01T00:01:00Z"),
        finished("bad2", "Failed", "2026-01-01T00:03:00Z"),
        {"metadata": {"name": "running"}, "status": {}},
    ]
    cj = cronjob(successfulJobsHistoryLimit=1)
    assert cronjob_plans.history_surplus(cj, jobs) == ["ok1", "bad1"]


def test_reconcile_active_drops_finished_and_gone_jobs() -> None:
    def job_of(uid: str, outcome: str | None, completed: str = "") -> dict[str, Any]:
        status: dict[str, Any] = {}
        if outcome is not None:
            status["conditions"] = [{"type": outcome, "status": "True"}]
        if completed:
            status["completionTime"] = completed
        return {"metadata": {"name": f"tick-{uid}", "uid": uid}, "status": status}

    jobs = [
        job_of("run", None),
        job_of("ok", "Complete", "2026-01-01T00:02:00Z"),
        job_of("bad", "Failed"),
        # Not in the active list (e.g. started by hand): its success still counts.
        job_of("manual", "Complete", "2026-01-01T00:05:00Z"),
    ]
    refs = [{"uid": u, "name": f"tick-{u}"} for u in ("run", "ok", "bad", "gone")]
    status: dict[str, Any] = {"active": refs, "lastSuccessfulTime": "2026-01-01T00:01:00Z"}
    running, finished = cronjob_plans.reconcile_active(status, jobs)
    assert [j["metadata"]["uid"] for j in running] == ["run"]
    assert sorted(j["metadata"]["uid"] for j in finished) == ["bad", "ok"]
    assert status == {
        "active": [{"uid": "run", "name": "tick-run"}],
        "lastSuccessfulTime": "2026-01-01T00:05:00Z",
    }

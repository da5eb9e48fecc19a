"""CronJobs on a minikcp acting as a physical cluster, driven by real kubectl. The simulated
clock is set (`--simulated-clock-offset`) to a few seconds before a minute boundary when the
server starts, so an every-minute schedule fires within the test."""

from __future__ import annotations

import calendar
import json
import time
from collections.abc import Iterator
from typing import Any

import pytest

from tests import server_process
from tests.e2e.kubectl_runner import Kubectl
from tests.e2e.polling import eventually

LEAD = 10.0  # seconds from the server's start to the simulated minute boundary


@pytest.fixture(scope="module")
def offset() -> float:
    now = time.time()
    return 60 - now % 60 - LEAD


@pytest.fixture(scope="module")
def sim_server(
    tmp_path_factory: pytest.TempPathFactory, offset: float
) -> Iterator[server_process.ServerProcess]:
    with server_process.serving(
        tmp_path_factory.mktemp("cronjobs"),
        extra_args=(
            "--simulate-workloads",
            "--rollout-delay",
            "0.5",
            "--simulated-clock-offset",
            str(offset),
        ),
    ) as proc:
        yield proc


@pytest.fixture
def kubectl(sim_server: server_process.ServerProcess, cluster: str) -> Kubectl:
    return Kubectl(sim_server, cluster)


def cronjob(name: str, **spec: Any) -> str:
    body = {
        "apiVersion": "batch/v1",
        "kind": "CronJob",
        "metadata": {"name": name},
        "spec": {
            "schedule": "*/1 * * * *",
            "jobTemplate": {
                "metadata": {"labels": {"from": name}},
                "spec": {
                    "template": {
                        "spec": {
                            "restartPolicy": "Never",
                            "containers": [{"name": "c", "image": "busybox"}],
                        }
                    }
                },
            },
            **spec,
        },
    }
    return json.dumps(body)


def jobs_of(kubectl: Kubectl, name: str) -> list[dict[str, Any]]:
    out = kubectl("get", "jobs", "-l", f"from={name}", "-o", "json").stdout
    found: list[dict[str, Any]] = json.loads(out)["items"]
    return found


def test_an_activation_starts_a_job_and_records_its_success(
    kubectl: Kubectl, offset: float
) -> None:
    kubectl("apply", "-f", "-", input=cronjob("tick", successfulJobsHistoryLimit=1))
    kubectl("apply", "-f", "-", input=cronjob("paused", suspend=True))
    (started,) = eventually(lambda: jobs_of(kubectl, "tick"), timeout=LEAD + 65)
    cj = kubectl.get("cronjob", "tick")
    scheduled = cj["status"]["lastScheduleTime"]
    minute = calendar.timegm(time.strptime(scheduled, "%Y-%m-%dT%H:%M:%SZ"))
    assert minute % 60 == 0
    # Upstream's name: the scheduled time in minutes since the epoch.
    assert started["metadata"]["name"] == f"tick-{minute // 60}"
    assert (
        started["metadata"]["annotations"]["batch.kubernetes.io/cronjob-scheduled-timestamp"]
        == scheduled
    )
    (ref,) = started["metadata"]["ownerReferences"]
    assert (ref["kind"], ref["name"], ref["uid"]) == ("CronJob", "tick", cj["metadata"]["uid"])
    assert ref["controller"] is True and ref["blockOwnerDeletion"] is True
    kubectl(
        "wait", "--for=condition=complete", f"job/{started['metadata']['name']}", "--timeout=30s"
    )
    done = eventually(
        lambda: "lastSuccessfulTime" in (s := kubectl.get("cronjob", "tick")["status"]) and s
    )
    assert "active" not in done
    assert done["lastScheduleTime"] == scheduled
    described = kubectl("describe", "cronjob", "tick").stdout
    assert f"Created job {started['metadata']['name']}" in described
    assert f"Saw completed job: {started['metadata']['name']}, condition: Complete" in described
    # A suspended CronJob starts nothing.
    assert jobs_of(kubectl, "paused") == []
    assert "lastScheduleTime" not in kubectl.get("cronjob", "paused").get("status", {})
    # Deleting the CronJob takes its Jobs and their pods.
    kubectl("delete", "cronjob", "tick")
    eventually(lambda: not jobs_of(kubectl, "tick"))
    eventually(lambda: not json.loads(kubectl("get", "pods", "-o", "json").stdout)["items"])

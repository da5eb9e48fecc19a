"""In-process writers are admitted like clients: the workload simulator's ReplicaSets create
no more pods than a quota allows, and say why, as upstream's ReplicaSet controller does."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from tests import server_process
from tests.e2e.kubectl_runner import Kubectl
from tests.e2e.polling import eventually

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def sim_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[server_process.ServerProcess]:
    proc = server_process.start_server(
        tmp_path_factory.mktemp("simulated"), extra_args=("--simulate-workloads",)
    )
    yield proc
    assert proc.stop() == 0, proc.log()
    assert "Traceback" not in proc.log(), proc.log()


def test_replica_set_stops_at_quota(sim_server: server_process.ServerProcess, cluster: str) -> None:
    kubectl = Kubectl(sim_server, cluster)
    kubectl("create", "quota", "q", "--hard=pods=2")
    eventually(lambda: (kubectl.get("quota", "q").get("status") or {}).get("used"), what="status")
    kubectl("create", "deployment", "web", "--image=nginx", "--replicas=3")

    def failure() -> dict[str, Any] | None:
        listed = json.loads(kubectl("get", "rs", "-l", "app=web", "-o", "json").stdout)["items"]
        for rs in listed:
            for condition in (rs.get("status") or {}).get("conditions") or ():
                if condition["type"] == "ReplicaFailure":
                    return dict(condition)
        return None

    condition = eventually(failure, what="the ReplicaSet's ReplicaFailure condition")
    assert condition["reason"] == "FailedCreate"
    assert (
        "exceeded quota: q, requested: pods=1, used: pods=2, limited: pods=2"
        in (condition["message"])
    )
    pods = json.loads(kubectl("get", "pods", "-l", "app=web", "-o", "json").stdout)["items"]
    assert len(pods) == 2
    assert kubectl.get("quota", "q")["status"]["used"] == {"pods": "2"}

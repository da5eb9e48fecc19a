"""StatefulSets, DaemonSets, CronJobs and PVCs synced to two physical clusters (other minikcp
processes), driven with kubectl.

The physical clusters simulate workloads: east runs two nodes and makes pods Ready after 1 s,
west one node and 3 s, so east finishes first and the upstream rollout must wait for west. The
simulator binds no standalone claims and runs no CronJobs: for those the test writes the
downstream status through the cluster's API, as the volume binder and CronJob controller would.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import pytest

from tests.e2e import syncer_env as env
from tests.server_process import ServerProcess

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def up(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    with env.upstream(tmp_path_factory.mktemp("upstream")) as proc:
        yield proc


@pytest.fixture(scope="module")
def downs(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[ServerProcess, ServerProcess]]:
    east_args = ("--simulate-workloads", "--rollout-delay", "1", "--simulated-nodes", "2")
    west_args = ("--simulate-workloads", "--rollout-delay", "3", "--simulated-nodes", "1")
    with env.physical_pair(tmp_path_factory.mktemp("downstream"), east_args, west_args) as pair:
        yield pair


@pytest.fixture
def two(up: ServerProcess, downs: tuple[ServerProcess, ServerProcess], cluster: str) -> env.Targets:
    east, west = downs
    env.attach(up, cluster, "east", east)
    env.attach(up, cluster, "west", west)
    return env.Targets(
        east, west, env.downstream_ns(up, cluster, "east"), env.downstream_ns(up, cluster, "west")
    )


def _workload(kind: str, name: str, **spec: Any) -> str:
    labels = {"app": name}
    return json.dumps(
        {
            "apiVersion": "apps/v1",
            "kind": kind,
            "metadata": {"name": name},
            "spec": {
                "selector": {"matchLabels": labels},
                "template": {
                    "metadata": {"labels": labels},
                    "spec": {"containers": [{"name": name, "image": "busybox"}]},
                },
                **spec,
            },
        }
    )


def _write_status(down: ServerProcess, ns: str, resource: str, name: str, status: Any) -> None:
    down.kubectl(
        "patch",
        "-n",
        ns,
        resource,
        name,
        "--subresource=status",
        "--type=merge",
        "-p",
        json.dumps({"status": status}),
    )


def _rollout(pool: ThreadPoolExecutor, up: ServerProcess, cluster: str, what: str) -> Future[str]:
    """`kubectl rollout status` upstream, running in the background; its output."""
    return pool.submit(
        lambda: (
            up.kubectl(
                "rollout", "status", what, "--timeout=60s", cluster=cluster, timeout=90
            ).stdout
        )
    )


def _follow(rollout: Future[str], down: ServerProcess, ns: str, resource: str) -> tuple[str, bool]:
    """Wait for `rollout`, checking all along that it never finishes before the slower target
    (`down`) has finished there; its output, and whether it was seen waiting for that target."""
    waited = False
    while True:
        finished = rollout.done()  # read before the target: a finished rollout stays finished
        obj = env.down_get(down, ns, resource) or {}
        if finished:
            assert _done(obj), obj
            return rollout.result(), waited
        waited = waited or not _done(obj)
        time.sleep(0.2)


def _done(obj: dict[str, Any]) -> bool:
    """A StatefulSet or DaemonSet rolled out on its cluster (kubectl's viewers)."""
    meta, spec, status = obj.get("metadata", {}), obj.get("spec", {}), obj.get("status", {})
    if not status.get("observedGeneration") or meta["generation"] > status["observedGeneration"]:
        return False
    if "desiredNumberScheduled" in status:
        desired = status["desiredNumberScheduled"]
        return bool(
            status.get("updatedNumberScheduled", 0) >= desired
            and status.get("numberAvailable", 0) >= desired
        )
    return bool(
        status.get("readyReplicas", 0) >= spec["replicas"]
        and status.get("updatedReplicas", 0) >= spec["replicas"]
    )


def _share(down: ServerProcess, ns: str) -> int | None:
    obj = env.down_get(down, ns, "statefulset", "db")
    return None if obj is None else int(obj["spec"]["replicas"])


def test_stateful_set_and_daemon_set_roll_out_on_both_targets(
    up: ServerProcess, two: env.Targets, cluster: str
) -> None:
    east, west, east_ns, west_ns = two
    up.kubectl(
        "apply",
        "-f",
        "-",
        input=_workload("StatefulSet", "db", replicas=5, serviceName="db"),
        cluster=cluster,
    )
    up.kubectl("apply", "-f", "-", input=_workload("DaemonSet", "agent"), cluster=cluster)
    env.eventually(lambda: _share(east, east_ns) == 3, what="3 replicas on east")
    env.eventually(lambda: _share(west, west_ns) == 2, what="2 replicas on west")
    for down, ns in two.pairs():
        ds = env.eventually(lambda down=down, ns=ns: env.down_get(down, ns, "daemonset", "agent"))
        assert ds["spec"]["template"]["spec"]["containers"][0]["image"] == "busybox"
        # Written once: the syncer's apply is the only spec write.
        assert ds["metadata"]["generation"] == 1
        assert (env.down_get(down, ns, "statefulset", "db") or {})["metadata"]["generation"] == 1

    with ThreadPoolExecutor(2) as pool:
        sts_rollout = _rollout(pool, up, cluster, "statefulset/db")
        ds_rollout = _rollout(pool, up, cluster, "daemonset/agent")
        out, waited = _follow(sts_rollout, west, west_ns, "statefulset/db")
        assert "partitioned roll out complete: 5 new pods" in out and waited
        out, _ = _follow(ds_rollout, west, west_ns, "daemonset/agent")
        assert 'daemon set "agent" successfully rolled out' in out

    sts = env.get(up, cluster, "statefulset", "db")
    assert sts["status"]["observedGeneration"] == sts["metadata"]["generation"]
    assert sts["status"]["readyReplicas"] == sts["status"]["availableReplicas"] == 5
    revision = sts["status"]["updateRevision"]
    assert revision.startswith("db-") and sts["status"]["currentRevision"] == revision
    ds = env.get(up, cluster, "daemonset", "agent")
    # Two simulated nodes on east, one on west.
    assert ds["status"]["desiredNumberScheduled"] == ds["status"]["numberAvailable"] == 3
    assert ds["status"]["observedGeneration"] == ds["metadata"]["generation"]
    for down, ns in two.pairs():
        # The simulator's status writes made no spec writes downstream.
        for what in ("statefulset/db", "daemonset/agent"):
            assert (env.down_get(down, ns, what) or {})["metadata"]["generation"] == 1

    # Scale: only the difference moves; the rollout waits for both targets again.
    up.kubectl("scale", "statefulset/db", "--replicas=7", cluster=cluster)
    env.eventually(lambda: _share(east, east_ns) == 4, what="4 on east")
    env.eventually(lambda: _share(west, west_ns) == 3, what="3 on west")
    with ThreadPoolExecutor(1) as pool:
        sts_rollout = _rollout(pool, up, cluster, "statefulset/db")
        out, waited = _follow(sts_rollout, west, west_ns, "statefulset/db")
        assert "partitioned roll out complete: 7 new pods" in out and waited
    assert env.get(up, cluster, "statefulset", "db")["status"]["readyReplicas"] == 7

    # Deleting upstream removes both from both targets first.
    up.kubectl("delete", "statefulset/db", "daemonset/agent", "--timeout=30s", cluster=cluster)
    for down, ns in two.pairs():
        assert env.down_get(down, ns, "statefulset", "db") is None
        assert env.down_get(down, ns, "daemonset", "agent") is None
        env.eventually(
            lambda down=down, ns=ns: not env.get(down, "root", "pods", "-n", ns)["items"],
            what="the pods gone downstream",
        )


def test_claims_and_cron_jobs_report_their_targets(
    up: ServerProcess, two: env.Targets, cluster: str
) -> None:
    east, west, east_ns, west_ns = two
    claim = {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": "data"},
        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}},
    }
    up.kubectl("apply", "-f", "-", input=json.dumps(claim), cluster=cluster)
    up.kubectl(
        "create", "cronjob", "backup", "--image=busybox", "--schedule=*/5 * * * *", cluster=cluster
    )
    for down, ns in two.pairs():
        env.eventually(lambda down=down, ns=ns: env.down_get(down, ns, "pvc", "data"))
        copy = env.eventually(lambda down=down, ns=ns: env.down_get(down, ns, "cronjob", "backup"))
        assert copy["spec"]["schedule"] == "*/5 * * * *"

    # A claim is Bound upstream once it is bound on every target.
    bound = {"phase": "Bound", "accessModes": ["ReadWriteOnce"], "capacity": {"storage": "1Gi"}}
    _write_status(east, east_ns, "pvc", "data", bound)
    time.sleep(2)
    assert env.get(up, cluster, "pvc", "data")["status"]["phase"] == "Pending"
    _write_status(west, west_ns, "pvc", "data", {**bound, "capacity": {"storage": "2Gi"}})
    env.eventually(
        lambda: env.get(up, cluster, "pvc", "data")["status"].get("phase") == "Bound",
        what="the claim Bound upstream",
    )
    assert env.get(up, cluster, "pvc", "data")["status"]["capacity"] == {"storage": "1Gi"}

    # A CronJob runs on each target. East is told it last ran long ago: its simulated CronJob
    # controller starts a Job for the latest missed activation at once, as upstream's does, and
    # upstream shows the latest schedule and every target's active Job in its own namespace.
    slot = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() // 300 * 300))
    _write_status(east, east_ns, "cronjob", "backup", {"lastScheduleTime": "2026-01-01T00:05:00Z"})

    def reported() -> dict[str, Any] | None:
        status: dict[str, Any] = env.get(up, cluster, "cronjob", "backup").get("status") or {}
        ran = status.get("active") and status.get("lastScheduleTime", "") >= slot
        return status if ran else None

    status = env.eventually(reported, what="the CronJob's status upstream")
    for ref in status["active"]:
        assert ref["kind"] == "Job" and ref["namespace"] == "default"
        assert ref["name"].startswith("backup-")
    (name, *_) = [ref["name"] for ref in status["active"]]
    copies = [env.down_get(down, ns, "job", name) for down, ns in two.pairs()]
    assert any(copy is not None for copy in copies), f"no target runs {name}"

    up.kubectl("delete", "pvc/data", "cronjob/backup", "--timeout=30s", cluster=cluster)
    for down, ns in two.pairs():
        assert env.down_get(down, ns, "pvc", "data") is None
        assert env.down_get(down, ns, "cronjob", "backup") is None

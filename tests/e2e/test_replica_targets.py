"""Targets of one logical cluster spread over replicas on one etcd: one Lease per SyncTarget, a
Deployment split over targets of different replicas has its replicas split and its status summed
from the views each owner publishes, and a killed owner's targets move with every object written
downstream once."""

from __future__ import annotations

import collections
import json
import signal
import time
from pathlib import Path

import pytest

from minikcp.syncer import status_views
from tests import server_process
from tests.e2e import replica_env
from tests.e2e import syncer_env as env
from tests.e2e.replica_env import (
    LEASE_DURATION,
    etcd_fixture,  # noqa: F401  (the `etcd` fixture)
    start_replica,
)
from tests.server_process import ServerProcess

pytestmark = pytest.mark.e2e

CLUSTER = "shop"
TARGETS = ("t1", "t2", "t3", "t4")


def owners(replica: ServerProcess) -> dict[str, str]:
    """The holder of each target's Lease ("" when free), read with kubectl."""
    return replica_env.target_holders(replica, {t: (CLUSTER, t) for t in TARGETS})


APPS = 12  # Deployments created just before a replica is killed


def apps(count: int) -> str:
    """Deployments app-0... of four replicas (one per target), Ready 2 s after they start."""
    items = []
    for i in range(count):
        item = json.loads(env.slow_web(4, ready_after=2))
        item["metadata"] = {"name": f"app-{i}", "labels": {"suite": "apps"}}
        item["spec"]["selector"]["matchLabels"]["app"] = f"app-{i}"
        item["spec"]["template"]["metadata"]["labels"]["app"] = f"app-{i}"
        items.append(item)
    return json.dumps({"apiVersion": "v1", "kind": "List", "items": items})


def all_ready(server: ServerProcess, count: int) -> bool:
    """Whether the Deployments app-* are rolled out upstream, four ready pods each."""
    listing = env.get(server, CLUSTER, "deployments", "-l", "suite=apps")["items"]
    ready = [
        d
        for d in listing
        if (d.get("status") or {}).get("readyReplicas") == 4
        and (d.get("status") or {}).get("updatedReplicas") == 4
        and (d.get("status") or {}).get("observedGeneration") == d["metadata"]["generation"]
    ]
    return len(ready) == count


def deployment_writes(down: ServerProcess) -> int:
    """Write requests for Deployments the physical cluster has served (from its /metrics)."""
    code, _, body = down.request("GET", "/metrics")
    assert code == 200
    total = 0
    for line in body.decode().splitlines():
        if not line.startswith("apiserver_request_total{") or 'resource="deployments"' not in line:
            continue
        if any(f'verb="{v}"' in line for v in ("GET", "LIST", "WATCH")):
            continue
        total += int(float(line.rsplit(" ", 1)[1]))
    return total


def test_targets_of_one_cluster_spread_and_sum_status_across_replicas(
    etcd: str, tmp_path: Path
) -> None:
    started: list[ServerProcess] = []
    try:
        r0 = start_replica(tmp_path, etcd, "r0", extra=env.UPSTREAM_ARGS)
        started.append(r0)
        r1 = start_replica(tmp_path, etcd, "r1", first=r0, extra=env.UPSTREAM_ARGS)
        started.append(r1)
        replicas = {"r0": r0, "r1": r1}
        downs = {}
        for target in TARGETS:
            down = server_process.start_server(tmp_path, extra_args=env.DOWNSTREAM_ARGS)
            started.append(down)
            downs[target] = down
            env.attach(r0, CLUSTER, target, down)
        # Two replicas, four targets in one logical cluster: two each.
        env.eventually(
            lambda: (
                sorted(collections.Counter(owners(r0).values()).items()) == [("r0", 2), ("r1", 2)]
            ),
            timeout=20,
            what="two targets per replica",
        )
        held = owners(r0)
        for target in TARGETS:
            env.wait_target(r1, CLUSTER, target, "Ready")

        # Eight replicas split two per target; the rollout finishes upstream with all counted.
        r1.kubectl("apply", "-f", "-", input=env.slow_web(8, ready_after=2), cluster=CLUSTER)
        namespaces = {t: env.downstream_ns(r1, CLUSTER, t) for t in TARGETS}
        for target in TARGETS:
            env.eventually(
                lambda t=target: env.replicas(downs[t], namespaces[t]) == 2,
                what=f"web's share on {target}",
            )
        out = env.rollout_status(r1, CLUSTER, timeout=60)
        assert 'deployment "web" successfully rolled out' in out
        upstream = env.get(r0, CLUSTER, "deployment", "web")
        assert upstream["status"]["readyReplicas"] == 8
        assert upstream["status"]["updatedReplicas"] == 8
        assert upstream["metadata"]["generation"] == 1
        annotations = upstream["metadata"]["annotations"]
        published = status_views.published(annotations, TARGETS)
        assert sorted(v.name for v in published) == list(TARGETS)
        writes = {t: deployment_writes(downs[t]) for t in TARGETS}
        assert writes == dict.fromkeys(TARGETS, 1)
        uids = {t: env.uid(downs[t], namespaces[t], "deployment", "web") for t in TARGETS}
        for target in TARGETS:
            down_dep = env.down_get(downs[target], namespaces[target], "deployment", "web")
            assert down_dep is not None
            # The published views are for the replicas, not for the physical clusters.
            down_annotations = down_dep["metadata"]["annotations"]
            assert not any(k.startswith(status_views.PREFIX) for k in down_annotations)

        # kill -9 one replica mid-rollout of more Deployments: its two targets move to the other
        # within the lease duration, and every Deployment reaches every target once.
        r1.kubectl("apply", "-f", "-", input=apps(APPS), cluster=CLUSTER)
        victim = held["t1"]
        survivor_name = "r1" if victim == "r0" else "r0"
        survivor = replicas[survivor_name]
        replicas[victim].process.send_signal(signal.SIGKILL)
        replicas[victim].process.wait()
        killed = time.monotonic()
        env.eventually(
            lambda: set(owners(survivor).values()) == {survivor_name},
            timeout=LEASE_DURATION + 5,
            what="the dead replica's targets taken over",
        )
        assert time.monotonic() - killed < LEASE_DURATION + 3
        env.eventually(
            lambda: all_ready(survivor, APPS),
            timeout=90,
            what="every Deployment rolled out over the four targets",
        )
        # Requests in flight at the kill may be done downstream yet never counted there, or land
        # after the new owner listed the target, which then applies the same object once more
        # (no change: generation 1 below). So at most two writes each; every Deployment is on
        # every target, created once.
        base = {t: deployment_writes(downs[t]) for t in TARGETS}
        assert all(count <= 1 + 2 * APPS for count in base.values()), base
        for target in TARGETS:
            listing = env.get(downs[target], "root", "deployments", "-n", namespaces[target])
            generations = {
                d["metadata"]["name"]: d["metadata"]["generation"] for d in listing["items"]
            }
            assert generations == {"web": 1, **{f"app-{i}": 1 for i in range(APPS)}}

        # A scale through the survivor reaches every target once; the status is summed here.
        survivor.kubectl("scale", "deployment/web", "--replicas=4", cluster=CLUSTER)
        for target in TARGETS:
            env.eventually(
                lambda t=target: env.replicas(downs[t], namespaces[t]) == 1,
                what=f"web scaled on {target}",
            )
        out = env.rollout_status(survivor, CLUSTER, timeout=60)
        assert 'deployment "web" successfully rolled out' in out
        env.eventually(
            lambda: env.get(survivor, CLUSTER, "deployment", "web")["status"].get("replicas") == 4,
            what="the scaled status summed",
        )
        assert {t: deployment_writes(downs[t]) for t in TARGETS} == {
            t: base[t] + 1 for t in TARGETS
        }
        assert {t: env.uid(downs[t], namespaces[t], "deployment", "web") for t in TARGETS} == uids
        # All targets on one replica again: the published views are removed.
        env.eventually(
            lambda: (
                not any(
                    k.startswith(status_views.PREFIX)
                    for k in env.get(survivor, CLUSTER, "deployment", "web")["metadata"][
                        "annotations"
                    ]
                )
            ),
            what="published views cleared",
        )

        # A replica joining takes its share: two each again, never two owners meanwhile.
        r2 = start_replica(tmp_path, etcd, "r2", first=r0, extra=env.UPSTREAM_ARGS)
        started.append(r2)
        env.eventually(
            lambda: (
                sorted(collections.Counter(owners(r2).values()).items())
                == sorted([(survivor_name, 2), ("r2", 2)])
            ),
            timeout=20,
            what="the new replica's share",
        )
        survivor.kubectl("set", "image", "deployment/web", "web=nginx:2", cluster=CLUSTER)
        out = env.rollout_status(r2, CLUSTER, timeout=60)
        assert 'deployment "web" successfully rolled out' in out
        env.eventually(
            lambda: all(deployment_writes(downs[t]) >= base[t] + 2 for t in TARGETS),
            what="the image change written to every target",
        )
        time.sleep(1)  # a second write would come now
        assert {t: deployment_writes(downs[t]) for t in TARGETS} == {
            t: base[t] + 2 for t in TARGETS
        }
        final = env.get(r2, CLUSTER, "deployment", "web")
        assert final["status"]["updatedReplicas"] == 4
        assert final["status"]["readyReplicas"] == 4
    finally:
        for proc in started:
            proc.stop()
        for proc in started:
            assert "Traceback" not in proc.log(), proc.log()

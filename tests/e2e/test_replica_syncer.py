"""SyncTargets spread over replicas on one etcd: a joining replica takes its share, a killed
owner's targets move within the lease duration, every object reaches its target once."""

from __future__ import annotations

import signal
import time
from pathlib import Path

import pytest

from minikcp.controllers import leases
from minikcp.syncer import shards
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

CLUSTERS = ("east-shop", "west-shop")


def shard_holders(replica: ServerProcess) -> dict[str, str]:
    """The holder of the lease of each logical cluster's SyncTarget ("" when free)."""
    return replica_env.target_holders(replica, {c: (c, "target") for c in CLUSTERS})


def test_targets_spread_over_replicas_and_move_when_their_owner_dies(
    etcd: str, tmp_path: Path
) -> None:
    started: list[ServerProcess] = []
    try:
        r0 = start_replica(tmp_path, etcd, "r0", extra=env.UPSTREAM_ARGS)
        started.append(r0)
        downs = {}
        for cluster in CLUSTERS:
            down = server_process.start_server(tmp_path, extra_args=env.DOWNSTREAM_ARGS)
            started.append(down)
            downs[cluster] = down
            env.attach(r0, cluster, "target", down)
        # Alone, the first replica runs both.
        env.eventually(lambda: set(shard_holders(r0).values()) == {"r0"}, what="r0 owns all")

        # A replica joining takes its share: the first hands one back, the new one takes it.
        r1 = start_replica(tmp_path, etcd, "r1", first=r0, extra=env.UPSTREAM_ARGS)
        started.append(r1)
        env.eventually(
            lambda: sorted(shard_holders(r1).values()) == ["r0", "r1"],
            timeout=15,
            what="one target per replica",
        )
        replicas = {"r0": r0, "r1": r1}
        owners = shard_holders(r1)
        for cluster in CLUSTERS:
            env.wait_target(r1, cluster, "target", "Ready")
            r1.kubectl("apply", "-f", "-", input=env.slow_web(4, ready_after=3), cluster=cluster)
        namespaces = {c: env.downstream_ns(r1, c, "target") for c in CLUSTERS}
        for cluster in CLUSTERS:
            env.eventually(
                lambda c=cluster: env.replicas(downs[c], namespaces[c]) == 4,
                what=f"web on {cluster}'s target",
            )
        uids = {c: env.uid(downs[c], namespaces[c], "deployment", "web") for c in CLUSTERS}

        # Mid-rollout (pods become ready after 3 s), kill -9 the owner of the first target.
        victim_cluster = CLUSTERS[0]
        victim = owners[victim_cluster]
        survivor_name = "r1" if victim == "r0" else "r0"
        survivor = replicas[survivor_name]
        replicas[victim].process.send_signal(signal.SIGKILL)
        replicas[victim].process.wait()
        killed = time.monotonic()
        env.eventually(
            lambda: shard_holders(survivor)[victim_cluster] == survivor_name,
            timeout=LEASE_DURATION + 5,
            what="the dead replica's target taken over",
        )
        assert time.monotonic() - killed < LEASE_DURATION + 3
        for cluster in CLUSTERS:
            out = env.rollout_status(survivor, cluster)
            assert 'deployment "web" successfully rolled out' in out
            down_dep = env.down_get(downs[cluster], namespaces[cluster], "deployment", "web")
            assert down_dep is not None
            # Written downstream once: never re-created, its spec never written again.
            assert down_dep["metadata"]["uid"] == uids[cluster]
            assert down_dep["metadata"]["generation"] == 1
            upstream = env.get(survivor, cluster, "deployment", "web")
            assert upstream["status"]["readyReplicas"] == 4
        # Later changes go through the new owner, once.
        survivor.kubectl("scale", "deployment/web", "--replicas=2", cluster=victim_cluster)
        env.eventually(
            lambda: env.replicas(downs[victim_cluster], namespaces[victim_cluster]) == 2,
            what="the scale through the new owner",
        )
        down_dep = env.down_get(
            downs[victim_cluster], namespaces[victim_cluster], "deployment", "web"
        )
        assert down_dep is not None and down_dep["metadata"]["generation"] == 2
        shard_lease = leases.object_name(shards.lease_name((victim_cluster, "target")))
        assert replica_env.lease_events(survivor, shard_lease)[-1] == "acquired"

        # The killed replica's own lease is cleared away once it has not changed for twice its
        # duration, so replicas starting later do not count it.
        env.eventually(
            lambda: leases.replica_lease(victim) not in replica_env.leases_of(survivor),
            timeout=2 * LEASE_DURATION + 8,
            what="the dead replica's lease deleted",
        )
        # A clean shutdown hands both targets to the replica left, at once.
        r2 = start_replica(tmp_path, etcd, "r2", first=r0, extra=env.UPSTREAM_ARGS)
        started.append(r2)
        assert survivor.stop() == 0
        stopped = time.monotonic()
        env.eventually(
            lambda: set(shard_holders(r2).values()) == {"r2"},
            timeout=LEASE_DURATION * 2,
            what="both targets on the last replica",
        )
        assert time.monotonic() - stopped < LEASE_DURATION
        for cluster in CLUSTERS:
            r2.kubectl("create", "configmap", "after-handover", cluster=cluster)
            env.eventually(
                lambda c=cluster: env.uid(downs[c], namespaces[c], "configmap", "after-handover"),
                what=f"a ConfigMap synced to {cluster}'s target by the last replica",
            )
            down_dep = env.down_get(downs[cluster], namespaces[cluster], "deployment", "web")
            assert down_dep is not None and down_dep["metadata"]["uid"] == uids[cluster]
    finally:
        for proc in started:
            proc.stop()
        for proc in started:
            assert "Traceback" not in proc.log(), proc.log()


def test_replicas_without_the_syncer_take_no_share(etcd: str, tmp_path: Path) -> None:
    started: list[ServerProcess] = []
    try:
        plain = start_replica(tmp_path, etcd, "plain", extra=("--controllers", "*,-syncer"))
        started.append(plain)
        syncing = start_replica(tmp_path, etcd, "syncing", first=plain, extra=env.UPSTREAM_ARGS)
        started.append(syncing)
        for cluster in CLUSTERS:
            down = server_process.start_server(tmp_path, extra_args=env.DOWNSTREAM_ARGS)
            started.append(down)
            env.attach(syncing, cluster, "target", down)
        # Two live replicas, but only one shares the syncer's work: it runs both targets.
        env.eventually(
            lambda: set(shard_holders(plain).values()) == {"syncing"},
            what="both targets on the replica running the syncer",
        )
        announced = replica_env.leases_of(plain)[leases.replica_lease("syncing")]
        sharded = announced["metadata"]["annotations"][leases.SHARDED_ANNOTATION].split(",")
        assert "syncer" in sharded
    finally:
        for proc in started:
            proc.stop()
        for proc in started:
            assert "Traceback" not in proc.log(), proc.log()

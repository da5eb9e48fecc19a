"""Replicas on one etcd: one controller leader by a Lease, failover on kill -9 and SIGSTOP,
hand-over on clean shutdown, one identity refused twice, work surviving a killed leader."""

from __future__ import annotations

import json
import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from minikcp.controllers import leases
from tests import server_process
from tests.e2e import replica_env
from tests.e2e.crd_manifests import crd
from tests.e2e.kubectl_output import parse_table
from tests.e2e.polling import eventually
from tests.e2e.replica_env import LEASE_DURATION, holder, start_replica, wait_new_holder
from tests.storage import etcd_server

pytestmark = pytest.mark.e2e


@pytest.fixture
def etcd(tmp_path: Path) -> Iterator[str]:
    if etcd_server.ETCD is None:
        pytest.skip("the etcd binary is not installed")
    (tmp_path / "etcd").mkdir()
    with etcd_server.running_etcd(tmp_path / "etcd") as address:
        yield address


def test_three_replicas_elect_one_leader_that_hands_over_and_fails_over(
    etcd: str, tmp_path: Path
) -> None:
    r0 = start_replica(tmp_path, etcd, "r0")
    r1 = start_replica(tmp_path, etcd, "r1", first=r0)
    r2 = start_replica(tmp_path, etcd, "r2", first=r0)
    by_name = {"r0": r0, "r1": r1, "r2": r2}
    try:
        leader, _ = replica_env.wait_holder(r1)
        assert leader == "r0"  # the first replica took it at once
        table = parse_table(r2.kubectl("get", "leases", "-A", cluster=leases.CLUSTER).stdout)
        assert table.header == ["NAMESPACE", "NAME", "HOLDER", "AGE"]
        held = {row["NAME"]: row["HOLDER"] for row in table.rows}
        assert held["minikcp-controllers"] == "r0"
        assert {held[f"minikcp-replica-{n}"] for n in by_name} == set(by_name)
        # Exactly one replica ever ran the controllers; the followers serve and are ready.
        time.sleep(1.0)
        for name, replica in by_name.items():
            acquired = replica_env.lease_events(replica, "minikcp-controllers")
            assert acquired == (["acquired"] if name == "r0" else [])
            assert replica.request("GET", "/readyz")[0] == 200

        # A clean shutdown releases the lease: the next leader follows within a retry or two.
        assert r0.stop() == 0
        assert replica_env.lease_events(r0, "minikcp-controllers") == ["acquired", "released"]
        # A replica that left cleanly leaves no lease of its own behind.
        assert "minikcp-replica-r0" not in replica_env.leases_of(r1)
        second, waited = wait_new_holder(r1, "r0")
        assert waited < LEASE_DURATION / 2
        lease = replica_env.leases_of(r1)["minikcp-controllers"]["spec"]
        assert lease["leaseTransitions"] == 1
        assert lease["leaseDurationSeconds"] == 3

        # kill -9: the last one takes over once the lease has expired on its own clock.
        by_name[second].process.send_signal(signal.SIGKILL)
        by_name[second].process.wait()
        survivor = next(n for n in ("r1", "r2") if n != second)
        third, waited = wait_new_holder(by_name[survivor], second)
        assert third == survivor
        assert waited < LEASE_DURATION + 2.0
        spec = replica_env.leases_of(by_name[survivor])["minikcp-controllers"]["spec"]
        assert spec["leaseTransitions"] == 2
        # The controllers work on the new leader: a namespace deletion completes.
        survivor_server = by_name[survivor]
        survivor_server.kubectl("create", "namespace", "after", cluster="t")
        survivor_server.kubectl("delete", "namespace", "after", "--timeout=15s", cluster="t")
    finally:
        for replica in by_name.values():
            replica.stop()
        for replica in by_name.values():
            assert "Traceback" not in replica.log(), replica.log()


def test_a_second_replica_with_the_same_identity_is_refused(etcd: str, tmp_path: Path) -> None:
    first = start_replica(tmp_path, etcd, "twin")
    try:
        with pytest.raises(RuntimeError) as refused:
            start_replica(tmp_path / "second", etcd, "twin", first=first)
        message = str(refused.value)
        assert "minikcp exited with 1" in message
        assert "another replica is running with identity 'twin'" in message
        assert holder(first, leases.replica_lease("twin")) == "twin"
    finally:
        assert first.stop() == 0


def _workspace(name: str) -> str:
    return json.dumps(
        {"apiVersion": "tenancy.kcp.io/v1alpha1", "kind": "Workspace", "metadata": {"name": name}}
    )


def test_a_crd_and_a_workspace_created_as_the_leader_dies_still_complete(
    etcd: str, tmp_path: Path
) -> None:
    leader = start_replica(tmp_path, etcd, "leader")
    follower = start_replica(tmp_path, etcd, "follower", first=leader)
    try:
        assert replica_env.wait_holder(follower)[0] == "leader"
        follower.kubectl("apply", "-f", "-", input=crd(), cluster="crds")
        follower.kubectl("create", "-f", "-", input=_workspace("team"), cluster="root")
        leader.process.send_signal(signal.SIGKILL)
        leader.process.wait()
        follower.kubectl(
            "wait",
            "--for=condition=Established",
            "crd/widgets.example.com",
            "--timeout=20s",
            cluster="crds",
        )
        follower.kubectl(
            "wait",
            "--for=jsonpath={.status.phase}=Ready",
            "workspace/team",
            "--timeout=20s",
            cluster="root",
        )
        # (The dead leader may have finished either before it died: the follower leads soon.)
        assert wait_new_holder(follower, "leader", timeout=LEASE_DURATION + 5)[0] == "follower"
        made = follower.kubectl("create", "configmap", "inside", cluster="root:team")
        assert made.returncode == 0
    finally:
        follower.stop()
        assert "Traceback" not in follower.log(), follower.log()


def test_a_stopped_leader_notices_it_lost_the_lease_before_writing(
    etcd: str, tmp_path: Path
) -> None:
    leader = start_replica(tmp_path, etcd, "paused")
    other = start_replica(tmp_path, etcd, "other", first=leader)
    try:
        assert replica_env.wait_holder(other)[0] == "paused"
        os.kill(leader.process.pid, signal.SIGSTOP)
        try:
            taker, _ = wait_new_holder(other, "paused", timeout=LEASE_DURATION + 5)
            assert taker == "other"
            # Work for the controllers while the old leader is frozen: only "other" may do it.
            other.kubectl("create", "namespace", "gone", cluster="t")
            other.kubectl("delete", "namespace", "gone", "--wait=false", cluster="t")
        finally:
            os.kill(leader.process.pid, signal.SIGCONT)
        other.kubectl("wait", "--for=delete", "namespace/gone", "--timeout=15s", cluster="t")
        deadline = time.monotonic() + 5
        while "lost" not in replica_env.lease_events(leader, "minikcp-controllers"):
            assert time.monotonic() < deadline, leader.log()
            time.sleep(0.1)
        time.sleep(2 * LEASE_DURATION / 3)
        assert holder(other) == "other"
        spec = replica_env.leases_of(other)["minikcp-controllers"]["spec"]
        assert spec["leaseTransitions"] == 1
        # The deletion was finished by the new leader only; the old one, woken past its renew
        # deadline, did nothing for it (any write it tried was fenced).
        assert "namespace t/gone finalized" in other.log()
        assert "namespace t/gone finalized" not in leader.log()
        assert leader.request("GET", "/readyz")[0] == 200
    finally:
        leader.stop()
        other.stop()
        for replica in (leader, other):
            assert "Traceback" not in replica.log(), replica.log()


def test_leases_are_lost_while_etcd_is_away_and_work_resumes(tmp_path: Path) -> None:
    if etcd_server.ETCD is None:
        pytest.skip("the etcd binary is not installed")
    (tmp_path / "etcd").mkdir()
    with etcd_server.restartable_etcd(tmp_path / "etcd") as etcd:
        leader = start_replica(tmp_path, etcd.address, "only")
        try:
            assert replica_env.wait_holder(leader)[0] == "only"
            etcd.stop()
            deadline = time.monotonic() + 10
            while "lost" not in replica_env.lease_events(leader, "minikcp-controllers"):
                assert time.monotonic() < deadline, leader.log()
                time.sleep(0.2)
            time.sleep(10 - 2)  # about ten seconds away in all
            etcd.start()
            # The client reconnects (gRPC backs off a little), the replica takes its leases
            # again and the controllers work as before.
            eventually(
                lambda: (
                    leader.kubectl(
                        "create", "namespace", "back", cluster="t", check=False
                    ).returncode
                    == 0
                ),
                timeout=30,
                what="a namespace created once etcd is back",
            )
            leader.kubectl("delete", "namespace", "back", "--timeout=30s", cluster="t")
            events = replica_env.lease_events(leader, "minikcp-controllers")
            assert events[:2] == ["acquired", "lost"] and events[-1] == "acquired", events
            assert holder(leader) == "only"
            assert leader.request("GET", "/readyz")[0] == 200
        finally:
            leader.stop()
        assert "Traceback" not in leader.log(), leader.log()


def test_one_sqlite_process_writes_no_lease_and_waits_for_none(tmp_path: Path) -> None:
    alone = server_process.start_server(tmp_path)
    try:
        # The controllers run at once: a namespace deletion completes without any election.
        alone.kubectl("create", "namespace", "quick", cluster="t")
        alone.kubectl("delete", "namespace", "quick", "--timeout=10s", cluster="t")
        assert replica_env.leases_of(alone) == {}
        assert "lease" not in alone.log()
    finally:
        assert alone.stop() == 0

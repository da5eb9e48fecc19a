"""StatefulSet, DaemonSet, CronJob and PVC status summarised across targets: tables, and kubectl's
rollout viewers as oracle (each target done exactly when the summary is done)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from minikcp.syncer import aggregate, aggregate_workloads, replicas

NOW = "2026-01-01T00:00:10Z"


def sts_rollout_complete(sts: Mapping[str, Any], status: Mapping[str, Any]) -> bool:
    """kubectl's StatefulSetStatusViewer (pkg/polymorphichelpers/rollout_status.go)."""
    spec = sts["spec"]
    observed = status.get("observedGeneration", 0)
    if observed == 0 or sts["metadata"]["generation"] > observed:
        return False
    if status.get("readyReplicas", 0) < spec["replicas"]:
        return False
    rolling = spec["updateStrategy"].get("rollingUpdate")
    if rolling is not None:
        partition = rolling.get("partition")
        # Partitioned or not, kubectl is done here once enough pods are updated.
        return partition is None or status.get("updatedReplicas", 0) >= (
            spec["replicas"] - partition
        )
    return bool(status.get("updateRevision") == status.get("currentRevision"))


def ds_rollout_complete(ds: Mapping[str, Any], status: Mapping[str, Any]) -> bool:
    """kubectl's DaemonSetStatusViewer."""
    if ds["metadata"]["generation"] > status.get("observedGeneration", 0):
        return False
    desired = status.get("desiredNumberScheduled", 0)
    if status.get("updatedNumberScheduled", 0) < desired:
        return False
    return bool(status.get("numberAvailable", 0) >= desired)


def _sts(replicas: int, partition: int | None = 0, generation: int = 2) -> dict[str, Any]:
    strategy: dict[str, Any] = {"type": "RollingUpdate"}
    if partition is not None:
        strategy["rollingUpdate"] = {"partition": partition}
    return {
        "metadata": {"name": "db", "namespace": "team", "generation": generation},
        "spec": {"replicas": replicas, "updateStrategy": strategy},
    }


def _sts_view(
    name: str,
    share: int,
    status: dict[str, Any] | None,
    *,
    partition: int | None = 0,
    gen: int = 2,
    stale: bool = False,
) -> aggregate.TargetView:
    strategy: dict[str, Any] = {"type": "RollingUpdate"}
    if partition is not None:
        strategy["rollingUpdate"] = {"partition": partition}
    return aggregate.TargetView(
        name=name,
        status=status,
        generation=1,
        upstream_generation=gen,
        stale=stale,
        spec={"replicas": share, "updateStrategy": strategy},
    )


def _sts_done(share: int, revision: str = "db-2") -> dict[str, Any]:
    return {
        "observedGeneration": 1,
        "replicas": share,
        "readyReplicas": share,
        "currentReplicas": share,
        "updatedReplicas": share,
        "availableReplicas": share,
        "currentRevision": revision,
        "updateRevision": revision,
    }


def test_stateful_set_every_target_done() -> None:
    sts = _sts(5)
    views = [_sts_view("east", 3, _sts_done(3)), _sts_view("west", 2, _sts_done(2))]
    status = aggregate_workloads.stateful_set(sts, views, NOW)
    assert status == {
        "observedGeneration": 2,
        "replicas": 5,
        "readyReplicas": 5,
        "currentReplicas": 5,
        "updatedReplicas": 5,
        "currentRevision": "db-2",
        "updateRevision": "db-2",
        "availableReplicas": 5,
    }
    assert sts_rollout_complete(sts, status)


def test_stateful_set_target_without_the_object_yet() -> None:
    sts = _sts(5)
    views = [_sts_view("east", 3, _sts_done(3)), _sts_view("west", 0, None)]
    status = aggregate_workloads.stateful_set(sts, views, NOW)
    # Go prints replicas and availableReplicas even when 0; no observedGeneration yet.
    assert "observedGeneration" not in status
    assert status["replicas"] == 3 and status["availableReplicas"] == 3
    assert not sts_rollout_complete(sts, status)


def test_stateful_set_pods_one_target_removes_do_not_count_for_another() -> None:
    """east scales 4 -> 3 and still has 4 ready pods; west has 1 of its 2: not done."""
    sts = _sts(5)
    east = {**_sts_done(4), "replicas": 4}
    west = {**_sts_done(2), "readyReplicas": 1, "availableReplicas": 1}
    views = [_sts_view("east", 3, east), _sts_view("west", 2, west)]
    status = aggregate_workloads.stateful_set(sts, views, NOW)
    assert status["replicas"] == 6 and status["readyReplicas"] == 4
    assert not sts_rollout_complete(sts, status)


def test_stateful_set_revisions_differ_while_a_target_rolls() -> None:
    sts = _sts(5, partition=None)
    rolling = {**_sts_done(2, "db-2"), "currentRevision": "db-1", "updatedReplicas": 1}
    views = [_sts_view("east", 3, _sts_done(3), partition=None)]
    views.append(_sts_view("west", 2, rolling, partition=None))
    status = aggregate_workloads.stateful_set(sts, views, NOW)
    assert (status["currentRevision"], status["updateRevision"]) == ("db-1", "db-2")
    assert not sts_rollout_complete(sts, status)
    views[1] = _sts_view("west", 2, _sts_done(2), partition=None)
    done = aggregate_workloads.stateful_set(sts, views, NOW)
    assert done["currentRevision"] == done["updateRevision"] == "db-2"
    assert sts_rollout_complete(sts, done)


def test_stateful_set_behind_the_generation_adds_no_updated_replicas() -> None:
    sts = _sts(5)
    sts["status"] = {"observedGeneration": 1}
    views = [_sts_view("east", 3, _sts_done(3)), _sts_view("west", 2, _sts_done(2), gen=1)]
    status = aggregate_workloads.stateful_set(sts, views, NOW)
    assert status["observedGeneration"] == 1 and status["updatedReplicas"] == 3


def test_stateful_set_stale_target_counts_no_ready_replicas() -> None:
    sts = _sts(5)
    sts["status"] = {"observedGeneration": 2}
    views = [_sts_view("east", 3, _sts_done(3)), _sts_view("west", 2, _sts_done(2), stale=True)]
    status = aggregate_workloads.stateful_set(sts, views, NOW)
    assert status["readyReplicas"] == 3 and status["availableReplicas"] == 3
    assert not sts_rollout_complete(sts, status)


def test_stateful_set_partition_parts_count_per_target() -> None:
    """Partition 4 of 5 kept back: east (3 of them) may not stand in for west's one update."""
    sts = _sts(5, partition=4)
    east = {**_sts_done(3), "updatedReplicas": 3}
    west = {**_sts_done(2), "updatedReplicas": 0}
    views = [_sts_view("east", 3, east, partition=3), _sts_view("west", 2, west, partition=1)]
    status = aggregate_workloads.stateful_set(sts, views, NOW)
    assert status.get("updatedReplicas", 0) == 0
    assert not sts_rollout_complete(sts, status)
    views[1] = _sts_view("west", 2, {**west, "updatedReplicas": 1}, partition=1)
    assert sts_rollout_complete(sts, aggregate_workloads.stateful_set(sts, views, NOW))


sts_target = st.tuples(
    st.integers(0, 4),  # share
    st.integers(0, 5),  # ready
    st.integers(0, 5),  # updated
    st.booleans(),  # observed its generation
    st.booleans(),  # made from the current upstream generation
    st.booleans(),  # stale
    st.booleans(),  # current revision == update revision
)


@given(st.lists(sts_target, min_size=1, max_size=4), st.integers(0, 12), st.booleans())
def test_stateful_set_rollout_completes_exactly_when_every_target_has(
    states: list[Any], partition: int, with_rolling_update: bool
) -> None:
    total = sum(s[0] for s in states)
    shares = {f"t{i}": s[0] for i, s in enumerate(states)}
    parts = replicas.partition_split(partition, shares)
    sts = _sts(total, partition if with_rolling_update else None)
    views = []
    each_done = []
    for i, (share, ready, updated, observed, current, stale, at_revision) in enumerate(states):
        name = f"t{i}"
        part = parts[name] if with_rolling_update else None
        status = {
            "observedGeneration": 1 if observed else 0,
            "replicas": max(share, ready),
            "readyReplicas": ready,
            "availableReplicas": ready,
            "updatedReplicas": updated,
            "currentRevision": "r1" if at_revision else "r0",
            "updateRevision": "r1",
        }
        view = _sts_view(name, share, status, partition=part, gen=2 if current else 1, stale=stale)
        views.append(view)
        down = _sts(share, part, generation=1)
        each_done.append(current and not stale and sts_rollout_complete(down, status))
    status = aggregate_workloads.stateful_set(sts, views, NOW)
    assert sts_rollout_complete(sts, status) == all(each_done)


def _ds_done(desired: int) -> dict[str, Any]:
    return {
        "observedGeneration": 1,
        "desiredNumberScheduled": desired,
        "currentNumberScheduled": desired,
        "updatedNumberScheduled": desired,
        "numberReady": desired,
        "numberAvailable": desired,
        "numberMisscheduled": 0,
    }


def _ds_view(
    name: str, status: dict[str, Any] | None, *, gen: int = 2, stale: bool = False
) -> aggregate.TargetView:
    return aggregate.TargetView(
        name=name, status=status, generation=1, upstream_generation=gen, stale=stale
    )


_DS = {"metadata": {"name": "agent", "generation": 2}, "spec": {}}


def test_daemon_set_sums_every_target() -> None:
    views = [_ds_view("east", _ds_done(3)), _ds_view("west", _ds_done(1))]
    status = aggregate_workloads.daemon_set(_DS, views, NOW)
    assert status == {
        "currentNumberScheduled": 4,
        "numberMisscheduled": 0,
        "desiredNumberScheduled": 4,
        "numberReady": 4,
        "observedGeneration": 2,
        "updatedNumberScheduled": 4,
        "numberAvailable": 4,
    }
    assert ds_rollout_complete(_DS, status)


def test_daemon_set_one_target_rolling() -> None:
    west = {**_ds_done(2), "updatedNumberScheduled": 1, "numberAvailable": 1, "numberReady": 1}
    west["numberUnavailable"] = 1
    views = [_ds_view("east", _ds_done(3)), _ds_view("west", west)]
    status = aggregate_workloads.daemon_set(_DS, views, NOW)
    assert status["updatedNumberScheduled"] == 4 and status["numberUnavailable"] == 1
    assert not ds_rollout_complete(_DS, status)


def test_daemon_set_before_any_target_reports() -> None:
    status = aggregate_workloads.daemon_set(_DS, [_ds_view("east", None)], NOW)
    assert status == {
        "currentNumberScheduled": 0,
        "numberMisscheduled": 0,
        "desiredNumberScheduled": 0,
        "numberReady": 0,
    }
    assert not ds_rollout_complete(_DS, status)


ds_target = st.tuples(
    st.integers(0, 4),  # desired
    st.integers(0, 5),  # updated
    st.integers(0, 5),  # available
    st.booleans(),  # observed its generation
    st.booleans(),  # made from the current upstream generation
    st.booleans(),  # stale
    st.booleans(),  # reported at all
)


@given(st.lists(ds_target, min_size=1, max_size=4))
def test_daemon_set_rollout_completes_exactly_when_every_target_has(states: list[Any]) -> None:
    views = []
    each_done = []
    for i, (desired, updated, avail, observed, current, stale, reported) in enumerate(states):
        status = {
            "observedGeneration": 1 if observed else 0,
            "desiredNumberScheduled": desired,
            "updatedNumberScheduled": updated,
            "numberAvailable": avail,
            "numberReady": avail,
        }
        views.append(
            _ds_view(f"t{i}", status if reported else None, gen=2 if current else 1, stale=stale)
        )
        down = {"metadata": {"generation": 1}}
        each_done.append(reported and current and not stale and ds_rollout_complete(down, status))
    status = aggregate_workloads.daemon_set(_DS, views, NOW)
    assert ds_rollout_complete(_DS, status) == all(each_done)


def test_cron_job_latest_times_and_every_active_job() -> None:
    cj = {"metadata": {"name": "backup", "namespace": "team"}}
    east = {
        "active": [{"kind": "Job", "namespace": "kcp-abc", "name": "backup-2", "uid": "e2"}],
        "lastScheduleTime": "2026-01-01T00:10:00Z",
        "lastSuccessfulTime": "2026-01-01T00:05:30Z",
    }
    west = {
        "active": [{"kind": "Job", "namespace": "kcp-def", "name": "backup-1", "uid": "w1"}],
        "lastScheduleTime": "2026-01-01T00:05:00Z",
        "lastSuccessfulTime": "2026-01-01T00:06:00Z",
    }
    views = [_ds_view("east", east), _ds_view("west", west), _ds_view("north", None)]
    status = aggregate_workloads.cron_job(cj, views, NOW)
    assert status == {
        "active": [
            {"kind": "Job", "namespace": "team", "name": "backup-1", "uid": "w1"},
            {"kind": "Job", "namespace": "team", "name": "backup-2", "uid": "e2"},
        ],
        "lastScheduleTime": "2026-01-01T00:10:00Z",
        "lastSuccessfulTime": "2026-01-01T00:06:00Z",
    }
    assert aggregate_workloads.cron_job(cj, [_ds_view("east", None)], NOW) == {}


def _claim(phase: str, size: str = "1Gi") -> dict[str, Any]:
    return {"phase": phase, "accessModes": ["ReadWriteOnce"], "capacity": {"storage": size}}


def test_claim_shows_its_least_advanced_target() -> None:
    pvc = {"metadata": {"name": "data"}, "status": {"phase": "Pending"}}
    cases = [
        ([("east", _claim("Bound", "2Gi")), ("west", _claim("Bound"))], _claim("Bound", "2Gi")),
        ([("east", _claim("Bound")), ("west", {"phase": "Pending"})], {"phase": "Pending"}),
        ([("east", _claim("Lost")), ("west", {"phase": "Pending"})], _claim("Lost")),
        ([("east", _claim("Bound")), ("west", None)], {"phase": "Pending"}),
        ([("west", _claim("Bound")), ("east", _claim("Bound", "3Gi"))], _claim("Bound", "3Gi")),
    ]
    for targets, expected in cases:
        views = [_ds_view(name, status) for name, status in targets]
        assert aggregate_workloads.persistent_volume_claim(pvc, views, NOW) == expected, targets

"""Deployment status summarised across targets: tables, and kubectl's rollout check as oracle."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from minikcp.syncer import aggregate

NOW = "2026-01-01T00:00:10Z"


def _deployment(replicas: int = 5, generation: int = 2, status: Any = None) -> dict[str, Any]:
    out: dict[str, Any] = {
        "metadata": {"name": "web", "generation": generation},
        "spec": {"replicas": replicas},
    }
    if status is not None:
        out["status"] = status
    return out


def _done(share: int, generation: int = 1) -> dict[str, Any]:
    return {
        "observedGeneration": generation,
        "replicas": share,
        "updatedReplicas": share,
        "readyReplicas": share,
        "availableReplicas": share,
        "conditions": [
            {"type": "Available", "status": "True", "reason": "MinimumReplicasAvailable"},
            {"type": "Progressing", "status": "True", "reason": "NewReplicaSetAvailable"},
        ],
    }


def _rolling(share: int, updated: int, available: int) -> dict[str, Any]:
    return {
        "observedGeneration": 1,
        "replicas": share + 1,
        "updatedReplicas": updated,
        "readyReplicas": available,
        "availableReplicas": available,
        "conditions": [
            {"type": "Available", "status": "True", "reason": "MinimumReplicasAvailable"},
            {"type": "Progressing", "status": "True", "reason": "ReplicaSetUpdated"},
        ],
    }


def rollout_complete(dep: Mapping[str, Any], status: Mapping[str, Any]) -> bool:
    """kubectl's DeploymentStatusViewer (pkg/polymorphichelpers/rollout_status.go)."""
    if dep["metadata"]["generation"] > status.get("observedGeneration", 0):
        return False
    for c in status.get("conditions", ()):
        if c["type"] == "Progressing" and c.get("reason") == "ProgressDeadlineExceeded":
            return False
    updated = status.get("updatedReplicas", 0)
    if updated < dep["spec"]["replicas"]:
        return False
    if status.get("replicas", 0) > updated:
        return False
    return status.get("availableReplicas", 0) >= updated


def available(status: Mapping[str, Any]) -> bool:
    return any(
        c["type"] == "Available" and c["status"] == "True" for c in status.get("conditions", ())
    )


def view(name: str, status: Any, *, gen: int = 2, stale: bool = False) -> aggregate.TargetView:
    return aggregate.TargetView(
        name=name, status=status, generation=1, upstream_generation=gen, stale=stale
    )


def test_every_target_done_completes_the_rollout() -> None:
    dep = _deployment()
    status = aggregate.summarise(dep, [view("a", _done(3)), view("b", _done(2))], NOW)
    assert status["observedGeneration"] == 2
    assert status["replicas"] == status["updatedReplicas"] == status["availableReplicas"] == 5
    assert "unavailableReplicas" not in status
    assert rollout_complete(dep, status) and available(status)
    progressing = next(c for c in status["conditions"] if c["type"] == "Progressing")
    assert progressing["reason"] == "NewReplicaSetAvailable"


def test_one_target_still_rolling_keeps_the_rollout_waiting() -> None:
    dep = _deployment()
    status = aggregate.summarise(dep, [view("a", _done(3)), view("b", _rolling(2, 1, 1))], NOW)
    assert status["updatedReplicas"] == 4 and status["replicas"] == 6
    assert status["unavailableReplicas"] == 1
    assert not rollout_complete(dep, status)


def test_a_target_behind_the_generation_holds_observed_generation() -> None:
    dep = _deployment(status={"observedGeneration": 1})
    lagging = view("b", _done(2), gen=1)  # made from the previous upstream generation
    status = aggregate.summarise(dep, [view("a", _done(3)), lagging], NOW)
    assert status["observedGeneration"] == 1
    assert status["updatedReplicas"] == 3  # b's pods come from an older template
    assert not rollout_complete(dep, status)


def test_a_target_without_the_object_yet() -> None:
    dep = _deployment()
    status = aggregate.summarise(dep, [view("a", _done(3)), view("b", None)], NOW)
    assert "observedGeneration" not in status
    assert not rollout_complete(dep, status)
    progressing = next(c for c in status["conditions"] if c["type"] == "Progressing")
    assert progressing["reason"] == "ReplicaSetUpdated"


def test_a_stale_target_counts_no_ready_replicas_and_makes_it_unavailable() -> None:
    dep = _deployment()
    status = aggregate.summarise(dep, [view("a", _done(3)), view("b", _done(2), stale=True)], NOW)
    assert status["readyReplicas"] == 3 and status["availableReplicas"] == 3
    assert status["unavailableReplicas"] == 2
    cond = next(c for c in status["conditions"] if c["type"] == "Available")
    assert (cond["status"], cond["reason"]) == ("False", "ClusterUnreachable")
    assert "b" in cond["message"]
    assert not available(status)


def test_progress_deadline_on_one_target_fails_the_rollout() -> None:
    failed = _rolling(2, 1, 1)
    failed["conditions"][1] = {
        "type": "Progressing",
        "status": "False",
        "reason": "ProgressDeadlineExceeded",
    }
    dep = _deployment()
    status = aggregate.summarise(dep, [view("a", _done(3)), view("b", failed)], NOW)
    cond = next(c for c in status["conditions"] if c["type"] == "Progressing")
    assert (cond["status"], cond["reason"]) == ("False", "ProgressDeadlineExceeded")
    assert "b" in cond["message"]


def test_sync_errors_show_as_replica_failure() -> None:
    dep = _deployment()
    blocked = aggregate.TargetView(name="b", status=None, error="exists downstream and is not ours")
    status = aggregate.summarise(dep, [view("a", _done(3)), blocked], NOW)
    cond = next(c for c in status["conditions"] if c["type"] == "ReplicaFailure")
    assert cond["status"] == "True" and "b: exists downstream" in cond["message"]


def test_unchanged_input_gives_the_same_status() -> None:
    """Times are kept while nothing changes, so a repeated summary writes nothing."""
    dep = _deployment()
    views = [view("a", _done(3)), view("b", _done(2))]
    first = aggregate.summarise(dep, views, "2026-01-01T00:00:00Z")
    again = aggregate.summarise(_deployment(status=first), views, "2026-01-01T00:09:00Z")
    assert again == first
    # A change of status moves lastTransitionTime; the other condition keeps its times.
    stale = [view("a", _done(3)), view("b", _done(2), stale=True)]
    changed = aggregate.summarise(_deployment(status=first), stale, "2026-01-01T00:10:00Z")
    by_type = {c["type"]: c for c in changed["conditions"]}
    assert by_type["Available"]["lastTransitionTime"] == "2026-01-01T00:10:00Z"


target_state = st.tuples(
    st.integers(0, 4),  # share
    st.integers(0, 4),  # updated
    st.integers(0, 4),  # available
    st.booleans(),  # observed the generation
    st.booleans(),  # stale
)


@given(st.lists(target_state, min_size=1, max_size=4))
def test_rollout_completes_exactly_when_every_target_has(states: list[Any]) -> None:
    total = sum(s[0] for s in states)
    dep = _deployment(replicas=total)
    views = []
    each_done = []
    for i, (share, updated, avail, observed, stale) in enumerate(states):
        updated, avail = min(updated, share), min(avail, share)
        status = {
            "observedGeneration": 1 if observed else 0,
            "replicas": share,
            "updatedReplicas": updated,
            "readyReplicas": avail,
            "availableReplicas": avail,
            "conditions": [],
        }
        views.append(view(f"t{i}", status, stale=stale))
        each_done.append(observed and not stale and updated == share and avail == share)
    status = aggregate.summarise(dep, views, NOW)
    assert rollout_complete(dep, status) == all(each_done)

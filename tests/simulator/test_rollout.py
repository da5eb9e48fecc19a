"""The deployment controller's arithmetic (pure functions), against upstream's rules."""

from __future__ import annotations

from typing import Any

import pytest

from minikcp.simulator import rollout
from tests.simulator.builders import deployment, rs, template


@pytest.mark.parametrize(
    ("data", "expected"),
    [(b"", 0x811C9DC5), (b"a", 0xE40C292C), (b"foobar", 0xBF9CF968)],
)
def test_fnv32a_matches_the_reference_vectors(data: bytes, expected: int) -> None:
    assert rollout.fnv32a(data) == expected


@pytest.mark.parametrize(
    ("text", "expected"), [("0123456789", "456789bcdf"), ("", ""), ("42", "86")]
)
def test_safe_encode_maps_into_the_safe_alphabet(text: str, expected: str) -> None:
    assert rollout.safe_encode(text) == expected


def test_pod_template_hash_depends_on_the_template_and_collisions_only() -> None:
    first = rollout.pod_template_hash(template())
    assert first == rollout.pod_template_hash(template())
    assert set(first) <= set("bcdfghjklmnpqrstvwxz2456789") and 1 <= len(first) <= 10
    assert rollout.pod_template_hash(template(image="nginx:2")) != first
    assert rollout.pod_template_hash(template(), 1) != first
    # The hash label itself never changes the hash (a ReplicaSet's template carries it).
    assert rollout.pod_template_hash(template(**{"pod-template-hash": first})) == first
    assert rollout.equal_ignore_hash(template(**{"pod-template-hash": "x"}), template())
    assert not rollout.equal_ignore_hash(template(image="a"), template(image="b"))


@pytest.mark.parametrize(
    ("value", "total", "round_up", "expected"),
    [
        (None, 10, True, 0),
        (3, 10, False, 3),
        ("25%", 3, True, 1),
        ("25%", 3, False, 0),
        ("50%", 5, False, 2),
        ("100%", 4, True, 4),
    ],
)
def test_scaled_value(value: int | str | None, total: int, round_up: bool, expected: int) -> None:
    assert rollout.scaled_value(value, total, round_up) == expected


@pytest.mark.parametrize(
    ("surge", "unavailable", "replicas", "expected"),
    [
        ("25%", "25%", 3, (1, 0)),
        ("25%", "25%", 10, (3, 2)),
        (0, 0, 3, (0, 1)),  # never both zero
        (2, "50%", 5, (2, 2)),
    ],
)
def test_fenceposts(
    surge: int | str, unavailable: int | str, replicas: int, expected: tuple[int, int]
) -> None:
    assert rollout.fenceposts(deployment(replicas, surge=surge, unavailable=unavailable)) == (
        expected
    )


@pytest.mark.parametrize(
    ("dep", "new", "olds", "expected"),
    [
        # First rollout: everything at once.
        (deployment(3), rs("n", 0), [], 3),
        # Rolling update of 3 with maxSurge 1: one new pod at a time.
        (deployment(3), rs("n", 0), [rs("o", 3, 3)], 1),
        (deployment(3), rs("n", 1, 1), [rs("o", 3, 3)], 1),
        (deployment(3), rs("n", 1, 1), [rs("o", 2, 2)], 2),
        # Scaling down the only ReplicaSet.
        (deployment(2), rs("n", 5, 5), [], 2),
        # Recreate: the new pods wait for the old ones to be gone.
        (deployment(3, recreate=True), rs("n", 0), [rs("o", 3, 3)], 0),
        (deployment(3, recreate=True), rs("n", 0), [rs("o", 0)], 3),
    ],
)
def test_new_rs_replicas(
    dep: dict[str, Any], new: dict[str, Any], olds: list[dict[str, Any]], expected: int
) -> None:
    assert rollout.new_rs_replicas(dep, new, olds) == expected


@pytest.mark.parametrize(
    ("dep", "new", "olds", "expected"),
    [
        # The new pod is not available yet: nothing may go.
        (deployment(3), rs("n", 1), [rs("o", 3, 3)], {}),
        # It is: one old pod goes.
        (deployment(3), rs("n", 1, 1), [rs("o", 3, 3)], {"o": 2}),
        # Unhealthy old pods go first, and the oldest ReplicaSet first.
        (
            deployment(4, unavailable=1, surge=1),
            rs("n", 1),
            [
                rs("a", 2, 1, created="2026-01-01T00:00:00Z"),
                rs("b", 2, 2, created="2026-01-02T00:00:00Z"),
            ],
            {"a": 1},
        ),
        # Recreate scales every old ReplicaSet to zero at once.
        (deployment(3, recreate=True), rs("n", 0), [rs("o", 3, 3)], {"o": 0}),
        # Nothing old left: nothing to do.
        (deployment(3), rs("n", 3, 3), [rs("o", 0)], {}),
    ],
)
def test_old_rs_replicas(
    dep: dict[str, Any],
    new: dict[str, Any],
    olds: list[dict[str, Any]],
    expected: dict[str, int],
) -> None:
    assert rollout.old_rs_replicas(dep, new, olds) == expected


def test_new_replica_set_carries_hash_revision_and_owner() -> None:
    dep = deployment(3)
    dep["metadata"]["namespace"] = "default"
    dep["metadata"]["annotations"] = {
        "team": "a",
        "kubectl.kubernetes.io/last-applied-configuration": "{}",
    }
    dep["apiVersion"], dep["kind"] = "apps/v1", "Deployment"
    dep["spec"]["selector"] = {"matchLabels": {"app": "web"}}
    body = rollout.new_replica_set(dep, "abc12", 4, 1)
    meta = body["metadata"]
    assert meta["name"] == "web-abc12"
    assert meta["labels"] == {"app": "web", "pod-template-hash": "abc12"}
    assert meta["annotations"] == {
        "team": "a",
        "deployment.kubernetes.io/revision": "4",
        "deployment.kubernetes.io/desired-replicas": "3",
        "deployment.kubernetes.io/max-replicas": "4",
    }
    assert meta["ownerReferences"] == [
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "name": "web",
            "uid": "d-1",
            "controller": True,
            "blockOwnerDeletion": True,
        }
    ]
    assert body["spec"]["selector"]["matchLabels"] == {"app": "web", "pod-template-hash": "abc12"}
    assert body["spec"]["template"]["metadata"]["labels"]["pod-template-hash"] == "abc12"
    assert "pod-template-hash" not in dep["spec"]["template"]["metadata"]["labels"]
    assert body["spec"]["replicas"] == 1


def test_find_new_prefers_the_oldest_matching_replica_set() -> None:
    dep = deployment(3)
    h = rollout.pod_template_hash(dep["spec"]["template"])
    other = rs("other", 1)
    other["spec"]["template"] = template(image="busybox")
    match = rs("match", 1, created="2026-01-02T00:00:00Z")
    match["spec"]["template"] = template(**{"pod-template-hash": h})
    assert rollout.find_new(dep, [other, match], h) is match
    assert rollout.find_new(dep, [other], h) is None


@pytest.mark.parametrize(
    ("dep", "new", "olds", "expected"),
    [
        # The one active ReplicaSet follows spec.replicas, even if it is not the new one.
        (deployment(5), None, [rs("o", 3, 3)], {"o": 5}),
        (deployment(2), rs("n", 3, 3), [rs("o", 0)], {"n": 2}),
        # Nothing active: the new ReplicaSet, or else the newest old one.
        (deployment(2), rs("n", 0), [rs("o", 0)], {"n": 2}),
        (
            deployment(2),
            None,
            [rs("a", 0), rs("b", 0, created="2026-01-02T00:00:00Z")],
            {"b": 2},
        ),
        # A rollout paused half-way keeps its sizes; nothing to do when they already match.
        (deployment(3), rs("n", 1, 1), [rs("o", 3, 3)], {}),
        (deployment(3), rs("n", 3, 3), [], {}),
    ],
)
def test_paused_replicas(
    dep: dict[str, Any],
    new: dict[str, Any] | None,
    olds: list[dict[str, Any]],
    expected: dict[str, int],
) -> None:
    assert rollout.paused_replicas(dep, new, olds) == expected

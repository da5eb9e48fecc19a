"""Targets' views published on upstream objects for other replicas, and stored SyncTargets as
placement candidates, as tables."""

from __future__ import annotations

from typing import Any

import pytest

from minikcp.registry.objects import StoredObject
from minikcp.syncer import placement, status_views, stored_targets
from minikcp.syncer.aggregate import TargetView

FULL = TargetView(
    name="east",
    status={"replicas": 2, "readyReplicas": 2, "observedGeneration": 3},
    generation=3,
    upstream_generation=2,
    stale=True,
    error="exists downstream and is not ours",
    spec={"replicas": 2, "updateStrategy": {"type": "RollingUpdate"}},
)


@pytest.mark.parametrize(
    "view",
    [FULL, TargetView(name="west"), TargetView(name="w", status={}, spec={"replicas": 0})],
)
def test_a_view_survives_the_annotation(view: TargetView) -> None:
    assert status_views.decode(status_views.encode(view)) == view


def test_only_the_spec_fields_summaries_read_are_published() -> None:
    view = TargetView(name="e", spec={"replicas": 1, "template": {"spec": {"containers": []}}})
    decoded = status_views.decode(status_views.encode(view))
    assert decoded is not None and decoded.spec == {"replicas": 1}


@pytest.mark.parametrize(
    "text", [None, "", "{", "[]", '{"status": {}}', '{"name": "e", "generation": "3"}']
)
def test_unreadable_views_are_not_reported(text: str | None) -> None:
    assert status_views.decode(text) is None


@pytest.mark.parametrize(
    ("target", "key"),
    [
        ("east", "status.workload.minikcp.io/east"),
        ("a.b-c", "status.workload.minikcp.io/a.b-c"),
    ],
)
def test_key_of(target: str, key: str) -> None:
    assert status_views.key_of(target) == key


def test_long_target_names_get_a_short_key() -> None:
    long = "t" * 100
    key = status_views.key_of(long)
    assert len(key.removeprefix(status_views.PREFIX)) <= 63
    assert key != status_views.key_of(long + "x")


def test_publish_writes_ours_keeps_others_and_drops_unplaced() -> None:
    east, west = TargetView(name="east"), TargetView(name="west", stale=True)
    annotations: dict[str, str] = {
        "keep": "me",
        status_views.key_of("west"): status_views.encode(west),
        status_views.key_of("gone"): status_views.encode(TargetView(name="gone")),
    }
    assert status_views.publish(annotations, [east], ["east", "west"])
    assert annotations["keep"] == "me"
    assert status_views.published(annotations, ["east", "west"]) == [east, west]
    assert status_views.key_of("gone") not in annotations
    # The same again changes nothing (no write).
    assert not status_views.publish(annotations, [east], ["east", "west"])
    # A target not yet reported: fewer views than placed targets.
    assert status_views.published(annotations, ["east", "north"]) == [east]
    assert status_views.clear(annotations)
    assert annotations == {"keep": "me"}


def test_a_view_under_another_targets_key_is_ignored() -> None:
    annotations = {status_views.key_of("east"): status_views.encode(TargetView(name="west"))}
    assert status_views.published(annotations, ["east"]) == []


def test_content_mark_ignores_status_views_and_write_bookkeeping() -> None:
    base: dict[str, Any] = {
        "metadata": {"name": "web", "resourceVersion": "1", "annotations": {"a": "1"}},
        "spec": {"replicas": 2},
        "status": {"replicas": 1},
    }
    viewed = {
        **base,
        "metadata": {
            **base["metadata"],
            "resourceVersion": "2",
            "managedFields": [{"manager": "x"}],
            "annotations": {"a": "1", status_views.key_of("east"): "{}"},
        },
    }
    mark = status_views.content_mark(base)
    assert status_views.content_mark(viewed) == mark
    assert status_views.content_mark({**base, "spec": {"replicas": 3}}) != mark
    assert status_views.content_mark({**base, "status": {"replicas": 2}}) == mark
    status = status_views.status_mark(base)
    assert status_views.status_mark(viewed) == status
    assert status_views.status_mark({**base, "spec": {"replicas": 3}}) == status
    assert status_views.status_mark({**base, "status": {"replicas": 2}}) != status


def _target(status: dict[str, Any], **meta: Any) -> dict[str, Any]:
    return {"metadata": {"name": "east", **meta}, "spec": {}, "status": status}


READY = {"conditions": [{"type": "Ready", "status": "True"}]}
BEAT = {"lastSyncerHeartbeatTime": "2026-01-01T00:00:00Z"}


@pytest.mark.parametrize(
    ("obj", "candidate"),
    [
        (_target({}), placement.Candidate("east")),
        (_target(READY), placement.Candidate("east", ready=True)),
        (_target({**READY, **BEAT}), placement.Candidate("east", ready=True, reached=True)),
        (
            _target(BEAT, labels={"region": "eu"}, deletionTimestamp="2026-01-01T00:00:00Z"),
            placement.Candidate("east", {"region": "eu"}, reached=True, deleting=True),
        ),
    ],
)
def test_stored_candidate(obj: dict[str, Any], candidate: placement.Candidate) -> None:
    assert stored_targets.candidate(obj) == candidate


def test_accepted_kinds_and_served_clusters() -> None:
    obj = _target(
        {
            "syncedResources": [
                {"group": "apps", "resource": "deployments", "state": "Accepted"},
                {"group": "", "resource": "services", "state": "Accepted"},
                {"group": "batch", "resource": "cronjobs", "state": "Incompatible"},
            ]
        }
    )
    assert stored_targets.accepted(obj) == {"deployments.apps", "services"}
    assert stored_targets.serves(obj, "shop") == {"shop"}
    obj["spec"]["clusters"] = ["a", "b"]
    assert stored_targets.serves(obj, "shop") == {"a", "b"}


def test_stored_targets_by_the_clusters_they_serve() -> None:
    index = stored_targets.StoredTargets()

    def stored(name: str, cluster: str, spec: dict[str, Any]) -> StoredObject:
        obj = {"metadata": {"name": name}, "spec": spec, "status": {**READY, **BEAT}}
        return StoredObject.from_dict(obj, cluster=cluster, revision=1)

    assert index.put(stored("east", "shop", {})) is None
    index.put(stored("west", "infra", {"clusters": ["shop", "bank"]}))
    index.put(stored("all", "infra", {"clusters": ["*"]}))
    assert sorted(s.candidate.name for s in index.serving("shop")) == ["all", "east", "west"]
    assert sorted(s.candidate.name for s in index.serving("bank")) == ["all", "west"]
    # Serving other clusters now: the index follows; the mark before is returned.
    before = index.put(stored("west", "infra", {"clusters": ["bank"]}))
    assert before is not None and before != index.mark_of(("infra", "west"))
    assert sorted(s.candidate.name for s in index.serving("shop")) == ["all", "east"]
    assert index.remove(("shop", "east")) is not None
    assert index.remove(("shop", "east")) is None
    assert [s.candidate.name for s in index.serving("shop")] == ["all"]

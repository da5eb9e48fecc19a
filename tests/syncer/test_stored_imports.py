"""The index of stored APIResourceImports: by negotiated cluster and kind, newest revision wins."""

from __future__ import annotations

from typing import Any

import pytest

from minikcp.registry.objects import StoredObject
from minikcp.syncer import stored_imports

RESOURCE = "gizmos.example.com"


def stored(
    target: str, revision: int, *, clusters: list[str], policy: str = "lcd", **extra: Any
) -> StoredObject:
    spec = stored_imports.spec_of(
        target=target,
        uid=f"uid-{target}",
        clusters=clusters,
        group="example.com",
        version="v1",
        kind="Gizmo",
        plural="gizmos",
        policy=policy,
        served=True,
        schema={"type": "object", **extra},
    )
    obj = {
        "apiVersion": "apiresource.minikcp.io/v1alpha1",
        "kind": "APIResourceImport",
        "metadata": {"name": stored_imports.object_name(target, RESOURCE)},
        "spec": spec,
    }
    return StoredObject.from_dict(obj, cluster="home", revision=revision)


def targets(index: stored_imports.ImportIndex, cluster: str) -> list[tuple[str, str]]:
    return sorted((i.target, i.policy) for i in index.of_kind(cluster, RESOURCE))


def test_an_import_is_indexed_in_every_cluster_it_negotiates_in() -> None:
    index = stored_imports.ImportIndex()
    index.put(stored("edge", 5, clusters=["a", "b"]))
    index.put(stored("core", 6, clusters=["a"], policy="first"))
    assert targets(index, "a") == [("core", "first"), ("edge", "lcd")]
    assert targets(index, "b") == [("edge", "lcd")]
    assert not index.has_kind("home", RESOURCE)
    found = index.of_target(("home", "edge"))[RESOURCE]
    assert (found.group, found.version, found.plural, found.served) == (
        "example.com",
        "v1",
        "gizmos",
        True,
    )
    assert found.hash == stored_imports.schema_hash({"type": "object"})


@pytest.mark.parametrize(
    ("events", "wanted"),
    [
        # A newer write moves the import to the clusters it names now.
        ([("put", 5, ["a"]), ("put", 7, ["b"])], {"a": [], "b": ["edge"]}),
        # An older event (the watch behind our own write) changes nothing.
        ([("put", 7, ["b"]), ("put", 5, ["a"])], {"a": [], "b": ["edge"]}),
        # Deleted: gone everywhere, and an older event does not revive it.
        ([("put", 5, ["a"]), ("remove", 8, []), ("put", 7, ["a"])], {"a": [], "b": []}),
        # Re-created after the deletion: back.
        ([("put", 5, ["a"]), ("remove", 8, []), ("put", 9, ["a"])], {"a": ["edge"], "b": []}),
        # A deletion older than what is indexed (it was re-created since) removes nothing.
        ([("put", 9, ["a"]), ("remove", 8, [])], {"a": ["edge"], "b": []}),
    ],
)
def test_the_newest_revision_wins(
    events: list[tuple[str, int, list[str]]], wanted: dict[str, list[str]]
) -> None:
    index = stored_imports.ImportIndex()
    name = stored_imports.object_name("edge", RESOURCE)
    for op, revision, clusters in events:
        if op == "put":
            index.put(stored("edge", revision, clusters=clusters))
        else:
            index.remove("home", name, revision)
    assert {c: [t for t, _ in targets(index, c)] for c in wanted} == wanted
    assert bool(index.of_target(("home", "edge"))) == any(wanted.values())


def test_the_watch_passing_a_deletion_clears_its_tombstone() -> None:
    index = stored_imports.ImportIndex()
    created = stored("edge", 5, clusters=["a"])
    index.put(created)
    index.remove("home", created.metadata["name"], 6)  # our own delete
    index.on_change(None, stored("edge", 6, clusters=["a"]))  # the watch's DELETED
    index.on_change(stored("edge", 7, clusters=["a"]), None)  # created again elsewhere
    assert targets(index, "a") == [("edge", "lcd")]


def test_an_import_written_by_hand_is_not_negotiated() -> None:
    index = stored_imports.ImportIndex()
    obj = {
        "apiVersion": "apiresource.minikcp.io/v1alpha1",
        "kind": "APIResourceImport",
        "metadata": {"name": "x"},
        "spec": {"location": 3},
    }
    index.put(StoredObject.from_dict(obj, cluster="home", revision=2))
    assert index.of_target(("home", "x")) == {}
    assert not index.has_kind("home", RESOURCE)

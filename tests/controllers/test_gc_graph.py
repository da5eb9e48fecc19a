"""The garbage collector's dependency graph (controllers/gc_graph.py): which events cause which
work, what it remembers of owners, and that logical clusters never meet."""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from minikcp.controllers import gc_graph
from minikcp.controllers.gc_graph import DELETE, ORPHAN, Graph, OwnerRef, Work
from minikcp.machinery import propagation


def ref(name: str, uid: str, *, block: bool = False, kind: str = "ConfigMap") -> OwnerRef:
    return OwnerRef("v1", kind, name, uid, block)


def state(
    name: str,
    uid: str,
    *owners: OwnerRef,
    cluster: str = "c",
    namespace: str = "ns",
    deleting: bool = False,
    finalizers: Sequence[str] = (),
) -> gc_graph.ObjectState:
    return gc_graph.ObjectState(
        key=f"/registry/core/configmaps/{cluster}/{namespace}/{name}",
        cluster=cluster,
        namespace=namespace,
        name=name,
        uid=uid,
        api_version="v1",
        kind="ConfigMap",
        owners=owners,
        being_deleted=deleting,
        finalizers=frozenset(finalizers),
    )


def deleted(graph: Graph, obj: gc_graph.ObjectState) -> list[Work]:
    return graph.observe_deleted(obj.key, obj)


def test_a_new_dependent_is_linked_and_looked_at() -> None:
    graph = Graph()
    work = graph.observe(state("dep", "d1", ref("owner", "o1")))
    assert work == [Work(DELETE, "c", "d1")]
    assert [n.uid for n in graph.dependents_of(("c", "o1"))] == ["d1"]
    assert graph.may_own("c", "owner") and not graph.may_own("c", "dep")
    assert graph.tracks("/registry/core/configmaps/c/ns/dep")
    assert len(graph) == 1


def test_an_object_without_owners_costs_nothing() -> None:
    graph = Graph()
    assert graph.observe(state("plain", "p1")) == []
    assert graph.observe(state("plain", "p1", deleting=True, finalizers=["x.io/f"])) == []
    assert len(graph) == 0 and not graph.tracks("/registry/core/configmaps/c/ns/plain")


def test_an_owner_found_present_spares_the_next_dependents_a_lookup() -> None:
    graph = Graph()
    graph.observe(state("dep1", "d1", ref("owner", "o1")))
    graph.remember_present("c", "o1", ("v1", "ConfigMap", "ns", "owner"), epoch=graph.epoch)
    assert graph.known_present("c", "ns", ref("owner", "o1"))
    assert graph.observe(state("dep2", "d2", ref("owner", "o1"))) == []
    # Other coordinates, another namespace or another cluster: looked up.
    assert graph.observe(state("dep3", "d3", ref("owner", "o1", kind="Secret"))) == [
        Work(DELETE, "c", "d3")
    ]
    assert graph.observe(state("dep4", "d4", ref("owner", "o1"), namespace="other")) == [
        Work(DELETE, "c", "d4")
    ]
    assert graph.observe(state("dep5", "d5", ref("owner", "o1"), cluster="c2")) == [
        Work(DELETE, "c2", "d5")
    ]


def test_a_cluster_scoped_owner_counts_in_every_namespace() -> None:
    graph = Graph()
    graph.observe(state("dep1", "d1", ref("owner", "o1", kind="ClusterRole")))
    where = ("rbac.authorization.k8s.io/v1", "ClusterRole", "", "owner")
    graph.remember_present("c", "o1", where, epoch=graph.epoch)
    other = OwnerRef("rbac.authorization.k8s.io/v1", "ClusterRole", "owner", "o1")
    assert graph.known_present("c", "anywhere", other)


@pytest.mark.parametrize("why", ["stale", "no dependents"])
def test_present_is_not_remembered_when_it_may_be_stale(why: str) -> None:
    graph = Graph()
    owner = state("owner", "o1")
    graph.observe(state("dep", "d1", ref("owner", "o1")))
    epoch = graph.epoch
    if why == "stale":
        # The owner was deleted (and its dependents queued) while the lookup was under way.
        assert deleted(graph, owner) == [Work(DELETE, "c", "d1")]
    else:
        deleted(graph, state("dep", "d1", ref("owner", "o1")))
    graph.remember_present("c", "o1", ("v1", "ConfigMap", "ns", "owner"), epoch=epoch)
    assert not graph.known_present("c", "ns", ref("owner", "o1"))


def test_a_deleted_owner_sends_its_dependents_to_be_looked_at() -> None:
    graph = Graph()
    graph.observe(state("dep1", "d1", ref("owner", "o1")))
    graph.observe(state("dep2", "d2", ref("owner", "o1"), ref("other", "o2")))
    graph.remember_present("c", "o1", ("v1", "ConfigMap", "ns", "owner"), epoch=graph.epoch)
    work = deleted(graph, state("owner", "o1"))
    assert sorted(work) == [Work(DELETE, "c", "d1"), Work(DELETE, "c", "d2")]
    assert graph.known_absent(("c", "v1", "ConfigMap", "ns", "owner", "o1"))
    assert not graph.known_present("c", "ns", ref("owner", "o1"))


def test_logical_clusters_never_meet() -> None:
    graph = Graph()
    graph.observe(state("dep", "d1", ref("owner", "o1"), cluster="b"))
    # An object with the owner's uid deleted in another cluster concerns nobody in "b".
    assert deleted(graph, state("owner", "o1", cluster="a")) == []
    assert not graph.may_own("a", "owner")
    assert deleted(graph, state("owner", "o1", cluster="b")) == [Work(DELETE, "b", "d1")]


def test_a_deleted_dependent_leaves_the_graph_and_wakes_a_waiting_owner() -> None:
    graph = Graph()
    owner = state("owner", "o1", deleting=True, finalizers=[propagation.FOREGROUND])
    dep = state("dep", "d1", ref("owner", "o1", block=True))
    graph.observe(dep)
    assert graph.observe(owner) == [Work(DELETE, "c", "d1"), Work(DELETE, "c", "o1")]
    assert [n.uid for n in graph.blocking_dependents(("c", "o1"))] == ["d1"]
    assert deleted(graph, dep) == [Work(DELETE, "c", "o1")]
    assert graph.node(("c", "d1")) is None
    assert graph.blocking_dependents(("c", "o1")) == []
    assert not graph.may_own("c", "owner")
    # The owner goes too: nothing left.
    assert deleted(graph, owner) == []
    assert len(graph) == 0


def test_only_blocking_references_block() -> None:
    graph = Graph()
    graph.observe(state("blocks", "d1", ref("owner", "o1", block=True)))
    graph.observe(state("free", "d2", ref("owner", "o1")))
    graph.observe(state("other", "d3", ref("owner", "o2", block=True)))
    assert [n.uid for n in graph.blocking_dependents(("c", "o1"))] == ["d1"]
    assert {n.uid for n in graph.dependents_of(("c", "o1"))} == {"d1", "d2"}


@pytest.mark.parametrize(
    ("after", "wakes"),
    [
        ((), True),  # the reference went
        ((ref("owner", "o1", block=False),), True),  # it stopped blocking
        ((ref("owner", "o1", block=True), ref("x", "o9")), False),  # another owner came
    ],
)
def test_references_that_stop_blocking_wake_a_waiting_owner(
    after: tuple[OwnerRef, ...], wakes: bool
) -> None:
    graph = Graph()
    graph.observe(state("dep", "d1", ref("owner", "o1", block=True)))
    graph.observe(state("owner", "o1", deleting=True, finalizers=[propagation.FOREGROUND]))
    work = graph.observe(state("dep", "d1", *after))
    assert (Work(DELETE, "c", "o1") in work) is wakes
    if not after:
        assert graph.node(("c", "d1")) is None  # no owners left: no longer tracked


def test_an_orphaning_owner_is_queued_for_orphaning_once() -> None:
    graph = Graph()
    graph.observe(state("dep", "d1", ref("owner", "o1")))
    orphaning = state("owner", "o1", deleting=True, finalizers=[propagation.ORPHAN])
    assert graph.observe(orphaning) == [Work(ORPHAN, "c", "o1")]
    assert graph.observe(orphaning) == []
    node = graph.node(("c", "o1"))
    assert node is not None and node.orphaning
    # The finalizer went, another one still holds it: no longer the collector's business.
    assert graph.observe(state("owner", "o1", deleting=True, finalizers=["x.io/f"])) == []
    assert graph.node(("c", "o1")) is None


def test_a_foreground_deletion_without_dependents_still_needs_its_finalizer_removed() -> None:
    graph = Graph()
    work = graph.observe(state("alone", "a1", deleting=True, finalizers=[propagation.FOREGROUND]))
    assert work == [Work(DELETE, "c", "a1")]
    node = graph.node(("c", "a1"))
    assert node is not None and node.deleting_dependents


def test_a_key_taken_by_a_new_object_means_the_old_one_is_gone() -> None:
    graph = Graph()
    graph.observe(state("middle", "m1", ref("top", "t1")))
    graph.observe(state("leaf", "l1", ref("middle", "m1")))
    work = graph.observe(state("middle", "m2", ref("top", "t1")))
    assert Work(DELETE, "c", "l1") in work  # its dependent's owner is gone
    assert graph.node(("c", "m1")) is None and graph.node(("c", "m2")) is not None


def test_the_absent_cache_is_bounded() -> None:
    graph = Graph()
    first = ("c", "v1", "ConfigMap", "ns", "n0", "u0")
    graph.remember_absent(first)
    for i in range(1, 2000):
        graph.remember_absent(("c", "v1", "ConfigMap", "ns", f"n{i}", f"u{i}"))
    assert not graph.known_absent(first)
    assert graph.known_absent(("c", "v1", "ConfigMap", "ns", "n1999", "u1999"))


@pytest.mark.parametrize(
    ("old", "new", "added", "removed", "changed"),
    [
        ((), (ref("a", "1"),), ["1"], [], []),
        ((ref("a", "1"),), (), [], ["1"], []),
        ((ref("a", "1"),), (ref("a", "1"),), [], [], []),
        ((ref("a", "1"),), (ref("a", "1", block=True),), [], [], ["1"]),
        ((ref("a", "1"), ref("b", "2")), (ref("b", "2"), ref("c", "3")), ["3"], ["1"], []),
    ],
)
def test_references_diff(
    old: tuple[OwnerRef, ...],
    new: tuple[OwnerRef, ...],
    added: list[str],
    removed: list[str],
    changed: list[str],
) -> None:
    got_added, got_removed, got_changed = gc_graph.references_diff(old, new)
    assert [r.uid for r in got_added] == added
    assert [r.uid for r in got_removed] == removed
    assert [pair.new.uid for pair in got_changed] == changed


@pytest.mark.parametrize(
    ("obj", "expected"),
    [
        ({"metadata": {"name": "x"}}, None),
        ({"metadata": "nonsense"}, None),
        (
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {
                    "name": "x",
                    "namespace": "ns",
                    "uid": "u",
                    "ownerReferences": [
                        {"apiVersion": "v1", "kind": "ConfigMap", "name": "o", "uid": "o1"},
                        {"apiVersion": "v1", "kind": "ConfigMap", "name": "no-uid"},
                        "not a reference",
                    ],
                    "deletionTimestamp": "2026-01-01T00:00:00Z",
                    "finalizers": [propagation.FOREGROUND],
                },
            },
            (("o1",), True),
        ),
        (
            {
                "metadata": {
                    "uid": "u",
                    "namespace": "ns",
                    "name": "x",
                    "ownerReferences": [
                        {"apiVersion": "v1", "kind": "ConfigMap", "name": "a", "uid": "o1"},
                        {"apiVersion": "v1", "kind": "ConfigMap", "name": "b", "uid": "o2"},
                        {"apiVersion": "v1", "kind": "ConfigMap", "name": "again", "uid": "o1"},
                    ],
                },
            },
            (("o1", "o2"), False),
        ),
    ],
)
def test_object_state(
    obj: dict[str, object], expected: tuple[tuple[str, ...], bool] | None
) -> None:
    got = gc_graph.ObjectState.of("/registry/core/configmaps/c/ns/x", "c", obj)
    if expected is None:
        assert got is None
        return
    assert got is not None
    assert (tuple(r.uid for r in got.owners), got.deleting_dependents) == expected
    assert got.coordinates[3:] == ("ns", "x", "u")


# -- properties over random event sequences ------------------------------------------------------

NAMES = ("n0", "n1", "n2", "n3")


@st.composite
def events(draw: st.DrawFn) -> list[tuple[str, gc_graph.ObjectState]]:
    """PUTs and DELETEs of a few objects in two clusters, and lookups that found an owner; a PUT
    after a DELETE is a new object (new uid); owners point at any name and uid, there or not."""
    uids: dict[tuple[str, str], int] = {}
    out: list[tuple[str, gc_graph.ObjectState]] = []
    for _ in range(draw(st.integers(1, 40))):
        cluster = draw(st.sampled_from(("a", "b")))
        name = draw(st.sampled_from(NAMES))
        generation = uids.setdefault((cluster, name), 0)
        if draw(st.integers(0, 4)) == 0:
            # A lookup found this owner (whether or not it still has dependents).
            out.append(
                ("PRESENT", state(name, f"{name}-{draw(st.integers(1, 3))}", cluster=cluster))
            )
            continue
        if draw(st.booleans()) and generation:
            out.append(("DELETE", state(name, f"{name}-{generation}", cluster=cluster)))
            uids[(cluster, name)] = generation + 1
            continue
        generation = uids[(cluster, name)] = generation or 1
        owners = draw(
            st.lists(
                st.tuples(st.sampled_from(NAMES), st.integers(1, 3), st.booleans()),
                max_size=3,
                unique_by=lambda o: (o[0], o[1]),
            )
        )
        refs = [ref(n, f"{n}-{g}", block=b) for n, g, b in owners]
        finalizers = draw(st.sampled_from(((), (propagation.FOREGROUND,), (propagation.ORPHAN,))))
        out.append(
            (
                "PUT",
                state(
                    name,
                    f"{name}-{generation}",
                    *refs,
                    cluster=cluster,
                    deleting=bool(finalizers) and draw(st.booleans()),
                    finalizers=finalizers,
                ),
            )
        )
    return out


@given(events())
@settings(max_examples=300, deadline=None)
def test_the_graph_matches_the_objects_and_forgets_them(
    sequence: list[tuple[str, gc_graph.ObjectState]],
) -> None:
    graph = Graph()
    live: dict[str, gc_graph.ObjectState] = {}
    for kind, obj in sequence:
        if kind == "PRESENT":
            where = ("v1", "ConfigMap", "ns", obj.name)
            graph.remember_present(obj.cluster, obj.uid, where, epoch=graph.epoch)
            continue
        if kind == "PUT":
            graph.observe(obj)
            live[obj.key] = obj
        else:
            graph.observe_deleted(obj.key, live.pop(obj.key, obj))
        tracked = {o.key for o in live.values() if o.tracked}
        assert {key for key in live if graph.tracks(key)} == tracked
        for o in live.values():
            for owner in o.owners:
                dependents = graph.dependents_of((o.cluster, owner.uid))
                assert (o.uid in {d.uid for d in dependents}) is o.tracked
                assert graph.may_own(o.cluster, owner.name)
    for key, obj in list(live.items()):
        graph.observe_deleted(key, obj)
    # Nothing is left behind once every object is gone (the internals, read on purpose).
    assert len(graph) == 0
    assert not graph._by_key and not graph._dependents
    assert not graph._ref_names and not graph._present

"""The (logical cluster, namespace) LRU of the registry's per-namespace caches."""

from __future__ import annotations

import pytest

from minikcp.registry.namespace_lru import NamespaceLRU


def _filled(limit: int, keys: list[tuple[str, str]]) -> NamespaceLRU[str]:
    lru: NamespaceLRU[str] = NamespaceLRU(limit)
    for key in keys:
        lru.put(key, "/".join(key))
    return lru


@pytest.mark.parametrize(
    ("puts", "limit", "touched", "dropped", "kept", "clusters"),
    [
        # a cluster's entries go at once, the others' stay
        ([("a", "x"), ("a", "y"), ("b", "x")], 8, [], "a", [("b", "x")], {"b"}),
        # past the limit the least recently used goes, and its cluster once it has none
        ([("a", "x"), ("b", "x"), ("c", "x")], 2, [], None, [("b", "x"), ("c", "x")], {"b", "c"}),
        # a read makes an entry the most recently used
        ([("a", "x"), ("b", "x")], 2, [("a", "x")], None, [("a", "x"), ("c", "x")], {"a", "c"}),
        # dropping a cluster with no entries changes nothing
        ([("a", "x")], 8, [], "z", [("a", "x")], {"a"}),
    ],
)
def test_entries(
    puts: list[tuple[str, str]],
    limit: int,
    touched: list[tuple[str, str]],
    dropped: str | None,
    kept: list[tuple[str, str]],
    clusters: set[str],
) -> None:
    lru = _filled(limit, puts)
    for key in touched:
        assert lru.get(key) == "/".join(key)
    if touched:
        lru.put(("c", "x"), "c/x")
    if dropped is not None:
        lru.drop_cluster(dropped)
    assert [key for key in kept if lru.get(key) == "/".join(key)] == kept
    assert len(lru) == len(kept)
    assert lru.clusters() == clusters


def test_pop_and_clear() -> None:
    lru = _filled(8, [("a", "x"), ("a", "y")])
    lru.pop(("a", "x"))
    lru.pop(("a", "x"))  # twice: nothing to pop
    assert ("a", "x") not in lru and ("a", "y") in lru
    assert lru.clusters() == {"a"}
    lru.pop(("a", "y"))
    assert lru.clusters() == set() and len(lru) == 0
    lru = _filled(8, [("a", "x"), ("b", "y")])
    lru.clear()
    assert lru.clusters() == set() and lru.get(("a", "x")) is None

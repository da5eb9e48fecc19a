"""Spreading SyncTargets over replicas (who takes a free target, who hands one back), as tables."""

from __future__ import annotations

import pytest

from minikcp.controllers import leases
from minikcp.machinery import names
from minikcp.syncer import shards


@pytest.mark.parametrize(
    ("counts", "total", "replicas", "takes"),
    [
        ({}, 4, 1, True),  # alone: everything
        ({"me": 3}, 4, 1, True),
        ({"me": 4}, 4, 1, False),
        ({}, 4, 2, True),  # start-up, nothing held
        ({"me": 1, "b": 2}, 4, 2, True),  # below the ceiling and the least loaded
        ({"me": 2, "b": 1}, 4, 2, False),  # at the ceiling
        ({"me": 1, "b": 1}, 4, 3, False),  # a third replica holds none: it goes first
        ({"me": 0, "b": 2, "c": 1}, 4, 3, True),
        ({"me": 1, "b": 2, "c": 1}, 4, 3, True),  # 2, 2, 1 would be within one of even
        ({"me": 1, "b": 1, "c": 1}, 3, 3, False),
        ({"me": 1, "b": 1, "c": 1, "dead": 1}, 5, 3, True),  # a dead holder's lease expires
    ],
)
def test_may_take(counts: dict[str, int], total: int, replicas: int, takes: bool) -> None:
    assert shards.may_take("me", counts, total, replicas) is takes


@pytest.mark.parametrize(
    ("counts", "total", "replicas", "hands_back"),
    [
        ({"me": 4}, 4, 1, 0),
        ({"me": 4}, 4, 2, 2),  # a replica joined: the excess over the ceiling at once
        ({"me": 2, "b": 2}, 4, 2, 0),
        ({"me": 2, "b": 2}, 4, 3, 1),  # a third joined and holds none: one goes
        ({"me": 2, "b": 1, "c": 1}, 4, 3, 0),  # within one of even
        ({"me": 3, "b": 0, "c": 1}, 4, 3, 1),
        ({"me": 1, "b": 0}, 1, 2, 0),  # one target: nothing to even out
        ({"me": 5, "b": 1}, 6, 2, 2),
    ],
)
def test_excess(counts: dict[str, int], total: int, replicas: int, hands_back: int) -> None:
    assert shards.excess("me", counts, total, replicas) == hands_back


@pytest.mark.parametrize(
    ("cluster", "target"),
    [
        ("shop", "t1"),
        ("root:org:team", "east"),  # colons: replaced, a hash added
        ("shop", "a" * 250),  # too long: shortened, a hash added
    ],
)
def test_lease_names_are_valid_and_distinct(cluster: str, target: str) -> None:
    name = leases.object_name(shards.lease_name((cluster, target)))
    assert not names.dns1123_subdomain_errors(name)
    assert len(name) <= 253
    other = leases.object_name(shards.lease_name((cluster, target + "x")))
    assert other != name

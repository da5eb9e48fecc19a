"""Replica splitting: properties (hypothesis) and the cases the user sees."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from minikcp.syncer import replicas

names = st.lists(st.sampled_from(["a", "b", "c", "d", "e"]), min_size=1, max_size=5, unique=True)
totals = st.integers(min_value=0, max_value=10_000)


@given(totals, names)
def test_even_split_sums_and_is_balanced(total: int, targets: list[str]) -> None:
    shares = replicas.even_split(total, targets)
    assert set(shares) == set(targets)
    assert sum(shares.values()) == total
    assert max(shares.values()) - min(shares.values()) <= 1
    assert shares == replicas.even_split(total, list(reversed(targets)))  # order-free


@given(totals, totals, names)
def test_scale_moves_only_the_difference(before: int, after: int, targets: list[str]) -> None:
    first = replicas.split(before, targets, None)
    second = replicas.split(after, targets, first)
    assert sum(second.values()) == after
    assert all(v >= 0 for v in second.values())
    if after >= before:
        assert all(second[t] >= first[t] for t in targets)
    else:
        assert all(second[t] <= first[t] for t in targets)
    moved = sum(abs(second[t] - first[t]) for t in targets)
    assert moved == abs(after - before)
    assert second == replicas.split(after, targets, first)  # deterministic


@given(totals, st.lists(st.integers(0, 100), min_size=1, max_size=5), names)
def test_any_previous_split_converges_on_scale(
    total: int, previous: list[int], targets: list[str]
) -> None:
    prev = dict(zip(targets, previous, strict=False))
    shares = replicas.split(total, targets, prev)
    assert sum(shares.values()) == total
    assert set(shares) == set(targets)


@given(totals, names, names)
def test_a_changed_target_set_splits_afresh(total: int, old: list[str], new: list[str]) -> None:
    shares = replicas.split(total, new, replicas.even_split(total, old))
    assert sum(shares.values()) == total and set(shares) == set(new)
    if set(old) != set(new):
        assert shares == replicas.even_split(total, new)


@pytest.mark.parametrize(
    ("total", "targets", "previous", "expected"),
    [
        (5, ["east", "west"], None, {"east": 3, "west": 2}),
        (5, ["west", "east"], None, {"east": 3, "west": 2}),
        (7, ["east", "west"], {"east": 3, "west": 2}, {"east": 4, "west": 3}),
        (6, ["east", "west"], {"east": 3, "west": 2}, {"east": 3, "west": 3}),
        (4, ["east", "west"], {"east": 3, "west": 2}, {"east": 2, "west": 2}),
        (1, ["a", "b", "c"], None, {"a": 1, "b": 0, "c": 0}),
        (0, ["a", "b"], {"a": 1, "b": 1}, {"a": 0, "b": 0}),
        # A lopsided split (e.g. one target was added later) is only corrected on scale.
        (5, ["a", "b"], {"a": 5, "b": 0}, {"a": 5, "b": 0}),
        (7, ["a", "b"], {"a": 5, "b": 0}, {"a": 5, "b": 2}),
        (3, ["a", "b"], {"a": -1, "b": 4}, {"a": 2, "b": 1}),  # nonsense previous: afresh
        (3, [], None, {}),
    ],
)
def test_split_cases(
    total: int, targets: list[str], previous: dict[str, int] | None, expected: dict[str, int]
) -> None:
    assert replicas.split(total, targets, previous) == expected


@pytest.mark.parametrize(
    ("text", "decoded"),
    [
        ('{"a":1,"b":2}', {"a": 1, "b": 2}),
        ("", None),
        (None, None),
        ("[1]", None),
        ('{"a":"1"}', None),
        ('{"a":true}', None),
        ("{", None),
    ],
)
def test_decode(text: str | None, decoded: dict[str, int] | None) -> None:
    assert replicas.decode(text) == decoded


def test_encode_round_trips_sorted() -> None:
    assert replicas.encode({"b": 1, "a": 2}) == '{"a":2,"b":1}'
    assert replicas.decode(replicas.encode({"b": 1, "a": 2})) == {"a": 2, "b": 1}


@pytest.mark.parametrize(
    ("partition", "shares", "parts"),
    [
        (0, {"east": 3, "west": 2}, {"east": 0, "west": 0}),
        (2, {"east": 3, "west": 2}, {"east": 2, "west": 0}),
        (4, {"west": 2, "east": 3}, {"east": 3, "west": 1}),  # name order, not dict order
        (9, {"east": 3, "west": 2}, {"east": 3, "west": 2}),  # beyond the replicas: all kept
        (-1, {"east": 1}, {"east": 0}),
        (3, {}, {}),
    ],
)
def test_partition_split(partition: int, shares: dict[str, int], parts: dict[str, int]) -> None:
    assert replicas.partition_split(partition, shares) == parts


@given(st.integers(0, 50), totals, names)
def test_partition_parts_sum_to_the_partition(
    partition: int, total: int, targets: list[str]
) -> None:
    shares = replicas.even_split(total, targets)
    parts = replicas.partition_split(partition, shares)
    assert sum(parts.values()) == min(partition, total)
    assert all(0 <= parts[t] <= shares[t] for t in targets)

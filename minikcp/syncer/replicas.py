"""Splitting a Deployment's or StatefulSet's replicas across sync targets, as pure functions.

The split always sums to `spec.replicas`, is deterministic, and a scale moves only the
difference: on scale-up targets only gain, on scale-down they only lose, each time towards the
even split (remainder to the first targets by name, as kcp's splitter). A change in the set of
targets starts from the even split again.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import orjson


def even_split(total: int, targets: Iterable[str]) -> dict[str, int]:
    names = sorted(set(targets))
    if not names:
        return {}
    base, rest = divmod(max(total, 0), len(names))
    return {name: base + (1 if i < rest else 0) for i, name in enumerate(names)}


def split(total: int, targets: Iterable[str], previous: Mapping[str, int] | None) -> dict[str, int]:
    """Each target's share of `total`, moving only the difference from `previous`."""
    total = max(total, 0)
    names = sorted(set(targets))
    ideal = even_split(total, names)
    if (
        not previous
        or set(previous) != set(names)
        or any(isinstance(v, bool) or v < 0 for v in previous.values())
    ):
        return ideal
    current = {name: previous[name] for name in names}
    delta = total - sum(current.values())
    if delta > 0:
        # Gainers: those furthest below the even split first (ties by name).
        order = sorted(names, key=lambda n: (current[n] - ideal[n], n))
        for name in order:
            give = min(max(ideal[name] - current[name], 0), delta)
            current[name] += give
            delta -= give
        # sum(ideal - current) == delta, so the deficits always cover it.
        assert delta == 0
    elif delta < 0:
        order = sorted(names, key=lambda n: (ideal[n] - current[n], n))
        for name in order:
            take = min(max(current[name] - ideal[name], 0), -delta)
            current[name] -= take
            delta += take
        assert delta == 0
    return current


def partition_split(partition: int, shares: Mapping[str, int]) -> dict[str, int]:
    """Each target's part of a StatefulSet's `partition` (the ordinals kept at the old revision).

    The targets hold the ordinals in name order, so the lowest ordinals, and the partition, are
    the first targets' first. The parts sum to the partition (at most to the replicas).
    """
    left = max(partition, 0)
    out: dict[str, int] = {}
    for name in sorted(shares):
        out[name] = min(max(shares[name], 0), left)
        left -= out[name]
    return out


def encode(shares: Mapping[str, int]) -> str:
    return orjson.dumps(dict(sorted(shares.items()))).decode()


def decode(text: str | None) -> dict[str, int] | None:
    """The split recorded on an upstream object; None when absent or unreadable."""
    if not text:
        return None
    try:
        value = orjson.loads(text)
    except orjson.JSONDecodeError:
        return None
    if not isinstance(value, dict):
        return None
    out: dict[str, int] = {}
    for key, share in value.items():
        if not isinstance(share, int) or isinstance(share, bool):
            return None
        out[str(key)] = share
    return out

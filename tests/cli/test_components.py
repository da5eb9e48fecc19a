"""`--controllers`: kube-controller-manager's selection rules over minikcp's controllers."""

from __future__ import annotations

import pytest

from minikcp.cli import components

KNOWN = ("a", "b", "c")


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ("*", ("a", "b", "c")),
        ("", ()),
        ("a", ("a",)),
        ("c,a", ("a", "c")),
        ("*,-b", ("a", "c")),
        ("-b,*", ("a", "c")),
        ("-a,-b,-c", ()),
        ("*,-a,a", ("a", "b", "c")),
        ("a,-a", ()),
        (" a , b ", ("a", "b")),
    ],
)
def test_selection(spec: str, expected: tuple[str, ...]) -> None:
    assert components.select(spec, KNOWN) == expected


@pytest.mark.parametrize("spec", ["d", "*,-d", "a,,x"])
def test_unknown_names_are_refused(spec: str) -> None:
    with pytest.raises(components.SelectionError, match="unknown controller"):
        components.select(spec, KNOWN)


def test_every_controller_has_a_distinct_name() -> None:
    names = [c.name for c in components.CONTROLLERS]
    assert len(set(names)) == len(names)
    assert components.select("*", names) == tuple(names)


def test_the_syncer_row_is_named_as_its_shard_leases_count_replicas() -> None:
    from minikcp.syncer import shards

    assert shards.COMPONENT in [c.name for c in components.CONTROLLERS]
    assert components.SYNCER == shards.COMPONENT

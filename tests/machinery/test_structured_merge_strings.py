"""Comparing objects passes over equal strings without a step each; what is recorded stays
upstream's (a string against a number or a map is still a change)."""

from __future__ import annotations

from typing import Any

import pytest

from minikcp.machinery import apply_shapes, structured_merge
from tests.machinery.ssa_objects import CONFIG_MAP, DEPLOYMENT


def paths(fields: Any) -> list[str]:
    return [".".join(e[2:] for e in path) for path in fields.paths()]


@pytest.mark.parametrize(
    ("schema", "live", "new", "modified", "added", "removed"),
    [
        # Equal strings everywhere but one: only that one is modified.
        (CONFIG_MAP, {"kind": "ConfigMap", "data": {"a": "x", "b": "y"}},
         {"kind": "ConfigMap", "data": {"a": "x", "b": "z"}}, ["data.b"], [], []),
        # A string where the schema has a struct is a leaf: equal ones record nothing...
        (DEPLOYMENT, {"spec": "same"}, {"spec": "same"}, [], [], []),
        # ...and a different one is a change of that leaf.
        (DEPLOYMENT, {"spec": "same"}, {"spec": "other"}, ["spec"], [], []),
        # A string against a number, or against a map, is a change (JSON types differ).
        (CONFIG_MAP, {"data": {"a": "1"}}, {"data": {"a": 1}}, ["data.a"], [], []),
        (DEPLOYMENT, {"spec": "x"}, {"spec": {"replicas": 1}}, ["spec"], [], []),
        # A string that goes away is removed, one that comes is added.
        (CONFIG_MAP, {"data": {"a": "x"}}, {"data": {"b": "x"}}, [], ["data.b"], ["data.a"]),
    ],
)  # fmt: skip
def test_compare_records_only_strings_that_changed(
    schema: Any,
    live: dict[str, Any],
    new: dict[str, Any],
    modified: list[str],
    added: list[str],
    removed: list[str],
) -> None:
    found = structured_merge.compare(live, new, apply_shapes.shape_of(schema))
    assert (paths(found.modified), paths(found.added), paths(found.removed)) == (
        modified,
        added,
        removed,
    )

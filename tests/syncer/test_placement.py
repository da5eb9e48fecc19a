"""Namespace placement on sync targets (table tests)."""

from __future__ import annotations

import pytest

from minikcp.syncer import placement
from minikcp.syncer.placement import Candidate

EAST = Candidate("east", {"region": "eu", "tier": "prod"}, ready=True, reached=True)
WEST = Candidate("west", {"region": "us", "tier": "prod"}, ready=True, reached=True)
SILENT = Candidate("silent", {"region": "eu"}, ready=False, reached=True)
NEVER = Candidate("never", {"region": "eu"}, ready=False, reached=False)
GOING = Candidate("going", {"region": "eu"}, ready=True, reached=True, deleting=True)
ALL = [EAST, WEST, SILENT, NEVER, GOING]


@pytest.mark.parametrize(
    ("namespace", "labels", "annotations", "expected"),
    [
        # Default: every target that has answered (a silent one keeps its placements).
        ("default", None, None, ["east", "silent", "west"]),
        ("kube-system", None, None, []),
        ("kube-public", None, None, []),
        ("apps", {placement.TARGET_NAME_LABEL: "west"}, None, ["west"]),
        ("apps", {placement.TARGET_NAME_LABEL: "never"}, None, []),
        ("apps", None, {placement.TARGET_NAMES_ANNOTATION: "east, west"}, ["east", "west"]),
        ("apps", None, {placement.TARGET_NAMES_ANNOTATION: ""}, []),
        ("apps", None, {placement.TARGET_SELECTOR_ANNOTATION: "region=eu"}, ["east", "silent"]),
        ("apps", None, {placement.TARGET_SELECTOR_ANNOTATION: "tier in (prod)"}, ["east", "west"]),
        ("apps", None, {placement.TARGET_SELECTOR_ANNOTATION: "region=eu,tier=prod"}, ["east"]),
        ("apps", None, {placement.TARGET_SELECTOR_ANNOTATION: "!!bad"}, []),
        (
            "apps",
            {placement.TARGET_NAME_LABEL: "east"},
            {placement.TARGET_SELECTOR_ANNOTATION: "region=us"},
            [],
        ),
    ],
)
def test_placed_on(
    namespace: str,
    labels: dict[str, str] | None,
    annotations: dict[str, str] | None,
    expected: list[str],
) -> None:
    assert placement.placed_on(namespace, labels, annotations, ALL) == expected


def test_no_targets() -> None:
    assert placement.placed_on("default", None, None, []) == []

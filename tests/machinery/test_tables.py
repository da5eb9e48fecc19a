"""Table responses and HumanDuration (cases from duration_test.go and printers_test.go)."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from minikcp.machinery import errors, tables

SECOND = 1.0
MINUTE = 60.0
HOUR = 3600.0
DAY = 24 * HOUR
YEAR = 365 * DAY
MS = 0.001


@pytest.mark.parametrize(
    ("seconds", "expected"),
    [
        # TestHumanDuration
        (SECOND, "1s"),
        (70 * SECOND, "70s"),
        (190 * SECOND, "3m10s"),
        (70 * MINUTE, "70m"),
        (47 * HOUR, "47h"),
        (49 * HOUR, "2d1h"),
        ((8 * 24 + 2) * HOUR, "8d"),
        (367 * DAY, "367d"),
        (2 * YEAR + 25 * HOUR, "2y1d"),
        (8 * YEAR + 2 * HOUR, "8y"),
        # TestHumanDurationBoundaries
        (-2 * SECOND, "<invalid>"),
        (-2 * SECOND + 1e-9, "0s"),
        (0, "0s"),
        (SECOND - MS, "0s"),
        (2 * MINUTE - MS, "119s"),
        (2 * MINUTE, "2m"),
        (2 * MINUTE + SECOND, "2m1s"),
        (10 * MINUTE - MS, "9m59s"),
        (10 * MINUTE, "10m"),
        (10 * MINUTE + SECOND, "10m"),
        (3 * HOUR - MS, "179m"),
        (3 * HOUR, "3h"),
        (3 * HOUR + MINUTE, "3h1m"),
        (8 * HOUR - MS, "7h59m"),
        (8 * HOUR, "8h"),
        (8 * HOUR + 59 * MINUTE, "8h"),
        (2 * DAY - MS, "47h"),
        (2 * DAY, "2d"),
        (2 * DAY + HOUR, "2d1h"),
        (8 * DAY - MS, "7d23h"),
        (8 * DAY, "8d"),
        (8 * DAY + 23 * HOUR, "8d"),
        (2 * YEAR - MS, "729d"),
        (2 * YEAR, "2y"),
        (2 * YEAR + 23 * HOUR, "2y"),
        (2 * YEAR + 23 * HOUR + 59 * MINUTE, "2y"),
        (2 * YEAR + DAY - MS, "2y"),
        (2 * YEAR + DAY, "2y1d"),
        (3 * YEAR, "3y"),
        (7 * YEAR, "7y"),
        (8 * YEAR - MS, "7y364d"),
        (8 * YEAR, "8y"),
        (8 * YEAR + 364 * DAY, "8y"),
        (9 * YEAR, "9y"),
        # TestTranslateTimestampSince (printers_test.go)
        (-2.1, "<invalid>"),
        (-1.9, "0s"),
        (30 * SECOND, "30s"),
        (5 * MINUTE, "5m"),
        (100 * MINUTE, "100m"),
        (90 * DAY, "90d"),
        (10 * YEAR, "10y"),
    ],
)
def test_human_duration(seconds: float, expected: str) -> None:
    assert tables.human_duration(seconds) == expected


_UNIT = {"y": YEAR, "d": DAY, "h": HOUR, "m": MINUTE, "s": SECOND}
_SHAPE = re.compile(r"^(\d+)([ydhms])(?:(\d+)([dhms]))?$")


def _parse(text: str) -> float:
    match = _SHAPE.match(text)
    assert match, text
    total = int(match[1]) * _UNIT[match[2]]
    if match[3]:
        total += int(match[3]) * _UNIT[match[4]]
    return total


@given(st.floats(min_value=0, max_value=50 * YEAR, allow_nan=False))
def test_human_duration_loses_at_most_an_eighth(seconds: float) -> None:
    shown = _parse(tables.human_duration(seconds))
    assert 0 <= int(seconds) - shown < max(1.0, seconds / 8)


@given(
    st.floats(min_value=0, max_value=50 * YEAR, allow_nan=False),
    st.floats(min_value=0, max_value=50 * YEAR, allow_nan=False),
)
def test_human_duration_is_monotonic(a: float, b: float) -> None:
    low, high = sorted((a, b))
    assert _parse(tables.human_duration(low)) <= _parse(tables.human_duration(high))


NAME = tables.Column("Name", "string", "the name", format="name")
WIDE = tables.Column("Node", "string", "where it runs", priority=1)
POD = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {"name": "web-0", "namespace": "default", "labels": {"app": "web"}},
    "spec": {"containers": [{"name": "c", "image": "nginx"}]},
}


def test_build_table_shape() -> None:
    row = tables.TableRow(["web-0", "node-1"], tables.row_object(POD, "Metadata"))
    table = tables.build_table([NAME, WIDE], [row], resource_version="42")
    assert table == {
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": {"resourceVersion": "42"},
        "columnDefinitions": [
            {
                "name": "Name",
                "type": "string",
                "format": "name",
                "description": "the name",
                "priority": 0,
            },
            {
                "name": "Node",
                "type": "string",
                "format": "",
                "description": "where it runs",
                "priority": 1,
            },
        ],
        "rows": [
            {
                "cells": ["web-0", "node-1"],
                "object": {
                    "kind": "PartialObjectMetadata",
                    "apiVersion": "meta.k8s.io/v1",
                    "metadata": POD["metadata"],
                },
            }
        ],
    }


def test_build_table_list_metadata_and_watch_rows() -> None:
    completed = {"type": "Completed", "status": "True", "reason": "Succeeded"}
    rows = [tables.TableRow(["a"], None, (completed,)), tables.TableRow(["b"])]
    table = tables.build_table(
        [NAME],
        rows,
        resource_version="7",
        continue_token="tok",
        remaining=3,
        api_version="meta.k8s.io/v1beta1",
        with_headers=False,
    )
    assert table["apiVersion"] == "meta.k8s.io/v1beta1"
    assert table["metadata"] == {"resourceVersion": "7", "continue": "tok", "remainingItemCount": 3}
    assert table["columnDefinitions"] is None
    assert table["rows"] == [
        {"cells": ["a"], "conditions": [completed], "object": None},
        {"cells": ["b"], "object": None},
    ]


def test_build_table_empty_list_still_has_rows() -> None:
    table = tables.build_table([NAME], [], resource_version="")
    assert table["rows"] == []
    assert table["metadata"] == {}


@pytest.mark.parametrize("include", ["Metadata", ""])
def test_row_object_metadata_by_default(include: str) -> None:
    assert tables.row_object(POD, include, api_version="meta.k8s.io/v1beta1") == {
        "kind": "PartialObjectMetadata",
        "apiVersion": "meta.k8s.io/v1beta1",
        "metadata": POD["metadata"],
    }


def test_row_object_full_and_none() -> None:
    assert tables.row_object(POD, "Object") is POD
    assert tables.row_object(POD, "None") is None


def test_row_object_rejects_unknown_policy() -> None:
    with pytest.raises(errors.StatusError) as caught:
        tables.row_object(POD, "Everything")
    assert caught.value.code == 400
    assert caught.value.message == 'unrecognized includeObject value: "Everything"'


def test_partial_object_metadata_of_object_without_metadata() -> None:
    assert tables.partial_object_metadata({"kind": "Pod"}) == {
        "kind": "PartialObjectMetadata",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": {},
    }

"""Timestamps as Kubernetes writes and reads them."""

from __future__ import annotations

import pytest

from minikcp.machinery import timestamps


@pytest.mark.parametrize(
    ("at", "expected"),
    [
        (0.0, "1970-01-01T00:00:00Z"),
        (1700000000.9, "2023-11-14T22:13:20Z"),
        (1700000001.0, "2023-11-14T22:13:21Z"),
        (1700000000.2, "2023-11-14T22:13:20Z"),  # the same second again, after another
    ],
)
def test_rfc3339_is_the_whole_second_in_utc(at: float, expected: str) -> None:
    assert timestamps.rfc3339(at) == expected
    assert timestamps.parse_rfc3339(expected) == int(at)


@pytest.mark.parametrize("text", ["", "yesterday", "2023-13-01T00:00:00Z"])
def test_what_is_not_a_time_parses_to_none(text: str) -> None:
    assert timestamps.parse_rfc3339(text) is None

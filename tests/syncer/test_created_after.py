"""Which upstream objects a worker that just started needs no GET for: those created after it
started, judged by their creationTimestamp (cut to the second)."""

from __future__ import annotations

import datetime
from typing import Any

import pytest

from minikcp.syncer import reconcile

START = datetime.datetime(2026, 12, 4, 19, 0, 5, 400000, tzinfo=datetime.UTC).timestamp()


@pytest.mark.parametrize(
    ("meta", "after"),
    [
        ({"creationTimestamp": "2026-12-04T19:00:06Z"}, True),  # a later second
        ({"creationTimestamp": "2026-12-04T19:00:05Z"}, False),  # the start's second: maybe before
        ({"creationTimestamp": "2026-12-04T18:59:59Z"}, False),
        ({"creationTimestamp": "not a time"}, False),
        ({"creationTimestamp": ""}, False),
        ({}, False),
    ],
)
def test_created_after(meta: dict[str, Any], after: bool) -> None:
    assert reconcile._created_after(meta, START) is after

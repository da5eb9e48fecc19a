"""printer_base.timestamp: RFC 3339 times as epoch seconds (parsed once per distinct value)."""

from __future__ import annotations

from typing import Any

import pytest

from minikcp.apis import printer_base


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("2026-12-04T15:00:00Z", 1796396400.0),
        ("2026-12-04T16:00:00+01:00", 1796396400.0),
        ("2026-12-04T15:00:00.250000Z", 1796396400.25),
        ("0001-01-01T00:00:00Z", None),  # Go's zero time
        ("2026-12-04T15:00:00", None),  # no offset: not RFC 3339
        ("yesterday", None),
        ("", None),
        (None, None),
        (1796396400, None),
    ],
)
def test_timestamp(value: Any, expected: float | None) -> None:
    # The second answer comes from the parsed values kept: it must be the same.
    assert printer_base.timestamp(value) == expected
    assert printer_base.timestamp(value) == expected

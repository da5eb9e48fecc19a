"""When a watch's bookmarks are due (upstream cacheWatcher.nextBookmarkTime)."""

from __future__ import annotations

import pytest

from minikcp.registry import watching


@pytest.mark.parametrize(
    ("now", "deadline", "interval", "due"),
    [
        (0.0, 1800.0, 30.0, 30.0),  # a long watch: every interval
        (1790.0, 1800.0, 30.0, 1798.0),  # near its end: 2 s before the timeout
        (0.0, 5.0, 30.0, 3.0),  # a short watch: one bookmark, 2 s before the timeout
        (1798.0, 1800.0, 30.0, None),  # the last one was sent: no more
        (1799.0, 1800.0, 30.0, None),
        (0.0, 1.5, 30.0, None),  # shorter than 2 s: none at all
    ],
)
def test_next_bookmark(now: float, deadline: float, interval: float, due: float | None) -> None:
    assert watching._next_bookmark(now, deadline, interval) == due

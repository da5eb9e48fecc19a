"""Timestamps as Kubernetes writes them (RFC 3339, whole seconds, UTC) and reads them back."""

from __future__ import annotations

import datetime
import functools


def rfc3339(at: float) -> str:
    """`at` (seconds since the epoch) to its whole second, as metav1.Time marshals."""
    return _whole_second(int(at))


@functools.lru_cache(maxsize=4)
def _whole_second(second: int) -> str:
    # Writers stamp many objects, conditions and events within the same second.
    return datetime.datetime.fromtimestamp(second, datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_rfc3339(text: str) -> float | None:
    """Seconds since the epoch of an RFC 3339 time; None when `text` is not one."""
    try:
        return datetime.datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
    except (ValueError, AttributeError):
        return None

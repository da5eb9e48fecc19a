"""rest.BeforeDelete for kinds that delete gracefully (pods): what a delete marks on the object."""

from __future__ import annotations

import time
from typing import Any

from minikcp.machinery import timestamps
from minikcp.registry.objects import StoredObject
from minikcp.registry.strategy import Strategy

# A graceful deletion is already under way and this delete leaves it so.
PENDING: dict[str, Any] = {}


def deletion_marks(
    strategy: Strategy, current: StoredObject, requested: int | None
) -> dict[str, Any] | None:
    """The deletionTimestamp and deletionGracePeriodSeconds this delete sets, `PENDING` when a
    graceful deletion already under way stays as it is, None for kinds (or objects) deleted
    without grace."""
    if not strategy.deletes_gracefully:
        return None
    if requested is not None and requested < 0:
        requested = 1  # negative periods count as one second on the delete path
    meta = current.metadata
    now = int(time.time())
    if meta.get("deletionTimestamp"):
        existing = meta.get("deletionGracePeriodSeconds")
        if not existing:
            return None  # a zero-period deletion left over: delete now
        if requested is None or requested >= existing:
            return PENDING
        # Only a shorter period may be asked for: move the timestamp back, not into the past.
        began = timestamps.parse_rfc3339(meta["deletionTimestamp"])
        start = (now if began is None else int(began)) - existing
        at, period = start + requested, requested
        if at < now:
            at, period = now, (1 if requested else 0)
        return {"deletionTimestamp": timestamps.rfc3339(at), "deletionGracePeriodSeconds": period}
    period = strategy.graceful_period(current.view(), requested)
    return {
        "deletionTimestamp": timestamps.rfc3339(now + period),
        "deletionGracePeriodSeconds": period,
    }

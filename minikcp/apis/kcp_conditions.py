"""kcp's conditions (third_party/conditions): True without a reason, False with reason, severity
and message; Ready first, then the others by type; a condition keeps its lastTransitionTime
while its state (status, reason, severity, message) stays the same.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

READY = "Ready"
ERROR = "Error"
WARNING = "Warning"
INFO = "Info"


@dataclass(frozen=True, slots=True)
class Condition:
    type: str
    status: str  # "True" | "False" | "Unknown"
    reason: str = ""
    severity: str = ""
    message: str = ""

    def as_dict(self, since: str) -> dict[str, Any]:
        out: dict[str, Any] = {"type": self.type, "status": self.status}
        out["lastTransitionTime"] = since
        if self.reason:
            out["reason"] = self.reason
        if self.severity:
            out["severity"] = self.severity
        if self.message:
            out["message"] = self.message
        return out


def true(kind: str) -> Condition:
    return Condition(kind, "True")


def false(kind: str, reason: str, severity: str, message: str) -> Condition:
    return Condition(kind, "False", reason, severity, message)


def find(conditions: Any, kind: str) -> Mapping[str, Any] | None:
    for cond in conditions if isinstance(conditions, list) else ():
        if isinstance(cond, Mapping) and cond.get("type") == kind:
            return cond
    return None


def summary(conditions: Mapping[str, Condition], of: str) -> Condition:
    """kcp's SetSummary WithConditions(of): Ready mirrors `of`."""
    found = conditions.get(of)
    if found is None:
        return Condition(READY, "Unknown")
    return Condition(READY, found.status, found.reason, found.severity, found.message)


def merged(existing: Any, wanted: Iterable[Condition], now: str) -> list[dict[str, Any]]:
    """`existing` with `wanted` set (others kept), in kcp's order."""
    by_type: dict[str, dict[str, Any]] = {}
    for cond in existing if isinstance(existing, list) else ():
        if isinstance(cond, dict) and isinstance(cond.get("type"), str):
            by_type[cond["type"]] = cond
    for cond in wanted:
        old = by_type.get(cond.type)
        same = old is not None and (
            old.get("status"),
            old.get("reason", ""),
            old.get("severity", ""),
            old.get("message", ""),
        ) == (cond.status, cond.reason, cond.severity, cond.message)
        since = str(old.get("lastTransitionTime") or now) if old is not None and same else now
        by_type[cond.type] = cond.as_dict(since)
    return sorted(by_type.values(), key=lambda c: (c["type"] != READY, c["type"]))

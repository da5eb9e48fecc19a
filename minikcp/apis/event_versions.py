"""core/v1 and events.k8s.io/v1 Events: one stored object seen through two APIs.

Upstream stores both under one key as the internal core.Event; `pkg/apis/events/v1/conversion.go`
renames the fields that differ. minikcp stores the core/v1 form and converts on the way in and
out of events.k8s.io/v1, writing Go's encoding of each struct: fields without `omitempty` and
struct fields are always there (`{}`, `null` for a zero time, `""` for core's
reportingComponent and reportingInstance), the others only when set.
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any, Final

CORE_API_VERSION: Final = "v1"
EVENTS_API_VERSION: Final = "events.k8s.io/v1"

# events.k8s.io/v1 field -> core/v1 field, in events.k8s.io/v1's Go field order.
_TO_CORE: Final = (
    ("eventTime", "eventTime"),
    ("series", "series"),
    ("reportingController", "reportingComponent"),
    ("reportingInstance", "reportingInstance"),
    ("action", "action"),
    ("reason", "reason"),
    ("regarding", "involvedObject"),
    ("related", "related"),
    ("note", "message"),
    ("type", "type"),
    ("deprecatedSource", "source"),
    ("deprecatedFirstTimestamp", "firstTimestamp"),
    ("deprecatedLastTimestamp", "lastTimestamp"),
    ("deprecatedCount", "count"),
)
_CORE_ORDER: Final = (
    "involvedObject", "reason", "message", "source", "firstTimestamp", "lastTimestamp", "count",
    "type", "eventTime", "series", "action", "related", "reportingComponent", "reportingInstance",
)  # fmt: skip
# What Go writes for a field left at its zero value; fields not named here are left out.
_CORE_ZERO: Final[Mapping[str, Any]] = {
    "involvedObject": {},
    "source": {},
    "firstTimestamp": None,
    "lastTimestamp": None,
    "eventTime": None,
    "reportingComponent": "",
    "reportingInstance": "",
}
_EVENTS_ZERO: Final[Mapping[str, Any]] = {
    "eventTime": None,
    "regarding": {},
    "deprecatedSource": {},
    "deprecatedFirstTimestamp": None,
    "deprecatedLastTimestamp": None,
}
_SHARED: Final = frozenset({"apiVersion", "kind", "metadata"})


def _set(out: dict[str, Any], name: str, value: Any, zero: Mapping[str, Any]) -> None:
    if value not in (None, "", 0, {}) or isinstance(value, bool):
        out[name] = value
    elif name in zero:
        out[name] = zero[name]


def to_core(event: Mapping[str, Any]) -> dict[str, Any]:
    """An events.k8s.io/v1 Event as core/v1 stores it (a new dict sharing the field values);
    fields that neither version knows are kept, for the decode checks to judge."""
    values: dict[str, Any] = {}
    for new, old in _TO_CORE:
        if new in event:
            values[old] = event[new]
    known = {new for new, _ in _TO_CORE}
    out: dict[str, Any] = {"apiVersion": CORE_API_VERSION, "kind": event.get("kind", "Event")}
    if "metadata" in event:
        out["metadata"] = event["metadata"]
    for name in _CORE_ORDER:
        _set(out, name, values.get(name), _CORE_ZERO)
    for name, value in event.items():
        if name not in known and name not in _SHARED:
            out[name] = value
    return out


def to_events(event: Mapping[str, Any]) -> dict[str, Any]:
    """A stored core/v1 Event as events.k8s.io/v1 serves it (a new dict sharing the values)."""
    out: dict[str, Any] = {"apiVersion": EVENTS_API_VERSION, "kind": event.get("kind", "Event")}
    if "metadata" in event:
        out["metadata"] = event["metadata"]
    for new, old in _TO_CORE:
        _set(out, new, event.get(old), _EVENTS_ZERO)
    return out


# Timestamps by their Go type, in either version: metav1.Time (seconds) and MicroTime.
_TIMES: Final = (
    "firstTimestamp",
    "lastTimestamp",
    "deprecatedFirstTimestamp",
    "deprecatedLastTimestamp",
)
_MICRO_TIMES: Final = ("eventTime",)


def _reformat(value: Any, micro: bool) -> Any:
    if not isinstance(value, str) or not value:
        return value
    try:
        stamp = datetime.datetime.fromisoformat(value)
    except ValueError:
        return value  # validation judges it
    if stamp.tzinfo is None:
        return value
    stamp = stamp.astimezone(datetime.UTC)
    return stamp.strftime("%Y-%m-%dT%H:%M:%S.%fZ" if micro else "%Y-%m-%dT%H:%M:%SZ")


def normalise_times(event: dict[str, Any]) -> None:
    """Timestamps as Go writes them after decoding (UTC, `Z`; six fraction digits for
    MicroTime), whatever offset a client sent: kubectl parses exactly that form."""
    for name in _TIMES:
        if name in event:
            event[name] = _reformat(event[name], micro=False)
    for name in _MICRO_TIMES:
        if name in event:
            event[name] = _reformat(event[name], micro=True)
    series = event.get("series")
    if isinstance(series, dict) and "lastObservedTime" in series:
        series["lastObservedTime"] = _reformat(series["lastObservedTime"], micro=True)

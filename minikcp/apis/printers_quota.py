"""Table printers of ResourceQuota and LimitRange (pkg/printers/internalversion, 1.32)."""

from __future__ import annotations

from typing import Any, Final

from minikcp.apis import printer_base as base
from minikcp.apis.printer_docs import FIELD_DOCS
from minikcp.machinery import quantity, tables

Column = tables.Column


def _text(value: Any) -> str:
    q = quantity.parse_or_none(value)
    return str(q) if q is not None else "0"


def _resource_quota_cells(obj: base.Obj, now: float) -> list[Any]:
    status = base.mapping(obj.get("status"))
    hard, used = base.mapping(status.get("hard")), base.mapping(status.get("used"))
    requests: list[str] = []
    limits: list[str] = []
    for name in sorted(hard):
        # Resources named limits.<x> go to the Limit column, everything else to Request.
        pieces = name.split(".")
        column = limits if len(pieces) > 1 and pieces[0] == "limits" else requests
        column.append(f"{name}: {_text(used.get(name))}/{_text(hard[name])}")
    return [base.name(obj), base.age(obj, now), ", ".join(requests), ", ".join(limits)]


RESOURCE_QUOTA: Final = base.Printer(
    (
        base.NAME_COLUMN,
        base.AGE_COLUMN,
        Column(
            "Request",
            "string",
            "Request represents a minimum amount of cpu/memory that a container may consume.",
        ),
        Column(
            "Limit",
            "string",
            "Limits control the maximum amount of cpu/memory that a container may use "
            "independent of contention on the node.",
        ),
    ),
    _resource_quota_cells,
)


def _limit_range_cells(obj: base.Obj, now: float) -> list[Any]:
    created = base.string(base.metadata(obj).get("creationTimestamp"))
    ts = base.timestamp(created)
    return [base.name(obj), created if ts is not None else "0001-01-01T00:00:00Z"]


LIMIT_RANGE: Final = base.Printer(
    (
        base.NAME_COLUMN,
        Column("Created At", "date", FIELD_DOCS["meta_v1.ObjectMeta.creationTimestamp"]),
    ),
    _limit_range_cells,
)

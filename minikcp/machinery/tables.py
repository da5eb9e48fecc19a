"""`Table` responses: what `kubectl get` asks for with `Accept: ...;as=Table;g=meta.k8s.io`.

A Table is column definitions plus one row of cells per object; each row also carries the object
itself (as `PartialObjectMetadata`, in full, or not at all: the `includeObject` parameter). Cells
come from a per-kind printer (minikcp.apis.printers); this module only shapes the response and
formats durations the way the upstream printers do (k8s.io/apimachinery/pkg/util/duration).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from minikcp.machinery import errors, go_text

TABLE_API_VERSIONS: Final = ("meta.k8s.io/v1", "meta.k8s.io/v1beta1")
DEFAULT_API_VERSION: Final = "meta.k8s.io/v1"

# includeObject values (metav1.IncludeObjectPolicy); an empty value means Metadata.
INCLUDE_NONE: Final = "None"
INCLUDE_METADATA: Final = "Metadata"
INCLUDE_OBJECT: Final = "Object"


def human_duration(seconds: float) -> str:
    """`duration.HumanDuration`: ~2-3 significant figures, e.g. "45s", "3m10s", "5h30m", "2y1d".

    A clock skew of up to two seconds into the future reads as "0s"; more is "<invalid>".
    """
    s = int(seconds)  # truncates toward zero, like Go's int(d.Seconds())
    if s < -1:
        return "<invalid>"
    if s < 0:
        return "0s"
    if s < 120:
        return f"{s}s"
    minutes = s // 60
    if minutes < 10:
        rest = s % 60
        return f"{minutes}m{rest}s" if rest else f"{minutes}m"
    if minutes < 180:
        return f"{minutes}m"
    hours = s // 3600
    if hours < 8:
        rest = minutes % 60
        return f"{hours}h{rest}m" if rest else f"{hours}h"
    if hours < 48:
        return f"{hours}h"
    days = hours // 24
    if hours < 24 * 8:
        rest = hours % 24
        return f"{days}d{rest}h" if rest else f"{days}d"
    if hours < 24 * 365 * 2:
        return f"{days}d"
    years = days // 365
    if hours < 24 * 365 * 8:
        rest = days % 365
        return f"{years}y{rest}d" if rest else f"{years}y"
    return f"{years}y"


@dataclass(frozen=True, slots=True)
class Column:
    """One `TableColumnDefinition`; columns with priority > 0 show only with `-o wide`."""

    name: str
    type: str  # string, integer, number, boolean or date (an OpenAPI type plus "date")
    # Or a function giving it, read when a table is first asked for: the descriptions quoting
    # upstream schemas need the schemas loaded, which start-up does without.
    description: str | Callable[[], str]
    format: str = ""  # "name" marks the column kubectl prefixes with kind.group/ for mixed lists
    priority: int = 0

    def definition(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "type": self.type,
            "format": self.format,
            "description": (
                self.description if isinstance(self.description, str) else self.description()
            ),
            "priority": self.priority,
        }


@dataclass(frozen=True, slots=True)
class TableRow:
    """Cells in column order, the already-rendered row object (see `row_object`), and conditions.

    Conditions are `TableRowCondition`s such as the `Completed` one printers add for finished pods.
    """

    cells: list[Any]
    object: Mapping[str, Any] | None = None
    conditions: Sequence[Mapping[str, str]] = ()


def build_table(
    columns: Sequence[Column],
    rows: Sequence[TableRow],
    *,
    resource_version: str,
    continue_token: str = "",
    remaining: int | None = None,
    api_version: str = DEFAULT_API_VERSION,
    with_headers: bool = True,
) -> dict[str, Any]:
    """A `Table` object ready to encode.

    `with_headers=False` is what a watch sends after its first event: upstream then leaves
    `columnDefinitions` null (TableOptions.noHeaders).
    """
    metadata: dict[str, Any] = {}
    if resource_version:
        metadata["resourceVersion"] = resource_version
    if continue_token:
        metadata["continue"] = continue_token
    if remaining is not None:
        metadata["remainingItemCount"] = remaining
    out_rows: list[dict[str, Any]] = []
    for row in rows:
        out: dict[str, Any] = {"cells": row.cells}
        if row.conditions:
            out["conditions"] = [dict(c) for c in row.conditions]
        # RawExtension has no omitempty: a row without its object still says "object": null.
        out["object"] = row.object
        out_rows.append(out)
    return {
        "kind": "Table",
        "apiVersion": api_version,
        "metadata": metadata,
        "columnDefinitions": [c.definition() for c in columns] if with_headers else None,
        "rows": out_rows,
    }


def partial_object_metadata(
    obj: Mapping[str, Any], *, api_version: str = DEFAULT_API_VERSION
) -> dict[str, Any]:
    """The object's metadata as a `PartialObjectMetadata` (meta.AsPartialObjectMetadata)."""
    return {
        "kind": "PartialObjectMetadata",
        "apiVersion": api_version,
        "metadata": obj.get("metadata") or {},
    }


def row_object(
    obj: Mapping[str, Any], include_object: str, *, api_version: str = DEFAULT_API_VERSION
) -> Mapping[str, Any] | None:
    """What a row carries for `?includeObject=`: metadata (the default), the object, or nothing.

    Raises a 400 StatusError for any other value, with upstream's message.
    """
    if include_object in (INCLUDE_METADATA, ""):
        return partial_object_metadata(obj, api_version=api_version)
    if include_object == INCLUDE_OBJECT:
        return obj
    if include_object == INCLUDE_NONE:
        return None
    raise errors.bad_request(
        f"unrecognized includeObject value: {go_text.go_quote(include_object)}"
    )

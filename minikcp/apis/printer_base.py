"""What every per-kind printer shares: the `Printer` type, the Name/Age columns and cell formatting.

Cells are computed from stored objects (plain JSON dicts) the way kube-apiserver's printers compute
them from internal types, so the helpers here also stand in for the upstream formatting helpers:
`labels.FormatLabels`, `metav1.FormatLabelSelector`, `translateTimestampSince`, ...
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final

from minikcp.apis.printer_docs import FIELD_DOCS
from minikcp.machinery import tables

Obj = Mapping[str, Any]
Cells = Callable[[Obj, float], list[Any]]
RowConditions = Callable[[Obj], Sequence[Mapping[str, str]]]

EMPTY: Final[Mapping[str, Any]] = {}
UNKNOWN: Final = "<unknown>"
NONE: Final = "<none>"


@dataclass(frozen=True)
class Printer:
    """Column definitions and the function computing one row's cells, `cells(obj, now_epoch)`.

    Cells always include the wide (priority > 0) columns: the server prints wide and kubectl hides
    those columns unless asked for `-o wide`. `conditions`, when set, gives a row's
    TableRowConditions (pods report `Completed`).
    """

    columns: tuple[tables.Column, ...]
    cells: Cells
    conditions: RowConditions | None = None


NAME_COLUMN: Final = tables.Column(
    "Name", "string", FIELD_DOCS["meta_v1.ObjectMeta.name"], format="name"
)
AGE_COLUMN: Final = tables.Column(
    "Age", "string", FIELD_DOCS["meta_v1.ObjectMeta.creationTimestamp"]
)
CONTAINERS_COLUMN: Final = tables.Column(
    "Containers", "string", "Names of each container in the template.", priority=1
)
IMAGES_COLUMN: Final = tables.Column(
    "Images", "string", "Images referenced by each container in the template.", priority=1
)


def mapping(value: Any) -> Mapping[str, Any]:
    """`value` if it is an object, else an empty one (absent and null fields read as empty)."""
    # Decoded JSON objects are dicts; checking for dict is many times cheaper than for Mapping.
    return value if isinstance(value, dict) else EMPTY


def sequence(value: Any) -> Sequence[Any]:
    return value if isinstance(value, list) else ()


def integer(value: Any, default: int = 0) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else default


def string(value: Any) -> str:
    return value if isinstance(value, str) else ""


def metadata(obj: Obj) -> Mapping[str, Any]:
    return mapping(obj.get("metadata"))


def name(obj: Obj) -> str:
    return string(metadata(obj).get("name"))


_ZERO_TIME: Final = -62135596800.0  # 0001-01-01T00:00:00Z, Go's zero time.Time


def timestamp(value: Any) -> float | None:
    """Epoch seconds of an RFC 3339 (micro)time; None when absent, zero or unreadable."""
    if not isinstance(value, str) or not value:
        return None
    try:
        return _PARSED[value]
    except KeyError:
        pass
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        return None
    if parsed.tzinfo is None:  # RFC 3339 requires an offset; a bare date-time is not one
        return None
    seconds = parsed.timestamp()
    result = None if seconds == _ZERO_TIME else seconds
    # Objects created together share their timestamps (seconds): a table of thousands parses
    # a handful. Bounded, so odd values cannot grow it.
    if len(_PARSED) >= _PARSED_MAX:
        _PARSED.clear()
    _PARSED[value] = result
    return result


_PARSED: dict[str, float | None] = {}
_PARSED_MAX = 4096


def since(value: Any, now: float) -> str:
    """`translateTimestampSince`: the human age of a timestamp, "<unknown>" when unset."""
    ts = timestamp(value)
    return UNKNOWN if ts is None else tables.human_duration(now - ts)


def age(obj: Obj, now: float) -> str:
    return since(metadata(obj).get("creationTimestamp"), now)


def format_labels(labels: Any) -> str:
    """`labels.FormatLabels`: sorted `k=v` pairs joined by commas, "<none>" when empty."""
    pairs = sorted(f"{k}={v}" for k, v in mapping(labels).items())
    return ",".join(pairs) if pairs else NONE


_OPERATORS: Final = {"In": " in ", "NotIn": " notin ", "Exists": "", "DoesNotExist": ""}


def selector_string(selector: Any) -> str | None:
    """`metav1.LabelSelectorAsSelector(s).String()`; "" for a missing or empty selector.

    None when an expression has an operator a label selector cannot have.
    """
    sel = mapping(selector)
    labels = mapping(sel.get("matchLabels"))
    expressions = sequence(sel.get("matchExpressions"))
    if not expressions:  # the common case, and sorting pairs sorts them by key
        return ",".join(sorted(f"{k}={v}" for k, v in labels.items()))
    requirements: list[tuple[str, str]] = [(str(k), f"{k}={v}") for k, v in labels.items()]
    for expr in expressions:
        expr = mapping(expr)
        key, op = string(expr.get("key")), expr.get("operator")
        if op not in _OPERATORS:
            return None
        if op == "Exists":
            requirements.append((key, key))
        elif op == "DoesNotExist":
            requirements.append((key, "!" + key))
        else:
            values = [str(v) for v in sequence(expr.get("values"))]
            joined = values[0] if len(values) == 1 else ",".join(sorted(values))
            requirements.append((key, f"{key}{_OPERATORS[op]}({joined})"))
    requirements.sort(key=lambda r: r[0])  # Selector.Add sorts requirements by key
    return ",".join(text for _, text in requirements)


def format_label_selector(selector: Any) -> str:
    """`metav1.FormatLabelSelector`: like `selector_string` but "<none>" when empty."""
    text = selector_string(selector)
    if text is None:
        return "<error>"
    return text or NONE


def container_cells(containers: Iterable[Any]) -> tuple[str, str]:
    """`layoutContainerCells`: container names and images, each joined by commas."""
    names: list[str] = []
    images: list[str] = []
    for c in containers:
        c = mapping(c)
        names.append(string(c.get("name")))
        images.append(string(c.get("image")))
    return ",".join(names), ",".join(images)


def template_containers(obj: Obj) -> Sequence[Any]:
    """spec.template.spec.containers of a workload."""
    spec = mapping(obj.get("spec"))
    return sequence(mapping(mapping(spec.get("template")).get("spec")).get("containers"))


def condition_true(conditions: Any, kind: str) -> bool:
    """Whether the first condition of type `kind` has status True (hasJobCondition)."""
    for c in sequence(conditions):
        c = mapping(c)
        if c.get("type") == kind:
            return c.get("status") == "True"
    return False

"""Table printers for custom resources, built from a CRD version's `additionalPrinterColumns`.

Port of apiextensions-apiserver 1.32 pkg/registry/customresource/tableconvertor: a Name column,
then one column per printer column (or a single Age column when the CRD declares none). A cell is
the first JSONPath result rendered for the column type: string columns print the value as
client-go's jsonpath does (Go formatting; objects as compact JSON; null as "<no value>"), integer,
number and boolean columns keep JSON values of that type, date columns become ages. A missing or
mistyped value, or a failed evaluation, is a null cell.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from datetime import datetime
from decimal import Decimal
from typing import Any, Final

from minikcp.apis import jsonpath
from minikcp.apis import printer_base as base
from minikcp.apis.printer_docs import FIELD_DOCS
from minikcp.machinery import tables

_AGE_DEFINITION: Final[Mapping[str, Any]] = {
    "name": "Age",
    "type": "date",
    "description": FIELD_DOCS["meta_v1.ObjectMeta.creationTimestamp"],
    "jsonPath": ".metadata.creationTimestamp",
}


def crd_printer(columns: Sequence[Mapping[str, Any]]) -> base.Printer:
    """The printer for a custom resource version with these `additionalPrinterColumns`.

    As upstream, a column whose JSONPath does not parse ends the column list there.
    """
    headers = [base.NAME_COLUMN]
    paths: list[tuple[jsonpath.JSONPath, str]] = []
    for column in columns or (_AGE_DEFINITION,):
        path = base.string(column.get("jsonPath"))
        try:
            compiled = jsonpath.compile_path(path)
        except jsonpath.JSONPathError:
            break
        kind = base.string(column.get("type"))
        description = base.string(column.get("description"))
        headers.append(
            tables.Column(
                base.string(column.get("name")),
                kind,
                description or f"Custom resource definition column (in JSONPath format): {path}",
                format=base.string(column.get("format")),
                priority=base.integer(column.get("priority")),
            )
        )
        paths.append((compiled, kind))

    def cells(obj: base.Obj, now: float) -> list[Any]:
        row: list[Any] = [base.name(obj)]
        for path, kind in paths:
            try:
                results = path.find(obj)
            except jsonpath.JSONPathError:
                results = []
            row.append(_cell(kind, results[0], now) if results else None)
        return row

    return base.Printer(tuple(headers), cells)


def _cell(kind: str, value: Any, now: float) -> Any:
    """cellForJSONValue, plus jsonpath's printing for string columns."""
    if kind == "string":
        return go_text(value)
    if value is None:
        return None
    if kind == "integer":
        if isinstance(value, float):
            return int(value) if math.isfinite(value) else None
        return value if isinstance(value, int) and not isinstance(value, bool) else None
    if kind == "number":
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
        return None
    if kind == "boolean":
        return value if isinstance(value, bool) else None
    if kind == "date" and isinstance(value, str):
        return _date_cell(value, now)
    return None


def _date_cell(value: str, now: float) -> str:
    # metav1.Time.UnmarshalQueryParameter, then ConvertToHumanReadableDateType.
    if value in ("", "null"):
        return base.UNKNOWN
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        return "<invalid>"
    if parsed.tzinfo is None:
        return "<invalid>"
    return tables.human_duration(now - parsed.timestamp())


def go_text(value: Any) -> str:
    """How client-go's jsonpath prints one result: fmt.Fprint, or json.Marshal for containers."""
    if value is None:
        return "<no value>"
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return _go_float(value, json_style=False)
    return _go_json(value)


def _go_float(value: float, *, json_style: bool) -> str:
    """strconv.FormatFloat(v, 'g', -1, 64) as fmt's %v uses it, or encoding/json's float form."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    if value == 0:
        return "-0" if math.copysign(1.0, value) < 0 else "0"
    sign, digit_tuple, exponent = Decimal(repr(value)).as_tuple()
    digits = "".join(map(str, digit_tuple)).rstrip("0") or "0"
    assert isinstance(exponent, int)
    point = len("".join(map(str, digit_tuple))) + exponent  # decimal point position in digits
    exp = point - 1
    # encoding/json switches to %e outside [1e-6, 1e21); %v past six digits before the point.
    scientific = (abs(value) < 1e-6 or abs(value) >= 1e21) if json_style else (exp < -4 or exp >= 6)
    prefix = "-" if sign else ""
    if scientific:
        mantissa = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
        width = 1 if json_style else 2  # encoding/json trims e-07 to e-7
        return f"{prefix}{mantissa}e{'-' if exp < 0 else '+'}{abs(exp):0{width}d}"
    if point <= 0:
        return f"{prefix}0.{'0' * -point}{digits}"
    if point >= len(digits):
        return f"{prefix}{digits}{'0' * (point - len(digits))}"
    return f"{prefix}{digits[:point]}.{digits[point:]}"


def _go_json(value: Any) -> str:
    """encoding/json.Marshal of decoded JSON: sorted keys, compact, HTML characters escaped."""
    if isinstance(value, dict):
        items = sorted(value.items())
        return "{" + ",".join(f"{_go_json(str(k))}:{_go_json(v)}" for k, v in items) + "}"
    if isinstance(value, list):
        return "[" + ",".join(_go_json(v) for v in value) + "]"
    if isinstance(value, str):
        text = json.dumps(value, ensure_ascii=False)
        for char, escaped in _HTML_ESCAPES:
            text = text.replace(char, escaped)
        return text
    if value is None:
        return "null"
    if isinstance(value, float):
        return _go_float(value, json_style=True)
    return go_text(value)


_HTML_ESCAPES: Final = (
    ("<", "\\u003c"),
    (">", "\\u003e"),
    ("&", "\\u0026"),
    ("\u2028", "\\u2028"),
    ("\u2029", "\\u2029"),
)

"""Custom resource printers from `additionalPrinterColumns` (apiextensions tableconvertor)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from minikcp.apis import printers, printers_crd
from minikcp.apis.printer_docs import FIELD_DOCS

NOW = 1_700_000_000.0
CREATED = datetime.fromtimestamp(NOW - 3 * 86400, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")

WIDGET = {
    "apiVersion": "example.com/v1",
    "kind": "Widget",
    "metadata": {"name": "w1", "creationTimestamp": CREATED},
    "spec": {
        "replicas": 3,
        "ratio": 2.75,
        "enabled": True,
        "owner": {"team": "core", "tags": ["a", "b"]},
        "size": "large",
        "note": None,
    },
    "status": {
        "conditions": [
            {"type": "Synced", "status": "True", "lastTransitionTime": CREATED},
            {"type": "Ready", "status": "False", "reason": "Waiting"},
        ],
        "observedAt": "not a time",
    },
}


def column(name: str, kind: str, path: str, **extra: Any) -> dict[str, Any]:
    return {"name": name, "type": kind, "jsonPath": path, **extra}


def test_without_columns_name_and_age() -> None:
    printer = printers.crd_printer([])
    assert [c.definition() for c in printer.columns] == [
        {
            "name": "Name",
            "type": "string",
            "format": "name",
            "description": FIELD_DOCS["meta_v1.ObjectMeta.name"],
            "priority": 0,
        },
        {
            "name": "Age",
            "type": "date",
            "format": "",
            "description": FIELD_DOCS["meta_v1.ObjectMeta.creationTimestamp"],
            "priority": 0,
        },
    ]
    assert printer.cells(WIDGET, NOW) == ["w1", "3d"]


def test_declared_columns_replace_age() -> None:
    printer = printers.crd_printer(
        [
            column("Replicas", "integer", ".spec.replicas"),
            column("Owner", "string", ".spec.owner.team", description="Team", priority=1),
            column("Size", "string", ".spec.size", format="byte"),
        ]
    )
    assert [c.definition() for c in printer.columns[1:]] == [
        {
            "name": "Replicas",
            "type": "integer",
            "format": "",
            "description": "Custom resource definition column (in JSONPath format): .spec.replicas",
            "priority": 0,
        },
        {"name": "Owner", "type": "string", "format": "", "description": "Team", "priority": 1},
        {
            "name": "Size",
            "type": "string",
            "format": "byte",
            "description": "Custom resource definition column (in JSONPath format): .spec.size",
            "priority": 0,
        },
    ]
    assert printer.cells(WIDGET, NOW) == ["w1", 3, "core", "large"]


@pytest.mark.parametrize(
    ("kind", "path", "expected"),
    [
        ("string", '.status.conditions[?(@.type=="Ready")].status', "False"),
        ("string", ".status.conditions[?(@.type=='Ready')].reason", "Waiting"),
        ("string", '.status.conditions[?(@.type=="Gone")].status', None),
        ("string", ".spec.missing", None),
        ("string", ".spec.note", "<no value>"),
        ("string", ".spec.replicas", "3"),
        ("string", ".spec.ratio", "2.75"),
        ("string", ".spec.enabled", "true"),
        ("string", ".spec.owner", '{"tags":["a","b"],"team":"core"}'),
        ("string", ".spec.owner.tags", '["a","b"]'),
        ("string", ".spec.owner.tags[*]", "a"),  # only the first result
        ("string", ".spec.owner.tags[5]", None),  # an evaluation error is a null cell
        ("integer", ".spec.replicas", 3),
        ("integer", ".spec.ratio", 2),
        ("integer", ".spec.size", None),
        ("integer", ".spec.enabled", None),
        ("number", ".spec.replicas", 3.0),
        ("number", ".spec.ratio", 2.75),
        ("boolean", ".spec.enabled", True),
        ("boolean", ".spec.replicas", None),
        ("date", ".metadata.creationTimestamp", "3d"),
        ("date", ".status.conditions[0].lastTransitionTime", "3d"),
        ("date", ".status.observedAt", "<invalid>"),
        ("date", ".spec.replicas", None),
        ("date", ".spec.missing", None),
        ("custom", ".spec.size", None),
    ],
)
def test_cell_types(kind: str, path: str, expected: Any) -> None:
    printer = printers.crd_printer([column("C", kind, path)])
    assert printer.cells(WIDGET, NOW) == ["w1", expected]


def test_empty_dates_are_unknown() -> None:
    printer = printers.crd_printer([column("Since", "date", ".status.since")])
    assert printer.cells({"metadata": {"name": "x"}, "status": {"since": ""}}, NOW)[1] == (
        "<unknown>"
    )


def test_unparsable_path_ends_the_columns() -> None:
    printer = printers.crd_printer(
        [
            column("Replicas", "integer", ".spec.replicas"),
            column("Broken", "string", ".spec[?(@.x=="),
            column("Size", "string", ".spec.size"),
        ]
    )
    assert [c.name for c in printer.columns] == ["Name", "Replicas"]
    assert printer.cells(WIDGET, NOW) == ["w1", 3]


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (1.0, "1"),
        (100000.0, "100000"),
        (1000000.0, "1e+06"),
        (123456789.0, "1.23456789e+08"),
        (0.0001, "0.0001"),
        (0.00001, "1e-05"),
        (-2.5, "-2.5"),
        (1e21, "1e+21"),
        ({"b": 1.0, "a": [1e-7, 1e21, 0.5]}, '{"a":[1e-7,1e+21,0.5],"b":1}'),
        ({"html": "<a&b>"}, '{"html":"\\u003ca\\u0026b\\u003e"}'),
        ([None, False, "x"], '[null,false,"x"]'),
    ],
)
def test_go_text(value: Any, expected: str) -> None:
    assert printers_crd.go_text(value) == expected

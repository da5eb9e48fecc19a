"""Negotiated schemas: importing a kind from OpenAPI, intersecting, objects that do not fit."""

from __future__ import annotations

from typing import Any

import pytest

from minikcp.apis import catalog, openapi
from minikcp.machinery import schema_intersection as si

S = {"type": "string"}
I = {"type": "integer"}  # noqa: E741


def obj(**properties: Any) -> dict[str, Any]:
    return {"type": "object", "properties": properties}


@pytest.mark.parametrize(
    ("wide", "narrow", "result", "differences"),
    [
        # The same schema: nothing lacks.
        (obj(a=S), obj(a=S), obj(a=S), []),
        # A field absent downstream is absent.
        (obj(a=S, b=I), obj(a=S), obj(a=S), [si.Difference(".b", si.MISSING)]),
        # Nested, and fields only the narrower side has are not reported as lacking.
        (
            obj(spec=obj(a=S, b=I)),
            obj(spec=obj(a=S, c=S)),
            obj(spec=obj(a=S)),
            [si.Difference(".spec.b", si.MISSING)],
        ),
        # Enums are intersected.
        (
            obj(c={"type": "string", "enum": ["red", "green", "blue"]}),
            obj(c={"type": "string", "enum": ["green", "red"]}),
            obj(c={"type": "string", "enum": ["red", "green"]}),
            [si.Difference(".c", si.ENUM, 'narrowed to "red", "green"')],
        ),
        # An enum on one side only narrows the other.
        (
            obj(c=S),
            obj(c={"type": "string", "enum": ["x"]}),
            obj(c={"type": "string", "enum": ["x"]}),
            [si.Difference(".c", si.ENUM, 'narrowed to "x"')],
        ),
        # Types must agree, or the field is dropped and flagged.
        (
            obj(a=S, n=I),
            obj(a=S, n=S),
            obj(a=S),
            [si.Difference(".n", si.TYPE, "integer here, string there")],
        ),
        # Required is the union (of the fields kept).
        (
            {**obj(a=S, b=S, c=S), "required": ["a"]},
            {**obj(a=S, b=S), "required": ["b", "c"]},
            {**obj(a=S, b=S), "required": ["a", "b"]},
            [si.Difference(".c", si.MISSING)],
        ),
        # Array items are intersected under [*].
        (
            obj(ports={"type": "array", "items": obj(name=S, number=I)}),
            obj(ports={"type": "array", "items": obj(name=S)}),
            obj(ports={"type": "array", "items": obj(name=S)}),
            [si.Difference(".ports[*].number", si.MISSING)],
        ),
        # Map values under .*
        (
            obj(labels={"type": "object", "additionalProperties": obj(a=S, b=S)}),
            obj(labels={"type": "object", "additionalProperties": obj(a=S)}),
            obj(labels={"type": "object", "additionalProperties": obj(a=S)}),
            [si.Difference(".labels.*.b", si.MISSING)],
        ),
        # A side that keeps unknown fields accepts the other's fields.
        (
            obj(extra=obj(a=S)),
            obj(extra={"type": "object", "x-kubernetes-preserve-unknown-fields": True}),
            obj(extra=obj(a=S)),
            [],
        ),
        # Int-or-string is its own type.
        (
            obj(port={"x-kubernetes-int-or-string": True}),
            obj(port=I),
            obj(),
            [si.Difference(".port", si.TYPE, "int-or-string here, integer there")],
        ),
    ],
)
def test_intersect(
    wide: dict[str, Any],
    narrow: dict[str, Any],
    result: dict[str, Any],
    differences: list[si.Difference],
) -> None:
    merged, found = si.intersect(wide, narrow)
    assert merged == result
    assert found == differences
    # The result does not depend on the order (but for the order of enum values).
    assert _canon(si.intersect(narrow, wide)[0]) == _canon(result)


def _canon(schema: Any) -> Any:
    if isinstance(schema, dict):
        return {k: sorted(v) if k == "enum" else _canon(v) for k, v in schema.items()}
    return schema


def test_negotiate_folds_every_import() -> None:
    own = obj(spec=obj(a=S, b=S, c={"type": "string", "enum": ["x", "y", "z"]}))
    imported = {
        "east": obj(spec=obj(a=S, b=S, c={"type": "string", "enum": ["x", "y"]})),
        "west": obj(spec=obj(a=S, c=S)),
    }
    schema, lacks = si.negotiate(own, imported)
    assert schema == obj(spec=obj(a=S, c={"type": "string", "enum": ["x", "y"]}))
    assert [d.describe() for d in lacks["east"]] == ['.spec.c (values narrowed to "x", "y")']
    assert [d.describe() for d in lacks["west"]] == [".spec.b"]


@pytest.mark.parametrize(
    ("value", "found"),
    [
        ({"spec": {"a": "x"}}, []),
        ({"spec": {"a": "x", "b": 1}}, [si.Violation("spec.b", 1)]),
        ({"spec": {"c": "z"}}, [si.Violation("spec.c", "z", ("x", "y"))]),
        (
            {"spec": {"ports": [{"name": "a"}, {"name": "b", "n": 1}]}},
            [si.Violation("spec.ports[1].n", 1)],
        ),
        ({"spec": {"m": {"k": {"a": "x", "q": 2}}}}, [si.Violation("spec.m[k].q", 2)]),
        ({"spec": {"any": {"deep": {"x": 1}}}}, []),
        # Metadata and status are not negotiated.
        ({"metadata": {"name": "n"}, "status": {"anything": 1}, "spec": {}}, []),
        ({"other": 1}, [si.Violation("other", 1)]),
    ],
)
def test_violations(value: dict[str, Any], found: list[si.Violation]) -> None:
    schema = obj(
        spec=obj(
            a=S,
            c={"type": "string", "enum": ["x", "y"]},
            ports={"type": "array", "items": obj(name=S)},
            m={"type": "object", "additionalProperties": obj(a=S)},
            any={"type": "object", "x-kubernetes-preserve-unknown-fields": True},
        )
    )
    assert si.violations(value, schema) == found


def test_new_violations_let_what_was_there_stand() -> None:
    schema = obj(spec=obj(a=S))
    old = {"spec": {"a": "x", "b": 1}}
    assert si.new_violations({"spec": {"a": "y", "b": 1}}, old, schema) == []
    assert si.new_violations({"spec": {"a": "y", "b": 2}}, old, schema) == [
        si.Violation("spec.b", 2)
    ]
    assert si.new_violations({"spec": {"c": 1}}, None, schema) == [si.Violation("spec.c", 1)]


@pytest.mark.parametrize(
    ("field", "path"),
    [
        ("spec.a", ".spec.a"),
        ("spec.ports[3].name", ".spec.ports[*].name"),
        ("spec.m[k].q", ".spec.m.*.q"),
    ],
)
def test_schema_path(field: str, path: str) -> None:
    assert si.schema_path(field) == path


def test_kind_schema_from_an_openapi_document() -> None:
    types = catalog.Catalog.builtin()
    document = openapi.openapi_v3_document(types, "apps/v1")
    assert document is not None
    import orjson

    schema = si.kind_schema(orjson.loads(document.body), "apps", "v1", "Deployment")
    spec = schema["properties"]["spec"]["properties"]
    assert spec["minReadySeconds"] == {"type": "integer", "format": "int32"}
    containers = spec["template"]["properties"]["spec"]["properties"]["containers"]
    assert containers["items"]["properties"]["image"]["type"] == "string"
    assert "metadata" not in schema["properties"] and "status" not in schema["properties"]
    assert "description" not in spec["replicas"]
    assert si.kind_schema(orjson.loads(document.body), "apps", "v1", "Nothing") == {}
    # The same schema on both sides: nothing lacks.
    assert si.intersect(schema, schema) == (schema, [])

"""Custom resources against their structural schema: causes, defaults, pruning (pure)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from minikcp.apis import crds, custom_resources, defaults, validation
from minikcp.machinery.errors import Cause
from tests.e2e.crd_manifests import crd

WIDGETS = crds.served_types(json.loads(crd())).types[0]


def _widget(spec: Any, **extra: Any) -> dict[str, Any]:
    return {
        "apiVersion": "example.com/v1",
        "kind": "Widget",
        "metadata": {"name": "w"},
        "spec": spec,
        **extra,
    }


def _causes(spec: Any) -> list[tuple[str, str, str]]:
    return [
        (c.reason, c.field, c.message) for c in validation.validate_kind(WIDGETS, _widget(spec))
    ]


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ({"size": "small", "replicas": 0, "port": 80, "tags": ["a", "b"]}, []),
        ({"size": "large", "port": "http", "replicas": 2.0}, []),
        (
            {"size": "small", "replicas": "2"},
            [
                (
                    "FieldValueTypeInvalid",
                    "spec.replicas",
                    'Invalid value: "string": spec.replicas in body must be of type integer: '
                    '"string"',
                )
            ],
        ),
        ({}, [("FieldValueRequired", "spec.size", "Required value")]),
        (
            "text",
            [
                (
                    "FieldValueTypeInvalid",
                    "spec",
                    'Invalid value: "string": spec in body must be of type object: "string"',
                )
            ],
        ),
        (
            {"size": "small", "replicas": -1},
            [
                (
                    "FieldValueInvalid",
                    "spec.replicas",
                    "Invalid value: -1: spec.replicas in body should be greater than or equal to 0",
                )
            ],
        ),
        (
            {"size": "small", "label": "abcdefghijklmn"},
            [("FieldValueTooLong", "spec.label", "Too long: may not be more than 12 bytes")],
        ),
        (
            {"size": "small", "port": True},
            [
                (
                    "FieldValueTypeInvalid",
                    "spec.port",
                    'Invalid value: "boolean": spec.port in body must be of type integer,string: '
                    '"boolean"',
                )
            ],
        ),
        (
            {"size": "small", "tags": ["x", "y", "x"]},
            [("FieldValueDuplicate", "spec.tags[2]", 'Duplicate value: "x"')],
        ),
        (
            {"size": "small", "template": {"kind": "Pod"}},
            [
                (
                    "FieldValueRequired",
                    "spec.template.apiVersion",
                    "Required value: must not be empty",
                )
            ],
        ),
        ({"size": "small", "extra": {"anything": [1, {"goes": True}]}}, []),
    ],
)
def test_schema_errors_are_upstream_causes(spec: Any, expected: list[tuple[str, str, str]]) -> None:
    assert _causes(spec) == expected


def test_defaults_fill_missing_and_null_fields_only() -> None:
    obj = _widget({"size": "small"})
    defaults.apply_defaults(WIDGETS, obj)
    assert obj["spec"] == {"size": "small", "replicas": 1}
    kept = _widget({"size": "small", "replicas": 5})
    defaults.apply_defaults(WIDGETS, kept)
    assert kept["spec"]["replicas"] == 5
    nulled = _widget({"size": "small", "replicas": None})
    defaults.apply_defaults(WIDGETS, nulled)
    assert nulled["spec"]["replicas"] == 1


def test_defaults_reach_into_lists_and_maps() -> None:
    schema = {
        "type": "object",
        "properties": {
            "spec": {
                "type": "object",
                "properties": {
                    "items": {
                        "type": "array",
                        "items": {
                            "type": "object",
                            "properties": {"mode": {"type": "string", "default": "auto"}},
                        },
                    },
                    "byName": {
                        "type": "object",
                        "additionalProperties": {
                            "type": "object",
                            "properties": {"on": {"type": "boolean", "default": False}},
                        },
                    },
                },
            }
        },
    }
    rt = crds.served_types(json.loads(crd(schema=schema))).types[0]
    obj = _widget({"items": [{}, {"mode": "x"}], "byName": {"a": {}}})
    assert custom_resources.apply_defaults(rt, obj)
    assert obj["spec"] == {
        "items": [{"mode": "auto"}, {"mode": "x"}],
        "byName": {"a": {"on": False}},
    }
    assert not custom_resources.apply_defaults(rt, obj)  # nothing left to default


def test_unknown_fields_are_found_and_pruned_but_not_where_preserved() -> None:
    obj = _widget(
        {
            "size": "small",
            "bogus": 1,
            "extra": {"free": 1},
            "template": {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": "p", "x": 1},
                "spec": {},
            },
            "ports": [{"name": "a", "weight": 2}],
        },
        status={"phase": "x", "junk": True},
        junk=1,
    )
    assert validation.unknown_fields(WIDGETS, obj) == [
        "spec.bogus",
        "spec.template.metadata.x",
        "spec.ports[0].weight",
        "status.junk",
        "junk",
    ]
    validation.prune_unknown_fields(WIDGETS, obj)
    assert obj["spec"] == {
        "size": "small",
        "extra": {"free": 1},
        "template": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {}},
        "ports": [{"name": "a"}],
    }
    assert obj["status"] == {"phase": "x"}
    assert "junk" not in obj


def test_the_same_kind_with_another_schema_validates_with_its_own() -> None:
    numbers = {
        "type": "object",
        "properties": {"spec": {"type": "object", "properties": {"size": {"type": "integer"}}}},
    }
    other = crds.served_types(json.loads(crd(schema=numbers))).types[0]
    assert validation.validate_kind(other, _widget({"size": 3})) == []
    assert Cause(
        "FieldValueTypeInvalid",
        'Invalid value: "integer": spec.size in body must be of type string: "integer"',
        "spec.size",
    ) in validation.validate_kind(WIDGETS, _widget({"size": 3}))


def test_metadata_name_rules_of_the_schema_apply() -> None:
    schema = {
        "type": "object",
        "properties": {
            "metadata": {
                "type": "object",
                "properties": {"name": {"type": "string", "maxLength": 3}},
            }
        },
    }
    rt = crds.served_types(json.loads(crd(schema=schema))).types[0]
    obj = _widget({})
    obj["metadata"]["name"] = "toolong"
    assert [c.field for c in validation.validate_kind(rt, obj)] == ["metadata.name"]


def test_the_same_kind_with_another_default_defaults_with_its_own() -> None:
    def with_default(mode: str) -> Any:
        schema = {
            "type": "object",
            "properties": {
                "spec": {
                    "type": "object",
                    "properties": {"mode": {"type": "string", "default": mode}},
                }
            },
        }
        return crds.served_types(json.loads(crd(schema=schema))).types[0]

    first, second = _widget({}), _widget({})
    assert custom_resources.apply_defaults(with_default("fast"), first)
    assert custom_resources.apply_defaults(with_default("slow"), second)
    assert (first["spec"], second["spec"]) == ({"mode": "fast"}, {"mode": "slow"})

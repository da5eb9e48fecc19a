"""A schema cut down to its defaults defaults exactly as the whole schema does."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from minikcp.apis import kcp_kinds
from minikcp.apis.custom_resources import apply_structural_defaults
from minikcp.apis.structural_defaults import defaulting_schema

_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "plain": {"type": "string"},
        "spec": {
            "type": "object",
            "default": {},
            "properties": {
                "mode": {"type": "string", "default": "fast"},
                "name": {"type": "string"},
                "maybe": {"type": "string", "nullable": True, "default": "x"},
                "ports": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "properties": {
                            "protocol": {"type": "string", "default": "TCP"},
                            "port": {"type": "integer"},
                        },
                    },
                },
                "tags": {
                    "type": "object",
                    "additionalProperties": {
                        "type": "object",
                        "properties": {"weight": {"type": "integer", "default": 1}},
                    },
                },
                "free": {"type": "object", "additionalProperties": {"type": "string"}},
            },
        },
        "status": {"type": "object", "properties": {"phase": {"type": "string"}}},
    },
}


def test_only_branches_with_defaults_are_kept() -> None:
    assert defaulting_schema(_SCHEMA) == {
        "properties": {
            "spec": {
                "default": {},
                "properties": {
                    "mode": {"default": "fast"},
                    "maybe": {"default": "x", "nullable": True},
                    "ports": {"items": {"properties": {"protocol": {"default": "TCP"}}}},
                    "tags": {"additionalProperties": {"properties": {"weight": {"default": 1}}}},
                },
            }
        }
    }
    assert defaulting_schema({"type": "object", "properties": {"a": {"type": "string"}}}) == {}


_VALUES: list[Any] = [
    {},
    {"spec": None},
    {"spec": {"maybe": None, "mode": None}},
    {"plain": "p", "spec": {"ports": [{"port": 1}, {"protocol": "UDP"}, "odd"]}},
    {"spec": {"tags": {"a": {}, "b": {"weight": 3}}, "free": {"k": "v"}}, "status": {}},
    {"spec": "not an object"},
    [],
]


@pytest.mark.parametrize("value", _VALUES)
def test_defaults_match_the_whole_schema(value: Any) -> None:
    whole, cut = copy.deepcopy(value), copy.deepcopy(value)
    changed = apply_structural_defaults(_SCHEMA, whole)
    assert apply_structural_defaults(defaulting_schema(_SCHEMA), cut) == changed
    assert cut == whole


@pytest.mark.parametrize("kind", kcp_kinds.kinds(), ids=lambda k: k.rt.kind)
@pytest.mark.parametrize("value", [{}, {"spec": {}, "status": {}}, {"metadata": {"name": "a"}}])
def test_kcp_kinds_default_as_with_their_whole_schema(
    kind: kcp_kinds.KcpKind, value: dict[str, Any]
) -> None:
    whole, cut = copy.deepcopy(value), copy.deepcopy(value)
    changed = apply_structural_defaults(kind.schema, whole)
    assert apply_structural_defaults(kind.defaulting, cut) == changed
    assert cut == whole

"""Navigation of an OpenAPI v3 schema with the Kubernetes extensions that patches need.

A `SchemaNode` is one position in a schema (a kind, a field, a list item). It answers what strategic
merge patch and server-side apply ask of a field: its patch strategy and merge key, its list type
and list-map keys, its map type. The schema is plain data (the `$defs` of the upstream JSON
schemas, or a CRD's openAPIV3Schema), so this stays pure.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import cached_property
from typing import Any

Schema = Mapping[str, Any]
_EMPTY: Schema = {}


class SchemaNode:
    """One node of a schema; `$ref` and single-element `allOf` are followed transparently.

    Extensions written on a property (beside a `$ref`) win over those of the referenced definition,
    as in the upstream OpenAPI where `x-kubernetes-patch-*` sit on the property.
    """

    __slots__ = ("__dict__", "_defs", "_own")

    def __init__(self, defs: Mapping[str, Schema], node: Schema) -> None:
        self._defs = defs
        self._own = node

    @classmethod
    def definition(cls, defs: Mapping[str, Schema], name: str) -> SchemaNode:
        return cls(defs, defs.get(name, _EMPTY))

    @cached_property
    def _target(self) -> Schema:
        node = self._own
        seen = 0
        while seen < 32:
            seen += 1
            ref = node.get("$ref")
            if isinstance(ref, str):
                node = self._defs.get(ref.rsplit("/", 1)[-1], _EMPTY)
                continue
            all_of = node.get("allOf")
            if isinstance(all_of, list) and len(all_of) == 1 and isinstance(all_of[0], Mapping):
                node = all_of[0]
                continue
            break
        return node

    def _ext(self, name: str) -> Any:
        if name in self._own:
            return self._own[name]
        return self._target.get(name)

    @property
    def raw(self) -> Schema:
        """The resolved schema of this node (after `$ref`)."""
        return self._target

    @cached_property
    def types(self) -> frozenset[str]:
        t = self._target.get("type")
        if isinstance(t, str):
            return frozenset({t})
        if isinstance(t, list):
            return frozenset(x for x in t if isinstance(x, str))
        if "properties" in self._target:
            return frozenset({"object"})
        return frozenset()

    @property
    def is_object(self) -> bool:
        return "object" in self.types

    @property
    def is_array(self) -> bool:
        return "array" in self.types

    @property
    def preserves_unknown_fields(self) -> bool:
        return bool(self._ext("x-kubernetes-preserve-unknown-fields"))

    @property
    def int_or_string(self) -> bool:
        return bool(self._ext("x-kubernetes-int-or-string")) or self._target.get("format") == (
            "int-or-string"
        )

    @cached_property
    def properties(self) -> Mapping[str, Schema]:
        props = self._target.get("properties")
        return props if isinstance(props, Mapping) else _EMPTY

    def field(self, name: str) -> SchemaNode | None:
        """The schema of property `name`, or of map values if this is a map; None if unknown."""
        prop = self.properties.get(name)
        if prop is not None:
            return SchemaNode(self._defs, prop)
        return self.values()

    def values(self) -> SchemaNode | None:
        """The schema of a map's values (`additionalProperties`), if this is a map."""
        extra = self._target.get("additionalProperties")
        if isinstance(extra, Mapping):
            return SchemaNode(self._defs, extra)
        return None

    def items(self) -> SchemaNode | None:
        items = self._target.get("items")
        if isinstance(items, Mapping):
            return SchemaNode(self._defs, items)
        return None

    @property
    def required(self) -> tuple[str, ...]:
        req = self._target.get("required")
        return tuple(req) if isinstance(req, list) else ()

    @property
    def description(self) -> str:
        d = self._own.get("description") or self._target.get("description")
        return d if isinstance(d, str) else ""

    @property
    def patch_strategies(self) -> tuple[str, ...]:
        """`x-kubernetes-patch-strategy` split on commas, e.g. ("merge", "retainKeys")."""
        s = self._ext("x-kubernetes-patch-strategy")
        return tuple(p.strip() for p in s.split(",") if p.strip()) if isinstance(s, str) else ()

    @property
    def patch_merge_key(self) -> str | None:
        k = self._ext("x-kubernetes-patch-merge-key")
        return k if isinstance(k, str) else None

    @property
    def list_type(self) -> str | None:
        """`atomic`, `set` or `map` (x-kubernetes-list-type); None when unspecified."""
        t = self._ext("x-kubernetes-list-type")
        return t if isinstance(t, str) else None

    @property
    def list_map_keys(self) -> tuple[str, ...]:
        k = self._ext("x-kubernetes-list-map-keys")
        return tuple(k) if isinstance(k, list) else ()

    @property
    def map_type(self) -> str | None:
        """`atomic` or `granular` (x-kubernetes-map-type); None when unspecified."""
        t = self._ext("x-kubernetes-map-type")
        return t if isinstance(t, str) else None


def unknown() -> SchemaNode:
    """A node that knows nothing: every strategy defaults (replace lists, merge maps)."""
    return SchemaNode({}, _EMPTY)

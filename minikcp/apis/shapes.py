"""Schemas compiled into `Shape` trees that validators walk quickly.

A shape is what a decoder needs to know about one position of an object: which JSON type it takes,
its fields (for structs) or its items/values, and the Go type name that upstream error messages
print. Definitions are compiled once per catalog layer and shared by every shape that refers to them
(recursive schemas such as JSONSchemaProps compile to cyclic trees).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from minikcp.apis.catalog import Catalog, Schema

# What a position accepts.
OBJECT = "object"  # a struct with known fields
MAP = "map"  # string keys, `item` values
ARRAY = "array"
STRING = "string"
BYTES = "bytes"  # base64 string decoded into []byte
TIME = "time"  # RFC 3339 string (metav1.Time, MicroTime)
INTEGER = "integer"
NUMBER = "number"
BOOLEAN = "boolean"
INT_OR_STRING = "int-or-string"
QUANTITY = "quantity"
ANY = "any"  # RawExtension, JSON, FieldsV1: anything goes


class Shape:
    __slots__ = (
        "fields",
        "format",
        "go_type",
        "item",
        "kind",
        "nullable",
        "preserve_unknown",
        "prune_known",
        "required",
        "struct",
    )

    def __init__(self, kind: str, go_type: str = "") -> None:
        self.kind = kind
        self.go_type = go_type  # e.g. "int32", "v1.PodTemplateSpec", "[]v1.Container"
        self.struct = ""  # Go struct name for OBJECT shapes, e.g. "DeploymentSpec"
        self.fields: dict[str, Shape] = {}
        self.item: Shape | None = None  # array items or map values
        self.required: tuple[str, ...] = ()
        self.preserve_unknown = False
        # Structural schemas (CRDs): unknown fields are kept here, but the declared ones are
        # still checked and pruned below (built-ins stop at a preserving node).
        self.prune_known = False
        self.nullable = True
        self.format = ""

    def __repr__(self) -> str:
        return f"Shape({self.kind}, {self.go_type!r})"


_ANY = Shape(ANY, "interface {}")


def compiled(catalog: Catalog, definition: str) -> Shape:
    """The shape of a named definition, compiled once per catalog layer that owns the schema."""
    owner = catalog.schema_owner(definition)
    cache: dict[str, Shape] = owner.memo.setdefault("shapes", {})
    shape = cache.get(definition)
    if shape is None:
        shape = _Compiler(catalog, cache).definition(definition)
    return shape


class _Compiler:
    def __init__(self, catalog: Catalog, cache: dict[str, Shape]) -> None:
        self._catalog = catalog
        self._cache = cache

    def definition(self, name: str) -> Shape:
        shape = self._cache.get(name)
        if shape is not None:
            return shape
        schema = self._catalog.schema(name)
        if schema is None:
            return _ANY
        _, _, short = name.rpartition(".")
        package = name.rsplit(".", 2)[-2] if name.count(".") >= 2 else ""
        shape = Shape(ANY)
        # Registered before the body is compiled, so that recursive references find it.
        self._cache[name] = shape
        self._fill(shape, schema, struct=short, go_name=f"{package}.{short}")
        return shape

    def node(self, schema: Schema) -> Shape:
        ref = schema.get("$ref")
        if isinstance(ref, str):
            target = self.definition(ref.rsplit("/", 1)[-1])
            if schema.get("x-kubernetes-preserve-unknown-fields") and not target.preserve_unknown:
                return _with_preserve(target)
            return target
        shape = Shape(ANY)
        self._fill(shape, schema, struct="", go_name="")
        return shape

    def _fill(self, shape: Shape, schema: Schema, *, struct: str, go_name: str) -> None:
        types = _types(schema)
        shape.nullable = schema.get("nullable") is True or "null" in _raw_types(schema)
        shape.preserve_unknown = bool(schema.get("x-kubernetes-preserve-unknown-fields"))
        fmt = schema.get("format")
        shape.format = fmt if isinstance(fmt, str) else ""
        required = schema.get("required")
        shape.required = tuple(required) if isinstance(required, list) else ()
        one_of = schema.get("oneOf")
        if schema.get("x-kubernetes-int-or-string") or shape.format == "int-or-string":
            shape.kind, shape.go_type = INT_OR_STRING, "intstr.IntOrString"
        elif isinstance(one_of, list) and one_of:
            alternatives = {t for alt in one_of if isinstance(alt, Mapping) for t in _types(alt)}
            if alternatives == {"string", "integer"}:
                shape.kind, shape.go_type = INT_OR_STRING, "intstr.IntOrString"
            elif alternatives == {"string", "number"}:
                shape.kind, shape.go_type = QUANTITY, "resource.Quantity"
        elif "properties" in schema or (types == {"object"} and struct and go_name):
            props: Mapping[str, Schema] = schema.get("properties") or {}
            if props or "additionalProperties" not in schema:
                shape.kind, shape.go_type, shape.struct = OBJECT, go_name or "struct", struct
                shape.fields = {k: self.node(v) for k, v in props.items()}
                if not props and not shape.preserve_unknown:
                    # An object with no declared fields (FieldsV1, RawExtension): opaque.
                    shape.kind = ANY
        if shape.kind == ANY and not shape.fields:
            self._fill_simple(shape, schema, types, go_name)

    def _fill_simple(self, shape: Shape, schema: Schema, types: set[str], go_name: str) -> None:
        extra = schema.get("additionalProperties")
        if "object" in types and isinstance(extra, Mapping):
            shape.item = self.node(extra)
            shape.kind, shape.go_type = MAP, f"map[string]{shape.item.go_type}"
        elif "object" in types and shape.preserve_unknown:
            shape.kind, shape.go_type = OBJECT, go_name or "map[string]interface {}"
        elif "array" in types:
            items = schema.get("items")
            shape.item = self.node(items) if isinstance(items, Mapping) else _ANY
            shape.kind, shape.go_type = ARRAY, f"[]{shape.item.go_type}"
        elif types == {"string"}:
            if shape.format == "byte":
                shape.kind, shape.go_type = BYTES, "[]uint8"
            elif shape.format == "date-time":
                shape.kind, shape.go_type = TIME, go_name or "v1.Time"
            else:
                shape.kind, shape.go_type = STRING, "string"
        elif types == {"integer"}:
            shape.kind, shape.go_type = INTEGER, "int32" if shape.format == "int32" else "int64"
        elif types == {"number"}:
            shape.kind, shape.go_type = NUMBER, "float64"
        elif types == {"boolean"}:
            shape.kind, shape.go_type = BOOLEAN, "bool"
        else:
            shape.kind, shape.go_type = ANY, go_name or "interface {}"


def _raw_types(schema: Schema) -> list[Any]:
    t = schema.get("type")
    if isinstance(t, str):
        return [t]
    return list(t) if isinstance(t, list) else []


def _types(schema: Schema) -> set[str]:
    return {t for t in _raw_types(schema) if isinstance(t, str) and t != "null"}


def _with_preserve(target: Shape) -> Shape:
    copy = Shape(target.kind, target.go_type)
    for slot in Shape.__slots__:
        setattr(copy, slot, getattr(target, slot))
    copy.preserve_unknown = True
    return copy

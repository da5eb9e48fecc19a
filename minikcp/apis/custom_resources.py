"""Custom resources against their CRD's structural schema: validation, defaults, shapes.

The JSON-schema core (types, required, enum, pattern, bounds, lengths, items, uniqueness) is
checked by the `jsonschema` library on the schema converted to plain JSON schema (draft 4, whose
boolean `exclusiveMaximum` is OpenAPI v3.0's); errors are worded as apiextensions-apiserver's
`kubeOpenAPIResultToFieldErrors` words kube-openapi's (`spec.replicas in body must be of type
integer: "string"`). The Kubernetes extensions are checked here: `x-kubernetes-int-or-string`,
`x-kubernetes-embedded-resource` (apiVersion and kind required, metadata is ObjectMeta),
`x-kubernetes-list-type` set/map uniqueness, `x-kubernetes-preserve-unknown-fields`. Defaults
are applied as structural defaulting does; pruning walks the `Shape` compiled from the schema
(validation.py). Everything is compiled once per distinct `CustomResource` (its schema bytes),
so logical clusters with the same CRD share it.
"""

from __future__ import annotations

import collections
import functools
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any, cast

import orjson

from minikcp.apis import crds, shapes
from minikcp.apis import validation_meta as vm
from minikcp.apis.catalog import Catalog, CustomResource, ResourceType, upstream_definitions
from minikcp.apis.structural_defaults import defaulting_schema
from minikcp.machinery import schemas
from minikcp.machinery.errors import Cause

if TYPE_CHECKING:
    import jsonschema

Obj = Mapping[str, Any]
_OBJECT_META = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
_META_REF = {"$ref": f"#/components/schemas/{_OBJECT_META}"}


def _is_integer(checker: Any, value: Any) -> bool:
    # JSON has no integers apart: 2.0 is an integer to Kubernetes (it decodes JSON numbers so).
    if isinstance(value, bool):
        return False
    return isinstance(value, int) or (isinstance(value, float) and value.is_integer())


@functools.cache
def _validator_class() -> Any:
    # Imported with the first CRD's schema: jsonschema (with attrs and referencing) costs a
    # server that serves no custom resources a tenth of its start-up and some megabytes.
    import jsonschema

    return jsonschema.validators.extend(  # type: ignore[no-untyped-call]
        jsonschema.Draft4Validator,
        type_checker=jsonschema.Draft4Validator.TYPE_CHECKER.redefine("integer", _is_integer),
    )


class CompiledSchema:
    """One CRD version's schema in the forms the registry needs, compiled once."""

    def __init__(self, rt: ResourceType, custom: CustomResource) -> None:
        raw = orjson.loads(custom.schema)
        self.schema: Obj = raw if isinstance(raw, dict) else {}
        self.validator = _validator_class()(_json_schema(self.schema, root=True))
        published = crds.kind_schema(rt.group, rt.version, rt.kind, _with_envelopes(self.schema))
        # Shapes and the patch schema read ObjectMeta through a plain reference.
        published["properties"]["metadata"] = _META_REF
        layer = Catalog.builtin().extended([], schemas={rt.definition: published})
        self.shape = shapes.compiled(layer, rt.definition)
        _prune_known(self.shape, set())
        defs: collections.ChainMap[str, Obj] = collections.ChainMap(
            {rt.definition: published},
            cast(dict[str, Obj], upstream_definitions()),  # read only: no copy
        )
        self.node = schemas.SchemaNode.definition(defs, rt.definition)
        self.has_defaults = b'"default"' in custom.schema
        self.defaulting = defaulting_schema(self.schema)
        # Only schemas using these extensions need the walk jsonschema cannot do.
        self.has_extensions = (
            b"x-kubernetes-embedded-resource" in custom.schema
            or b"x-kubernetes-list-type" in custom.schema
        )


@functools.lru_cache(maxsize=512)
def _compiled(rt: ResourceType) -> CompiledSchema:
    assert rt.custom is not None
    return CompiledSchema(rt, rt.custom)


def compiled(rt: ResourceType) -> CompiledSchema:
    return _compiled(rt)


def _prune_known(shape: shapes.Shape, seen: set[int]) -> None:
    """Marks the preserving nodes of a CRD's own shapes (ObjectMeta and other shared built-in
    shapes preserve nothing, so they are never marked)."""
    if id(shape) in seen:
        return
    seen.add(id(shape))
    if shape.preserve_unknown:
        shape.prune_known = True
    for sub in shape.fields.values():
        _prune_known(sub, seen)
    if shape.item is not None:
        _prune_known(shape.item, seen)


# -- schema conversion -----------------------------------------------------------------------


def _json_schema(node: Any, *, root: bool = False) -> Any:
    """OpenAPI v3 (structural) to draft-4 JSON schema: nullable, int-or-string, no extensions."""
    if not isinstance(node, Mapping):
        return node
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key.startswith("x-kubernetes-") or key in ("nullable", "default", "example", "format"):
            continue
        if key == "properties" and isinstance(value, Mapping):
            props = {k: _json_schema(v) for k, v in value.items()}
            if root:
                # apiVersion, kind and metadata are the server's (metadata: ObjectMeta rules);
                # only name and generateName restrictions of a metadata schema apply.
                props.pop("apiVersion", None)
                props.pop("kind", None)
                meta = props.pop("metadata", None)
                if isinstance(meta, Mapping):
                    kept = {
                        k: v
                        for k, v in (meta.get("properties") or {}).items()
                        if k in ("name", "generateName")
                    }
                    if kept:
                        props["metadata"] = {"type": "object", "properties": kept}
            out[key] = props
        elif key in ("items", "additionalProperties", "not") and isinstance(value, Mapping):
            out[key] = _json_schema(value)
        elif key in ("allOf", "anyOf", "oneOf") and isinstance(value, list):
            out[key] = [_json_schema(v) for v in value]
        elif key == "required" and root and isinstance(value, list):
            out[key] = [r for r in value if r not in ("apiVersion", "kind", "metadata")]
        else:
            out[key] = value
    if node.get("x-kubernetes-int-or-string"):
        out.pop("type", None)
        out["type"] = ["integer", "string"]
    if node.get("nullable") is True and isinstance(out.get("type"), str):
        out["type"] = [out["type"], "null"]
    if node.get("nullable") is True and "enum" in out:
        out["enum"] = [*out["enum"], None]
    return out


def _with_envelopes(node: Any) -> Any:
    """The schema with apiVersion/kind/metadata declared on embedded resources (for pruning)."""
    if not isinstance(node, Mapping):
        return node
    out = dict(node)
    for key in ("items", "additionalProperties"):
        if isinstance(out.get(key), Mapping):
            out[key] = _with_envelopes(out[key])
    props = out.get("properties")
    if isinstance(props, Mapping):
        out["properties"] = {k: _with_envelopes(v) for k, v in props.items()}
    if node.get("x-kubernetes-embedded-resource"):
        props = dict(out.get("properties") or {})
        props.setdefault("apiVersion", {"type": "string"})
        props.setdefault("kind", {"type": "string"})
        props["metadata"] = _META_REF
        out["properties"] = props
    return out


# -- validation ------------------------------------------------------------------------------


def _path(parts: Any) -> str:
    out = ""
    for part in parts:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out = f"{out}.{part}" if out else str(part)
    return out


def _number(value: Any) -> str:
    """Go's %v of a float64 bound: 10, 1.5, 1e+21."""
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e21:
        return str(int(value))
    return str(value)


def _type_name(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int) or (isinstance(value, float) and value.is_integer()):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    return "array" if isinstance(value, list) else "object"


def _cause(error: jsonschema.ValidationError, base: str = "") -> list[Cause]:
    path = _path([*([base] if base else []), *error.absolute_path])
    where = f"{path or '<nil>'} in body"
    value: Any = error.instance
    bound: Any = error.validator_value
    kind = error.validator
    if kind == "required":
        present = value if isinstance(value, Mapping) else {}
        return [vm.required(vm.child(path, r)) for r in bound if r not in present]
    if kind == "type":
        wanted = ",".join(bound) if isinstance(bound, list) else str(bound)
        actual = _type_name(value)
        message = f'Invalid value: "{actual}": {where} must be of type {wanted}: "{actual}"'
        return [Cause("FieldValueTypeInvalid", message, path)]
    if kind == "enum":
        shown = [orjson.dumps(v).decode() if not isinstance(v, str) else v for v in bound]
        return [vm.not_supported(path, value, shown)]
    if kind == "maxLength":
        return [Cause("FieldValueTooLong", f"Too long: may not be more than {bound} bytes", path)]
    if kind == "maxItems":
        return [
            Cause(
                "FieldValueTooMany",
                f"Too many: {len(value)}: must have at most {bound} items",
                path,
            )
        ]
    if kind == "maxProperties":
        return [
            Cause(
                "FieldValueTooMany",
                f"Too many: {len(value)}: must have at most {bound} items",
                path,
            )
        ]
    detail = _detail(error, where)
    return [vm.invalid(path, value if not isinstance(value, Mapping | list) else "", detail)]


def _detail(error: jsonschema.ValidationError, where: str) -> str:
    kind = error.validator
    bound: Any = error.validator_value
    schema: Any = error.schema if isinstance(error.schema, Mapping) else {}
    if kind == "pattern":
        return f"{where} should match '{bound}'"
    if kind == "maximum":
        if schema.get("exclusiveMaximum"):
            return f"{where} should be less than {_number(bound)}"
        return f"{where} should be less than or equal to {_number(bound)}"
    if kind == "minimum":
        if schema.get("exclusiveMinimum"):
            return f"{where} should be greater than {_number(bound)}"
        return f"{where} should be greater than or equal to {_number(bound)}"
    if kind == "minLength":
        return f"{where} should be at least {bound} chars long"
    if kind == "minItems":
        return f"{where} should have at least {bound} items"
    if kind == "uniqueItems":
        return f"{where} shouldn't contain duplicates"
    if kind == "multipleOf":
        return f"{where} should be a multiple of {_number(bound)}"
    if kind == "minProperties":
        return f"{where} should have at least {bound} properties"
    if kind == "not":
        return f"{where} must not validate the schema (not)"
    if kind == "anyOf":
        return f"{where} must validate at least one schema (anyOf)"
    if kind == "oneOf":
        return f"{where} must validate one and only one schema (oneOf)"
    return f"{where} {error.message}"


def validate(rt: ResourceType, obj: Obj) -> list[Cause]:
    """Every schema error of a custom resource, as 422 causes with field paths."""
    compiled_schema = _compiled(rt)
    causes: list[Cause] = []
    seen: set[tuple[str, str]] = set()
    for error in compiled_schema.validator.iter_errors(obj):
        for cause in _cause(error):
            if (cause.field, cause.message) not in seen:
                seen.add((cause.field, cause.message))
                causes.append(cause)
    if compiled_schema.has_extensions:
        causes.extend(_extensions(compiled_schema.schema, obj, "", root=True))
    return causes


def _extensions(schema: Any, value: Any, path: str, *, root: bool = False) -> Iterator[Cause]:
    """The Kubernetes extensions jsonschema does not know."""
    if not isinstance(schema, Mapping):
        return
    if schema.get("x-kubernetes-embedded-resource") and isinstance(value, Mapping):
        for field in ("apiVersion", "kind"):
            if not value.get(field):
                yield vm.required(vm.child(path, field), "must not be empty")
    if isinstance(value, Mapping):
        props = schema.get("properties")
        if isinstance(props, Mapping):
            for key, sub in value.items():
                if root and key in ("apiVersion", "kind", "metadata"):
                    continue
                if key in props:
                    yield from _extensions(props[key], sub, vm.child(path, key))
        extra = schema.get("additionalProperties")
        if isinstance(extra, Mapping):
            for key, sub in value.items():
                yield from _extensions(extra, sub, vm.child(path, key))
    elif isinstance(value, list):
        items = schema.get("items")
        list_type = schema.get("x-kubernetes-list-type")
        if list_type == "set":
            yield from _duplicates(value, path, lambda item: orjson.dumps(item))
        elif list_type == "map":
            keys = [k for k in schema.get("x-kubernetes-list-map-keys") or () if isinstance(k, str)]

            def identity(item: Any) -> bytes:
                if not isinstance(item, Mapping):
                    return orjson.dumps(item)
                return orjson.dumps({k: item.get(k) for k in keys}, option=orjson.OPT_SORT_KEYS)

            yield from _duplicates(value, path, identity)
        if isinstance(items, Mapping):
            for i, item in enumerate(value):
                yield from _extensions(items, item, vm.index(path, i))


def _duplicates(value: list[Any], path: str, identity: Any) -> Iterator[Cause]:
    seen: set[bytes] = set()
    for i, item in enumerate(value):
        ident = identity(item)
        if ident in seen:
            message = f"Duplicate value: {_go_value(item)}"
            yield Cause("FieldValueDuplicate", message, vm.index(path, i))
        seen.add(ident)


def _go_value(value: Any) -> str:
    """Go's %#v of a decoded JSON value (maps as map[string]interface {}{...})."""
    if isinstance(value, Mapping):
        body = ", ".join(f"{orjson.dumps(k).decode()}:{_go_value(value[k])}" for k in sorted(value))
        return f"map[string]interface {{}}{{{body}}}"
    if isinstance(value, list):
        return "[]interface {}{" + ", ".join(_go_value(v) for v in value) + "}"
    return vm.go_value(value)


def default_errors(schema: Obj, default: Any, field: str) -> list[str]:
    """Why `default` does not validate against the schema node of `field` (e.g. spec.replicas)
    it sits on, as the details of a CRD validation error."""
    validator = _validator_class()(_json_schema(schema))
    out = []
    for error in validator.iter_errors(default):
        for cause in _cause(error, field):
            # The detail only: the CRD error names the default's own path and value.
            _, found, detail = cause.message.partition(": " + cause.field)
            out.append(cause.field + detail if found else cause.message)
    return out


# -- defaults --------------------------------------------------------------------------------


def apply_defaults(rt: ResourceType, obj: dict[str, Any]) -> bool:
    """Structural defaulting in place; whether anything changed."""
    compiled_schema = _compiled(rt)
    if not compiled_schema.has_defaults:
        return False
    return apply_structural_defaults(compiled_schema.defaulting, obj)


def apply_structural_defaults(schema: Obj, value: Any) -> bool:
    """apiextensions' defaulting of a structural schema, in place; whether anything changed."""
    changed = False
    if isinstance(value, dict):
        props = schema.get("properties")
        if isinstance(props, Mapping):
            for key, sub in props.items():
                if not isinstance(sub, Mapping):
                    continue
                if "default" in sub and (
                    key not in value or (value[key] is None and not sub.get("nullable"))
                ):
                    value[key] = orjson.loads(orjson.dumps(sub["default"]))
                    changed = True
                if key in value:
                    changed = apply_structural_defaults(sub, value[key]) or changed
        extra = schema.get("additionalProperties")
        if isinstance(extra, Mapping):
            for sub_value in value.values():
                changed = apply_structural_defaults(extra, sub_value) or changed
    elif isinstance(value, list):
        items = schema.get("items")
        if isinstance(items, Mapping):
            for item in value:
                changed = apply_structural_defaults(items, item) or changed
    return changed

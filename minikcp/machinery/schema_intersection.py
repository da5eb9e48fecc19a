"""The schema every sync target accepts: OpenAPI kind schemas, their intersection, and the fields
of an object that a narrower schema does not allow.

Schemas here are OpenAPI v3 structural schemas with references resolved and descriptions left out
(only what decides whether a value is accepted). The intersection of two schemas keeps a field
only where both have it (or one keeps unknown fields there), intersects enums, unions `required`,
and drops a field whose types disagree. Each difference is reported as a JSON path of the field
(`.spec.ports[*].name`, `.spec.labels.*` for map values) so users see what a target lacks.
`metadata` and `status` are not negotiated: object metadata is the same everywhere, and status is
written by the targets themselves.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

Schema = Mapping[str, Any]

_REF = "#/components/schemas/"
_NOT_NEGOTIATED = ("metadata", "status")
# The keys that decide what a value may be; everything else (descriptions, defaults) is left out.
_KEPT = ("type", "format", "x-kubernetes-int-or-string", "x-kubernetes-embedded-resource")
_PRESERVE = "x-kubernetes-preserve-unknown-fields"
# A schema that refers to itself (JSONSchemaProps) stops there and takes anything below.
_ANYTHING: dict[str, Any] = {_PRESERVE: True}

MISSING = "Missing"  # the field is absent from the narrower schema
TYPE = "TypeMismatch"  # both have the field with different types: it is dropped
ENUM = "EnumNarrowed"  # the narrower schema allows fewer values


@dataclass(frozen=True, slots=True)
class Difference:
    path: str  # JSON path of the field, e.g. `.spec.shape`
    kind: str  # MISSING, TYPE or ENUM
    detail: str = ""

    def describe(self) -> str:
        if self.kind == TYPE:
            return f"{self.path} ({self.detail})"
        if self.kind == ENUM:
            return f"{self.path} (values {self.detail})"
        return self.path


@dataclass(frozen=True, slots=True)
class Violation:
    field: str  # the object's field, Kubernetes style: `spec.ports[0].name`
    value: Any  # for an enum: the value refused
    allowed: tuple[Any, ...] = ()  # for an enum: the values allowed


# -- import -------------------------------------------------------------------------------------


def kind_schema(document: Mapping[str, Any], group: str, version: str, kind: str) -> dict[str, Any]:
    """The structural schema of `kind` in an OpenAPI v3 document (`/openapi/v3/<group-version>`),
    references resolved, without metadata and status; {} when the document does not hold it."""
    components = (document.get("components") or {}).get("schemas") or {}
    wanted = {"group": group, "version": version, "kind": kind}
    for name, component in components.items():
        for gvk in component.get("x-kubernetes-group-version-kind") or ():
            if gvk == wanted:
                resolved = _resolve(component, components, (name,))
                properties = {
                    k: v
                    for k, v in (resolved.get("properties") or {}).items()
                    if k not in _NOT_NEGOTIATED
                }
                return {**resolved, "properties": properties}
    return {}


def _resolve(node: Schema, components: Mapping[str, Any], seen: tuple[str, ...]) -> dict[str, Any]:
    ref = node.get("$ref")
    if ref is None and len(node.get("allOf") or ()) == 1:
        ref = node["allOf"][0].get("$ref")  # `allOf: [$ref]` beside a description
    if isinstance(ref, str) and ref.startswith(_REF):
        name = ref[len(_REF) :]
        if name in seen or name not in components:
            return dict(_ANYTHING)
        return _resolve(components[name], components, (*seen, name))
    out: dict[str, Any] = {k: node[k] for k in _KEPT if k in node}
    if node.get(_PRESERVE):
        out[_PRESERVE] = True
    if node.get("enum"):
        out["enum"] = list(node["enum"])
    if node.get("required"):
        out["required"] = sorted(node["required"])
    properties = node.get("properties")
    if properties:
        out["properties"] = {k: _resolve(v, components, seen) for k, v in properties.items()}
    items = node.get("items")
    if isinstance(items, Mapping):
        out["items"] = _resolve(items, components, seen)
    extra = node.get("additionalProperties")
    if isinstance(extra, Mapping):
        out["additionalProperties"] = _resolve(extra, components, seen)
    elif extra is True:
        out["additionalProperties"] = True
    return out


# -- intersection -------------------------------------------------------------------------------


def intersect(
    wide: Schema, narrow: Schema, path: str = ""
) -> tuple[dict[str, Any] | None, list[Difference]]:
    """What both schemas accept, and what `narrow` lacks of `wide` (None: nothing in common)."""
    differences: list[Difference] = []
    result = _intersect(wide, narrow, path, differences)
    return result, differences


def _type_of(schema: Schema) -> str:
    if schema.get("x-kubernetes-int-or-string"):
        return "int-or-string"
    return str(schema.get("type", ""))


def _intersect(a: Schema, b: Schema, path: str, out: list[Difference]) -> dict[str, Any] | None:
    type_a, type_b = _type_of(a), _type_of(b)
    if type_a and type_b and type_a != type_b:
        out.append(Difference(path, TYPE, f"{type_a} here, {type_b} there"))
        return None
    result: dict[str, Any] = {k: a[k] for k in _KEPT if k in a}
    for k in _KEPT:
        if k not in result and k in b:
            result[k] = b[k]
    enum = _intersect_enum(a.get("enum"), b.get("enum"))
    if enum is not None:
        result["enum"] = enum
        dropped = [v for v in a.get("enum") or () if v not in enum]
        if dropped or (not a.get("enum") and b.get("enum")):
            shown = ", ".join(_quote(v) for v in enum) if enum else "none"
            out.append(Difference(path, ENUM, f"narrowed to {shown}"))
    keeps_a, keeps_b = bool(a.get(_PRESERVE)), bool(b.get(_PRESERVE))
    if keeps_a and keeps_b:
        result[_PRESERVE] = True
    props_a, props_b = a.get("properties") or {}, b.get("properties") or {}
    if props_a or props_b:
        properties: dict[str, Any] = {}
        for name in sorted({*props_a, *props_b}):
            child = f"{path}.{name}"
            if name in props_a and name in props_b:
                merged = _intersect(props_a[name], props_b[name], child, out)
            elif name in props_a:
                merged = dict(props_a[name]) if _accepts_unknown(b) else None
                if merged is None:
                    out.append(Difference(child, MISSING))
            else:
                merged = dict(props_b[name]) if _accepts_unknown(a) else None
            if merged is not None:
                properties[name] = merged
        result["properties"] = properties
    items_a, items_b = a.get("items"), b.get("items")
    if isinstance(items_a, Mapping) or isinstance(items_b, Mapping):
        items = _intersect(items_a or {}, items_b or {}, f"{path}[*]", out)
        if items is None:
            return None
        result["items"] = items
    extra_a, extra_b = a.get("additionalProperties"), b.get("additionalProperties")
    if isinstance(extra_a, Mapping) and isinstance(extra_b, Mapping):
        merged = _intersect(extra_a, extra_b, f"{path}.*", out)
        if merged is not None:
            result["additionalProperties"] = merged
    elif extra_a is not None and extra_b is not None:
        result["additionalProperties"] = extra_a if isinstance(extra_a, Mapping) else extra_b
    elif extra_a is not None and not props_b and not keeps_b and type_b == "object":
        out.append(Difference(f"{path}.*", MISSING))
    kept = result.get("properties") or {}
    required = sorted({*(a.get("required") or ()), *(b.get("required") or ())} & set(kept))
    if required:
        result["required"] = required
    return result


def _accepts_unknown(schema: Schema) -> bool:
    """A schema that takes fields it does not list (or says nothing of the value's shape)."""
    if schema.get(_PRESERVE) or schema.get("additionalProperties") is True:
        return True
    return (
        not schema.get("properties")
        and not schema.get("additionalProperties")
        and (not schema.get("type"))
    )


def _intersect_enum(a: Sequence[Any] | None, b: Sequence[Any] | None) -> list[Any] | None:
    if not a and not b:
        return None
    if not a:
        return list(b or ())
    if not b:
        return list(a)
    return [v for v in a if v in b]


def _quote(value: Any) -> str:
    return f'"{value}"' if isinstance(value, str) else str(value)


def negotiate(
    own: Schema, imported: Mapping[str, Schema]
) -> tuple[dict[str, Any], dict[str, list[Difference]]]:
    """The schema `own` and every imported schema accept, and what each import lacks of `own`."""
    lacks: dict[str, list[Difference]] = {}
    result: dict[str, Any] = dict(own)
    for name, schema in sorted(imported.items()):
        _, lacks[name] = intersect(own, schema)
        merged, _ = intersect(result, schema)
        result = merged or {}
    return result, lacks


# -- objects against a schema -------------------------------------------------------------------


def violations(obj: Mapping[str, Any], schema: Schema) -> list[Violation]:
    """The fields of `obj` (but metadata and status) that `schema` does not accept: fields it
    does not have, values outside its enums."""
    properties = schema.get("properties") or {}
    out: list[Violation] = []
    for key, value in obj.items():
        if key in _NOT_NEGOTIATED or key in ("apiVersion", "kind"):
            continue
        if key not in properties:
            if not _accepts_unknown(schema):
                out.append(Violation(key, value))
            continue
        out.extend(_walk(value, properties[key], key))
    return out


def _walk(value: Any, schema: Schema, path: str) -> Iterator[Violation]:
    enum = schema.get("enum")
    if enum and value is not None and value not in enum:
        yield Violation(path, value, tuple(enum))
    if schema.get(_PRESERVE) or schema.get("x-kubernetes-int-or-string"):
        return
    if isinstance(value, Mapping):
        properties = schema.get("properties") or {}
        extra = schema.get("additionalProperties")
        for key, child in value.items():
            where = f"{path}.{key}"
            if key in properties:
                yield from _walk(child, properties[key], where)
            elif isinstance(extra, Mapping):
                yield from _walk(child, extra, f"{path}[{key}]")
            elif not (extra is True or _accepts_unknown(schema)):
                yield Violation(where, child)
    elif isinstance(value, list):
        items = schema.get("items")
        if isinstance(items, Mapping):
            for i, child in enumerate(value):
                yield from _walk(child, items, f"{path}[{i}]")


def new_violations(
    obj: Mapping[str, Any], old: Mapping[str, Any] | None, schema: Schema
) -> list[Violation]:
    """Violations of `obj` that `old` did not have already (an update may keep what was there,
    as Kubernetes' ratcheting validation lets unchanged invalid values stand)."""
    found = violations(obj, schema)
    if not found or old is None:
        return found
    before = {(v.field, _key(v.value)) for v in violations(old, schema)}
    return [v for v in found if (v.field, _key(v.value)) not in before]


def _key(value: Any) -> str:
    return repr(value)


def schema_path(field: str) -> str:
    """The JSON path of the schema field behind an object field: `spec.ports[0].name` ->
    `.spec.ports[*].name`."""
    out = []
    i = 0
    while i < len(field):
        ch = field[i]
        if ch == "[":
            end = field.index("]", i)
            inner = field[i + 1 : end]
            out.append("[*]" if inner.isdigit() else ".*")
            i = end + 1
            continue
        out.append(ch)
        i += 1
    return "." + "".join(out)

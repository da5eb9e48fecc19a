"""Validating an incoming object against its kind's schema, and the per-kind entry point.

Upstream decodes built-in kinds into Go structs, so a value of the wrong JSON type is a 400
BadRequest carrying the Go decoder's message (`json: cannot unmarshal string into Go struct field
DeploymentSpec.spec.replicas of type int32`), and only the first one is reported. Kinds served from
a structural schema (CRDs) report every type error and missing required field as 422 causes
instead. Unknown fields are reported separately, for fieldValidation=Strict|Warn, with the paths of
sigs.k8s.io/json's strict decoder (`spec.template.spec.containers[0].imagee`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

from minikcp.apis import (
    custom_resources,
    shapes,
    validation_access,
    validation_apps,
    validation_core,
    validation_platform,
    validation_policy,
    validation_quota,
    validation_workloads,
)
from minikcp.apis.catalog import Catalog, ResourceType
from minikcp.apis.shapes import Shape
from minikcp.machinery.errors import Cause, StatusError, bad_request

KindValidator = Callable[[Mapping[str, Any], Mapping[str, Any] | None], list[Cause]]

_INT_RANGE = {"int32": (-(2**31), 2**31 - 1), "int64": (-(2**63), 2**63 - 1)}
_QUANTITY = re.compile(r"^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$")
_QUANTITY_SUFFIXES = frozenset(
    ["", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei", "n", "u", "m", "k", "M", "G", "T", "P", "E"]
)
_RFC3339 = re.compile(r"^\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$")
_RFC3339_MICRO = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}(Z|[+-]\d{2}:\d{2})$")
_RFC3339_SECONDS = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}")
_B64_ALPHABET = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/")


def _shape(rt: ResourceType, catalog: Catalog | None) -> Shape:
    if rt.custom is not None:
        return custom_resources.compiled(rt).shape  # the CRD's own, whatever the catalog
    return shapes.compiled(catalog or Catalog.builtin(), rt.definition)


# -- built-ins: Go's JSON decoder ------------------------------------------------------------


def _json_type(value: Any) -> str:
    """How Go's decoder names a JSON value in UnmarshalTypeError."""
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, str):
        return "string"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, list):
        return "array"
    return "object"


def _number_text(value: int | float) -> str:
    return str(value) if isinstance(value, int) else repr(value)


class _DecodeError(Exception):
    """The first decode error; its message is what Go's decoder would say."""


def _type_error(value: str, go_type: str, struct: str, stack: list[str]) -> _DecodeError:
    if struct or stack:
        field = ".".join(stack)
        return _DecodeError(
            f"json: cannot unmarshal {value} into Go struct field {struct}.{field} "
            f"of type {go_type}"
        )
    return _DecodeError(f"json: cannot unmarshal {value} into Go value of type {go_type}")


def _base64_error(text: str) -> int | None:
    """Offset Go's base64.StdEncoding reports for `text`, or None when it decodes."""
    quantum = 0  # characters in the current 4-character group
    start = 0
    padding = False
    for i, ch in enumerate(text):
        if ch in "\r\n":
            continue
        if padding and ch != "=":
            return i
        if ch == "=":
            if quantum < 2:
                return i
            padding = True
            quantum += 1
            if quantum == 4:
                quantum = 0
            continue
        if ch not in _B64_ALPHABET:
            return i
        if quantum == 0:
            start = i
        quantum = (quantum + 1) % 4
    if quantum:
        return start
    return None


def _quantity_error(value: Any) -> str | None:
    text = value.strip() if isinstance(value, str) else None
    if isinstance(value, int | float) and not isinstance(value, bool):
        text = _number_text(value)
    m = _QUANTITY.match(text) if text is not None else None
    if m is None:
        return (
            "quantities must match the regular expression "
            "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
        )
    suffix = m.group(2)
    if suffix not in _QUANTITY_SUFFIXES and not re.fullmatch(r"[eE][-+]?[0-9]+", suffix):
        return "unable to parse quantity's suffix"
    return None


def _decode(shape: Shape, value: Any, struct: str, stack: list[str]) -> None:
    if value is None:
        return  # null decodes to the zero value anywhere
    kind = shape.kind
    if kind == shapes.OBJECT:
        if not isinstance(value, dict):
            raise _type_error(_json_type(value), shape.go_type, struct, stack)
        fields = shape.fields
        for key, sub in value.items():
            field = fields.get(key)
            if field is not None:
                stack.append(key)
                _decode(field, sub, shape.struct or struct, stack)
                stack.pop()
    elif kind == shapes.STRING:
        if not isinstance(value, str):
            raise _type_error(_json_type(value), shape.go_type, struct, stack)
    elif kind == shapes.INTEGER:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise _type_error(_json_type(value), shape.go_type, struct, stack)
        low, high = _INT_RANGE[shape.go_type]
        if isinstance(value, float) or not low <= value <= high:
            raise _type_error(f"number {_number_text(value)}", shape.go_type, struct, stack)
    elif kind == shapes.ARRAY:
        if not isinstance(value, list):
            raise _type_error(_json_type(value), shape.go_type, struct, stack)
        item = shape.item
        if item is not None and item.kind != shapes.ANY:
            for element in value:
                _decode(item, element, struct, stack)
    elif kind == shapes.MAP:
        if not isinstance(value, dict):
            raise _type_error(_json_type(value), shape.go_type, struct, stack)
        item = shape.item
        if item is not None and item.kind != shapes.ANY:
            for element in value.values():
                _decode(item, element, struct, stack)
    elif kind == shapes.BOOLEAN:
        if not isinstance(value, bool):
            raise _type_error(_json_type(value), shape.go_type, struct, stack)
    elif kind == shapes.NUMBER:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise _type_error(_json_type(value), shape.go_type, struct, stack)
    else:
        _decode_custom(shape, value, struct, stack)


def _decode_custom(shape: Shape, value: Any, struct: str, stack: list[str]) -> None:
    """Types with their own UnmarshalJSON upstream: errors carry no field context."""
    kind = shape.kind
    if kind == shapes.INT_OR_STRING:
        if isinstance(value, str):
            return
        if isinstance(value, int) and not isinstance(value, bool):
            if -(2**31) <= value < 2**31:
                return
            raise _type_error(f"number {value}", "int32", "", [])
        shown = f"number {value!r}" if isinstance(value, float) else _json_type(value)
        raise _type_error(shown, "int32", "", [])
    if kind == shapes.QUANTITY:
        problem = _quantity_error(value)
        if problem is not None:
            raise _DecodeError(problem)
    elif kind == shapes.TIME:
        if not isinstance(value, str):
            raise _type_error(_json_type(value), "string", "", [])
        if shape.go_type.endswith("MicroTime"):
            _decode_micro_time(value)
        elif not _RFC3339.match(value):
            raise _DecodeError(
                f'parsing time "{value}" as "2006-01-02T15:04:05Z07:00": '
                f'cannot parse "{value}" as "2006"'
            )
    elif kind == shapes.BYTES:
        if not isinstance(value, str):
            raise _type_error(_json_type(value), shape.go_type, struct, stack)
        offset = _base64_error(value)
        if offset is not None:
            raise _DecodeError(f"illegal base64 data at input byte {offset}")


def _decode_micro_time(value: str) -> None:
    """metav1.MicroTime parses RFC3339Micro exactly: six fractional digits, always."""
    if _RFC3339_MICRO.match(value):
        return
    seconds = _RFC3339_SECONDS.match(value)
    rest, element = (value, "2006") if seconds is None else (value[seconds.end() :], ".000000")
    raise _DecodeError(
        f'parsing time "{value}" as "2006-01-02T15:04:05.000000Z07:00": '
        f'cannot parse "{rest}" as "{element}"'
    )


def decode_error(
    rt: ResourceType, obj: Mapping[str, Any], *, catalog: Catalog | None = None
) -> StatusError | None:
    """The 400 BadRequest kube-apiserver answers when `obj` does not decode into rt's Go type."""
    try:
        _decode(_shape(rt, catalog), obj, "", [])
    except _DecodeError as failure:
        return bad_request(
            f'{rt.kind} in version "{rt.version}" cannot be handled as a {rt.kind}: {failure}'
        )
    return None


# -- structural schemas (CRDs): every type error and missing field as a 422 cause ----------


_SCHEMA_TYPE = {
    shapes.STRING: "string",
    shapes.BYTES: "string",
    shapes.TIME: "string",
    shapes.INTEGER: "integer",
    shapes.NUMBER: "number",
    shapes.BOOLEAN: "boolean",
    shapes.ARRAY: "array",
    shapes.MAP: "object",
    shapes.OBJECT: "object",
}


def _value_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "integer" if value.is_integer() else "number"
    if isinstance(value, str):
        return "string"
    return "array" if isinstance(value, list) else "object"


def _structural(shape: Shape, value: Any, path: str, causes: list[Cause]) -> None:
    expected = _SCHEMA_TYPE.get(shape.kind)
    actual = _value_type(value)
    if value is None and shape.nullable:
        return
    if (
        expected is not None
        and actual != expected
        and not (expected == "number" and actual == "integer")
    ):
        message = (
            f'Invalid value: "{actual}": {path} in body must be of type {expected}: "{actual}"'
        )
        causes.append(Cause("FieldValueTypeInvalid", message, path))
        return
    if shape.kind == shapes.OBJECT and isinstance(value, dict):
        for name in shape.required:
            if name not in value:
                causes.append(Cause("FieldValueRequired", "Required value", _join(path, name)))
        for key, sub in value.items():
            field = shape.fields.get(key)
            if field is not None:
                _structural(field, sub, _join(path, key), causes)
    elif shape.kind == shapes.ARRAY and isinstance(value, list) and shape.item is not None:
        for i, element in enumerate(value):
            _structural(shape.item, element, f"{path}[{i}]", causes)
    elif shape.kind == shapes.MAP and isinstance(value, dict) and shape.item is not None:
        for key, element in value.items():
            _structural(shape.item, element, _join(path, key), causes)


def _join(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


def validate(
    rt: ResourceType, obj: Mapping[str, Any], *, catalog: Catalog | None = None
) -> list[Cause]:
    """Schema errors in `obj`.

    Built-in kinds: raises the 400 StatusError of `decode_error` (required fields and semantics are
    `validate_kind`'s job, with upstream's messages). Structural kinds: returns 422 causes for type
    errors and missing required fields.
    """
    if rt.builtin:
        error = decode_error(rt, obj, catalog=catalog)
        if error is not None:
            raise error
        return []
    if rt.custom is not None:
        return custom_resources.validate(rt, obj)
    causes: list[Cause] = []
    shape = _shape(rt, catalog)
    for key, sub in obj.items():
        if key in ("apiVersion", "kind", "metadata"):
            continue
        field = shape.fields.get(key)
        if field is not None:
            _structural(field, sub, key, causes)
    return causes


# -- unknown fields --------------------------------------------------------------------------


def _unknown(shape: Shape, value: Any, path: str, out: list[str]) -> None:
    if len(out) >= 100 or (shape.preserve_unknown and not shape.prune_known):
        return  # upstream stops collecting at 100
    kind = shape.kind
    if kind == shapes.OBJECT and isinstance(value, dict):
        fields = shape.fields
        for key, sub in value.items():
            field = fields.get(key)
            sub_path = f"{path}.{key}" if path else key
            if field is None:
                if not shape.preserve_unknown and sub_path not in out:
                    out.append(sub_path)
            elif field.kind in (shapes.OBJECT, shapes.ARRAY, shapes.MAP):
                _unknown(field, sub, sub_path, out)
    elif kind == shapes.ARRAY and isinstance(value, list) and shape.item is not None:
        for i, element in enumerate(value):
            _unknown(shape.item, element, f"{path}[{i}]", out)
    elif kind == shapes.MAP and isinstance(value, dict) and shape.item is not None:
        for key, element in value.items():
            _unknown(shape.item, element, f"{path}.{key}" if path else key, out)


def unknown_fields(
    rt: ResourceType, obj: Mapping[str, Any], *, catalog: Catalog | None = None
) -> list[str]:
    """Paths of fields the schema does not know, in document order (e.g. `spec.foo`)."""
    out: list[str] = []
    _unknown(_shape(rt, catalog), obj, "", out)
    return out


_CONTAINERS = (shapes.OBJECT, shapes.ARRAY, shapes.MAP)


def _decode_unknown(
    shape: Shape, value: Any, struct: str, stack: list[str], path: str, out: list[str] | None
) -> None:
    """`_decode` and `_unknown` in one walk: raises the decode error, collects into `out`
    (None: nothing to collect below here) exactly the paths `_unknown` would."""
    if out is not None and (len(out) >= 100 or shape.preserve_unknown):
        out = None
    kind = shape.kind
    if out is None or value is None or kind not in _CONTAINERS:
        _decode(shape, value, struct, stack)
        return
    if kind == shapes.OBJECT:
        if not isinstance(value, dict):
            raise _type_error(_json_type(value), shape.go_type, struct, stack)
        fields = shape.fields
        inner = shape.struct or struct
        for key, sub in value.items():
            field = fields.get(key)
            if field is None:
                sub_path = f"{path}.{key}" if path else key
                if sub_path not in out:
                    out.append(sub_path)
                continue
            stack.append(key)
            if field.kind in _CONTAINERS:
                _decode_unknown(field, sub, inner, stack, f"{path}.{key}" if path else key, out)
            else:
                _decode(field, sub, inner, stack)
            stack.pop()
        return
    item = shape.item
    if kind == shapes.ARRAY:
        if not isinstance(value, list):
            raise _type_error(_json_type(value), shape.go_type, struct, stack)
        if item is not None and item.kind != shapes.ANY:
            for i, element in enumerate(value):
                _decode_unknown(item, element, struct, stack, f"{path}[{i}]", out)
        return
    if not isinstance(value, dict):
        raise _type_error(_json_type(value), shape.go_type, struct, stack)
    if item is not None and item.kind != shapes.ANY:
        for key, element in value.items():
            _decode_unknown(item, element, struct, stack, f"{path}.{key}" if path else key, out)


def _decode_touched(
    shape: Shape,
    value: Any,
    touched: Mapping[str, Any],
    struct: str,
    stack: list[str],
    path: str,
    out: list[str],
) -> None:
    """`_decode_unknown` over the fields of a struct that `touched` (a merge patch) names; the
    others hold what was stored, which passed these checks when it was written."""
    if shape.kind != shapes.OBJECT or type(value) is not dict or shape.preserve_unknown:
        _decode_unknown(shape, value, struct, stack, path, out)
        return
    if len(out) >= 100:
        return
    fields = shape.fields
    inner = shape.struct or struct
    for key, sub in value.items():
        if key not in touched:
            continue
        field = fields.get(key)
        sub_path = f"{path}.{key}" if path else key
        if field is None:
            if sub_path not in out:
                out.append(sub_path)
            continue
        stack.append(key)
        below = touched[key]
        if type(below) is dict and field.kind == shapes.OBJECT:
            _decode_touched(field, sub, below, inner, stack, sub_path, out)
        elif field.kind in _CONTAINERS:
            _decode_unknown(field, sub, inner, stack, sub_path, out)
        else:
            _decode(field, sub, inner, stack)
        stack.pop()


def checked_unknown_fields(
    rt: ResourceType,
    obj: Mapping[str, Any],
    *,
    catalog: Catalog | None = None,
    touched: Mapping[str, Any] | None = None,
) -> list[str]:
    """`validate` then `unknown_fields`, in one walk for built-in kinds.

    `touched` is the merge patch that made `obj` out of a stored object: the struct fields it
    does not name are passed over (built-in kinds only; custom resources are checked whole).
    """
    if not rt.builtin:
        # Schema errors of structural kinds are 422s, reported after defaulting (validate_kind).
        return unknown_fields(rt, obj, catalog=catalog)
    out: list[str] = []
    try:
        if touched is None:
            _decode_unknown(_shape(rt, catalog), obj, "", [], "", out)
        else:
            _decode_touched(_shape(rt, catalog), obj, touched, "", [], "", out)
    except _DecodeError as failure:
        raise bad_request(
            f'{rt.kind} in version "{rt.version}" cannot be handled as a {rt.kind}: {failure}'
        ) from None
    return out


def _prune(shape: Shape, value: Any) -> None:
    if shape.preserve_unknown and not shape.prune_known:
        return
    kind = shape.kind
    if kind == shapes.OBJECT and isinstance(value, dict):
        fields = shape.fields
        if not shape.preserve_unknown:
            for key in [k for k in value if k not in fields]:
                del value[key]
        for key, sub in value.items():
            field = fields.get(key)
            if field is not None and field.kind in (shapes.OBJECT, shapes.ARRAY, shapes.MAP):
                _prune(field, sub)
    elif kind in (shapes.ARRAY, shapes.MAP) and shape.item is not None:
        elements = (
            value
            if isinstance(value, list)
            else (value.values() if isinstance(value, dict) else ())
        )
        for element in elements:
            _prune(shape.item, element)


def prune_unknown_fields(
    rt: ResourceType, obj: dict[str, Any], *, catalog: Catalog | None = None
) -> None:
    """Drop the fields the schema does not know, in place, as decoding into Go types does."""
    _prune(_shape(rt, catalog), obj)


def strict_decoding_error(paths: list[str]) -> StatusError:
    """The 400 for fieldValidation=Strict: `strict decoding error: unknown field "spec.foo"`."""
    return bad_request("strict decoding error: " + ", ".join(unknown_field_warnings(paths)))


def unknown_field_warnings(paths: list[str]) -> list[str]:
    """The texts upstream puts in Warning headers for fieldValidation=Warn."""
    return [f'unknown field "{p}"' for p in paths]


# -- per-kind semantics ------------------------------------------------------------------------

_KIND_VALIDATORS: dict[tuple[str, str], KindValidator] = {
    **validation_core.VALIDATORS,
    **validation_apps.VALIDATORS,
    **validation_access.VALIDATORS,
    **validation_platform.VALIDATORS,
    **validation_quota.VALIDATORS,
    **validation_workloads.VALIDATORS,
    **validation_policy.VALIDATORS,
}


def has_kind_validator(rt: ResourceType) -> bool:
    """Whether rt's kind has upstream's hand-written validation (which checks ObjectMeta too)."""
    return rt.custom is None and (rt.group, rt.kind) in _KIND_VALIDATORS


def validate_kind(
    rt: ResourceType, obj: Mapping[str, Any], old: Mapping[str, Any] | None = None
) -> list[Cause]:
    """Upstream's hand-written validation for rt's kind (422 causes); [] for unchecked kinds.

    Call it after `apply_defaults`, as kube-apiserver validates defaulted objects. `old` is the
    stored object on update (immutable fields, metadata update rules).
    """
    if rt.custom is not None:
        return custom_resources.validate(rt, obj)
    fn = _KIND_VALIDATORS.get((rt.group, rt.kind))
    return fn(obj, old) if fn is not None else []

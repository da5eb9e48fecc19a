"""Server-side strategic merge patch: applies a patch to an object, guided by its kind's schema.

A port of the apply path of k8s.io/apimachinery/pkg/util/strategicpatch/patch.go
(`StrategicMergeMapPatch` -> `mergeMap`), as kube-apiserver runs it for
`application/strategic-merge-patch+json`. Patch strategies and merge keys come from the schema's
`x-kubernetes-patch-strategy` / `x-kubernetes-patch-merge-key`; where the schema knows nothing,
maps merge as in JSON merge patch and lists are replaced. Lists live in strategic_merge_lists.

Upstream decodes the merged map into the kind's Go type, which silently drops whatever directive
keys and nulls are left over; here that step is emulated where patch content lands in the result
(directives stripped, nulls dropped from maps), and a map or list where the schema wants the other
(or a scalar) fails as the typed decode would, with 422.

Where upstream's result depends on Go itself, this picks one answer: patch keys are visited in
the document's order (Go's map order is random; for small maps mostly a rotation of it); a null
or empty live list under `$setElementOrder` counts as absent instead of failing; inputs on which
Go panics (unhashable `$retainKeys` items, ...) get an error or a plain answer.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import orjson

from minikcp.machinery import strategic_merge_errors as smp_errors
from minikcp.machinery import strategic_merge_lists as smp_lists
from minikcp.machinery.schemas import SchemaNode

DIRECTIVE = smp_lists.DIRECTIVE
RETAIN_KEYS = "$retainKeys"
SET_ELEMENT_ORDER_PREFIX = "$setElementOrder"
DELETE_FROM_PRIMITIVE_LIST_PREFIX = "$deleteFromPrimitiveList"
_RETAIN_KEYS_STRATEGY = "retainKeys"


def apply_strategic_merge(
    original: Mapping[str, Any], patch: Mapping[str, Any], schema: SchemaNode
) -> dict[str, Any]:
    """The object `original` becomes under `patch`; neither input is modified.

    The result shares nothing with the inputs. Raises StatusError as kube-apiserver answers the
    same patch (see strategic_merge_errors).
    """
    working = _copy(original)
    try:
        return _merge_map(working, patch, schema)
    except _UndecodableError as exc:
        raise smp_errors.undecodable(dict(patch), exc.detail) from None


def is_directive_key(key: str) -> bool:
    """Whether a map key is a patch directive (never stored)."""
    return (
        key in (DIRECTIVE, RETAIN_KEYS)
        or key.startswith(SET_ELEMENT_ORDER_PREFIX)
        or key.startswith(DELETE_FROM_PRIMITIVE_LIST_PREFIX)
    )


class _UndecodableError(Exception):
    """A value of the wrong JSON type for its field; reported against the whole patch."""

    def __init__(self, detail: str) -> None:
        super().__init__(detail)
        self.detail = detail


def _copy(original: Mapping[str, Any]) -> dict[str, Any]:
    """A deep copy of the live object to work on (a JSON round trip is the fastest deep copy)."""
    try:
        copied: dict[str, Any] = orjson.loads(orjson.dumps(original))
    except TypeError:  # not plain JSON data (e.g. an int beyond 64 bits)
        copied = _deep_copy(dict(original))
    return copied


def _deep_copy(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _deep_copy(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_deep_copy(v) for v in value]
    return value


def _strip(value: Any) -> Any:
    """A copy of patch content as the typed decode would keep it: no directive keys, no nulls in
    maps (maps carrying `$patch` stay, minus the key)."""
    if isinstance(value, dict):
        return {
            k: _strip(v)
            for k, v in value.items()
            if v is not None and not (k[:1] == "$" and is_directive_key(k))
        }
    if isinstance(value, list):
        return [_strip(v) for v in value]
    return value


def _fresh(value: Any) -> tuple[Any, bool]:
    """Patch content for a field the live object lacks (`removeDirectives` after
    `discardNullValuesFromPatch`): maps carrying `$patch` vanish. Returns (value, keep)."""
    if isinstance(value, dict):
        if DIRECTIVE in value:
            return None, False
        out: dict[str, Any] = {}
        for k, v in value.items():
            if v is None or (k[:1] == "$" and is_directive_key(k)):
                continue
            kept, keep = _fresh(v)
            if keep:
                out[k] = kept
        return out, True
    if isinstance(value, list):
        items: list[Any] = []
        for v in value:
            kept, keep = _fresh(v)
            if keep:
                items.append(kept)
        return items, True
    return value, True


def _shape_mismatch(value: Any, schema: SchemaNode | None) -> str | None:
    """The unstructured converter's complaint about `value` in a field of `schema`, if any."""
    if schema is None or value is None or schema.preserves_unknown_fields or schema.int_or_string:
        return None
    types = schema.types
    if "array" in types:
        if not isinstance(value, list):
            return f"cannot restore slice from {smp_errors.go_kind(value)}"
        items = schema.items()
        for item in value:
            detail = _shape_mismatch(item, items)
            if detail:
                return detail
        return None
    if "object" not in types:
        return None
    if schema.properties:
        if not isinstance(value, dict):
            return f"cannot restore struct from: {smp_errors.go_kind(value)}"
    elif schema.values() is not None:
        if not isinstance(value, dict):
            return f"cannot restore map from {smp_errors.go_kind(value)}"
    else:
        return None  # free-form object (RawExtension and the like)
    for key, field_value in value.items():
        detail = _shape_mismatch(field_value, schema.field(key))
        if detail:
            return detail
    return None


def _check_shape(value: Any, schema: SchemaNode | None) -> None:
    detail = _shape_mismatch(value, schema)
    if detail:
        raise _UndecodableError(detail)


def _place(value: Any, schema: SchemaNode | None) -> Any:
    """Patch content stored as given (replaced lists and maps, appended list items)."""
    stored = _strip(value)
    _check_shape(stored, schema)
    return stored


def _field(schema: SchemaNode | None, key: str) -> SchemaNode | None:
    return schema.field(key) if schema is not None else None


def _strategy(schema: SchemaNode | None) -> str:
    """The field's strategy besides retainKeys (`extractRetainKeysPatchStrategy`)."""
    strategies = schema.patch_strategies if schema is not None else ()
    if len(strategies) == 1:
        return "" if strategies[0] == _RETAIN_KEYS_STRATEGY else strategies[0]
    if len(strategies) == 2 and _RETAIN_KEYS_STRATEGY in strategies:
        return strategies[1] if strategies[0] == _RETAIN_KEYS_STRATEGY else strategies[0]
    if strategies:
        rendered = smp_errors.go_value(list(strategies))
        raise smp_errors.unhandled(f"unexpected patch strategy: {rendered}")
    return ""


def _merge_key(schema: SchemaNode | None) -> str:
    return (schema.patch_merge_key or "") if schema is not None else ""


def _directive_target(key: str, prefix: str) -> str:
    """The field a `$prefix/field` directive key names."""
    head, slash, field = key.partition("/")
    if not slash or head != prefix:
        if prefix == SET_ELEMENT_ORDER_PREFIX:
            raise smp_errors.bad_format(smp_errors.BAD_SET_ELEMENT_ORDER)
        raise smp_errors.bad_format(smp_errors.BAD_PRIMITIVE_LIST)
    return field


def _merge_map(
    original: dict[str, Any], patch: Mapping[str, Any], schema: SchemaNode | None
) -> dict[str, Any]:
    """`mergeMap`: merges `patch` into `original` (the working copy, modified and returned)."""
    if DIRECTIVE in patch:
        directive = patch[DIRECTIVE]
        if directive == smp_lists.REPLACE:
            replaced: dict[str, Any] = _place(
                {k: v for k, v in patch.items() if k != DIRECTIVE}, schema
            )
            return replaced
        if directive == smp_lists.DELETE:
            return {}
        raise smp_errors.unknown_patch_type(directive, dict(patch))
    if RETAIN_KEYS in patch:
        _retain_keys(original, patch)
    ordered = _apply_element_orders(original, patch, schema)
    # Upstream walks the keys in Go's map order, which for the small maps of a patch is mostly a
    # rotation of the document's order; the document's order is the deterministic choice.
    for key, value in patch.items():
        if key in ordered:
            continue
        if key[:1] == "$":
            if key.startswith(DELETE_FROM_PRIMITIVE_LIST_PREFIX):
                target = _directive_target(key, DELETE_FROM_PRIMITIVE_LIST_PREFIX)
                _merge_value(original, target, value, schema, delete_list=True)
                continue
            if key == RETAIN_KEYS or key.startswith(SET_ELEMENT_ORDER_PREFIX):
                continue
        _merge_value(original, key, value, schema, delete_list=False)
    return original


def _merge_value(
    original: dict[str, Any],
    key: str,
    value: Any,
    schema: SchemaNode | None,
    *,
    delete_list: bool,
) -> None:
    """One key of `mergeMap`'s loop; `delete_list` for a `$deleteFromPrimitiveList/key` value."""
    if value is None:
        original.pop(key, None)
        return
    current = original.get(key)
    # Go compares the values' types exactly (int64 is not float64 is not string).
    if key not in original or type(current) is not type(value):
        if not delete_list:
            fresh, keep = _fresh(value)
            if keep:
                _check_shape(fresh, _field(schema, key))
                original[key] = fresh
            else:
                original.pop(key, None)
        return
    node = _field(schema, key)
    if isinstance(current, dict) and isinstance(value, dict):
        if _strategy(node) == smp_lists.REPLACE:
            original[key] = _place(value, node)
        else:
            original[key] = _merge_map(current, value, node)
    elif isinstance(current, list) and isinstance(value, list):
        original[key] = _merge_list_field(current, value, node, delete_list=delete_list).items
    else:
        original[key] = value  # upstream assigns even a same-typed scalar "deletion list"


def _merge_list_field(
    current: list[Any], value: list[Any], schema: SchemaNode | None, *, delete_list: bool
) -> smp_lists.MergedList:
    """`mergeSliceHandler`: merge-strategy lists (and deletion lists) merge, others are replaced."""
    if _strategy(schema) == smp_lists.MERGE or delete_list:
        return smp_lists.merge_list(
            current,
            value,
            schema=schema.items() if schema is not None else None,
            merge_key=_merge_key(schema),
            delete_list=delete_list,
            merge_item=_merge_map,
            place=_place,
        )
    return smp_lists.MergedList(_place(value, schema), current)


def _retain_keys(original: dict[str, Any], patch: Mapping[str, Any]) -> None:
    """`applyRetainKeysDirective`: drop live keys not listed; the patch may only set listed keys."""
    listed = patch[RETAIN_KEYS]
    if not isinstance(listed, list):
        raise smp_errors.bad_format(smp_errors.BAD_RETAIN_KEYS)
    if any(isinstance(k, dict | list) for k in listed):
        raise smp_errors.bad_format(smp_errors.BAD_RETAIN_KEYS)  # upstream panics hashing these
    retained = {k for k in listed if isinstance(k, str)}
    for key, value in patch.items():
        if (
            value is None
            or key == RETAIN_KEYS
            or key.startswith(DELETE_FROM_PRIMITIVE_LIST_PREFIX)
            or key.startswith(SET_ELEMENT_ORDER_PREFIX)
        ):
            continue
        if key not in retained:
            raise smp_errors.bad_format(smp_errors.BAD_RETAIN_KEYS)
    for key in [k for k in original if k not in retained]:
        del original[key]


def _apply_element_orders(
    original: dict[str, Any], patch: Mapping[str, Any], schema: SchemaNode | None
) -> set[str]:
    """`mergePatchIntoOriginal`: merges each list named by a `$setElementOrder/field` directive
    and orders it; returns the fields done, which the main loop then skips."""
    done: set[str] = set()
    for key, order in patch.items():
        if not key.startswith(SET_ELEMENT_ORDER_PREFIX):
            continue
        if not isinstance(order, list):
            raise smp_errors.bad_arg_type(smp_errors.SLICE_TYPE, order)
        field = _directive_target(key, SET_ELEMENT_ORDER_PREFIX)
        # A null live value counts as absent: typed live objects never hold one.
        current = original.get(field)
        if current is not None and not isinstance(current, list):
            raise smp_errors.bad_arg_type(smp_errors.SLICE_TYPE, current)
        in_patch = field in patch
        patch_list = patch.get(field)
        if in_patch and not isinstance(patch_list, list):
            raise smp_errors.bad_arg_type(smp_errors.SLICE_TYPE, patch_list)
        node = _field(schema, field)
        _strategy(node)  # upstream rejects a malformed strategy before anything else
        merge_key = _merge_key(node)
        smp_lists.validate_order_list(patch_list or [], order, merge_key)
        live = current or []
        if current is not None and patch_list is not None:
            merged, live = _merge_list_field(current, patch_list, node, delete_list=False)
        elif current is not None:
            merged = current
        elif patch_list is not None:
            merged = _fresh(patch_list)[0]
            _check_shape(merged, node)
        else:
            continue
        original[field] = smp_lists.order_list(
            merged, order, original=live, patch=patch_list or [], merge_key=merge_key
        )
        done.add(field)
    return done

"""Schema-aware walks over JSON objects for server-side apply: field sets, merge, compare, removal.

A port of structured-merge-diff's `typed` package, driven by `apply_shapes`. A value whose type
does not fit its shape is treated as an opaque leaf. Values are plain JSON data; `ABSENT` marks a
missing field, which differs from JSON null.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Final

import orjson

from minikcp.machinery.apply_shapes import ListShape, MapShape, Shape, item_element, item_elements
from minikcp.machinery.field_sets import FieldSet, Path, PathElement


class _Absent:
    __slots__ = ()

    def __repr__(self) -> str:
        return "ABSENT"


ABSENT: Final = _Absent()


# -- field sets ---------------------------------------------------------------------------------


def field_set_of(value: Any, shape: Shape) -> FieldSet:
    """The fields a value sets (upstream `ToFieldSet`): leaves, map keys, list items."""
    found, _ = _collect(value, shape)
    return found if found is not None else FieldSet()


def _collect(value: Any, shape: Shape) -> tuple[FieldSet | None, bool]:
    """(the owned paths below this position, whether the position itself is a leaf)."""
    if type(shape) is MapShape:
        if value is None:
            return None, False
        if type(value) is not dict or shape.atomic:
            return None, True
        node: FieldSet | None = None
        for key, child in value.items():
            below, leaf = _collect(child, shape.field(key))
            member = (
                leaf
                or child is None
                or (type(child) is dict and not child)
                or key not in shape.named
            )
            if member or below is not None:
                if node is None:
                    node = FieldSet()
                element = "f:" + key
                if member:
                    node.members.add(element)
                if below is not None:
                    node.children[element] = below
        return node, False
    if type(shape) is ListShape:
        if value is None:
            return None, False
        if type(value) is not list or shape.atomic:
            return None, True
        elements = item_elements(value, shape)
        if elements is None:
            return None, True
        if not elements:
            return None, False
        seen: set[PathElement] = set()
        duplicated: set[PathElement] = set()
        for element in elements:
            (duplicated if element in seen else seen).add(element)
        items = FieldSet(seen)
        for element, item in zip(elements, value, strict=True):
            if element not in duplicated:
                below, _ = _collect(item, shape.element)
                if below is not None:
                    items.children[element] = below
        return items, False
    return None, True


def with_named_fields(fields: FieldSet, shape: Shape | None) -> FieldSet:
    """Adds the struct fields on the way to each path (upstream `EnsureNamedFieldsAreMembers`)."""
    if not fields.children or shape is None:
        return fields
    members = set(fields.members)
    children = {}
    for element, below in fields.children.items():
        child: Shape | None = None
        if type(shape) is MapShape and element[0] == "f":
            name = element[2:]
            if name in shape.named:
                members.add(element)
            child = shape.field(name)
        elif type(shape) is ListShape and element[0] == "k":
            child = shape.element
        children[element] = with_named_fields(below, child)
    return FieldSet(members, children)


# -- merge (apply's "keep the applied value" rule) ---------------------------------------------


def _mismatch(value: Any, kind: type) -> bool:
    return value is not ABSENT and value is not None and type(value) is not kind


def merge(lhs: Any, rhs: Any, shape: Shape) -> Any:
    """`rhs` (the applied configuration) merged into `lhs` (the live object)."""
    if rhs is ABSENT:
        return lhs
    if lhs is ABSENT:
        return rhs
    if type(shape) is MapShape:
        if shape.atomic or _mismatch(lhs, dict) or _mismatch(rhs, dict):
            return rhs if rhs is not ABSENT else lhs
        left = lhs if type(lhs) is dict else None
        right = rhs if type(rhs) is dict else None
        if not left and not right:
            return rhs if rhs is not ABSENT else lhs
        out = {}
        if left:
            for key, item in left.items():
                other = right.get(key, ABSENT) if right else ABSENT
                out[key] = merge(item, other, shape.field(key))
        if right:
            for key, item in right.items():
                if not left or key not in left:
                    out[key] = merge(ABSENT, item, shape.field(key))
        return out
    if type(shape) is ListShape:
        if shape.atomic or _mismatch(lhs, list) or _mismatch(rhs, list):
            return rhs if rhs is not ABSENT else lhs
        left_items = lhs if type(lhs) is list else []
        right_items = rhs if type(rhs) is list else []
        if not left_items and not right_items:
            return rhs if rhs is not ABSENT else lhs
        merged = _merge_items(left_items, right_items, shape)
        if merged is None:
            return rhs if rhs is not ABSENT else lhs
        return merged
    return rhs if rhs is not ABSENT else lhs


def _merge_items(lhs: list[Any], rhs: list[Any], shape: ListShape) -> list[Any] | None:
    """Upstream's list merge order: live items keep their places, shared ones follow `rhs`."""
    rhs_elements = item_elements(rhs, shape)
    lhs_elements = item_elements(lhs, shape)
    if rhs_elements is None or lhs_elements is None or len(set(rhs_elements)) < len(rhs):
        return None
    observed_rhs = dict(zip(rhs_elements, rhs, strict=True))
    observed_lhs: dict[PathElement, Any] = {}
    for element, item in zip(lhs_elements, lhs, strict=True):
        # Duplicated live items are not merged with the applied one: they become null.
        observed_lhs[element] = None if element in observed_lhs else item
    shared = iter([e for e in rhs_elements if e in observed_lhs])
    next_shared = next(shared, None)
    merged_rhs: set[PathElement] = set()
    out: list[Any] = []
    element_shape = shape.element
    li = ri = 0
    while li < len(lhs_elements) or ri < len(rhs_elements):
        if li < len(lhs_elements) and ri < len(rhs_elements):
            element = lhs_elements[li]
            if element == rhs_elements[ri]:
                merged_rhs.add(element)
                out.append(merge(observed_lhs[element], observed_rhs[element], element_shape))
                li += 1
                ri += 1
                next_shared = next(shared, None)
                continue
            if element in observed_rhs and next_shared is not None and next_shared != element:
                li += 1  # a shared item, but not the one due in this round
                continue
        if li < len(lhs_elements):
            element = lhs_elements[li]
            if element not in observed_rhs:
                out.append(merge(lhs[li], ABSENT, element_shape))
                li += 1
                continue
            if element in merged_rhs:
                li += 1
        if ri < len(rhs_elements):
            element = rhs_elements[ri]
            merged_rhs.add(element)
            out.append(
                merge(observed_lhs.get(element, ABSENT), observed_rhs[element], element_shape)
            )
            ri += 1
            if next_shared is not None and next_shared == element:
                next_shared = next(shared, None)
    return out


# -- compare ------------------------------------------------------------------------------------


class Comparison:
    """The paths `rhs` added, modified and removed relative to `lhs`."""

    __slots__ = ("added", "modified", "removed")

    def __init__(self, added: FieldSet, modified: FieldSet, removed: FieldSet) -> None:
        self.added = added
        self.modified = modified
        self.removed = removed

    def excluding(self, ignored: FieldSet) -> Comparison:
        return Comparison(
            self.added.recursive_difference(ignored),
            self.modified.recursive_difference(ignored),
            self.removed.recursive_difference(ignored),
        )

    def is_same(self) -> bool:
        return not (self.added or self.modified or self.removed)


def compare(lhs: Any, rhs: Any, shape: Shape, *, shortcut: bool = True) -> Comparison:
    """What `rhs` changed relative to `lhs`. Against an empty object (a create) everything is
    added: `shortcut` builds that set in one walk of `rhs` (the same set as the long way, which
    the tests compare)."""
    creating = type(lhs) is dict and not lhs and type(rhs) is dict
    if shortcut and creating and type(shape) is MapShape and not shape.atomic:
        added, _ = _added_fields(rhs, shape, implicit=True)
        return Comparison(added or FieldSet(), FieldSet(), FieldSet())
    out = Comparison(FieldSet(), FieldSet(), FieldSet())
    _compare(lhs, rhs, shape, (), out, implicit=True)
    return out


def _added_fields(value: Any, shape: Shape, *, implicit: bool) -> tuple[FieldSet | None, bool]:
    """`_compare(ABSENT, value, ...)` as a set: (the added paths below this position, whether
    the position itself is added)."""
    if type(shape) is MapShape:
        if shape.atomic or type(value) is not dict or not value:
            return None, True
        node: FieldSet | None = None
        for key, item in value.items():
            below, member = _added_fields(item, shape.field(key), implicit=shape.implicit(key))
            if member or below is not None:
                if node is None:
                    node = FieldSet()
                element = "f:" + key
                if member:
                    node.members.add(element)
                if below is not None:
                    node.children[element] = below
        return node, not implicit
    if type(shape) is ListShape:
        if shape.atomic or type(value) is not list or not value:
            return None, True
        elements = item_elements(value, shape)
        if elements is None:
            return None, True
        grouped: dict[PathElement, list[Any]] = {}
        for element, item in zip(elements, value, strict=True):
            grouped.setdefault(element, []).append(item)
        items = FieldSet()
        element_shape = shape.element
        for element, found in grouped.items():
            if len(found) == 1:
                below, member = _added_fields(found[0], element_shape, implicit=False)
            else:
                below, member = None, True  # duplicated items are one atomic value
            if member:
                items.members.add(element)
            if below is not None:
                items.children[element] = below
        return (items if items.members or items.children else None), not implicit
    return None, True


def _compare_leaf(lhs: Any, rhs: Any, path: Path, out: Comparison) -> None:
    if lhs is ABSENT:
        out.added.insert(path)
    elif rhs is ABSENT:
        out.removed.insert(path)
    elif not equal(lhs, rhs):
        out.modified.insert(path)


def _identical(lhs: Any, rhs: Any) -> bool:
    """Equal containers, told apart from true/1 and 1/1.0 (Python's == is not): a C-speed skip."""
    kind = type(lhs)
    if kind is not type(rhs) or (kind is not dict and kind is not list):
        return False
    return bool(lhs == rhs) and orjson.dumps(lhs) == orjson.dumps(rhs)


def _compare(
    lhs: Any, rhs: Any, shape: Shape, path: Path, out: Comparison, *, implicit: bool
) -> None:
    if _identical(lhs, rhs):
        return
    if type(shape) is MapShape:
        if shape.atomic or _mismatch(lhs, dict) or _mismatch(rhs, dict):
            _compare_leaf(lhs, rhs, path, out)
            return
        left = lhs if type(lhs) is dict else None
        right = rhs if type(rhs) is dict else None
        if not left and not right:
            _compare_leaf(lhs, rhs, path, out)
            return
        for key, item in (left or {}).items():
            other = right.get(key, ABSENT) if right else ABSENT
            if type(item) is str and type(other) is str and item == other:
                continue  # equal strings record nothing, whatever the shape
            _compare(
                item, other, shape.field(key), (*path, "f:" + key), out,
                implicit=shape.implicit(key),
            )  # fmt: skip
        for key, item in (right or {}).items():
            if not left or key not in left:
                _compare(
                    ABSENT, item, shape.field(key), (*path, "f:" + key), out,
                    implicit=shape.implicit(key),
                )  # fmt: skip
    elif type(shape) is ListShape:
        if shape.atomic or _mismatch(lhs, list) or _mismatch(rhs, list):
            _compare_leaf(lhs, rhs, path, out)
            return
        left_items = lhs if type(lhs) is list else []
        right_items = rhs if type(rhs) is list else []
        if (not left_items and not right_items) or not _compare_items(
            left_items, right_items, shape, path, out
        ):
            _compare_leaf(lhs, rhs, path, out)
            return
    else:
        _compare_leaf(lhs, rhs, path, out)
        return
    if not implicit:
        if lhs is ABSENT:
            out.added.insert(path)
        elif rhs is ABSENT:
            out.removed.insert(path)


def _compare_items(
    lhs: list[Any], rhs: list[Any], shape: ListShape, path: Path, out: Comparison
) -> bool:
    lhs_elements = item_elements(lhs, shape)
    rhs_elements = item_elements(rhs, shape)
    if lhs_elements is None or rhs_elements is None:
        return False
    left: dict[PathElement, list[Any]] = {}
    right: dict[PathElement, list[Any]] = {}
    for element, item in zip(lhs_elements, lhs, strict=True):
        left.setdefault(element, []).append(item)
    for element, item in zip(rhs_elements, rhs, strict=True):
        right.setdefault(element, []).append(item)
    element_shape = shape.element
    for element in [*left, *(e for e in right if e not in left)]:
        before, after = left.get(element, []), right.get(element, [])
        at = (*path, element)
        if len(before) <= 1 and len(after) <= 1:
            _compare(
                before[0] if before else ABSENT, after[0] if after else ABSENT,
                element_shape, at, out, implicit=False,
            )  # fmt: skip
        elif len(before) >= 2 and len(after) >= 2:
            # Duplicated items are compared as one atomic value.
            if len(before) != len(after) or not all(map(equal, before, after)):
                out.modified.insert(at)
        elif len(before) >= 2:
            if after:
                _compare(ABSENT, after[0], element_shape, at, out, implicit=False)
            out.removed.insert(at)
        else:
            if before:
                _compare(before[0], ABSENT, element_shape, at, out, implicit=False)
            out.added.insert(at)
    return True


def equal(lhs: Any, rhs: Any) -> bool:
    """JSON equality as upstream's `value.Equals`: 1 == 1.0, but true != 1."""
    if lhs is rhs:
        return True
    left, right = type(lhs), type(rhs)
    if left is bool or right is bool:
        return left is right and lhs == rhs
    if left is dict:
        return (
            right is dict
            and len(lhs) == len(rhs)
            and all(k in rhs and equal(v, rhs[k]) for k, v in lhs.items())
        )
    if left is list:
        return right is list and len(lhs) == len(rhs) and all(map(equal, lhs, rhs))
    if right is dict or right is list:
        return False
    return bool(lhs == rhs)


# -- removal and pruning ------------------------------------------------------------------------


def remove_items(value: Any, fields: FieldSet, shape: Shape) -> Any:
    """`value` without the paths in `fields` and their subtrees; emptied containers become null."""
    if type(shape) is MapShape:
        if type(value) is not dict or not value or shape.atomic:
            return None
        out = {}
        for key, item in value.items():
            element = "f:" + key
            if element in fields.members:
                continue
            below = fields.children.get(element)
            out[key] = remove_items(item, below, shape.field(key)) if below else item
        return out or None
    if type(shape) is ListShape:
        if type(value) is not list or not value or shape.atomic:
            return None
        items = []
        for item in value:
            element, _ = item_element(item, shape)
            if element is not None and element in fields.members:
                continue
            below = fields.children.get(element) if element is not None else None
            items.append(remove_items(item, below, shape.element) if below else item)
        return items or None
    return value


def prune(
    merged: Any, last: FieldSet, applied: FieldSet, owned: Iterable[FieldSet], shape: Shape
) -> Any:
    """Drops what an applier applied last time (`last`) but not now, unless someone owns it.

    Upstream's three steps: remove everything last applied, add back what anyone still owns,
    then remove only what was both dropped and last applied.
    """
    if last.difference(applied).is_empty():
        # Nothing was dropped. Sets built from objects own every list item and map key above
        # their leaves, so the three steps would give `merged` back; skip the walks.
        return merged
    last_named = with_named_fields(last, shape)
    owned_named = FieldSet()
    for fields in owned:
        owned_named = owned_named.union(fields)
    owned_named = with_named_fields(owned_named, shape)
    merged_named = with_named_fields(field_set_of(merged, shape), shape)
    pruned = remove_items(merged, last_named, shape)
    pruned_named = with_named_fields(field_set_of(pruned, shape), shape)
    owned_back = remove_items(
        merged, merged_named.difference(pruned_named.union(owned_named)), shape
    )
    owned_back_named = with_named_fields(field_set_of(owned_back, shape), shape)
    return remove_items(
        merged, merged_named.difference(owned_back_named).intersection(last_named), shape
    )


def plain(value: Any) -> Any:
    """A fresh copy as plain dicts and lists, with null map values dropped as typed objects do."""
    kind = type(value)
    if kind is str or kind is int or kind is bool or value is None:
        return value
    if kind is dict or isinstance(value, Mapping):
        return {k: plain(v) for k, v in value.items() if v is not None}
    if kind is list or isinstance(value, list | tuple):
        return [plain(v) for v in value]
    return value


def copy(value: Any) -> Any:
    """A fresh copy as plain dicts and lists, nulls kept."""
    kind = type(value)
    if kind is str or kind is int or kind is bool or value is None:
        return value
    if kind is dict or isinstance(value, Mapping):
        return {k: copy(v) for k, v in value.items()}
    if kind is list or isinstance(value, list | tuple):
        return [copy(v) for v in value]
    return value

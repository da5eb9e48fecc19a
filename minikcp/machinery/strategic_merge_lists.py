"""List handling of strategic merge patch: merging by key, primitive unions, deletions, ordering.

A port of the list half of k8s.io/apimachinery/pkg/util/strategicpatch/patch.go (`mergeSlice`,
`mergeSliceWithSpecialElements`, `normalizeElementOrder`, `mergeSortedSlice`, ...). Values compare
as Go compares `interface{}` values: a JSON 1 and 1.0 (int64 vs float64) differ, as do 1 and true.

Lists passed in as `original` belong to the caller's working copy and may be reused; patch lists
are only read. Merging an item into a kept item, and turning a patch value into a stored value,
are the map module's business and arrive as callbacks, so the two modules do not import each other.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, NamedTuple

from minikcp.machinery import strategic_merge_errors as smp_errors
from minikcp.machinery.schemas import SchemaNode

DIRECTIVE = "$patch"
DELETE = "delete"
REPLACE = "replace"
MERGE = "merge"

MergeItem = Callable[[dict[str, Any], Mapping[str, Any], SchemaNode | None], dict[str, Any]]
"""Merges a patch item into an item of the working copy (the map module's `mergeMap`)."""
Place = Callable[[Any, SchemaNode | None], Any]
"""Turns a patch value into a stored value (a stripped copy, shape-checked against the schema)."""

_MAP = "map"


def _token(value: Any) -> Any:
    """A hashable stand-in that is equal exactly when Go's `==` on interface{} values is."""
    if type(value) is str:
        return value  # the common case; never equal to the tuples below
    if isinstance(value, dict | list):
        # Go panics comparing maps or slices; a structural key is the nearest sane answer.
        return ("structural", repr(value))
    return (type(value), value)


def go_equal(left: Any, right: Any) -> bool:
    return bool(_token(left) == _token(right))


def _item_token(item: Any, merge_key: str, kind: str | None) -> Any:
    """What upstream's `index` compares: the merge key's value for maps, else the item."""
    if kind == _MAP:
        item = item.get(merge_key) if type(item) is dict else None
    return item if type(item) is str else _token(item)


def _positions(items: Sequence[Any], merge_key: str, kind: str | None) -> dict[Any, int]:
    """First index of each item: upstream's `index`, precomputed."""
    positions: dict[Any, int] = {}
    for i, item in enumerate(items):
        token = _item_token(item, merge_key, kind)
        if token not in positions:
            positions[token] = i
    return positions


def element_kind(*lists: Sequence[Any]) -> str | None:
    """The common element type of the lists (`sliceElementType`); None when all are empty."""
    first: type | None = None  # type() tells JSON values apart exactly as Go's types do
    sample: Any = None
    for values in lists:
        for value in values:
            if first is None:
                if isinstance(value, list):
                    raise smp_errors.lists_of_lists()
                first = type(value)
                sample = value
            elif type(value) is not first:
                rendered = smp_errors.go_value([list(v) for v in lists])
                raise smp_errors.unhandled(f"list element types are not identical: {rendered}")
    if first is None:
        return None
    return _MAP if first is dict else smp_errors.go_type(sample)


def _require_key(item: Any, merge_key: str) -> Any:
    if not isinstance(item, dict):
        raise smp_errors.bad_arg_type(smp_errors.MAP_TYPE, item)
    if merge_key not in item:
        raise smp_errors.no_merge_key(item, merge_key)
    return item[merge_key]


def _split_deletions(items: Iterable[Any]) -> tuple[list[Any], list[Any]]:
    """(kept, `$patch: delete` items), as upstream's `extractToDeleteItems`."""
    kept: list[Any] = []
    deleted: list[Any] = []
    for item in items:
        if not isinstance(item, dict):
            raise smp_errors.bad_arg_type(smp_errors.MAP_TYPE, item)
        (deleted if item.get(DIRECTIVE) == DELETE else kept).append(item)
    return kept, deleted


def validate_order_list(patch_list: Sequence[Any], order: Sequence[Any], merge_key: str) -> None:
    """Patch items must appear in `$setElementOrder` in the same relative order.

    Upstream's `validatePatchWithSetOrderList`: items carrying `$patch` are skipped.
    """
    if not order or not patch_list:
        return
    items = _split_deletions(patch_list)[0] if merge_key else list(patch_list)
    patch_index = order_index = 0
    while patch_index < len(items) and order_index < len(order):
        item = items[patch_index]
        if isinstance(item, dict) and DIRECTIVE in item:
            patch_index += 1
            continue
        wanted = order[order_index]
        if merge_key:
            # mergeKeyValueEqual checks that both are maps before looking for the key.
            for checked in (item, wanted):
                if not isinstance(checked, dict):
                    raise smp_errors.bad_arg_type(smp_errors.MAP_TYPE, checked)
            same = go_equal(_require_key(item, merge_key), _require_key(wanted, merge_key))
        else:
            same = go_equal(item, wanted)
        if same:
            patch_index += 1
        order_index += 1
    if patch_index < len(items) and order_index >= len(order):
        raise smp_errors.unhandled(
            f"The order in patch list:\n{smp_errors.go_value(list(patch_list))}\n doesn't match "
            f"$setElementOrder list:\n{smp_errors.go_value(list(order))}\n"
        )


def partition(
    merged: Sequence[Any], present: Sequence[Any], merge_key: str
) -> tuple[list[Any], list[Any]]:
    """(items found in `present`, the others), by merge key when there is one."""
    inside: list[Any] = []
    outside: list[Any] = []
    if not merge_key:
        tokens = {_token(v) for v in present}
        for value in merged:
            (inside if _token(value) in tokens else outside).append(value)
        return inside, outside
    # findMapInSliceBasedOnKeyValue scans `present` and fails on a non-map before a match.
    first_bad = next((i for i, v in enumerate(present) if not isinstance(v, dict)), None)
    positions: dict[Any, int] = {}
    for i, candidate in enumerate(present):
        if isinstance(candidate, dict) and merge_key in candidate:
            positions.setdefault(_token(candidate[merge_key]), i)
    for value in merged:
        found = positions.get(_token(_require_key(value, merge_key)))
        if first_bad is not None and (found is None or found > first_bad):
            raise smp_errors.unhandled(f"value for key {first_bad} is not a map")
        (outside if found is None else inside).append(value)
    return inside, outside


def _sort_by(items: list[Any], order: Sequence[Any], merge_key: str, kind: str | None) -> list[Any]:
    """Stable sort by position in `order` (`normalizeSliceOrder`).

    Every caller sorts items that all occur in `order`; anything missing goes last instead of
    reproducing what Go's sort does with upstream's inconsistent comparator.
    """
    deleted: list[Any] = []
    if kind == _MAP:
        for item in (*items, *order):
            if type(item) is not dict or merge_key not in item:
                _require_key(item, merge_key)  # raises upstream's error
        if any(item.get(DIRECTIVE) == DELETE for item in items):
            items, deleted = _split_deletions(items)
    if len(items) < 2:
        return [*items, *deleted]
    positions = _positions(order, merge_key, kind)
    missing = len(order)
    items = sorted(items, key=lambda v: positions.get(_item_token(v, merge_key, kind), missing))
    return items + deleted


def _interleave(
    left: list[Any], right: list[Any], server_order: Sequence[Any], merge_key: str, kind: str | None
) -> list[Any]:
    """`mergeSortedSlice`: insert server-only items (left) among patch items (right).

    A left item goes first only when both items are in the live list and it comes earlier there.
    """
    positions = _positions(server_order, merge_key, kind)
    left_at = [positions.get(_item_token(v, merge_key, kind)) for v in left]
    right_at = [positions.get(_item_token(v, merge_key, kind)) for v in right]
    out: list[Any] = []
    i = j = 0
    while i < len(left) and j < len(right):
        li, ri = left_at[i], right_at[j]
        if li is not None and ri is not None and li < ri:
            out.append(left[i])
            i += 1
        else:
            out.append(right[j])
            j += 1
    out.extend(right[j:])
    out.extend(left[i:])
    return out


def normalize_order(
    patch_items: list[Any],
    server_only: list[Any],
    *,
    patch_order: Sequence[Any],
    server_order: Sequence[Any],
    merge_key: str,
    kind: str | None,
) -> list[Any]:
    """`normalizeElementOrder`: patch items by the patch's order, server-only items by the live
    order, then interleaved so both relative orders hold."""
    patch_items = _sort_by(patch_items, patch_order, merge_key, kind)
    server_only = _sort_by(server_only, server_order, merge_key, kind)
    if not server_only or not patch_items:
        return patch_items + server_only
    return _interleave(server_only, patch_items, server_order, merge_key, kind)


class LiveView:
    """The live list as upstream's `$setElementOrder` code sees it after `mergeSlice` ran.

    Go deletes list items with `append(s[:k], s[k+1:]...)` and appends merged-in items to the
    shortened slice, both writing into the array that the caller's slice of the live list still
    shares; that caller then orders the result by this rewritten list. Upstream's own expected
    results depend on it (e.g. "add map and delete map from merging list"), so it is tracked here.
    """

    __slots__ = ("items", "length")

    def __init__(self, items: Sequence[Any]) -> None:
        self.items = list(items)
        self.length = len(self.items)

    def delete(self, index: int) -> None:
        self.items[index : self.length - 1] = self.items[index + 1 : self.length]
        self.length -= 1

    def append(self, item: Any) -> None:
        if self.length < len(self.items):
            self.items[self.length] = item
        self.length += 1  # past the end Go reallocates, out of the caller's sight


def _drop_special_items(
    original: list[Any],
    patch: Sequence[Any],
    merge_key: str,
    *,
    view: LiveView,
    schema: SchemaNode | None,
    place: Place,
) -> tuple[list[Any], list[Any], bool]:
    """Applies the `$patch` items of a list of maps (`mergeSliceWithSpecialElements`).

    Returns (original, remaining patch items, whether `$patch: replace` replaced the list).
    """
    remaining: list[Any] = []
    replace = False
    for item in patch:
        if DIRECTIVE not in item:
            remaining.append(item)
            continue
        directive = item[DIRECTIVE]
        if directive == DELETE:
            if merge_key not in item:
                raise smp_errors.no_merge_key(item, merge_key)
            target = _token(item[merge_key])
            index = 0
            while index < len(original):
                kept = original[index]
                if merge_key in kept and _token(kept[merge_key]) == target:
                    del original[index]
                    view.delete(index)
                else:
                    index += 1
        elif directive == REPLACE:
            replace = True  # keep scanning: later items may still be malformed
        elif directive == MERGE:
            raise smp_errors.unhandled("merging lists cannot yet be specified in the patch")
        else:
            raise smp_errors.unknown_patch_type(directive, item)
    if replace:
        return [place(item, schema) for item in remaining], [], True
    return original, remaining, False


def _merge_items(
    original: list[Any],
    patch: Sequence[Any],
    merge_key: str,
    *,
    view: LiveView | None,
    schema: SchemaNode | None,
    merge_item: MergeItem,
    place: Place,
) -> list[Any]:
    """`mergeSliceWithoutSpecialElements`: merge items by key, append the new ones."""
    merged = list(original)
    # findMapInSliceBasedOnKeyValue: the first item that has the key with an equal value.
    positions: dict[Any, int] = {}
    for i, kept in enumerate(merged):
        if merge_key in kept:
            positions.setdefault(_token(kept[merge_key]), i)
    for item in patch:
        if merge_key not in item:
            raise smp_errors.no_merge_key(item, merge_key)
        token = _token(item[merge_key])
        found = positions.get(token)
        if found is None:
            positions[token] = len(merged)
            placed = place(item, schema)
            merged.append(placed)
            if view is not None:
                view.append(placed)
        else:
            merged[found] = merge_item(merged[found], item, schema)
    return merged


def _union(original: Sequence[Any], patch: Sequence[Any]) -> list[Any]:
    seen: set[Any] = set()
    out: list[Any] = []
    for value in (*original, *patch):
        token = _token(value)
        if token not in seen:
            seen.add(token)
            out.append(value)
    return out


class MergedList(NamedTuple):
    items: list[Any]
    live: list[Any]
    """The live list as upstream's caller sees it afterwards (see LiveView)."""


def merge_list(
    original: list[Any],
    patch: Sequence[Any],
    *,
    schema: SchemaNode | None,
    merge_key: str,
    delete_list: bool,
    merge_item: MergeItem,
    place: Place,
) -> MergedList:
    """`mergeSlice`: a list with the merge strategy, or a `$deleteFromPrimitiveList` list.

    `schema` is the schema of the list's items.
    """
    if not original and not patch:
        return MergedList(original, original)
    kind = element_kind(original, patch)
    live = original
    if kind != _MAP:
        if delete_list:
            doomed = {_token(v) for v in patch}
            return MergedList([v for v in original if _token(v) not in doomed], live)
        merged = _union(original, patch)
    else:
        if not merge_key:
            raise smp_errors.unhandled("cannot merge lists without merge key for struct")
        view = LiveView(original)
        original, patch, replaced = _drop_special_items(
            list(original), patch, merge_key, view=view, schema=schema, place=place
        )
        merged = _merge_items(
            original,
            patch,
            merge_key,
            view=None if replaced else view,
            schema=schema,
            merge_item=merge_item,
            place=place,
        )
        live = view.items
    patch_items, server_only = partition(merged, patch, merge_key)
    items = normalize_order(
        patch_items,
        server_only,
        patch_order=patch,
        server_order=original,
        merge_key=merge_key,
        kind=kind,
    )
    return MergedList(items, live)


def order_list(
    merged: list[Any],
    order: Sequence[Any],
    *,
    original: Sequence[Any],
    patch: Sequence[Any],
    merge_key: str,
) -> list[Any]:
    """Applies `$setElementOrder` to an already merged list (end of `mergePatchIntoOriginal`)."""
    patch_items, server_only = partition(merged, order, merge_key)
    kind = element_kind(original, patch)
    if kind is None:
        # Upstream errors ("no elements in any of the given slices") here, which it only reaches
        # when the live object holds an empty list; typed objects drop those, so keep it as is.
        return merged
    return normalize_order(
        patch_items,
        server_only,
        patch_order=order,
        server_order=original,
        merge_key=merge_key,
        kind=kind,
    )

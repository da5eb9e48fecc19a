"""JSON merge patches (RFC 7386), as kube-apiserver applies `application/merge-patch+json`.

kube-apiserver uses evanphx/json-patch v4 `MergePatch`, which differs from the bare RFC in two
ways that are kept here: a patch that is not an object or an array (`null`, a string, a number)
is rejected with 400 "Invalid JSON Patch", and nulls are pruned from objects inside any value the
patch places (also objects inside arrays), since a null can only mean "delete".

Nothing here mutates its arguments, and a result never shares a list or dict with them (except
with the target of `apply_merge_patch_owned`, which its caller gives up).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from minikcp.machinery import errors


def json_equal(a: Any, b: Any) -> bool:
    """Equality of JSON values: unlike Python's ==, true is not 1 (numbers compare by value)."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, int | float) and isinstance(b, int | float):
        return a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(json_equal(v, b[k]) for k, v in a.items())
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(json_equal(x, y) for x, y in zip(a, b, strict=True))
    return type(a) is type(b) and a == b


def copy_json(value: Any) -> Any:
    """A copy with fresh dicts and lists (strings and numbers are immutable, so shared)."""
    if isinstance(value, dict):
        return {k: copy_json(v) for k, v in value.items()}
    if isinstance(value, list):
        return [copy_json(v) for v in value]
    return value


def _placed(value: Any) -> Any:
    """A fresh copy of a value the patch sets, with nulls dropped from objects inside it."""
    if isinstance(value, dict):
        return {k: _placed(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_placed(v) for v in value]
    return value


def _merge(target: Any, patch: Any, keep: Callable[[Any], Any]) -> Any:
    """Merge; `keep` is applied to the target's untouched values (a copy, or nothing)."""
    if not isinstance(patch, dict) or not isinstance(target, dict):
        return _placed(patch)
    out = {k: keep(v) for k, v in target.items() if k not in patch}
    for key, value in patch.items():
        if value is None:
            continue
        if key in target:
            out[key] = _merge(target[key], value, keep)
        else:
            out[key] = _placed(value)
    # Keep the target's key order, then new keys in the patch's order.
    order = [k for k in target if k in out] + [k for k in patch if k in out and k not in target]
    return {k: out[k] for k in order}


def apply_merge_patch(target: Any, patch: Any) -> Any:
    """`target` with `patch` merged in, as a fresh value.

    Raises a 400 StatusError "Invalid JSON Patch" when the patch is neither an object nor an
    array, as kube-apiserver does.
    """
    if not isinstance(patch, dict | list):
        raise errors.bad_request("Invalid JSON Patch")
    return _merge(target, patch, copy_json)


def _shared(value: Any) -> Any:
    return value


def apply_merge_patch_owned(target: Any, patch: Any) -> Any:
    """`apply_merge_patch` for a `target` the caller owns and gives up: the result may share
    target's lists and dicts (never the patch's), which saves copying the untouched parts."""
    if not isinstance(patch, dict | list):
        raise errors.bad_request("Invalid JSON Patch")
    return _merge(target, patch, _shared)


def create_merge_patch(original: Mapping[str, Any], modified: Mapping[str, Any]) -> dict[str, Any]:
    """The smallest merge patch that turns `original` into `modified`.

    Applying it to `original` gives `modified` whenever `modified` holds no nulls (a merge patch
    cannot set a null). Lists are replaced whole, as RFC 7386 has no way to edit them.
    """
    patch: dict[str, Any] = {}
    for key in original:
        if key not in modified:
            patch[key] = None
    for key, new in modified.items():
        if key not in original:
            patch[key] = copy_json(new)
            continue
        old = original[key]
        if isinstance(old, Mapping) and isinstance(new, Mapping):
            nested = create_merge_patch(old, new)
            if nested:
                patch[key] = nested
        elif not json_equal(old, new):
            patch[key] = copy_json(new)
    return patch

"""Strategic merge patch: properties that hold for any patch (hypothesis)."""

from __future__ import annotations

import copy
from typing import Any

from hypothesis import assume, given, settings
from hypothesis import strategies as st

from minikcp.machinery import errors
from minikcp.machinery.schemas import SchemaNode
from minikcp.machinery.strategic_merge import apply_strategic_merge, is_directive_key
from tests.machinery.strategic_merge_cases import ITEM
from tests.machinery.test_strategic_merge import NO_SCHEMA

# --- properties -----------------------------------------------------------------------------

_KEYS = st.sampled_from(
    [
        *("name", "value", "other", "byName", "replacedList", "intSet", "intList"),
        *("labels", "replacedMap", "union", "unionList", "unknown"),
    ]
)
_DIRECTIVE_KEYS = st.sampled_from(
    [
        *("$patch", "$retainKeys", "$setElementOrder/byName"),
        *("$setElementOrder/intSet", "$deleteFromPrimitiveList/intSet"),
        *("$setElementOrder", "$deleteFromPrimitiveList"),
    ]
)
_SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(-3, 3)
    | st.sampled_from(["a", "b", "delete", "replace", "merge", "name"])
)


def _documents(keys: st.SearchStrategy[str]) -> st.SearchStrategy[dict[str, Any]]:
    values = st.recursive(
        _SCALARS,
        lambda inner: st.lists(inner, max_size=3) | st.dictionaries(keys, inner, max_size=3),
        max_leaves=8,
    )
    return st.dictionaries(keys, values, max_size=4)


_LIVE = _documents(_KEYS)
_PATCHES = _documents(_KEYS | _DIRECTIVE_KEYS)
_SCHEMAS = st.sampled_from([ITEM, NO_SCHEMA])


def _directive_keys(value: Any) -> list[str]:
    if isinstance(value, dict):
        return [k for k in value if is_directive_key(k)] + [
            k for v in value.values() for k in _directive_keys(v)
        ]
    if isinstance(value, list):
        return [k for v in value for k in _directive_keys(v)]
    return []


def _scramble(value: Any) -> None:
    """Mutates every container reachable from `value`."""
    if isinstance(value, dict):
        for v in list(value.values()):
            _scramble(v)
        value["scrambled"] = True
    elif isinstance(value, list):
        for v in value:
            _scramble(v)
        value.append("scrambled")


# Hypothesis draws these nested documents slowly; one property test checks all three
# invariants of an arbitrary (often malformed) patch to keep the file quick.
@settings(max_examples=120, deadline=None)
@given(original=_LIVE, patch=_PATCHES, schema=_SCHEMAS)
def test_inputs_untouched_and_result_free_of_directives(
    original: dict[str, Any], patch: dict[str, Any], schema: SchemaNode
) -> None:
    original_before, patch_before = copy.deepcopy(original), copy.deepcopy(patch)
    try:
        result = apply_strategic_merge(original, patch, schema)
    except errors.StatusError:
        result = None
    assert original == original_before
    assert patch == patch_before
    assert _directive_keys(result) == []
    _scramble(result)  # the result shares nothing with the inputs
    assert original == original_before
    assert patch == patch_before


@settings(max_examples=50, deadline=None)
@given(original=_LIVE, schema=_SCHEMAS)
def test_empty_patch_returns_the_original(original: dict[str, Any], schema: SchemaNode) -> None:
    assert apply_strategic_merge(original, {}, schema) == original


def _json_merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386, the reference for what SMP does where no schema or directive says otherwise."""
    if not isinstance(patch, dict):
        return patch
    out = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = _json_merge_patch(out.get(key), value)
    return out


def _no_null_in_lists(value: Any, *, in_list: bool = False) -> bool:
    if isinstance(value, dict):
        return all(_no_null_in_lists(v, in_list=in_list) for v in value.values()) and not (
            in_list and None in value.values()
        )
    if isinstance(value, list):
        return all(_no_null_in_lists(v, in_list=True) for v in value)
    return True


@settings(max_examples=80, deadline=None)
@given(original=_LIVE, patch=_LIVE)
def test_without_schema_or_directives_it_is_json_merge_patch(
    original: dict[str, Any], patch: dict[str, Any]
) -> None:
    # Lists are stored as given by JSON merge patch but typed-decoded by SMP, which drops nulls
    # in maps inside lists; leave those out.
    assume(_no_null_in_lists(patch))
    assert apply_strategic_merge(original, patch, NO_SCHEMA) == _json_merge_patch(original, patch)

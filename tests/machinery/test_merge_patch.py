"""JSON merge patches: RFC 7386's examples, kube-apiserver's differences, and the merge laws."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from minikcp.machinery import errors, merge_patch


@pytest.mark.parametrize(
    ("target", "patch", "result"),
    [
        # RFC 7386 Appendix A (the cases kube-apiserver accepts).
        ({"a": "b"}, {"a": "c"}, {"a": "c"}),
        ({"a": "b"}, {"b": "c"}, {"a": "b", "b": "c"}),
        ({"a": "b"}, {"a": None}, {}),
        ({"a": "b", "b": "c"}, {"a": None}, {"b": "c"}),
        ({"a": ["b"]}, {"a": "c"}, {"a": "c"}),
        ({"a": "c"}, {"a": ["b"]}, {"a": ["b"]}),
        ({"a": {"b": "c"}}, {"a": {"b": "d", "c": None}}, {"a": {"b": "d"}}),
        ({"a": [{"b": "c"}]}, {"a": [1]}, {"a": [1]}),
        (["a", "b"], ["c", "d"], ["c", "d"]),
        ({"a": "b"}, ["c"], ["c"]),
        ({"e": None}, {"a": 1}, {"e": None, "a": 1}),
        ([1, 2], {"a": "b", "c": None}, {"a": "b"}),
        ({}, {"a": {"bb": {"ccc": None}}}, {"a": {"bb": {}}}),
        # Kubernetes-shaped objects.
        (
            {"metadata": {"labels": {"a": "1", "b": "2"}}, "spec": {"replicas": 1}},
            {"metadata": {"labels": {"a": None, "c": "3"}}, "spec": {"replicas": 3}},
            {"metadata": {"labels": {"b": "2", "c": "3"}}, "spec": {"replicas": 3}},
        ),
        ({"spec": {"x": 1}}, {"spec": None}, {}),
        ({"spec": 1}, {"spec": {"x": None, "y": 2}}, {"spec": {"y": 2}}),
        ({"a": None}, {"a": {"b": None, "c": 1}}, {"a": {"c": 1}}),
        ({}, {}, {}),
    ],
)
def test_examples(target: Any, patch: Any, result: Any) -> None:
    assert merge_patch.apply_merge_patch(target, patch) == result


@pytest.mark.parametrize("patch", [None, "bar", 1, True])
def test_patch_must_be_an_object_or_array(patch: Any) -> None:
    # kube-apiserver's merge-patch library refuses these (RFC 7386 would replace the target).
    with pytest.raises(errors.StatusError) as caught:
        merge_patch.apply_merge_patch({"a": "foo"}, patch)
    assert (caught.value.code, caught.value.reason) == (400, "BadRequest")
    assert caught.value.message == "Invalid JSON Patch"


@pytest.mark.parametrize(
    ("target", "patch", "result"),
    [
        ({}, {"a": [{"b": None, "c": 1}]}, {"a": [{"c": 1}]}),
        ({"a": "x"}, {"a": [[{"b": None}], None]}, {"a": [[{}], None]}),
        ({}, [{"a": None}, None], [{}, None]),
    ],
)
def test_nulls_inside_placed_arrays_are_pruned_like_upstream(
    target: Any, patch: Any, result: Any
) -> None:
    assert merge_patch.apply_merge_patch(target, patch) == result


@pytest.mark.parametrize(
    ("a", "b", "equal"),
    [
        (1, 1.0, True),
        (True, 1, False),
        (False, 0, False),
        (True, True, True),
        ({"a": [1, {"b": None}]}, {"a": [1.0, {"b": None}]}, True),
        ({"a": 1}, {"a": 1, "b": 2}, False),
        ([1, 2], [2, 1], False),
        ("1", 1, False),
        (None, None, True),
        (None, {}, False),
    ],
)
def test_json_equal(a: Any, b: Any, equal: bool) -> None:
    assert merge_patch.json_equal(a, b) is equal
    assert merge_patch.json_equal(b, a) is equal


@pytest.mark.parametrize(
    ("original", "modified", "patch"),
    [
        ({"a": 1}, {"a": 1}, {}),
        ({"a": 1}, {"a": 2}, {"a": 2}),
        ({"a": 1}, {}, {"a": None}),
        ({}, {"a": {"b": [1]}}, {"a": {"b": [1]}}),
        ({"a": {"b": 1, "c": 2}}, {"a": {"b": 1, "c": 3}}, {"a": {"c": 3}}),
        ({"a": [1, 2]}, {"a": [1]}, {"a": [1]}),
        ({"a": 1}, {"a": True}, {"a": True}),
        ({"a": {"b": 1}}, {"a": 5}, {"a": 5}),
    ],
)
def test_create_merge_patch(original: Any, modified: Any, patch: Any) -> None:
    assert merge_patch.create_merge_patch(original, modified) == patch


# -- properties --------------------------------------------------------------------------------

# Nested JSON is slow to generate on a busy machine; Hypothesis' CI profile relaxes the same checks.
PROPERTIES = settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])

scalars = st.one_of(
    st.booleans(),
    st.integers(min_value=-(2**53), max_value=2**53),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=4),
)
keys = st.text(alphabet="abcd", min_size=1, max_size=2)


def json_values(*, nulls: bool) -> st.SearchStrategy[Any]:
    leaves = st.one_of(st.none(), scalars) if nulls else scalars
    return st.recursive(
        leaves,
        lambda inner: st.one_of(
            st.lists(inner, max_size=3), st.dictionaries(keys, inner, max_size=3)
        ),
        max_leaves=6,
    )


documents = st.dictionaries(keys, json_values(nulls=True), max_size=3)
patches = st.dictionaries(keys, json_values(nulls=True), max_size=3)
null_free = st.dictionaries(keys, json_values(nulls=False), max_size=3)


def pruned(value: Any) -> Any:
    """A value as the patch places it: nulls dropped from every object inside."""
    if isinstance(value, dict):
        return {k: pruned(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [pruned(v) for v in value]
    return value


def containers(value: Any) -> Iterator[int]:
    """The ids of every dict and list inside value."""
    if isinstance(value, dict | list):
        yield id(value)
        for child in value.values() if isinstance(value, dict) else value:
            yield from containers(child)


@PROPERTIES
@given(documents, null_free)
def test_a_created_patch_turns_original_into_modified(
    original: dict[str, Any], modified: dict[str, Any]
) -> None:
    patch = merge_patch.create_merge_patch(original, modified)
    assert merge_patch.json_equal(merge_patch.apply_merge_patch(original, patch), modified)


@PROPERTIES
@given(documents)
def test_a_document_needs_no_patch_to_itself(doc: dict[str, Any]) -> None:
    assert merge_patch.create_merge_patch(doc, doc) == {}
    assert merge_patch.json_equal(merge_patch.apply_merge_patch(doc, {}), doc)


@PROPERTIES
@given(documents, patches)
def test_applying_twice_changes_nothing_more(doc: dict[str, Any], patch: dict[str, Any]) -> None:
    once = merge_patch.apply_merge_patch(doc, patch)
    assert merge_patch.json_equal(merge_patch.apply_merge_patch(once, patch), once)


@PROPERTIES
@given(documents, patches)
def test_the_result_has_what_the_patch_sets(doc: dict[str, Any], patch: dict[str, Any]) -> None:
    result = merge_patch.apply_merge_patch(doc, patch)
    for key, value in patch.items():
        if value is None:
            assert key not in result
        elif not isinstance(value, dict) or not isinstance(doc.get(key), dict):
            assert merge_patch.json_equal(result[key], pruned(value))
    for key in doc.keys() - patch.keys():
        assert merge_patch.json_equal(result[key], doc[key])


@PROPERTIES
@given(documents, patches)
def test_inputs_are_never_mutated_or_shared(doc: dict[str, Any], patch: dict[str, Any]) -> None:
    doc_before, patch_before = copy.deepcopy(doc), copy.deepcopy(patch)
    result = merge_patch.apply_merge_patch(doc, patch)
    assert doc == doc_before
    assert patch == patch_before
    assert set(containers(result)).isdisjoint(set(containers(doc)) | set(containers(patch)))


@PROPERTIES
@given(documents, null_free)
def test_created_patches_share_nothing(original: dict[str, Any], modified: dict[str, Any]) -> None:
    patch = merge_patch.create_merge_patch(original, modified)
    assert set(containers(patch)).isdisjoint(set(containers(original)) | set(containers(modified)))


def test_owned_target_merges_like_apply_merge_patch_and_leaves_the_patch_alone() -> None:
    target = {"a": {"b": 1, "c": [1, {"d": 2}]}, "e": "x", "f": {"g": None}}
    patch = {"a": {"b": None, "h": {"i": None, "j": 3}}, "k": [{"l": None}], "e": None}
    expected = merge_patch.apply_merge_patch(target, patch)
    patch_before = merge_patch.copy_json(patch)
    result = merge_patch.apply_merge_patch_owned(merge_patch.copy_json(target), patch)
    assert result == expected
    assert list(result) == list(expected) and list(result["a"]) == list(expected["a"])
    assert patch == patch_before
    result["k"][0]["m"] = 1
    assert patch == patch_before

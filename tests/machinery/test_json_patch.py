"""JSON patches: RFC 6902's examples, kube-apiserver's status codes and library quirks, purity."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from minikcp.machinery import errors, json_patch, merge_patch


def failure(doc: Any, patch: Any) -> errors.StatusError:
    with pytest.raises(errors.StatusError) as caught:
        json_patch.apply_json_patch(doc, patch)
    return caught.value


# RFC 6902 Appendix A, plus a few more.
@pytest.mark.parametrize(
    ("doc", "patch", "result"),
    [
        (
            {"foo": "bar"},
            [{"op": "add", "path": "/baz", "value": "qux"}],
            {"baz": "qux", "foo": "bar"},
        ),
        (
            {"foo": ["bar", "baz"]},
            [{"op": "add", "path": "/foo/1", "value": "qux"}],
            {"foo": ["bar", "qux", "baz"]},
        ),
        ({"baz": "qux", "foo": "bar"}, [{"op": "remove", "path": "/baz"}], {"foo": "bar"}),
        (
            {"foo": ["bar", "qux", "baz"]},
            [{"op": "remove", "path": "/foo/1"}],
            {"foo": ["bar", "baz"]},
        ),
        (
            {"baz": "qux", "foo": "bar"},
            [{"op": "replace", "path": "/baz", "value": "boo"}],
            {"baz": "boo", "foo": "bar"},
        ),
        (
            {"foo": {"bar": "baz", "waldo": "fred"}, "qux": {"corge": "grault"}},
            [{"op": "move", "from": "/foo/waldo", "path": "/qux/thud"}],
            {"foo": {"bar": "baz"}, "qux": {"corge": "grault", "thud": "fred"}},
        ),
        (
            {"foo": ["all", "grass", "cows", "eat"]},
            [{"op": "move", "from": "/foo/1", "path": "/foo/3"}],
            {"foo": ["all", "cows", "eat", "grass"]},
        ),
        (
            {"baz": "qux", "foo": ["a", 2, "c"]},
            [
                {"op": "test", "path": "/baz", "value": "qux"},
                {"op": "test", "path": "/foo/1", "value": 2},
            ],
            {"baz": "qux", "foo": ["a", 2, "c"]},
        ),
        (
            {"foo": "bar"},
            [{"op": "add", "path": "/child", "value": {"grandchild": {}}}],
            {"foo": "bar", "child": {"grandchild": {}}},
        ),
        (
            {"foo": "bar"},
            [{"op": "add", "path": "/baz", "value": "qux", "xyz": 123}],
            {"foo": "bar", "baz": "qux"},
        ),
        ({"/": 9, "~1": 10}, [{"op": "test", "path": "/~01", "value": 10}], {"/": 9, "~1": 10}),
        (
            {"foo": ["bar"]},
            [{"op": "add", "path": "/foo/-", "value": ["abc", "def"]}],
            {"foo": ["bar", ["abc", "def"]]},
        ),
        # More.
        ({"a/b": 1}, [{"op": "copy", "from": "/a~1b", "path": "/c"}], {"a/b": 1, "c": 1}),
        (
            {"a": {"b": [1]}},
            [{"op": "copy", "from": "/a", "path": "/c"}],
            {"a": {"b": [1]}, "c": {"b": [1]}},
        ),
        ({"a": 1}, [{"op": "move", "from": "/a", "path": "/a"}], {"a": 1}),
        ({"a": [1, 2]}, [{"op": "add", "path": "/a/2", "value": 3}], {"a": [1, 2, 3]}),
        ({"a": {}}, [{"op": "add", "path": "/a/", "value": 3}], {"a": {"": 3}}),
        ({}, [], {}),
        ({"x": 1}, None, {"x": 1}),
        ({"a": 1}, [{"op": "test", "path": "", "value": {"a": 1.0}}], {"a": 1}),
        (
            {"metadata": {"labels": {"a": "1"}}},
            [{"op": "add", "path": "/metadata/labels/b", "value": "2"}],
            {"metadata": {"labels": {"a": "1", "b": "2"}}},
        ),
    ],
)
def test_operations(doc: Any, patch: Any, result: Any) -> None:
    assert json_patch.apply_json_patch(doc, patch) == result


@pytest.mark.parametrize(
    ("doc", "patch", "result"),
    [
        # evanphx/json-patch v4, which kube-apiserver uses, allows negative indices.
        ({"a": [1, 2, 3]}, [{"op": "remove", "path": "/a/-1"}], {"a": [1, 2]}),
        ({"a": [1, 2, 3]}, [{"op": "replace", "path": "/a/-3", "value": 0}], {"a": [0, 2, 3]}),
        ({"a": [1, 2]}, [{"op": "add", "path": "/a/-1", "value": 9}], {"a": [1, 2, 9]}),
        ({"a": [1, 2]}, [{"op": "add", "path": "/a/01", "value": 9}], {"a": [1, 9, 2]}),
        ({"a": [1, 2]}, [{"op": "test", "path": "/a/-2", "value": 1}], {"a": [1, 2]}),
        # ... replaces a missing member by adding it ...
        (
            {"labels": {}},
            [{"op": "replace", "path": "/labels/new", "value": "x"}],
            {"labels": {"new": "x"}},
        ),
        # ... swaps the whole document in a root replace ...
        ({"a": 1}, [{"op": "replace", "path": "", "value": {"b": 2}}], {"b": 2}),
        # ... reads a missing "value" as null, and tests null against a missing member.
        ({"a": 1}, [{"op": "add", "path": "/b"}], {"a": 1, "b": None}),
        ({"a": 1}, [{"op": "test", "path": "/b", "value": None}], {"a": 1}),
        ({"a": None}, [{"op": "test", "path": "/a"}], {"a": None}),
    ],
)
def test_kube_library_behaviour(doc: Any, patch: Any, result: Any) -> None:
    assert json_patch.apply_json_patch(doc, patch) == result


@pytest.mark.parametrize(
    ("doc", "patch", "reason"),
    [
        (
            {"baz": "qux"},
            [{"op": "test", "path": "/baz", "value": "bar"}],
            "testing value /baz failed",
        ),
        (
            {"foo": "bar"},
            [{"op": "add", "path": "/baz/bat", "value": "qux"}],
            'add operation does not apply: doc is missing path: "/baz/bat"',
        ),
        (
            {"/": 9, "~1": 10},
            [{"op": "test", "path": "/~01", "value": "10"}],
            "testing value /~01 failed",
        ),
        ({"a": 1}, [{"op": "test", "path": "/a", "value": True}], "testing value /a failed"),
        ({"a": True}, [{"op": "test", "path": "/a", "value": 1}], "testing value /a failed"),
        (
            {"a": "web"},
            [{"op": "test", "path": "/a/0", "value": "w"}],
            "test operation does not apply: is missing path: /a/0",
        ),
        (
            {"a": {}},
            [{"op": "test", "path": "/b/c", "value": None}],
            "test operation does not apply: is missing path: /b/c",
        ),
        ({"a": 1}, [{"op": "test", "path": "/b", "value": 1}], "testing value /b failed"),
        (
            {"a": 1},
            [{"op": "remove", "path": "/b"}],
            "remove operation: Unable to remove nonexistent key: b",
        ),
        (
            {"a": [1]},
            [{"op": "remove", "path": "/a/1"}],
            "remove operation: Unable to access invalid index: 1",
        ),
        (
            {"a": [1]},
            [{"op": "remove", "path": "/a/-2"}],
            "remove operation: Unable to access invalid index: -2",
        ),
        (
            {"a": [1]},
            [{"op": "add", "path": "/a/2", "value": 0}],
            "add operation: Unable to access invalid index: 2",
        ),
        (
            {"a": [1]},
            [{"op": "add", "path": "/a/x", "value": 0}],
            "add operation: value was not a proper array index: 'x'",
        ),
        (
            {"a": [1]},
            [{"op": "replace", "path": "/a/1", "value": 0}],
            "replace operation does not apply: doc is missing key: /a/1",
        ),
        (
            {"a": 1},
            [{"op": "replace", "path": "", "value": 2}],
            "replace operation value must be object or array",
        ),
        (
            {"a": 1},
            [{"op": "add", "path": "", "value": {}}],
            'add operation does not apply: doc is missing path: ""',
        ),
        (
            {"a": 1},
            [{"op": "remove", "path": ""}],
            'remove operation does not apply: doc is missing path: ""',
        ),
        (
            {"a": 1},
            [{"op": "add", "path": "a", "value": 2}],
            'add operation does not apply: doc is missing path: "a"',
        ),
        (
            {"a": None},
            [{"op": "add", "path": "/a/b", "value": 2}],
            'add operation does not apply: doc is missing path: "/a/b"',
        ),
        (
            {"a": {"b": 1}},
            [{"op": "move", "from": "/a", "path": "/a/c"}],
            'move operation does not apply: doc is missing destination path: "/a/c"',
        ),
        (
            {"a": 1},
            [{"op": "move", "from": "/x", "path": "/y"}],
            "move operation: Unable to remove nonexistent key: x",
        ),
        (
            {"a": 1},
            [{"op": "copy", "from": "/x", "path": "/y"}],
            "copy operation does not apply: doc is missing from path: /x",
        ),
        ({"a": 1}, [{"op": "copy", "path": "/y"}], "copy operation is missing the 'from' field"),
        ({"a": 1}, [{"op": "add", "value": 1}], "add operation is missing the 'path' field"),
        (
            {"a": 1},
            [{"op": "add", "path": 5, "value": 1}],
            "add operation 'path' must be a string, not number",
        ),
        ({"a": 1}, [{"op": "bogus", "path": "/a"}], "Unexpected kind: bogus"),
        ({"a": 1}, [{"path": "/a"}], "Unexpected kind: unknown"),
        ({"a": 1}, [None], "Unexpected kind: unknown"),
        ({"a": 1}, [{"op": 3, "path": "/a"}], "Unexpected kind: unknown"),
        (
            {"a": 1},
            [{"op": "add", "path": "/b", "value": 2}, {"op": "test", "path": "/b", "value": 3}],
            "testing value /b failed",
        ),
    ],
)
def test_operations_that_do_not_apply_are_invalid(doc: Any, patch: Any, reason: str) -> None:
    status = failure(doc, patch)
    assert (status.code, status.reason) == (422, "Invalid")
    assert status.message == f"{json_patch.REJECTED}: {reason}"
    assert status.to_status()["code"] == 422


@pytest.mark.parametrize(
    ("patch", "message"),
    [
        (
            {"op": "add", "path": "/a", "value": 1},
            "json: cannot unmarshal object into Go value of type jsonpatch.Patch",
        ),
        ("add", "json: cannot unmarshal string into Go value of type jsonpatch.Patch"),
        (5, "json: cannot unmarshal number into Go value of type jsonpatch.Patch"),
        ([["op"]], "json: cannot unmarshal array into Go value of type jsonpatch.Operation"),
        (
            [{"op": "test", "path": "", "value": 1}, True],
            "json: cannot unmarshal bool into Go value of type jsonpatch.Operation",
        ),
        (b'{"op": "add"}', "json: cannot unmarshal object into Go value of type jsonpatch.Patch"),
    ],
)
def test_a_body_that_is_not_an_array_of_objects_is_a_bad_request(patch: Any, message: str) -> None:
    status = failure({"a": 1}, patch)
    assert (status.code, status.reason, status.message) == (400, "BadRequest", message)


def test_undecodable_bytes_are_a_bad_request() -> None:
    status = failure({}, b"[{")
    assert (status.code, status.reason) == (400, "BadRequest")
    assert status.message.startswith("error decoding patch: ")


def test_raw_bytes_are_decoded() -> None:
    body = orjson.dumps([{"op": "add", "path": "/b", "value": [1]}])
    assert json_patch.apply_json_patch({"a": 1}, body) == {"a": 1, "b": [1]}


def test_more_than_ten_thousand_operations_is_too_large() -> None:
    op = {"op": "test", "path": "/a", "value": 1}
    assert json_patch.apply_json_patch({"a": 1}, [op] * json_patch.MAX_OPERATIONS) == {"a": 1}
    status = failure({"a": 1}, [op] * (json_patch.MAX_OPERATIONS + 1))
    assert (status.code, status.reason) == (413, "RequestEntityTooLarge")
    assert status.message == (
        "Request entity too large: "
        "The allowed maximum operations in a JSON patch is 10000, got 10001"
    )


def test_the_size_limit_comes_before_applying() -> None:
    bad = {"op": "test", "path": "/nope", "value": 1}
    assert failure({}, [bad] * 10_001).code == 413


def test_a_failed_patch_leaves_the_document_alone() -> None:
    doc = {"a": [1, 2], "b": {"c": 1}}
    failure(
        doc,
        [
            {"op": "remove", "path": "/a/0"},
            {"op": "add", "path": "/b/c", "value": 2},
            {"op": "test", "path": "/z", "value": 0},
        ],
    )
    assert doc == {"a": [1, 2], "b": {"c": 1}}


# -- properties --------------------------------------------------------------------------------

# Nested JSON is slow to generate on a busy machine; Hypothesis' CI profile relaxes the same checks.
PROPERTIES = settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])

keys = st.text(alphabet="ab~/", min_size=1, max_size=2)
json_values = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(-5, 5), st.text(alphabet="xy", max_size=2)),
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(keys, inner, max_size=3)),
    max_leaves=6,
)
documents = st.dictionaries(keys, json_values, max_size=3)


def escape(token: str) -> str:
    return token.replace("~", "~0").replace("/", "~1")


def pointers(doc: Any, prefix: str = "") -> Iterator[str]:
    """Every JSON pointer into doc, the root excluded."""
    if isinstance(doc, dict):
        for key, value in doc.items():
            here = f"{prefix}/{escape(key)}"
            yield here
            yield from pointers(value, here)
    elif isinstance(doc, list):
        for index, value in enumerate(doc):
            here = f"{prefix}/{index}"
            yield here
            yield from pointers(value, here)


def resolve(doc: Any, pointer: str) -> Any:
    for token in pointer.split("/")[1:]:
        token = token.replace("~1", "/").replace("~0", "~")
        doc = doc[int(token)] if isinstance(doc, list) else doc[token]
    return doc


def containers(value: Any) -> Iterator[int]:
    if isinstance(value, dict | list):
        yield id(value)
        for child in value.values() if isinstance(value, dict) else value:
            yield from containers(child)


operations = st.fixed_dictionaries(
    {
        "op": st.sampled_from(["add", "remove", "replace", "move", "copy", "test"]),
        "path": st.sampled_from(["", "/a", "/b", "/a/0", "/a/-", "/a/b", "/~0", "/~1/a"]),
        "from": st.sampled_from(["/a", "/b", "/a/0", "/~1"]),
        "value": json_values,
    }
)


@PROPERTIES
@given(documents, st.lists(operations, max_size=4))
def test_inputs_are_never_mutated_or_shared(
    doc: dict[str, Any], patch: list[dict[str, Any]]
) -> None:
    doc_before, patch_before = copy.deepcopy(doc), copy.deepcopy(patch)
    try:
        result = json_patch.apply_json_patch(doc, patch)
    except errors.StatusError as exc:
        result, code = None, exc.code
    else:
        code = 200
    assert code in (200, 422)
    assert doc == doc_before
    assert patch == patch_before
    assert set(containers(result)).isdisjoint(set(containers(doc)) | set(containers(patch)))


@PROPERTIES
@given(documents, st.data())
def test_every_value_tests_equal_to_itself(doc: dict[str, Any], data: st.DataObject) -> None:
    paths = list(pointers(doc))
    if not paths:
        return
    path = data.draw(st.sampled_from(paths))
    patch = [{"op": "test", "path": path, "value": resolve(doc, path)}]
    assert json_patch.apply_json_patch(doc, patch) == doc


@PROPERTIES
@given(documents, json_values, keys)
def test_add_then_remove_is_a_no_op(doc: dict[str, Any], value: Any, key: str) -> None:
    if key in doc:
        return
    path = "/" + escape(key)
    added = json_patch.apply_json_patch(doc, [{"op": "add", "path": path, "value": value}])
    assert merge_patch.json_equal(resolve(added, path), value)
    assert json_patch.apply_json_patch(added, [{"op": "remove", "path": path}]) == doc


@PROPERTIES
@given(documents, documents)
def test_replacing_each_member_reaches_the_target(
    doc: dict[str, Any], target: dict[str, Any]
) -> None:
    patch: list[dict[str, Any]] = [
        {"op": "remove", "path": "/" + escape(k)} for k in doc if k not in target
    ]
    patch += [{"op": "replace", "path": "/" + escape(k), "value": v} for k, v in target.items()]
    assert json_patch.apply_json_patch(doc, patch) == target


def test_huge_indices_do_not_apply() -> None:
    status = failure({"a": [1]}, [{"op": "remove", "path": "/a/" + "9" * 5000}])
    assert status.code == 422

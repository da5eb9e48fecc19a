"""Request-body depth limits and YAML decoding (machinery/bodies.py)."""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from minikcp.machinery import bodies
from minikcp.machinery.errors import StatusError


def nested(depth: int, leaf: Any = 1) -> Any:
    value = leaf
    for level in range(depth):
        value = {"a": value} if level % 2 else [value]
    return value


def reference_depth(value: Any) -> int:
    if isinstance(value, dict):
        return 1 + max((reference_depth(v) for v in value.values()), default=0)
    if isinstance(value, list):
        return 1 + max((reference_depth(v) for v in value), default=0)
    return 0


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**63), 2**63 - 1) | st.text(max_size=3),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=2), inner, max_size=3)
    ),
    max_leaves=30,
)


@given(json_values, st.integers(min_value=0, max_value=8))
def test_exceeds_agrees_with_the_recursive_depth(value: Any, limit: int) -> None:
    assert bodies.exceeds(value, limit) == (reference_depth(value) > limit)


@given(json_values, st.integers(min_value=0, max_value=8))
def test_the_raw_precheck_never_lets_a_deep_body_through(value: Any, limit: int) -> None:
    body = orjson.dumps(value)
    if reference_depth(value) > limit:
        assert bodies.may_exceed(body, limit)


@pytest.mark.parametrize(
    ("depth", "refused"), [(1, False), (150, False), (200, False), (201, True), (1000, True)]
)
def test_check_depth(depth: int, refused: bool) -> None:
    value = nested(depth)
    if depth < 500:  # the recursive reference itself cannot go deeper
        assert reference_depth(value) == depth
    body = orjson.dumps(value) if depth < 250 else None  # orjson encodes at most 254 levels
    if refused:
        with pytest.raises(StatusError) as caught:
            bodies.check_depth(value, body)
        assert (caught.value.code, caught.value.message) == (
            400,
            "the request body nests more than 200 levels deep",
        )
    else:
        assert bodies.check_depth(value, body) is value


def test_strings_with_brackets_only_make_the_precheck_walk() -> None:
    body = b'{"a":"' + b"{" * 500 + b'"}'
    assert bodies.may_exceed(body)
    assert bodies.check_depth(orjson.loads(body), body) == {"a": "{" * 500}


DEEP_BLOCK = (
    b"x:\n" + b"".join(b" " * (i + 1) + b"a:\n" for i in range(300)) + b" " * 301 + b"b: 1\n"
)
DEEP_FLOW = b"x: " + b"[" * 3000 + b"]" * 3000
TOO_DEEP = "the request body nests more than 200 levels deep"


@pytest.mark.parametrize(
    ("text", "messages"),
    [
        (b"a: [", ("error decoding YAML: ",)),
        (DEEP_BLOCK, (TOO_DEEP,)),
        # libyaml parses this one; the pure-Python parser would run out of stack first.
        (DEEP_FLOW, (TOO_DEEP, "error decoding YAML: nested more than 200 levels deep")),
    ],
    ids=["malformed", "deep-block", "deep-flow"],
)
def test_bad_yaml_is_a_bad_request(text: bytes, messages: tuple[str, ...]) -> None:
    with pytest.raises(StatusError) as caught:
        bodies.load_yaml(text)
    assert caught.value.code == 400
    assert caught.value.message.startswith(messages)


def test_yaml_within_the_limit_decodes() -> None:
    assert bodies.load_yaml(b"metadata:\n  name: x\ndata:\n  a: '1'\n") == {
        "metadata": {"name": "x"},
        "data": {"a": "1"},
    }

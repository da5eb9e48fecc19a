"""Duplicate keys as sigs.k8s.io/json's strict decoding reports them (kubernetes_patch_test.go)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from minikcp.machinery import strict_json


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (b'{"a":1}', []),
        (b"[]", []),
        (b'{"a":1,"a":2}', ['duplicate field "a"']),
        # Upstream's own case: nested objects and list items give dotted and indexed paths.
        (
            b'{"a":1,"b":2,"a":3,"b":4,"C":5,"C":6,"e":[{"f":1,"f":2}]}',
            [
                'duplicate field "a"',
                'duplicate field "b"',
                'duplicate field "C"',
                'duplicate field "e[0].f"',
            ],
        ),
        (
            b'{"d":{"a":1,"a":2,"b":1,"b":2,"c":1,"c":2}}',
            ['duplicate field "d.a"', 'duplicate field "d.b"', 'duplicate field "d.c"'],
        ),
        # Keys differing only in case are different keys (case-sensitive decoding).
        (b'{"data":{"A":"1","a":"2"}}', []),
    ],
)
def test_duplicate_fields(body: bytes, expected: list[str]) -> None:
    assert strict_json.duplicate_fields(body) == expected


def test_json_patch_strict_errors() -> None:
    body = (
        b'[{"op":"add","path":"/a","value":{"x":1,"x":2}},'
        b'{"op":"remove","op":"remove","path":"/b","extra":true}]'
    )
    assert strict_json.json_patch_strict_errors(body) == [
        'json patch duplicate field "[0].value.x"',
        'json patch duplicate field "[1].op"',
        'json patch unknown field "[1].extra"',
    ]
    assert strict_json.json_patch_strict_errors(b'[{"op":"test","path":"/a","value":1}]') == []


# JSON texts built from key/value pairs, so that keys may repeat; strings may need escapes.
_keys = st.sampled_from(["a", "b", "A", "data", 'q"uote', "back\\slash", "é", "\u2028", ""])
_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=4),
    _keys,
)


def _text(value: Any) -> str:
    if isinstance(value, tuple):  # an object as its pairs
        return "{" + ",".join(f"{json.dumps(k)}:{_text(v)}" for k, v in value) + "}"
    if isinstance(value, list):
        return "[" + ",".join(_text(v) for v in value) + "]"
    return json.dumps(value, ensure_ascii=False)


_documents = st.recursive(
    _scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.lists(st.tuples(_keys, inner), max_size=5).map(tuple),
    ),
    max_leaves=20,
)


@settings(max_examples=500)
@given(_documents)
def test_duplicate_fields_agrees_with_the_exact_walk(document: Any) -> None:
    body = _text(document).encode()
    assert strict_json.duplicate_fields(body) == strict_json.exact_duplicate_fields(body)


@pytest.mark.parametrize(
    "body",
    [
        b'{"data":{"key":"x"},"data":{"key":"y"}}',  # a repeated key with strings below it
        b'{"a":"\\"","a":1}',  # escapes: the fast path stands aside
        b'{"a":NaN,"a":1}',  # not JSON to orjson: the exact walk decides
        b'{"a":1,"b":{"c":[{"d":"1","d":"2"}]}}',
        b'{"metadata":{"labels":{"x":"1"}},"data":{"key":"v"}}',
    ],
)
def test_duplicate_fields_fast_path_table(body: bytes) -> None:
    assert strict_json.duplicate_fields(body) == strict_json.exact_duplicate_fields(body)

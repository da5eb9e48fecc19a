"""Duplicate keys as sigs.k8s.io/json's strict decoding reports them (kubernetes_patch_test.go)."""

from __future__ import annotations

import pytest

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

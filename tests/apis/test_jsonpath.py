"""The client-go JSONPath dialect (cases re-expressed from k8s.io/client-go util/jsonpath tests)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from minikcp.apis import jsonpath

STORE = {
    "Name": "jsonpath",
    "Book": [
        {"Category": "reference", "Author": "Nigel Rees", "Title": "Sayings", "Price": 8.95},
        {"Category": "fiction", "Author": "Evelyn Waugh", "Title": "Sword", "Price": 12.99},
        {"Category": "fiction", "Author": "Herman Melville", "Title": "Moby Dick", "Price": 8.99},
    ],
    "Bicycle": [
        {"Color": "red", "Price": 19.95, "IsNew": True},
        {"Color": "green", "Price": 20.01, "IsNew": False},
    ],
    "Labels": {"engieer": 10, "web/html": 15, "k8s-app": 20},
    "Employees": {"jason": "manager", "dan": "clerk"},
}
POINTS = [
    {"id": "i1", "x": 4, "y": -5},
    {"id": "i2", "x": -2, "y": -5, "z": 1},
    {"id": "i3", "x": 8, "y": 3},
    {"id": "i4", "x": -6, "y": -1},
    {"id": "i5", "x": 0, "y": 2, "z": 1},
    {"id": "i6", "x": 1, "y": 4},
    {"id": "i7", "x": None, "y": 4},
]
POD = {
    "metadata": {
        "name": "web",
        "labels": {"app.kubernetes.io/name": "web"},
        "annotations": {"a.b/c": "d"},
    },
    "status": {
        "conditions": [
            {"type": "PodScheduled", "status": "True"},
            {"type": "Ready", "status": "False"},
        ],
        "containerStatuses": [{"name": "a", "restartCount": 2}, {"name": "b", "restartCount": 0}],
    },
}


@pytest.mark.parametrize(
    ("path", "data", "expected"),
    [
        (".Name", STORE, ["jsonpath"]),
        ("[1,3,4]", [0, 1, 2, 3, 4], [1, 3, 4]),
        ("[0:2]", ["Monday", "Tuesday", "Wednesday"], ["Monday", "Tuesday"]),
        ("[?(@<5)]", [2, 6, 3, 7], [2, 3]),
        ("$.Labels.web/html", STORE, [15]),
        (".Labels.k8s-app", STORE, [20]),
        ("$.Employees.jason", STORE, ["manager"]),
        (".Bicycle[*].Color", STORE, ["red", "green"]),
        (".Book[*].Author", STORE, ["Nigel Rees", "Evelyn Waugh", "Herman Melville"]),
        ("..Price", STORE, [8.95, 12.99, 8.99, 19.95, 20.01]),
        ("...Price", STORE, [8.95, 12.99, 8.99, 19.95, 20.01]),
        (".Book[-1:]", STORE, [STORE["Book"][2]]),  # type: ignore[index]
        ("..Book[2]", STORE, [STORE["Book"][2]]),  # type: ignore[index]
        (".Bicycle[?(@.IsNew==true)].Color", STORE, ["red"]),
        (".Book[?(@.Price>10.0)].Title", STORE, ["Sword"]),
        (".Book[?(@.Category=='fiction')].Title", STORE, ["Sword", "Moby Dick"]),
        ("[?(@.z)].id", POINTS, ["i2", "i5"]),
        ("[0]['id']", POINTS, ["i1"]),
        ("[-1]['x']", POINTS, [None]),
        ("[?(@.x>=4)].id", POINTS[:-1], ["i1", "i3"]),
        ("[?(@.y<=-5)].id", POINTS, ["i1", "i2"]),
        ("[?(@.x!=0)].id", POINTS[:-1], ["i1", "i2", "i3", "i4", "i6"]),
        ("[::3].id", POINTS, ["i1", "i4", "i7"]),
        ("[]", [5, 6], [5]),  # an empty index reads as [0]
        ("", {"a": 1}, [{"a": 1}]),
        (".hello", STORE, []),
        (".Name.x", STORE, []),
        ('"text"', STORE, ["text"]),
        # what CRD printer columns use
        ('.status.conditions[?(@.type=="Ready")].status', POD, ["False"]),
        (".status.conditions[?(@.type=='Missing')].status", POD, []),
        (".status.containerStatuses[*].restartCount", POD, [2, 0]),
        (".status.containerStatuses[0].name", POD, ["a"]),
        (".metadata.labels.app\\.kubernetes\\.io/name", POD, ["web"]),
        (".metadata.annotations['a\\.b/c']", POD, ["d"]),
        # a bracketed key is re-read as a dotted path, as upstream does
        (".metadata.labels['app.kubernetes.io/name']", POD, []),
        (".metadata.*", {"metadata": {"x": 1, "y": [2]}}, [1, [2]]),
        (".spec.replicas", {"spec": None}, []),
        (".spec[0]", {"spec": None}, []),
    ],
)
def test_find(path: str, data: Any, expected: list[Any]) -> None:
    assert jsonpath.compile_path(path).find(data) == expected


@pytest.mark.parametrize(
    ("path", "data"),
    [
        (".Labels[0]", STORE),  # not a list
        (".Book[5]", STORE),  # out of range
        (".Book[?(@.Price<>10)]", STORE),  # unknown operator
        (".Book[?(@.Price=='cheap')]", STORE),  # a number against a string
        (".Bicycle[?(@.IsNew<true)]", STORE),  # booleans do not order
        ("[?(@.x>1.5)]", POINTS[:-1]),  # ints do not compare with floats
        (".Book[?(@.Price>10)]", STORE),  # nor floats with ints
        ("[?(@.x>=4)]", POINTS),  # null does not compare
        ("[?(@.id)]", STORE),  # filtering a map
        (".Book[::0]", STORE),
        ("hello", STORE),  # an identifier other than true/false
    ],
)
def test_evaluation_errors(path: str, data: Any) -> None:
    compiled = jsonpath.compile_path(path)
    with pytest.raises(jsonpath.JSONPathError):
        compiled.find(data)


def test_zero_length_slice_ends_evaluation() -> None:
    # [1:1] asks for nothing, and upstream stops at the first input that does.
    assert jsonpath.compile_path("[*][1:1]").find([[1, 2], [3, 4]]) == []


@pytest.mark.parametrize(
    "path",
    [
        "...........Price",  # multiple recursive descent
        ".a[0",
        ".a[x]",
        ".a[?(@.b==1]",
        ".a[?(@.b==1)",
        ".a[-]",
        "'unterminated",
        "!a",
        ".a\n",
        "1.2.3",
    ],
)
def test_parse_errors(path: str) -> None:
    with pytest.raises(jsonpath.JSONPathError):
        jsonpath.compile_path(path)


_KEYS = st.text(alphabet="abcxyz_-/", min_size=1, max_size=6)
_TREES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=3),
    lambda children: st.dictionaries(_KEYS, children, max_size=3),
    max_leaves=12,
)


@given(_TREES, st.lists(_KEYS, min_size=1, max_size=4))
def test_dotted_fields_walk_nested_maps(tree: Any, keys: list[str]) -> None:
    expected: list[Any] = [tree]
    for key in keys:
        node = expected[0] if expected else None
        expected = [node[key]] if isinstance(node, dict) and key in node else []
    path = "".join("." + k for k in keys)
    assert jsonpath.compile_path(path).find(tree) == expected
    # the same walk applied to each element of a list, through the wildcard
    assert jsonpath.compile_path("[*]" + path).find([tree, tree]) == expected * 2

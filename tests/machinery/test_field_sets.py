"""Field sets: element spelling, set algebra and the FieldsV1 wire format."""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from minikcp.machinery import field_sets
from minikcp.machinery.field_sets import FieldSet, Path


def f(*names: str) -> Path:
    return tuple("f:" + n for n in names)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (None, "null"),
        (True, "true"),
        (80, "80"),
        (80.0, "80"),
        (2.5, "2.5"),
        (1e-7, "1e-7"),
        (1e21, "1e+21"),
        (0.00001, "0.00001"),
        ("a<b>&c", '"a\\u003cb\\u003e\\u0026c"'),
        ('q"\\\n\x01', '"q\\"\\\\\\n\\u0001"'),
        ("💻", '"💻"'),
        ({"protocol": "TCP", "containerPort": 80}, '{"containerPort":80,"protocol":"TCP"}'),
        ([1, "a", [None]], '[1,"a",[null]]'),
    ],
)
def test_encode_json_spells_values_like_go(value: Any, expected: str) -> None:
    assert field_sets.encode_json(value) == expected


@pytest.mark.parametrize(
    ("key", "canonical"),
    [
        ("f:name", "f:name"),
        ("f:", "f:"),
        ('k:{ "protocol":"udp","port":443}', 'k:{"port":443,"protocol":"udp"}'),
        ('k:{"port":443.0}', 'k:{"port":443}'),
        ("v: 3", "v:3"),
        ('v:"aa"', 'v:"aa"'),
        ("i:+4", "i:4"),
        ("x:whatever", None),  # a kind from a future version: skipped
    ],
)
def test_parse_element_canonicalises(key: str, canonical: str | None) -> None:
    assert field_sets.parse_element(key) == canonical


@pytest.mark.parametrize("key", ["f", "fx", "k:[1]", "k:{", "v:", "v:1 2", "i:one"])
def test_parse_element_rejects_malformed_keys(key: str) -> None:
    with pytest.raises(ValueError):
        field_sets.parse_element(key)


@pytest.mark.parametrize(
    ("path", "text"),
    [
        (f("spec", "replicas"), ".spec.replicas"),
        (
            (*f("spec", "containers"), 'k:{"name":"nginx"}', "f:image"),
            '.spec.containers[name="nginx"].image',
        ),
        (
            (*f("ports"), 'k:{"containerPort":80,"protocol":"TCP"}'),
            '.ports[containerPort=80,protocol="TCP"]',
        ),
        ((*f("metadata", "finalizers"), 'v:"a\\nb"'), '.metadata.finalizers[="a\\nb"]'),
        ((*f("args"), "i:2"), ".args[2]"),
    ],
)
def test_path_text_matches_upstream_messages(path: Path, text: str) -> None:
    assert field_sets.path_text(path) == text


@pytest.mark.parametrize(
    ("a", "b", "difference", "recursive_difference"),
    [
        ([f("a")], [f("a")], [], []),
        ([f("a", "b", "c")], [f("a", "b", "c")], [], []),
        ([f("a", "b", "c"), f("b", "b", "c")], [f("a", "b", "c")], [f("b", "b", "c")], None),
        ([f("a")], [f("a", "aa")], [f("a")], [f("a")]),  # a parent survives its child
        ([f("a", "b", "c")], [f("a")], [f("a", "b", "c")], []),
        (
            [f("a", "aa", "aab"), f("a", "ab", "aba")],
            [f("a", "aa")],
            [f("a", "aa", "aab"), f("a", "ab", "aba")],
            [f("a", "ab", "aba")],
        ),
    ],
)
def test_difference_and_recursive_difference(
    a: list[Path], b: list[Path], difference: list[Path], recursive_difference: list[Path] | None
) -> None:
    left, right = FieldSet.of(*a), FieldSet.of(*b)
    assert left.difference(right) == FieldSet.of(*difference)
    expected = difference if recursive_difference is None else recursive_difference
    assert left.recursive_difference(right) == FieldSet.of(*expected)


def test_union_intersection_has_and_paths() -> None:
    a = FieldSet.of(f("spec", "replicas"), f("metadata", "labels", "app"))
    b = FieldSet.of(f("spec", "replicas"), f("spec", "paused"))
    both = a.union(b)
    assert list(both.paths()) == [
        f("metadata", "labels", "app"),
        f("spec", "paused"),
        f("spec", "replicas"),
    ]
    assert a.intersection(b) == FieldSet.of(f("spec", "replicas"))
    assert both.has(f("spec", "paused"))
    assert not both.has(f("spec"))  # a parent is not a member
    assert not both.has(())
    assert len(both) == 3
    assert not FieldSet()
    assert FieldSet.of(f("x"))


# Golden data from structured-merge-diff's serialize_test.go: decoding then encoding gives the
# same bytes back, so key order (fields, keys, values, indexes) and "." handling match upstream.
GOLDEN = [
    '{"f:aaa":{},"f:aab":{},"f:aac":{},"f:aad":{},"f:aae":{},"f:aaf":{},'
    '"k:{\\"name\\":\\"first\\"}":{},"k:{\\"name\\":\\"second\\"}":{},'
    '"k:{\\"port\\":443,\\"protocol\\":\\"tcp\\"}":{},"k:{\\"port\\":443,\\"protocol\\":\\"udp\\"}":{},'
    '"v:1":{},"v:2":{},"v:3":{},"v:\\"aa\\"":{},"v:\\"ab\\"":{},"v:true":{},'
    '"i:1":{},"i:2":{},"i:3":{},"i:4":{}}',
    '{"f:aaa":{"k:{\\"name\\":\\"second\\"}":{"v:3":{"f:aab":{}}},"v:3":{},"v:true":{}},'
    '"f:aab":{"f:aaa":{},"f:aaf":{"k:{\\"port\\":443,\\"protocol\\":\\"udp\\"}":'
    '{"k:{\\"port\\":443,\\"protocol\\":\\"tcp\\"}":{}}},"k:{\\"name\\":\\"first\\"}":{}},'
    '"i:1":{"i:3":{"f:aaf":{}}},"i:2":{"f:aae":{}}}',
    '{"f:spec":{".":{},"f:apps":{".":{},"k:{\\"name\\":\\" app-💻\\"}":{".":{},"f:container":'
    '{".":{},"f:image":{},"f:name":{},"f:ports":{".":{},"k:{\\"name\\":\\"port 🔑\\"}":'
    '{".":{},"f:containerPort":{},"f:name":{}}}},"f:name":{}}}}}',
]


@pytest.mark.parametrize("text", GOLDEN)
def test_fields_v1_golden_round_trip_is_byte_exact(text: str) -> None:
    decoded = field_sets.decode_fields_v1(orjson.loads(text))
    assert orjson.dumps(field_sets.encode_fields_v1(decoded)).decode() == text


def test_fields_v1_normalises_order_and_spelling() -> None:
    messy = {"v: 3": {}, "i:1": {}, 'k:{ "protocol":"udp","port":443}': {}, "f:b": {}, "f:a": {}}
    encoded = field_sets.encode_fields_v1(field_sets.decode_fields_v1(messy))
    assert list(encoded) == ["f:a", "f:b", 'k:{"port":443,"protocol":"udp"}', "v:3", "i:1"]


def test_fields_v1_dot_marks_an_owned_node() -> None:
    data = {"f:labels": {".": {}, "f:app": {}}, "f:spec": {"f:replicas": {}}, "f:x": {".": {}}}
    fields = field_sets.decode_fields_v1(data)
    assert set(fields.paths()) == {f("labels"), f("labels", "app"), f("spec", "replicas"), f("x")}
    assert field_sets.encode_fields_v1(fields) == {
        "f:labels": {".": {}, "f:app": {}},
        "f:spec": {"f:replicas": {}},
        "f:x": {},
    }


def test_fields_v1_drops_unknown_element_kinds() -> None:
    fields = field_sets.decode_fields_v1({"f:a": {"z:future": {}}, "z:top": {"f:b": {}}})
    assert list(fields.paths()) == [f("a")]


@pytest.mark.parametrize(
    "data",
    [[], {"f:a": 1}, {"f:a": {"k:{": {}}}, {"q": {}}],
)
def test_fields_v1_rejects_malformed_data(data: Any) -> None:
    with pytest.raises(ValueError):
        field_sets.decode_fields_v1(data)


# -- properties ---------------------------------------------------------------------------------

# A fixed pool of every element kind (including awkward JSON) keeps generation cheap.
_ELEMENTS = [
    field_sets.field_element("a"),
    field_sets.field_element("b.c"),
    field_sets.field_element(""),
    field_sets.key_element({"name": "x<y"}),
    field_sets.key_element({"port": 80, "protocol": "TCP"}),
    field_sets.key_element({"port": 80, "protocol": "UDP"}),
    field_sets.value_element('é"\\'),
    field_sets.value_element(1),
    field_sets.value_element(1.5),
    field_sets.value_element(True),
    field_sets.index_element(0),
    field_sets.index_element(10),
]
_elements = st.sampled_from(_ELEMENTS)
_paths = st.lists(_elements, min_size=1, max_size=4).map(tuple)
_sets = st.lists(_paths, max_size=10).map(lambda paths: FieldSet.of(*paths))


@settings(max_examples=60, deadline=None)
@given(_sets)
def test_fields_v1_round_trip(fields: FieldSet) -> None:
    encoded = field_sets.encode_fields_v1(fields)
    again = field_sets.decode_fields_v1(orjson.loads(orjson.dumps(encoded)))
    assert again == fields
    assert field_sets.encode_fields_v1(again) == encoded


@settings(max_examples=60, deadline=None)
@given(_sets, _sets)
def test_set_algebra_laws(a: FieldSet, b: FieldSet) -> None:
    in_a, in_b = set(a.paths()), set(b.paths())
    assert set(a.union(b).paths()) == in_a | in_b
    assert set(a.intersection(b).paths()) == in_a & in_b
    assert set(a.difference(b).paths()) == in_a - in_b
    assert a.difference(a.union(b)).is_empty()
    assert set(a.recursive_difference(b).paths()) == {
        path for path in in_a if not any(path[:i] in in_b for i in range(1, len(path) + 1))
    }


@settings(max_examples=60, deadline=None)
@given(_sets, _sets)
def test_issubset_is_path_inclusion(a: FieldSet, b: FieldSet) -> None:
    in_a, in_b = set(a.paths()), set(b.paths())
    assert a.issubset(b) == (in_a <= in_b)
    assert a.issubset(a.union(b))


@settings(max_examples=100, deadline=None)
@given(_sets, _sets)
def test_set_operations_encode_like_a_set_built_from_their_paths(a: FieldSet, b: FieldSet) -> None:
    # Includes the shortcuts (nothing to remove, a subset): same wire form as a fresh build.
    unrelated = FieldSet.of(("f:~unused",), ("f:~other", "f:x"))
    for out in (
        a.difference(b),
        a.recursive_difference(b),
        a.difference(unrelated),
        a.recursive_difference(unrelated),
        a.union(b),
    ):
        rebuilt = FieldSet.of(*out.paths())
        assert orjson.dumps(field_sets.encode_fields_v1(out)) == orjson.dumps(
            field_sets.encode_fields_v1(rebuilt)
        )
    assert a.difference(unrelated) == a and a.recursive_difference(unrelated) == a


def test_a_set_keeps_its_encoding_and_hands_out_fresh_dicts() -> None:
    fields = FieldSet.of(f("data", "key"), f("metadata", "labels"))
    first = field_sets.encode_fields_v1(fields)
    first["f:data"]["f:other"] = {}  # the caller owns what it got
    second = field_sets.encode_fields_v1(fields)
    assert second == {"f:data": {"f:key": {}}, "f:metadata": {"f:labels": {}}}
    assert list(second) == ["f:data", "f:metadata"]
    fields.insert(f("data", "more"))  # building further drops the kept encoding
    assert field_sets.encode_fields_v1(fields) == {
        "f:data": {"f:key": {}, "f:more": {}},
        "f:metadata": {"f:labels": {}},
    }

"""Schema-aware field sets, merge, compare and validation on real Kubernetes schemas."""

from __future__ import annotations

from pathlib import Path as FilePath
from typing import Any

import kubernetes_validate
import orjson
import pytest

from minikcp.machinery import apply_shapes, field_sets, structured_merge
from minikcp.machinery.field_sets import FieldSet, Path
from minikcp.machinery.schemas import SchemaNode, unknown

DEFS = orjson.loads(
    (
        FilePath(kubernetes_validate.__file__).parent
        / "kubernetes-json-schema/v1.32.0-local/_definitions.json"
    ).read_bytes()
)["$defs"]
DEPLOYMENT = apply_shapes.shape_of(SchemaNode.definition(DEFS, "io.k8s.api.apps.v1.Deployment"))
CONFIG_MAP = apply_shapes.shape_of(SchemaNode.definition(DEFS, "io.k8s.api.core.v1.ConfigMap"))
SCHEMALESS = apply_shapes.shape_of(unknown())


def f(*names: str) -> Path:
    return tuple("f:" + n for n in names)


CONTAINERS = f("spec", "template", "spec", "containers")
NGINX = (*CONTAINERS, 'k:{"name":"nginx"}')


def deployment() -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {
            "name": "web",
            "labels": {"app": "web"},
            "finalizers": ["example.com/a", "example.com/b"],
        },
        "spec": {
            "replicas": 3,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {
                    "containers": [
                        {
                            "name": "nginx",
                            "image": "nginx:1.25",
                            "args": ["--a", "--b"],
                            "ports": [
                                {"containerPort": 80},
                                {"containerPort": 53, "protocol": "UDP"},
                            ],
                            "env": [{"name": "A", "value": "1"}],
                            "resources": {},
                        },
                        {"name": "sidecar", "image": "busybox"},
                    ]
                },
            },
        },
    }


def test_field_set_of_a_deployment_is_upstreams_fields_v1() -> None:
    fields = structured_merge.field_set_of(deployment(), DEPLOYMENT)
    assert field_sets.encode_fields_v1(fields) == {
        "f:apiVersion": {},
        "f:kind": {},
        "f:metadata": {
            "f:finalizers": {'v:"example.com/a"': {}, 'v:"example.com/b"': {}},
            "f:labels": {"f:app": {}},
            "f:name": {},
        },
        "f:spec": {
            "f:replicas": {},
            "f:selector": {},
            "f:template": {
                "f:metadata": {"f:labels": {"f:app": {}}},
                "f:spec": {
                    "f:containers": {
                        'k:{"name":"nginx"}': {
                            ".": {},
                            "f:args": {},
                            "f:env": {'k:{"name":"A"}': {".": {}, "f:name": {}, "f:value": {}}},
                            "f:image": {},
                            "f:name": {},
                            "f:ports": {
                                'k:{"containerPort":53,"protocol":"UDP"}': {
                                    ".": {},
                                    "f:containerPort": {},
                                    "f:protocol": {},
                                },
                                'k:{"containerPort":80,"protocol":"TCP"}': {
                                    ".": {},
                                    "f:containerPort": {},
                                },
                            },
                            "f:resources": {},
                        },
                        'k:{"name":"sidecar"}': {".": {}, "f:image": {}, "f:name": {}},
                    }
                },
            },
        },
    }


PORT_80 = (*NGINX, "f:ports", 'k:{"containerPort":80,"protocol":"TCP"}')
FINALIZERS = f("metadata", "finalizers")


@pytest.mark.parametrize(
    ("what", "path", "owned"),
    [
        ("containers by name", NGINX, True),
        ("a field of a container", (*NGINX, "f:image"), True),
        ("ports by containerPort and protocol", PORT_80, True),
        ("the defaulted protocol is not set", (*PORT_80, "f:protocol"), False),
        ("env by name", (*NGINX, "f:env", 'k:{"name":"A"}', "f:value"), True),
        ("finalizers are a set", (*FINALIZERS, 'v:"example.com/b"'), True),
        ("labels are a granular map", f("metadata", "labels", "app"), True),
        ("a named map is not owned whole", f("metadata", "labels"), False),
        ("args are an atomic list", (*NGINX, "f:args"), True),
        ("no items of an atomic list", (*NGINX, "f:args", "i:0"), False),
        ("the selector is an atomic map", f("spec", "selector"), True),
        ("nothing inside an atomic map", f("spec", "selector", "matchLabels"), False),
        ("an empty map is owned", (*NGINX, "f:resources"), True),
        ("structs are not owned whole", f("spec", "template"), False),
        ("a list is not owned whole", CONTAINERS, False),
    ],
)
def test_field_set_of_a_deployment(what: str, path: Path, owned: bool) -> None:
    assert structured_merge.field_set_of(deployment(), DEPLOYMENT).has(path) is owned, what


def pod_spec(containers: list[dict[str, Any]]) -> dict[str, Any]:
    return {"spec": {"template": {"spec": {"containers": containers}}}}


# Re-expressed from structured-merge-diff's toset_test.go, on Kubernetes schemas.
@pytest.mark.parametrize(
    ("shape", "obj", "paths"),
    [
        (CONFIG_MAP, {"data": {"a": "1", "b": "2"}}, [f("data", "a"), f("data", "b")]),
        (CONFIG_MAP, {"data": {}}, [f("data")]),
        (CONFIG_MAP, {"data": None}, [f("data")]),
        (DEPLOYMENT, {"metadata": {"finalizers": []}}, []),
        (
            DEPLOYMENT,
            {"metadata": {"finalizers": ["a", "b", "a", "a"]}},
            [(*FINALIZERS, 'v:"a"'), (*FINALIZERS, 'v:"b"')],
        ),
        (  # duplicated items are owned, their contents are not
            DEPLOYMENT,
            pod_spec([{"name": "a", "image": "x"}, {"name": "a", "image": "y"}]),
            [(*CONTAINERS, 'k:{"name":"a"}')],
        ),
        (
            SCHEMALESS,
            {"spec": {"a": {"b": 1}, "l": [1, 2]}},
            [f("spec"), f("spec", "a"), f("spec", "a", "b"), f("spec", "l")],
        ),
    ],
)
def test_field_set_of_table(shape: apply_shapes.Shape, obj: Any, paths: list[Path]) -> None:
    assert structured_merge.field_set_of(obj, shape) == FieldSet.of(*paths)


@pytest.mark.parametrize(
    ("obj", "errors"),
    [
        (deployment(), []),
        ({"spec": {"replicaz": 1}}, [".spec.replicaz: field not declared in schema"]),
        (
            pod_spec([{"name": "a"}, {"name": "a"}]),
            ['.spec.template.spec.containers: duplicate entries for key [name="a"]'],
        ),
        (
            pod_spec([{"name": "a", "env": [{"value": "x"}]}]),
            [
                '.spec.template.spec.containers[name="a"].env: element 0: associative list with'
                ' keys has an element that omits all key fields ["name"] (and doesn\'t have'
                " default values for any key fields)"
            ],
        ),
        (
            {"metadata": {"finalizers": [{"a": 1}]}},
            [
                ".metadata.finalizers: element 0: associative list without keys has an element"
                " that's a map type"
            ],
        ),
        ({"metadata": {"labels": {"anything": "goes"}}}, []),
    ],
)
def test_validate_reports_upstream_typed_errors(obj: Any, errors: list[str]) -> None:
    assert apply_shapes.validate(obj, DEPLOYMENT) == errors


_SETS = SchemaNode(
    {},
    {
        "type": "object",
        "properties": {
            "numeric": {"type": "number"},
            "string": {"type": "string"},
            "bool": {"type": "boolean"},
            **{
                name: {"type": "array", "items": {"type": kind}, "x-kubernetes-list-type": "set"}
                for name, kind in [
                    ("setStr", "string"),
                    ("setBool", "boolean"),
                    ("setNumeric", "number"),
                ]
            },
        },
    },
)
_KEYED = SchemaNode(
    {},
    {
        "type": "object",
        "properties": {
            "list": {
                "type": "array",
                "x-kubernetes-list-type": "map",
                "x-kubernetes-list-map-keys": ["key", "id"],
                "items": {
                    "type": "object",
                    "properties": {
                        "key": {"type": "string"},
                        "id": {"type": "number"},
                        "value": {"type": "object", "additionalProperties": {"type": "string"}},
                        "bv": {"type": "boolean"},
                        "nv": {"type": "number"},
                    },
                },
            },
            "atomicList": {
                "type": "array",
                "items": {"type": "string"},
                "x-kubernetes-list-type": "atomic",
            },
        },
    },
)


def strs(letters: str) -> dict[str, Any]:
    """A set of one-letter strings: "abc" -> {"setStr": ["a", "b", "c"]}."""
    return {"setStr": list(letters)}


def keyed(*items: str, **extra: Any) -> dict[str, Any]:
    """Items of the keyed list: "a1" -> {"key": "a", "id": 1}, plus fields per item."""
    return {"list": [{"key": i[0], "id": int(i[1]), **extra.get(i, {})} for i in items]}


# Triplets (live, applied, merged) from structured-merge-diff's merge_test.go.
@pytest.mark.parametrize(
    ("schema", "live", "applied", "merged"),
    [
        (_SETS, {"numeric": 1}, {"numeric": 3.14159}, {"numeric": 3.14159}),
        (_SETS, {"string": "aoeu"}, {"bool": True}, {"string": "aoeu", "bool": True}),
        (_SETS, strs("abc"), strs("ab"), strs("abc")),
        (_SETS, strs("abc"), strs(""), strs("abc")),
        (_SETS, strs("ab"), strs("ba"), strs("ba")),
        (_SETS, strs("abcgf"), strs("cdef"), strs("abcgdef")),
        (_SETS, strs("abcd"), strs("defa"), strs("bcdefa")),
        (_SETS, strs("cdefghij"), strs("2h3e4kl"), strs("cdfg2hij3e4kl")),
        (_SETS, strs("abcdefghij"), strs("1b2h3e4kl"), strs("a1bcdfg2hij3e4kl")),
        (_SETS, strs("abb"), strs("b"), strs("ab")),
        (_SETS, strs("abcdec"), strs("1b2ed"), strs("a1bc2ecd")),
        (_SETS, strs("aabb"), strs("bcd"), strs("aabcd")),
        (_SETS, {"setBool": [True]}, {"setBool": [False]}, {"setBool": [True, False]}),
        (_SETS, {"setBool": [True, False, True]}, {"setBool": [True]}, {"setBool": [True, False]}),
        (
            _SETS,
            {"setNumeric": [1, 2, 3.14159]},
            {"setNumeric": [1, 2, 3]},
            {"setNumeric": [1, 2, 3.14159, 3]},
        ),
        (_KEYED, keyed("a1", "b1"), keyed("a1", "a2"), keyed("a1", "b1", "a2")),
        (_KEYED, keyed("a1", "b2", "c3"), keyed("c3", "a1"), keyed("b2", "c3", "a1")),
        (
            _KEYED,
            keyed("a1", a1={"value": {"a": "a"}}),
            keyed("a1", a1={"value": {"b": "b"}}),
            keyed("a1", a1={"value": {"a": "a", "b": "b"}}),
        ),
        (_KEYED, {"atomicList": ["a", "a", "a"]}, {"atomicList": None}, {"atomicList": None}),
        (_KEYED, {"atomicList": ["a", "b", "c"]}, {"atomicList": []}, {"atomicList": []}),
        (  # duplicated live items collapse into the applied one
            _KEYED,
            {
                "list": [
                    {"key": "a", "id": 1, "bv": True},
                    {"key": "b", "id": 2},
                    {"key": "a", "id": 1, "bv": False, "nv": 2},
                ]
            },
            keyed("a1", "c3", "b2", a1={"nv": 3}),
            keyed("a1", "c3", "b2", a1={"nv": 3}),
        ),
        (
            _KEYED,
            keyed("a1", "a1", a1={"nv": 1}),
            {},
            keyed("a1", "a1", a1={"nv": 1}),
        ),
    ],
)
def test_merge_table(schema: SchemaNode, live: Any, applied: Any, merged: Any) -> None:
    assert structured_merge.merge(live, applied, apply_shapes.shape_of(schema)) == merged


def test_merge_follows_the_deployment_schema() -> None:
    live = deployment()
    applied = {
        "metadata": {"labels": {"tier": "fe"}, "finalizers": ["example.com/c"]},
        "spec": {
            "selector": {"matchLabels": {"other": "x"}},
            "template": {
                "spec": {
                    "containers": [
                        {"name": "nginx", "args": ["--c"], "env": [{"name": "B", "value": "2"}]}
                    ]
                }
            },
        },
    }
    merged = structured_merge.merge(live, applied, DEPLOYMENT)
    assert merged["metadata"]["labels"] == {"app": "web", "tier": "fe"}
    assert merged["metadata"]["finalizers"] == ["example.com/a", "example.com/b", "example.com/c"]
    assert merged["spec"]["selector"] == {"matchLabels": {"other": "x"}}  # atomic: replaced
    nginx, sidecar = merged["spec"]["template"]["spec"]["containers"]
    assert nginx["args"] == ["--c"]  # atomic list: replaced
    assert nginx["env"] == [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}]
    assert nginx["image"] == "nginx:1.25"
    assert sidecar == {"name": "sidecar", "image": "busybox"}


def test_compare_reports_added_modified_removed() -> None:
    before = deployment()
    after = deployment()
    nginx = after["spec"]["template"]["spec"]["containers"][0]
    nginx["image"] = "nginx:1.26"
    nginx["env"].append({"name": "B", "value": "2"})
    del after["spec"]["template"]["spec"]["containers"][1]
    changes = structured_merge.compare(before, after, DEPLOYMENT)
    assert changes.modified == FieldSet.of((*NGINX, "f:image"))
    env_b = (*NGINX, "f:env", 'k:{"name":"B"}')
    assert changes.added == FieldSet.of(env_b, (*env_b, "f:name"), (*env_b, "f:value"))
    sidecar = (*CONTAINERS, 'k:{"name":"sidecar"}')
    assert changes.removed == FieldSet.of(sidecar, (*sidecar, "f:name"), (*sidecar, "f:image"))
    assert structured_merge.compare(before, deployment(), DEPLOYMENT).is_same()


def test_compare_owns_optional_maps_and_lists_whole_but_not_structs() -> None:
    changes = structured_merge.compare({}, deployment(), DEPLOYMENT)
    assert changes.added.has(f("metadata", "labels"))  # a Go map may be absent
    assert changes.added.has((*NGINX, "f:ports"))  # an omitempty list
    assert not changes.added.has(CONTAINERS)  # required: always present in Go
    assert not changes.added.has(f("spec", "template"))  # a struct


@pytest.mark.parametrize(
    ("a", "b", "same"),
    [
        (1, 1.0, True),
        (True, 1, False),
        ({"a": [1, {"b": None}]}, {"a": [1, {"b": None}]}, True),
        ([1, 2], [2, 1], False),
        ({"a": 1}, {"a": 1, "b": 2}, False),
        ("1", 1, False),
    ],
)
def test_equal_is_json_equality(a: Any, b: Any, same: bool) -> None:
    assert structured_merge.equal(a, b) is same


def test_remove_items_nulls_emptied_containers() -> None:
    obj = {"metadata": {"labels": {"a": "1"}, "name": "x"}, "data": {"k": "v", "j": "w"}}
    gone = FieldSet.of(f("metadata", "labels", "a"), f("data", "k"))
    assert structured_merge.remove_items(obj, gone, CONFIG_MAP) == {
        "metadata": {"labels": None, "name": "x"},
        "data": {"j": "w"},
    }

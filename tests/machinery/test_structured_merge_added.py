"""A comparison against an empty object (a create) takes a one-object walk: the same sets."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from minikcp.machinery import apply_shapes, structured_merge
from minikcp.machinery.schemas import SchemaNode
from tests.machinery.ssa_objects import CONFIG_MAP, DEFS, DEPLOYMENT, config_map, deployment

SERVICE = SchemaNode.definition(DEFS, "io.k8s.api.core.v1.Service")
SCHEMAS = {"Deployment": DEPLOYMENT, "ConfigMap": CONFIG_MAP, "Service": SERVICE}

_NAMES = [
    "name", "image", "ports", "containerPort", "port", "protocol", "labels", "spec", "replicas",
    "env", "value", "containers", "template", "metadata", "finalizers", "data", "x",
]  # fmt: skip
_SCALARS = st.none() | st.booleans() | st.integers(-2, 2) | st.sampled_from(["a", "b", "TCP"])
JSON: st.SearchStrategy[Any] = st.recursive(
    _SCALARS,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(_NAMES), inner, max_size=4)
    ),
    max_leaves=14,
)
_CONTAINER = st.fixed_dictionaries(
    {"name": st.sampled_from(["a", "b"]), "image": st.sampled_from(["x", "y"])},
    optional={
        "ports": st.lists(
            st.fixed_dictionaries(
                {"containerPort": st.sampled_from([80, 81])},
                optional={"protocol": st.sampled_from(["TCP", "UDP"])},
            ),
            max_size=3,
        ),
        "env": st.lists(st.fixed_dictionaries({"name": st.sampled_from(["A", "B"])}), max_size=3),
        "args": st.lists(st.sampled_from(["-v", "-q"]), max_size=3),
    },
)


def both_ways(obj: Any, kind: str) -> structured_merge.Comparison:
    shape = apply_shapes.shape_of(SCHEMAS[kind])
    short = structured_merge.compare({}, obj, shape)
    long = structured_merge.compare({}, obj, shape, shortcut=False)
    assert short.added == long.added
    assert list(short.added.paths()) == list(long.added.paths())
    assert not short.modified and not short.removed
    assert not long.modified and not long.removed
    return short


def test_a_new_config_map_adds_its_leaves_and_its_optional_maps() -> None:
    added = both_ways(config_map({"key": "x"}, labels={"group": "1"}), "ConfigMap").added
    assert [".".join(e[2:] for e in path) for path in added.paths()] == [
        "apiVersion", "data", "kind", "data.key", "metadata.labels", "metadata.name",
        "metadata.namespace", "metadata.labels.group",
    ]  # fmt: skip


def test_a_new_deployment_adds_its_container_by_name() -> None:
    added = both_ways(deployment(), "Deployment").added
    container = ("f:spec", "f:template", "f:spec", "f:containers", 'k:{"name":"nginx"}')
    assert added.has(container)
    assert added.has((*container, "f:image"))
    assert not added.has(("f:spec",))  # a struct is implied, not owned


@settings(max_examples=300, deadline=None)
@given(kind=st.sampled_from(sorted(SCHEMAS)), body=st.dictionaries(st.sampled_from(_NAMES), JSON))
def test_any_new_object_adds_what_the_long_way_adds(kind: str, body: dict[str, Any]) -> None:
    both_ways(body, kind)


@settings(max_examples=200, deadline=None)
@given(
    containers=st.lists(_CONTAINER, max_size=4),
    extra=st.dictionaries(st.sampled_from(_NAMES), JSON, max_size=3),
    labels=st.none() | st.dictionaries(st.sampled_from(["a", "b"]), st.sampled_from(["1", ""])),
)
def test_new_deployments_with_duplicate_and_keyed_items_agree(
    containers: list[dict[str, Any]], extra: dict[str, Any], labels: dict[str, str] | None
) -> None:
    obj = deployment()
    obj["spec"]["template"]["spec"]["containers"] = containers
    obj["metadata"]["labels"] = labels
    obj["spec"].update(extra)
    both_ways(obj, "Deployment")


@given(
    ports=st.lists(
        st.fixed_dictionaries(
            {"port": st.sampled_from([80, 443])},
            optional={"protocol": st.sampled_from(["TCP", "UDP"]), "name": st.just("p")},
        ),
        max_size=4,
    )
)
def test_new_services_keyed_by_port_and_protocol_agree(ports: list[dict[str, Any]]) -> None:
    both_ways({"apiVersion": "v1", "kind": "Service", "spec": {"ports": ports}}, "Service")

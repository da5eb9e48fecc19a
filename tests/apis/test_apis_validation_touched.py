"""A merge patch's result is decode-checked over what the patch names only: the same answers
(type errors, unknown fields in document order) as a check of the whole object."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from minikcp.apis import validation
from minikcp.apis.catalog import Catalog, ResourceType
from minikcp.machinery import merge_patch
from minikcp.machinery.errors import StatusError

CATALOG = Catalog.builtin()


def rt_of(group: str, plural: str) -> ResourceType:
    rt = CATALOG.by_resource(group, "v1", plural)
    assert rt is not None
    return rt


# Objects as the store holds them: every field known, every value of its type.
STORED: dict[str, tuple[ResourceType, dict[str, Any]]] = {
    "deployment": (
        rt_of("apps", "deployments"),
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {
                "name": "web",
                "namespace": "default",
                "resourceVersion": "7",
                "labels": {"app": "web"},
                "annotations": {"kcp.io/cluster": "root"},
                "managedFields": [
                    {
                        "manager": "kubectl",
                        "operation": "Update",
                        "apiVersion": "apps/v1",
                        "time": "2024-05-01T10:00:00Z",
                        "fieldsType": "FieldsV1",
                        "fieldsV1": {"f:spec": {"f:replicas": {}}},
                    }
                ],
            },
            "spec": {
                "replicas": 2,
                "selector": {"matchLabels": {"app": "web"}},
                "template": {
                    "metadata": {"labels": {"app": "web"}},
                    "spec": {"containers": [{"name": "c", "image": "nginx"}]},
                },
            },
            "status": {"replicas": 2},
        },
    ),
    "configmap": (
        rt_of("", "configmaps"),
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "cm", "namespace": "default", "labels": {"group": "1"}},
            "data": {"key": "value"},
        },
    ),
}

_NAMES = [
    "metadata", "spec", "status", "data", "labels", "replicas", "template", "containers",
    "name", "image", "selector", "paused", "bogus", "extra", "binaryData", "immutable",
]  # fmt: skip
_VALUES = st.none() | st.booleans() | st.integers(-1, 3) | st.sampled_from(["x", "web"])
PATCH: st.SearchStrategy[Any] = st.recursive(
    _VALUES,
    lambda inner: (
        st.dictionaries(st.sampled_from(_NAMES), inner, max_size=4) | st.lists(inner, max_size=2)
    ),
    max_leaves=12,
)


def checked(rt: ResourceType, obj: dict[str, Any], touched: Any) -> str | list[str]:
    try:
        return validation.checked_unknown_fields(rt, obj, touched=touched)
    except StatusError as exc:
        return exc.message


def both_ways(kind: str, patch: dict[str, Any]) -> str | list[str]:
    rt, stored = STORED[kind]
    patched = merge_patch.apply_merge_patch(stored, patch)
    short = checked(rt, patched, patch)
    assert short == checked(rt, patched, None)
    return short


def test_an_unknown_field_the_patch_adds_is_reported_where_it_is() -> None:
    patch = {"spec": {"template": {"spec": {"containers": [{"name": "c", "nope": 1}]}}}}
    assert both_ways("deployment", patch) == ["spec.template.spec.containers[0].nope"]


def test_a_wrong_type_the_patch_sets_is_the_same_decode_error() -> None:
    message = both_ways("deployment", {"spec": {"replicas": "three"}})
    assert isinstance(message, str)
    assert "cannot be handled as a Deployment" in message


def test_a_patch_of_data_alone_reports_nothing() -> None:
    assert both_ways("configmap", {"data": {"key": "other"}}) == []


def test_many_unknown_fields_are_collected_alike() -> None:
    patch = {"metadata": {f"k{i}": i for i in range(150)}, **{f"t{i}": i for i in range(10)}}
    found = both_ways("configmap", patch)
    assert found[0] == "metadata.k0" and found[-1] == "t9"


@settings(max_examples=300, deadline=None)
@given(kind=st.sampled_from(sorted(STORED)), patch=st.dictionaries(st.sampled_from(_NAMES), PATCH))
def test_any_merge_patch_is_checked_as_the_whole_object_would_be(
    kind: str, patch: dict[str, Any]
) -> None:
    both_ways(kind, patch)

"""Schema-level validation: Go decode errors for built-ins, structural errors, unknown fields."""

from __future__ import annotations

import base64
import copy
import time
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from minikcp.apis import validation
from minikcp.apis.catalog import Catalog, ResourceType
from minikcp.machinery.errors import Cause, StatusError

Obj = dict[str, Any]
CATALOG = Catalog.builtin()


def rt_of(group: str, plural: str) -> ResourceType:
    rt = CATALOG.by_resource(group, "v1", plural)
    assert rt is not None
    return rt


DEPLOYMENTS = rt_of("apps", "deployments")


def deployment() -> Obj:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "default", "labels": {"app": "web"}},
        "spec": {
            "replicas": 2,
            "selector": {"matchLabels": {"app": "web"}},
            "strategy": {
                "type": "RollingUpdate",
                "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": 1},
            },
            "template": {
                "metadata": {"labels": {"app": "web"}, "creationTimestamp": None},
                "spec": {
                    "containers": [
                        {
                            "name": "nginx",
                            "image": "nginx:1.25",
                            "ports": [{"containerPort": 80, "protocol": "TCP"}],
                            "env": [{"name": "MODE", "value": "prod"}],
                            "resources": {"limits": {"cpu": "500m", "memory": "128Mi"}},
                        }
                    ],
                    "volumes": [{"name": "data", "emptyDir": {}}],
                },
            },
        },
    }


def _set(path: str, value: Any) -> Callable[[Obj], None]:
    def mutate(obj: Obj) -> None:
        *parents, last = path.split(".")
        node: Any = obj
        for part in parents:
            node = node[int(part)] if isinstance(node, list) else node[part]
        if isinstance(node, list):
            node[int(last)] = value
        else:
            node[last] = value

    return mutate


PREFIX = 'Deployment in version "v1" cannot be handled as a Deployment: '


@pytest.mark.parametrize(
    ("path", "value", "message"),
    [
        (
            "spec.replicas",
            "3",
            "json: cannot unmarshal string into Go struct field DeploymentSpec.spec.replicas "
            "of type int32",
        ),
        (
            "spec.replicas",
            1.5,
            "json: cannot unmarshal number 1.5 into Go struct field DeploymentSpec.spec.replicas "
            "of type int32",
        ),
        (
            "spec.replicas",
            2**40,
            f"json: cannot unmarshal number {2**40} into Go struct field "
            "DeploymentSpec.spec.replicas of type int32",
        ),
        (
            "spec.paused",
            "yes",
            "json: cannot unmarshal string into Go struct field "
            "DeploymentSpec.spec.paused of type bool",
        ),
        (
            "spec.template",
            "x",
            "json: cannot unmarshal string into Go struct field DeploymentSpec.spec.template "
            "of type v1.PodTemplateSpec",
        ),
        (
            "spec.template.spec.containers",
            {},
            "json: cannot unmarshal object into Go struct field "
            "PodSpec.spec.template.spec.containers "
            "of type []v1.Container",
        ),
        (
            "spec.template.spec.containers.0.image",
            5,
            "json: cannot unmarshal number into Go struct field "
            "Container.spec.template.spec.containers.image of type string",
        ),
        (
            "metadata.labels",
            {"app": 1},
            "json: cannot unmarshal number into Go struct field ObjectMeta.metadata.labels "
            "of type string",
        ),
        (
            "metadata.name",
            ["a"],
            "json: cannot unmarshal array into Go struct field "
            "ObjectMeta.metadata.name of type string",
        ),
        (
            "spec.strategy.rollingUpdate.maxSurge",
            True,
            "json: cannot unmarshal bool into Go value of type int32",
        ),
        (
            "spec.template.spec.containers.0.resources.limits",
            {"cpu": "lots"},
            "quantities must match the regular expression "
            "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'",
        ),
        (
            "spec.template.spec.containers.0.resources.limits",
            {"cpu": "1GG"},
            "unable to parse quantity's suffix",
        ),
        (
            "metadata.creationTimestamp",
            "yesterday",
            'parsing time "yesterday" as "2006-01-02T15:04:05Z07:00": cannot parse "yesterday" '
            'as "2006"',
        ),
    ],
)
def test_decode_errors_of_builtins_are_400(path: str, value: Any, message: str) -> None:
    obj = deployment()
    _set(path, value)(obj)
    with pytest.raises(StatusError) as raised:
        validation.validate(DEPLOYMENTS, obj)
    assert raised.value.code == 400
    assert raised.value.reason == "BadRequest"
    assert raised.value.message == PREFIX + message


@pytest.mark.parametrize(
    ("path", "value"),
    [
        ("spec.replicas", None),
        ("spec.template.spec.containers.0.resources.limits", {"cpu": 2, "memory": "1.5Gi"}),
        ("spec.strategy.rollingUpdate.maxSurge", 3),
        ("metadata.creationTimestamp", "2024-05-01T10:00:00Z"),
        ("metadata.managedFields", [{"manager": "x", "fieldsV1": {"f:spec": {}}}]),
        ("spec.template.spec.containers.0.unknownField", {"anything": [1]}),
    ],
)
def test_values_that_decode(path: str, value: Any) -> None:
    obj = deployment()
    _set(path, value)(obj)
    assert validation.validate(DEPLOYMENTS, obj) == []
    assert validation.decode_error(DEPLOYMENTS, obj) is None


@pytest.mark.parametrize(
    ("value", "offset"),
    [("aGVsbG8=", None), ("aGVsbG8", 4), ("%%%%", 0), ("aGVs\nbG8=", None), ("a===", 1)],
)
def test_secret_data_must_be_base64(value: str, offset: int | None) -> None:
    secrets = rt_of("", "secrets")
    obj = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}, "data": {"k": value}}
    error = validation.decode_error(secrets, obj)
    if offset is None:
        assert error is None
    else:
        assert error is not None
        assert error.message.endswith(f"illegal base64 data at input byte {offset}")


def test_unknown_fields_paths() -> None:
    obj = deployment()
    obj["spec"]["foo"] = 1
    obj["spec"]["template"]["spec"]["containers"][0]["imagee"] = "x"
    obj["spec"]["template"]["spec"]["containers"][0]["ports"][0]["containerPortZ"] = 1
    obj["metadata"]["labelz"] = {}
    obj["extra"] = True
    assert validation.unknown_fields(DEPLOYMENTS, obj) == [
        "metadata.labelz",
        "spec.template.spec.containers[0].ports[0].containerPortZ",
        "spec.template.spec.containers[0].imagee",
        "spec.foo",
        "extra",
    ]


def test_maps_and_opaque_fields_are_never_unknown() -> None:
    obj = deployment()
    obj["metadata"]["annotations"] = {"any/key": "v"}
    obj["spec"]["template"]["spec"]["nodeSelector"] = {"disk": "ssd"}
    obj["metadata"]["managedFields"] = [{"fieldsV1": {"f:metadata": {"f:labels": {}}}}]
    assert validation.unknown_fields(DEPLOYMENTS, obj) == []


def test_unknown_fields_inside_crd_schemas() -> None:
    crds = rt_of("apiextensions.k8s.io", "customresourcedefinitions")
    schema = {
        "type": "object",
        "properties": {"spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}},
        "default": {"free": {"form": 1}},
        "typo": 1,
    }
    crd = {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {"versions": [{"name": "v1", "schema": {"openAPIV3Schema": schema}}]},
    }
    assert validation.unknown_fields(crds, crd) == ["spec.versions[0].schema.openAPIV3Schema.typo"]
    assert validation.validate(crds, crd) == []


def test_strict_and_warn_messages() -> None:
    error = validation.strict_decoding_error(["spec.foo", "spec.bar"])
    assert error.code == 400
    assert error.message == (
        'strict decoding error: unknown field "spec.foo", unknown field "spec.bar"'
    )
    assert validation.unknown_field_warnings(["spec.foo"]) == ['unknown field "spec.foo"']


WIDGET_SCHEMA = {
    "type": "object",
    "properties": {
        "apiVersion": {"type": "string"},
        "kind": {"type": "string"},
        "metadata": {"type": "object"},
        "spec": {
            "type": "object",
            "required": ["size"],
            "properties": {
                "replicas": {"type": "integer"},
                "ratio": {"type": "number"},
                "size": {"type": "string"},
                "tags": {"type": "array", "items": {"type": "string"}},
                "extra": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                "note": {"type": "string", "nullable": True},
            },
        },
    },
}
WIDGETS = ResourceType(
    group="example.com",
    version="v1",
    kind="Widget",
    plural="widgets",
    singular="widget",
    namespaced=True,
    definition="com.example.v1.Widget",
    builtin=False,
)
EXTENDED = CATALOG.extended([WIDGETS], schemas={"com.example.v1.Widget": WIDGET_SCHEMA})


def _widget(spec: Obj) -> Obj:
    return {
        "apiVersion": "example.com/v1",
        "kind": "Widget",
        "metadata": {"name": "w"},
        "spec": spec,
    }


@pytest.mark.parametrize(
    ("spec", "causes"),
    [
        ({"size": "s", "replicas": 2, "ratio": 1, "tags": ["a"], "note": None}, []),
        (
            {"size": "s", "replicas": "string"},
            [
                Cause(
                    "FieldValueTypeInvalid",
                    'Invalid value: "string": spec.replicas in body '
                    'must be of type integer: "string"',
                    "spec.replicas",
                )
            ],
        ),
        ({}, [Cause("FieldValueRequired", "Required value", "spec.size")]),
        (
            {"size": "s", "tags": ["a", 1]},
            [
                Cause(
                    "FieldValueTypeInvalid",
                    'Invalid value: "integer": spec.tags[1] in body '
                    'must be of type string: "integer"',
                    "spec.tags[1]",
                )
            ],
        ),
        ({"size": "s", "extra": {"free": ["form"]}}, []),
    ],
)
def test_structural_kinds_report_causes(spec: Obj, causes: list[Cause]) -> None:
    assert validation.validate(WIDGETS, _widget(spec), catalog=EXTENDED) == causes


def test_structural_unknown_fields_respect_preserve() -> None:
    obj = _widget({"size": "s", "extra": {"a": 1}, "bogus": 1})
    assert validation.unknown_fields(WIDGETS, obj, catalog=EXTENDED) == ["spec.bogus"]


@given(st.from_regex(r"[a-z][a-zA-Z]{0,12}", fullmatch=True))
def test_any_unknown_spec_field_is_reported(name: str) -> None:
    obj = deployment()
    known = {"replicas", "selector", "strategy", "template", "paused", "minReadySeconds"}
    known |= {"revisionHistoryLimit", "progressDeadlineSeconds"}
    obj["spec"][name] = 1
    expected = [] if name in known else [f"spec.{name}"]
    assert validation.unknown_fields(DEPLOYMENTS, obj) == expected


def test_validating_a_deployment_is_fast() -> None:
    obj = deployment()
    validation.validate(DEPLOYMENTS, obj)  # compile the shapes once
    runs = 200
    start = time.perf_counter()
    for _ in range(runs):
        validation.validate(DEPLOYMENTS, obj)
        validation.unknown_fields(DEPLOYMENTS, obj)
        validation.validate_kind(DEPLOYMENTS, obj, None)
    per_object = (time.perf_counter() - start) / runs
    assert per_object < 0.001, f"{per_object * 1e6:.0f} us per Deployment"


def test_validation_does_not_mutate() -> None:
    obj = deployment()
    before = copy.deepcopy(obj)
    validation.validate(DEPLOYMENTS, obj)
    validation.unknown_fields(DEPLOYMENTS, obj)
    validation.validate_kind(DEPLOYMENTS, obj, None)
    assert obj == before


@given(st.binary(max_size=64), st.integers(min_value=0, max_value=200))
def test_base64_errors_point_at_the_first_bad_character(data: bytes, where: int) -> None:
    secrets = rt_of("", "secrets")
    encoded = base64.b64encode(data).decode()
    obj: Obj = {"apiVersion": "v1", "kind": "Secret", "data": {"k": encoded}}
    assert validation.decode_error(secrets, obj) is None
    position = where % (len(encoded) + 1)
    obj["data"]["k"] = encoded[:position] + "!" + encoded[position:]
    error = validation.decode_error(secrets, obj)
    assert error is not None
    assert error.message.endswith(f"illegal base64 data at input byte {position}")


@pytest.mark.parametrize(
    "obj",
    [
        {
            "kind": "Pod",
            "metadata": {"name": "p", "bogus": 1},
            "spec": {
                "containers": [
                    {
                        "name": "c",
                        "image": "i",
                        "extra": {"x": 1},
                        "ports": [{"containerPort": 1, "z": 2}],
                    }
                ],
                "nodeSelector": {"a": "b"},
                "zz": None,
            },
        },
        {"metadata": {"labels": {"a": 1}}, "spec": {"containers": [{"name": "c", "nope": 1}]}},
        {"spec": {"containers": [{"name": 5}]}, "top": 1},
        {"metadata": {"managedFields": [{"fieldsV1": {"f:x": {}}, "weird": 1}]}},
    ],
)
def test_checked_unknown_fields_is_validate_then_unknown_fields(obj: dict[str, Any]) -> None:
    rt = rt_of("", "pods")
    expected: str | list[str]
    try:
        validation.validate(rt, obj)
        expected = validation.unknown_fields(rt, obj)
    except StatusError as exc:
        expected = exc.message
    try:
        got: str | list[str] = validation.checked_unknown_fields(rt, obj)
    except StatusError as exc:
        got = exc.message
    assert got == expected


def test_checked_unknown_fields_stops_collecting_where_unknown_fields_does() -> None:
    rt = rt_of("", "configmaps")
    obj = {"metadata": {f"k{i}": i for i in range(150)}, **{f"t{i}": i for i in range(10)}}
    assert validation.checked_unknown_fields(rt, obj) == validation.unknown_fields(rt, obj)

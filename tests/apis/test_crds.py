"""CRDs as served types, their name conditions, and their validation (pure functions)."""

from __future__ import annotations

import copy
import json
from typing import Any

import orjson
import pytest

from minikcp.apis import catalog, crds, validation_crd
from minikcp.registry import keys
from tests.e2e.crd_manifests import crd

Obj = dict[str, Any]


def _crd(**kwargs: Any) -> Obj:
    body: Obj = json.loads(crd(**kwargs))
    body["spec"]["names"]["listKind"] = body["spec"]["names"]["kind"] + "List"
    return body


def _established(body: Obj, created: str = "2026-01-01T00:00:00Z") -> Obj:
    body = copy.deepcopy(body)
    body["metadata"]["creationTimestamp"] = created
    body["status"] = {"conditions": [{"type": "Established", "status": "True"}]}
    return body


def test_a_crd_serves_one_type_per_served_version() -> None:
    body = _crd()
    v2 = copy.deepcopy(body["spec"]["versions"][0])
    v2.update(name="v2", storage=False, subresources={})
    v3 = dict(v2, name="v3alpha1", served=False)
    body["spec"]["versions"] += [v2, v3]
    served = crds.served_types(body)
    assert [rt.version for rt in served.types] == ["v1", "v2"]
    v1_type, v2_type = served.types
    assert v1_type.plural == "widgets" and v1_type.kind == "Widget"
    assert v1_type.short_names == ("wd",) and v1_type.categories == ("all",)
    assert [s.name for s in v1_type.subresources] == ["scale", "status"]
    assert v2_type.subresources == ()
    # Every version is stored as the storage version.
    assert v1_type.storage_gvk == v2_type.storage_gvk == ("example.com", "v1", "Widget")
    assert v1_type.definition == "com.example.v1.Widget"
    schema = served.schemas["com.example.v1.Widget"]
    assert schema["x-kubernetes-group-version-kind"] == [
        {"group": "example.com", "kind": "Widget", "version": "v1"}
    ]
    assert set(schema["properties"]) >= {"apiVersion", "kind", "metadata", "spec", "status"}
    assert "com.example.v1.WidgetList" in served.schemas
    assert v1_type.custom is not None
    assert orjson.loads(v1_type.custom.printer_columns)[0]["name"] == "Size"
    assert v1_type.custom.scale_paths == (".spec.replicas", ".status.replicas", ".status.selector")


def test_equal_crds_give_equal_types_and_other_schemas_do_not() -> None:
    first = crds.served_types(_crd()).types[0]
    assert crds.served_types(_crd()).types[0] == first
    other = crds.served_types(_crd(schema={"type": "object"})).types[0]
    assert other != first and other.plural == first.plural


def test_custom_resources_are_stored_under_kcp_customresources_keys() -> None:
    rt = crds.served_types(_crd()).types[0]
    cluster_scoped = crds.served_types(_crd(scope="Cluster")).types[0]
    assert keys.object_key(rt, "c1", "ns", "w") == (
        "/registry/example.com/widgets/customresources/c1/ns/w"
    )
    assert keys.list_prefix(rt, "c1") == "/registry/example.com/widgets/customresources/c1/"
    assert keys.list_prefix(rt, None) == "/registry/example.com/widgets/customresources/"
    assert keys.list_prefix(rt, "c1", "ns") == (
        "/registry/example.com/widgets/customresources/c1/ns/"
    )
    assert keys.object_key(cluster_scoped, "c1", "", "w") == (
        "/registry/example.com/widgets/customresources/c1/w"
    )
    parsed = keys.parse_key(rt, keys.object_key(rt, "c1", "ns", "w"))
    assert (parsed.cluster, parsed.namespace, parsed.name) == ("c1", "ns", "w")
    assert keys.cluster_of(cluster_scoped, keys.object_key(cluster_scoped, "c9", "", "w")) == "c9"


def test_extended_catalog_adds_established_kinds_and_never_shadows_built_ins() -> None:
    base = catalog.Catalog.builtin()
    assert crds.extended_catalog(base, []) is base
    ext = crds.extended_catalog(base, [_established(_crd())])
    rt = ext.resolve("example.com", "", "wd")
    assert rt is not None and rt.kind == "Widget"
    assert ext.by_resource("apps", "v1", "deployments") is base.by_resource(
        "apps", "v1", "deployments"
    )
    clash = _established(_crd(group="apps", plural="deployments", kind="Deployment"))
    assert crds.extended_catalog(base, [clash]) is base


def test_storage_type_covers_crds_without_a_served_version() -> None:
    body = _crd()
    body["spec"]["versions"][0]["served"] = False
    assert crds.served_types(body).types == ()
    rt = crds.storage_type(body)
    assert rt is not None and keys.list_prefix(rt, "c") == (
        "/registry/example.com/widgets/customresources/c/"
    )


def _named(name: str, created: str, accepted: bool = False, **kwargs: Any) -> Obj:
    body = _crd(**kwargs)
    body["metadata"]["name"] = name
    body["metadata"]["creationTimestamp"] = created
    if accepted:
        body["status"] = {
            "acceptedNames": {"plural": body["spec"]["names"]["plural"], "kind": "x"},
            "conditions": [{"type": "Established", "status": "True"}],
        }
    return body


@pytest.mark.parametrize(
    ("second", "reason", "message"),
    [
        (
            {"plural": "widgets", "singular": "other", "kind": "Other"},
            "PluralConflict",
            '"widgets" is already in use',
        ),
        (
            {"plural": "gadgets", "singular": "widget", "kind": "Gadget"},
            "SingularConflict",
            '"widget" is already in use',
        ),
        (
            {"plural": "gadgets", "singular": "gadget", "kind": "Gadget", "short_names": ("wd",)},
            "ShortNamesConflict",
            '"wd" is already in use',
        ),
        (
            {"plural": "gadgets", "singular": "gadget", "kind": "Widget", "short_names": ()},
            "KindConflict",
            '"Widget" is already in use',
        ),
    ],
)
def test_names_taken_in_the_same_group_are_refused(
    second: dict[str, Any], reason: str, message: str
) -> None:
    first = _named("widgets.example.com", "2026-01-01T00:00:01Z")
    later = _named("b.example.com", "2026-01-01T00:00:02Z", **second)
    decisions = crds.name_conditions([later, first])
    assert decisions["widgets.example.com"].names_accepted == (
        "True",
        "NoConflicts",
        "no conflicts found",
    )
    assert decisions["widgets.example.com"].established[0] == "True"
    refused = decisions["b.example.com"]
    assert refused.names_accepted == ("False", reason, message)
    assert refused.established == ("False", "NotAccepted", "not all names are accepted")


def test_accepted_names_are_kept_by_their_holder_and_other_groups_do_not_conflict() -> None:
    holder = _named("widgets.example.com", "2026-01-02T00:00:00Z", accepted=True)
    earlier = _named("w2.example.com", "2026-01-01T00:00:00Z", singular="w2", short_names=())
    elsewhere = _named("widgets.example.org", "2026-01-01T00:00:00Z", group="example.org")
    decisions = crds.name_conditions([earlier, holder, elsewhere])
    assert decisions["widgets.example.com"].names_accepted[0] == "True"
    assert decisions["w2.example.com"].names_accepted[1] == "PluralConflict"
    assert decisions["widgets.example.org"].names_accepted[0] == "True"


def _invalid(body: Obj, old: Obj | None = None) -> set[tuple[str, str]]:
    return {(c.field, c.message) for c in validation_crd.validate_crd(body, old)}


def test_a_valid_crd_has_no_errors() -> None:
    assert _invalid(_crd()) == set()


def _schema_of(body: Obj) -> Obj:
    schema: Obj = body["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    return schema


SCHEMA = "spec.versions[0].schema.openAPIV3Schema"


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (lambda b: b["spec"].pop("scope"), ("spec.scope", "Required value")),
        (
            lambda b: b["spec"].update(scope="Global"),
            (
                "spec.scope",
                'Unsupported value: "Global": supported values: "Cluster", "Namespaced"',
            ),
        ),
        (
            lambda b: b["spec"]["names"].update(kind="Bad_Kind"),
            (
                "spec.names.kind",
                'Invalid value: "Bad_Kind": may have mixed case, but should otherwise match: a '
                "DNS-1035 label must consist of lower case alphanumeric characters or '-', start "
                "with an alphabetic character, and end with an alphanumeric character (e.g. "
                "'my-name',  or 'abc-123', regex used for validation is "
                "'[a-z]([-a-z0-9]*[a-z0-9])?')",
            ),
        ),
        (
            lambda b: b["spec"]["names"].update(listKind="Widget"),
            (
                "spec.names.listKind",
                'Invalid value: "Widget": kind and listKind may not be the same',
            ),
        ),
        (
            lambda b: _schema_of(b).update(type="string"),
            (f"{SCHEMA}.type", 'Invalid value: "string": must be object at the root'),
        ),
        (
            lambda b: _schema_of(b)["properties"]["spec"]["properties"]["tags"].pop("items"),
            (
                f"{SCHEMA}.properties[spec].properties[tags].items",
                "Required value: must be specified",
            ),
        ),
        (
            lambda b: _schema_of(b)["properties"]["spec"]["properties"]["port"].update(
                type="string"
            ),
            (
                f"{SCHEMA}.properties[spec].properties[port].type",
                'Invalid value: "string": must be empty if x-kubernetes-int-or-string is true',
            ),
        ),
        (
            lambda b: _schema_of(b)["properties"].update(
                metadata={"type": "object", "properties": {"labels": {"type": "object"}}}
            ),
            (
                f"{SCHEMA}.properties[metadata]",
                "Forbidden: must not specify anything other than name and generateName, but "
                "metadata is implicitly specified",
            ),
        ),
        (
            lambda b: _schema_of(b)["properties"]["spec"]["properties"]["ports"].pop(
                "x-kubernetes-list-map-keys"
            ),
            (
                f"{SCHEMA}.properties[spec].properties[ports].x-kubernetes-list-map-keys",
                'Required value: must not be empty if x-kubernetes-list-type is "map"',
            ),
        ),
        (
            lambda b: b["spec"]["versions"][0]["additionalPrinterColumns"].append(
                {"name": "X", "type": "list", "jsonPath": ".x"}
            ),
            (
                "spec.versions[0].additionalPrinterColumns[3].type",
                'Unsupported value: "list": supported values: "boolean", "date", "integer", '
                '"number", "string"',
            ),
        ),
        (
            lambda b: _schema_of(b)["properties"]["spec"]["properties"]["replicas"].update(
                default="x"
            ),
            (
                f"{SCHEMA}.properties[spec].properties[replicas].default",
                'Invalid value: "x": spec.replicas in body must be of type integer: "string"',
            ),
        ),
        (
            lambda b: _schema_of(b)["properties"]["spec"]["properties"]["tags"]["items"].update(
                default=3
            ),
            (
                f"{SCHEMA}.properties[spec].properties[tags].items.default",
                'Invalid value: 3: spec.tags[0] in body must be of type string: "integer"',
            ),
        ),
        (
            lambda b: b["spec"]["versions"][0]["subresources"]["scale"].update(
                specReplicasPath=".replicas"
            ),
            (
                "spec.versions[0].subresources.scale.specReplicasPath",
                'Invalid value: ".replicas": should start with .spec',
            ),
        ),
    ],
)
def test_invalid_crds_have_upstream_causes(change: Any, expected: tuple[str, str]) -> None:
    body = _crd()
    change(body)
    assert expected in _invalid(body)


def test_group_plural_kind_and_scope_are_immutable() -> None:
    old = _crd()
    new = _crd(scope="Cluster")
    assert ("spec.scope", 'Invalid value: "Cluster": field is immutable') in _invalid(new, old)


def test_names_the_built_in_catalog_serves_are_refused() -> None:
    reserved = crds.served_names(catalog.Catalog.builtin())
    deployments = _named(
        "deployments.apps",
        "2026-01-01T00:00:00Z",
        group="apps",
        plural="deployments",
        kind="Deployment",
        short_names=(),
    )
    own = _named("widgets.apps", "2026-01-01T00:00:00Z", group="apps", short_names=())
    decisions = crds.name_conditions([deployments, own], reserved)
    assert decisions["deployments.apps"].names_accepted == (
        "False",
        "PluralConflict",
        '"deployments" is already in use',
    )
    assert decisions["widgets.apps"].names_accepted[0] == "True"


def test_a_crd_is_served_under_its_accepted_names() -> None:
    body = _crd(short_names=("new",))
    assert crds.served_types(body).types[0].short_names == ("new",)  # none accepted yet
    body["status"] = {
        "acceptedNames": {
            "plural": "widgets",
            "singular": "widget",
            "kind": "Widget",
            "listKind": "WidgetList",
            "shortNames": ["old"],
        }
    }
    assert crds.served_types(body).types[0].short_names == ("old",)

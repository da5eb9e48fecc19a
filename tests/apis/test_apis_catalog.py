"""Catalog lookups, group order and extension of the built-in catalog."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from minikcp.apis import catalog as catalog_mod
from minikcp.apis.catalog import Catalog, ResourceType, Subresource, version_priority


@pytest.fixture
def builtin() -> Catalog:
    return Catalog.builtin()


def widget(group: str = "example.com", version: str = "v1") -> ResourceType:
    return ResourceType(
        group=group,
        version=version,
        kind="Widget",
        plural="widgets",
        singular="widget",
        namespaced=True,
        short_names=("wd",),
        categories=("all",),
        list_kind="WidgetList",
        definition=f"com.example.{version}.Widget",
        subresources=(Subresource("status", group, version, "Widget", ("get", "patch", "update")),),
        builtin=False,
    )


def test_builtin_is_one_shared_instance(builtin: Catalog) -> None:
    assert Catalog.builtin() is builtin


@pytest.mark.parametrize(
    ("group", "version", "name", "kind"),
    [
        ("apps", "v1", "deploy", "Deployment"),
        ("apps", "v1", "deployments", "Deployment"),
        ("apps", "v1", "deployment", "Deployment"),
        ("apps", "v1", "Deployment", "Deployment"),
        ("apps", "", "rs", "ReplicaSet"),
        ("", "v1", "po", "Pod"),
        ("", "v1", "svc", "Service"),
        ("", "v1", "cm", "ConfigMap"),
        ("", "v1", "ns", "Namespace"),
        ("", "v1", "sa", "ServiceAccount"),
        ("", "v1", "ep", "Endpoints"),
        ("", "v1", "ev", "Event"),
        ("events.k8s.io", "v1", "ev", "Event"),
        ("networking.k8s.io", "v1", "ing", "Ingress"),
        ("apiextensions.k8s.io", "v1", "crd", "CustomResourceDefinition"),
        ("apiextensions.k8s.io", "v1", "crds", "CustomResourceDefinition"),
        ("rbac.authorization.k8s.io", "v1", "clusterrolebindings", "ClusterRoleBinding"),
    ],
)
def test_resolve(builtin: Catalog, group: str, version: str, name: str, kind: str) -> None:
    rt = builtin.resolve(group, version, name)
    assert rt is not None
    assert rt.kind == kind
    assert rt.group == group


@pytest.mark.parametrize(
    ("group", "version", "name"),
    [("apps", "v1", "pods"), ("", "v1", "deploy"), ("nope", "v1", "x"), ("apps", "v2", "deploy")],
)
def test_resolve_misses(builtin: Catalog, group: str, version: str, name: str) -> None:
    assert builtin.resolve(group, version, name) is None


def test_lookups_by_resource_and_kind(builtin: Catalog) -> None:
    deployments = builtin.by_resource("apps", "v1", "deployments")
    assert deployments is not None
    assert builtin.by_kind("apps", "v1", "Deployment") is deployments
    assert deployments.group_version == deployments.api_version == "apps/v1"
    assert deployments.definition == "io.k8s.api.apps.v1.Deployment"
    assert deployments.list_kind == "DeploymentList"
    assert [s.name for s in deployments.subresources] == ["scale", "status"]
    scale = deployments.subresource("scale")
    assert scale is not None
    assert (scale.group, scale.version, scale.kind) == ("autoscaling", "v1", "Scale")
    pods = builtin.by_resource("", "v1", "pods")
    assert pods is not None
    assert pods.group_version == "v1"
    assert builtin.by_resource("", "v1", "deployments") is None


def test_every_builtin_definition_exists_upstream(builtin: Catalog) -> None:
    defs = catalog_mod.upstream_definitions()
    for rt in builtin.all_types():
        assert rt.definition in defs, rt.definition
        gvks = defs[rt.definition]["x-kubernetes-group-version-kind"]
        assert {"group": rt.group, "version": rt.version, "kind": rt.kind} in gvks


def test_upstream_discovery_data(builtin: Catalog) -> None:
    ns = builtin.by_resource("", "v1", "namespaces")
    assert ns is not None
    assert not ns.namespaced
    assert "deletecollection" not in ns.verbs
    assert [(s.name, s.verbs) for s in ns.subresources] == [
        ("finalize", ("update",)),
        ("status", ("get", "patch", "update")),
    ]
    review = builtin.by_resource("authorization.k8s.io", "v1", "selfsubjectaccessreviews")
    assert review is not None
    assert review.verbs == ("create",)
    assert review.list_kind == ""
    all_category = {rt.plural for rt in builtin.all_types() if "all" in rt.categories}
    assert {"pods", "services", "deployments", "replicasets", "jobs"} <= all_category
    workloads = {"statefulsets", "daemonsets", "cronjobs", "horizontalpodautoscalers"}
    assert workloads <= all_category


@pytest.mark.parametrize(
    ("plural", "group", "expected"),
    [
        ("deployments", "apps", "8aSe+NMegvE="),
        ("pods", "", "xPOwRZ+Yhw8="),
        ("configmaps", "", "qFsyl6wFWjQ="),
        ("namespaces", "", "Q3oi5N2YM8M="),
    ],
)
def test_storage_version_hash_matches_upstream(
    builtin: Catalog, plural: str, group: str, expected: str
) -> None:
    rt = builtin.by_resource(group, "v1", plural)
    assert rt is not None
    assert rt.storage_version_hash == expected


def test_groups_in_upstream_order(builtin: Catalog) -> None:
    names = [g for g, _ in builtin.groups()]
    assert names[0] == ""
    assert names.index("apps") < names.index("events.k8s.io") < names.index("batch")
    assert names.index("rbac.authorization.k8s.io") < names.index("apiextensions.k8s.io")
    assert names.index("apiextensions.k8s.io") < names.index("coordination.k8s.io")
    kcp_groups = {
        "apis.kcp.io",
        "core.kcp.io",
        "tenancy.kcp.io",
        "workload.kcp.io",
        "apiresource.minikcp.io",
    }
    versions = {g: vs for g, vs in builtin.groups() if g not in kcp_groups}
    assert versions.pop("autoscaling")[0] == "v2"
    assert all(vs == ["v1"] for vs in versions.values())
    # kcp's groups are CRD groups there: after every upstream group, by name.
    assert names[-4:] == ["apis.kcp.io", "core.kcp.io", "tenancy.kcp.io", "workload.kcp.io"]


def test_resources_sorted_by_plural(builtin: Catalog) -> None:
    plurals = [rt.plural for rt in builtin.resources("", "v1")]
    assert plurals == sorted(plurals)
    assert "pods" in plurals


def test_extended_adds_types_without_copying(builtin: Catalog) -> None:
    assert builtin.extended([]) is builtin
    ext = builtin.extended([widget(), widget(version="v1beta1")])
    assert ext.base is builtin
    assert ext.resolve("example.com", "", "wd") is not None
    assert ext.by_kind("example.com", "v1beta1", "Widget") is not None
    assert ext.by_resource("apps", "v1", "deployments") is builtin.by_resource(
        "apps", "v1", "deployments"
    )
    assert ("example.com", ["v1", "v1beta1"]) in ext.groups()
    # CRD groups (and kcp's, CRD groups there) come last, by name.
    assert [g for g, _ in ext.groups()][-4:] == [
        "core.kcp.io",
        "example.com",
        "tenancy.kcp.io",
        "workload.kcp.io",
    ]
    assert builtin.by_resource("example.com", "v1", "widgets") is None
    assert ext.owns_group_version("example.com", "v1")
    assert not ext.owns_group_version("apps", "v1")


def test_extended_schemas_resolve_before_upstream(builtin: Catalog) -> None:
    schema = {"type": "object", "properties": {"spec": {"type": "object"}}}
    ext = builtin.extended([widget()], schemas={"com.example.v1.Widget": schema})
    assert ext.schema("com.example.v1.Widget") is schema
    assert ext.schema_owner("com.example.v1.Widget") is ext
    assert ext.schema_owner("io.k8s.api.apps.v1.Deployment") is builtin
    assert ext.schema("io.k8s.api.apps.v1.Deployment") is not None


def test_duplicate_resources_rejected() -> None:
    with pytest.raises(ValueError, match="duplicate"):
        Catalog([widget(), widget()])


@pytest.mark.parametrize(
    "ordered",
    [["v2", "v1", "v1beta2", "v1beta1", "v1alpha1", "foo"], ["v10", "v2", "v11beta1", "v10beta3"]],
)
def test_version_priority(ordered: list[str]) -> None:
    assert sorted(reversed(ordered), key=version_priority) == ordered


@given(st.lists(st.from_regex(r"v[1-9][0-9]?((alpha|beta)[1-9])?", fullmatch=True), unique=True))
def test_ga_versions_sort_before_prereleases(versions: list[str]) -> None:
    ordered = sorted(versions, key=version_priority)
    stages = [0 if v[1:].isdigit() else 1 if "beta" in v else 2 for v in ordered]
    assert stages == sorted(stages)

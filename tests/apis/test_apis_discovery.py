"""Discovery documents: the fields kubectl, kopf, kr8s and the Python clients read."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from minikcp.apis import discovery
from minikcp.apis.catalog import Catalog, ResourceType, Subresource


@pytest.fixture
def builtin() -> Catalog:
    return Catalog.builtin()


def _entries(body: bytes | None) -> dict[str, dict[str, Any]]:
    assert body is not None
    doc = orjson.loads(body)
    assert doc["kind"] == "APIResourceList"
    assert doc["apiVersion"] == "v1"
    return {r["name"]: r for r in doc["resources"]}


def test_api_versions(builtin: Catalog) -> None:
    doc = orjson.loads(discovery.api_versions(builtin, server_address="10.0.0.1:6443"))
    assert doc == {
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [
            {"clientCIDR": "0.0.0.0/0", "serverAddress": "10.0.0.1:6443"}
        ],
    }


def test_api_group_list(builtin: Catalog) -> None:
    doc = orjson.loads(discovery.api_group_list(builtin))
    assert doc["kind"] == "APIGroupList"
    groups = {g["name"]: g for g in doc["groups"]}
    assert "" not in groups
    assert groups["apps"] == {
        "name": "apps",
        "versions": [{"groupVersion": "apps/v1", "version": "v1"}],
        "preferredVersion": {"groupVersion": "apps/v1", "version": "v1"},
    }
    assert set(groups) >= {"batch", "rbac.authorization.k8s.io", "apiextensions.k8s.io"}


def test_api_group(builtin: Catalog) -> None:
    body = discovery.api_group(builtin, "batch")
    assert body is not None
    assert orjson.loads(body)["preferredVersion"] == {"groupVersion": "batch/v1", "version": "v1"}
    assert discovery.api_group(builtin, "nope") is None
    assert discovery.api_group(builtin, "") is None


def test_resource_list_entries(builtin: Catalog) -> None:
    entries = _entries(discovery.api_resource_list(builtin, "apps", "v1"))
    assert entries["deployments"] == {
        "name": "deployments",
        "singularName": "deployment",
        "namespaced": True,
        "kind": "Deployment",
        "verbs": [
            "create",
            "delete",
            "deletecollection",
            "get",
            "list",
            "patch",
            "update",
            "watch",
        ],
        "shortNames": ["deploy"],
        "categories": ["all"],
        "storageVersionHash": "8aSe+NMegvE=",
    }
    assert entries["deployments/scale"] == {
        "name": "deployments/scale",
        "singularName": "",
        "namespaced": True,
        "group": "autoscaling",
        "version": "v1",
        "kind": "Scale",
        "verbs": ["get", "patch", "update"],
    }
    assert entries["deployments/status"] == {
        "name": "deployments/status",
        "singularName": "",
        "namespaced": True,
        "kind": "Deployment",
        "verbs": ["get", "patch", "update"],
    }


def test_core_resource_list(builtin: Catalog) -> None:
    entries = _entries(discovery.api_resource_list(builtin, "", "v1"))
    assert list(entries) == sorted(entries)
    assert entries["namespaces/finalize"]["verbs"] == ["update"]
    assert entries["namespaces"]["namespaced"] is False
    assert entries["secrets"]["singularName"] == "secret"
    assert "shortNames" not in entries["secrets"]
    assert entries["pods/status"]["kind"] == "Pod"
    for entry in entries.values():
        assert "singularName" in entry  # kopf indexes it directly
    assert discovery.api_resource_list(builtin, "apps", "v2") is None


def test_aggregated_core(builtin: Catalog) -> None:
    doc = orjson.loads(discovery.aggregated(builtin, legacy=True))
    assert doc["kind"] == "APIGroupDiscoveryList"
    assert doc["apiVersion"] == "apidiscovery.k8s.io/v2"
    [core] = doc["items"]
    assert core["metadata"] == {"creationTimestamp": None}
    [v1] = core["versions"]
    assert v1["version"] == "v1"
    assert v1["freshness"] == "Current"
    pods = {r["resource"]: r for r in v1["resources"]}["pods"]
    assert pods == {
        "resource": "pods",
        "responseKind": {"group": "", "version": "v1", "kind": "Pod"},
        "scope": "Namespaced",
        "singularResource": "pod",
        "verbs": [
            "create",
            "delete",
            "deletecollection",
            "get",
            "list",
            "patch",
            "update",
            "watch",
        ],
        "shortNames": ["po"],
        "categories": ["all"],
        # As a 1.32 kube-apiserver lists them (the streaming ones answer GET and POST).
        "subresources": [
            {
                "subresource": "attach",
                "responseKind": {"group": "", "version": "v1", "kind": "PodAttachOptions"},
                "verbs": ["create", "get"],
            },
            {
                "subresource": "exec",
                "responseKind": {"group": "", "version": "v1", "kind": "PodExecOptions"},
                "verbs": ["create", "get"],
            },
            {
                "subresource": "log",
                "responseKind": {"group": "", "version": "v1", "kind": "Pod"},
                "verbs": ["get"],
            },
            {
                "subresource": "portforward",
                "responseKind": {"group": "", "version": "v1", "kind": "PodPortForwardOptions"},
                "verbs": ["create", "get"],
            },
            {
                "subresource": "status",
                "responseKind": {"group": "", "version": "v1", "kind": "Pod"},
                "verbs": ["get", "patch", "update"],
            },
        ],
    }


def test_aggregated_groups(builtin: Catalog) -> None:
    doc = orjson.loads(discovery.aggregated(builtin, legacy=False, version="v2beta1"))
    assert doc["apiVersion"] == "apidiscovery.k8s.io/v2beta1"
    names = [item["metadata"]["name"] for item in doc["items"]]
    assert names == [g for g, _ in builtin.groups() if g]
    apps = doc["items"][names.index("apps")]
    deployments = {r["resource"]: r for r in apps["versions"][0]["resources"]}["deployments"]
    assert deployments["subresources"][0] == {
        "subresource": "scale",
        "responseKind": {"group": "autoscaling", "version": "v1", "kind": "Scale"},
        "verbs": ["get", "patch", "update"],
    }
    crds = doc["items"][names.index("apiextensions.k8s.io")]["versions"][0]["resources"][0]
    assert crds["scope"] == "Cluster"
    assert crds["shortNames"] == ["crd", "crds"]
    assert crds["categories"] == ["api-extensions"]


def test_content_types() -> None:
    assert discovery.AGGREGATED_CONTENT_TYPE["v2"] == (
        "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
    )


def test_documents_are_cached_bytes(builtin: Catalog) -> None:
    assert discovery.api_group_list(builtin) is discovery.api_group_list(builtin)
    assert discovery.aggregated(builtin, legacy=False) is discovery.aggregated(
        builtin, legacy=False
    )
    first = discovery.api_resource_list(builtin, "apps", "v1")
    assert first is discovery.api_resource_list(builtin, "apps", "v1")


def test_extended_catalog_shares_untouched_documents(builtin: Catalog) -> None:
    widget = ResourceType(
        group="example.com",
        version="v1",
        kind="Widget",
        plural="widgets",
        singular="widget",
        namespaced=True,
        short_names=("wd",),
        definition="com.example.v1.Widget",
        subresources=(Subresource("status", "example.com", "v1", "Widget", ("get", "patch")),),
        builtin=False,
    )
    ext = builtin.extended([widget])
    assert discovery.api_resource_list(ext, "apps", "v1") is discovery.api_resource_list(
        builtin, "apps", "v1"
    )
    assert discovery.aggregated(ext, legacy=True) is discovery.aggregated(builtin, legacy=True)
    entries = _entries(discovery.api_resource_list(ext, "example.com", "v1"))
    assert entries["widgets"]["shortNames"] == ["wd"]
    assert entries["widgets/status"]["verbs"] == ["get", "patch"]
    # CRD groups come after the upstream ones, by name (kcp's groups are CRD groups too).
    groups = orjson.loads(discovery.api_group_list(ext))["groups"]
    assert [g["name"] for g in groups][-3:] == ["example.com", "tenancy.kcp.io", "workload.kcp.io"]
    items = orjson.loads(discovery.aggregated(ext, legacy=False))["items"]
    assert [i["metadata"]["name"] for i in items][-3:] == [
        "example.com",
        "tenancy.kcp.io",
        "workload.kcp.io",
    ]

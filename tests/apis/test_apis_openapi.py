"""OpenAPI documents: the v3 index, per group/version documents and the swagger 2.0 document."""

from __future__ import annotations

import gzip
from typing import Any

import orjson
import pytest

from minikcp.apis import openapi
from minikcp.apis.catalog import Catalog, ResourceType
from minikcp.machinery import openapi_v2_protobuf

CATALOG = Catalog.builtin()


def v3(group_version: str, catalog: Catalog = CATALOG) -> dict[str, Any]:
    doc = openapi.openapi_v3_document(catalog, group_version)
    assert doc is not None
    parsed: dict[str, Any] = orjson.loads(doc.body)
    return parsed


def _walk(node: Any) -> list[Any]:
    """Every dict and list in a document (JSONSchemaProps even has a property named "$ref")."""
    out = [node]
    if isinstance(node, dict):
        for value in node.values():
            out.extend(_walk(value))
    elif isinstance(node, list):
        for value in node:
            out.extend(_walk(value))
    return out


def test_index_lists_every_group_version_with_prefix_and_hash() -> None:
    index = orjson.loads(openapi.openapi_v3_index(CATALOG, "/clusters/root"))
    keys = set(index["paths"])
    assert {"api/v1", "apis/apps/v1", "apis/batch/v1", "apis/apiextensions.k8s.io/v1"} <= keys
    apps = index["paths"]["apis/apps/v1"]["serverRelativeURL"]
    doc = openapi.openapi_v3_document(CATALOG, "apps/v1")
    assert doc is not None
    assert apps == f"/clusters/root/openapi/v3/apis/apps/v1?hash={doc.hash}"
    plain = orjson.loads(openapi.openapi_v3_index(CATALOG))
    assert plain["paths"]["api/v1"]["serverRelativeURL"].startswith("/openapi/v3/api/v1?hash=")


def test_documents_and_hashes_are_computed_once() -> None:
    first = openapi.openapi_v3_document(CATALOG, "apps/v1")
    assert first is openapi.openapi_v3_document(CATALOG, "apis/apps/v1")
    assert openapi.openapi_v3_index(CATALOG, "/x") is openapi.openapi_v3_index(CATALOG, "/x")
    assert first is not None
    assert first.etag == f'"{first.hash}"'
    assert gzip.decompress(first.gzip_body) == first.body
    # A fresh catalog with the same types builds byte-identical documents.
    again = openapi.openapi_v3_document(Catalog(CATALOG.all_types()), "apps/v1")
    assert again is not None
    assert again.hash == first.hash


def test_unknown_group_version() -> None:
    assert openapi.openapi_v3_document(CATALOG, "apps/v2") is None
    assert openapi.openapi_v3_document(CATALOG, "nope/v1") is None


def test_patch_operation_drives_kubectl_validation() -> None:
    doc = v3("apps/v1")
    patch = doc["paths"]["/apis/apps/v1/namespaces/{namespace}/deployments/{name}"]["patch"]
    assert patch["x-kubernetes-group-version-kind"] == {
        "group": "apps",
        "kind": "Deployment",
        "version": "v1",
    }
    assert "fieldValidation" in [p["name"] for p in patch["parameters"]]
    assert set(patch["requestBody"]["content"]) == {
        "application/apply-patch+yaml",
        "application/json-patch+json",
        "application/merge-patch+json",
        "application/strategic-merge-patch+json",
    }
    assert patch["x-kubernetes-action"] == "patch"
    assert patch["operationId"] == "patchAppsV1NamespacedDeployment"


def test_paths_cover_the_served_verbs() -> None:
    paths = v3("apps/v1")["paths"]
    collection = paths["/apis/apps/v1/namespaces/{namespace}/deployments"]
    assert set(collection) == {"get", "post", "delete", "parameters"}
    assert collection["delete"]["x-kubernetes-action"] == "deletecollection"
    assert "/apis/apps/v1/deployments" in paths  # list across namespaces
    assert "/apis/apps/v1/watch/namespaces/{namespace}/deployments/{name}" in paths
    scale = paths["/apis/apps/v1/namespaces/{namespace}/deployments/{name}/scale"]
    assert scale["get"]["x-kubernetes-group-version-kind"]["kind"] == "Scale"
    assert set(scale) == {"get", "put", "patch", "parameters"}
    assert "/apis/apps/v1/namespaces/{namespace}/statefulsets/{name}/scale" in paths
    assert "/apis/apps/v1/namespaces/{namespace}/daemonsets/{name}/scale" not in paths
    core = v3("v1")["paths"]
    assert set(core["/api/v1/namespaces"]) == {"get", "post", "parameters"}
    assert set(core["/api/v1/namespaces/{name}/finalize"]) == {"put", "parameters"}
    reviews = v3("authorization.k8s.io/v1")["paths"]
    assert set(reviews["/apis/authorization.k8s.io/v1/selfsubjectaccessreviews"]) == {
        "post",
        "parameters",
    }


def test_kind_schemas_carry_descriptions_and_gvk_lists() -> None:
    schemas = v3("apps/v1")["components"]["schemas"]
    deployment = schemas["io.k8s.api.apps.v1.Deployment"]
    assert deployment["x-kubernetes-group-version-kind"] == [
        {"group": "apps", "kind": "Deployment", "version": "v1"}
    ]
    assert deployment["type"] == "object"
    assert deployment["properties"]["apiVersion"] == {
        "description": deployment["properties"]["apiVersion"]["description"],
        "type": "string",
    }
    spec = deployment["properties"]["spec"]
    assert spec["allOf"] == [{"$ref": "#/components/schemas/io.k8s.api.apps.v1.DeploymentSpec"}]
    assert spec["description"] == "Specification of the desired behavior of the Deployment."
    replicas = schemas["io.k8s.api.apps.v1.DeploymentSpec"]["properties"]["replicas"]
    assert replicas["type"] == "integer"
    assert replicas["format"] == "int32"
    assert "Number of desired pods" in replicas["description"]
    assert schemas["io.k8s.api.apps.v1.DeploymentSpec"]["required"] == ["selector", "template"]
    containers = schemas["io.k8s.api.core.v1.PodSpec"]["properties"]["containers"]
    assert containers["x-kubernetes-patch-merge-key"] == "name"
    assert containers["items"] == {"$ref": "#/components/schemas/io.k8s.api.core.v1.Container"}
    int_or_string = schemas["io.k8s.apimachinery.pkg.util.intstr.IntOrString"]
    assert int_or_string["format"] == "int-or-string"
    assert int_or_string["oneOf"] == [{"type": "integer"}, {"type": "string"}]


@pytest.mark.parametrize("group_version", ["v1", "apps/v1", "batch/v1", "apiextensions.k8s.io/v1"])
def test_v3_documents_are_self_contained_openapi_3_0(group_version: str) -> None:
    doc = v3(group_version)
    assert doc["openapi"] == "3.0.0"
    schemas = doc["components"]["schemas"]
    for node in _walk(doc):
        if isinstance(node, dict):
            ref = node.get("$ref")
            if isinstance(ref, str):
                assert ref.startswith("#/components/schemas/")
                assert ref.removeprefix("#/components/schemas/") in schemas, ref
                assert set(node) == {"$ref"}  # siblings go beside an allOf
            assert node.get("nullable") is not True
            assert not isinstance(node.get("type"), list)
    # Only served kinds and what they reference.
    assert "io.k8s.api.storage.v1.StorageClass" not in schemas
    kinds = {
        g["kind"]
        for s in schemas.values()
        for g in s.get("x-kubernetes-group-version-kind", [])
        if g["group"] == group_version.rpartition("/")[0]
    }
    served = {rt.kind for rt in CATALOG.all_types() if rt.group_version == group_version}
    assert served <= kinds


def test_v2_document() -> None:
    doc_v2 = openapi.openapi_v2_document(CATALOG)
    assert doc_v2 is openapi.openapi_v2_document(CATALOG)
    doc = orjson.loads(doc_v2.body)
    assert doc["swagger"] == "2.0"
    definitions = doc["definitions"]
    for node in _walk(doc):
        if isinstance(node, dict) and isinstance(node.get("$ref"), str):
            assert node["$ref"].removeprefix("#/definitions/") in definitions
    spec = definitions["io.k8s.api.apps.v1.Deployment"]["properties"]["spec"]
    assert spec["$ref"] == "#/definitions/io.k8s.api.apps.v1.DeploymentSpec"
    assert definitions["io.k8s.apimachinery.pkg.util.intstr.IntOrString"]["type"] == "string"
    containers = definitions["io.k8s.api.core.v1.PodSpec"]["properties"]["containers"]
    assert containers["x-kubernetes-patch-strategy"] == "merge"
    patch = doc["paths"]["/apis/apps/v1/namespaces/{namespace}/deployments/{name}"]["patch"]
    assert "application/strategic-merge-patch+json" in patch["consumes"]
    assert patch["x-kubernetes-group-version-kind"]["kind"] == "Deployment"
    assert "fieldValidation" in [p["name"] for p in patch["parameters"]]


def test_v2_protobuf_encodes_the_v2_definitions() -> None:
    proto = openapi.openapi_v2_protobuf(CATALOG)
    v2 = orjson.loads(openapi.openapi_v2_document(CATALOG).body)
    assert proto.body == openapi_v2_protobuf.encode_document(v2)
    assert b"io.k8s.api.apps.v1.Deployment" in proto.body
    assert openapi.openapi_v2_protobuf(CATALOG) is proto  # built once per catalog
    assert openapi.OPENAPI_V2_PROTOBUF_CONTENT_TYPE == (
        "application/com.github.proto-openapi.spec.v2.v1.0+protobuf"
    )


WIDGET_SCHEMA = {
    "description": "A widget.",
    "type": "object",
    "properties": {
        "metadata": {
            "$ref": "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
        },
        "spec": {"type": "object", "properties": {"size": {"type": "string"}}},
    },
    "x-kubernetes-group-version-kind": [
        {"group": "example.com", "kind": "Widget", "version": "v1"}
    ],
}


def test_extended_catalog_adds_crd_documents_and_shares_the_rest() -> None:
    widget = ResourceType(
        group="example.com",
        version="v1",
        kind="Widget",
        plural="widgets",
        singular="widget",
        namespaced=True,
        list_kind="",
        definition="com.example.v1.Widget",
        builtin=False,
    )
    ext = CATALOG.extended([widget], schemas={"com.example.v1.Widget": WIDGET_SCHEMA})
    assert openapi.openapi_v3_document(ext, "apps/v1") is openapi.openapi_v3_document(
        CATALOG, "apps/v1"
    )
    doc = v3("example.com/v1", ext)
    schemas = doc["components"]["schemas"]
    assert schemas["com.example.v1.Widget"] == WIDGET_SCHEMA
    assert "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta" in schemas
    patch = doc["paths"]["/apis/example.com/v1/namespaces/{namespace}/widgets/{name}"]["patch"]
    assert "application/strategic-merge-patch+json" not in patch["requestBody"]["content"]
    assert "fieldValidation" in [p["name"] for p in patch["parameters"]]
    responses = patch["responses"]["200"]["content"]
    assert "application/vnd.kubernetes.protobuf" not in responses
    index = orjson.loads(openapi.openapi_v3_index(ext, "/clusters/a"))["paths"]
    assert "apis/example.com/v1" in index
    base_index = orjson.loads(openapi.openapi_v3_index(CATALOG, "/clusters/a"))["paths"]
    assert index["apis/apps/v1"] == base_index["apis/apps/v1"]

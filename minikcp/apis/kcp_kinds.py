"""minikcp's kcp-style kinds: Workspace, LogicalCluster and friends, served like built-ins.

kcp defines these kinds as CRDs. Each is declared here from a CRD manifest of minikcp's own in
`kcp_crds/` (kcp's group, names and fields), which gives the discovery data, the OpenAPI schema,
the printer columns and the schema defaults. The schemas join the shared built-in
definitions (in the upstream `$defs` form), so validation, server-side apply, OpenAPI documents and
`kubectl explain` treat them as every other served kind. As in kcp they behave as custom resources:
type errors are 422, patches are JSON, merge or apply patches, and there is no protobuf.

Adding a kind is one `_kind(...)` line naming its manifest (and its printer columns when they
differ from the manifest's). Per-kind behaviour (status, controllers) lives in a registry strategy.
"""

from __future__ import annotations

import functools
import importlib.resources
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import yaml

from minikcp.apis import structural_defaults
from minikcp.apis.resource_types import CRUD_VERBS, STATUS_VERBS, ResourceType, Schema, Subresource

_DEFS_REF = "#/$defs/"
_META = "io.k8s.apimachinery.pkg.apis.meta.v1."
_OBJECT_META_TEXT = (
    "Standard object's metadata. More info: "
    "https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata"
)
_LIST_META_TEXT = (
    "Standard list metadata. More info: "
    "https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds"
)


@dataclass(frozen=True, slots=True)
class KcpKind:
    """One kcp-style kind: its resource type, schema definitions and printer columns."""

    rt: ResourceType
    definitions: Mapping[str, Schema]  # the kind and its list, in the upstream `$defs` form
    printer_columns: tuple[Mapping[str, Any], ...]  # CRD `additionalPrinterColumns` form
    schema: Schema  # the kind's own schema
    defaulting: Schema  # its branches that hold defaults (custom_resources.defaulting_schema)


def definition_package(group: str, version: str) -> str:
    """apiextensions' definition prefix: group reversed, then version (io.kcp.tenancy.v1alpha1)."""
    return ".".join([*reversed(group.split(".")), version])


def _kind(manifest: str, *, drop_columns: Sequence[str] = ()) -> KcpKind:
    """A kind from its CRD manifest (one served version) in `kcp_crds/`."""
    text = importlib.resources.files(__package__).joinpath("kcp_crds", manifest).read_text()
    # libyaml's loader when present: the pure-Python one costs a tenth of start-up here.
    crd: Mapping[str, Any] = yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    spec = crd["spec"]
    names = spec["names"]
    (version,) = [v for v in spec["versions"] if v.get("served", True)]
    group, kind, list_kind = spec["group"], names["kind"], names["listKind"]
    package = definition_package(group, version["name"])
    subresources = []
    if "status" in version.get("subresources", {}):
        subresources.append(Subresource("status", group, version["name"], kind, STATUS_VERBS))
    rt = ResourceType(
        group=group,
        version=version["name"],
        kind=kind,
        plural=names["plural"],
        singular=names.get("singular", kind.lower()),
        namespaced=spec["scope"] == "Namespaced",
        short_names=tuple(names.get("shortNames", ())),
        categories=tuple(names.get("categories", ())),
        verbs=CRUD_VERBS,
        list_kind=list_kind,
        definition=f"{package}.{kind}",
        subresources=tuple(subresources),
        builtin=False,
    )
    schema = _object_schema(version["schema"]["openAPIV3Schema"], group, version["name"], kind)
    definitions = {
        rt.definition: schema,
        f"{package}.{list_kind}": _list_schema(rt, group, version["name"], list_kind),
    }
    columns = tuple(
        column
        for column in version.get("additionalPrinterColumns", ())
        if column["name"] not in drop_columns
    )
    defaulting = structural_defaults.defaulting_schema(schema)
    return KcpKind(rt, definitions, columns, schema, defaulting)


def _gvk(group: str, version: str, kind: str) -> list[dict[str, str]]:
    return [{"group": group, "kind": kind, "version": version}]


def _object_schema(raw: Schema, group: str, version: str, kind: str) -> dict[str, Any]:
    """The CRD schema as apiextensions publishes it: metadata is ObjectMeta, the GVK attached."""
    schema = dict(raw)
    properties = dict(schema.get("properties", {}))
    properties["metadata"] = {
        "$ref": _DEFS_REF + _META + "ObjectMeta",
        "description": _OBJECT_META_TEXT,
    }
    schema["properties"] = properties
    schema["x-kubernetes-group-version-kind"] = _gvk(group, version, kind)
    return schema


def _list_schema(rt: ResourceType, group: str, version: str, list_kind: str) -> dict[str, Any]:
    return {
        "description": f"{list_kind} is a list of {rt.kind}",
        "properties": {
            "apiVersion": _apiversion_kind_text("apiVersion"),
            "items": {
                "description": (
                    f"List of {rt.plural}. More info: "
                    "https://git.k8s.io/community/contributors/devel/api-conventions.md"
                ),
                "items": {"$ref": _DEFS_REF + rt.definition},
                "type": "array",
            },
            "kind": _apiversion_kind_text("kind"),
            "metadata": {
                "$ref": _DEFS_REF + _META + "ListMeta",
                "description": _LIST_META_TEXT,
            },
        },
        "required": ["items"],
        "type": "object",
        "x-kubernetes-group-version-kind": _gvk(group, version, list_kind),
    }


def _apiversion_kind_text(field: str) -> dict[str, Any]:
    if field == "apiVersion":
        text = (
            "APIVersion defines the versioned schema of this representation of an object. "
            "Servers should convert recognized schemas to the latest internal value, and may "
            "reject unrecognized values. More info: "
            "https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#resources"
        )
    else:
        text = (
            "Kind is a string value representing the REST resource this object represents. "
            "Servers may infer this from the endpoint the client submits requests to. Cannot be "
            "updated. In CamelCase. More info: "
            "https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds"
        )
    return {"description": text, "type": "string"}


@functools.cache
def kinds() -> tuple[KcpKind, ...]:
    """Every kcp-style kind minikcp serves in each logical cluster."""
    return (
        # `kubectl get workspaces` shows NAME TYPE PHASE URL AGE; the Region column kcp adds
        # is for multi-region shards, which minikcp does not have.
        _kind("tenancy.kcp.io_workspaces.yaml", drop_columns=("Region",)),
        _kind("core.kcp.io_logicalclusters.yaml"),
        # The Key column shows a label kcp's syncer sets; minikcp's labels its objects instead.
        _kind("workload.kcp.io_synctargets.yaml", drop_columns=("Key",)),
        _kind("apis.kcp.io_apiresourceschemas.yaml"),
        _kind("apis.kcp.io_apiexports.yaml"),
        _kind("apis.kcp.io_apibindings.yaml"),
        _kind("apis.kcp.io_apiexportendpointslices.yaml"),
        _kind("apiresource.minikcp.io_negotiatedapiresources.yaml"),
        _kind("apiresource.minikcp.io_apiresourceimports.yaml"),
    )


@functools.cache
def resource_types() -> tuple[ResourceType, ...]:
    return tuple(k.rt for k in kinds())


@functools.cache
def definitions() -> Mapping[str, Schema]:
    """The schemas of every kcp-style kind, to join the built-in `$defs`."""
    out: dict[str, Schema] = {}
    for k in kinds():
        out.update(k.definitions)
    return out


@functools.cache
def _by_group_kind() -> Mapping[tuple[str, str], KcpKind]:
    return {(k.rt.group, k.rt.kind): k for k in kinds()}


def kind_of(group: str, kind: str) -> KcpKind | None:
    return _by_group_kind().get((group, kind))

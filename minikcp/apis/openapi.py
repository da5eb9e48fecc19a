"""OpenAPI documents of a catalog: the v3 index, one v3 document per group/version, and v2.

Schemas come from the upstream `$defs` (JSON-schema flavoured: `["string", "null"]` types, `$defs`
refs, converter-added enums on apiVersion/kind) and are turned back into upstream's OpenAPI form:
plain types, `#/components/schemas/` refs wrapped in `allOf` when a description sits beside them
(v3) or `#/definitions/` refs (v2). Each document holds only the served kinds and the definitions
they reference. Everything is built lazily once per catalog; an extended catalog (CRD kinds of one
logical cluster) rebuilds only the group/versions it adds to and shares the rest with its base.

For `/openapi/v2` with a protobuf-only Accept (what kubectl sends), serve the definitions as a
gnostic protobuf Document (`OPENAPI_V2_PROTOBUF_CONTENT_TYPE`); kubectl 1.27+ use v3 for
validation, patch types and explain, older ones and `explain --output=plaintext-openapiv2` use v2.
"""

from __future__ import annotations

import collections
import gzip
import hashlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import orjson

from minikcp.apis import openapi_paths
from minikcp.apis.catalog import Catalog, ResourceType, Schema, upstream_definitions
from minikcp.machinery import openapi_v2_protobuf as openapi_v2_protobuf_encoding

OPENAPI_V2_PROTOBUF_CONTENT_TYPE = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf"
_V3_REF = "#/components/schemas/"
_V2_REF = "#/definitions/"
_UPSTREAM_REF = "#/$defs/"
_META = openapi_paths.META
_COMMON = (
    _META + "APIResourceList",
    _META + "DeleteOptions",
    _META + "Patch",
    _META + "Status",
    _META + "WatchEvent",
)
_INDEX_CACHE_SIZE = 4096
_BEARER = {
    "description": "Bearer Token authentication",
    "in": "header",
    "name": "authorization",
    "type": "apiKey",
}

# The converter that produced the upstream `$defs` dropped these definitions' own text and type.
_INT_OR_STRING = "io.k8s.apimachinery.pkg.util.intstr.IntOrString"
_QUANTITY = "io.k8s.apimachinery.pkg.api.resource.Quantity"
_SPECIAL_DESCRIPTIONS = {
    _INT_OR_STRING: (
        "IntOrString is a type that can hold an int32 or a string.  When used in JSON or YAML "
        "marshalling and unmarshalling, it produces or consumes the inner type.  This allows you "
        "to have, for example, a JSON field that can accept a name or number."
    ),
    _QUANTITY: (
        "Quantity is a fixed-point representation of a number. It provides convenient "
        "marshaling/unmarshaling in JSON and YAML, in addition to String() and AsInt64() "
        'accessors. Examples: 1.5 is serialized as "1500m", 1.5Gi as "1536Mi".'
    ),
}


@dataclass(frozen=True, slots=True)
class OpenAPIDocument:
    body: bytes
    gzip_body: bytes
    etag: str  # quoted, for the ETag header
    hash: str  # for `?hash=` in the v3 index

    @classmethod
    def of(cls, body: bytes) -> OpenAPIDocument:
        digest = hashlib.sha512(body).hexdigest().upper()
        return cls(body, gzip.compress(body, compresslevel=6, mtime=0), f'"{digest}"', digest)


# -- schema conversion --------------------------------------------------------------------------


def _convert(node: Any, ref_prefix: str, *, v3: bool) -> Any:
    if isinstance(node, list):
        return [_convert(x, ref_prefix, v3=v3) for x in node]
    if not isinstance(node, Mapping):
        return node
    out: dict[str, Any] = {}
    ref = node.get("$ref")
    for key, value in node.items():
        if key == "$ref":
            continue
        if key == "type" and isinstance(value, list):
            types = [t for t in value if t != "null"]
            out[key] = types[0] if len(types) == 1 else types
        elif key == "properties" and isinstance(value, Mapping):
            out[key] = {k: _convert(v, ref_prefix, v3=v3) for k, v in value.items()}
        elif key == "x-kubernetes-unions" and v3:
            continue  # a swagger 2.0 extension upstream's v3 does not carry
        else:
            out[key] = _convert(value, ref_prefix, v3=v3)
    if isinstance(ref, str):
        target = {"$ref": ref_prefix + ref.rsplit("/", 1)[-1]}
        if not out:
            return target
        if v3:
            # OpenAPI 3.0 ignores siblings of $ref; upstream wraps the ref in allOf.
            return {"allOf": [target], **out}
        return {**target, **out}
    return out


def _definition(name: str, raw: Schema, ref_prefix: str, *, v3: bool) -> dict[str, Any]:
    if name == _INT_OR_STRING:
        out: dict[str, Any] = {
            "description": _SPECIAL_DESCRIPTIONS[name],
            "format": "int-or-string",
        }
        if v3:
            out["oneOf"] = [{"type": "integer"}, {"type": "string"}]
        else:
            out["type"] = "string"
        return out
    if name == _QUANTITY:
        out = {"description": _SPECIAL_DESCRIPTIONS[name]}
        if v3:
            out["oneOf"] = [{"type": "string"}, {"type": "number"}]
        else:
            out["type"] = "string"
        return out
    converted: dict[str, Any] = _convert(raw, ref_prefix, v3=v3)
    if "x-kubernetes-group-version-kind" in raw:
        # The converter pinned apiVersion and kind with enums; upstream has none.
        for field in ("apiVersion", "kind"):
            prop = converted.get("properties", {}).get(field)
            if isinstance(prop, dict):
                prop.pop("enum", None)
    return converted


def _refs(node: Any, out: set[str]) -> None:
    if isinstance(node, Mapping):
        ref = node.get("$ref")
        if isinstance(ref, str):
            out.add(ref.rsplit("/", 1)[-1])
        for value in node.values():
            if isinstance(value, Mapping | list):
                _refs(value, out)
    elif isinstance(node, list):
        for value in node:
            _refs(value, out)


def _closure(catalog: Catalog, roots: Iterable[str]) -> list[str]:
    seen: set[str] = set()
    todo = [r for r in roots if catalog.schema(r) is not None]
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        found: set[str] = set()
        _refs(catalog.schema(name), found)
        todo.extend(n for n in found if n not in seen and catalog.schema(n) is not None)
    return sorted(seen)


def _is_extra(catalog: Catalog, name: str) -> bool:
    layer: Catalog | None = catalog
    while layer is not None:
        if name in layer.extra_schemas:
            return True
        layer = layer.base
    return False


def _components(catalog: Catalog, names: list[str], *, v3: bool) -> dict[str, Any]:
    ref_prefix = _V3_REF if v3 else _V2_REF
    upstream = upstream_definitions()
    out: dict[str, Any] = {}
    for name in names:
        schema = catalog.schema(name)
        if schema is None:
            continue
        if _is_extra(catalog, name):
            # Extra schemas (CRDs) arrive in OpenAPI v3 form already.
            out[name] = schema if v3 else _convert(schema, ref_prefix, v3=False)
        else:
            out[name] = _definition(name, upstream[name], ref_prefix, v3=v3)
    return out


def _roots(types: Iterable[ResourceType]) -> list[str]:
    roots = list(_COMMON)
    for rt in types:
        package = rt.definition.rsplit(".", 1)[0]
        roots.append(rt.definition)
        if rt.list_kind:
            roots.append(f"{package}.{rt.list_kind}")
        if rt.subresource("scale") is not None:
            roots.append("io.k8s.api.autoscaling.v1.Scale")
    return roots


# -- documents ----------------------------------------------------------------------------------


def _dumps(doc: Any) -> bytes:
    return orjson.dumps(doc, option=orjson.OPT_SORT_KEYS)


def split_group_version(group_version: str) -> tuple[str, str]:
    """ "v1" -> ("", "v1"); "apps/v1" -> ("apps", "v1"); index keys "api/v1", "apis/apps/v1" too."""
    parts = group_version.strip("/").split("/")
    if parts[0] == "api" and len(parts) == 2:
        return "", parts[1]
    if parts[0] == "apis" and len(parts) == 3:
        return parts[1], parts[2]
    if len(parts) == 1:
        return "", parts[0]
    return parts[0], parts[1]


def openapi_v3_document(catalog: Catalog, group_version: str) -> OpenAPIDocument | None:
    """The OpenAPI 3.0 document of one group/version (`/openapi/v3/apis/<g>/<v>`), or None."""
    group, version = split_group_version(group_version)
    base = catalog.base
    if base is not None and not catalog.owns_group_version(group, version):
        return openapi_v3_document(base, group_version)
    types = catalog.resources(group, version)
    if not types:
        return None
    key = ("openapi_v3", group, version)
    cached = catalog.memo.get(key)
    if cached is None:
        paths: dict[str, Any] = {}
        discovery_path, discovery_op = openapi_paths.discovery_path(group, version)
        paths[discovery_path] = openapi_paths.v3_path_item(discovery_path, [discovery_op])
        for rt in types:
            for path, operations in openapi_paths.resource_paths(rt).items():
                paths[path] = openapi_paths.v3_path_item(path, operations)
        doc = {
            "openapi": "3.0.0",
            "info": {"title": "Kubernetes", "version": "unversioned"},
            "paths": paths,
            "components": {
                "schemas": _components(catalog, _closure(catalog, _roots(types)), v3=True),
                "securitySchemes": {"BearerToken": _BEARER},
            },
        }
        cached = OpenAPIDocument.of(_dumps(doc))
        catalog.memo[key] = cached
    assert isinstance(cached, OpenAPIDocument)
    return cached


def index_key(group: str, version: str) -> str:
    return f"apis/{group}/{version}" if group else f"api/{version}"


def openapi_v3_hashes(catalog: Catalog) -> dict[str, str]:
    """Index key ("api/v1", "apis/apps/v1") -> document hash, for every served group/version."""
    key = ("openapi_v3_hashes",)
    cached = catalog.memo.get(key)
    if cached is None:
        cached = {}
        for group, versions in catalog.groups():
            for version in versions:
                doc = openapi_v3_document(catalog, f"{group}/{version}" if group else version)
                if doc is not None:
                    cached[index_key(group, version)] = doc.hash
        catalog.memo[key] = cached
    assert isinstance(cached, dict)
    return cached


def openapi_v3_index(catalog: Catalog, prefix: str = "") -> bytes:
    """`GET /openapi/v3`: serverRelativeURLs under `prefix` (e.g. "/clusters/root")."""
    cache: collections.OrderedDict[str, bytes] = catalog.memo.setdefault(
        "openapi_v3_index", collections.OrderedDict()
    )
    body = cache.get(prefix)
    if body is not None:
        cache.move_to_end(prefix)
        return body
    base = prefix.rstrip("/")
    paths = {
        k: {"serverRelativeURL": f"{base}/openapi/v3/{k}?hash={h}"}
        for k, h in openapi_v3_hashes(catalog).items()
    }
    body = _dumps({"paths": paths})
    cache[prefix] = body
    if len(cache) > _INDEX_CACHE_SIZE:
        cache.popitem(last=False)
    return body


def openapi_v2_document(catalog: Catalog) -> OpenAPIDocument:
    """The swagger 2.0 JSON document (`/openapi/v2` with a JSON Accept) of every served kind."""
    key = ("openapi_v2",)
    cached = catalog.memo.get(key)
    if cached is None:
        types = catalog.all_types()
        paths: dict[str, Any] = {}
        for group, versions in catalog.groups():
            for version in versions:
                path, operation = openapi_paths.discovery_path(group, version)
                paths[path] = openapi_paths.v2_path_item(path, [operation])
        for rt in types:
            for path, operations in openapi_paths.resource_paths(rt).items():
                paths[path] = openapi_paths.v2_path_item(path, operations)
        doc = {
            "swagger": "2.0",
            "info": {"title": "Kubernetes", "version": "v1.32.0"},
            "paths": paths,
            "definitions": _components(catalog, _closure(catalog, _roots(types)), v3=False),
            "securityDefinitions": {"BearerToken": _BEARER},
            "security": [{"BearerToken": []}],
        }
        cached = OpenAPIDocument.of(_dumps(doc))
        catalog.memo[key] = cached
    assert isinstance(cached, OpenAPIDocument)
    return cached


def openapi_v2_protobuf(catalog: Catalog) -> OpenAPIDocument:
    """`/openapi/v2` as gnostic protobuf (what kubectl up to 1.26 reads): the v2 definitions."""
    key = ("openapi_v2_protobuf",)
    cached = catalog.memo.get(key)
    if cached is None:
        document = orjson.loads(openapi_v2_document(catalog).body)
        cached = OpenAPIDocument.of(openapi_v2_protobuf_encoding.encode_document(document))
        catalog.memo[key] = cached
    assert isinstance(cached, OpenAPIDocument)
    return cached

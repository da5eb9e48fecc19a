"""Discovery documents of a catalog, encoded once as JSON bytes.

Legacy discovery (`/api`, `/apis`, `/apis/<group>`, `/api/v1`, `/apis/<group>/<version>`) is what
kopf, kr8s and the Python DynamicClient read; aggregated discovery (apidiscovery.k8s.io v2 and
v2beta1, for `/api` and `/apis`) is what kubectl asks for first. Shapes follow k8s.io/api
apidiscovery/v2 and meta/v1 (field order as Go serializes the structs). Every function returns the
same bytes object for the same catalog; a catalog extended with CRD kinds reuses its base's
documents for every group/version it does not add to.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal

import orjson

from minikcp.apis.catalog import Catalog, ResourceType

AggregatedVersion = Literal["v2", "v2beta1"]

AGGREGATED_CONTENT_TYPE = {
    "v2": "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList",
    "v2beta1": "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList",
}


def _memo(catalog: Catalog, key: tuple[Any, ...], build: Callable[[], bytes]) -> bytes:
    cached = catalog.memo.get(key)
    if cached is None:
        cached = build()
        catalog.memo[key] = cached
    assert isinstance(cached, bytes)
    return cached


def api_versions(catalog: Catalog, *, server_address: str = "") -> bytes:
    """`GET /api`: APIVersions for the core group."""

    def build() -> bytes:
        versions = [vs for g, vs in catalog.groups() if g == ""]
        doc: dict[str, Any] = {
            "kind": "APIVersions",
            "versions": versions[0] if versions else [],
            "serverAddressByClientCIDRs": [
                {"clientCIDR": "0.0.0.0/0", "serverAddress": server_address}
            ],
        }
        return orjson.dumps(doc)

    return _memo(catalog, ("api_versions", server_address), build)


def _group_doc(group: str, versions: list[str]) -> dict[str, Any]:
    gvs = [{"groupVersion": f"{group}/{v}", "version": v} for v in versions]
    return {"name": group, "versions": gvs, "preferredVersion": gvs[0]}


def api_group_list(catalog: Catalog) -> bytes:
    """`GET /apis`: APIGroupList of every named group, preferred version first."""

    def build() -> bytes:
        groups = [_group_doc(g, vs) for g, vs in catalog.groups() if g]
        return orjson.dumps({"kind": "APIGroupList", "apiVersion": "v1", "groups": groups})

    return _memo(catalog, ("api_group_list",), build)


def api_group(catalog: Catalog, group: str) -> bytes | None:
    """`GET /apis/<group>`: APIGroup, or None when the group is not served."""
    found = [vs for g, vs in catalog.groups() if g == group and group]
    if not found:
        return None

    def build() -> bytes:
        doc = {"kind": "APIGroup", "apiVersion": "v1", **_group_doc(group, found[0])}
        return orjson.dumps(doc)

    return _memo(catalog, ("api_group", group), build)


def _legacy_entries(rt: ResourceType) -> list[dict[str, Any]]:
    entry: dict[str, Any] = {
        "name": rt.plural,
        "singularName": rt.singular,
        "namespaced": rt.namespaced,
        "kind": rt.kind,
        "verbs": list(rt.verbs),
    }
    if rt.short_names:
        entry["shortNames"] = list(rt.short_names)
    if rt.categories:
        entry["categories"] = list(rt.categories)
    entry["storageVersionHash"] = rt.storage_version_hash
    entries = [entry]
    for sub in rt.subresources:
        # Subresources are separate entries; group/version only when they differ (e.g. Scale).
        sub_entry: dict[str, Any] = {
            "name": f"{rt.plural}/{sub.name}",
            "singularName": "",
            "namespaced": rt.namespaced,
        }
        if (sub.group, sub.version) != (rt.group, rt.version):
            sub_entry["group"] = sub.group
            sub_entry["version"] = sub.version
        sub_entry["kind"] = sub.kind
        sub_entry["verbs"] = list(sub.verbs)
        entries.append(sub_entry)
    return entries


def api_resource_list(catalog: Catalog, group: str, version: str) -> bytes | None:
    """`GET /api/v1` or `/apis/<g>/<v>`: APIResourceList, or None when not served."""
    base = catalog.base
    if base is not None and not catalog.owns_group_version(group, version):
        return api_resource_list(base, group, version)
    types = catalog.resources(group, version)
    if not types:
        return None

    def build() -> bytes:
        resources = [e for rt in types for e in _legacy_entries(rt)]
        doc: dict[str, Any] = {
            "kind": "APIResourceList",
            "apiVersion": "v1",
            "groupVersion": types[0].group_version,
            "resources": resources,
        }
        return orjson.dumps(doc)

    return _memo(catalog, ("api_resource_list", group, version), build)


def _gvk(group: str, version: str, kind: str) -> dict[str, str]:
    return {"group": group, "version": version, "kind": kind}


def _aggregated_resource(rt: ResourceType) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "resource": rt.plural,
        "responseKind": _gvk(rt.group, rt.version, rt.kind),
        "scope": "Namespaced" if rt.namespaced else "Cluster",
        "singularResource": rt.singular,
        "verbs": list(rt.verbs),
    }
    if rt.short_names:
        entry["shortNames"] = list(rt.short_names)
    if rt.categories:
        entry["categories"] = list(rt.categories)
    if rt.subresources:
        entry["subresources"] = [
            {
                "subresource": sub.name,
                "responseKind": _gvk(sub.group, sub.version, sub.kind),
                "verbs": list(sub.verbs),
            }
            for sub in rt.subresources
        ]
    return entry


def _aggregated_versions(catalog: Catalog, group: str, versions: list[str]) -> list[Any]:
    return [
        {
            "version": v,
            "resources": [_aggregated_resource(rt) for rt in catalog.resources(group, v)],
            "freshness": "Current",
        }
        for v in versions
    ]


def aggregated(catalog: Catalog, *, legacy: bool, version: AggregatedVersion = "v2") -> bytes:
    """APIGroupDiscoveryList for `/api` (legacy=True: the core group) or `/apis` (named groups).

    Send it with `AGGREGATED_CONTENT_TYPE[version]`, only when the client asked for it.
    """
    base = catalog.base
    if base is not None and legacy and not catalog.owns_group_version("", "v1"):
        return aggregated(base, legacy=legacy, version=version)

    def build() -> bytes:
        items = []
        for group, versions in catalog.groups():
            if (group == "") != legacy:
                continue
            # ObjectMeta serializes its zero creationTimestamp as null, as upstream shows it.
            meta: dict[str, Any] = {"name": group} if group else {}
            meta["creationTimestamp"] = None
            items.append(
                {"metadata": meta, "versions": _aggregated_versions(catalog, group, versions)}
            )
        doc = {
            "kind": "APIGroupDiscoveryList",
            "apiVersion": f"apidiscovery.k8s.io/{version}",
            "metadata": {},
            "items": items,
        }
        return orjson.dumps(doc)

    return _memo(catalog, ("aggregated", legacy, version), build)

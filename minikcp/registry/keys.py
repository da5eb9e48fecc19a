"""Storage keys, kcp's layout: /registry/<group|core>/<resource>/<cluster>/[<namespace>/]<name>.

Resources that are one store seen through two APIs share the key of the one upstream stores
(events.k8s.io/v1 Events are core/v1 Events). Custom resources (kinds served from a CRD) live under
/registry/<group>/<resource>/customresources/<cluster>/[<namespace>/]<name>, as in kcp, and kinds
bound from an APIExport under /registry/<group>/<resource>/<identityHash>/<cluster>/..., the
export's identity in place of `customresources`: two exports of one group and resource never share
a prefix, and one prefix holds an export's resource in every consumer. One prefix selects a
resource across all logical clusters, in one cluster, or in one namespace.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass

from minikcp.apis import catalog

# (group, resource) -> the (group, resource) whose objects it serves.
_SHARED_STORAGE = {("events.k8s.io", "events"): ("", "events")}


def identity_prefix(group: str, resource: str, identity: str) -> str:
    """The objects of an exported resource in every logical cluster that binds the export."""
    return f"/registry/{group or 'core'}/{resource}/{identity}/"


def resource_prefix(rt: catalog.ResourceType) -> str:
    if rt.custom is not None:
        if rt.custom.identity:
            return identity_prefix(rt.group, rt.plural, rt.custom.identity)
        return f"/registry/{rt.group}/{rt.plural}/customresources/"
    group, plural = _SHARED_STORAGE.get((rt.group, rt.plural), (rt.group, rt.plural))
    return f"/registry/{group or 'core'}/{plural}/"


def object_key(rt: catalog.ResourceType, cluster: str, namespace: str, name: str) -> str:
    return object_key_under(resource_prefix(rt), rt.namespaced, cluster, namespace, name)


def object_key_under(prefix: str, namespaced: bool, cluster: str, namespace: str, name: str) -> str:
    """object_key with the type's resource_prefix known (a store keeps its own)."""
    # Interned: every write builds its key anew, and the store's cache, the watch ring and the
    # work queues then hold one string per object rather than one per write.
    if namespaced:
        return sys.intern(f"{prefix}{cluster}/{namespace}/{name}")
    return sys.intern(f"{prefix}{cluster}/{name}")


def list_prefix(rt: catalog.ResourceType, cluster: str | None, namespace: str = "") -> str:
    """cluster None lists across all logical clusters; namespace "" lists all namespaces."""
    prefix = resource_prefix(rt)
    if cluster is None:
        return prefix
    if rt.namespaced and namespace:
        return f"{prefix}{cluster}/{namespace}/"
    return f"{prefix}{cluster}/"


def namespace_prefix(rt: catalog.ResourceType, cluster: str, namespace: str) -> str:
    return f"{resource_prefix(rt)}{cluster}/{namespace}/"


@dataclass(frozen=True, slots=True)
class ObjectKey:
    cluster: str
    namespace: str
    name: str


def parse_key(rt: catalog.ResourceType, key: str) -> ObjectKey:
    rest = key[len(resource_prefix(rt)) :]
    if rt.namespaced:
        cluster, namespace, name = rest.split("/", 2)
        return ObjectKey(cluster, namespace, name)
    cluster, name = rest.split("/", 1)
    return ObjectKey(cluster, "", name)


def cluster_of(rt: catalog.ResourceType, key: str) -> str:
    rest = key[len(resource_prefix(rt)) :]
    return rest.split("/", 1)[0]


@dataclass(frozen=True, slots=True)
class SplitKey:
    """Any object's key taken apart without knowing its type (see `split`)."""

    prefix: str  # the resource prefix, as `resource_prefix` gives it
    cluster: str
    namespace: str  # "" for cluster-scoped objects
    name: str


def split(key: str) -> SplitKey | None:
    """The parts of an object key of any resource type; None for keys that name no object."""
    parts = key.split("/")
    # "", "registry", group, resource, [customresources,] cluster, [namespace,] name
    if len(parts) < 6 or parts[1] != "registry":
        return None
    head = 5 if parts[4] == "customresources" else 4
    rest = parts[head:]
    if len(rest) == 2:
        return SplitKey("/".join(parts[:head]) + "/", rest[0], "", rest[1])
    if len(rest) == 3:
        return SplitKey("/".join(parts[:head]) + "/", rest[0], rest[1], rest[2])
    return None

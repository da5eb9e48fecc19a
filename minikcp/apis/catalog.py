"""What the server serves: resource types, their discovery data and their upstream schemas.

A `Catalog` is an immutable set of `ResourceType`s with the lookups the request path needs. The
built-in catalog is computed once per process; a logical cluster with CRDs gets `extended()`, which
keeps only its extra kinds and delegates everything else to the shared built-ins, so that documents
derived from the built-ins (discovery, OpenAPI, compiled schemas) are computed once and shared.
"""

from __future__ import annotations

import functools
import importlib.resources
import re
from collections.abc import Iterable, Mapping
from typing import Any

import orjson

from minikcp.apis import kcp_kinds

# The shared types live below both this module and the kcp-style kinds; they are named here too,
# as the catalog is where the rest of the server looks them up.
from minikcp.apis.resource_types import CRUD_VERBS as CRUD_VERBS
from minikcp.apis.resource_types import STATUS_VERBS as STATUS_VERBS
from minikcp.apis.resource_types import CustomResource as CustomResource
from minikcp.apis.resource_types import ResourceType as ResourceType
from minikcp.apis.resource_types import Schema as Schema
from minikcp.apis.resource_types import Subresource as Subresource

KUBERNETES_MINOR = 32
_DEFINITIONS_FILE = "kubernetes-json-schema/v1.32.0-local/_definitions.json"


@functools.cache
def upstream_definitions() -> Mapping[str, Schema]:
    """The `$defs` of the pinned upstream JSON schemas (kubernetes-validate), loaded once, plus
    those of minikcp's kcp-style kinds (`kcp_kinds`), which are served like built-ins."""
    root = importlib.resources.files("kubernetes_validate")
    data = orjson.loads(root.joinpath(_DEFINITIONS_FILE).read_bytes())
    defs: dict[str, Schema] = data["$defs"]
    defs.update(kcp_kinds.definitions())
    return defs


def _status(group: str, version: str, kind: str) -> Subresource:
    return Subresource("status", group, version, kind, STATUS_VERBS)


_SCALE = Subresource("scale", "autoscaling", "v1", "Scale", STATUS_VERBS)
_TOKEN = Subresource("token", "authentication.k8s.io", "v1", "TokenRequest", ("create",))
# The streaming subresources of pods (kube-apiserver's connect storage: GET or POST).
_CONNECT_VERBS = ("create", "get")
_POD_STREAMS = {
    "log": Subresource("log", "", "v1", "Pod", ("get",)),
    "exec": Subresource("exec", "", "v1", "PodExecOptions", _CONNECT_VERBS),
    "attach": Subresource("attach", "", "v1", "PodAttachOptions", _CONNECT_VERBS),
    "portforward": Subresource("portforward", "", "v1", "PodPortForwardOptions", _CONNECT_VERBS),
}


def _rt(
    gv: str,
    kind: str,
    plural: str,
    *,
    namespaced: bool,
    short: tuple[str, ...] = (),
    categories: tuple[str, ...] = (),
    verbs: tuple[str, ...] = CRUD_VERBS,
    subs: tuple[str, ...] = (),
    definition: str = "",
    storage_gvk: tuple[str, str, str] | None = None,
) -> ResourceType:
    group, _, version = gv.rpartition("/")
    subresources = []
    for sub in subs:
        if sub == "status":
            subresources.append(_status(group, version, kind))
        elif sub == "scale":
            subresources.append(_SCALE)
        elif sub == "token":
            subresources.append(_TOKEN)
        elif sub == "finalize":
            subresources.append(Subresource("finalize", group, version, kind, ("update",)))
        elif sub in _POD_STREAMS:
            subresources.append(_POD_STREAMS[sub])
    package = _PACKAGES[group]
    return ResourceType(
        group=group,
        version=version,
        kind=kind,
        plural=plural,
        singular=kind.lower(),
        namespaced=namespaced,
        short_names=short,
        categories=categories,
        verbs=verbs,
        # Create-only kinds (reviews) have no list.
        list_kind=f"{kind}List" if "list" in verbs else "",
        definition=definition or f"{package}.{version}.{kind}",
        subresources=tuple(sorted(subresources, key=lambda s: s.name)),
        storage_gvk=storage_gvk,
    )


# Where each group's Go types live, which names their schemas.
_PACKAGES = {
    "": "io.k8s.api.core",
    "apps": "io.k8s.api.apps",
    "batch": "io.k8s.api.batch",
    "events.k8s.io": "io.k8s.api.events",
    "networking.k8s.io": "io.k8s.api.networking",
    "coordination.k8s.io": "io.k8s.api.coordination",
    "rbac.authorization.k8s.io": "io.k8s.api.rbac",
    "apiextensions.k8s.io": "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions",
    "authorization.k8s.io": "io.k8s.api.authorization",
    "authentication.k8s.io": "io.k8s.api.authentication",
    "autoscaling": "io.k8s.api.autoscaling",
    "policy": "io.k8s.api.policy",
    "discovery.k8s.io": "io.k8s.api.discovery",
    "scheduling.k8s.io": "io.k8s.api.scheduling",
}

# The workload kinds Helm charts ship beside Deployments (discovery data as for BUILTIN_TYPES).
_WORKLOAD_TYPES: tuple[ResourceType, ...] = (
    _rt(
        "apps/v1",
        "StatefulSet",
        "statefulsets",
        namespaced=True,
        short=("sts",),
        categories=("all",),
        subs=("scale", "status"),
    ),
    _rt(
        "apps/v1",
        "DaemonSet",
        "daemonsets",
        namespaced=True,
        short=("ds",),
        categories=("all",),
        subs=("status",),
    ),
    _rt("apps/v1", "ControllerRevision", "controllerrevisions", namespaced=True),
    _rt(
        "batch/v1",
        "CronJob",
        "cronjobs",
        namespaced=True,
        short=("cj",),
        categories=("all",),
        subs=("status",),
    ),
    _rt(
        "v1",
        "PersistentVolumeClaim",
        "persistentvolumeclaims",
        namespaced=True,
        short=("pvc",),
        subs=("status",),
    ),
    _rt(
        "autoscaling/v2",
        "HorizontalPodAutoscaler",
        "horizontalpodautoscalers",
        namespaced=True,
        short=("hpa",),
        categories=("all",),
        subs=("status",),
    ),
    _rt(
        "policy/v1",
        "PodDisruptionBudget",
        "poddisruptionbudgets",
        namespaced=True,
        short=("pdb",),
        subs=("status",),
    ),
    _rt(
        "networking.k8s.io/v1",
        "NetworkPolicy",
        "networkpolicies",
        namespaced=True,
        short=("netpol",),
    ),
    _rt("networking.k8s.io/v1", "IngressClass", "ingressclasses", namespaced=False),
    _rt("discovery.k8s.io/v1", "EndpointSlice", "endpointslices", namespaced=True),
    _rt(
        "scheduling.k8s.io/v1",
        "PriorityClass",
        "priorityclasses",
        namespaced=False,
        short=("pc",),
    ),
)

# Discovery data as a 1.32 kube-apiserver shows it (short names and categories come from each
# kind's REST storage: ShortNames()/Categories() in pkg/registry).
BUILTIN_TYPES: tuple[ResourceType, ...] = (
    _rt("v1", "ConfigMap", "configmaps", namespaced=True, short=("cm",)),
    _rt("v1", "Endpoints", "endpoints", namespaced=True, short=("ep",)),
    _rt("v1", "Event", "events", namespaced=True, short=("ev",)),
    _rt("v1", "LimitRange", "limitranges", namespaced=True, short=("limits",)),
    _rt(
        "v1",
        "Namespace",
        "namespaces",
        namespaced=False,
        short=("ns",),
        verbs=("create", "delete", "get", "list", "patch", "update", "watch"),
        subs=("finalize", "status"),
    ),
    _rt(
        "v1",
        "Pod",
        "pods",
        namespaced=True,
        short=("po",),
        categories=("all",),
        subs=("attach", "exec", "log", "portforward", "status"),
    ),
    _rt(
        "v1",
        "ReplicationController",
        "replicationcontrollers",
        namespaced=True,
        short=("rc",),
        categories=("all",),
        subs=("scale", "status"),
    ),
    _rt(
        "v1",
        "ResourceQuota",
        "resourcequotas",
        namespaced=True,
        short=("quota",),
        subs=("status",),
    ),
    _rt("v1", "Secret", "secrets", namespaced=True),
    _rt("v1", "ServiceAccount", "serviceaccounts", namespaced=True, short=("sa",), subs=("token",)),
    _rt(
        "v1",
        "Service",
        "services",
        namespaced=True,
        short=("svc",),
        categories=("all",),
        subs=("status",),
    ),
    _rt(
        "apps/v1",
        "Deployment",
        "deployments",
        namespaced=True,
        short=("deploy",),
        categories=("all",),
        subs=("scale", "status"),
    ),
    _rt(
        "apps/v1",
        "ReplicaSet",
        "replicasets",
        namespaced=True,
        short=("rs",),
        categories=("all",),
        subs=("scale", "status"),
    ),
    *_WORKLOAD_TYPES,
    _rt(
        "events.k8s.io/v1",
        "Event",
        "events",
        namespaced=True,
        short=("ev",),
        # Stored together with core events (cohabiting resources), hence core's hash.
        storage_gvk=("", "v1", "Event"),
    ),
    _rt("batch/v1", "Job", "jobs", namespaced=True, categories=("all",), subs=("status",)),
    _rt(
        "networking.k8s.io/v1",
        "Ingress",
        "ingresses",
        namespaced=True,
        short=("ing",),
        subs=("status",),
    ),
    _rt("coordination.k8s.io/v1", "Lease", "leases", namespaced=True),
    _rt(
        "rbac.authorization.k8s.io/v1",
        "ClusterRoleBinding",
        "clusterrolebindings",
        namespaced=False,
    ),
    _rt("rbac.authorization.k8s.io/v1", "ClusterRole", "clusterroles", namespaced=False),
    _rt("rbac.authorization.k8s.io/v1", "RoleBinding", "rolebindings", namespaced=True),
    _rt("rbac.authorization.k8s.io/v1", "Role", "roles", namespaced=True),
    _rt(
        "apiextensions.k8s.io/v1",
        "CustomResourceDefinition",
        "customresourcedefinitions",
        namespaced=False,
        short=("crd", "crds"),
        categories=("api-extensions",),
        subs=("status",),
    ),
    _rt(
        "authorization.k8s.io/v1",
        "SelfSubjectAccessReview",
        "selfsubjectaccessreviews",
        namespaced=False,
        verbs=("create",),
    ),
    _rt(
        "authorization.k8s.io/v1",
        "SelfSubjectRulesReview",
        "selfsubjectrulesreviews",
        namespaced=False,
        verbs=("create",),
    ),
    _rt(
        "authorization.k8s.io/v1",
        "SubjectAccessReview",
        "subjectaccessreviews",
        namespaced=False,
        verbs=("create",),
    ),
    _rt(
        "authentication.k8s.io/v1",
        "SelfSubjectReview",
        "selfsubjectreviews",
        namespaced=False,
        verbs=("create",),
    ),
)

# Served only by a process that simulates a physical cluster (`--simulate-workloads`): kcp
# serves no Nodes in logical clusters, a physical cluster does.
NODE_TYPE: ResourceType = _rt(
    "v1", "Node", "nodes", namespaced=False, short=("no",), subs=("status",)
)

# kube-aggregator's group priorities (pkg/controlplane/apiserver/aggregator.go): /apis lists
# groups by descending priority, then by name. CRD groups come last (priority 1000).
_GROUP_PRIORITY = {
    "": 1_000_000,
    "apiregistration.k8s.io": 18000,
    "apps": 17800,
    "events.k8s.io": 17750,
    "authentication.k8s.io": 17700,
    "authorization.k8s.io": 17600,
    "autoscaling": 17500,
    "batch": 17400,
    "certificates.k8s.io": 17300,
    "networking.k8s.io": 17200,
    "policy": 17100,
    "rbac.authorization.k8s.io": 17000,
    "storage.k8s.io": 16800,
    "admissionregistration.k8s.io": 16700,
    "apiextensions.k8s.io": 16700,
    "scheduling.k8s.io": 16600,
    "coordination.k8s.io": 16500,
    "node.k8s.io": 16300,
    "discovery.k8s.io": 16200,
    "flowcontrol.apiserver.k8s.io": 16100,
}
_CRD_GROUP_PRIORITY = 1000

_KUBE_VERSION = re.compile(r"^v(\d+)(?:(alpha|beta)(\d+))?$")


def version_priority(version: str) -> tuple[int, int, int, str]:
    """Sort key putting versions in kube order: v2 > v1 > v1beta2 > v1beta1 > v1alpha1 > others."""
    m = _KUBE_VERSION.match(version)
    if m is None:
        return (3, 0, 0, version)  # not kube-like: last, alphabetically
    major = int(m.group(1))
    stage = {"": 0, "beta": 1, "alpha": 2}[m.group(2) or ""]
    minor = int(m.group(3) or 0)
    return (stage, -major, -minor, "")


def _group_key(group: str) -> tuple[int, str]:
    return (-_GROUP_PRIORITY.get(group, _CRD_GROUP_PRIORITY), group)


class Catalog:
    """An immutable set of served resource types.

    `extended()` layers extra types over a base catalog without copying it; lookups try the extras
    first. `memo` is a per-catalog cache for documents derived from it (discovery, OpenAPI, compiled
    schemas); it only ever holds values computed from this immutable catalog.
    """

    __slots__ = (
        "_base",
        "_by_kind",
        "_by_name",
        "_by_resource",
        "_groups",
        "_own_group_versions",
        "_schemas",
        "_types",
        "memo",
    )

    def __init__(
        self,
        types: Iterable[ResourceType],
        *,
        schemas: Mapping[str, Schema] | None = None,
        base: Catalog | None = None,
    ) -> None:
        self._base = base
        self._types: tuple[ResourceType, ...] = tuple(types)
        self._schemas: Mapping[str, Schema] = schemas if schemas is not None else {}
        self._by_resource: dict[tuple[str, str, str], ResourceType] = {}
        self._by_kind: dict[tuple[str, str, str], ResourceType] = {}
        self._by_name: dict[tuple[str, str, str], ResourceType] = {}
        for rt in self._types:
            key = (rt.group, rt.version, rt.plural)
            if key in self._by_resource:
                raise ValueError(f"duplicate resource {rt.group_version}/{rt.plural}")
            self._by_resource[key] = rt
            self._by_kind[(rt.group, rt.version, rt.kind)] = rt
            for name in (*rt.names(), rt.kind.lower()):
                self._by_name.setdefault((rt.group, rt.version, name), rt)
        self._own_group_versions = frozenset((rt.group, rt.version) for rt in self._types)
        self._groups = self._compute_groups()
        self.memo: dict[Any, Any] = {}

    @staticmethod
    def builtin() -> Catalog:
        """The shared catalog of built-in kinds (one instance per process)."""
        return _builtin_catalog()

    def extended(
        self, types: Iterable[ResourceType], *, schemas: Mapping[str, Schema] | None = None
    ) -> Catalog:
        """This catalog plus `types` (and their extra `schemas`); self when there is nothing new."""
        extra = tuple(types)
        if not extra and not schemas:
            return self
        return Catalog(extra, schemas=schemas, base=self)

    @property
    def base(self) -> Catalog | None:
        return self._base

    # -- lookups --------------------------------------------------------------------------

    def by_resource(self, group: str, version: str, plural: str) -> ResourceType | None:
        rt = self._by_resource.get((group, version, plural))
        if rt is None and self._base is not None:
            return self._base.by_resource(group, version, plural)
        return rt

    def by_kind(self, group: str, version: str, kind: str) -> ResourceType | None:
        rt = self._by_kind.get((group, version, kind))
        if rt is None and self._base is not None:
            return self._base.by_kind(group, version, kind)
        return rt

    def resolve(self, group: str, version: str, name_or_short: str) -> ResourceType | None:
        """A type by plural, singular, short name or kind (any case); version "" = preferred."""
        if not version:
            for g, versions in self._groups:
                if g == group:
                    version = versions[0]
                    break
            else:
                return None
        rt = self._by_name.get((group, version, name_or_short.lower()))
        if rt is None and self._base is not None:
            return self._base.resolve(group, version, name_or_short)
        return rt

    def groups(self) -> list[tuple[str, list[str]]]:
        """(group, versions in preference order), core group first, in upstream group order."""
        return [(g, list(vs)) for g, vs in self._groups]

    def resources(self, group: str, version: str) -> list[ResourceType]:
        """The types served in one group/version, sorted by plural as upstream lists them."""
        own = [rt for rt in self._types if rt.group == group and rt.version == version]
        inherited = self._base.resources(group, version) if self._base is not None else []
        # An extra type shadows a base type with the same plural.
        plurals = {rt.plural for rt in own}
        merged = own + [rt for rt in inherited if rt.plural not in plurals]
        return sorted(merged, key=lambda rt: rt.plural)

    def all_types(self) -> list[ResourceType]:
        return [
            rt
            for group, versions in self._groups
            for v in versions
            for rt in self.resources(group, v)
        ]

    def owns_group_version(self, group: str, version: str) -> bool:
        """Whether this layer (not its base) adds types to group/version."""
        return (group, version) in self._own_group_versions

    def schema(self, name: str) -> Schema | None:
        """A schema by definition name: extra schemas (this layer, then the base), then upstream."""
        found = self._schemas.get(name)
        if found is not None:
            return found
        if self._base is not None:
            return self._base.schema(name)
        return upstream_definitions().get(name)

    def schema_owner(self, name: str) -> Catalog:
        """The catalog layer whose memo should cache things derived from schema `name`."""
        if name in self._schemas or self._base is None:
            return self
        return self._base.schema_owner(name)

    @property
    def extra_schemas(self) -> Mapping[str, Schema]:
        return self._schemas

    def _compute_groups(self) -> tuple[tuple[str, tuple[str, ...]], ...]:
        versions: dict[str, set[str]] = {}
        if self._base is not None:
            for group, vs in self._base.groups():
                versions.setdefault(group, set()).update(vs)
        for rt in self._types:
            versions.setdefault(rt.group, set()).add(rt.version)
        return tuple(
            (group, tuple(sorted(versions[group], key=version_priority)))
            for group in sorted(versions, key=_group_key)
        )


@functools.cache
def _builtin_catalog() -> Catalog:
    return Catalog(BUILTIN_TYPES + kcp_kinds.resource_types())

"""Served types from CustomResourceDefinitions, and the CRD name conditions.

`served_types(crd)` turns one apiextensions.k8s.io/v1 CRD into a `ResourceType` per served version
plus the OpenAPI v3 schemas of its kinds (as apiextensions-apiserver's builder publishes them:
the version's openAPIV3Schema with apiVersion, kind and metadata filled in, and a list kind).
`name_conditions(crds)` decides, for the CRDs of one logical cluster, which names are accepted,
as upstream's NamingConditionController: a plural, singular, short name, kind or list kind
already accepted for another CRD of the same group is a conflict, and that CRD is not served.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import orjson

from minikcp.apis import catalog

Obj = Mapping[str, Any]

GROUP = "apiextensions.k8s.io"
CLEANUP_FINALIZER = "customresourcecleanup.apiextensions.k8s.io"
_META_REF = "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
_LIST_META_REF = "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ListMeta"


def _map(value: Any) -> Obj:
    return value if isinstance(value, Mapping) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _strings(value: Any) -> tuple[str, ...]:
    return tuple(v for v in _list(value) if isinstance(v, str))


def condition(crd: Obj, kind: str) -> Obj | None:
    for cond in _list(_map(crd.get("status")).get("conditions")):
        if _map(cond).get("type") == kind:
            return _map(cond)
    return None


def is_established(crd: Obj) -> bool:
    """Served: Established=True and not being deleted."""
    found = condition(crd, "Established")
    return (
        found is not None
        and found.get("status") == "True"
        and not _map(crd.get("metadata")).get("deletionTimestamp")
    )


def definition_name(group: str, version: str, kind: str) -> str:
    """The OpenAPI definition name upstream gives a CRD kind: reversed group, version, kind."""
    return ".".join([*reversed(group.split(".")), version, kind])


def _gvk(group: str, version: str, kind: str) -> list[dict[str, str]]:
    return [{"group": group, "kind": kind, "version": version}]


def kind_schema(group: str, version: str, kind: str, schema: Obj) -> dict[str, Any]:
    """The published schema of a custom kind: its own, with the envelope fields upstream adds."""
    out = dict(schema)
    props = dict(_map(schema.get("properties")))
    props["apiVersion"] = {
        "description": (
            "APIVersion defines the versioned schema of this representation of an object. "
            "Servers should convert recognized schemas to the latest internal value, and may "
            "reject unrecognized values. More info: https://git.k8s.io/community/contributors/"
            "devel/sig-architecture/api-conventions.md#resources"
        ),
        "type": "string",
    }
    props["kind"] = {
        "description": (
            "Kind is a string value representing the REST resource this object represents. "
            "Servers may infer this from the endpoint the client submits requests to. Cannot "
            "be updated. In CamelCase. More info: https://git.k8s.io/community/contributors/"
            "devel/sig-architecture/api-conventions.md#types-kinds"
        ),
        "type": "string",
    }
    props["metadata"] = {
        "allOf": [{"$ref": _META_REF}],
        "description": (
            "Standard object's metadata. More info: https://git.k8s.io/community/contributors/"
            "devel/sig-architecture/api-conventions.md#metadata"
        ),
    }
    out["type"] = "object"
    out["properties"] = props
    out["x-kubernetes-group-version-kind"] = _gvk(group, version, kind)
    return out


def _list_schema(group: str, version: str, kind: str, list_kind: str) -> dict[str, Any]:
    return {
        "description": f"{list_kind} is a list of {kind}",
        "type": "object",
        "required": ["items"],
        "properties": {
            "apiVersion": {"type": "string"},
            "items": {
                "description": (
                    f"List of {kind.lower()}s. More info: https://git.k8s.io/community/"
                    "contributors/devel/sig-architecture/api-conventions.md"
                ),
                "type": "array",
                "items": {"$ref": f"#/components/schemas/{definition_name(group, version, kind)}"},
            },
            "kind": {"type": "string"},
            "metadata": {"allOf": [{"$ref": _LIST_META_REF}]},
        },
        "x-kubernetes-group-version-kind": _gvk(group, version, list_kind),
    }


@dataclass(frozen=True, slots=True)
class ServedTypes:
    types: tuple[catalog.ResourceType, ...]
    schemas: Mapping[str, Obj]


def served_types(crd: Obj) -> ServedTypes:
    """The types and schemas a (valid, accepted) CRD serves: one per served version."""
    spec = _map(crd.get("spec"))
    # Served under the names the controller accepted (a later conflicting change of spec.names
    # is not served); before any were accepted, under spec.names.
    accepted = _map(_map(crd.get("status")).get("acceptedNames"))
    names = accepted if accepted.get("plural") else _map(spec.get("names"))
    group = str(spec.get("group") or "")
    kind = str(names.get("kind") or "")
    list_kind = str(names.get("listKind") or f"{kind}List")
    plural = str(names.get("plural") or "")
    versions = [_map(v) for v in _list(spec.get("versions"))]
    storage = next((str(v.get("name")) for v in versions if v.get("storage") is True), "")
    types: list[catalog.ResourceType] = []
    schemas: dict[str, Obj] = {}
    for version in versions:
        if not version.get("served"):
            continue
        name = str(version.get("name") or "")
        schema = _map(_map(version.get("schema")).get("openAPIV3Schema"))
        subs = _map(version.get("subresources"))
        subresources: list[catalog.Subresource] = []
        scale_paths: tuple[str, str, str] | None = None
        if "scale" in subs:
            scale = _map(subs.get("scale"))
            scale_paths = (
                str(scale.get("specReplicasPath") or ""),
                str(scale.get("statusReplicasPath") or ""),
                str(scale.get("labelSelectorPath") or ""),
            )
            subresources.append(
                catalog.Subresource("scale", "autoscaling", "v1", "Scale", catalog.STATUS_VERBS)
            )
        if "status" in subs:
            subresources.append(
                catalog.Subresource("status", group, name, kind, catalog.STATUS_VERBS)
            )
        definition = definition_name(group, name, kind)
        schemas[definition] = kind_schema(group, name, kind, schema)
        schemas[definition_name(group, name, list_kind)] = _list_schema(
            group, name, kind, list_kind
        )
        types.append(
            catalog.ResourceType(
                group=group,
                version=name,
                kind=kind,
                plural=plural,
                singular=str(names.get("singular") or kind.lower()),
                namespaced=spec.get("scope") == "Namespaced",
                short_names=_strings(names.get("shortNames")),
                categories=_strings(names.get("categories")),
                list_kind=list_kind,
                definition=definition,
                subresources=tuple(sorted(subresources, key=lambda s: s.name)),
                builtin=False,
                storage_gvk=(group, storage, kind),
                custom=catalog.CustomResource(
                    schema=orjson.dumps(schema, option=orjson.OPT_SORT_KEYS),
                    printer_columns=orjson.dumps(_list(version.get("additionalPrinterColumns"))),
                    scale_paths=scale_paths,
                ),
            )
        )
    return ServedTypes(tuple(types), schemas)


def storage_type(crd: Obj) -> catalog.ResourceType | None:
    """A type of the CRD whatever its served flags (all its versions share one storage prefix)."""
    spec = dict(_map(crd.get("spec")))
    spec["versions"] = [{**_map(v), "served": True} for v in _list(spec.get("versions"))]
    types = served_types({**crd, "spec": spec}).types
    return types[0] if types else None


def extended_catalog(
    base: catalog.Catalog, crds: Iterable[Obj], bound: Iterable[ServedTypes] = ()
) -> catalog.Catalog:
    """`base` plus the kinds `bound` from APIExports and those of the established `crds` (a
    type already served is kept once: the first wins)."""
    types: list[catalog.ResourceType] = []
    schemas: dict[str, Obj] = {}
    seen: set[tuple[str, str, str]] = set()
    for served in (*bound, *(served_types(crd) for crd in crds)):
        if any((rt.group, rt.version, rt.plural) in seen for rt in served.types):
            continue
        if any(base.by_resource(rt.group, rt.version, rt.plural) for rt in served.types):
            continue  # built-in resources are never shadowed
        seen.update((rt.group, rt.version, rt.plural) for rt in served.types)
        types.extend(served.types)
        schemas.update(served.schemas)
    return base.extended(types, schemas=schemas)


# -- names: NamesAccepted and Established ---------------------------------------------------


def _names(spec_names: Obj) -> dict[str, Any]:
    kind = str(spec_names.get("kind") or "")
    return {
        "plural": str(spec_names.get("plural") or ""),
        "singular": str(spec_names.get("singular") or kind.lower()),
        "shortNames": list(_strings(spec_names.get("shortNames"))),
        "kind": kind,
        "listKind": str(spec_names.get("listKind") or f"{kind}List"),
        "categories": list(_strings(spec_names.get("categories"))),
    }


def _taken(names: Obj) -> tuple[set[str], set[str]]:
    resources = {names["plural"], names["singular"], *names["shortNames"]} - {""}
    kinds = {names["kind"], names["listKind"]} - {""}
    return resources, kinds


def _conflict(names: Obj, resources: set[str], kinds: set[str]) -> tuple[str, str] | None:
    """(reason, message) of the first conflict, in upstream's order and words."""
    if names["plural"] in resources:
        return "PluralConflict", f'"{names["plural"]}" is already in use'
    if names["singular"] in resources:
        return "SingularConflict", f'"{names["singular"]}" is already in use'
    for short in names["shortNames"]:
        if short in resources:
            return "ShortNamesConflict", f'"{short}" is already in use'
    if names["kind"] in kinds:
        return "KindConflict", f'"{names["kind"]}" is already in use'
    if names["listKind"] in kinds:
        return "ListKindConflict", f'"{names["listKind"]}" is already in use'
    return None


@dataclass(frozen=True, slots=True)
class NameDecision:
    accepted_names: Mapping[str, Any]
    names_accepted: tuple[str, str, str]  # status, reason, message
    established: tuple[str, str, str]


def served_names(base: catalog.Catalog) -> dict[str, tuple[set[str], set[str]]]:
    """By group: the resource names and kinds `base` serves, which no CRD may take (as kcp's
    crdnooverlappinggvr admission keeps CRDs off the APIs a workspace already has)."""
    out: dict[str, tuple[set[str], set[str]]] = {}
    for rt in base.all_types():
        resources, kinds = out.setdefault(rt.group, (set(), set()))
        resources.update(n for n in rt.names() if n)
        kinds.update(k for k in (rt.kind, rt.list_kind) if k)
    return out


def name_conditions(
    crds: Sequence[Obj], reserved: Mapping[str, tuple[set[str], set[str]]] | None = None
) -> dict[str, NameDecision]:
    """By CRD name: the accepted names and the NamesAccepted/Established conditions.

    CRDs whose names were accepted before keep them (first come, first served); the others are
    considered in creation order. A refused CRD that was never established is not established.
    `reserved` names (by group) are taken before any CRD (see `served_names`).
    """

    def order(crd: Obj) -> tuple[int, str, str]:
        meta = _map(crd.get("metadata"))
        accepted = _map(_map(crd.get("status")).get("acceptedNames")).get("plural")
        created = str(meta.get("creationTimestamp") or "")
        return (0 if accepted else 1, created, str(meta.get("name") or ""))

    used: dict[str, tuple[set[str], set[str]]] = {
        group: (set(resources), set(kinds))
        for group, (resources, kinds) in (reserved or {}).items()
    }
    out: dict[str, NameDecision] = {}
    for crd in sorted(crds, key=order):
        name = str(_map(crd.get("metadata")).get("name") or "")
        spec = _map(crd.get("spec"))
        group = str(spec.get("group") or "")
        wanted = _names(_map(spec.get("names")))
        resources, kinds = used.setdefault(group, (set(), set()))
        conflict = _conflict(wanted, resources, kinds)
        was_established = condition(crd, "Established")
        if conflict is None:
            own_resources, own_kinds = _taken(wanted)
            resources.update(own_resources)
            kinds.update(own_kinds)
            out[name] = NameDecision(
                wanted,
                ("True", "NoConflicts", "no conflicts found"),
                ("True", "InitialNamesAccepted", "the initial names have been accepted"),
            )
            continue
        reason, message = conflict
        previous = _map(_map(crd.get("status")).get("acceptedNames"))
        established = (
            ("True", "InitialNamesAccepted", "the initial names have been accepted")
            if was_established is not None and was_established.get("status") == "True"
            else ("False", "NotAccepted", "not all names are accepted")
        )
        out[name] = NameDecision(
            dict(previous) if previous else {"plural": "", "kind": ""},
            ("False", reason, message),
            established,
        )
    return out

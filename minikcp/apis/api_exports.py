"""APIs as a service, the pure parts: APIResourceSchemas as served types, their admission checks,
export identities, and the words kcp uses for them.

An APIResourceSchema's spec is a CRD spec whose versions carry the OpenAPI schema directly
(`versions[].schema`); `as_crd` gives it the CRD's shape, so the CRD machinery (validation,
served types, OpenAPI, tables) serves bound kinds unchanged. `bound_types` marks the types with
the export's identity hash, which keys their objects apart from any other export's.
"""

from __future__ import annotations

import dataclasses
import hashlib
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from minikcp.apis import crds, validation_crd
from minikcp.apis import kcp_conditions as conds
from minikcp.machinery import errors, names

Obj = Mapping[str, Any]

GROUP = "apis.kcp.io"
VERSION = "v1alpha1"
SCHEMAS = "apiresourceschemas"
EXPORTS = "apiexports"
BINDINGS = "apibindings"
ENDPOINT_SLICES = "apiexportendpointslices"

IDENTITY_NAMESPACE = "kcp-system"  # kcp's default --apiexport-identity-secret-namespace
IDENTITY_KEY = "key"  # SecretKeyAPIExportIdentity
BINDING_FINALIZER = "apis.kcp.io/apibinding-finalizer"
# Where the schemas of bound resources are kept, as kcp keeps bound CRDs.
BOUND_SCHEMAS_CLUSTER = "system:bound-crds"
SCHEMA_CLUSTER_ANNOTATION = "apis.kcp.io/schema-cluster"
SCHEMA_NAME_ANNOTATION = "apis.kcp.io/schema-name"
_BOUND_PREFIX = "u"  # a name prefix must start with a letter; a uid may not
SKIP_ENDPOINT_SLICE = "apiexports.apis.kcp.io/skip-endpointslice"

# APIBinding conditions and reasons (apis/v1alpha1/types_apibinding.go).
EXPORT_VALID = "APIExportValid"
INITIAL_BINDING_COMPLETED = "InitialBindingCompleted"
BINDING_UP_TO_DATE = "BindingUpToDate"
PERMISSION_CLAIMS_VALID = "PermissionClaimsValid"
PERMISSION_CLAIMS_APPLIED = "PermissionClaimsApplied"
RESOURCE_DELETE_SUCCESS = "BindingResourceDeleteSuccess"
EXPORT_NOT_FOUND = "APIExportNotFound"
INVALID_REFERENCE = "APIExportInvalidReference"
INTERNAL_ERROR = "InternalError"
WAITING_FOR_ESTABLISHED = "WaitingForEstablished"
NAMING_CONFLICTS = "NamingConflicts"
INVALID_CLAIMS = "InvalidPermissionClaims"
# APIExport and APIExportEndpointSlice conditions.
IDENTITY_VALID = "IdentityValid"
IDENTITY_VERIFICATION_FAILED = "IdentityVerificationFailed"
ENDPOINT_URLS_READY = "EndpointURLsReady"

BINDING = "Binding"
BOUND = "Bound"

_NAME_PREFIX = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
_NAME_PREFIX_TEXT = "^[a-z]([-a-z0-9]*[a-z0-9])?$"


def _map(value: Any) -> Obj:
    return value if isinstance(value, Mapping) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


# -- APIResourceSchema admission ------------------------------------------------------------


def as_crd(schema: Obj) -> dict[str, Any]:
    """The CRD an APIResourceSchema describes (named plural.group, as apiextensions wants)."""
    spec = dict(_map(schema.get("spec")))
    spec["versions"] = [
        {**_map(v), "schema": {"openAPIV3Schema": _map(_map(v).get("schema"))}}
        for v in _list(spec.get("versions"))
    ]
    plural = str(_map(spec.get("names")).get("plural") or "")
    meta = {"name": f"{plural}.{spec.get('group') or ''}"}
    return {"apiVersion": "apiextensions.k8s.io/v1", "metadata": meta, "spec": spec}


def name_causes(name: str, spec: Obj) -> list[errors.Cause]:
    """kcp's ValidateAPIResourceSchemaName: `<prefix>.<plural>.<group>` (group "core" for "")."""
    plural = str(_map(spec.get("names")).get("plural") or "")
    if not plural:
        return []  # names validation says so; no strange dot-dot message here
    group = str(spec.get("group") or "") or "core"
    postfix = f".{plural}.{group}"
    if not name.endswith(postfix):
        return [names.field_invalid("metadata.name", name, f"must end in {postfix}")]
    if not _NAME_PREFIX.match(name[: -len(postfix)]):
        detail = f"must match {_NAME_PREFIX_TEXT} in front of .{plural}.{group}"
        return [names.field_invalid("metadata.name", name, detail)]
    return []


def spec_causes(schema: Obj) -> list[errors.Cause]:
    """The spec checked as apiextensions checks a CRD's, with APIResourceSchema field paths."""
    out = []
    for cause in validation_crd.validate_crd(as_crd(schema), None):
        if cause.field.startswith("metadata.") or cause.field.startswith("status."):
            continue
        path = cause.field.replace(".schema.openAPIV3Schema", ".schema")
        out.append(dataclasses.replace(cause, field=path))
    return out


def update_causes(schema: Obj, old: Obj) -> list[errors.Cause]:
    """kcp's ValidateAPIResourceSchemaUpdate: the spec never changes."""
    if schema.get("spec") != old.get("spec"):
        return [names.field_invalid("spec", "object", "is immutable")]
    return []


def field_error_list(causes: Sequence[errors.Cause]) -> str:
    """A field.ErrorList as Go's %v prints it: `[path: message path: message]`."""
    return "[" + " ".join(f"{c.field}: {c.message}" for c in causes) + "]"


# -- bound kinds ------------------------------------------------------------------------------


def bound_copy(schema: Obj, schema_cluster: str) -> dict[str, Any]:
    """The copy of a schema kept in system:bound-crds once bound: named by the original's uid,
    so consumers keep their kinds when the provider deletes the original."""
    meta = _map(schema.get("metadata"))
    group, plural = group_and_plural(schema)
    name = f"{_BOUND_PREFIX}{meta.get('uid')}.{plural}.{group or 'core'}"
    annotations = {
        SCHEMA_CLUSTER_ANNOTATION: schema_cluster,
        SCHEMA_NAME_ANNOTATION: meta.get("name"),
    }
    return {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "APIResourceSchema",
        "metadata": {"name": name, "annotations": annotations},
        "spec": schema.get("spec"),
    }


def original_uid(cluster: str, schema: Obj) -> str:
    """The uid of the schema a stored one stands for: its own, or a bound copy's original."""
    meta = _map(schema.get("metadata"))
    if cluster == BOUND_SCHEMAS_CLUSTER:
        return str(meta.get("name") or "").split(".", 1)[0][len(_BOUND_PREFIX) :]
    return str(meta.get("uid") or "")


def bound_types(schema: Obj, identity: str) -> crds.ServedTypes:
    """The types and OpenAPI schemas an APIResourceSchema serves in a binding's workspace."""
    served = crds.served_types(as_crd(schema))
    types = tuple(
        dataclasses.replace(rt, custom=dataclasses.replace(rt.custom, identity=identity))
        if rt.custom is not None
        else rt
        for rt in served.types
    )
    return crds.ServedTypes(types, served.schemas)


def identity_hash(key: bytes) -> str:
    """kcp's IdentityHash: sha256 of the identity Secret's `key`, in hex."""
    return hashlib.sha256(key).hexdigest()


def group_resource(group: str, resource: str) -> str:
    """schema.GroupResource's String(): `resource.group`, or `resource` for the core group."""
    return f"{resource}.{group}" if group else resource


def export_reference(binding: Obj) -> tuple[str, str]:
    """(path, name) of the APIExport an APIBinding references; path "" is its own workspace."""
    export = _map(_map(_map(binding.get("spec")).get("reference")).get("export"))
    return str(export.get("path") or ""), str(export.get("name") or "")


def schema_names(export: Obj) -> list[str]:
    return [str(n) for n in _list(_map(export.get("spec")).get("latestResourceSchemas"))]


def group_and_plural(schema: Obj) -> tuple[str, str]:
    spec = _map(schema.get("spec"))
    return str(spec.get("group") or ""), str(_map(spec.get("names")).get("plural") or "")


def names_conflict(taken: Obj, group: str, incoming: Obj) -> str:
    """kcp's namesConflict: `taken` (accepted names of a CRD or a bound schema's names in
    `group`) against an incoming schema's spec; the detail, or "" when they do not conflict."""
    spec = _map(incoming.get("spec"))
    if str(spec.get("group") or "") != group:
        return ""
    wanted = _map(spec.get("names"))
    resources = {taken.get("plural"), taken.get("singular"), *_list(taken.get("shortNames"))}
    resources.discard(None)
    resources.discard("")
    if wanted.get("plural") in resources:
        return f"spec.names.plural={wanted.get('plural')} is forbidden"
    if wanted.get("singular") in resources:
        return f"spec.names.singular={wanted.get('singular')} is forbidden"
    shorts = [str(s) for s in _list(wanted.get("shortNames"))]
    if any(s in resources for s in shorts):
        return f"spec.names.shortNames=[{' '.join(shorts)}] is forbidden"
    kinds = {taken.get("kind"), taken.get("listKind")} - {None, ""}
    if wanted.get("kind") in kinds:
        return f"spec.names.kind={wanted.get('kind')} is forbidden"
    if wanted.get("listKind") in kinds:
        return f"spec.names.listKind={wanted.get('listKind')} is forbidden"
    return ""


# -- APIBinding status ------------------------------------------------------------------------


def bound_resources(
    binding: Mapping[str, Any], schemas: list[Mapping[str, Any]], identity: str
) -> list[dict[str, Any]]:
    """status.boundResources: one per schema, storage versions merged with earlier ones."""
    previous = {
        (b.get("group"), b.get("resource")): b.get("storageVersions") or []
        for b in (binding.get("status") or {}).get("boundResources") or ()
        if isinstance(b, Mapping)
    }
    out = []
    for schema in schemas:
        group, resource = group_and_plural(schema)
        versions = set(previous.get((group, resource), ()))
        for version in (schema.get("spec") or {}).get("versions") or ():
            if isinstance(version, Mapping) and version.get("storage"):
                versions.add(str(version.get("name")))
        meta = schema.get("metadata") or {}
        out.append(
            {
                "group": group,
                "resource": resource,
                "schema": {
                    "name": meta.get("name"),
                    "UID": meta.get("uid"),
                    "identityHash": identity,
                },
                "storageVersions": sorted(versions),
            }
        )
    return out


def claim_conditions(
    binding: Mapping[str, Any],
    claims: Any,
    served: Callable[[str, str], bool] = lambda group, resource: True,
) -> tuple[list[conds.Condition], list[dict[str, Any]]]:
    """kcp's permission claim conditions (every accepted claim must be one the export makes)
    and `status.appliedPermissionClaims`, the accepted claims the export makes of resources
    that are `served` (kcp's permission claim labeller finds no informer for the others)."""

    def key(claim: Mapping[str, Any]) -> tuple[str, str, str]:
        group, resource = str(claim.get("group") or ""), str(claim.get("resource") or "")
        return resource, group, str(claim.get("identityHash") or "")

    offered = {key(c) for c in claims or () if isinstance(c, Mapping)}
    accepted = sorted(
        (
            c
            for c in (binding.get("spec") or {}).get("permissionClaims") or ()
            if isinstance(c, Mapping) and c.get("state") == "Accepted"
        ),
        key=key,
    )
    expected = [c for c in accepted if key(c) in offered]
    missing = sorted(
        {(g, r) for r, g, identity in map(key, expected) if not identity and not served(g, r)},
        key=lambda gr: (gr[1], gr[0]),
    )
    applied = [
        {k: v for k, v in c.items() if k != "state"}
        for c in expected
        if (str(c.get("group") or ""), str(c.get("resource") or "")) not in missing
    ]
    applied_condition = conds.true(PERMISSION_CLAIMS_APPLIED)
    if missing:
        failures = [
            f'error getting informer for group="{g}", resource="{r}": '
            f"unable to find informer for {r}.{g}"
            for g, r in missing[:10]
        ]
        text = failures[0] if len(failures) == 1 else f"[{', '.join(failures)}]"
        applied_condition = conds.false(
            PERMISSION_CLAIMS_APPLIED,
            INTERNAL_ERROR,
            conds.ERROR,
            f"Permission claims have not been fully applied: {text}",
        )
    unexpected = [
        f'unexpected/invalid claim for {resource}.{group} (identity "{identity}")'
        for resource, group, identity in (key(c) for c in accepted if key(c) not in offered)
    ]
    if not unexpected:
        valid = conds.true(PERMISSION_CLAIMS_VALID)
        return [valid, applied_condition], applied
    shown = unexpected[:10]
    # utilerrors.NewAggregate: one error as it is, several as [a, b].
    text = shown[0] if len(shown) == 1 else f"[{', '.join(shown)}]"
    message = (
        f"{len(unexpected)} unexpected and/or invalid permission claims "
        f"(showing first {len(shown)}): {text}"
    )
    invalid = conds.false(PERMISSION_CLAIMS_VALID, INVALID_CLAIMS, conds.ERROR, message)
    return [invalid, applied_condition], applied

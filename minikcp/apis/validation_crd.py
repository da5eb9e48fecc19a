"""Validation of CustomResourceDefinitions (apiextensions-apiserver 1.32 pkg/apis/apiextensions/
validation and pkg/apiserver/schema's structural checks), with upstream paths and messages.

Beyond the common checks (names, group, scope, exactly one storage version, a schema per
version) a CRD must be servable: the storage version is served, every served version's schema is
structural (a type on every node, `object` at the root, `items` for arrays, `properties` and
`additionalProperties` apart, only name/generateName under metadata, the extensions used where
they mean something), printer columns and scale paths are well formed, and group, plural, kind
and scope never change.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from minikcp.apis import custom_resources
from minikcp.apis import validation_meta as vm
from minikcp.apis.validation_meta import child, index
from minikcp.machinery.errors import Cause

Obj = Mapping[str, Any]

_SCOPES = ("Cluster", "Namespaced")
_TYPES = ("array", "boolean", "integer", "number", "object", "string")
_COLUMN_TYPES = ("boolean", "date", "integer", "number", "string")
_COLUMN_FORMATS = ("byte", "date", "date-time", "double", "float", "int32", "int64", "password")
_ONE_STORAGE = "must have exactly one version marked as storage version"


def _map(value: Any) -> Obj:
    return value if isinstance(value, Mapping) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _str(value: Any) -> str:
    return value if isinstance(value, str) else ""


def validate_crd(obj: Obj, old: Obj | None) -> list[Cause]:
    causes = vm.object_meta(obj, namespaced=False, name_check=vm.dns1123_subdomain, old=old)
    spec = _map(obj.get("spec"))
    names = _map(spec.get("names"))
    group, plural = _str(spec.get("group")), _str(names.get("plural"))
    name = _str(_map(obj.get("metadata")).get("name"))
    if name and name != f"{plural}.{group}":
        causes.append(vm.invalid("metadata.name", name, 'must be spec.names.plural+"."+spec.group'))
    if not group:
        causes.append(vm.required("spec.group"))
    elif errs := vm.dns1123_subdomain(group):
        causes.append(vm.invalid("spec.group", group, ",".join(errs)))
    elif "." not in group:
        causes.append(vm.invalid("spec.group", group, "should be a domain with at least one dot"))
    scope = _str(spec.get("scope"))
    if not scope:
        causes.append(vm.required("spec.scope"))
    elif scope not in _SCOPES:
        causes.append(vm.not_supported("spec.scope", scope, _SCOPES))
    causes.extend(_versions(spec))
    for field in ("plural", "singular", "kind", "listKind"):
        if not _str(names.get(field)):
            causes.append(vm.required(child("spec.names", field)))
    causes.extend(_names(names))
    causes.extend(_stored_versions(obj, spec))
    if old is not None:
        old_spec = _map(old.get("spec"))
        old_names = _map(old_spec.get("names"))
        causes.extend(vm.immutable("spec.scope", scope, old_spec.get("scope")))
        causes.extend(vm.immutable("spec.names.kind", names.get("kind"), old_names.get("kind")))
        causes.extend(vm.immutable("spec.group", group, old_spec.get("group")))
        causes.extend(vm.immutable("spec.names.plural", plural, old_names.get("plural")))
    return causes


def _stored_versions(obj: Obj, spec: Obj) -> Iterator[Cause]:
    """Versions objects may be stored in must stay in spec.versions (upstream's
    ValidateCustomResourceDefinitionStoredVersions)."""
    stored = _list(_map(obj.get("status")).get("storedVersions"))
    names = {_str(_map(v).get("name")) for v in _list(spec.get("versions"))}
    for i, version in enumerate(stored):
        if version not in names:
            yield vm.invalid(
                index("status.storedVersions", i), version, "must appear in spec.versions"
            )


def _names(names: Obj) -> Iterator[Cause]:
    for field in ("plural", "singular"):
        value = _str(names.get(field))
        if value and (errs := vm.dns1035_label(value)):
            yield vm.invalid(child("spec.names", field), value, ",".join(errs))
    for field in ("kind", "listKind"):
        value = _str(names.get(field))
        if value and (errs := vm.dns1035_label(value.lower())):
            detail = "may have mixed case, but should otherwise match: " + ",".join(errs)
            yield vm.invalid(child("spec.names", field), value, detail)
    for field in ("shortNames", "categories"):
        for i, value in enumerate(_list(names.get(field))):
            errs = vm.dns1035_label(_str(value))
            if errs:
                yield vm.invalid(index(child("spec.names", field), i), value, ",".join(errs))
    kind = _str(names.get("kind"))
    if kind and kind == names.get("listKind"):
        yield vm.invalid("spec.names.listKind", kind, "kind and listKind may not be the same")


def _versions(spec: Obj) -> Iterator[Cause]:
    versions = [_map(v) for v in _list(spec.get("versions"))]
    seen: set[str] = set()
    unique = True
    for i, version in enumerate(versions):
        p = index("spec.versions", i)
        version_name = _str(version.get("name"))
        if version_name in seen:
            unique = False
        seen.add(version_name)
        if errs := vm.dns1035_label(version_name):
            yield vm.invalid(child(p, "name"), version_name, ",".join(errs))
        if version.get("storage") is True and version.get("served") is not True:
            yield vm.invalid(child(p, "served"), False, "the storage version must be served")
        schema = _map(version.get("schema")).get("openAPIV3Schema")
        schema_path = child(p, "schema", "openAPIV3Schema")
        if not isinstance(schema, Mapping) or not schema:
            yield vm.required(schema_path, "schemas are required")
        else:
            yield from _structural_root(schema, schema_path)
        for j, column in enumerate(_list(version.get("additionalPrinterColumns"))):
            yield from _column(_map(column), index(child(p, "additionalPrinterColumns"), j))
        scale = _map(_map(version.get("subresources")).get("scale"))
        if "scale" in _map(version.get("subresources")):
            yield from _scale(scale, child(p, "subresources", "scale"))
    if not unique:
        yield vm.invalid("spec.versions", "", "must contain unique version names")
    if sum(1 for v in versions if v.get("storage") is True) != 1:
        yield vm.invalid("spec.versions", "", _ONE_STORAGE)


def _column(column: Obj, path: str) -> Iterator[Cause]:
    if not _str(column.get("name")):
        yield vm.required(child(path, "name"))
    kind = _str(column.get("type"))
    if not kind:
        yield vm.required(child(path, "type"))
    elif kind not in _COLUMN_TYPES:
        yield vm.not_supported(child(path, "type"), kind, _COLUMN_TYPES)
    fmt = _str(column.get("format"))
    if fmt and fmt not in _COLUMN_FORMATS:
        yield vm.not_supported(child(path, "format"), fmt, _COLUMN_FORMATS)
    if not _str(column.get("jsonPath")):
        yield vm.required(child(path, "jsonPath"))


def _scale(scale: Obj, path: str) -> Iterator[Cause]:
    spec_path = _str(scale.get("specReplicasPath"))
    if not spec_path:
        yield vm.required(child(path, "specReplicasPath"))
    elif not spec_path.startswith(".spec."):
        yield vm.invalid(child(path, "specReplicasPath"), spec_path, "should start with .spec")
    status_path = _str(scale.get("statusReplicasPath"))
    if not status_path:
        yield vm.required(child(path, "statusReplicasPath"))
    elif not status_path.startswith(".status."):
        yield vm.invalid(
            child(path, "statusReplicasPath"), status_path, "should start with .status"
        )
    selector = _str(scale.get("labelSelectorPath"))
    if selector and not selector.startswith((".spec.", ".status.")):
        yield vm.invalid(
            child(path, "labelSelectorPath"), selector, "should start with .spec or .status"
        )


# -- structural schemas ----------------------------------------------------------------------


def _structural_root(schema: Obj, path: str) -> Iterator[Cause]:
    root_type = schema.get("type")
    if root_type != "object":
        if not root_type:
            yield vm.required(child(path, "type"), "must not be empty at the root")
        else:
            yield vm.invalid(child(path, "type"), root_type, "must be object at the root")
    props = _map(schema.get("properties"))
    meta = props.get("metadata")
    if isinstance(meta, Mapping):
        meta_path = f"{path}.properties[metadata]"
        extra = set(meta) - {"type", "properties", "description"}
        meta_props = _map(meta.get("properties"))
        if extra or set(meta_props) - {"name", "generateName"}:
            yield vm.forbidden(
                meta_path,
                "must not specify anything other than name and generateName, but metadata is "
                "implicitly specified",
            )
        for key, sub in meta_props.items():
            if _map(sub).get("type") != "string" or set(_map(sub)) - {
                "type",
                "maxLength",
                "pattern",
                "description",
            }:
                yield vm.forbidden(
                    f"{meta_path}.properties[{key}]",
                    "must be a string, with at most maxLength and pattern",
                )
    yield from _structural(schema, path, root=True)


def _structural(
    schema: Obj, path: str, *, root: bool = False, item: bool = False, field: str = ""
) -> Iterator[Cause]:
    """`path` is the schema node's place in the CRD, `field` its place in an object."""
    kind = schema.get("type")
    int_or_string = bool(schema.get("x-kubernetes-int-or-string"))
    preserve = bool(schema.get("x-kubernetes-preserve-unknown-fields"))
    if kind is not None and kind not in _TYPES:
        yield vm.not_supported(child(path, "type"), kind, _TYPES)
    if int_or_string and kind is not None:
        yield vm.invalid(
            child(path, "type"), kind, "must be empty if x-kubernetes-int-or-string is true"
        )
    if not kind and not int_or_string and not preserve:
        what = "array items" if item else "object fields"
        yield vm.required(child(path, "type"), f"must not be empty for specified {what}")
    if "properties" in schema and "additionalProperties" in schema:
        extra = schema.get("additionalProperties")
        if extra not in (False, None):
            yield vm.forbidden(
                child(path, "additionalProperties"),
                "additionalProperties and properties are mutual exclusive",
            )
    if kind == "array" and not isinstance(schema.get("items"), Mapping):
        yield vm.required(child(path, "items"), "must be specified")
    if schema.get("x-kubernetes-embedded-resource") and kind != "object":
        yield vm.invalid(
            child(path, "type"),
            kind or "",
            "must be object if x-kubernetes-embedded-resource is true",
        )
    list_type = schema.get("x-kubernetes-list-type")
    if list_type is not None:
        if list_type not in ("atomic", "set", "map"):
            yield vm.not_supported(
                child(path, "x-kubernetes-list-type"), list_type, ("atomic", "map", "set")
            )
        elif kind != "array":
            yield vm.invalid(
                child(path, "x-kubernetes-list-type"), list_type, "must only be used on arrays"
            )
        elif list_type == "map":
            keys = _list(schema.get("x-kubernetes-list-map-keys"))
            if not keys:
                yield vm.required(
                    child(path, "x-kubernetes-list-map-keys"),
                    'must not be empty if x-kubernetes-list-type is "map"',
                )
            item_props = _map(_map(schema.get("items")).get("properties"))
            for key in keys:
                if key not in item_props:
                    yield vm.invalid(
                        child(path, "x-kubernetes-list-map-keys"),
                        keys,
                        f'entries must all be names of item properties: "{key}" is not',
                    )
    elif schema.get("x-kubernetes-list-map-keys") is not None:
        yield vm.required(
            child(path, "x-kubernetes-list-type"),
            'must be "map" if x-kubernetes-list-map-keys is non-empty',
        )
    if "default" in schema:
        if root:
            yield vm.forbidden(child(path, "default"), "must not be set at the root")
        for problem in custom_resources.default_errors(schema, schema["default"], field):
            yield vm.invalid(child(path, "default"), schema["default"], problem)
    for key, sub in _map(schema.get("properties")).items():
        if root and key == "metadata":
            continue
        if isinstance(sub, Mapping):
            yield from _structural(sub, f"{path}.properties[{key}]", field=child(field, key))
    items = schema.get("items")
    if isinstance(items, Mapping):
        yield from _structural(items, child(path, "items"), item=True, field=f"{field}[0]")
    extra = schema.get("additionalProperties")
    if isinstance(extra, Mapping):
        yield from _structural(
            extra, child(path, "additionalProperties"), field=child(field, "key")
        )

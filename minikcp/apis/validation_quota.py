"""Validation of ResourceQuota and LimitRange, after pkg/apis/core/validation (1.32).

Resource names follow pkg/apis/core/helper (standard, quota, container and integer resources);
messages are upstream's. Values of quantity type print as their canonical text.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from minikcp.apis import validation_meta as vm
from minikcp.apis.validation_meta import child, index
from minikcp.machinery import quantity
from minikcp.machinery.errors import Cause

Obj = Mapping[str, Any]

# pkg/apis/core/helper/helpers.go
STANDARD_QUOTA_RESOURCES = frozenset(
    {
        "cpu",
        "memory",
        "ephemeral-storage",
        "requests.cpu",
        "requests.memory",
        "requests.storage",
        "requests.ephemeral-storage",
        "limits.cpu",
        "limits.memory",
        "limits.ephemeral-storage",
        "pods",
        "resourcequotas",
        "services",
        "replicationcontrollers",
        "secrets",
        "persistentvolumeclaims",
        "configmaps",
        "services.nodeports",
        "services.loadbalancers",
    }
)
_STANDARD_RESOURCES = STANDARD_QUOTA_RESOURCES | {"storage"}
_INTEGER_RESOURCES = frozenset(
    {
        "pods",
        "resourcequotas",
        "services",
        "replicationcontrollers",
        "secrets",
        "configmaps",
        "persistentvolumeclaims",
        "services.nodeports",
        "services.loadbalancers",
    }
)
_CONTAINER_RESOURCES = frozenset({"cpu", "memory", "ephemeral-storage"})
_LIMIT_TYPES = ("Pod", "Container", "PersistentVolumeClaim")
SCOPES = (
    "Terminating",
    "NotTerminating",
    "BestEffort",
    "NotBestEffort",
    "PriorityClass",
    "CrossNamespacePodAffinity",
    "VolumeAttributesClass",
)
_POD_COUNT = frozenset({"pods"})
_POD_COMPUTE = frozenset(
    {"cpu", "memory", "limits.cpu", "limits.memory", "requests.cpu", "requests.memory"}
)
_CONFLICTING_SCOPES = (("BestEffort", "NotBestEffort"), ("Terminating", "NotTerminating"))
_EXISTS_ONLY = frozenset(
    {"BestEffort", "NotBestEffort", "Terminating", "NotTerminating", "CrossNamespacePodAffinity"}
)


def _map(value: Any) -> Obj:
    return value if isinstance(value, Mapping) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _huge_pages(name: str) -> bool:
    return name.startswith("hugepages-")


def _quota_huge_pages(name: str) -> bool:
    return name.startswith(("hugepages-", "requests.hugepages-"))


def _native(name: str) -> bool:
    return "/" not in name or "kubernetes.io/" in name


def is_extended_resource(name: str) -> bool:
    if _native(name) or name.startswith("requests."):
        return False
    return not vm.qualified_name("requests." + name)


def is_integer_resource(name: str) -> bool:
    return name in _INTEGER_RESOURCES or is_extended_resource(name)


def scope_valid_for_resource(scope: str, resource: str) -> bool:
    """`IsResourceQuotaScopeValidForResource`."""
    if scope in (
        "Terminating",
        "NotTerminating",
        "NotBestEffort",
        "PriorityClass",
        "CrossNamespacePodAffinity",
    ):
        return resource in _POD_COUNT or resource in _POD_COMPUTE
    if scope == "BestEffort":
        return resource in _POD_COUNT
    return True


def _resource_name(name: str, path: str) -> list[Cause]:
    """`validateResourceName`."""
    causes = [vm.invalid(path, name, m) for m in vm.qualified_name(name)]
    if causes:
        return causes
    standard = name in _STANDARD_RESOURCES or _quota_huge_pages(name)
    if "/" not in name and not standard:
        return [vm.invalid(path, name, "must be a standard resource type or fully qualified")]
    return []


def _quota_resource_name(name: str, path: str) -> list[Cause]:
    causes = _resource_name(name, path)
    if "/" not in name and name not in STANDARD_QUOTA_RESOURCES and not _quota_huge_pages(name):
        causes.append(vm.invalid(path, name, "must be a standard resource for quota"))
    return causes


def _container_resource_name(name: str, path: str) -> list[Cause]:
    causes = _resource_name(name, path)
    if "/" not in name:
        if name not in _CONTAINER_RESOURCES and not _huge_pages(name):
            causes.append(vm.invalid(path, name, "must be a standard resource for containers"))
    elif not _native(name) and not is_extended_resource(name):
        causes.append(vm.invalid(path, name, "doesn't follow extended resource name standard"))
    return causes


def _quantity_value(name: str, value: Any, path: str) -> list[Cause]:
    """`ValidateResourceQuantityValue`: not negative, whole for integer resources."""
    q = quantity.parse_or_none(value)
    if q is None:
        return []  # decoding refused it already
    causes: list[Cause] = []
    if q.value < 0:
        causes.append(vm.invalid(path, str(q), "must be greater than or equal to 0"))
    if is_integer_resource(name) and q.milli_value() % 1000:
        causes.append(vm.invalid(path, str(q), "must be an integer"))
    return causes


def _hard(hard: Any, path: str) -> list[Cause]:
    causes: list[Cause] = []
    for name in sorted(_map(hard)):
        p = vm.key(path, name)
        causes += _quota_resource_name(name, p)
        causes += _quantity_value(name, hard[name], p)
    return causes


def _scope_list(path: str, scopes: list[Any], detail: str) -> Cause:
    """An error on spec.scopes: Go prints the []ResourceQuotaScope with %#v."""
    body = ", ".join(vm.go_value(str(s)) for s in scopes)
    return Cause(
        "FieldValueInvalid", f"Invalid value: []core.ResourceQuotaScope{{{body}}}: {detail}", path
    )


def _scopes(spec: Obj) -> list[Cause]:
    scopes = [s for s in _list(spec.get("scopes")) if isinstance(s, str)]
    if not scopes:
        return []
    causes: list[Cause] = []
    hard = sorted(_map(spec.get("hard")))
    path = "spec.scopes"
    for scope in scopes:
        if scope not in SCOPES:
            causes.append(_scope_list(path, scopes, "unsupported scope"))
        for name in hard:
            if name in STANDARD_QUOTA_RESOURCES and not scope_valid_for_resource(scope, name):
                causes.append(_scope_list(path, scopes, "unsupported scope applied to resource"))
    for pair in _CONFLICTING_SCOPES:
        if all(s in scopes for s in pair):
            causes.append(_scope_list(path, scopes, "conflicting scopes"))
    return causes


def _scope_selector(spec: Obj) -> list[Cause]:
    selector = spec.get("scopeSelector")
    if not isinstance(selector, Mapping):
        return []
    causes: list[Cause] = []
    hard = sorted(_map(spec.get("hard")))
    path = "spec.scopeSelector.matchExpressions"
    names: set[str] = set()
    for req in _list(selector.get("matchExpressions")):
        req = _map(req)
        scope = req.get("scopeName") or ""
        operator = req.get("operator") or ""
        values = _list(req.get("values"))
        if scope not in SCOPES:
            causes.append(vm.invalid(child(path, "scopeName"), scope, "unsupported scope"))
        for name in hard:
            if name in STANDARD_QUOTA_RESOURCES and not scope_valid_for_resource(scope, name):
                causes.append(vm.invalid(path, selector, "unsupported scope applied to resource"))
        if scope in _EXISTS_ONLY and operator != "Exists":
            causes.append(
                vm.invalid(
                    child(path, "operator"),
                    operator,
                    "must be 'Exists' when scope is any of ResourceQuotaScopeTerminating, "
                    "ResourceQuotaScopeNotTerminating, ResourceQuotaScopeBestEffort, "
                    "ResourceQuotaScopeNotBestEffort or "
                    "ResourceQuotaScopeCrossNamespacePodAffinity",
                )
            )
        if operator in ("In", "NotIn"):
            if not values:
                causes.append(
                    vm.required(
                        child(path, "values"),
                        "must be at least one value when `operator` is 'In' or 'NotIn' for "
                        "scope selector",
                    )
                )
        elif operator in ("Exists", "DoesNotExist"):
            if values:
                causes.append(
                    vm.invalid(
                        child(path, "values"),
                        values,
                        "must be no value when `operator` is 'Exist' or 'DoesNotExist' for "
                        "scope selector",
                    )
                )
        else:
            causes.append(
                vm.invalid(child(path, "operator"), operator, "not a valid selector operator")
            )
        names.add(scope)
    for pair in _CONFLICTING_SCOPES:
        if all(s in names for s in pair):
            causes.append(_scope_list(path, _list(spec.get("scopes")), "conflicting scopes"))
    return causes


def validate_resource_quota(obj: Obj, old: Obj | None) -> list[Cause]:
    causes = vm.object_meta(obj, namespaced=True, name_check=vm.dns1123_subdomain, old=old)
    spec = _map(obj.get("spec"))
    causes += _hard(spec.get("hard"), "spec.hard")
    causes += _scopes(spec)
    causes += _scope_selector(spec)
    status = _map(obj.get("status"))
    causes += _hard(status.get("hard"), "status.hard")
    causes += _hard(status.get("used"), "status.used")
    if old is not None:
        new_scopes = _list(spec.get("scopes"))
        old_scopes = _list(_map(old.get("spec")).get("scopes"))
        if set(map(str, new_scopes)) != set(map(str, old_scopes)):
            causes.append(_scope_list("spec.scopes", new_scopes, "field is immutable"))
    return causes


# -- LimitRange ---------------------------------------------------------------------------------


def _limit_type(value: Any, path: str) -> list[Cause]:
    text = value if isinstance(value, str) else ""
    causes = [vm.invalid(path, text, m) for m in vm.qualified_name(text)]
    if causes:
        return causes
    if "/" not in text and text not in _LIMIT_TYPES:
        return [vm.invalid(path, text, "must be a standard limit type or fully qualified")]
    return []


def _limit_resource_name(limit_type: str, name: str, path: str) -> list[Cause]:
    if limit_type in ("Pod", "Container"):
        return _container_resource_name(name, path)
    return _resource_name(name, path)


def _overcommit_allowed(name: str) -> bool:
    return _native(name) and not _huge_pages(name)


def _limit_item(item: Obj, path: str) -> list[Cause]:
    causes: list[Cause] = []
    limit_type = item.get("type") if isinstance(item.get("type"), str) else ""
    assert isinstance(limit_type, str)
    found: dict[str, dict[str, quantity.Quantity]] = {}
    fields = ["max", "min"]
    if limit_type == "Pod":
        for field in ("default", "defaultRequest"):
            if _map(item.get(field)):
                causes.append(
                    vm.forbidden(child(path, field), "may not be specified when `type` is 'Pod'")
                )
    else:
        fields += ["default", "defaultRequest"]
    fields.append("maxLimitRequestRatio")
    keys: set[str] = set()
    for field in fields:
        values = _map(item.get(field))
        found[field] = {}
        for name in sorted(values):
            causes += _limit_resource_name(limit_type, name, vm.key(child(path, field), name))
            keys.add(name)
            q = quantity.parse_or_none(values[name])
            if q is not None:
                found[field][name] = q
        pvc = field == "min" and limit_type == "PersistentVolumeClaim"
        if (
            pvc
            and "storage" not in _map(item.get("min"))
            and "storage" not in _map(item.get("max"))
        ):
            causes.append(
                vm.required(
                    child(path, "limits"),
                    "either minimum or maximum storage value is required, but neither was provided",
                )
            )
    for k in sorted(keys):
        causes += _limit_key(k, found, path)
    return causes


def _limit_key(k: str, found: dict[str, dict[str, quantity.Quantity]], path: str) -> list[Cause]:
    causes: list[Cause] = []
    lo, hi = found["min"].get(k), found["max"].get(k)
    default, request = found.get("default", {}).get(k), found.get("defaultRequest", {}).get(k)
    ratio = found["maxLimitRequestRatio"].get(k)

    def bad(field: str, value: quantity.Quantity, detail: str) -> None:
        causes.append(vm.invalid(vm.key(child(path, field), k), str(value), detail))

    if lo is not None and hi is not None and lo > hi:
        bad("min", lo, f"min value {lo} is greater than max value {hi}")
    if request is not None and lo is not None and lo > request:
        bad(
            "defaultRequest",
            request,
            f"min value {lo} is greater than default request value {request}",
        )
    if request is not None and hi is not None and request > hi:
        bad(
            "defaultRequest",
            request,
            f"default request value {request} is greater than max value {hi}",
        )
    if request is not None and default is not None and request > default:
        bad(
            "defaultRequest",
            request,
            f"default request value {request} is greater than default limit value {default}",
        )
    if default is not None and lo is not None and lo > default:
        bad("default", lo, f"min value {lo} is greater than default value {default}")
    if default is not None and hi is not None and default > hi:
        bad("default", hi, f"default value {default} is greater than max value {hi}")
    if ratio is not None and ratio.value < 1:
        bad("maxLimitRequestRatio", ratio, f"ratio {ratio} is less than 1")
    if ratio is not None and lo is not None and hi is not None and lo.value > 0:
        limit = float(hi.value / lo.value)
        if float(ratio.value) > limit:
            bad("maxLimitRequestRatio", ratio, f"ratio {ratio} is greater than max/min = {limit:f}")
    if (
        not _overcommit_allowed(k)
        and default is not None
        and request is not None
        and default.value != request.value
    ):
        bad(
            "defaultRequest",
            request,
            f"default value {default} must equal to defaultRequest value {request} in {k}",
        )
    return causes


def validate_limit_range(obj: Obj, old: Obj | None) -> list[Cause]:
    causes = vm.object_meta(obj, namespaced=True, name_check=vm.dns1123_subdomain, old=old)
    seen: set[str] = set()
    for i, item in enumerate(_list(_map(obj.get("spec")).get("limits"))):
        item = _map(item)
        p = index("spec.limits", i)
        limit_type = item.get("type") if isinstance(item.get("type"), str) else ""
        causes += _limit_type(limit_type, child(p, "type"))
        if limit_type in seen:
            causes.append(vm.duplicate(child(p, "type"), limit_type))
        seen.add(str(limit_type))
        causes += _limit_item(item, p)
    return causes


VALIDATORS = {
    ("", "ResourceQuota"): validate_resource_quota,
    ("", "LimitRange"): validate_limit_range,
}

"""Hand-written validation of the remaining served kinds: Lease, Ingress, events.k8s.io Event and
CustomResourceDefinition (after their pkg/apis/*/validation in 1.32; CRDs in validation_crd).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from minikcp.apis import validation_meta as vm
from minikcp.apis.validation_crd import validate_crd
from minikcp.apis.validation_meta import child, index
from minikcp.machinery.errors import Cause

Obj = Mapping[str, Any]


def _map(value: Any) -> Obj:
    return value if isinstance(value, Mapping) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def validate_lease(obj: Obj, old: Obj | None) -> list[Cause]:
    causes = vm.object_meta(obj, namespaced=True, name_check=vm.dns1123_subdomain, old=old)
    spec = _map(obj.get("spec"))
    duration = spec.get("leaseDurationSeconds")
    if isinstance(duration, int) and duration <= 0:
        causes.append(vm.invalid("spec.leaseDurationSeconds", duration, "must be greater than 0"))
    causes.extend(vm.nonnegative("spec.leaseTransitions", spec.get("leaseTransitions")))
    return causes


def _ingress_backend(backend: Obj, path: str) -> list[Cause]:
    service, resource = backend.get("service"), backend.get("resource")
    if service is not None and resource is not None:
        return [vm.invalid(path, "", "cannot set both resource and service backends")]
    if resource is not None:
        return []
    if service is None:
        return [vm.invalid(path, "", "resource or service backend is required")]
    service = _map(service)
    causes: list[Cause] = []
    name = service.get("name") or ""
    if not name:
        causes.append(vm.required(child(path, "service", "name")))
    else:
        causes.extend(
            vm.invalid(child(path, "service", "name"), name, m) for m in vm.dns1035_label(name)
        )
    port = _map(service.get("port"))
    port_name, number = port.get("name") or "", port.get("number") or 0
    if port_name and number:
        causes.append(vm.invalid(path, "", "cannot set both port name & port number"))
    elif number:
        causes.extend(vm.port_range(child(path, "service", "port", "number"), number))
    elif not port_name:
        causes.append(vm.required(path, "port name or number is required"))
    return causes


_PATH_TYPES = ("Exact", "ImplementationSpecific", "Prefix")


def validate_ingress(obj: Obj, old: Obj | None) -> list[Cause]:
    causes = vm.object_meta(obj, namespaced=True, name_check=vm.dns1123_subdomain, old=old)
    spec = _map(obj.get("spec"))
    rules = _list(spec.get("rules"))
    default = spec.get("defaultBackend")
    if default is not None:
        causes.extend(_ingress_backend(_map(default), "spec.defaultBackend"))
    elif not rules:
        message = (
            "Invalid value: []networking.IngressRule(nil): "
            "either `defaultBackend` or `rules` must be specified"
        )
        causes.append(Cause("FieldValueInvalid", message, "spec.rules"))
    for i, rule in enumerate(rules):
        rule = _map(rule)
        rule_path = index("spec.rules", i)
        host = rule.get("host") or ""
        if host:
            check = (
                vm.dns1123_subdomain(host[2:])
                if host.startswith("*.")
                else vm.dns1123_subdomain(host)
            )
            causes.extend(vm.invalid(child(rule_path, "host"), host, m) for m in check)
        for j, http_path in enumerate(_list(_map(rule.get("http")).get("paths"))):
            http_path = _map(http_path)
            p = index(child(rule_path, "http", "paths"), j)
            path_type = http_path.get("pathType")
            if path_type is None:
                causes.append(vm.required(child(p, "pathType"), "pathType must be specified"))
                continue
            if path_type not in _PATH_TYPES:
                causes.append(vm.not_supported(child(p, "pathType"), path_type, _PATH_TYPES))
            elif path_type != "ImplementationSpecific" and not str(
                http_path.get("path") or ""
            ).startswith("/"):
                causes.append(
                    vm.invalid(
                        child(p, "path"), http_path.get("path") or "", "must be an absolute path"
                    )
                )
            causes.extend(_ingress_backend(_map(http_path.get("backend")), child(p, "backend")))
    return causes


def validate_events_event(obj: Obj, old: Obj | None) -> list[Cause]:
    """events.k8s.io/v1 Event: the fields a new-style event must carry."""
    causes = vm.object_meta(obj, namespaced=True, name_check=vm.dns1123_subdomain, old=old)
    if not obj.get("eventTime"):
        causes.append(vm.required("eventTime"))
    controller = obj.get("reportingController") or ""
    if not controller:
        causes.append(vm.required("reportingController"))
    else:
        causes.extend(
            vm.invalid("reportingController", controller, m) for m in vm.qualified_name(controller)
        )
    for field, limit in (("reportingInstance", 128), ("action", 128), ("reason", 128)):
        value = obj.get(field) or ""
        if not value:
            causes.append(vm.required(field))
        elif len(value) > limit:
            causes.append(vm.too_long(field, limit))
    if len(obj.get("note") or "") > 1024:
        causes.append(vm.too_long("note", 1024))
    event_type = obj.get("type") or ""
    if event_type not in ("Normal", "Warning"):
        causes.append(vm.invalid("type", "", f"has invalid value: {event_type}"))
    return causes


VALIDATORS = {
    ("coordination.k8s.io", "Lease"): validate_lease,
    ("networking.k8s.io", "Ingress"): validate_ingress,
    ("events.k8s.io", "Event"): validate_events_event,
    ("apiextensions.k8s.io", "CustomResourceDefinition"): validate_crd,
}

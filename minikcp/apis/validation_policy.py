"""Hand-written validation of claims, autoscaling, policy, network and scheduling kinds:
PersistentVolumeClaim, HorizontalPodAutoscaler (autoscaling/v2), PodDisruptionBudget,
NetworkPolicy, IngressClass, EndpointSlice and PriorityClass.

After pkg/apis/{core,autoscaling,policy,networking,discovery,scheduling}/validation (1.32); the
rules charts trip over, with upstream's field paths and messages.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Mapping
from typing import Any

from minikcp.apis import validation_apps as va
from minikcp.apis import validation_meta as vm
from minikcp.apis.validation_meta import child, index
from minikcp.machinery.errors import Cause

Obj = Mapping[str, Any]


def _map(value: Any) -> Obj:
    return value if isinstance(value, Mapping) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _port_name(name: str) -> list[str]:
    """IsValidPortName (an IANA_SVC_NAME)."""
    problems = []
    if len(name) > 15:
        problems.append("must be no more than 15 characters")
    if not re.fullmatch(r"[-a-z0-9]*", name):
        problems.append("must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)")
    if not re.search(r"[a-z]", name):
        problems.append("must contain at least one letter (a-z)")
    if name.startswith("-") or name.endswith("-"):
        problems.append("must not begin or end with a hyphen")
    if "--" in name:
        problems.append("must not contain consecutive hyphens")
    return problems


def _too_many(path: str, actual: int, limit: int) -> Cause:
    return Cause("FieldValueTooMany", f"Too many: {actual}: must have at most {limit} items", path)


def _quantity_positive(value: Any) -> bool:
    text = str(value).strip()
    m = re.match(r"^([+-]?[0-9.]+)", text)
    return m is not None and float(m.group(1) or 0) > 0


# --- PersistentVolumeClaim ---------------------------------------------------------------------

_ACCESS_MODES = ("ReadOnlyMany", "ReadWriteMany", "ReadWriteOnce", "ReadWriteOncePod")
_VOLUME_MODES = ("Block", "Filesystem")


def claim_spec(spec: Obj, path: str) -> list[Cause]:
    """ValidatePersistentVolumeClaimSpec (also for StatefulSet volumeClaimTemplates)."""
    causes: list[Cause] = []
    modes = _list(spec.get("accessModes"))
    if not modes:
        causes.append(vm.required(child(path, "accessModes"), "at least 1 access mode is required"))
    for mode in modes:
        if mode not in _ACCESS_MODES:
            causes.append(vm.not_supported(child(path, "accessModes"), mode, _ACCESS_MODES))
    if "ReadWriteOncePod" in modes and len(modes) > 1:
        causes.append(
            vm.forbidden(
                child(path, "accessModes"), "may not use ReadWriteOncePod with other access modes"
            )
        )
    resources = _map(spec.get("resources"))
    requests = _map(resources.get("requests"))
    storage_path = vm.key(child(path, "resources"), "storage")
    if "storage" not in requests:
        causes.append(vm.required(storage_path))
    elif not _quantity_positive(requests["storage"]):
        causes.append(
            vm.invalid(storage_path, str(requests["storage"]), "must be greater than zero")
        )
    mode = spec.get("volumeMode")
    if mode is not None and mode not in _VOLUME_MODES:
        causes.append(vm.not_supported(child(path, "volumeMode"), mode, _VOLUME_MODES))
    klass = spec.get("storageClassName")
    if isinstance(klass, str) and klass:
        causes.extend(
            vm.invalid(child(path, "storageClassName"), klass, m)
            for m in vm.dns1123_subdomain(klass)
        )
    causes.extend(vm.label_selector(spec.get("selector"), child(path, "selector")))
    return causes


_CLAIM_UPDATE = "spec is immutable after creation except resources.requests for bound claims"


def validate_persistent_volume_claim(obj: Obj, old: Obj | None) -> list[Cause]:
    causes = vm.object_meta(obj, namespaced=True, name_check=vm.dns1123_subdomain, old=old)
    spec = _map(obj.get("spec"))
    causes.extend(claim_spec(spec, "spec"))
    if old is not None:
        old_spec = _map(old.get("spec"))
        mutable = {"resources"} | ({"volumeName"} if not old_spec.get("volumeName") else set())
        if {k: v for k, v in spec.items() if k not in mutable} != {
            k: v for k, v in old_spec.items() if k not in mutable
        } or _without_requests(spec) != _without_requests(old_spec):
            causes.append(vm.forbidden("spec", _CLAIM_UPDATE))
    return causes


def _without_requests(spec: Obj) -> Obj:
    return {k: v for k, v in _map(spec.get("resources")).items() if k != "requests"}


# --- HorizontalPodAutoscaler (autoscaling/v2) --------------------------------------------------

_METRIC_SOURCES = ("ContainerResource", "External", "Object", "Pods", "Resource")
_TARGET_TYPES = ("AverageValue", "Utilization", "Value")
_SOURCE_FIELD = {
    "ContainerResource": "containerResource",
    "External": "external",
    "Object": "object",
    "Pods": "pods",
    "Resource": "resource",
}


def _metric_target(target: Any, path: str) -> list[Cause]:
    target = _map(target)
    kind = target.get("type")
    causes: list[Cause] = []
    if not kind:
        causes.append(vm.required(child(path, "type"), "must specify a metric target type"))
    elif kind not in _TARGET_TYPES:
        causes.append(vm.not_supported(child(path, "type"), kind, _TARGET_TYPES))
    utilization = target.get("averageUtilization")
    if isinstance(utilization, int) and utilization < 1:
        causes.append(
            vm.invalid(child(path, "averageUtilization"), utilization, "must be greater than 0")
        )
    return causes


def _metric(metric: Any, path: str) -> list[Cause]:
    metric = _map(metric)
    kind = metric.get("type")
    if not kind:
        return [vm.required(child(path, "type"), "must specify a metric source type")]
    if kind not in _METRIC_SOURCES:
        return [vm.not_supported(child(path, "type"), kind, _METRIC_SOURCES)]
    field = _SOURCE_FIELD[kind]
    source = metric.get(field)
    causes: list[Cause] = []
    for other in _SOURCE_FIELD.values():
        if other != field and metric.get(other) is not None:
            causes.append(
                vm.forbidden(child(path, other), "must populate the given metric source only")
            )
    if not isinstance(source, Mapping):
        detail = "must populate information for the given metric source"
        return [*causes, vm.required(child(path, field), detail)]
    source_path = child(path, field)
    if kind in ("Resource", "ContainerResource") and not source.get("name"):
        causes.append(vm.required(child(source_path, "name"), "must specify a resource name"))
    if kind == "ContainerResource" and not source.get("container"):
        causes.append(vm.required(child(source_path, "container"), "must specify a container"))
    if kind in ("Pods", "External", "Object") and not _map(source.get("metric")).get("name"):
        causes.append(
            vm.required(child(source_path, "metric", "name"), "must specify a metric name")
        )
    causes.extend(_metric_target(source.get("target"), child(source_path, "target")))
    return causes


def validate_horizontal_pod_autoscaler(obj: Obj, old: Obj | None) -> list[Cause]:
    causes = vm.object_meta(obj, namespaced=True, name_check=vm.dns1123_subdomain, old=old)
    spec = _map(obj.get("spec"))
    minimum, maximum = spec.get("minReplicas"), spec.get("maxReplicas")
    if isinstance(minimum, int) and minimum < 1:
        causes.append(vm.invalid("spec.minReplicas", minimum, "must be greater than or equal to 1"))
    if not isinstance(maximum, int) or maximum < 1:
        causes.append(vm.invalid("spec.maxReplicas", maximum or 0, "must be greater than 0"))
    elif isinstance(minimum, int) and minimum > maximum:
        causes.append(
            vm.invalid(
                "spec.maxReplicas", maximum, "must be greater than or equal to `minReplicas`"
            )
        )
    ref = _map(spec.get("scaleTargetRef"))
    for field in ("kind", "name"):
        value = ref.get(field)
        path = child("spec.scaleTargetRef", field)
        if not value:
            causes.append(vm.required(path))
        elif isinstance(value, str):
            causes.extend(vm.invalid(path, value, m) for m in vm.path_segment_name(value))
    for i, metric in enumerate(_list(spec.get("metrics"))):
        causes.extend(_metric(metric, index("spec.metrics", i)))
    return causes


# --- PodDisruptionBudget -----------------------------------------------------------------------

_EVICTION_POLICIES = ("AlwaysAllow", "IfHealthyBudget")


def _budget(value: Any, path: str) -> list[Cause]:
    if value is None:
        return []
    causes = va._positive_int_or_percent(value, path)
    if isinstance(value, str) and va._int_or_percent(value) > 100:
        causes.append(vm.invalid(path, value, "must not be greater than 100%"))
    return causes


def validate_pod_disruption_budget(obj: Obj, old: Obj | None) -> list[Cause]:
    causes = vm.object_meta(obj, namespaced=True, name_check=vm.dns1123_subdomain, old=old)
    spec = _map(obj.get("spec"))
    if spec.get("minAvailable") is not None and spec.get("maxUnavailable") is not None:
        causes.append(
            vm.invalid("spec", spec, "minAvailable and maxUnavailable cannot be both set")
        )
    causes.extend(_budget(spec.get("minAvailable"), "spec.minAvailable"))
    causes.extend(_budget(spec.get("maxUnavailable"), "spec.maxUnavailable"))
    causes.extend(vm.label_selector(spec.get("selector"), "spec.selector"))
    policy = spec.get("unhealthyPodEvictionPolicy")
    if policy is not None and policy not in _EVICTION_POLICIES:
        causes.append(
            vm.not_supported("spec.unhealthyPodEvictionPolicy", policy, _EVICTION_POLICIES)
        )
    return causes


# --- NetworkPolicy -----------------------------------------------------------------------------

_PROTOCOLS = ("SCTP", "TCP", "UDP")
_POLICY_TYPES = ("Ingress", "Egress")


def _cidr(value: Any, path: str) -> list[Cause]:
    try:
        ipaddress.ip_network(str(value), strict=False)
        if "/" not in str(value):
            raise ValueError
    except ValueError:
        return [
            vm.invalid(
                path, value, "must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)"
            )
        ]
    return []


def _peer(peer: Any, path: str) -> list[Cause]:
    peer = _map(peer)
    causes: list[Cause] = []
    chosen = [k for k in ("podSelector", "namespaceSelector", "ipBlock") if peer.get(k) is not None]
    if not chosen:
        return [vm.required(path, "must specify a peer")]
    if "ipBlock" in chosen and len(chosen) > 1:
        causes.append(vm.forbidden(path, "may not specify more than 1 peer"))
    for selector in ("podSelector", "namespaceSelector"):
        causes.extend(vm.label_selector(peer.get(selector), child(path, selector)))
    block = peer.get("ipBlock")
    if isinstance(block, Mapping):
        causes.extend(_cidr(block.get("cidr"), child(path, "ipBlock", "cidr")))
        for i, excepted in enumerate(_list(block.get("except"))):
            causes.extend(_cidr(excepted, index(child(path, "ipBlock", "except"), i)))
    return causes


def _policy_port(port: Any, path: str) -> list[Cause]:
    port = _map(port)
    causes: list[Cause] = []
    protocol = port.get("protocol")
    if protocol is not None and protocol not in _PROTOCOLS:
        causes.append(vm.not_supported(child(path, "protocol"), protocol, _PROTOCOLS))
    number = port.get("port")
    if isinstance(number, int):
        causes.extend(vm.port_range(child(path, "port"), number))
        end = port.get("endPort")
        if isinstance(end, int) and end < number:
            causes.append(
                vm.invalid(child(path, "endPort"), end, "must be greater than or equal to `port`")
            )
    elif isinstance(number, str):
        causes.extend(vm.invalid(child(path, "port"), number, m) for m in _port_name(number))
        if port.get("endPort") is not None:
            causes.append(
                vm.invalid(
                    child(path, "endPort"),
                    port["endPort"],
                    "may not be specified when `port` is non-numeric",
                )
            )
    return causes


def validate_network_policy(obj: Obj, old: Obj | None) -> list[Cause]:
    causes = vm.object_meta(obj, namespaced=True, name_check=vm.dns1123_subdomain, old=old)
    spec = _map(obj.get("spec"))
    causes.extend(vm.label_selector(spec.get("podSelector"), "spec.podSelector"))
    for direction, peers in (("ingress", "from"), ("egress", "to")):
        for i, rule in enumerate(_list(spec.get(direction))):
            rule_path = index(child("spec", direction), i)
            rule = _map(rule)
            for j, port in enumerate(_list(rule.get("ports"))):
                causes.extend(_policy_port(port, index(child(rule_path, "ports"), j)))
            for j, peer in enumerate(_list(rule.get(peers))):
                causes.extend(_peer(peer, index(child(rule_path, peers), j)))
    types = _list(spec.get("policyTypes"))
    for i, kind in enumerate(types):
        if kind not in _POLICY_TYPES:
            causes.append(vm.not_supported(index("spec.policyTypes", i), kind, _POLICY_TYPES))
    if len(types) > 2:
        causes.append(vm.forbidden("spec.policyTypes", "may not specify more than two policyTypes"))
    return causes


# --- IngressClass ------------------------------------------------------------------------------

_SCOPES = ("Cluster", "Namespace")


def validate_ingress_class(obj: Obj, old: Obj | None) -> list[Cause]:
    causes = vm.object_meta(obj, namespaced=False, name_check=vm.dns1123_subdomain, old=old)
    spec = _map(obj.get("spec"))
    controller = spec.get("controller")
    if not controller:
        causes.append(vm.required("spec.controller"))
    elif isinstance(controller, str):
        causes.extend(
            vm.invalid("spec.controller", controller, m) for m in _domain_prefixed(controller)
        )
    params = spec.get("parameters")
    if isinstance(params, Mapping):
        path = "spec.parameters"
        for field in ("kind", "name"):
            if not params.get(field):
                causes.append(vm.required(child(path, field)))
        scope = params.get("scope")
        if scope not in _SCOPES:
            causes.append(vm.not_supported(child(path, "scope"), scope, _SCOPES))
        elif scope == "Namespace" and not params.get("namespace"):
            causes.append(
                vm.required(child(path, "namespace"), "`parameters.scope` is set to 'Namespace'")
            )
        elif scope == "Cluster" and params.get("namespace"):
            causes.append(
                vm.forbidden(child(path, "namespace"), "`parameters.scope` is set to 'Cluster'")
            )
    if old is not None:
        causes.extend(
            vm.immutable("spec.controller", controller, _map(old.get("spec")).get("controller"))
        )
    return causes


def _domain_prefixed(value: str) -> list[str]:
    """IsDomainPrefixedPath: `example.com/path`."""
    host, slash, rest = value.partition("/")
    if not slash or not host or not rest:
        return ['must be a domain-prefixed path (such as "acme.io/foo")']
    problems = vm.dns1123_subdomain(host)
    if not re.fullmatch(r"[A-Za-z0-9/\-._~%!$&'()*+,;=:]+", rest):
        problems.append("segment of the path must consist of valid characters")
    return problems


# --- EndpointSlice -----------------------------------------------------------------------------

_ADDRESS_TYPES = ("IPv4", "IPv6", "FQDN")


def _address(kind: Any, address: Any, path: str) -> list[str]:
    text = str(address)
    if kind == "IPv4":
        try:
            ipaddress.IPv4Address(text)
        except ValueError:
            return ["must be a valid IPv4 address"]
    elif kind == "IPv6":
        try:
            ipaddress.IPv6Address(text)
        except ValueError:
            return ["must be a valid IPv6 address"]
    elif kind == "FQDN":
        return vm.dns1123_subdomain(text)
    return []


def validate_endpoint_slice(obj: Obj, old: Obj | None) -> list[Cause]:
    causes = vm.object_meta(obj, namespaced=True, name_check=vm.dns1123_subdomain, old=old)
    kind = obj.get("addressType")
    if not kind:
        causes.append(vm.required("addressType"))
    elif kind not in _ADDRESS_TYPES:
        causes.append(vm.not_supported("addressType", kind, _ADDRESS_TYPES))
    for i, endpoint in enumerate(_list(obj.get("endpoints"))):
        path = index("endpoints", i)
        addresses = _list(_map(endpoint).get("addresses"))
        if not addresses:
            causes.append(vm.required(child(path, "addresses"), "must contain at least 1 address"))
        elif len(addresses) > 100:
            causes.append(_too_many(child(path, "addresses"), len(addresses), 100))
        for j, address in enumerate(addresses):
            address_path = index(child(path, "addresses"), j)
            causes.extend(
                vm.invalid(address_path, address, m) for m in _address(kind, address, address_path)
            )
    for i, port in enumerate(_list(obj.get("ports"))):
        path = index("ports", i)
        port = _map(port)
        name = port.get("name")
        if isinstance(name, str) and name:
            causes.extend(vm.invalid(child(path, "name"), name, m) for m in vm.dns1123_label(name))
        protocol = port.get("protocol")
        if protocol is not None and protocol not in _PROTOCOLS:
            causes.append(vm.not_supported(child(path, "protocol"), protocol, _PROTOCOLS))
        number = port.get("port")
        if number is not None:
            causes.extend(vm.port_range(child(path, "port"), number))
    if old is not None:
        causes.extend(vm.immutable("addressType", kind, old.get("addressType")))
    return causes


# --- PriorityClass -----------------------------------------------------------------------------

_HIGHEST_USER_PRIORITY = 1_000_000_000
_SYSTEM_CLASSES = {"system-node-critical": 2_000_001_000, "system-cluster-critical": 2_000_000_000}
_PREEMPTION = ("Never", "PreemptLowerPriority")


def validate_priority_class(obj: Obj, old: Obj | None) -> list[Cause]:
    causes = vm.object_meta(obj, namespaced=False, name_check=vm.dns1123_subdomain, old=old)
    name = str(_map(obj.get("metadata")).get("name") or "")
    value = obj.get("value")
    if name.startswith("system-"):
        known = _SYSTEM_CLASSES.get(name)
        if known is None:
            error = f"{name} is not a known system priority class"
        elif value != known:
            error = f"value of {name} PriorityClass must be {known}"
        else:
            error = ""
        if error:
            causes.append(
                vm.forbidden(
                    "metadata.name",
                    "priority class names with 'system-' prefix are reserved for system use only. "
                    f"error: {error}",
                )
            )
    elif isinstance(value, int) and value > _HIGHEST_USER_PRIORITY:
        causes.append(
            vm.forbidden(
                "value",
                f"maximum allowed value of a user defined priority is {_HIGHEST_USER_PRIORITY}",
            )
        )
    policy = obj.get("preemptionPolicy")
    if policy is not None and policy not in _PREEMPTION:
        causes.append(vm.not_supported("preemptionPolicy", policy, _PREEMPTION))
    if old is not None:
        if value != old.get("value"):
            causes.append(vm.forbidden("value", "may not be changed in an update."))
        causes.extend(vm.immutable("preemptionPolicy", policy, old.get("preemptionPolicy")))
    return causes


VALIDATORS = {
    ("", "PersistentVolumeClaim"): validate_persistent_volume_claim,
    ("autoscaling", "HorizontalPodAutoscaler"): validate_horizontal_pod_autoscaler,
    ("policy", "PodDisruptionBudget"): validate_pod_disruption_budget,
    ("networking.k8s.io", "NetworkPolicy"): validate_network_policy,
    ("networking.k8s.io", "IngressClass"): validate_ingress_class,
    ("discovery.k8s.io", "EndpointSlice"): validate_endpoint_slice,
    ("scheduling.k8s.io", "PriorityClass"): validate_priority_class,
}

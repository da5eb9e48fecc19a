"""Hand-written validation of core/v1 kinds, after pkg/apis/core/validation (1.32).

Only the checks kubectl users commonly hit are ported; each message matches upstream's.
"""

from __future__ import annotations

import base64
import binascii
import ipaddress
from collections.abc import Mapping
from typing import Any

from minikcp.apis import validation_meta as vm
from minikcp.apis.validation_meta import child, index
from minikcp.machinery.errors import Cause

Obj = Mapping[str, Any]

MAX_SECRET_SIZE = 1024 * 1024
_PROTOCOLS = ("SCTP", "TCP", "UDP")
_RESTART_POLICIES = ("Always", "OnFailure", "Never")
_DNS_POLICIES = ("ClusterFirst", "ClusterFirstWithHostNet", "Default", "None")
_PULL_POLICIES = ("Always", "IfNotPresent", "Never")
_MESSAGE_POLICIES = ("File", "FallbackToLogsOnError")
_SERVICE_TYPES = ("ClusterIP", "ExternalName", "LoadBalancer", "NodePort")
_EXTERNAL_NAME_FORBIDS = "may not be set for ExternalName services"
_CLUSTER_IP_FORBIDS_NODE_PORT = "may not be used when `type` is 'ClusterIP'"
_NOT_EXTERNAL = "may only be set for externally-accessible services"
_HEALTH_CHECK_ONLY = (
    "may only be set when `type` is 'LoadBalancer' and `externalTrafficPolicy` is 'Local'"
)
_TRAFFIC_POLICIES = ("Cluster", "Local")
_IP_FAMILIES = ("IPv4", "IPv6")
_NOT_AN_IP = "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)"
_IP_FAMILY_POLICIES = ("PreferDualStack", "RequireDualStack", "SingleStack")
_VOLUME_SOURCES_EXCLUDED = frozenset({"name"})


def _map(value: Any) -> Obj:
    return value if isinstance(value, Mapping) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def not_found(path: str, value: Any) -> Cause:
    return Cause("FieldValueNotFound", f"Not found: {vm.go_value(value)}", path)


# -- pod spec ---------------------------------------------------------------------------------


def _container_ports(ports: list[Any], path: str) -> list[Cause]:
    causes: list[Cause] = []
    names: set[str] = set()
    for i, port in enumerate(ports):
        port = _map(port)
        p = index(path, i)
        name = port.get("name") or ""
        if name:
            if name in names:
                causes.append(vm.duplicate(child(p, "name"), name))
            names.add(name)
        container_port = port.get("containerPort") or 0
        if container_port == 0:
            causes.append(vm.required(child(p, "containerPort")))
        else:
            causes.extend(vm.port_range(child(p, "containerPort"), container_port))
        if port.get("hostPort"):
            causes.extend(vm.port_range(child(p, "hostPort"), port["hostPort"]))
        protocol = port.get("protocol") or ""
        if not protocol:
            causes.append(vm.required(child(p, "protocol")))
        elif protocol not in _PROTOCOLS:
            causes.append(vm.not_supported(child(p, "protocol"), protocol, _PROTOCOLS))
    return causes


def _containers(containers: Any, path: str, volumes: set[str], *, regular: bool) -> list[Cause]:
    causes: list[Cause] = []
    if regular and not containers:
        return [vm.required(path)]
    names: set[str] = set()
    for i, ctr in enumerate(_list(containers)):
        ctr = _map(ctr)
        p = index(path, i)
        name = ctr.get("name") or ""
        if not name:
            causes.append(vm.required(child(p, "name")))
        else:
            causes.extend(vm.invalid(child(p, "name"), name, m) for m in vm.dns1123_label(name))
            if name in names:
                causes.append(vm.duplicate(child(p, "name"), name))
            names.add(name)
        if not ctr.get("image"):
            causes.append(vm.required(child(p, "image")))
        causes.extend(_container_ports(_list(ctr.get("ports")), child(p, "ports")))
        for j, env in enumerate(_list(ctr.get("env"))):
            if not _map(env).get("name"):
                causes.append(vm.required(child(index(child(p, "env"), j), "name")))
        for j, mount in enumerate(_list(ctr.get("volumeMounts"))):
            mount = _map(mount)
            mp = index(child(p, "volumeMounts"), j)
            mount_name = mount.get("name") or ""
            if not mount_name:
                causes.append(vm.required(child(mp, "name")))
            elif mount_name not in volumes:
                causes.append(not_found(child(mp, "name"), mount_name))
            if not mount.get("mountPath"):
                causes.append(vm.required(child(mp, "mountPath")))
        policy = ctr.get("imagePullPolicy") or ""
        if not policy:
            causes.append(vm.required(child(p, "imagePullPolicy")))
        elif policy not in _PULL_POLICIES:
            causes.append(vm.not_supported(child(p, "imagePullPolicy"), policy, _PULL_POLICIES))
        message_policy = ctr.get("terminationMessagePolicy") or ""
        mp_path = child(p, "terminationMessagePolicy")
        if not message_policy:
            causes.append(vm.required(mp_path))
        elif message_policy not in _MESSAGE_POLICIES:
            causes.append(vm.not_supported(mp_path, message_policy, _MESSAGE_POLICIES))
    return causes


def _volumes(volumes: list[Any], path: str) -> tuple[set[str], list[Cause]]:
    causes: list[Cause] = []
    names: set[str] = set()
    for i, vol in enumerate(volumes):
        vol = _map(vol)
        p = index(path, i)
        name = vol.get("name") or ""
        if not name:
            causes.append(vm.required(child(p, "name")))
        else:
            causes.extend(vm.invalid(child(p, "name"), name, m) for m in vm.dns1123_label(name))
            if name in names:
                causes.append(vm.duplicate(child(p, "name"), name))
            names.add(name)
        sources = [k for k, v in vol.items() if k not in _VOLUME_SOURCES_EXCLUDED and v is not None]
        if not sources:
            causes.append(vm.required(p, "must specify a volume type"))
        elif len(sources) > 1:
            causes.append(
                vm.forbidden(child(p, sources[1]), "may not specify more than 1 volume type")
            )
    return names, causes


def pod_spec(
    spec: Any, path: str, *, restart_policies: tuple[str, ...] = _RESTART_POLICIES
) -> list[Cause]:
    spec = _map(spec)
    volume_names, causes = _volumes(_list(spec.get("volumes")), child(path, "volumes"))
    causes.extend(
        _containers(spec.get("containers"), child(path, "containers"), volume_names, regular=True)
    )
    causes.extend(
        _containers(
            spec.get("initContainers"), child(path, "initContainers"), volume_names, regular=False
        )
    )
    restart = spec.get("restartPolicy") or ""
    if not restart:
        causes.append(vm.required(child(path, "restartPolicy")))
    elif restart not in restart_policies:
        causes.append(vm.not_supported(child(path, "restartPolicy"), restart, restart_policies))
    dns = spec.get("dnsPolicy") or ""
    if not dns:
        causes.append(vm.required(child(path, "dnsPolicy")))
    elif dns not in _DNS_POLICIES:
        causes.append(vm.not_supported(child(path, "dnsPolicy"), dns, _DNS_POLICIES))
    for field in ("terminationGracePeriodSeconds", "activeDeadlineSeconds"):
        causes.extend(vm.nonnegative(child(path, field), spec.get(field)))
    if spec.get("activeDeadlineSeconds") == 0:
        causes.append(
            vm.invalid(
                child(path, "activeDeadlineSeconds"),
                0,
                "must be between 1 and 2147483647, inclusive",
            )
        )
    causes.extend(vm.check_labels(spec.get("nodeSelector"), child(path, "nodeSelector")))
    return causes


def pod_template(
    template: Any, path: str, *, restart_policies: tuple[str, ...] = _RESTART_POLICIES
) -> list[Cause]:
    """ValidatePodTemplateSpec: template labels and annotations plus the pod spec."""
    template = _map(template)
    meta = _map(template.get("metadata"))
    causes = vm.check_labels(meta.get("labels"), child(path, "metadata", "labels"))
    causes.extend(
        vm.check_annotations(meta.get("annotations"), child(path, "metadata", "annotations"))
    )
    causes.extend(
        pod_spec(template.get("spec"), child(path, "spec"), restart_policies=restart_policies)
    )
    return causes


def validate_pod(obj: Obj, old: Obj | None) -> list[Cause]:
    causes = vm.object_meta(obj, namespaced=True, name_check=vm.dns1123_subdomain, old=old)
    return causes + pod_spec(obj.get("spec"), "spec")


# -- config -----------------------------------------------------------------------------------


def _immutable_data(obj: Obj, old: Obj | None, fields: tuple[str, ...]) -> list[Cause]:
    if old is None or not old.get("immutable"):
        return []
    causes: list[Cause] = []
    if not obj.get("immutable"):
        causes.append(vm.forbidden("immutable", "field is immutable when `immutable` is set"))
    for field in fields:
        if (obj.get(field) or {}) != (old.get(field) or {}):
            causes.append(vm.forbidden(field, "field is immutable when `immutable` is set"))
    return causes


def validate_config_map(obj: Obj, old: Obj | None) -> list[Cause]:
    causes = vm.object_meta(obj, namespaced=True, name_check=vm.dns1123_subdomain, old=old)
    data, binary = _map(obj.get("data")), _map(obj.get("binaryData"))
    size = 0
    for key, value in data.items():
        causes.extend(vm.invalid(vm.key("data", key), key, m) for m in vm.config_map_key(key))
        if key in binary:
            causes.append(
                vm.invalid(vm.key("data", key), key, "duplicate of key present in binaryData")
            )
        size += len(value) if isinstance(value, str) else 0
    for key, value in binary.items():
        causes.extend(vm.invalid(vm.key("binaryData", key), key, m) for m in vm.config_map_key(key))
        if key in data:
            causes.append(
                vm.invalid(vm.key("binaryData", key), key, "duplicate of key present in data")
            )
        size += len(value) * 3 // 4 if isinstance(value, str) else 0
    if size > MAX_SECRET_SIZE:
        causes.append(vm.too_long("", MAX_SECRET_SIZE))
    return causes + _immutable_data(obj, old, ("data", "binaryData"))


_SECRET_REQUIRED_KEYS = {
    "kubernetes.io/dockerconfigjson": (".dockerconfigjson",),
    "kubernetes.io/dockercfg": (".dockercfg",),
    "kubernetes.io/tls": ("tls.crt", "tls.key"),
    "kubernetes.io/ssh-auth": ("ssh-privatekey",),
}


def validate_secret(obj: Obj, old: Obj | None) -> list[Cause]:
    causes = vm.object_meta(obj, namespaced=True, name_check=vm.dns1123_subdomain, old=old)
    data = _map(obj.get("data"))
    size = 0
    for key, value in data.items():
        causes.extend(vm.invalid(vm.key("data", key), key, m) for m in vm.config_map_key(key))
        try:
            size += len(base64.b64decode(value or "", validate=False))
        except (binascii.Error, ValueError, TypeError):
            pass  # malformed base64 is a decode error (400), reported before validation
    if size > MAX_SECRET_SIZE:
        causes.append(vm.too_long("data", MAX_SECRET_SIZE))
    secret_type = obj.get("type") or "Opaque"
    for key in _SECRET_REQUIRED_KEYS.get(secret_type, ()):
        if key not in data and key not in _map(obj.get("stringData")):
            causes.append(vm.required(vm.key("data", key)))
    if secret_type == "kubernetes.io/service-account-token":
        annotations = _map(_map(obj.get("metadata")).get("annotations"))
        if not annotations.get("kubernetes.io/service-account.name"):
            path = vm.key("metadata.annotations", "kubernetes.io/service-account.name")
            causes.append(vm.required(path))
    if old is not None:
        causes.extend(vm.immutable("type", obj.get("type"), old.get("type")))
    return causes + _immutable_data(obj, old, ("data",))


# -- namespaces, service accounts, services, endpoints, events ------------------------------------


def validate_namespace(obj: Obj, old: Obj | None) -> list[Cause]:
    causes = vm.object_meta(obj, namespaced=False, name_check=vm.dns1123_label, old=old)
    for i, finalizer in enumerate(_list(_map(obj.get("spec")).get("finalizers"))):
        path = index("spec.finalizers", i)
        causes.extend(vm.invalid(path, finalizer, m) for m in vm.qualified_name(finalizer or ""))
        if isinstance(finalizer, str) and "/" not in finalizer and finalizer != "kubernetes":
            detail = "name is neither a standard finalizer name nor is it fully qualified"
            causes.append(vm.invalid(path, finalizer, detail))
    return causes


def validate_service_account(obj: Obj, old: Obj | None) -> list[Cause]:
    return vm.object_meta(obj, namespaced=True, name_check=vm.dns1123_subdomain, old=old)


def _service_ports(ports: list[Any]) -> list[Cause]:
    causes: list[Cause] = []
    names: set[str] = set()
    for i, port in enumerate(ports):
        port = _map(port)
        p = index("spec.ports", i)
        name = port.get("name") or ""
        if len(ports) > 1 and not name:
            causes.append(vm.required(child(p, "name")))
        elif name:
            causes.extend(vm.invalid(child(p, "name"), name, m) for m in vm.dns1123_label(name))
            if name in names:
                causes.append(vm.duplicate(child(p, "name"), name))
            names.add(name)
        causes.extend(vm.port_range(child(p, "port"), port.get("port") or 0))
        protocol = port.get("protocol") or ""
        if not protocol:
            causes.append(vm.required(child(p, "protocol")))
        elif protocol not in _PROTOCOLS:
            causes.append(vm.not_supported(child(p, "protocol"), protocol, _PROTOCOLS))
        target = port.get("targetPort")
        if isinstance(target, int) and not isinstance(target, bool) and target != 0:
            causes.extend(vm.port_range(child(p, "targetPort"), target))
    return causes


def _cluster_ips_update(spec: Obj, old_spec: Obj) -> list[Cause]:
    """validateUpgradeDowngradeClusterIPs: a dual-stack upgrade or downgrade may add or drop
    the secondary IP; neither IP changes once set (to or from ExternalName aside)."""
    if "ExternalName" in (spec.get("type"), old_spec.get("type")):
        return []
    if spec.get("clusterIP") == "None" and old_spec.get("clusterIP") == "None":
        return []
    new_ips, old_ips = _list(spec.get("clusterIPs")), _list(old_spec.get("clusterIPs"))
    return [
        vm.invalid(index("spec.clusterIPs", i), new_ips, "may not change once set")
        for i, (was, now) in enumerate(zip(old_ips, new_ips, strict=False))
        if was != now
    ]


def service_ip_fields(spec: Obj) -> list[Cause]:
    """ValidateServiceClusterIPsRelatedFields: clusterIP and clusterIPs in step, the values of
    clusterIPs, ipFamilies and ipFamilyPolicy, and IPs that match their families. The service
    REST runs it before it defaults the families, so it also stands before those refusals."""
    if spec.get("type") == "ExternalName":
        return []  # the fields must all be unset there (validate_service)
    causes: list[Cause] = []
    cluster_ip, ips = spec.get("clusterIP") or "", _list(spec.get("clusterIPs"))
    if cluster_ip:
        if not ips:
            causes.append(vm.required("spec.clusterIPs"))
        elif ips[0] != cluster_ip:
            causes.append(vm.invalid("spec.clusterIPs", ips, "first value must match `clusterIP`"))
    elif ips:
        causes.append(
            vm.invalid("spec.clusterIPs", ips, "must be empty when `clusterIP` is not specified")
        )
    families = _list(spec.get("ipFamilies"))
    seen: set[Any] = set()
    for i, family in enumerate(families):
        path = index("spec.ipFamilies", i)
        if family not in _IP_FAMILIES:
            causes.append(vm.not_supported(path, family, _IP_FAMILIES))
        if family in seen:
            causes.append(vm.duplicate(path, family))
        seen.add(family)
    policy = spec.get("ipFamilyPolicy")
    if policy is not None and policy not in _IP_FAMILY_POLICIES:
        causes.append(vm.not_supported("spec.ipFamilyPolicy", policy, _IP_FAMILY_POLICIES))
    invalid_ips = False
    versions: list[int] = []
    for i, ip in enumerate(ips):
        if i == 0 and ip == "None":
            if len(ips) > 1:
                invalid_ips = True
                causes.append(
                    vm.invalid("spec.clusterIPs", ips, "'None' must be the first and only value")
                )
            continue
        version = _ip_version(ip)
        if version is None:
            invalid_ips = True
            causes.append(vm.invalid(index("spec.clusterIPs", i), ip, _NOT_AN_IP))
        else:
            versions.append(version)
    if len(ips) > 2:
        causes.append(vm.invalid("spec.clusterIPs", ips, "may only hold up to 2 values"))
    if invalid_ips:
        return causes
    if len(ips) > 1 and len(set(versions)) != 2:
        causes.append(
            vm.invalid("spec.clusterIPs", ips, "may specify no more than one IP for each IP family")
        )
    if ips != ["None"]:
        for i, (ip, family) in enumerate(zip(ips, families, strict=False)):
            version = _ip_version(ip)
            if family == "IPv4" and version == 6:
                expected = f"expected an IPv4 value as indicated by `ipFamilies[{i}]`"
                causes.append(vm.invalid(index("spec.clusterIPs", i), ip, expected))
            if family == "IPv6" and version != 6:
                expected = f"expected an IPv6 value as indicated by `ipFamilies[{i}]`"
                causes.append(vm.invalid(index("spec.clusterIPs", i), ip, expected))
    return causes


def _ip_version(ip: Any) -> int | None:
    if not isinstance(ip, str):
        return None
    try:
        return ipaddress.ip_address(ip).version
    except ValueError:
        return None


def externally_accessible(spec: Mapping[str, Any]) -> bool:
    """serviceutil.ExternallyAccessible: a load balancer, a node port, or external IPs."""
    service_type = spec.get("type")
    return service_type in ("NodePort", "LoadBalancer") or (
        service_type == "ClusterIP" and bool(spec.get("externalIPs"))
    )


def _external_traffic(spec: Obj) -> list[Cause]:
    """validateServiceExternalTrafficPolicy: the policy only where traffic comes from outside,
    the health-check port only for a LoadBalancer with the Local policy."""
    causes: list[Cause] = []
    service_type = spec.get("type")
    policy = spec.get("externalTrafficPolicy") or ""
    if not externally_accessible(spec):
        if policy:
            causes.append(vm.invalid("spec.externalTrafficPolicy", policy, _NOT_EXTERNAL))
    elif not policy:
        causes.append(vm.required("spec.externalTrafficPolicy"))
    elif policy not in _TRAFFIC_POLICIES:
        causes.append(vm.not_supported("spec.externalTrafficPolicy", policy, _TRAFFIC_POLICIES))
    health = spec.get("healthCheckNodePort") or 0
    if service_type != "LoadBalancer" or policy != "Local":
        if health:
            causes.append(vm.invalid("spec.healthCheckNodePort", health, _HEALTH_CHECK_ONLY))
    elif not health:
        causes.append(vm.required("spec.healthCheckNodePort"))
    else:
        causes.extend(vm.port_range("spec.healthCheckNodePort", health))
    return causes


def validate_service(obj: Obj, old: Obj | None) -> list[Cause]:
    causes = vm.object_meta(obj, namespaced=True, name_check=vm.dns1035_label, old=old)
    spec = _map(obj.get("spec"))
    if old is not None:
        causes.extend(_cluster_ips_update(spec, _map(old.get("spec"))))
    service_type = spec.get("type") or ""
    ports = _list(spec.get("ports"))
    headless = spec.get("clusterIP") == "None"
    if not ports and not headless and service_type != "ExternalName":
        causes.append(vm.required("spec.ports"))
    if service_type == "ExternalName":
        # The service REST clears what the client left as it was when the type changed.
        for field in ("clusterIPs", "ipFamilies"):
            if _list(spec.get(field)):
                causes.append(vm.forbidden(child("spec", field), _EXTERNAL_NAME_FORBIDS))
        if spec.get("ipFamilyPolicy") is not None:
            causes.append(vm.forbidden("spec.ipFamilyPolicy", _EXTERNAL_NAME_FORBIDS))
        external = spec.get("externalName") or ""
        if not external:
            causes.append(vm.required("spec.externalName"))
        else:
            causes.extend(
                vm.invalid("spec.externalName", external, m)
                for m in vm.dns1123_subdomain(external.rstrip("."))
            )
    causes.extend(_service_ports(ports))
    if service_type == "ClusterIP":
        causes.extend(
            vm.forbidden(child(index("spec.ports", i), "nodePort"), _CLUSTER_IP_FORBIDS_NODE_PORT)
            for i, port in enumerate(ports)
            if _map(port).get("nodePort")
        )
    causes.extend(service_ip_fields(spec))
    causes.extend(_external_traffic(spec))
    if not service_type:
        causes.append(vm.required("spec.type"))
    elif service_type not in _SERVICE_TYPES:
        causes.append(vm.not_supported("spec.type", service_type, _SERVICE_TYPES))
    affinity = spec.get("sessionAffinity") or ""
    if not affinity:
        causes.append(vm.required("spec.sessionAffinity"))
    elif affinity not in ("ClientIP", "None"):
        causes.append(vm.not_supported("spec.sessionAffinity", affinity, ("ClientIP", "None")))
    causes.extend(vm.check_labels(spec.get("selector"), "spec.selector"))
    return causes


def validate_endpoints(obj: Obj, old: Obj | None) -> list[Cause]:
    causes = vm.object_meta(obj, namespaced=True, name_check=vm.dns1123_subdomain, old=old)
    for i, subset in enumerate(_list(obj.get("subsets"))):
        for j, port in enumerate(_list(_map(subset).get("ports"))):
            path = child(index(child(index("subsets", i), "ports"), j), "port")
            causes.extend(vm.port_range(path, _map(port).get("port") or 0))
    return causes


def validate_event(obj: Obj, old: Obj | None) -> list[Cause]:
    causes = vm.object_meta(obj, namespaced=True, name_check=vm.dns1123_subdomain, old=old)
    involved = _map(obj.get("involvedObject"))
    namespace = _map(obj.get("metadata")).get("namespace") or ""
    involved_ns = involved.get("namespace") or ""
    if involved_ns and involved_ns != namespace:
        causes.append(
            vm.invalid("involvedObject.namespace", involved_ns, "does not match event.namespace")
        )
    return causes


VALIDATORS = {
    ("", "Pod"): validate_pod,
    ("", "ConfigMap"): validate_config_map,
    ("", "Secret"): validate_secret,
    ("", "Namespace"): validate_namespace,
    ("", "ServiceAccount"): validate_service_account,
    ("", "Service"): validate_service,
    ("", "Endpoints"): validate_endpoints,
    ("", "Event"): validate_event,
}

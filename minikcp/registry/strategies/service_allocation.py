"""What upstream's service REST does around a Service's allocations (pkg/registry/core/service:
the strategy's dropTypeDependentFields, storage.go's patchAllocatedValues and
normalizeClusterIPs, alloc.go's initIPFamilyFields, allocClusterIPs, updateNodePorts).

Cluster IPs and node ports come from a hash of namespace and name: no allocator state to keep,
so nothing is released when a Service stops needing them; the fields are only cleared.
"""

from __future__ import annotations

import hashlib
import ipaddress
from collections.abc import Mapping
from typing import Any

from minikcp.apis import validation_core
from minikcp.apis import validation_meta as vm
from minikcp.apis.validation_meta import index
from minikcp.machinery.errors import Cause

_SERVICE_NET = ipaddress.ip_network("10.96.0.0/12")
# --service-node-port-range 30000-32767.
_NODE_PORT_BASE, _NODE_PORT_COUNT = 30000, 2768
# The single-stack cluster's family: --service-cluster-ip-range is IPv4 only.
_CLUSTER_FAMILY = "IPv4"
_CONFIGURED_FAMILIES = frozenset({_CLUSTER_FAMILY})
_OTHER_FAMILY = {"IPv4": "IPv6", "IPv6": "IPv4"}

Spec = dict[str, Any]


# -- create and update ------------------------------------------------------------------------


def allocate_create(spec: Spec, seed: str) -> list[Cause]:
    """beginCreate: normalizeClusterIPs, initIPFamilyFields, then the allocations; returns the
    refusals of initIPFamilyFields (nothing is allocated then)."""
    if spec.get("clusterIP") and not spec.get("clusterIPs"):
        spec["clusterIPs"] = [spec["clusterIP"]]
    refusals = init_ip_families(spec, None)
    if refusals:
        return refusals
    if needs_cluster_ip(spec):
        _alloc_cluster_ip(spec, seed)
    if needs_node_port(spec):
        _alloc_node_ports(spec, seed, set(), share=True)
    if needs_health_check(spec) and not spec.get("healthCheckNodePort"):
        spec["healthCheckNodePort"] = _free_node_port(f"{seed}/health", _node_ports(spec))
    return []


def allocate_update(spec: Spec, old_spec: Mapping[str, Any], seed: str) -> list[Cause]:
    """The strategy's dropTypeDependentFields, then beginUpdate: patchAllocatedValues,
    normalizeClusterIPs, initIPFamilyFields and allocateUpdate; returns the refusals."""
    drop_type_dependent_fields(spec, old_spec)
    patch_allocated_values(spec, old_spec)
    normalize_cluster_ips(spec, old_spec)
    refusals = init_ip_families(spec, old_spec)
    if refusals:
        return refusals
    if not needs_cluster_ip(old_spec) and needs_cluster_ip(spec):
        _alloc_cluster_ip(spec, seed)
    if needs_node_port(spec):
        _alloc_node_ports(spec, seed, _node_ports(old_spec), share=False)
    if needs_health_check(spec) and not needs_health_check(old_spec):
        if not spec.get("healthCheckNodePort"):
            spec["healthCheckNodePort"] = _free_node_port(f"{seed}/health", _node_ports(spec))
    elif needs_health_check(spec):
        health = spec.get("healthCheckNodePort") or 0
        if health != (old_spec.get("healthCheckNodePort") or 0):
            return [vm.invalid("spec.healthCheckNodePort", health, _HEALTH_CHECK_FIXED)]
    return []


_HEALTH_CHECK_FIXED = (
    "cannot change healthCheckNodePort on loadBalancer service with externalTraffic=Local "
    "during update"
)


# -- what a type needs --------------------------------------------------------------------------


def needs_cluster_ip(spec: Mapping[str, Any]) -> bool:
    return bool(spec.get("type", "ClusterIP") != "ExternalName")


def needs_node_port(spec: Mapping[str, Any]) -> bool:
    return spec.get("type") in ("NodePort", "LoadBalancer")


def needs_health_check(spec: Mapping[str, Any]) -> bool:
    """apiservice.NeedsHealthCheck."""
    return spec.get("type") == "LoadBalancer" and spec.get("externalTrafficPolicy") == "Local"


def _should_allocate_node_ports(spec: Mapping[str, Any]) -> bool:
    if spec.get("type") == "NodePort":
        return True
    return spec.get("type") == "LoadBalancer" and spec.get("allocateLoadBalancerNodePorts", True)


# -- update steps -------------------------------------------------------------------------------


def drop_type_dependent_fields(spec: Spec, old_spec: Mapping[str, Any]) -> None:
    """dropTypeDependentFields: a type that no longer needs a field loses it when the client
    left it as it was (a value the client changed stays, for validation to judge)."""
    if needs_cluster_ip(old_spec) and not needs_cluster_ip(spec):
        if _same(spec, old_spec, "clusterIP") and _same(spec, old_spec, "clusterIPs"):
            spec.pop("clusterIP", None)
            spec.pop("clusterIPs", None)
        if _same(spec, old_spec, "ipFamilies"):
            spec.pop("ipFamilies", None)
        if _same(spec, old_spec, "ipFamilyPolicy"):
            spec.pop("ipFamilyPolicy", None)
    if needs_node_port(old_spec) and not needs_node_port(spec):
        # Ports may be added, removed or changed as long as no net-new node port appears.
        if _node_ports(spec) <= _node_ports(old_spec):
            for port in _ports(spec):
                port.pop("nodePort", None)
        if _same(spec, old_spec, "healthCheckNodePort"):
            spec.pop("healthCheckNodePort", None)
    if old_spec.get("type") == "LoadBalancer" and spec.get("type") != "LoadBalancer":
        if _same(spec, old_spec, "allocateLoadBalancerNodePorts"):
            spec.pop("allocateLoadBalancerNodePorts", None)
        if _same(spec, old_spec, "loadBalancerClass"):
            spec.pop("loadBalancerClass", None)
    if (
        validation_core.externally_accessible(old_spec)
        and not validation_core.externally_accessible(spec)
        and _same(spec, old_spec, "externalTrafficPolicy")
    ):
        spec.pop("externalTrafficPolicy", None)


def patch_allocated_values(spec: Spec, old_spec: Mapping[str, Any]) -> None:
    """patchAllocatedValues: what was allocated and the client left out is kept; a node port is
    matched by the port's name and kept unless another port of the update now uses it."""
    if needs_cluster_ip(spec) and needs_cluster_ip(old_spec):
        if not spec.get("clusterIP") and old_spec.get("clusterIP"):
            spec["clusterIP"] = old_spec["clusterIP"]
        if not spec.get("clusterIPs") and old_spec.get("clusterIPs"):
            spec["clusterIPs"] = list(old_spec["clusterIPs"])
    if needs_node_port(spec) and needs_node_port(old_spec):
        used = _node_ports(spec) & _node_ports(old_spec)
        by_name = {p.get("name") or "": p.get("nodePort") or 0 for p in _ports(old_spec)}
        for port in _ports(spec):
            if not port.get("nodePort"):
                old_value = by_name.get(port.get("name") or "", 0)
                if old_value and old_value not in used:
                    port["nodePort"] = old_value
    if (
        needs_health_check(spec)
        and needs_health_check(old_spec)
        and not spec.get("healthCheckNodePort")
        and old_spec.get("healthCheckNodePort")
    ):
        spec["healthCheckNodePort"] = old_spec["healthCheckNodePort"]


def normalize_cluster_ips(spec: Spec, old_spec: Mapping[str, Any]) -> None:
    """normalizeClusterIPs on update: a client that changed only the singular field (an old
    client) means the plural one too; validation then judges the change."""
    old_ip, new_ip = old_spec.get("clusterIP") or "", spec.get("clusterIP") or ""
    same_plural = (old_spec.get("clusterIPs") or []) == (spec.get("clusterIPs") or [])
    if old_ip == new_ip or not same_plural:
        return
    if old_ip and not new_ip:
        spec.pop("clusterIPs", None)
    else:
        spec["clusterIPs"] = [new_ip]


# -- IP families --------------------------------------------------------------------------------


def init_ip_families(spec: Spec, old_spec: Mapping[str, Any] | None) -> list[Cause]:
    """initIPFamilyFields on a single-stack IPv4 cluster (after the field manager ran, so these
    fields are nobody's unless the client sent them): an omitted `ipFamilyPolicy` is the old
    one, RequireDualStack for a headless Service without selector, else SingleStack; omitted
    `ipFamilies` follow `clusterIPs`, else the cluster's family. Returns what it refuses: a
    family or policy this cluster cannot serve."""
    if spec.get("type") == "ExternalName":
        return []
    headless_without_selector = spec.get("clusterIP") == "None" and not spec.get("selector")
    if not spec.get("ipFamilyPolicy"):
        old_policy = old_spec.get("ipFamilyPolicy") if old_spec is not None else None
        if old_policy:
            spec["ipFamilyPolicy"] = old_policy
        elif headless_without_selector:
            spec["ipFamilyPolicy"] = "RequireDualStack"
        else:
            spec["ipFamilyPolicy"] = "SingleStack"
    policy = spec["ipFamilyPolicy"]
    # The loose pre-validation: what it finds is refused before the family checks.
    malformed = validation_core.service_ip_fields(spec)
    if malformed:
        return malformed
    families = spec.get("ipFamilies")
    families = list(families) if isinstance(families, list) else []
    ips = spec.get("clusterIPs")
    ips = ips if isinstance(ips, list) else []
    refusals: list[Cause] = []
    if old_spec is not None and policy == "SingleStack":
        # Choosing SingleStack while leaving both IPs or families as they were is clear intent.
        if _same(spec, old_spec, "clusterIPs") and len(ips) > 1:
            ips = spec["clusterIPs"] = ips[:1]
        if _same(spec, old_spec, "ipFamilies") and len(families) > 1:
            families = families[:1]
    elif old_spec is not None:
        refusals.extend(_reductions(spec, old_spec, policy))
    if policy == "SingleStack":
        many = "must be 'RequireDualStack' or 'PreferDualStack' when multiple"
        if len(ips) == 2:
            refusals.append(
                vm.invalid("spec.ipFamilyPolicy", policy, f"{many} cluster IPs are specified")
            )
        if len(families) == 2:
            refusals.append(
                vm.invalid("spec.ipFamilyPolicy", policy, f"{many} IP families are specified")
            )
    for i, ip in enumerate(ips):
        if ip == "None":
            break
        family = _family_of(ip)
        if i >= len(families):
            if family in _CONFIGURED_FAMILIES:
                families.append(family)
            else:
                refusals.append(
                    vm.invalid(
                        index("spec.clusterIPs", i),
                        ips,
                        f"{family} is not configured on this cluster",
                    )
                )
    if refusals:
        return refusals
    if headless_without_selector:
        if not families:
            families = [_CLUSTER_FAMILY]
        if policy != "SingleStack" and len(families) == 1 and families[0] in _OTHER_FAMILY:
            # A headless Service without selector may name both families on a single stack.
            families.append(_OTHER_FAMILY[families[0]])
        spec["ipFamilies"] = families
        return []
    if policy == "RequireDualStack":
        refusals.append(
            vm.invalid(
                "spec.ipFamilyPolicy",
                policy,
                "this cluster is not configured for dual-stack services",
            )
        )
    refusals.extend(
        vm.invalid(index("spec.ipFamilies", i), family, "not configured on this cluster")
        for i, family in enumerate(families)
        if family not in _CONFIGURED_FAMILIES
    )
    if refusals:
        return refusals
    spec["ipFamilies"] = families or [_CLUSTER_FAMILY]
    return []


def _reductions(spec: Spec, old_spec: Mapping[str, Any], policy: str) -> list[Cause]:
    """A policy other than SingleStack may not drop the secondary IP or family."""
    refusals = []
    for field, what in (("clusterIPs", "cluster IP"), ("ipFamilies", "IP family")):
        new, old = _list(spec.get(field)), _list(old_spec.get(field))
        if new and len(new) < len(old):
            refusals.append(
                vm.invalid(
                    "spec.ipFamilyPolicy",
                    policy,
                    f"must be 'SingleStack' to release the secondary {what}",
                )
            )
    return refusals


def _family_of(ip: str) -> str:
    """The family of an IP the pre-validation accepted."""
    return "IPv4" if ipaddress.ip_address(ip).version == 4 else "IPv6"


# -- allocation ---------------------------------------------------------------------------------


def _alloc_cluster_ip(spec: Spec, seed: str) -> None:
    """allocClusterIPs: a headless Service keeps None; a requested IP is kept."""
    ips = spec.get("clusterIPs")
    if isinstance(ips, list) and ips and ips[0] == "None":
        return
    if not spec.get("clusterIP"):
        spec["clusterIP"] = str(_SERVICE_NET[1 + _hash(seed) % (_SERVICE_NET.num_addresses - 2)])
    if not spec.get("clusterIPs"):
        spec["clusterIPs"] = [spec["clusterIP"]]


def _alloc_node_ports(spec: Spec, seed: str, kept: set[int], *, share: bool) -> None:
    """initNodePorts (`share`: a create's ports with one port number share a node port) and
    updateNodePorts: ports without a node port get one unless the type needs none (a
    LoadBalancer with allocateLoadBalancerNodePorts false)."""
    if not _should_allocate_node_ports(spec):
        return
    taken = _node_ports(spec) | kept
    by_number: dict[Any, int] = {}
    if share:
        by_number = {p.get("port"): p["nodePort"] for p in _ports(spec) if p.get("nodePort")}
    for i, port in enumerate(_ports(spec)):
        if port.get("nodePort"):
            continue
        number = port.get("port")
        node_port = by_number.get(number) or _free_node_port(f"{seed}/{i}", taken)
        port["nodePort"] = node_port
        if share:
            by_number[number] = node_port
        taken.add(node_port)


def _free_node_port(seed: str, taken: set[int]) -> int:
    start = _hash(seed) % _NODE_PORT_COUNT
    for step in range(_NODE_PORT_COUNT):
        candidate = _NODE_PORT_BASE + (start + step) % _NODE_PORT_COUNT
        if candidate not in taken:
            return candidate
    return _NODE_PORT_BASE + start  # a Service never has 2,768 ports


def _hash(text: str) -> int:
    return int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "big")


# -- helpers ------------------------------------------------------------------------------------


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _ports(spec: Mapping[str, Any]) -> list[dict[str, Any]]:
    return [p for p in _list(spec.get("ports")) if isinstance(p, dict)]


def _node_ports(spec: Mapping[str, Any]) -> set[int]:
    return {
        p["nodePort"] for p in _ports(spec) if isinstance(p.get("nodePort"), int) and p["nodePort"]
    }


def _same(spec: Mapping[str, Any], old_spec: Mapping[str, Any], field: str) -> bool:
    """Equal, an omitted value and an empty one alike (Go's nil and empty slices)."""
    return (spec.get(field) or None) == (old_spec.get(field) or None)

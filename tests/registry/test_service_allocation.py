"""Upstream's service REST around allocations, as pure functions (table tests): type changes
allocate and clear, omitted allocations are kept, families the cluster lacks are refused."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from minikcp.machinery.errors import Cause
from minikcp.registry.strategies import service_allocation as alloc

SEED = "default/web"
IP = "10.96.0.10"
ALLOCATED = {"clusterIP": IP, "clusterIPs": [IP], "ipFamilies": ["IPv4"]}
SINGLE = {**ALLOCATED, "ipFamilyPolicy": "SingleStack"}


def _ports(*node_ports: int, names: tuple[str, ...] = ()) -> list[dict[str, Any]]:
    ports = []
    for i, node_port in enumerate(node_ports):
        port: dict[str, Any] = {"port": 80 + i, "protocol": "TCP"}
        if names:
            port["name"] = names[i]
        if node_port:
            port["nodePort"] = node_port
        ports.append(port)
    return ports


def _invalid(field: str, message: str) -> Cause:
    return Cause("FieldValueInvalid", message, field)


@pytest.mark.parametrize(
    ("spec", "old_spec", "expected"),
    [
        # Omitted allocations are kept when the type still needs them.
        ({"type": "ClusterIP"}, {"type": "ClusterIP", **SINGLE}, {"type": "ClusterIP", **SINGLE}),
        # A node port left out is kept, matched by the port's name.
        (
            {"type": "NodePort", "ports": _ports(0, 0, names=("a", "b"))},
            {"type": "NodePort", **SINGLE, "ports": _ports(30001, 30002, names=("a", "b"))},
            {"type": "NodePort", **SINGLE, "ports": _ports(30001, 30002, names=("a", "b"))},
        ),
        # To ExternalName: what the client left as it was is cleared.
        (
            {"type": "ExternalName", "externalName": "x.example.com", **SINGLE},
            {"type": "ClusterIP", **SINGLE},
            {"type": "ExternalName", "externalName": "x.example.com"},
        ),
        (
            {"type": "ExternalName", "externalName": "x", **SINGLE, "ports": _ports(30001)},
            {"type": "NodePort", **SINGLE, "ports": _ports(30001)},
            {"type": "ExternalName", "externalName": "x", "ports": _ports(0)},
        ),
        # A value the client changed stays, for validation to refuse.
        (
            {"type": "ExternalName", "externalName": "x", **SINGLE, "clusterIPs": ["10.96.0.11"]},
            {"type": "ClusterIP", **SINGLE},
            {
                "type": "ExternalName",
                "externalName": "x",
                "clusterIP": IP,
                "clusterIPs": ["10.96.0.11"],
            },
        ),
        # NodePort -> ClusterIP: node ports go unless the update adds a new one.
        (
            {"type": "ClusterIP", **SINGLE, "ports": _ports(30001, 0)},
            {"type": "NodePort", **SINGLE, "ports": _ports(30001, 30002)},
            {"type": "ClusterIP", **SINGLE, "ports": _ports(0, 0)},
        ),
        (
            {"type": "ClusterIP", **SINGLE, "ports": _ports(30009)},
            {"type": "NodePort", **SINGLE, "ports": _ports(30001)},
            {"type": "ClusterIP", **SINGLE, "ports": _ports(30009)},
        ),
        # LoadBalancer -> ClusterIP drops its LoadBalancer-only fields left as they were.
        (
            {
                "type": "ClusterIP",
                **SINGLE,
                "allocateLoadBalancerNodePorts": True,
                "externalTrafficPolicy": "Cluster",
                "ports": _ports(30001),
            },
            {
                "type": "LoadBalancer",
                **SINGLE,
                "allocateLoadBalancerNodePorts": True,
                "externalTrafficPolicy": "Cluster",
                "ports": _ports(30001),
            },
            {"type": "ClusterIP", **SINGLE, "ports": _ports(0)},
        ),
    ],
)
def test_update_keeps_and_clears(
    spec: dict[str, Any], old_spec: dict[str, Any], expected: dict[str, Any]
) -> None:
    assert alloc.allocate_update(spec, old_spec, SEED) == []
    assert spec == expected


def test_node_port_taken_by_another_port_is_not_kept() -> None:
    old_spec = {"type": "NodePort", **SINGLE, "ports": _ports(30001, 30002, names=("a", "b"))}
    spec: dict[str, Any] = {"type": "NodePort", "ports": _ports(30001, 0, names=("b", "a"))}
    assert alloc.allocate_update(spec, old_spec, SEED) == []
    fresh = spec["ports"][1]["nodePort"]
    assert spec["ports"][0]["nodePort"] == 30001 and fresh not in (0, 30001, 30002)


def test_external_name_to_cluster_ip_allocates() -> None:
    spec: dict[str, Any] = {"type": "ClusterIP", "externalName": "x", "ports": _ports(0)}
    assert alloc.allocate_update(spec, {"type": "ExternalName", "externalName": "x"}, SEED) == []
    created: dict[str, Any] = {"type": "ClusterIP", "ports": _ports(0)}
    assert alloc.allocate_create(created, SEED) == []
    # The same address a create of that Service would have had.
    assert spec["clusterIP"] == created["clusterIP"] and spec["clusterIPs"] == [spec["clusterIP"]]
    assert spec["ipFamilies"] == ["IPv4"] and spec["ipFamilyPolicy"] == "SingleStack"


def test_external_name_to_cluster_ip_keeps_a_requested_ip() -> None:
    spec: dict[str, Any] = {"type": "ClusterIP", "clusterIP": "10.96.0.77", "ports": _ports(0)}
    assert alloc.allocate_update(spec, {"type": "ExternalName"}, SEED) == []
    assert spec["clusterIPs"] == ["10.96.0.77"] and spec["clusterIP"] == "10.96.0.77"


@pytest.mark.parametrize("new_type", ["NodePort", "LoadBalancer"])
def test_cluster_ip_to_node_port_allocates_distinct_ports(new_type: str) -> None:
    spec: dict[str, Any] = {"type": new_type, **SINGLE, "ports": _ports(0, 0, 0)}
    assert alloc.allocate_update(spec, {"type": "ClusterIP", **SINGLE}, SEED) == []
    node_ports = [p["nodePort"] for p in spec["ports"]]
    assert len(set(node_ports)) == 3
    assert all(30000 <= n <= 32767 for n in node_ports)


def test_ports_sharing_a_number_share_a_node_port() -> None:
    ports = [{"port": 53, "protocol": "TCP"}, {"port": 53, "protocol": "UDP"}]
    spec: dict[str, Any] = {"type": "NodePort", "ports": ports}
    assert alloc.allocate_create(spec, SEED) == []
    assert spec["ports"][0]["nodePort"] == spec["ports"][1]["nodePort"]


def test_a_port_added_by_an_update_gets_its_own_node_port() -> None:
    old_spec = {"type": "NodePort", **SINGLE, "ports": [{"port": 53, "nodePort": 30053}]}
    ports = [{"port": 53, "protocol": "TCP"}, {"port": 53, "protocol": "UDP", "name": "u"}]
    spec: dict[str, Any] = {"type": "NodePort", **SINGLE, "ports": ports}
    assert alloc.allocate_update(spec, old_spec, SEED) == []
    assert spec["ports"][0]["nodePort"] == 30053
    assert spec["ports"][1]["nodePort"] not in (0, 30053)


def test_load_balancer_without_node_ports_gets_none() -> None:
    spec: dict[str, Any] = {
        "type": "LoadBalancer",
        "allocateLoadBalancerNodePorts": False,
        "ports": _ports(0, 30005),
    }
    assert alloc.allocate_create(spec, SEED) == []
    assert spec["ports"] == _ports(0, 30005)


def test_health_check_node_port_allocated_then_kept() -> None:
    local = {"type": "LoadBalancer", "externalTrafficPolicy": "Local"}
    spec: dict[str, Any] = {**local, "ports": _ports(0)}
    assert alloc.allocate_create(spec, SEED) == []
    health = spec["healthCheckNodePort"]
    assert health != spec["ports"][0]["nodePort"]
    updated: dict[str, Any] = {**local, "ports": _ports(0)}
    assert alloc.allocate_update(updated, spec, SEED) == []
    assert updated == spec
    changed = {**copy.deepcopy(spec), "healthCheckNodePort": health + 1}
    assert alloc.allocate_update(changed, spec, SEED) == [
        _invalid(
            "spec.healthCheckNodePort",
            f"Invalid value: {health + 1}: cannot change healthCheckNodePort on loadBalancer "
            "service with externalTraffic=Local during update",
        )
    ]
    # Cluster traffic policy no longer needs it; left as it was, it goes with the type.
    to_cluster_ip = {**copy.deepcopy(spec), "type": "ClusterIP"}
    to_cluster_ip.pop("externalTrafficPolicy")
    assert alloc.allocate_update(to_cluster_ip, spec, SEED) == []
    assert "healthCheckNodePort" not in to_cluster_ip
    assert all("nodePort" not in p for p in to_cluster_ip["ports"])


NOT_DUAL = "this cluster is not configured for dual-stack services"


@pytest.mark.parametrize(
    ("spec", "old_spec", "refusals"),
    [
        (
            {"ipFamilies": ["IPv6"]},
            None,
            [
                _invalid(
                    "spec.ipFamilies[0]", 'Invalid value: "IPv6": not configured on this cluster'
                )
            ],
        ),
        (
            {"ipFamilies": ["IPv4", "IPv6"], "ipFamilyPolicy": "PreferDualStack"},
            None,
            [
                _invalid(
                    "spec.ipFamilies[1]", 'Invalid value: "IPv6": not configured on this cluster'
                )
            ],
        ),
        (
            {"ipFamilyPolicy": "RequireDualStack", "selector": {"app": "web"}},
            None,
            [_invalid("spec.ipFamilyPolicy", f'Invalid value: "RequireDualStack": {NOT_DUAL}')],
        ),
        # A headless Service with a selector is no exception.
        (
            {
                "clusterIP": "None",
                "clusterIPs": ["None"],
                "ipFamilyPolicy": "RequireDualStack",
                "selector": {"a": "b"},
            },
            None,
            [_invalid("spec.ipFamilyPolicy", f'Invalid value: "RequireDualStack": {NOT_DUAL}')],
        ),
        (
            {"clusterIP": "fd00::10", "clusterIPs": ["fd00::10"]},
            None,
            [
                _invalid(
                    "spec.clusterIPs[0]",
                    'Invalid value: []string{"fd00::10"}: IPv6 is not configured on this cluster',
                )
            ],
        ),
        (
            {"clusterIP": IP, "clusterIPs": [IP, "fd00::10"], "ipFamilyPolicy": "SingleStack"},
            None,
            [
                _invalid(
                    "spec.ipFamilyPolicy",
                    "Invalid value: \"SingleStack\": must be 'RequireDualStack' or "
                    "'PreferDualStack' when multiple cluster IPs are specified",
                ),
                _invalid(
                    "spec.clusterIPs[1]",
                    f'Invalid value: []string{{"{IP}", "fd00::10"}}: IPv6 is not configured on '
                    "this cluster",
                ),
            ],
        ),
        # An update keeping the old policy meets the same refusals.
        (
            {"ipFamilies": ["IPv4", "IPv6"]},
            {**ALLOCATED, "ipFamilyPolicy": "PreferDualStack"},
            [
                _invalid(
                    "spec.ipFamilies[1]", 'Invalid value: "IPv6": not configured on this cluster'
                )
            ],
        ),
        # The loose pre-validation comes first, as upstream's.
        (
            {"clusterIPs": [IP], "ipFamilies": ["IPv6"]},
            None,
            [
                _invalid(
                    "spec.clusterIPs",
                    f'Invalid value: []string{{"{IP}"}}: must be empty when `clusterIP` is not '
                    "specified",
                ),
                _invalid(
                    "spec.clusterIPs[0]",
                    f'Invalid value: "{IP}": expected an IPv6 value as indicated by '
                    "`ipFamilies[0]`",
                ),
            ],
        ),
        (
            {"clusterIP": "x", "clusterIPs": ["x"], "ipFamilyPolicy": "RequireDualStack"},
            None,
            [
                _invalid(
                    "spec.clusterIPs[0]",
                    'Invalid value: "x": must be a valid IP address, (e.g. 10.9.8.7 or '
                    "2001:db8::ffff)",
                )
            ],
        ),
        (
            {"clusterIP": IP, "clusterIPs": [IP, "10.96.0.11"], "ipFamilyPolicy": "SingleStack"},
            None,
            [
                _invalid(
                    "spec.clusterIPs",
                    f'Invalid value: []string{{"{IP}", "10.96.0.11"}}: may specify no more than '
                    "one IP for each IP family",
                )
            ],
        ),
        (
            {"ipFamilies": ["IPv5", "IPv4", "IPv4"]},
            None,
            [
                Cause(
                    "FieldValueNotSupported",
                    'Unsupported value: "IPv5": supported values: "IPv4", "IPv6"',
                    "spec.ipFamilies[0]",
                ),
                Cause("FieldValueDuplicate", 'Duplicate value: "IPv4"', "spec.ipFamilies[2]"),
            ],
        ),
    ],
)
def test_ip_family_refusals(
    spec: dict[str, Any], old_spec: dict[str, Any] | None, refusals: list[Cause]
) -> None:
    assert alloc.init_ip_families(spec, old_spec) == refusals


def test_single_stack_update_drops_the_second_family() -> None:
    both = {"clusterIP": "None", "clusterIPs": ["None"], "ipFamilies": ["IPv4", "IPv6"]}
    old_spec = {**both, "ipFamilyPolicy": "RequireDualStack"}
    spec: dict[str, Any] = {**both, "ipFamilyPolicy": "SingleStack"}
    assert alloc.init_ip_families(spec, old_spec) == []
    assert spec["ipFamilies"] == ["IPv4"]
    # Any other policy may not drop it.
    spec = {**both, "ipFamilies": ["IPv4"], "ipFamilyPolicy": "PreferDualStack"}
    assert alloc.init_ip_families(spec, old_spec) == [
        _invalid(
            "spec.ipFamilyPolicy",
            "Invalid value: \"PreferDualStack\": must be 'SingleStack' to release the "
            "secondary IP family",
        )
    ]


def test_external_name_create_gets_no_allocations() -> None:
    spec: dict[str, Any] = {"type": "ExternalName", "externalName": "x", "ports": _ports(0)}
    assert alloc.allocate_create(spec, SEED) == []
    assert spec == {"type": "ExternalName", "externalName": "x", "ports": _ports(0)}


def test_refused_create_allocates_nothing() -> None:
    spec: dict[str, Any] = {"type": "NodePort", "ipFamilies": ["IPv6"], "ports": _ports(0)}
    assert alloc.allocate_create(spec, SEED)
    assert "clusterIP" not in spec and spec["ports"] == _ports(0)

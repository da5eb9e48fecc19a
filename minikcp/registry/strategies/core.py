"""Strategies of core/v1 kinds that differ from the generic behaviour."""

from __future__ import annotations

import hashlib
import ipaddress
from collections.abc import Mapping
from typing import Any

import orjson

from minikcp.apis import event_versions
from minikcp.machinery import names, propagation
from minikcp.registry import strategy

NAME_LABEL = "kubernetes.io/metadata.name"
# The namespace controller's spec finalizer.
FINALIZER = "kubernetes"


class NamespaceStrategy(strategy.Strategy):
    name_validator = staticmethod(names.dns1123_label_errors)
    returns_deleted_object = True
    extra_selectable_fields = frozenset({"status.phase"})

    def prepare_for_create(self, obj: dict[str, Any]) -> None:
        super().prepare_for_create(obj)
        obj["status"] = {"phase": "Active"}
        self._name_label(obj)
        # As upstream: a new namespace always carries the namespace controller's finalizer.
        spec = obj.get("spec")
        if spec is None:
            spec = obj["spec"] = {}
        if isinstance(spec, dict):
            finalizers = spec.get("finalizers")
            if not isinstance(finalizers, list):
                finalizers = []
            if FINALIZER not in finalizers:
                spec["finalizers"] = [*finalizers, FINALIZER]

    def prepare_for_update(self, obj: dict[str, Any], old: Mapping[str, Any]) -> None:
        super().prepare_for_update(obj, old)
        self._name_label(obj)
        # spec.finalizers change only through the finalize subresource.
        old_finalizers = (old.get("spec") or {}).get("finalizers")
        spec = obj.get("spec")
        if not isinstance(spec, dict):
            spec = obj["spec"] = {}
        if old_finalizers:
            spec["finalizers"] = old_finalizers
        else:
            spec.pop("finalizers", None)

    @staticmethod
    def finalized(obj: Mapping[str, Any]) -> bool:
        return strategy.Strategy.finalized(obj) and not (obj.get("spec") or {}).get("finalizers")

    @staticmethod
    def _name_label(obj: dict[str, Any]) -> None:
        meta = obj["metadata"]
        name = meta.get("name")
        labels = meta.get("labels") or {}
        # Without a name there is no label to set: validation rejects the object next.
        if isinstance(name, str) and name and isinstance(labels, dict):
            labels[NAME_LABEL] = name
            meta["labels"] = labels


class PodStrategy(strategy.Strategy):
    returns_deleted_object = True
    deletes_gracefully = True
    extra_selectable_fields = frozenset(
        {
            "spec.nodeName",
            "spec.restartPolicy",
            "spec.schedulerName",
            "spec.serviceAccountName",
            "spec.hostNetwork",
            "status.phase",
            "status.podIP",
            "status.nominatedNodeName",
        }
    )

    def initial_status(self, obj: dict[str, Any]) -> None:
        # Pods are stored, not run: they stay Pending until something reports otherwise.
        obj["status"] = {"phase": "Pending", "qosClass": _qos_class(obj)}

    def graceful_period(self, obj: Mapping[str, Any], requested: int | None) -> int:
        """podStrategy.CheckGracefulDelete: the requested period, else the pod's
        terminationGracePeriodSeconds; at once for a pod on no node or one that has finished."""
        spec = obj.get("spec") or {}
        period = requested
        if period is None:
            period = spec.get("terminationGracePeriodSeconds") or 0
        if not spec.get("nodeName"):
            period = 0
        if (obj.get("status") or {}).get("phase") in ("Failed", "Succeeded"):
            period = 0
        return 1 if period < 0 else period


def _qos_class(pod: Mapping[str, Any]) -> str:
    containers = pod.get("spec", {}).get("containers") or []
    requests_seen = limits_seen = False
    guaranteed = bool(containers)
    for c in containers:
        res = c.get("resources") or {}
        req, lim = res.get("requests") or {}, res.get("limits") or {}
        requests_seen |= bool(req)
        limits_seen |= bool(lim)
        if (
            not lim
            or any(req.get(k, v) != v for k, v in lim.items())
            or set(lim)
            < {
                "cpu",
                "memory",
            }
        ):
            guaranteed = False
    if not requests_seen and not limits_seen:
        return "BestEffort"
    return "Guaranteed" if guaranteed else "Burstable"


_SERVICE_NET = ipaddress.ip_network("10.96.0.0/12")


class ServiceStrategy(strategy.Strategy):
    returns_deleted_object = True
    """Allocates cluster IPs and node ports deterministically: no allocator state to keep."""

    extra_selectable_fields = frozenset({"spec.clusterIP", "spec.type"})

    def prepare_for_create(self, obj: dict[str, Any]) -> None:
        super().prepare_for_create(obj)
        obj.setdefault("status", {"loadBalancer": {}})
        spec = obj.setdefault("spec", {})
        kind = spec.get("type", "ClusterIP")
        seed = "/".join((obj["metadata"].get("namespace", ""), obj["metadata"].get("name", "")))
        # normalizeClusterIPs, then initIPFamilyFields, then the allocator (beginCreate).
        if spec.get("clusterIP") and not spec.get("clusterIPs"):
            spec["clusterIPs"] = [spec["clusterIP"]]
        init_ip_families(spec, None)
        if kind != "ExternalName" and not spec.get("clusterIP"):
            spec["clusterIP"] = str(
                _SERVICE_NET[1 + _hash(seed) % (_SERVICE_NET.num_addresses - 2)]
            )
        if spec.get("clusterIP") and not spec.get("clusterIPs"):
            spec["clusterIPs"] = [spec["clusterIP"]]
        if kind in ("NodePort", "LoadBalancer"):
            for i, port in enumerate(spec.get("ports") or []):
                port.setdefault("nodePort", 30000 + _hash(f"{seed}/{i}") % 2768)

    def prepare_for_update(self, obj: dict[str, Any], old: Mapping[str, Any]) -> None:
        super().prepare_for_update(obj, old)
        spec, old_spec = obj.setdefault("spec", {}), old.get("spec", {})
        # patchAllocatedValues: what was allocated stays unless the client says otherwise.
        if _needs_cluster_ip(spec) and _needs_cluster_ip(old_spec):
            for field in ("clusterIP", "clusterIPs"):
                if not spec.get(field) and old_spec.get(field):
                    spec[field] = old_spec[field]
        _normalize_cluster_ips(spec, old_spec)
        init_ip_families(spec, old_spec)


# The single-stack cluster's family: --service-cluster-ip-range is IPv4 only.
_CLUSTER_FAMILY = "IPv4"
_OTHER_FAMILY = {"IPv4": "IPv6", "IPv6": "IPv4"}


def init_ip_families(spec: dict[str, Any], old_spec: Mapping[str, Any] | None) -> None:
    """initIPFamilyFields of upstream's service REST (after its field manager ran, so these
    fields are nobody's unless the client sent them): an omitted `ipFamilyPolicy` is the old
    one, RequireDualStack for a headless Service without selector, else SingleStack; omitted
    `ipFamilies` follow `clusterIPs`, else the cluster's family."""
    if spec.get("type") == "ExternalName":
        return
    headless_without_selector = spec.get("clusterIP") == "None" and not spec.get("selector")
    if not spec.get("ipFamilyPolicy"):
        old_policy = old_spec.get("ipFamilyPolicy") if old_spec is not None else None
        if old_policy:
            spec["ipFamilyPolicy"] = old_policy
        elif headless_without_selector:
            spec["ipFamilyPolicy"] = "RequireDualStack"
        else:
            spec["ipFamilyPolicy"] = "SingleStack"
    families = spec.get("ipFamilies")
    families = list(families) if isinstance(families, list) else []
    ips = spec.get("clusterIPs")
    for i, ip in enumerate(ips if isinstance(ips, list) else ()):
        if ip == "None":
            break
        family = _family_of(ip)
        if i >= len(families) and family is not None:
            families.append(family)
    if not families:
        families = [_CLUSTER_FAMILY]
    if (
        headless_without_selector
        and spec["ipFamilyPolicy"] != "SingleStack"
        and len(families) == 1
        and families[0] in _OTHER_FAMILY
    ):
        # A headless Service without selector may name both families on a single-stack cluster.
        families.append(_OTHER_FAMILY[families[0]])
    spec["ipFamilies"] = families


def _family_of(ip: Any) -> str | None:
    if not isinstance(ip, str):
        return None
    try:
        address = ipaddress.ip_address(ip)
    except ValueError:
        return None  # validation reports it
    return "IPv4" if address.version == 4 else "IPv6"


def _needs_cluster_ip(spec: Mapping[str, Any]) -> bool:
    return bool(spec.get("type", "ClusterIP") != "ExternalName")


def _normalize_cluster_ips(spec: dict[str, Any], old_spec: Mapping[str, Any]) -> None:
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


def _hash(text: str) -> int:
    return int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "big")


class ServiceAccountStrategy(strategy.Strategy):
    returns_deleted_object = True


class SecretStrategy(strategy.Strategy):
    extra_selectable_fields = frozenset({"type"})

    def prepare_for_create(self, obj: dict[str, Any]) -> None:
        super().prepare_for_create(obj)
        _fold_string_data(obj)

    def prepare_for_update(self, obj: dict[str, Any], old: Mapping[str, Any]) -> None:
        super().prepare_for_update(obj, old)
        _fold_string_data(obj)


def _fold_string_data(obj: dict[str, Any]) -> None:
    """stringData is write-only: it is merged into data, base64-encoded, as upstream does."""
    import base64

    string_data = obj.pop("stringData", None)
    if isinstance(string_data, dict) and string_data:
        data = obj.get("data") or {}
        for k, v in string_data.items():
            data[k] = base64.b64encode(str(v).encode()).decode()
        obj["data"] = data


class EventStrategy(strategy.Strategy):
    """core/v1 Events; events.k8s.io/v1 serves the same stored objects (EventsV1Strategy)."""

    garbage_collection_policy = propagation.UNSUPPORTED
    extra_selectable_fields = frozenset(
        {
            "involvedObject.kind",
            "involvedObject.namespace",
            "involvedObject.name",
            "involvedObject.uid",
            "involvedObject.apiVersion",
            "involvedObject.resourceVersion",
            "involvedObject.fieldPath",
            "reason",
            "reportingComponent",
            "source",
            "type",
        }
    )

    def apply_defaults(self, obj: dict[str, Any]) -> None:
        super().apply_defaults(obj)
        event_versions.normalise_times(obj)

    def selectable_fields(self, obj: Mapping[str, Any]) -> dict[str, str]:
        fields = super().selectable_fields(obj)
        # ToSelectableFields: "source" is source.component, else the reporting controller.
        fields["source"] = (obj.get("source") or {}).get("component") or fields[
            "reportingComponent"
        ]
        return fields


class EventsV1Strategy(strategy.Strategy):
    """events.k8s.io/v1 Events: core/v1 Events as stored, converted on every read and write."""

    garbage_collection_policy = propagation.UNSUPPORTED
    transforms_reads = True
    # The labels AddFieldLabelConversionsForEvent accepts, as the events.k8s.io/v1 fields
    # they name (upstream maps each to the core field set).
    extra_selectable_fields = frozenset(
        {
            "regarding.kind",
            "regarding.namespace",
            "regarding.name",
            "regarding.uid",
            "regarding.apiVersion",
            "regarding.resourceVersion",
            "regarding.fieldPath",
            "reason",
            "reportingController",
            "source",
            "type",
        }
    )

    def apply_defaults(self, obj: dict[str, Any]) -> None:
        super().apply_defaults(obj)
        event_versions.normalise_times(obj)

    def on_read(self, value: bytes) -> bytes:
        return orjson.dumps(event_versions.to_events(orjson.loads(value)))

    def to_storage(self, obj: dict[str, Any]) -> dict[str, Any]:
        return event_versions.to_core(obj)

    def selectable_fields(self, obj: Mapping[str, Any]) -> dict[str, str]:
        fields = super().selectable_fields(obj)
        fields["source"] = (obj.get("deprecatedSource") or {}).get("component") or fields[
            "reportingController"
        ]
        return fields

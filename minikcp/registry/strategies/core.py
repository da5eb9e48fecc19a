"""Strategies of core/v1 kinds that differ from the generic behaviour."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import orjson

from minikcp.apis import event_versions
from minikcp.machinery import errors, names, propagation
from minikcp.registry import strategy
from minikcp.registry.strategies import service_allocation

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


class ServiceStrategy(strategy.Strategy):
    """Allocations and type changes as upstream's service REST (`service_allocation`)."""

    returns_deleted_object = True
    extra_selectable_fields = frozenset({"spec.clusterIP", "spec.type"})

    def prepare_for_create(self, obj: dict[str, Any]) -> None:
        super().prepare_for_create(obj)
        obj.setdefault("status", {"loadBalancer": {}})
        spec = obj.setdefault("spec", {})
        self._refuse(obj, service_allocation.allocate_create(spec, _seed(obj)))

    def begin_update(self, obj: dict[str, Any], old: Mapping[str, Any]) -> None:
        spec = obj.setdefault("spec", {})
        refusals = service_allocation.allocate_update(spec, old.get("spec") or {}, _seed(obj))
        self._refuse(obj, refusals)

    def _refuse(self, obj: Mapping[str, Any], refusals: list[errors.Cause]) -> None:
        if refusals:
            name = obj["metadata"].get("name", "")
            raise errors.invalid(self.rt.kind, name, refusals, group=self.rt.group)


def _seed(obj: Mapping[str, Any]) -> str:
    meta = obj["metadata"]
    return "/".join((meta.get("namespace", ""), meta.get("name", "")))


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

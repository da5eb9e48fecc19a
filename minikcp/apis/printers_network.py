"""Table printers for claims, network and scheduling kinds: PersistentVolumeClaim, NetworkPolicy,
IngressClass, EndpointSlice and PriorityClass.

Ported from kube-apiserver 1.32 (pkg/printers/internalversion/printers.go).
"""

from __future__ import annotations

from typing import Any, Final

from minikcp.apis import printer_base as base
from minikcp.apis.printers_workloads import field_doc
from minikcp.machinery import tables

Column = tables.Column

# --- PersistentVolumeClaim ---------------------------------------------------------------------

_ACCESS_MODES: Final = (
    ("ReadWriteOnce", "RWO"),
    ("ReadOnlyMany", "ROX"),
    ("ReadWriteMany", "RWX"),
    ("ReadWriteOncePod", "RWOP"),
)


def access_modes(modes: Any) -> str:
    """`GetAccessModesAsString`: the short names of the modes present, in upstream's order."""
    present = set(base.sequence(modes))
    return ",".join(short for mode, short in _ACCESS_MODES if mode in present)


def claim_class(obj: base.Obj) -> str:
    """`GetPersistentVolumeClaimClass`: the beta annotation wins over spec.storageClassName."""
    annotations = base.mapping(base.metadata(obj).get("annotations"))
    beta = annotations.get("volume.beta.kubernetes.io/storage-class")
    if isinstance(beta, str):
        return beta
    return base.string(base.mapping(obj.get("spec")).get("storageClassName"))


def _claim_cells(obj: base.Obj, now: float) -> list[Any]:
    spec, status = base.mapping(obj.get("spec")), base.mapping(obj.get("status"))
    phase = base.string(status.get("phase"))
    if base.metadata(obj).get("deletionTimestamp") is not None:
        phase = "Terminating"
    volume = base.string(spec.get("volumeName"))
    capacity = modes = ""
    if volume:
        modes = access_modes(status.get("accessModes"))
        size = base.mapping(status.get("capacity")).get("storage")
        capacity = str(size) if size is not None else "0"
    attributes = spec.get("volumeAttributesClassName")
    volume_mode = spec.get("volumeMode")
    return [
        base.name(obj),
        phase,
        volume,
        capacity,
        modes,
        claim_class(obj),
        attributes if isinstance(attributes, str) else "<unset>",
        base.age(obj, now),
        volume_mode if isinstance(volume_mode, str) else "<unset>",
    ]


_PVC_SPEC = "io.k8s.api.core.v1.PersistentVolumeClaimSpec"
_PVC_STATUS = "io.k8s.api.core.v1.PersistentVolumeClaimStatus"

PERSISTENT_VOLUME_CLAIM: Final = base.Printer(
    (
        base.NAME_COLUMN,
        Column("Status", "string", field_doc(_PVC_STATUS, "phase")),
        Column("Volume", "string", field_doc(_PVC_SPEC, "volumeName")),
        Column("Capacity", "string", field_doc(_PVC_STATUS, "capacity")),
        Column("Access Modes", "string", field_doc(_PVC_STATUS, "accessModes")),
        Column("StorageClass", "string", "StorageClass of the pvc"),
        Column("VolumeAttributesClass", "string", "VolumeAttributesClass of the pvc"),
        base.AGE_COLUMN,
        Column("VolumeMode", "string", field_doc(_PVC_SPEC, "volumeMode"), priority=1),
    ),
    _claim_cells,
)

# --- NetworkPolicy -----------------------------------------------------------------------------


def _network_policy_cells(obj: base.Obj, now: float) -> list[Any]:
    spec = base.mapping(obj.get("spec"))
    return [
        base.name(obj),
        base.format_label_selector(spec.get("podSelector") or {}),
        base.age(obj, now),
    ]


NETWORK_POLICY: Final = base.Printer(
    (
        base.NAME_COLUMN,
        Column(
            "Pod-Selector",
            "string",
            field_doc("io.k8s.api.networking.v1.NetworkPolicySpec", "podSelector"),
        ),
        base.AGE_COLUMN,
    ),
    _network_policy_cells,
)

# --- IngressClass ------------------------------------------------------------------------------


def _ingress_class_cells(obj: base.Obj, now: float) -> list[Any]:
    spec = base.mapping(obj.get("spec"))
    params = spec.get("parameters")
    shown = base.NONE
    if isinstance(params, dict):
        shown = base.string(params.get("kind"))
        group = params.get("apiGroup")
        if isinstance(group, str):
            shown += "." + group
        shown += "/" + base.string(params.get("name"))
    return [base.name(obj), base.string(spec.get("controller")), shown, base.age(obj, now)]


INGRESS_CLASS: Final = base.Printer(
    (
        base.NAME_COLUMN,
        Column("Controller", "string", "Controller that is responsible for handling this class"),
        Column("Parameters", "string", "A reference to a resource with additional parameters"),
        base.AGE_COLUMN,
    ),
    _ingress_class_cells,
)

# --- EndpointSlice -----------------------------------------------------------------------------

_SHOWN = 3


def _with_more(shown: list[str], count: int) -> str:
    """`listWithMoreString`: the first three, then "+ N more..."."""
    text = ",".join(shown)
    return f"{text} + {count - _SHOWN} more..." if count > _SHOWN else text


def _slice_ports(ports: Any) -> str:
    ports = base.sequence(ports)
    if not ports:
        return "<unset>"
    shown: list[str] = []
    for port in ports[:_SHOWN]:
        port = base.mapping(port)
        number, name = port.get("port"), port.get("name")
        shown.append(str(number) if number is not None else name if name is not None else "*")
    return _with_more(shown, len(ports))


def _slice_endpoints(endpoints: Any) -> str:
    addresses = [
        str(address)
        for endpoint in base.sequence(endpoints)
        for address in base.sequence(base.mapping(endpoint).get("addresses"))
    ]
    if not base.sequence(endpoints):
        return "<unset>"
    return _with_more(addresses[:_SHOWN], len(addresses))


_SLICE = "io.k8s.api.discovery.v1.EndpointSlice"


def _endpoint_slice_cells(obj: base.Obj, now: float) -> list[Any]:
    return [
        base.name(obj),
        base.string(obj.get("addressType")),
        _slice_ports(obj.get("ports")),
        _slice_endpoints(obj.get("endpoints")),
        base.age(obj, now),
    ]


ENDPOINT_SLICE: Final = base.Printer(
    (
        base.NAME_COLUMN,
        Column("AddressType", "string", field_doc(_SLICE, "addressType")),
        Column("Ports", "string", field_doc(_SLICE, "ports")),
        Column("Endpoints", "string", field_doc(_SLICE, "endpoints")),
        base.AGE_COLUMN,
    ),
    _endpoint_slice_cells,
)

# --- PriorityClass -----------------------------------------------------------------------------

_PRIORITY_CLASS = "io.k8s.api.scheduling.v1.PriorityClass"


def _priority_class_cells(obj: base.Obj, now: float) -> list[Any]:
    return [
        base.name(obj),
        base.integer(obj.get("value")),
        obj.get("globalDefault") is True,
        base.age(obj, now),
        base.string(obj.get("preemptionPolicy")),
    ]


PRIORITY_CLASS: Final = base.Printer(
    (
        base.NAME_COLUMN,
        Column("Value", "integer", field_doc(_PRIORITY_CLASS, "value")),
        Column("Global-Default", "boolean", field_doc(_PRIORITY_CLASS, "globalDefault")),
        base.AGE_COLUMN,
        Column("PreemptionPolicy", "string", field_doc(_PRIORITY_CLASS, "preemptionPolicy")),
    ),
    _priority_class_cells,
)

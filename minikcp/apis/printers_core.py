"""Table printers for the core (v1) kinds and events, ported from kube-apiserver 1.32.

Source: kubernetes/kubernetes pkg/printers/internalversion/printers.go (AddHandlers and the
printX functions). Cells are computed as the server computes them, always in wide form. Fields that
v1 defaulting always fills (service type, port protocol, secret type, namespace phase) read as
their defaults when absent, so an undefaulted object prints like the defaulted one upstream stores.
"""

from __future__ import annotations

from typing import Any, Final

from minikcp.apis import printer_base as base
from minikcp.apis.printer_docs import FIELD_DOCS
from minikcp.machinery import tables

Column = tables.Column


def _doc(key: str) -> str:
    return FIELD_DOCS["core_v1." + key]


# --- Namespace, ConfigMap, Secret, ServiceAccount -------------------------------------------------


def _namespace_cells(obj: base.Obj, now: float) -> list[Any]:
    phase = base.string(base.mapping(obj.get("status")).get("phase")) or "Active"
    return [base.name(obj), phase, base.age(obj, now)]


NAMESPACE: Final = base.Printer(
    (
        base.NAME_COLUMN,
        Column("Status", "string", "The status of the namespace"),
        base.AGE_COLUMN,
    ),
    _namespace_cells,
)


def _config_map_cells(obj: base.Obj, now: float) -> list[Any]:
    count = len(base.mapping(obj.get("data"))) + len(base.mapping(obj.get("binaryData")))
    return [base.name(obj), count, base.age(obj, now)]


CONFIG_MAP: Final = base.Printer(
    (base.NAME_COLUMN, Column("Data", "string", _doc("ConfigMap.data")), base.AGE_COLUMN),
    _config_map_cells,
)


def _secret_cells(obj: base.Obj, now: float) -> list[Any]:
    # Upstream conversion merges stringData into data; count the union in case it was stored apart.
    keys = set(base.mapping(obj.get("data"))) | set(base.mapping(obj.get("stringData")))
    kind = base.string(obj.get("type")) or "Opaque"
    return [base.name(obj), kind, len(keys), base.age(obj, now)]


SECRET: Final = base.Printer(
    (
        base.NAME_COLUMN,
        Column("Type", "string", _doc("Secret.type")),
        Column("Data", "string", _doc("Secret.data")),
        base.AGE_COLUMN,
    ),
    _secret_cells,
)


def _service_account_cells(obj: base.Obj, now: float) -> list[Any]:
    return [base.name(obj), len(base.sequence(obj.get("secrets"))), base.age(obj, now)]


SERVICE_ACCOUNT: Final = base.Printer(
    (
        base.NAME_COLUMN,
        Column("Secrets", "string", _doc("ServiceAccount.secrets")),
        base.AGE_COLUMN,
    ),
    _service_account_cells,
)

# --- Service ------------------------------------------------------------------------------------


def _load_balancer_addresses(status: Any) -> str:
    # loadBalancerStatusStringer with wide=true (the server never elides): a sorted set.
    found = set()
    for ingress in base.sequence(base.mapping(status).get("ingress")):
        ingress = base.mapping(ingress)
        address = base.string(ingress.get("ip")) or base.string(ingress.get("hostname"))
        if address:
            found.add(address)
    return ",".join(sorted(found))


def _external_ip(spec: base.Obj, status: base.Obj, kind: str) -> str:
    external = [base.string(ip) for ip in base.sequence(spec.get("externalIPs"))]
    if kind in ("ClusterIP", "NodePort"):
        return ",".join(external) if external else base.NONE
    if kind == "LoadBalancer":
        balancer = _load_balancer_addresses(status.get("loadBalancer"))
        if external:
            return ",".join(([*balancer.split(",")] if balancer else []) + external)
        return balancer or "<pending>"
    if kind == "ExternalName":
        return base.string(spec.get("externalName"))
    return base.UNKNOWN


def _port_string(ports: Any) -> str:
    pieces = []
    for port in base.sequence(ports):
        port = base.mapping(port)
        number = base.integer(port.get("port"))
        protocol = base.string(port.get("protocol")) or "TCP"
        node_port = base.integer(port.get("nodePort"))
        pieces.append(
            f"{number}:{node_port}/{protocol}" if node_port > 0 else f"{number}/{protocol}"
        )
    return ",".join(pieces)


def _service_cells(obj: base.Obj, now: float) -> list[Any]:
    spec, status = base.mapping(obj.get("spec")), base.mapping(obj.get("status"))
    kind = base.string(spec.get("type")) or "ClusterIP"
    # v1 clusterIP/clusterIPs convert to the internal ClusterIPs list, clusterIPs winning.
    cluster_ips = base.sequence(spec.get("clusterIPs")) or [spec.get("clusterIP")]
    internal = base.string(cluster_ips[0]) or base.NONE
    return [
        base.name(obj),
        kind,
        internal,
        _external_ip(spec, status, kind),
        _port_string(spec.get("ports")) or base.NONE,
        base.age(obj, now),
        base.format_labels(spec.get("selector")),
    ]


SERVICE: Final = base.Printer(
    (
        base.NAME_COLUMN,
        Column("Type", "string", _doc("ServiceSpec.type")),
        Column("Cluster-IP", "string", _doc("ServiceSpec.clusterIP")),
        Column("External-IP", "string", _doc("ServiceSpec.externalIPs")),
        Column("Port(s)", "string", _doc("ServiceSpec.ports")),
        base.AGE_COLUMN,
        Column("Selector", "string", _doc("ServiceSpec.selector"), priority=1),
    ),
    _service_cells,
)

# --- Endpoints ----------------------------------------------------------------------------------

_MAX_ENDPOINTS: Final = 3


def _host_port(ip: str, port: int) -> str:
    return f"[{ip}]:{port}" if ":" in ip else f"{ip}:{port}"  # net.JoinHostPort


def _format_endpoints(subsets: Any) -> str:
    """formatEndpoints(endpoints, nil): the first three addresses, then "+ N more..."."""
    subsets = base.sequence(subsets)
    if not subsets:
        return base.NONE
    shown: list[str] = []
    more, count = False, 0
    for subset in subsets:
        subset = base.mapping(subset)
        addresses = [base.string(base.mapping(a).get("ip")) for a in subset.get("addresses") or ()]
        ports = base.sequence(subset.get("ports"))
        # Headless services may have no ports: then the bare addresses are shown.
        for port in ports or (None,):
            number = None if port is None else base.integer(base.mapping(port).get("port"))
            count += len(addresses)
            for ip in addresses:
                if len(shown) == _MAX_ENDPOINTS:
                    more = True
                    break
                shown.append(ip if number is None else _host_port(ip, number))
    text = ",".join(shown)
    return f"{text} + {count - _MAX_ENDPOINTS} more..." if more else text


def _endpoints_cells(obj: base.Obj, now: float) -> list[Any]:
    return [base.name(obj), _format_endpoints(obj.get("subsets")), base.age(obj, now)]


ENDPOINTS: Final = base.Printer(
    (base.NAME_COLUMN, Column("Endpoints", "string", _doc("Endpoints.subsets")), base.AGE_COLUMN),
    _endpoints_cells,
)

# --- Event (core/v1 and events.k8s.io/v1 share one printer upstream) ----------------------------


class _EventFields:
    """Where an Event version keeps each field the printer reads."""

    def __init__(self, **names: str) -> None:
        self.first = names["first"]
        self.last = names["last"]
        self.count = names["count"]
        self.source = names["source"]
        self.regarding = names["regarding"]
        self.message = names["message"]
        self.controller = names["controller"]


_CORE_EVENT: Final = _EventFields(
    first="firstTimestamp",
    last="lastTimestamp",
    count="count",
    source="source",
    regarding="involvedObject",
    message="message",
    controller="reportingComponent",  # core/v1 names ReportingController this way
)
_EVENTS_V1_EVENT: Final = _EventFields(
    first="deprecatedFirstTimestamp",
    last="deprecatedLastTimestamp",
    count="deprecatedCount",
    source="deprecatedSource",
    regarding="regarding",
    message="note",
    controller="reportingController",
)


def _event_printer(fields: _EventFields) -> base.Printer:
    def cells(obj: base.Obj, now: float) -> list[Any]:
        first = base.since(obj.get(fields.first), now)
        if base.timestamp(obj.get(fields.first)) is None:
            first = base.since(obj.get("eventTime"), now)
        last = base.since(obj.get(fields.last), now)
        if base.timestamp(obj.get(fields.last)) is None:
            last = first
        count = base.integer(obj.get(fields.count))
        series = obj.get("series")
        if isinstance(series, dict):
            last = base.since(series.get("lastObservedTime"), now)
            count = base.integer(series.get("count"))
        elif count == 0:
            count = 1  # singleton events of the new API carry no count
        regarding = base.mapping(obj.get(fields.regarding))
        kind = base.string(regarding.get("kind")).lower()
        target = base.string(regarding.get("name"))
        source = base.mapping(obj.get(fields.source))
        component = base.string(source.get("component")) or base.string(obj.get(fields.controller))
        instance = base.string(source.get("host")) or base.string(obj.get("reportingInstance"))
        return [
            last,
            base.string(obj.get("type")),
            base.string(obj.get("reason")),
            f"{kind}/{target}" if target else kind,
            base.string(regarding.get("fieldPath")),
            f"{component}, {instance}" if instance else component,
            base.string(obj.get(fields.message)).strip(),
            first,
            count,
            base.name(obj),
        ]

    return base.Printer(_EVENT_COLUMNS, cells)


_EVENT_COLUMNS: Final = (
    Column("Last Seen", "string", _doc("Event.lastTimestamp")),
    Column("Type", "string", _doc("Event.type")),
    Column("Reason", "string", _doc("Event.reason")),
    Column("Object", "string", _doc("Event.involvedObject")),
    Column("Subobject", "string", _doc("ObjectReference.fieldPath"), priority=1),
    Column("Source", "string", _doc("Event.source"), priority=1),
    Column("Message", "string", _doc("Event.message")),
    Column("First Seen", "string", _doc("Event.firstTimestamp"), priority=1),
    Column("Count", "string", _doc("Event.count"), priority=1),
    Column("Name", "string", FIELD_DOCS["meta_v1.ObjectMeta.name"], format="name", priority=1),
)
EVENT: Final = _event_printer(_CORE_EVENT)
EVENTS_V1_EVENT: Final = _event_printer(_EVENTS_V1_EVENT)


# --- Node -----------------------------------------------------------------------------------------

_ROLE_PREFIX = "node-role.kubernetes.io/"


def _node_cells(obj: base.Obj, now: float) -> list[Any]:
    status = base.mapping(obj.get("status"))
    ready = "Unknown"
    for condition in base.sequence(status.get("conditions")):
        if base.mapping(condition).get("type") == "Ready":
            ready = "Ready" if condition.get("status") == "True" else "NotReady"
    states = [ready]
    if base.mapping(obj.get("spec")).get("unschedulable"):
        states.append("SchedulingDisabled")
    labels = base.mapping(base.metadata(obj).get("labels"))
    roles = sorted(k[len(_ROLE_PREFIX) :] for k in labels if k.startswith(_ROLE_PREFIX))
    roles += sorted({v for k, v in labels.items() if k == "kubernetes.io/role" and v})
    addresses = {
        base.mapping(a).get("type"): base.string(base.mapping(a).get("address"))
        for a in base.sequence(status.get("addresses"))
    }
    info = base.mapping(status.get("nodeInfo"))
    return [
        base.name(obj),
        ",".join(states),
        ",".join(r for r in roles if r) or base.NONE,
        base.age(obj, now),
        base.string(info.get("kubeletVersion")),
        addresses.get("InternalIP") or base.NONE,
        addresses.get("ExternalIP") or base.NONE,
        base.string(info.get("osImage")) or "<unknown>",
        base.string(info.get("kernelVersion")) or "<unknown>",
        base.string(info.get("containerRuntimeVersion")) or "<unknown>",
    ]


NODE: Final = base.Printer(
    (
        base.NAME_COLUMN,
        Column("Status", "string", "The status of the node"),
        Column("Roles", "string", "The roles of the node"),
        base.AGE_COLUMN,
        Column("Version", "string", _doc("NodeSystemInfo.kubeletVersion")),
        Column("Internal-IP", "string", "List of internal IPs.", priority=1),
        Column("External-IP", "string", "List of external IPs.", priority=1),
        Column("OS-Image", "string", _doc("NodeSystemInfo.osImage"), priority=1),
        Column("Kernel-Version", "string", _doc("NodeSystemInfo.kernelVersion"), priority=1),
        Column(
            "Container-Runtime",
            "string",
            _doc("NodeSystemInfo.containerRuntimeVersion"),
            priority=1,
        ),
    ),
    _node_cells,
)

"""Which Table printer serves each kind; also the printers for networking, coordination and RBAC.

`printer_for(group, kind)` returns the kube-apiserver 1.32 printer of a built-in kind, and for a
kind without one (Role, ClusterRole, CustomResourceDefinition, ...) the default table convertor's
Name and Created At columns (k8s.io/apiserver pkg/registry/rest/table.go). Custom resources are
printed from their CRD instead: `crd_printer(version["additionalPrinterColumns"])`.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, Final

from minikcp.apis import (
    kcp_kinds,
    printers_apps,
    printers_core,
    printers_network,
    printers_pod,
    printers_quota,
    printers_workloads,
)
from minikcp.apis import printer_base as base
from minikcp.apis.printer_base import Printer
from minikcp.apis.printer_docs import FIELD_DOCS
from minikcp.apis.printers_crd import crd_printer
from minikcp.machinery import tables

__all__ = ["DEFAULT", "Printer", "crd_printer", "printer_for"]

Column = tables.Column

# --- default table convertor --------------------------------------------------------------------


def _created_at(obj: base.Obj) -> str:
    # creationTimestamp.UTC().Format(time.RFC3339); an unset time formats as Go's zero time.
    value = base.string(base.metadata(obj).get("creationTimestamp"))
    ts = base.timestamp(value)
    if ts is None:
        return "0001-01-01T00:00:00Z"
    if len(value) == 20 and value[-1] == "Z":  # stored form: already UTC, whole seconds
        return value
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _default_cells(obj: base.Obj, now: float) -> list[Any]:
    return [base.name(obj), _created_at(obj)]


DEFAULT: Final = Printer(
    (
        base.NAME_COLUMN,
        Column("Created At", "date", FIELD_DOCS["meta_v1.ObjectMeta.creationTimestamp"]),
    ),
    _default_cells,
)

# --- networking.k8s.io/v1 Ingress ---------------------------------------------------------------

_MAX_HOSTS: Final = 3


def _ingress_hosts(rules: Any) -> str:
    rules = base.sequence(rules)
    hosts: list[str] = []
    more = False
    for rule in rules:
        if len(hosts) == _MAX_HOSTS:
            more = True
        host = base.string(base.mapping(rule).get("host"))
        if not more and host:
            hosts.append(host)
    if not hosts:
        return "*"
    text = ",".join(hosts)
    return f"{text} + {len(rules) - _MAX_HOSTS} more..." if more else text


def _ingress_cells(obj: base.Obj, now: float) -> list[Any]:
    spec, status = base.mapping(obj.get("spec")), base.mapping(obj.get("status"))
    addresses = set()
    for ingress in base.sequence(base.mapping(status.get("loadBalancer")).get("ingress")):
        ingress = base.mapping(ingress)
        address = base.string(ingress.get("ip")) or base.string(ingress.get("hostname"))
        if address:
            addresses.add(address)
    class_name = spec.get("ingressClassName")
    return [
        base.name(obj),
        class_name if isinstance(class_name, str) else base.NONE,
        _ingress_hosts(spec.get("rules")),
        ",".join(sorted(addresses)),  # the server prints wide: never elided
        "80, 443" if base.sequence(spec.get("tls")) else "80",
        base.age(obj, now),
    ]


INGRESS: Final = Printer(
    (
        base.NAME_COLUMN,
        Column(
            "Class",
            "string",
            "The name of the IngressClass resource that should be used for additional "
            "configuration",
        ),
        Column(
            "Hosts",
            "string",
            "Hosts that incoming requests are matched against before the ingress rule",
        ),
        Column(
            "Address", "string", "Address is a list containing ingress points for the load-balancer"
        ),
        Column("Ports", "string", "Ports of TLS configurations that open"),
        base.AGE_COLUMN,
    ),
    _ingress_cells,
)

# --- coordination.k8s.io/v1 Lease ---------------------------------------------------------------


def _lease_cells(obj: base.Obj, now: float) -> list[Any]:
    holder = base.string(base.mapping(obj.get("spec")).get("holderIdentity"))
    return [base.name(obj), holder, base.age(obj, now)]


LEASE: Final = Printer(
    (
        base.NAME_COLUMN,
        Column("Holder", "string", FIELD_DOCS["coordination_v1.LeaseSpec.holderIdentity"]),
        base.AGE_COLUMN,
    ),
    _lease_cells,
)

# --- rbac.authorization.k8s.io/v1 RoleBinding and ClusterRoleBinding -----------------------------


def _binding_cells(obj: base.Obj, now: float) -> list[Any]:
    role = base.mapping(obj.get("roleRef"))
    users: list[str] = []
    groups: list[str] = []
    accounts: list[str] = []
    for subject in map(base.mapping, base.sequence(obj.get("subjects"))):
        kind, name = subject.get("kind"), base.string(subject.get("name"))
        if kind == "ServiceAccount":
            accounts.append(f"{base.string(subject.get('namespace'))}/{name}")
        elif kind == "User":
            users.append(name)
        elif kind == "Group":
            groups.append(name)
    return [
        base.name(obj),
        f"{base.string(role.get('kind'))}/{base.string(role.get('name'))}",
        base.age(obj, now),
        ", ".join(users),
        ", ".join(groups),
        ", ".join(accounts),
    ]


def _binding_printer(kind: str, what: str) -> Printer:
    return Printer(
        (
            base.NAME_COLUMN,
            Column("Role", "string", FIELD_DOCS[f"rbac_v1beta1.{kind}.roleRef"]),
            base.AGE_COLUMN,
            Column("Users", "string", f"Users in the {what}", priority=1),
            Column("Groups", "string", f"Groups in the {what}", priority=1),
            Column("ServiceAccounts", "string", f"ServiceAccounts in the {what}", priority=1),
        ),
        _binding_cells,
    )


ROLE_BINDING: Final = _binding_printer("RoleBinding", "roleBinding")
CLUSTER_ROLE_BINDING: Final = _binding_printer("ClusterRoleBinding", "clusterRoleBinding")

# --- registry -----------------------------------------------------------------------------------

_PRINTERS: Final[dict[tuple[str, str], Printer]] = {
    ("", "Namespace"): printers_core.NAMESPACE,
    ("", "ConfigMap"): printers_core.CONFIG_MAP,
    ("", "Secret"): printers_core.SECRET,
    ("", "ServiceAccount"): printers_core.SERVICE_ACCOUNT,
    ("", "Service"): printers_core.SERVICE,
    ("", "Endpoints"): printers_core.ENDPOINTS,
    ("", "Event"): printers_core.EVENT,
    ("events.k8s.io", "Event"): printers_core.EVENTS_V1_EVENT,
    ("", "Pod"): printers_pod.POD,
    ("", "Node"): printers_core.NODE,
    ("", "ResourceQuota"): printers_quota.RESOURCE_QUOTA,
    ("", "LimitRange"): printers_quota.LIMIT_RANGE,
    ("apps", "Deployment"): printers_apps.DEPLOYMENT,
    ("apps", "ReplicaSet"): printers_apps.REPLICA_SET,
    ("", "ReplicationController"): printers_apps.REPLICATION_CONTROLLER,
    ("batch", "Job"): printers_apps.JOB,
    ("apps", "StatefulSet"): printers_workloads.STATEFUL_SET,
    ("apps", "DaemonSet"): printers_workloads.DAEMON_SET,
    ("apps", "ControllerRevision"): printers_workloads.CONTROLLER_REVISION,
    ("batch", "CronJob"): printers_workloads.CRON_JOB,
    ("autoscaling", "HorizontalPodAutoscaler"): printers_workloads.HORIZONTAL_POD_AUTOSCALER,
    ("policy", "PodDisruptionBudget"): printers_workloads.POD_DISRUPTION_BUDGET,
    ("", "PersistentVolumeClaim"): printers_network.PERSISTENT_VOLUME_CLAIM,
    ("networking.k8s.io", "NetworkPolicy"): printers_network.NETWORK_POLICY,
    ("networking.k8s.io", "IngressClass"): printers_network.INGRESS_CLASS,
    ("discovery.k8s.io", "EndpointSlice"): printers_network.ENDPOINT_SLICE,
    ("scheduling.k8s.io", "PriorityClass"): printers_network.PRIORITY_CLASS,
    ("networking.k8s.io", "Ingress"): INGRESS,
    ("coordination.k8s.io", "Lease"): LEASE,
    ("rbac.authorization.k8s.io", "RoleBinding"): ROLE_BINDING,
    ("rbac.authorization.k8s.io", "ClusterRoleBinding"): CLUSTER_ROLE_BINDING,
}


def printer_for(group: str, kind: str) -> Printer:
    """The printer of a built-in kind; `DEFAULT` (Name, Created At) for kinds without one."""
    found = _PRINTERS.get((group, kind))
    if found is not None:
        return found
    kcp_kind = kcp_kinds.kind_of(group, kind)
    if kcp_kind is not None:
        return crd_printer(kcp_kind.printer_columns)
    return DEFAULT

"""The simulated nodes as a kubelet registers and reports them: a `Node` per simulated node and
a `Lease` in `kube-node-lease` per node.

As upstream's node lease design: the Lease (40 s duration) is renewed every 10 s, and the Node's
status, with `lastHeartbeatTime` on its conditions, every 5 minutes
(node-status-report-frequency). Nodes live in the logical clusters the simulator runs pods in:
`root` from the start, any other once a pod is bound there, so idle logical clusters cost
nothing. A Node or Lease somebody deleted is registered again at the next renewal.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import time
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from minikcp.machinery import errors, timestamps
from minikcp.registry import registry
from minikcp.registry.objects import RequestContext, WriteOptions
from minikcp.registry.store import ResourceStore
from minikcp.simulator import nodes

logger = logging.getLogger(__name__)

LEASE_DURATION = 40
RENEW_INTERVAL = 10.0
STATUS_REPORT_INTERVAL = 300.0
LEASE_NAMESPACE = "kube-node-lease"
KUBELET_VERSION = "v1.32.0"
_KUBELET = WriteOptions(field_manager="kubelet")


class NodeHeartbeats:
    """Registers the simulated nodes and keeps their heartbeats going."""

    def __init__(
        self, reg: registry.Registry, count: int, *, clusters: tuple[str, ...] = ("root",)
    ) -> None:
        self._names = nodes.names(count)
        node_rt = reg.catalog.by_resource("", "v1", "nodes")
        lease_rt = reg.catalog.by_resource("coordination.k8s.io", "v1", "leases")
        assert lease_rt is not None
        self._nodes: ResourceStore | None = reg.store(node_rt) if node_rt is not None else None
        self._leases = reg.store(lease_rt)
        self._clusters: dict[str, float] = dict.fromkeys(clusters, 0.0)  # -> last status report
        self._wake = asyncio.Event()

    @property
    def serving(self) -> bool:
        return self._nodes is not None

    def seen(self, cluster: str) -> None:
        """A pod is bound in `cluster`: its nodes must exist there."""
        if self._nodes is not None and cluster not in self._clusters:
            self._clusters[cluster] = 0.0
            self._wake.set()

    async def run(self) -> None:
        if self._nodes is None:
            return  # Nodes are not served by this registry
        while True:
            self._wake.clear()
            for cluster in list(self._clusters):
                try:
                    await self._beat(cluster)
                except errors.StatusError as exc:
                    logger.debug("node heartbeat in %s: %s", cluster, exc.message)
            try:
                await asyncio.wait_for(self._wake.wait(), RENEW_INTERVAL)
            except TimeoutError:
                pass

    async def _beat(self, cluster: str) -> None:
        ctx = RequestContext(cluster)
        now = time.time()
        report = now - self._clusters[cluster] >= STATUS_REPORT_INTERVAL
        for name in self._names:
            await self._renew_lease(ctx, name, now)
            await self._register(ctx, name, now, report=report)
        if report:
            self._clusters[cluster] = now

    async def _register(self, ctx: RequestContext, name: str, now: float, *, report: bool) -> None:
        assert self._nodes is not None
        found = await self._nodes.find(ctx, "", name)
        if found is None:
            try:
                await self._nodes.create(ctx, "", node_object(name), _KUBELET)
            except errors.StatusError as exc:
                if exc.reason != "AlreadyExists":
                    raise
            report = True
        elif not found.view().get("status", {}).get("conditions"):
            report = True
        if not report:
            return

        def mutate(current: dict[str, Any] | None) -> dict[str, Any]:
            if current is None:
                raise errors.not_found("nodes", name)
            current["status"] = node_status(name, now, current.get("status") or {})
            return current

        await self._nodes.guaranteed_update(ctx, "", name, mutate, _KUBELET, subresource="status")

    async def _renew_lease(self, ctx: RequestContext, name: str, now: float) -> None:
        stamp = micro_time(now)

        def mutate(current: dict[str, Any] | None) -> dict[str, Any]:
            if current is None:
                raise errors.not_found("leases", name, group="coordination.k8s.io")
            current["spec"]["renewTime"] = stamp
            current["spec"]["holderIdentity"] = name
            return current

        try:
            await self._leases.guaranteed_update(ctx, LEASE_NAMESPACE, name, mutate, _KUBELET)
        except errors.StatusError as exc:
            if exc.reason != "NotFound":
                raise
            lease = {
                "apiVersion": "coordination.k8s.io/v1",
                "kind": "Lease",
                "metadata": {"name": name, "namespace": LEASE_NAMESPACE},
                "spec": {
                    "holderIdentity": name,
                    "leaseDurationSeconds": LEASE_DURATION,
                    "renewTime": stamp,
                },
            }
            await self._leases.create(ctx, LEASE_NAMESPACE, lease, _KUBELET)


def micro_time(at: float) -> str:
    return datetime.fromtimestamp(at, UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def node_object(name: str) -> dict[str, Any]:
    index = nodes.index(name)
    cidr = f"10.244.{index}.0/24"
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": nodes.labels(name),
            "annotations": {
                "node.alpha.kubernetes.io/ttl": "0",
                "volumes.kubernetes.io/controller-managed-attach-detach": "true",
            },
        },
        "spec": {"podCIDR": cidr, "podCIDRs": [cidr]},
    }


# A modest machine: 4 CPUs, 16 GiB, 100 GiB of disk, kubelet's default of 110 pods.
_CAPACITY = {
    "cpu": "4",
    "ephemeral-storage": "102626232Ki",
    "hugepages-1Gi": "0",
    "hugepages-2Mi": "0",
    "memory": "16382396Ki",
    "pods": "110",
}
_ALLOCATABLE = {**_CAPACITY, "ephemeral-storage": "94580335255", "memory": "16279996Ki"}
# (type, reason, message) as the kubelet's setters in pkg/kubelet/nodestatus report them healthy.
_CONDITIONS = (
    (
        "MemoryPressure",
        "False",
        "KubeletHasSufficientMemory",
        "kubelet has sufficient memory available",
    ),
    ("DiskPressure", "False", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
    ("PIDPressure", "False", "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
    ("Ready", "True", "KubeletReady", "kubelet is posting ready status"),
)


def node_status(name: str, now: float, previous: Mapping[str, Any]) -> dict[str, Any]:
    """The status a healthy kubelet reports; transition times kept from `previous`."""
    stamp = timestamps.rfc3339(now)
    before = {c.get("type"): c for c in previous.get("conditions") or ()}
    conditions = []
    for kind, status, reason, message in _CONDITIONS:
        old = before.get(kind) or {}
        moved = old.get("status") == status and old.get("lastTransitionTime")
        conditions.append(
            {
                "type": kind,
                "status": status,
                "lastHeartbeatTime": stamp,
                "lastTransitionTime": moved or stamp,
                "reason": reason,
                "message": message,
            }
        )
    return {
        "capacity": dict(_CAPACITY),
        "allocatable": dict(_ALLOCATABLE),
        "conditions": conditions,
        "addresses": [
            {"type": "InternalIP", "address": nodes.host_ip(name)},
            {"type": "Hostname", "address": name},
        ],
        "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
        "nodeInfo": {
            "machineID": _hex_id(name, "machine"),
            "systemUUID": _uuid(name),
            "bootID": _uuid(name + "/boot"),
            "kernelVersion": "6.8.0-minikcp",
            "osImage": "minikcp simulated node",
            "containerRuntimeVersion": "simulated://1.0.0",
            "kubeletVersion": KUBELET_VERSION,
            "kubeProxyVersion": KUBELET_VERSION,
            "operatingSystem": "linux",
            "architecture": "amd64",
        },
    }


def _hex_id(name: str, salt: str) -> str:
    return hashlib.sha256(f"{salt}:{name}".encode()).hexdigest()[:32]


def _uuid(name: str) -> str:
    h = _hex_id(name, "uuid")
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:32]}"

"""The controllers minikcp runs beside the API, by name, and `--controllers` choosing among them.

As kube-controller-manager's `--controllers`: a comma-separated list where `*` is every
controller on by default, `name` turns one on and `-name` turns one off; the last word about a
name wins over `*`. Each controller is one long-running task started from the wired registry.

Each row also says how it runs when replicas share one etcd (DESIGN.md, "Components on several
replicas"): a SINGLETON runs on the one replica holding the controllers' Lease; a SHARDED one
runs on every replica and divides its work by leases of its own (the syncer: one per shard of
SyncTargets).
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

# The controllers' modules are imported by their runners: `minikcp --help` lists this table
# without loading the registry, and a controller turned off costs no import.
if TYPE_CHECKING:
    from minikcp.registry import pod_streams, registry
    from minikcp.runtime import leader_election
    from minikcp.syncer import target as sync_target
    from minikcp.tenancy import resolver, workspaces

# The syncer's row; replicas count each other by it (minikcp.syncer.shards.COMPONENT).
SYNCER = "syncer"


@dataclass(frozen=True, slots=True)
class Wiring:
    """What controllers are built from."""

    registry: registry.Registry
    lifecycle: workspaces.Workspaces
    resolver: resolver.ClusterResolver
    base_url: str
    sync: sync_target.Settings
    sync_resources: tuple[str, ...]
    # The syncer adds itself: it serves pods/log, exec, ... of the pods it upsynced.
    pod_connectors: pod_streams.Connectors
    # This process among the replicas sharing the store; None when the store is its alone.
    replica: leader_election.Replica | None = None


Runner = Callable[[Wiring], Coroutine[Any, Any, None]]
OnReplicas = Literal["singleton", "sharded"]
SINGLETON: OnReplicas = "singleton"
SHARDED: OnReplicas = "sharded"


@dataclass(frozen=True, slots=True)
class Controller:
    name: str
    run: Runner
    help: str
    on_replicas: OnReplicas = SINGLETON


def _workspaces(w: Wiring) -> Coroutine[Any, Any, None]:
    from minikcp.controllers import workspaces as workspace_controller

    return workspace_controller.WorkspaceController(w.lifecycle).run()


def _crds(w: Wiring) -> Coroutine[Any, Any, None]:
    from minikcp.controllers import crds as crd_controller

    return crd_controller.CrdController(w.registry).run()


def _namespaces(w: Wiring) -> Coroutine[Any, Any, None]:
    from minikcp.controllers import namespaces as namespace_controller

    return namespace_controller.NamespaceController(w.registry).run()


def _namespace_defaults(w: Wiring) -> Coroutine[Any, Any, None]:
    from minikcp.controllers import namespace_defaults

    return namespace_defaults.NamespaceDefaultsController(w.registry).run()


def _garbage_collector(w: Wiring) -> Coroutine[Any, Any, None]:
    from minikcp.controllers import garbage_collector as gc_controller

    return gc_controller.GarbageCollector(w.registry).run()


def _aggregation(w: Wiring) -> Coroutine[Any, Any, None]:
    from minikcp.controllers import rbac_aggregation

    return rbac_aggregation.ClusterRoleAggregation(w.registry).run()


def _quotas(w: Wiring) -> Coroutine[Any, Any, None]:
    from minikcp.controllers import resource_quotas

    return resource_quotas.ResourceQuotaController(w.registry, shared=w.replica is not None).run()


def _api_exports(w: Wiring) -> Coroutine[Any, Any, None]:
    from minikcp.controllers import api_exports

    return api_exports.APIExportController(w.registry, w.resolver, w.base_url).run()


def _api_bindings(w: Wiring) -> Coroutine[Any, Any, None]:
    from minikcp.controllers import api_bindings

    return api_bindings.APIBindingController(w.registry, w.resolver).run()


def _syncer(w: Wiring) -> Coroutine[Any, Any, None]:
    from minikcp.syncer import pod_proxy
    from minikcp.syncer import syncer as workload_syncer

    syncer = workload_syncer.Syncer(
        w.registry, w.sync, extra_resources=w.sync_resources, replica=w.replica
    )
    w.pod_connectors.add(pod_proxy.UpsyncedPodStreams(syncer))
    return syncer.run()


def _proxy_writes(w: Wiring) -> Coroutine[Any, Any, None]:
    from minikcp.runtime import supervise
    from minikcp.syncer import proxy_writes

    proxy = proxy_writes.ProxyWrites(w.registry, extra_resources=w.sync_resources)
    w.registry.admit_all(proxy.hook_for)  # last: after quota, the downstream write goes
    return supervise.forever("proxy writes", proxy.run)


CONTROLLERS: tuple[Controller, ...] = (
    Controller("workspace-controller", _workspaces, "Workspaces and their logical clusters"),
    Controller("crd-controller", _crds, "CRD names and conditions, CRD deletion"),
    Controller("namespace-controller", _namespaces, "deleted namespaces emptied, then removed"),
    Controller(
        "namespace-defaults-controller",
        _namespace_defaults,
        "every namespace's default ServiceAccount and kube-root-ca.crt ConfigMap",
    ),
    Controller(
        "garbage-collector-controller",
        _garbage_collector,
        "dependents of deleted owners deleted or orphaned",
    ),
    Controller(
        "clusterrole-aggregation-controller", _aggregation, "aggregated ClusterRoles kept filled"
    ),
    Controller("resourcequota-controller", _quotas, "ResourceQuota status.hard and status.used"),
    Controller("apiexport-controller", _api_exports, "APIExport identities and endpoint slices"),
    Controller("apibinding-controller", _api_bindings, "APIBindings bound to their exports"),
    Controller(
        SYNCER,
        _syncer,
        "workloads pushed to attached SyncTargets, status back",
        on_replicas=SHARDED,
    ),
    Controller(
        "proxy-writes",
        _proxy_writes,
        "writes in namespaces labelled workload.minikcp.io/mode=proxy go through their target",
        on_replicas=SHARDED,  # any replica serves a proxy write
    ),
)


class SelectionError(ValueError):
    """A `--controllers` value that names no controller."""


def select(spec: str, known: Sequence[str]) -> tuple[str, ...]:
    """The controllers a `--controllers` value turns on, in the order of `known`."""
    words = [word.strip() for word in spec.split(",") if word.strip()]
    everything = "*" in words
    explicit: dict[str, bool] = {}
    for word in words:
        if word == "*":
            continue
        name = word[1:] if word.startswith("-") else word
        if name not in known:
            raise SelectionError(
                f"unknown controller {name!r} in --controllers (known: {', '.join(known)})"
            )
        explicit[name] = not word.startswith("-")
    return tuple(name for name in known if explicit.get(name, everything))


def describe(controllers: Iterable[Controller] = CONTROLLERS) -> str:
    return "; ".join(f"{c.name} ({c.help})" for c in controllers)

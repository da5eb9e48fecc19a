"""Strategies of apps/v1 kinds: generation, the scale subresource, the rollout status."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from minikcp.machinery import propagation, selectors
from minikcp.registry import strategy


class ScalableStrategy(strategy.Strategy):
    """Kinds with spec.replicas and an autoscaling/v1 Scale subresource."""

    tracks_generation = True

    def scale_of(self, obj: Mapping[str, Any]) -> dict[str, Any]:
        meta = obj.get("metadata", {})
        spec, status = obj.get("spec", {}), obj.get("status", {})
        scale_meta = {
            k: meta[k]
            for k in ("name", "namespace", "uid", "resourceVersion", "creationTimestamp")
            if k in meta
        }
        selector = spec.get("selector")
        return {
            "kind": "Scale",
            "apiVersion": "autoscaling/v1",
            "metadata": scale_meta,
            "spec": {"replicas": spec.get("replicas", 0)},
            "status": {
                "replicas": status.get("replicas", 0),
                "selector": selectors.format_label_selector(selector) if selector else "",
            },
        }

    @staticmethod
    def set_replicas(obj: dict[str, Any], replicas: int) -> None:
        obj.setdefault("spec", {})["replicas"] = replicas

    def replicas_field(self) -> tuple[str, ...]:
        """Where the Scale's spec.replicas lives in the object (for its managedFields)."""
        return ("spec", "replicas")


class ReplicaSetStrategy(ScalableStrategy):
    extra_selectable_fields = frozenset({"status.replicas"})
    garbage_collection_policy = propagation.DELETE_DEPENDENTS

    def initial_status(self, obj: dict[str, Any]) -> None:
        # `replicas` is not omitempty in the status of ReplicaSets and ReplicationControllers.
        obj["status"] = {"replicas": 0}


class ReplicationControllerStrategy(ReplicaSetStrategy):
    """core/v1: the selector is a plain label map, the Scale shows it as `k=v,...` sorted."""

    def scale_of(self, obj: Mapping[str, Any]) -> dict[str, Any]:
        scale = super().scale_of({**obj, "spec": {**obj.get("spec", {}), "selector": None}})
        selector = obj.get("spec", {}).get("selector") or {}
        scale["status"]["selector"] = ",".join(f"{k}={selector[k]}" for k in sorted(selector))
        return scale


# Nothing runs the pods of a workload no controller owns: the reason its status says so with.
UNSCHEDULABLE = "Unschedulable"


def unserved_message(namespace: str) -> str:
    return (
        f'no SyncTarget serves namespace "{namespace}": nothing runs its pods (attach a '
        "cluster, or start minikcp with --simulate-workloads)"
    )


class _UnservedStatusStrategy(ScalableStrategy):
    """Where no controller owns the status (no simulator, no SyncTarget for the namespace), a
    workload reports what is true: the spec observed, nothing available, and why (kcp marks an
    unplaced namespace Unschedulable the same way). `kubectl rollout status` then waits, as on
    a cluster with no nodes. Status written through /status stays until the next spec change;
    where a controller owns the status (`status_owners`) nothing is derived."""

    # Zero counts the kind's status always shows (Go fields without omitempty), before and
    # after its conditions in Go's field order.
    leading_zeros: tuple[str, ...] = ()
    trailing_zeros: tuple[str, ...] = ()
    # Whether the kind's conditions carry lastUpdateTime (Deployment's do).
    condition_update_time = False

    garbage_collection_policy = propagation.DELETE_DEPENDENTS

    def after_write(self, obj: dict[str, Any], old: Mapping[str, Any] | None, cluster: str) -> None:
        namespace = obj["metadata"].get("namespace", "")
        if not self.status_owners.registry_reports(cluster, namespace):
            return
        generation = obj["metadata"].get("generation", 1)
        old_status = (old or {}).get("status") or {}
        if old is not None and old_status.get("observedGeneration") == generation:
            return
        now = obj["metadata"].get("creationTimestamp", "") if old is None else _now()
        condition: dict[str, Any] = {"type": "Available", "status": "False"}
        if self.condition_update_time:
            condition["lastUpdateTime"] = now
        condition["lastTransitionTime"] = now
        condition["reason"] = UNSCHEDULABLE
        condition["message"] = unserved_message(namespace)
        for before in old_status.get("conditions") or ():
            if before.get("type") == "Available" and before.get("status") == "False":
                condition["lastTransitionTime"] = before.get("lastTransitionTime", now)
                if before.get("reason") == UNSCHEDULABLE and self.condition_update_time:
                    condition["lastUpdateTime"] = before.get("lastUpdateTime", now)
        status: dict[str, Any] = {"observedGeneration": generation}
        status.update(dict.fromkeys(self.leading_zeros, 0))
        status["conditions"] = [condition]
        status.update(dict.fromkeys(self.trailing_zeros, 0))
        obj["status"] = status


class DeploymentStrategy(_UnservedStatusStrategy):
    condition_update_time = True

    def prepare_for_status_update(self, obj: dict[str, Any], old: Mapping[str, Any]) -> None:
        """As upstream's deployment status strategy, which resets spec and labels only: the
        annotations are the write's, so the deployment controller sets its revision annotation
        with the status in one write."""
        annotations = obj.get("metadata", {}).get("annotations")
        super().prepare_for_status_update(obj, old)
        if annotations:
            obj["metadata"]["annotations"] = annotations
        else:
            obj["metadata"].pop("annotations", None)


def _now() -> str:
    import datetime

    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class StatefulSetStrategy(_UnservedStatusStrategy):
    """Status starts as the StatefulSet strategy leaves it (Go prints its non-omitempty zeros)."""

    garbage_collection_policy = propagation.DELETE_DEPENDENTS
    leading_zeros = ("replicas",)
    trailing_zeros = ("availableReplicas",)

    def initial_status(self, obj: dict[str, Any]) -> None:
        obj["status"] = {"availableReplicas": 0, "replicas": 0}


class DaemonSetStrategy(strategy.Strategy):
    tracks_generation = True
    garbage_collection_policy = propagation.DELETE_DEPENDENTS

    def initial_status(self, obj: dict[str, Any]) -> None:
        obj["status"] = {
            "currentNumberScheduled": 0,
            "desiredNumberScheduled": 0,
            "numberMisscheduled": 0,
            "numberReady": 0,
        }

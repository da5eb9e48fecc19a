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


class DeploymentStrategy(ScalableStrategy):
    """With no controller running pods, a deployment reports itself rolled out at once.

    This keeps `kubectl rollout status` and `kubectl wait --for=condition=Available` working the
    way they do on a real cluster; status written through /status still wins until the next
    spec change. Where a controller owns Deployment status (`status_owners`) nothing is derived.
    """

    garbage_collection_policy = propagation.DELETE_DEPENDENTS

    def after_write(self, obj: dict[str, Any], old: Mapping[str, Any] | None, cluster: str) -> None:
        if not self.status_owners.registry_reports(cluster, obj["metadata"].get("namespace", "")):
            return
        generation = obj["metadata"].get("generation", 1)
        if old is not None and old.get("status", {}).get("observedGeneration") == generation:
            return
        replicas = obj.get("spec", {}).get("replicas", 1)
        now = obj["metadata"].get("creationTimestamp", "")
        if old is not None:
            now = _now()
        name = obj["metadata"].get("name", "")
        obj["status"] = {
            "observedGeneration": generation,
            "replicas": replicas,
            "updatedReplicas": replicas,
            "readyReplicas": replicas,
            "availableReplicas": replicas,
            "conditions": [
                {
                    "type": "Available",
                    "status": "True",
                    "lastUpdateTime": now,
                    "lastTransitionTime": now,
                    "reason": "MinimumReplicasAvailable",
                    "message": "Deployment has minimum availability.",
                },
                {
                    "type": "Progressing",
                    "status": "True",
                    "lastUpdateTime": now,
                    "lastTransitionTime": now,
                    "reason": "NewReplicaSetAvailable",
                    "message": f'ReplicaSet "{name}" has successfully progressed.',
                },
            ],
        }
        if replicas == 0:
            for key in ("replicas", "updatedReplicas", "readyReplicas", "availableReplicas"):
                del obj["status"][key]
        if old is not None:
            _keep_condition_times(obj["status"]["conditions"], old.get("status") or {})


def _keep_condition_times(conditions: list[dict[str, Any]], old_status: Mapping[str, Any]) -> None:
    """As the deployment controller's SetDeploymentCondition: a condition whose status does not
    change keeps its lastTransitionTime, and one whose reason does not change either is left
    as it was, except that a completed rollout bumps Progressing's lastUpdateTime."""
    previous = {
        c.get("type"): c for c in old_status.get("conditions") or () if isinstance(c, Mapping)
    }
    for condition in conditions:
        before = previous.get(condition["type"])
        if before is None or before.get("status") != condition["status"]:
            continue
        condition["lastTransitionTime"] = before.get("lastTransitionTime", "")
        if condition["type"] != "Progressing" and before.get("reason") == condition["reason"]:
            condition["lastUpdateTime"] = before.get("lastUpdateTime", "")


def _now() -> str:
    import datetime

    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class StatefulSetStrategy(ScalableStrategy):
    """Status starts as the StatefulSet strategy leaves it (Go prints its non-omitempty zeros)."""

    garbage_collection_policy = propagation.DELETE_DEPENDENTS

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

"""Strategies of kinds whose only difference is generation tracking or a small initial status."""

from __future__ import annotations

from typing import Any

from minikcp.machinery import propagation
from minikcp.registry import strategy


class GenerationStrategy(strategy.Strategy):
    tracks_generation = True


class JobStrategy(strategy.Strategy):
    tracks_generation = True
    # batch/v1 keeps orphaning a Job's pods by default, for backwards compatibility.
    garbage_collection_policy = propagation.ORPHAN_DEPENDENTS
    extra_selectable_fields = frozenset({"status.successful"})

    def initial_status(self, obj: dict[str, Any]) -> None:
        obj["status"] = {}


class CronJobStrategy(strategy.Strategy):
    tracks_generation = True
    garbage_collection_policy = propagation.DELETE_DEPENDENTS

    def initial_status(self, obj: dict[str, Any]) -> None:
        obj["status"] = {}


class PersistentVolumeClaimStrategy(strategy.Strategy):
    """A new claim is Pending until a binder (a physical cluster's) binds it."""

    def initial_status(self, obj: dict[str, Any]) -> None:
        obj["status"] = {"phase": "Pending"}


class HorizontalPodAutoscalerStrategy(strategy.Strategy):
    def initial_status(self, obj: dict[str, Any]) -> None:
        obj["status"] = {"desiredReplicas": 0}


class PodDisruptionBudgetStrategy(strategy.Strategy):
    tracks_generation = True

    def initial_status(self, obj: dict[str, Any]) -> None:
        obj["status"] = {
            "currentHealthy": 0,
            "desiredHealthy": 0,
            "disruptionsAllowed": 0,
            "expectedPods": 0,
        }

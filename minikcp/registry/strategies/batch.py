"""Strategies of kinds whose only difference is generation tracking or a small initial status."""

from __future__ import annotations

from typing import Any

from minikcp.apis.defaults import nested_dict
from minikcp.machinery import propagation
from minikcp.registry import strategy


class GenerationStrategy(strategy.Strategy):
    tracks_generation = True


class JobStrategy(strategy.Strategy):
    tracks_generation = True
    # batch/v1 keeps orphaning a Job's pods by default, for backwards compatibility.
    garbage_collection_policy = propagation.ORPHAN_DEPENDENTS
    extra_selectable_fields = frozenset({"status.successful"})

    def prepare_for_create(self, obj: dict[str, Any]) -> None:
        super().prepare_for_create(obj)
        spec = obj.get("spec")
        if isinstance(spec, dict) and not spec.get("manualSelector"):
            generate_selector(obj, spec)

    def initial_status(self, obj: dict[str, Any]) -> None:
        obj["status"] = {}


_JOB_NAME_LABELS = ("job-name", "batch.kubernetes.io/job-name")
_CONTROLLER_UID_LABELS = ("controller-uid", "batch.kubernetes.io/controller-uid")


def generate_selector(obj: dict[str, Any], spec: dict[str, Any]) -> None:
    """generateSelector (the job strategy's PrepareForCreate): labels naming the Job and its uid
    on the pod template, and a selector of the uid label; what the client set is kept (validation
    judges a conflict). The field manager has run: these fields are nobody's."""
    meta = obj["metadata"]
    template = nested_dict(spec, "template")
    labels = nested_dict(nested_dict(template, "metadata"), "labels")
    for key in _JOB_NAME_LABELS:
        labels.setdefault(key, meta.get("name") or "")
    for key in _CONTROLLER_UID_LABELS:
        labels.setdefault(key, meta["uid"])
    match_labels = nested_dict(nested_dict(spec, "selector"), "matchLabels")
    match_labels.setdefault(_CONTROLLER_UID_LABELS[1], meta["uid"])
    if not meta.get("labels"):
        # Upstream's decoding of the stored Job defaults its labels from the template's again.
        meta["labels"] = dict(labels)


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

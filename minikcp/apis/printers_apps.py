"""Table printers for workloads (apps/v1 Deployment and ReplicaSet, batch/v1 Job).

Ported from kube-apiserver 1.32 (pkg/printers/internalversion/printers.go). Replica counts absent
from a stored object read as 0, except spec.replicas, which v1 defaulting sets to 1.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

from minikcp.apis import printer_base as base
from minikcp.apis.printer_docs import FIELD_DOCS
from minikcp.machinery import tables

Column = tables.Column


def _desired_replicas(spec: base.Obj) -> int:
    return base.integer(spec.get("replicas"), 1)


def _deployment_cells(obj: base.Obj, now: float) -> list[Any]:
    spec, status = base.mapping(obj.get("spec")), base.mapping(obj.get("status"))
    names, images = base.container_cells(base.template_containers(obj))
    selector = base.selector_string(spec.get("selector"))
    return [
        base.name(obj),
        f"{base.integer(status.get('readyReplicas'))}/{_desired_replicas(spec)}",
        base.integer(status.get("updatedReplicas")),
        base.integer(status.get("availableReplicas")),
        base.age(obj, now),
        names,
        images,
        "<invalid>" if selector is None else selector,
    ]


DEPLOYMENT: Final = base.Printer(
    (
        base.NAME_COLUMN,
        Column("Ready", "string", "Number of the pod with ready state"),
        Column(
            "Up-to-date",
            "string",
            FIELD_DOCS["extensions_v1beta1.DeploymentStatus.updatedReplicas"],
        ),
        Column(
            "Available",
            "string",
            FIELD_DOCS["extensions_v1beta1.DeploymentStatus.availableReplicas"],
        ),
        base.AGE_COLUMN,
        base.CONTAINERS_COLUMN,
        base.IMAGES_COLUMN,
        Column(
            "Selector",
            "string",
            FIELD_DOCS["extensions_v1beta1.DeploymentSpec.selector"],
            priority=1,
        ),
    ),
    _deployment_cells,
)


def _replicated_cells(selector: Callable[[Any], str]) -> Callable[[base.Obj, float], list[Any]]:
    """The row of a ReplicaSet or a ReplicationController, whose selectors print differently."""

    def cells(obj: base.Obj, now: float) -> list[Any]:
        spec, status = base.mapping(obj.get("spec")), base.mapping(obj.get("status"))
        names, images = base.container_cells(base.template_containers(obj))
        return [
            base.name(obj),
            _desired_replicas(spec),
            base.integer(status.get("replicas")),
            base.integer(status.get("readyReplicas")),
            base.age(obj, now),
            names,
            images,
            selector(spec.get("selector")),
        ]

    return cells


REPLICA_SET: Final = base.Printer(
    (
        base.NAME_COLUMN,
        Column("Desired", "integer", FIELD_DOCS["extensions_v1beta1.ReplicaSetSpec.replicas"]),
        Column("Current", "integer", FIELD_DOCS["extensions_v1beta1.ReplicaSetStatus.replicas"]),
        Column("Ready", "integer", FIELD_DOCS["extensions_v1beta1.ReplicaSetStatus.readyReplicas"]),
        base.AGE_COLUMN,
        base.CONTAINERS_COLUMN,
        base.IMAGES_COLUMN,
        Column(
            "Selector",
            "string",
            FIELD_DOCS["extensions_v1beta1.ReplicaSetSpec.selector"],
            priority=1,
        ),
    ),
    _replicated_cells(base.format_label_selector),
)


REPLICATION_CONTROLLER: Final = base.Printer(
    (
        base.NAME_COLUMN,
        Column("Desired", "integer", FIELD_DOCS["core_v1.ReplicationControllerSpec.replicas"]),
        Column("Current", "integer", FIELD_DOCS["core_v1.ReplicationControllerStatus.replicas"]),
        Column("Ready", "integer", FIELD_DOCS["core_v1.ReplicationControllerStatus.readyReplicas"]),
        base.AGE_COLUMN,
        base.CONTAINERS_COLUMN,
        base.IMAGES_COLUMN,
        Column(
            "Selector",
            "string",
            FIELD_DOCS["core_v1.ReplicationControllerSpec.selector"],
            priority=1,
        ),
    ),
    _replicated_cells(base.format_labels),
)


def _job_status(obj: base.Obj, conditions: Any) -> str:
    if base.condition_true(conditions, "Complete"):
        return "Complete"
    if base.condition_true(conditions, "Failed"):
        return "Failed"
    if base.metadata(obj).get("deletionTimestamp") is not None:
        return "Terminating"
    if base.condition_true(conditions, "Suspended"):
        return "Suspended"
    if base.condition_true(conditions, "FailureTarget"):
        return "FailureTarget"
    return "Running"


def _job_cells(obj: base.Obj, now: float) -> list[Any]:
    spec, status = base.mapping(obj.get("spec")), base.mapping(obj.get("status"))
    succeeded = base.integer(status.get("succeeded"))
    completions = spec.get("completions")
    if isinstance(completions, int) and not isinstance(completions, bool):
        progress = f"{succeeded}/{completions}"
    else:
        parallelism = base.integer(spec.get("parallelism"))
        progress = f"{succeeded}/1 of {parallelism}" if parallelism > 1 else f"{succeeded}/1"
    started = base.timestamp(status.get("startTime"))
    completed = base.timestamp(status.get("completionTime"))
    if started is None:
        duration = ""
    else:
        duration = tables.human_duration((now if completed is None else completed) - started)
    names, images = base.container_cells(base.template_containers(obj))
    return [
        base.name(obj),
        _job_status(obj, status.get("conditions")),
        progress,
        duration,
        base.age(obj, now),
        names,
        images,
        base.format_label_selector(spec.get("selector")),
    ]


JOB: Final = base.Printer(
    (
        base.NAME_COLUMN,
        Column("Status", "string", "Status of the job."),
        Column("Completions", "string", FIELD_DOCS["batch_v1.JobStatus.succeeded"]),
        Column("Duration", "string", "Time required to complete the job."),
        base.AGE_COLUMN,
        base.CONTAINERS_COLUMN,
        base.IMAGES_COLUMN,
        Column("Selector", "string", FIELD_DOCS["batch_v1.JobSpec.selector"], priority=1),
    ),
    _job_cells,
)

"""Table printers for the workload kinds beside Deployments: StatefulSet, DaemonSet,
ControllerRevision, CronJob, HorizontalPodAutoscaler and PodDisruptionBudget.

Ported from kube-apiserver 1.32 (pkg/printers/internalversion/printers.go). Column descriptions
quoting a type's SwaggerDoc come from the field descriptions of the bundled upstream schemas.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, Final

from minikcp.apis import printer_base as base
from minikcp.apis.catalog import upstream_definitions
from minikcp.machinery import tables

Column = tables.Column


def field_doc(definition: str, field: str) -> Callable[[], str]:
    """The upstream doc string of `field` of schema `definition` (its SwaggerDoc entry), read
    from the upstream schemas when a table first asks for it."""
    return functools.partial(_field_doc, definition, field)


@functools.cache
def _field_doc(definition: str, field: str) -> str:
    schema = upstream_definitions().get(definition) or {}
    prop = (schema.get("properties") or {}).get(field) or {}
    return str(prop.get("description") or "")


def _templated(obj: base.Obj) -> tuple[str, str]:
    return base.container_cells(base.template_containers(obj))


# --- StatefulSet -------------------------------------------------------------------------------


def _stateful_set_cells(obj: base.Obj, now: float) -> list[Any]:
    spec, status = base.mapping(obj.get("spec")), base.mapping(obj.get("status"))
    names, images = _templated(obj)
    desired = base.integer(spec.get("replicas"), 1)
    ready = base.integer(status.get("readyReplicas"))
    return [base.name(obj), f"{ready}/{desired}", base.age(obj, now), names, images]


STATEFUL_SET: Final = base.Printer(
    (
        base.NAME_COLUMN,
        Column("Ready", "string", "Number of the pod with ready state"),
        base.AGE_COLUMN,
        base.CONTAINERS_COLUMN,
        base.IMAGES_COLUMN,
    ),
    _stateful_set_cells,
)

# --- DaemonSet ---------------------------------------------------------------------------------

_DS_STATUS = "io.k8s.api.apps.v1.DaemonSetStatus"


def _daemon_set_cells(obj: base.Obj, now: float) -> list[Any]:
    spec, status = base.mapping(obj.get("spec")), base.mapping(obj.get("status"))
    pod_spec = base.mapping(base.mapping(spec.get("template")).get("spec"))
    names, images = _templated(obj)
    return [
        base.name(obj),
        base.integer(status.get("desiredNumberScheduled")),
        base.integer(status.get("currentNumberScheduled")),
        base.integer(status.get("numberReady")),
        base.integer(status.get("updatedNumberScheduled")),
        base.integer(status.get("numberAvailable")),
        base.format_labels(pod_spec.get("nodeSelector")),
        base.age(obj, now),
        names,
        images,
        base.format_label_selector(spec.get("selector")),
    ]


DAEMON_SET: Final = base.Printer(
    (
        base.NAME_COLUMN,
        Column("Desired", "integer", field_doc(_DS_STATUS, "desiredNumberScheduled")),
        Column("Current", "integer", field_doc(_DS_STATUS, "currentNumberScheduled")),
        Column("Ready", "integer", field_doc(_DS_STATUS, "numberReady")),
        Column("Up-to-date", "integer", field_doc(_DS_STATUS, "updatedNumberScheduled")),
        Column("Available", "integer", field_doc(_DS_STATUS, "numberAvailable")),
        Column("Node Selector", "string", field_doc("io.k8s.api.core.v1.PodSpec", "nodeSelector")),
        base.AGE_COLUMN,
        base.CONTAINERS_COLUMN,
        base.IMAGES_COLUMN,
        Column(
            "Selector",
            "string",
            field_doc("io.k8s.api.apps.v1.DaemonSetSpec", "selector"),
            priority=1,
        ),
    ),
    _daemon_set_cells,
)

# --- ControllerRevision ------------------------------------------------------------------------


def controller_name(obj: base.Obj) -> str:
    """`formatResourceName` of the controller owner: `kind.group/name`, "<none>" without one."""
    for ref in base.sequence(base.metadata(obj).get("ownerReferences")):
        ref = base.mapping(ref)
        if ref.get("controller") is True:
            group = base.string(ref.get("apiVersion")).rpartition("/")[0]
            kind = base.string(ref.get("kind"))
            group_kind = f"{kind}.{group}" if group else kind
            name = base.string(ref.get("name"))
            return f"{group_kind.lower()}/{name}" if group_kind else name
    return base.NONE


def _controller_revision_cells(obj: base.Obj, now: float) -> list[Any]:
    return [
        base.name(obj),
        controller_name(obj),
        base.integer(obj.get("revision")),
        base.age(obj, now),
    ]


CONTROLLER_REVISION: Final = base.Printer(
    (
        base.NAME_COLUMN,
        Column("Controller", "string", "Controller of the object"),
        Column(
            "Revision", "string", field_doc("io.k8s.api.apps.v1.ControllerRevision", "revision")
        ),
        base.AGE_COLUMN,
    ),
    _controller_revision_cells,
)

# --- CronJob -----------------------------------------------------------------------------------

_CJ_SPEC = "io.k8s.api.batch.v1.CronJobSpec"
_CJ_STATUS = "io.k8s.api.batch.v1.CronJobStatus"


def _cron_job_cells(obj: base.Obj, now: float) -> list[Any]:
    spec, status = base.mapping(obj.get("spec")), base.mapping(obj.get("status"))
    job_spec = base.mapping(base.mapping(spec.get("jobTemplate")).get("spec"))
    containers = base.sequence(
        base.mapping(base.mapping(job_spec.get("template")).get("spec")).get("containers")
    )
    names, images = base.container_cells(containers)
    last = status.get("lastScheduleTime")
    suspend = spec.get("suspend")
    return [
        base.name(obj),
        base.string(spec.get("schedule")),
        base.string(spec.get("timeZone")) or base.NONE,
        ("True" if suspend else "False") if isinstance(suspend, bool) else "<unset>",
        len(base.sequence(status.get("active"))),
        base.since(last, now) if base.timestamp(last) is not None else base.NONE,
        base.age(obj, now),
        names,
        images,
        base.format_label_selector(job_spec.get("selector")),
    ]


CRON_JOB: Final = base.Printer(
    (
        base.NAME_COLUMN,
        Column("Schedule", "string", field_doc(_CJ_SPEC, "schedule")),
        Column("Timezone", "string", field_doc(_CJ_SPEC, "timeZone")),
        Column("Suspend", "boolean", field_doc(_CJ_SPEC, "suspend")),
        Column("Active", "integer", field_doc(_CJ_STATUS, "active")),
        Column("Last Schedule", "string", field_doc(_CJ_STATUS, "lastScheduleTime")),
        base.AGE_COLUMN,
        base.CONTAINERS_COLUMN,
        base.IMAGES_COLUMN,
        Column(
            "Selector", "string", field_doc("io.k8s.api.batch.v1.JobSpec", "selector"), priority=1
        ),
    ),
    _cron_job_cells,
)

# --- HorizontalPodAutoscaler -------------------------------------------------------------------


def _quantity(value: Any) -> str:
    return str(value) if value is not None else "0"


def _metric(spec: base.Obj, status: base.Obj) -> str:
    kind = spec.get("type")
    unknown = "<unknown>"
    if kind in ("External", "Object"):
        source = base.mapping(spec.get(kind.lower()))
        target = base.mapping(source.get("target"))
        current = base.mapping(base.mapping(status.get(kind.lower())).get("current"))
        has_status = bool(status.get(kind.lower()))
        if target.get("averageValue") is not None:
            now = current.get("averageValue")
            shown = _quantity(now) if has_status and now is not None else unknown
            return f"{shown}/{_quantity(target.get('averageValue'))} (avg)"
        shown = _quantity(current.get("value")) if has_status else unknown
        return f"{shown}/{_quantity(target.get('value'))}"
    if kind == "Pods":
        target = base.mapping(base.mapping(spec.get("pods")).get("target"))
        current = base.mapping(base.mapping(status.get("pods")).get("current"))
        shown = _quantity(current.get("averageValue")) if status.get("pods") else unknown
        return f"{shown}/{_quantity(target.get('averageValue'))}"
    if kind in ("Resource", "ContainerResource"):
        field = "resource" if kind == "Resource" else "containerResource"
        source = base.mapping(spec.get(field))
        target = base.mapping(source.get("target"))
        current = base.mapping(base.mapping(status.get(field)).get("current"))
        name = base.string(source.get("name"))
        if target.get("averageValue") is not None:
            shown = _quantity(current.get("averageValue")) if status.get(field) else unknown
            return f"{name}: {shown}/{_quantity(target.get('averageValue'))}"
        utilization = current.get("averageUtilization")
        shown = f"{utilization}%" if status.get(field) and utilization is not None else unknown
        wanted = target.get("averageUtilization")
        return f"{name}: {shown}/{wanted}%" if wanted is not None else f"{name}: {shown}/<auto>"
    return "<unknown type>"


def format_hpa_metrics(specs: Any, statuses: Any) -> str:
    """`formatHPAMetrics`: at most two metrics as current/target, then "+ N more..."."""
    specs, statuses = base.sequence(specs), base.sequence(statuses)
    if not specs:
        return base.NONE
    shown = [
        _metric(base.mapping(spec), base.mapping(statuses[i]) if i < len(statuses) else {})
        for i, spec in enumerate(specs)
    ]
    if len(shown) > 2:
        return ", ".join(shown[:2]) + f" + {len(shown) - 2} more..."
    return ", ".join(shown)


_HPA_SPEC = "io.k8s.api.autoscaling.v2.HorizontalPodAutoscalerSpec"


def _hpa_cells(obj: base.Obj, now: float) -> list[Any]:
    spec, status = base.mapping(obj.get("spec")), base.mapping(obj.get("status"))
    ref = base.mapping(spec.get("scaleTargetRef"))
    min_replicas = spec.get("minReplicas")
    if "targetCPUUtilizationPercentage" in spec or "metrics" not in spec:
        metrics = _v1_metrics(spec, status)
    else:
        metrics = format_hpa_metrics(spec.get("metrics"), status.get("currentMetrics"))
    return [
        base.name(obj),
        f"{base.string(ref.get('kind'))}/{base.string(ref.get('name'))}",
        metrics,
        str(min_replicas) if isinstance(min_replicas, int) else "<unset>",
        base.integer(spec.get("maxReplicas")),
        base.integer(status.get("currentReplicas")),
        base.age(obj, now),
    ]


def _v1_metrics(spec: base.Obj, status: base.Obj) -> str:
    """An autoscaling/v1 object: its CPU target as the v2 Resource metric it converts to."""
    target = spec.get("targetCPUUtilizationPercentage")
    current = status.get("currentCPUUtilizationPercentage")
    shown = f"{current}%" if current is not None else "<unknown>"
    return f"cpu: {shown}/{target}%" if target is not None else f"cpu: {shown}/<auto>"


HORIZONTAL_POD_AUTOSCALER: Final = base.Printer(
    (
        base.NAME_COLUMN,
        Column("Reference", "string", field_doc(_HPA_SPEC, "scaleTargetRef")),
        Column("Targets", "string", field_doc(_HPA_SPEC, "metrics")),
        Column("MinPods", "string", field_doc(_HPA_SPEC, "minReplicas")),
        Column("MaxPods", "string", field_doc(_HPA_SPEC, "maxReplicas")),
        Column(
            "Replicas",
            "string",
            field_doc("io.k8s.api.autoscaling.v2.HorizontalPodAutoscalerStatus", "currentReplicas"),
        ),
        base.AGE_COLUMN,
    ),
    _hpa_cells,
)

# --- PodDisruptionBudget -----------------------------------------------------------------------


def _int_or_string(value: Any) -> str:
    return "N/A" if value is None else str(value)


def _pdb_cells(obj: base.Obj, now: float) -> list[Any]:
    spec, status = base.mapping(obj.get("spec")), base.mapping(obj.get("status"))
    return [
        base.name(obj),
        _int_or_string(spec.get("minAvailable")),
        _int_or_string(spec.get("maxUnavailable")),
        base.integer(status.get("disruptionsAllowed")),
        base.age(obj, now),
    ]


POD_DISRUPTION_BUDGET: Final = base.Printer(
    (
        base.NAME_COLUMN,
        Column("Min Available", "string", "The minimum number of pods that must be available."),
        Column("Max Unavailable", "string", "The maximum number of pods that may be unavailable."),
        Column(
            "Allowed Disruptions",
            "integer",
            "Calculated number of pods that may be disrupted at this time.",
        ),
        base.AGE_COLUMN,
    ),
    _pdb_cells,
)

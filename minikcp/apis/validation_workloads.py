"""Hand-written validation of apps/v1 StatefulSet, DaemonSet and ControllerRevision and of batch/v1
CronJob, after pkg/apis/apps/validation and pkg/apis/batch/validation (1.32); messages are
upstream's. The cron schedule is checked with robfig/cron's standard parser (`cron_schedule`).
"""

from __future__ import annotations

import zoneinfo
from collections.abc import Mapping
from typing import Any

from minikcp.apis import validation_apps as va
from minikcp.apis import validation_core as vc
from minikcp.apis import validation_meta as vm
from minikcp.apis.validation_meta import child
from minikcp.machinery import cron_schedule
from minikcp.machinery.errors import Cause

Obj = Mapping[str, Any]


def _map(value: Any) -> Obj:
    return value if isinstance(value, Mapping) else {}


def _selector_and_template(spec: Obj, *, kind: str) -> list[Cause]:
    """The selector is required and not empty, the template's labels match it, pods always
    restart and have no deadline (ValidateStatefulSetSpec / ValidateDaemonSetSpec)."""
    selector = spec.get("selector")
    causes: list[Cause] = []
    if selector is None:
        causes.append(vm.required("spec.selector"))
    else:
        causes.extend(vm.label_selector(selector, "spec.selector"))
        if isinstance(selector, Mapping) and vm.selector_is_empty(selector):
            detail = f"empty selector is invalid for {kind.lower()}"
            causes.append(va._selector_cause("spec.selector", selector, detail))
    template = _map(spec.get("template"))
    labels = _map(template.get("metadata")).get("labels")
    if (
        isinstance(selector, Mapping)
        and not vm.selector_is_empty(selector)
        and not vm.selector_matches(selector, labels)
    ):
        causes.append(va._mismatch(labels, "spec.template.metadata.labels"))
    causes.extend(vc.pod_template(template, "spec.template"))
    pod = _map(template.get("spec"))
    restart = pod.get("restartPolicy") or ""
    if restart and restart != "Always":
        causes.append(vm.not_supported("spec.template.spec.restartPolicy", restart, ("Always",)))
    if pod.get("activeDeadlineSeconds") is not None:
        causes.append(
            vm.forbidden(
                "spec.template.spec.activeDeadlineSeconds",
                f"activeDeadlineSeconds in {kind} is not Supported",
            )
        )
    return causes


# --- StatefulSet -------------------------------------------------------------------------------

_STS_UPDATABLE = (
    "replicas",
    "ordinals",
    "template",
    "updateStrategy",
    "persistentVolumeClaimRetentionPolicy",
    "minReadySeconds",
)
_STS_UPDATE_MESSAGE = (
    "updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', "
    "'updateStrategy', 'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden"
)
_RETENTION = ("Retain", "Delete")


def _stateful_set_spec(spec: Obj) -> list[Cause]:
    causes: list[Cause] = []
    policy = spec.get("podManagementPolicy") or ""
    if not policy:
        causes.append(vm.required("spec.podManagementPolicy"))
    elif policy not in ("OrderedReady", "Parallel"):
        causes.append(
            vm.invalid("spec.podManagementPolicy", policy, "must be 'OrderedReady' or 'Parallel'")
        )
    strategy = _map(spec.get("updateStrategy"))
    kind = strategy.get("type") or ""
    rolling = strategy.get("rollingUpdate")
    if not kind:
        causes.append(vm.required("spec.updateStrategy"))
    elif kind == "OnDelete":
        if rolling is not None:
            causes.append(
                vm.invalid(
                    "spec.updateStrategy.rollingUpdate",
                    rolling,
                    "only allowed for updateStrategy 'RollingUpdate'",
                )
            )
    elif kind == "RollingUpdate":
        partition = _map(rolling).get("partition")
        causes.extend(vm.nonnegative("spec.updateStrategy.rollingUpdate.partition", partition))
    else:
        causes.append(
            vm.invalid("spec.updateStrategy", strategy, "must be 'RollingUpdate' or 'OnDelete'")
        )
    retention = _map(spec.get("persistentVolumeClaimRetentionPolicy"))
    for field in ("whenDeleted", "whenScaled"):
        value = retention.get(field)
        if value is not None and value not in _RETENTION:
            path = child("spec.persistentVolumeClaimRetentionPolicy", field)
            causes.append(vm.not_supported(path, value, _RETENTION))
    ordinals = spec.get("ordinals")
    if isinstance(ordinals, Mapping):
        causes.extend(vm.nonnegative("spec.ordinals.start", ordinals.get("start")))
    causes.extend(vm.nonnegative("spec.replicas", spec.get("replicas")))
    causes.extend(vm.nonnegative("spec.minReadySeconds", spec.get("minReadySeconds")))
    causes.extend(_selector_and_template(spec, kind="StatefulSet"))
    for i, claim in enumerate(spec.get("volumeClaimTemplates") or ()):
        name = _map(_map(claim).get("metadata")).get("name") or ""
        path = vm.index("spec.volumeClaimTemplates", i)
        if not name:
            causes.append(
                vm.required(child(path, "metadata", "name"), "name or generateName is required")
            )
    return causes


def validate_stateful_set(obj: Obj, old: Obj | None) -> list[Cause]:
    causes = vm.object_meta(obj, namespaced=True, name_check=vm.dns1123_subdomain, old=old)
    spec = _map(obj.get("spec"))
    causes.extend(_stateful_set_spec(spec))
    if old is not None:
        old_spec = _map(old.get("spec"))
        kept = {k: v for k, v in spec.items() if k not in _STS_UPDATABLE}
        old_kept = {k: v for k, v in old_spec.items() if k not in _STS_UPDATABLE}
        if kept != old_kept:
            causes.append(vm.forbidden("spec", _STS_UPDATE_MESSAGE))
    return causes


# --- DaemonSet ---------------------------------------------------------------------------------


def _daemon_set_strategy(strategy: Any) -> list[Cause]:
    strategy = _map(strategy)
    kind = strategy.get("type")
    path = "spec.updateStrategy"
    if kind not in ("OnDelete", "RollingUpdate"):
        return [vm.not_supported(child(path, "type"), kind, ("OnDelete", "RollingUpdate"))]
    rolling = strategy.get("rollingUpdate")
    if kind == "OnDelete" or rolling is None:
        if kind == "RollingUpdate":
            return [vm.required(child(path, "rollingUpdate"))]
        return []
    rolling = _map(rolling)
    causes: list[Cause] = []
    unavailable, surge = rolling.get("maxUnavailable"), rolling.get("maxSurge")
    unavailable_path = child(path, "rollingUpdate", "maxUnavailable")
    causes.extend(va._positive_int_or_percent(unavailable, unavailable_path))
    causes.extend(va._positive_int_or_percent(surge, child(path, "rollingUpdate", "maxSurge")))
    if va._int_or_percent(unavailable) == 0 and va._int_or_percent(surge) == 0:
        causes.append(vm.invalid(unavailable_path, unavailable, "cannot be 0 when maxSurge is 0"))
    return causes


def validate_daemon_set(obj: Obj, old: Obj | None) -> list[Cause]:
    causes = vm.object_meta(obj, namespaced=True, name_check=vm.dns1123_subdomain, old=old)
    spec = _map(obj.get("spec"))
    causes.extend(_selector_and_template(spec, kind="DaemonSet"))
    causes.extend(vm.nonnegative("spec.minReadySeconds", spec.get("minReadySeconds")))
    causes.extend(vm.nonnegative("spec.revisionHistoryLimit", spec.get("revisionHistoryLimit")))
    causes.extend(_daemon_set_strategy(spec.get("updateStrategy")))
    return causes + va._selector_update(obj, old)


# --- ControllerRevision ------------------------------------------------------------------------


def validate_controller_revision(obj: Obj, old: Obj | None) -> list[Cause]:
    causes = vm.object_meta(obj, namespaced=True, name_check=vm.dns1123_subdomain, old=old)
    if obj.get("data") is None:
        causes.append(vm.required("data", "data is mandatory"))
    causes.extend(vm.nonnegative("revision", obj.get("revision")))
    if old is not None:
        causes.extend(vm.immutable("data", obj.get("data"), old.get("data")))
    return causes


# --- CronJob -----------------------------------------------------------------------------------

_CONCURRENCY = ("Allow", "Forbid", "Replace")
# A CronJob's name leaves room for the 11-character suffix of the Jobs it creates.
_CRON_JOB_NAME_MAX = 52


def _schedule(spec: Obj) -> list[Cause]:
    schedule = spec.get("schedule")
    if not isinstance(schedule, str) or not schedule:
        return [vm.required("spec.schedule")]
    causes: list[Cause] = []
    problem = cron_schedule.error_of(schedule)
    if problem is not None:
        causes.append(vm.invalid("spec.schedule", schedule, problem))
    if "TZ" in schedule:
        if spec.get("timeZone") is not None:
            detail = "cannot use both timeZone field and TZ or CRON_TZ in schedule"
        else:
            detail = "cannot use TZ or CRON_TZ in schedule, use timeZone field instead"
        causes.append(vm.invalid("spec.schedule", schedule, detail))
    return causes


def _time_zone(zone: Any) -> list[Cause]:
    if zone is None:
        return []
    if not isinstance(zone, str) or not zone or zone.strip() != zone or zone == "Local":
        detail = (
            "timeZone must be an explicit time zone as defined in https://www.iana.org/time-zones"
        )
        return [vm.invalid("spec.timeZone", zone, detail)]
    try:
        zoneinfo.ZoneInfo(zone)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        return [vm.invalid("spec.timeZone", zone, f"unknown time zone {zone}")]
    return []


def _job_template(template: Any) -> list[Cause]:
    """ValidateJobTemplateSpec: the Job spec less its selector, which the controller generates."""
    spec = _map(_map(template).get("spec"))
    path = "spec.jobTemplate.spec"
    causes: list[Cause] = []
    for field in ("parallelism", "completions", "activeDeadlineSeconds", "backoffLimit"):
        causes.extend(vm.nonnegative(child(path, field), spec.get(field)))
    if spec.get("selector") is not None:
        causes.append(
            va._selector_cause(
                child(path, "selector"), spec["selector"], "`selector` will be auto-generated"
            )
        )
    if spec.get("manualSelector") is True:
        causes.append(vm.not_supported(child(path, "manualSelector"), True, ("nil", "false")))
    causes.extend(
        vc.pod_template(
            spec.get("template"), child(path, "template"), restart_policies=("OnFailure", "Never")
        )
    )
    return causes


def validate_cron_job(obj: Obj, old: Obj | None) -> list[Cause]:
    causes = vm.object_meta(obj, namespaced=True, name_check=vm.dns1123_subdomain, old=old)
    name = _map(obj.get("metadata")).get("name")
    if isinstance(name, str) and len(name) > _CRON_JOB_NAME_MAX:
        causes.append(vm.invalid("metadata.name", name, "must be no more than 52 characters"))
    spec = _map(obj.get("spec"))
    causes.extend(_schedule(spec))
    causes.extend(_time_zone(spec.get("timeZone")))
    policy = spec.get("concurrencyPolicy") or ""
    if not policy:
        causes.append(vm.required("spec.concurrencyPolicy"))
    elif policy not in _CONCURRENCY:
        causes.append(vm.not_supported("spec.concurrencyPolicy", policy, _CONCURRENCY))
    for field in (
        "startingDeadlineSeconds",
        "successfulJobsHistoryLimit",
        "failedJobsHistoryLimit",
    ):
        causes.extend(vm.nonnegative(child("spec", field), spec.get(field)))
    causes.extend(_job_template(spec.get("jobTemplate")))
    return causes


VALIDATORS = {
    ("apps", "StatefulSet"): validate_stateful_set,
    ("apps", "DaemonSet"): validate_daemon_set,
    ("apps", "ControllerRevision"): validate_controller_revision,
    ("batch", "CronJob"): validate_cron_job,
}

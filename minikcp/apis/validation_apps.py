"""Hand-written validation of workload kinds: apps/v1 Deployment and ReplicaSet, core/v1
ReplicationController, batch/v1 Job.

After pkg/apis/apps/validation and pkg/apis/batch/validation (1.32); messages match upstream's.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from minikcp.apis import validation_core as vc
from minikcp.apis import validation_meta as vm
from minikcp.apis.validation_meta import child
from minikcp.machinery.errors import Cause

Obj = Mapping[str, Any]

_PERCENT = re.compile(r"^[0-9]+%$")


def _map(value: Any) -> Obj:
    return value if isinstance(value, Mapping) else {}


def go_label_selector(selector: Any) -> str:
    """A LabelSelector as Go's %#v prints it in `field is immutable` and selector errors."""
    if not isinstance(selector, Mapping):
        return "null"
    labels = selector.get("matchLabels")
    if labels is None:
        labels_text = "map[string]string(nil)"
    else:
        body = ", ".join(f"{json.dumps(k)}:{json.dumps(labels[k])}" for k in sorted(labels))
        labels_text = f"map[string]string{{{body}}}"
    expressions = selector.get("matchExpressions")
    if not expressions:
        expr_text = "[]v1.LabelSelectorRequirement(nil)"
    else:
        items = ", ".join(
            f"v1.LabelSelectorRequirement{{Key:{json.dumps(e.get('key', ''))}, "
            f"Operator:{json.dumps(e.get('operator', ''))}, "
            f"Values:{vm.go_value(e.get('values') or [])}}}"
            for e in expressions
        )
        expr_text = f"[]v1.LabelSelectorRequirement{{{items}}}"
    return f"v1.LabelSelector{{MatchLabels:{labels_text}, MatchExpressions:{expr_text}}}"


def _selector_cause(path: str, selector: Any, detail: str) -> Cause:
    message = f"Invalid value: {go_label_selector(selector)}: {detail}"
    return Cause("FieldValueInvalid", message, path)


def _labels_text(labels: Any) -> str:
    return vm.go_value(labels) if isinstance(labels, Mapping) else "map[string]string(nil)"


def _template_match(selector: Any, template: Obj, path: str) -> list[Cause]:
    """Upstream: a nil selector matches nothing, an empty one everything."""
    labels = _map(template.get("metadata")).get("labels")
    if isinstance(selector, Mapping) and (
        vm.selector_is_empty(selector) or vm.selector_matches(selector, labels)
    ):
        return []
    return [_mismatch(labels, child(path, "metadata", "labels"))]


def _mismatch(labels: Any, path: str) -> Cause:
    detail = "`selector` does not match template `labels`"
    return Cause("FieldValueInvalid", f"Invalid value: {_labels_text(labels)}: {detail}", path)


def _replica_set_template(selector: Any, template: Any, path: str) -> list[Cause]:
    template = _map(template)
    causes = _template_match(selector, template, path)
    causes.extend(vc.pod_template(template, path))
    spec = _map(template.get("spec"))
    restart = spec.get("restartPolicy") or ""
    if restart and restart != "Always":
        causes.append(vm.not_supported(child(path, "spec", "restartPolicy"), restart, ("Always",)))
    if spec.get("activeDeadlineSeconds") is not None:
        causes.append(
            vm.forbidden(
                child(path, "spec", "activeDeadlineSeconds"),
                "activeDeadlineSeconds in ReplicaSet is not Supported",
            )
        )
    return causes


def _int_or_percent(value: Any) -> int:
    if isinstance(value, str):
        return int(value[:-1]) if _PERCENT.match(value) else 0
    return value if isinstance(value, int) else 0


def _positive_int_or_percent(value: Any, path: str) -> list[Cause]:
    if isinstance(value, str):
        if not _PERCENT.match(value):
            msg = vm.regex_error(
                "a valid percent string must be a numeric string followed by an ending '%'",
                "[0-9]+%",
                "1%",
                "93%",
            )
            return [Cause("FieldValueInvalid", f"Invalid value: {value}: {msg}", path)]
        return []
    return vm.nonnegative(path, value)


def _strategy(strategy: Any, path: str) -> list[Cause]:
    strategy = _map(strategy)
    kind = strategy.get("type")
    rolling = strategy.get("rollingUpdate")
    if kind == "Recreate":
        if rolling is not None:
            detail = "may not be specified when strategy `type` is 'Recreate'"
            return [vm.forbidden(child(path, "rollingUpdate"), detail)]
        return []
    if kind == "RollingUpdate":
        if not isinstance(rolling, Mapping):
            return [
                vm.required(
                    child(path, "rollingUpdate"), "this should be defaulted and never be nil"
                )
            ]
        unavailable, surge = rolling.get("maxUnavailable"), rolling.get("maxSurge")
        unavailable_path = child(path, "rollingUpdate", "maxUnavailable")
        causes = _positive_int_or_percent(unavailable, unavailable_path)
        causes += _positive_int_or_percent(surge, child(path, "rollingUpdate", "maxSurge"))
        if _int_or_percent(unavailable) == 0 and _int_or_percent(surge) == 0:
            message = f"Invalid value: {unavailable}: may not be 0 when `maxSurge` is 0"
            causes.append(Cause("FieldValueInvalid", message, unavailable_path))
        if isinstance(unavailable, str) and _int_or_percent(unavailable) > 100:
            message = f"Invalid value: {unavailable}: must not be greater than 100%"
            causes.append(Cause("FieldValueInvalid", message, unavailable_path))
        return causes
    return [vm.not_supported(path, kind, ("Recreate", "RollingUpdate"))]


def _selector(spec: Obj, path: str, *, kind: str) -> list[Cause]:
    selector = spec.get("selector")
    if selector is None:
        return [vm.required(child(path, "selector"))]
    causes = vm.label_selector(selector, child(path, "selector"))
    if isinstance(selector, Mapping) and vm.selector_is_empty(selector):
        causes.append(
            _selector_cause(
                child(path, "selector"), selector, f"empty selector is invalid for {kind}"
            )
        )
    return causes


def _replicated_spec(spec: Obj, *, kind: str) -> list[Cause]:
    causes = vm.nonnegative("spec.replicas", spec.get("replicas"))
    causes.extend(_selector(spec, "spec", kind=kind))
    causes.extend(
        _replica_set_template(spec.get("selector"), spec.get("template"), "spec.template")
    )
    causes.extend(vm.nonnegative("spec.minReadySeconds", spec.get("minReadySeconds")))
    return causes


def _selector_update(obj: Obj, old: Obj | None) -> list[Cause]:
    if old is None:
        return []
    new_selector = _map(obj.get("spec")).get("selector")
    old_selector = _map(old.get("spec")).get("selector")
    if new_selector != old_selector:
        return [_selector_cause("spec.selector", new_selector, "field is immutable")]
    return []


def validate_deployment(obj: Obj, old: Obj | None) -> list[Cause]:
    causes = vm.object_meta(obj, namespaced=True, name_check=vm.dns1123_subdomain, old=old)
    spec = _map(obj.get("spec"))
    causes.extend(_replicated_spec(spec, kind="deployment"))
    causes.extend(_strategy(spec.get("strategy"), "spec.strategy"))
    causes.extend(vm.nonnegative("spec.revisionHistoryLimit", spec.get("revisionHistoryLimit")))
    deadline = spec.get("progressDeadlineSeconds")
    if isinstance(deadline, int):
        causes.extend(vm.nonnegative("spec.progressDeadlineSeconds", deadline))
        min_ready = spec.get("minReadySeconds") or 0
        if isinstance(min_ready, int) and deadline <= min_ready:
            causes.append(
                vm.invalid(
                    "spec.progressDeadlineSeconds", deadline, "must be greater than minReadySeconds"
                )
            )
    return causes + _selector_update(obj, old)


def validate_replica_set(obj: Obj, old: Obj | None) -> list[Cause]:
    causes = vm.object_meta(obj, namespaced=True, name_check=vm.dns1123_subdomain, old=old)
    causes.extend(_replicated_spec(_map(obj.get("spec")), kind="replicaset"))
    return causes + _selector_update(obj, old)


def validate_replication_controller(obj: Obj, old: Obj | None) -> list[Cause]:
    """ValidateReplicationController: a map selector, the template checked for RC use."""
    causes = vm.object_meta(obj, namespaced=True, name_check=vm.dns1123_subdomain, old=old)
    spec = _map(obj.get("spec"))
    causes.extend(vm.nonnegative("spec.minReadySeconds", spec.get("minReadySeconds")))
    selector = _map(spec.get("selector"))
    if not selector:
        causes.append(vm.required("spec.selector"))
    causes.extend(vm.nonnegative("spec.replicas", spec.get("replicas")))
    template = spec.get("template")
    if not isinstance(template, Mapping):
        return [*causes, vm.required("spec.template")]
    labels = _map(template.get("metadata")).get("labels")
    if selector and any(_map(labels).get(k) != v for k, v in selector.items()):
        causes.append(_mismatch(labels, "spec.template.metadata.labels"))
    causes.extend(vc.pod_template(template, "spec.template"))
    pod_spec = _map(template.get("spec"))
    restart = pod_spec.get("restartPolicy") or ""
    if restart != "Always":
        causes.append(vm.not_supported("spec.template.spec.restartPolicy", restart, ("Always",)))
    if pod_spec.get("activeDeadlineSeconds") is not None:
        causes.append(
            vm.forbidden(
                "spec.template.spec.activeDeadlineSeconds",
                "activeDeadlineSeconds in ReplicationController is not Supported",
            )
        )
    return causes


def validate_job(obj: Obj, old: Obj | None) -> list[Cause]:
    causes = vm.object_meta(obj, namespaced=True, name_check=vm.dns1123_subdomain, old=old)
    spec = _map(obj.get("spec"))
    for field in ("parallelism", "completions", "activeDeadlineSeconds", "backoffLimit"):
        causes.extend(vm.nonnegative(child("spec", field), spec.get(field)))
    mode = spec.get("completionMode")
    if mode is not None and mode not in ("NonIndexed", "Indexed"):
        causes.append(vm.not_supported("spec.completionMode", mode, ("NonIndexed", "Indexed")))
    if mode == "Indexed" and spec.get("completions") is None:
        causes.append(vm.required("spec.completions", "when completion mode is Indexed"))
    selector = spec.get("selector")
    if selector is None:
        causes.append(vm.required("spec.selector"))
    else:
        causes.extend(vm.label_selector(selector, "spec.selector"))
        template = _map(spec.get("template"))
        labels = _map(template.get("metadata")).get("labels")
        if isinstance(selector, Mapping) and not vm.selector_matches(selector, labels):
            causes.append(_mismatch(labels, "spec.template.metadata.labels"))
    policies = ("OnFailure", "Never")
    causes.extend(vc.pod_template(spec.get("template"), "spec.template", restart_policies=policies))
    if old is not None:
        causes.extend(_job_update(spec, _map(old.get("spec"))))
    return causes


def _job_update(spec: Obj, old_spec: Obj) -> list[Cause]:
    causes = vm.immutable("spec.completions", spec.get("completions"), old_spec.get("completions"))
    causes.extend(vm.immutable("spec.selector", spec.get("selector"), old_spec.get("selector")))
    causes.extend(
        vm.immutable(
            "spec.completionMode", spec.get("completionMode"), old_spec.get("completionMode")
        )
    )
    if not old_spec.get("suspend") and spec.get("template") != old_spec.get("template"):
        causes.extend(vm.immutable("spec.template", spec.get("template"), old_spec.get("template")))
    return causes


VALIDATORS = {
    ("apps", "Deployment"): validate_deployment,
    ("apps", "ReplicaSet"): validate_replica_set,
    ("batch", "Job"): validate_job,
    ("", "ReplicationController"): validate_replication_controller,
}

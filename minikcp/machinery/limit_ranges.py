"""LimitRange enforcement, after plugin/pkg/admission/limitranger: container defaults on pods,
min/max/maxLimitRequestRatio per Container, Pod and PersistentVolumeClaim, upstream's messages.

Upstream walks Go maps, so the order of several messages varies there; here resources come in
name order within min, max and ratio.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from minikcp.machinery.quantity import Quantity
from minikcp.machinery.quota import ResourceList, parse_list
from minikcp.machinery.quota_usage import pod_limits, pod_requests

ANNOTATION = "kubernetes.io/limit-ranger"


def _items(limit_range: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    limits = (limit_range.get("spec") or {}).get("limits")
    return [i for i in limits if isinstance(i, Mapping)] if isinstance(limits, list) else []


def _containers(pod: Mapping[str, Any]) -> Iterable[tuple[str, dict[str, Any]]]:
    spec = pod.get("spec") or {}
    for kind, field in (("container", "containers"), ("init container", "initContainers")):
        for container in spec.get(field) or ():
            if isinstance(container, dict):
                yield kind, container


def apply_defaults(pod: dict[str, Any], limit_range: Mapping[str, Any]) -> None:
    """`PodMutateLimitFunc`: the Container item's default (limits) and defaultRequest (requests)
    for containers that do not name them, recorded in the `kubernetes.io/limit-ranger`
    annotation."""
    requests: dict[str, Any] = {}
    limits: dict[str, Any] = {}
    for item in _items(limit_range):
        if item.get("type") == "Container":
            requests.update(item.get("defaultRequest") or {})
            limits.update(item.get("default") or {})
    notes: list[str] = []
    for kind, container in _containers(pod):
        set_requests = _merge(container, "requests", requests)
        set_limits = _merge(container, "limits", limits)
        name = container.get("name", "")
        if set_requests:
            notes.append(f"{', '.join(sorted(set_requests))} request for {kind} {name}")
        if set_limits:
            notes.append(f"{', '.join(sorted(set_limits))} limit for {kind} {name}")
    if notes:
        meta = pod.setdefault("metadata", {})
        annotations = meta.get("annotations")
        if not isinstance(annotations, dict):
            annotations = meta["annotations"] = {}
        annotations[ANNOTATION] = "LimitRanger plugin set: " + "; ".join(notes)


def _merge(container: dict[str, Any], field: str, defaults: Mapping[str, Any]) -> list[str]:
    if not defaults:
        return []
    resources = container.get("resources")
    if not isinstance(resources, dict):
        resources = container["resources"] = {}
    present = resources.get(field)
    if not isinstance(present, dict):
        present = {}
    added = [name for name in defaults if name not in present]
    if added:
        resources[field] = {**present, **{name: defaults[name] for name in added}}
    return added


def _compared(*values: Quantity) -> list[int]:
    """`requestLimitEnforcedValues`: milli-units (upstream falls back to units only where
    milli-units would overflow an int64, beyond what objects ask for)."""
    return [v.milli_value() for v in values]


def _min(kind: str, name: str, enforced: Quantity, req: ResourceList, lim: ResourceList) -> str:
    if name not in req:
        return f"minimum {name} usage per {kind} is {enforced}.  No request is specified"
    r, e = _compared(req[name], enforced)
    if r < e:
        return f"minimum {name} usage per {kind} is {enforced}, but request is {req[name]}"
    if name in lim and _compared(lim[name])[0] < e:
        return f"minimum {name} usage per {kind} is {enforced}, but limit is {lim[name]}"
    return ""


def _max(kind: str, name: str, enforced: Quantity, req: ResourceList, lim: ResourceList) -> str:
    if name not in lim:
        return f"maximum {name} usage per {kind} is {enforced}.  No limit is specified"
    e = _compared(enforced)[0]
    if _compared(lim[name])[0] > e:
        return f"maximum {name} usage per {kind} is {enforced}, but limit is {lim[name]}"
    if name in req and _compared(req[name])[0] > e:
        return f"maximum {name} usage per {kind} is {enforced}, but request is {req[name]}"
    return ""


def _max_request(kind: str, name: str, enforced: Quantity, req: ResourceList) -> str:
    if name not in req:
        return f"maximum {name} usage per {kind} is {enforced}.  No request is specified"
    if _compared(req[name])[0] > _compared(enforced)[0]:
        return f"maximum {name} usage per {kind} is {enforced}, but request is {req[name]}"
    return ""


def _ratio(kind: str, name: str, enforced: Quantity, req: ResourceList, lim: ResourceList) -> str:
    r = req[name].milli_value() if name in req else 0
    if not r:
        return (
            f"{name} max limit to request ratio per {kind} is {enforced}, but no request is "
            "specified or request is 0"
        )
    limit = lim[name].milli_value() if name in lim else 0
    if not limit:
        return (
            f"{name} max limit to request ratio per {kind} is {enforced}, but no limit is "
            "specified or limit is 0"
        )
    observed = limit / r
    if observed * 1000 > enforced.milli_value():
        return (
            f"{name} max limit to request ratio per {kind} is {enforced}, but provided ratio "
            f"is {observed:f}"
        )
    return ""


def _check(kind: str, item: Mapping[str, Any], req: ResourceList, lim: ResourceList) -> list[str]:
    found: list[str] = []
    for name, q in sorted(parse_list(item.get("min")).items()):
        found.append(_min(kind, name, q, req, lim))
    for name, q in sorted(parse_list(item.get("max")).items()):
        found.append(_max(kind, name, q, req, lim))
    for name, q in sorted(parse_list(item.get("maxLimitRequestRatio")).items()):
        found.append(_ratio(kind, name, q, req, lim))
    return [m for m in found if m]


def pod_violations(pod: Mapping[str, Any], limit_range: Mapping[str, Any]) -> list[str]:
    """`PodValidateLimitFunc`: what a pod breaks of one LimitRange, in upstream's words."""
    found: list[str] = []
    for item in _items(limit_range):
        kind = item.get("type")
        if kind == "Container":
            for _, container in _containers(pod):
                resources = container.get("resources") or {}
                req = parse_list(resources.get("requests"))
                lim = parse_list(resources.get("limits"))
                found += _check("Container", item, req, lim)
        elif kind == "Pod":
            found += _check("Pod", item, pod_requests(pod), pod_limits(pod))
    return found


def claim_violations(claim: Mapping[str, Any], limit_range: Mapping[str, Any]) -> list[str]:
    """`PersistentVolumeClaimValidateLimitFunc`: min and max of the claim's requests."""
    found: list[str] = []
    req = parse_list(((claim.get("spec") or {}).get("resources") or {}).get("requests"))
    for item in _items(limit_range):
        if item.get("type") != "PersistentVolumeClaim":
            continue
        for name, q in sorted(parse_list(item.get("min")).items()):
            found.append(_min("PersistentVolumeClaim", name, q, req, {}))
        for name, q in sorted(parse_list(item.get("max")).items()):
            found.append(_max_request("PersistentVolumeClaim", name, q, req))
    return [m for m in found if m]


def aggregate(messages: list[str]) -> str:
    """`utilerrors.NewAggregate(...).Error()`: one message as it is, several in brackets."""
    if len(messages) == 1:
        return messages[0]
    return "[" + ", ".join(messages) + "]"

"""What objects use of a quota: upstream's evaluators (pkg/quota/v1/evaluator/core) for pods,
services and persistent volume claims, object counts for every other resource.
"""

from __future__ import annotations

import datetime
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from minikcp.machinery import quantity
from minikcp.machinery.quantity import Quantity
from minikcp.machinery.quota import Evaluator, ResourceList, ScopeSelector, add, parse_list

# Object counts with an older name beside count/<resource> (`legacyObjectCountAliases`).
_ALIASES = {
    "configmaps": "configmaps",
    "resourcequotas": "resourcequotas",
    "replicationcontrollers": "replicationcontrollers",
    "secrets": "secrets",
}
# Kinds quota never counts (install.DefaultIgnoredResources).
IGNORED = frozenset({("", "events")})

_POD_RESOURCES = frozenset(
    {
        "count/pods",
        "cpu",
        "memory",
        "ephemeral-storage",
        "requests.cpu",
        "requests.memory",
        "requests.ephemeral-storage",
        "limits.cpu",
        "limits.memory",
        "limits.ephemeral-storage",
        "pods",
    }
)
# A quota on these makes every container say what it wants of them (`validationSet`).
_MUST_SPECIFY = frozenset(
    {"cpu", "memory", "requests.cpu", "requests.memory", "limits.cpu", "limits.memory"}
)
_HUGE_PAGES = "hugepages-"
_STORAGE_CLASS_SUFFIX = ".storageclass.storage.k8s.io/"


def _native(name: str) -> bool:
    return "/" not in name or "kubernetes.io/" in name


def _extended(name: str) -> bool:
    return not _native(name) and not name.startswith("requests.")


def pod_requests(pod: Mapping[str, Any]) -> ResourceList:
    return _aggregate(pod, "requests")


def pod_limits(pod: Mapping[str, Any]) -> ResourceList:
    return _aggregate(pod, "limits")


def _container_list(container: Any, field: str) -> ResourceList:
    if not isinstance(container, Mapping):
        return {}
    return parse_list((container.get("resources") or {}).get(field))


def _max_into(target: ResourceList, values: Mapping[str, Quantity]) -> None:
    for name, q in values.items():
        if name not in target or q > target[name]:
            target[name] = q


def _aggregate(pod: Mapping[str, Any], field: str) -> ResourceList:
    """`PodRequests`/`PodLimits`: containers summed, sidecars (restartable init containers)
    added, then at least what each init container needs beside the sidecars before it;
    plus the pod's overhead."""
    spec = pod.get("spec") or {}
    total: ResourceList = {}
    for container in spec.get("containers") or ():
        total = add(total, _container_list(container, field))
    sidecars: ResourceList = {}
    init_peak: ResourceList = {}
    for container in spec.get("initContainers") or ():
        wants = _container_list(container, field)
        if isinstance(container, Mapping) and container.get("restartPolicy") == "Always":
            total = add(total, wants)
            sidecars = add(sidecars, wants)
            wants = sidecars
        else:
            wants = add(wants, sidecars)
        _max_into(init_peak, wants)
    _max_into(total, init_peak)
    overhead = parse_list(spec.get("overhead"))
    if overhead:
        # Overhead counts for what the pod already asks for (limits: only where set).
        names = overhead if field == "requests" else [n for n in overhead if n in total]
        total = add(total, {n: overhead[n] for n in names})
    return total


def compute_usage(requests: Mapping[str, Quantity], limits: Mapping[str, Quantity]) -> ResourceList:
    """`podComputeUsageHelper`."""
    out: ResourceList = {"pods": quantity.ONE}
    for res in ("cpu", "memory", "ephemeral-storage"):
        if res in requests:
            out[res] = requests[res]
            out[f"requests.{res}"] = requests[res]
        if res in limits:
            out[f"limits.{res}"] = limits[res]
    for name, q in requests.items():
        if name.startswith(_HUGE_PAGES):
            out[name] = q
            out[f"requests.{name}"] = q
        elif _extended(name):
            out[f"requests.{name}"] = q
    return out


def _rfc3339(text: str) -> float:
    return datetime.datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def pod_counts_for_compute(pod: Mapping[str, Any], now: float) -> bool:
    """`QuotaV1Pod`: terminal pods and pods past their deletion grace are not charged."""
    if (pod.get("status") or {}).get("phase") in ("Failed", "Succeeded"):
        return False
    meta = pod.get("metadata") or {}
    stamp, grace = meta.get("deletionTimestamp"), meta.get("deletionGracePeriodSeconds")
    if isinstance(stamp, str) and isinstance(grace, int):
        try:
            return now <= _rfc3339(stamp) + grace
        except ValueError:
            return True
    return True


def best_effort(pod: Mapping[str, Any]) -> bool:
    """`GetPodQOS(pod) == BestEffort`: no container asks for or limits cpu or memory."""
    spec = pod.get("spec") or {}
    for container in [*(spec.get("containers") or ()), *(spec.get("initContainers") or ())]:
        for field in ("requests", "limits"):
            values = _container_list(container, field)
            if any(values[r].value != 0 for r in ("cpu", "memory") if r in values):
                return False
    return True


def terminating(pod: Mapping[str, Any]) -> bool:
    deadline = (pod.get("spec") or {}).get("activeDeadlineSeconds")
    return isinstance(deadline, int) and deadline >= 0


def _cross_namespace_affinity(pod: Mapping[str, Any]) -> bool:
    affinity = (pod.get("spec") or {}).get("affinity") or {}
    for kind in ("podAffinity", "podAntiAffinity"):
        section = affinity.get(kind) or {}
        terms = list(section.get("requiredDuringSchedulingIgnoredDuringExecution") or ())
        for weighted in section.get("preferredDuringSchedulingIgnoredDuringExecution") or ():
            terms.append((weighted or {}).get("podAffinityTerm") or {})
        if any(t.get("namespaces") or t.get("namespaceSelector") is not None for t in terms):
            return True
    return False


def _priority_class_matches(selector: ScopeSelector, pod: Mapping[str, Any]) -> bool:
    name = (pod.get("spec") or {}).get("priorityClassName") or ""
    if selector.operator == "Exists":
        return bool(name)
    if selector.operator == "DoesNotExist":
        return not name
    if selector.operator == "In":
        return bool(name) and name in selector.values
    if selector.operator == "NotIn":
        return not name or name not in selector.values
    return False


class PodEvaluator(Evaluator):
    reads_objects = True

    def __init__(self) -> None:
        super().__init__("", "pods")
        self.names = _POD_RESOURCES

    def matching_resources(self, names: Iterable[str]) -> list[str]:
        return [
            n
            for n in names
            if n in _POD_RESOURCES
            or n.startswith((_HUGE_PAGES, "requests." + _HUGE_PAGES))
            or (not _native(n) and n.startswith("requests."))
        ]

    def usage(self, obj: Mapping[str, Any], now: float) -> ResourceList:
        out: ResourceList = {"count/pods": quantity.ONE}
        if not pod_counts_for_compute(obj, now):
            return out
        return add(out, compute_usage(pod_requests(obj), pod_limits(obj)))

    def constraints(self, required: Sequence[str], obj: Mapping[str, Any]) -> str:
        wanted = _MUST_SPECIFY.intersection(required)
        if not wanted:
            return ""
        missing: dict[str, set[str]] = {}
        spec = obj.get("spec") or {}
        for container in [*(spec.get("containers") or ()), *(spec.get("initContainers") or ())]:
            has = compute_usage(
                _container_list(container, "requests"), _container_list(container, "limits")
            )
            name = str((container or {}).get("name", "")) if isinstance(container, Mapping) else ""
            for res in wanted - has.keys():
                missing.setdefault(res, set()).add(name)
        if not missing:
            return ""
        parts = [f"{res} for: {','.join(sorted(missing[res]))}" for res in sorted(missing)]
        return "must specify " + "; ".join(parts)

    def matches_scope(self, selector: ScopeSelector, obj: Mapping[str, Any]) -> bool:
        scope = selector.scope
        if scope == "Terminating":
            return terminating(obj)
        if scope == "NotTerminating":
            return not terminating(obj)
        if scope == "BestEffort":
            return best_effort(obj)
        if scope == "NotBestEffort":
            return not best_effort(obj)
        if scope == "PriorityClass":
            return _priority_class_matches(selector, obj)
        if scope == "CrossNamespacePodAffinity":
            return _cross_namespace_affinity(obj)
        return False


class ServiceEvaluator(Evaluator):
    reads_objects = True
    handles_update = True  # a type change adds load balancers or node ports

    def __init__(self) -> None:
        super().__init__("", "services", "services")
        self.names = frozenset(
            {"count/services", "services", "services.loadbalancers", "services.nodeports"}
        )

    def usage(self, obj: Mapping[str, Any], now: float) -> ResourceList:
        spec = obj.get("spec") or {}
        ports = len(spec.get("ports") or ())
        out: ResourceList = {
            "count/services": quantity.ONE,
            "services": quantity.ONE,
            "services.loadbalancers": quantity.ZERO,
            "services.nodeports": quantity.ZERO,
        }
        kind = spec.get("type")
        if kind == "NodePort":
            out["services.nodeports"] = _count(ports)
        elif kind == "LoadBalancer":
            allocate = spec.get("allocateLoadBalancerNodePorts")
            out["services.nodeports"] = _count(0 if allocate is False else ports)
            out["services.loadbalancers"] = quantity.ONE
        return out


class ClaimEvaluator(Evaluator):
    reads_objects = True
    handles_update = True  # a claim may grow

    def __init__(self) -> None:
        super().__init__("", "persistentvolumeclaims", "persistentvolumeclaims")

    def matching_resources(self, names: Iterable[str]) -> list[str]:
        return [
            n
            for n in names
            if n in ("count/persistentvolumeclaims", "persistentvolumeclaims", "requests.storage")
            or n.endswith(
                (
                    _STORAGE_CLASS_SUFFIX + "persistentvolumeclaims",
                    _STORAGE_CLASS_SUFFIX + "requests.storage",
                )
            )
        ]

    def usage(self, obj: Mapping[str, Any], now: float) -> ResourceList:
        spec = obj.get("spec") or {}
        out: ResourceList = {
            "persistentvolumeclaims": quantity.ONE,
            "count/persistentvolumeclaims": quantity.ONE,
        }
        annotations = (obj.get("metadata") or {}).get("annotations") or {}
        storage_class = annotations.get("volume.beta.kubernetes.io/storage-class") or spec.get(
            "storageClassName"
        )
        if storage_class:
            out[f"{storage_class}{_STORAGE_CLASS_SUFFIX}persistentvolumeclaims"] = quantity.ONE
        requested = parse_list((spec.get("resources") or {}).get("requests")).get("storage")
        if requested is not None:
            out["requests.storage"] = requested
            if storage_class:
                out[f"{storage_class}{_STORAGE_CLASS_SUFFIX}requests.storage"] = requested
        return out


def _count(n: int) -> Quantity:
    return quantity.parse(n)


_SPECIAL: dict[tuple[str, str], Evaluator] = {
    ("", "pods"): PodEvaluator(),
    ("", "services"): ServiceEvaluator(),
    ("", "persistentvolumeclaims"): ClaimEvaluator(),
}
_COUNTERS: dict[tuple[str, str], Evaluator] = {}


def evaluator_for(group: str, resource: str) -> Evaluator:
    """The evaluator of a resource: upstream's for pods, services and claims, else a count."""
    key = (group, resource)
    found = _SPECIAL.get(key) or _COUNTERS.get(key)
    if found is None:
        alias = _ALIASES.get(resource, "") if not group else ""
        found = _COUNTERS.setdefault(key, Evaluator(group, resource, alias))
    return found


def resource_of(name: str) -> tuple[str, str] | None:
    """Which resource (group, plural) a quota resource name measures; None if none we know."""
    if name.startswith("count/"):
        resource, _, group = name[len("count/") :].partition(".")
        return (group, resource)
    for evaluator in _SPECIAL.values():
        if evaluator.matching_resources([name]):
            return (evaluator.group, evaluator.resource)
    if name in _ALIASES:
        return ("", name)
    return None

"""Which sync targets a namespace is placed on (pure).

By default a namespace is placed on every target of its logical cluster that can take work. A
namespace narrows that with
- the label `workload.minikcp.io/sync-target: <name>` (one target by name),
- the annotation `workload.minikcp.io/sync-targets: a,b` (targets by name), or
- the annotation `workload.minikcp.io/sync-target-selector: <label selector>` (targets by label).
A target that has answered once keeps its placements while it is silent (its objects stay where
they are, as kcp and Karmada do by default); one that never answered gets none.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from minikcp.machinery import errors, selectors

TARGET_NAME_LABEL = "workload.minikcp.io/sync-target"
TARGET_NAMES_ANNOTATION = "workload.minikcp.io/sync-targets"
TARGET_SELECTOR_ANNOTATION = "workload.minikcp.io/sync-target-selector"
# Namespaces every cluster has for itself; never placed.
_SYSTEM_NAMESPACES = frozenset({"kube-system", "kube-public", "kube-node-lease"})


@dataclass(frozen=True, slots=True)
class Candidate:
    name: str
    labels: Mapping[str, str] = field(default_factory=dict)
    ready: bool = False
    reached: bool = False  # has answered at least once (lastSyncerHeartbeatTime set)
    deleting: bool = False


def placed_on(
    namespace: str,
    labels: Mapping[str, str] | None,
    annotations: Mapping[str, str] | None,
    candidates: Iterable[Candidate],
) -> list[str]:
    """The names of the targets `namespace` is placed on, sorted."""
    if namespace in _SYSTEM_NAMESPACES:
        return []
    labels = labels or {}
    annotations = annotations or {}
    usable = [c for c in candidates if not c.deleting and (c.ready or c.reached)]
    by_name = labels.get(TARGET_NAME_LABEL)
    names = annotations.get(TARGET_NAMES_ANNOTATION)
    selector_text = annotations.get(TARGET_SELECTOR_ANNOTATION)
    if by_name is not None:
        usable = [c for c in usable if c.name == by_name]
    if names is not None:
        wanted = {n.strip() for n in names.split(",") if n.strip()}
        usable = [c for c in usable if c.name in wanted]
    if selector_text is not None:
        try:
            selector = selectors.parse_label_selector(selector_text)
        except errors.StatusError:
            return []  # an unreadable selector places nothing rather than everything
        usable = [c for c in usable if selector.matches(c.labels)]
    return sorted(c.name for c in usable)

"""The kinds the syncer copies downstream, and their downstream API paths."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from minikcp.apis import catalog
from minikcp.syncer import kinds

# kcp syncs deployments, services, ingresses, configmaps and secrets; service accounts too here,
# since pods downstream run with downstream credentials; and the other workload kinds with the
# claims their pods mount.
DEFAULT_RESOURCES = (
    "deployments.apps",
    "statefulsets.apps",
    "daemonsets.apps",
    "cronjobs.batch",
    "services",
    "configmaps",
    "secrets",
    "serviceaccounts",
    "persistentvolumeclaims",
    "ingresses.networking.k8s.io",
)


@dataclass(frozen=True, slots=True)
class Synced:
    rt: catalog.ResourceType

    @property
    def name(self) -> str:
        """`resource.group` as kubectl spells it (`services`, `deployments.apps`)."""
        return f"{self.rt.plural}.{self.rt.group}" if self.rt.group else self.rt.plural

    @property
    def strategy(self) -> kinds.SyncStrategy:
        return kinds.strategy_for(self.name)

    @property
    def group_version_path(self) -> str:
        if not self.rt.group:
            return f"/api/{self.rt.version}"
        return f"/apis/{self.rt.group}/{self.rt.version}"

    @property
    def list_path(self) -> str:
        return f"{self.group_version_path}/{self.rt.plural}"

    def object_path(self, namespace: str, name: str) -> str:
        return f"{self.group_version_path}/namespaces/{namespace}/{self.rt.plural}/{name}"


def resolve(types: catalog.Catalog, names: Iterable[str]) -> tuple[list[Synced], list[str]]:
    """The served namespaced kinds named `resource[.group]`, and the names that are not."""
    found: list[Synced] = []
    unknown: list[str] = []
    for full in names:
        plural, _, group = full.strip().partition(".")
        matches = [
            rt
            for rt in types.all_types()
            if rt.plural == plural and rt.group == group and rt.namespaced
        ]
        if not matches:
            unknown.append(full)
            continue
        best = min(matches, key=lambda rt: catalog.version_priority(rt.version))
        if all(s.rt != best for s in found):
            found.append(Synced(best))
    return found, unknown

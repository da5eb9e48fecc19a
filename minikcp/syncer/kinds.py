"""What the syncer does differently per kind: one small strategy per kind beside the generic
reconcile, looked up by `resource.group`; kinds without one (custom resources too) are copied
as they are and report no status upstream.

A strategy says which objects every cluster makes for itself (never copied), how the downstream
copy differs from the upstream object (fields each cluster allocates itself; a target's share of
the replicas when they are split), and how the upstream status is summarised from the targets'.
Objects that are not split go whole to every placed target, as kcp's syncer does: a CronJob
placed on two targets runs on both.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from minikcp.syncer import aggregate, aggregate_workloads, replicas


class SyncStrategy:
    """A kind copied as it is, whose status stays where it is."""

    # The replicas are split across the placed targets (recorded upstream, see `replicas.py`).
    splits_replicas: ClassVar[bool] = False
    # The upstream status is summarised from the targets' (see `summarise`).
    reports_status: ClassVar[bool] = False

    def never_synced(self, obj: Mapping[str, Any]) -> bool:
        """Objects every cluster makes for itself: copying them would fight the downstream."""
        return False

    def shape(self, out: dict[str, Any], target: str, split: Mapping[str, int] | None) -> None:
        """Adjust the downstream copy `out` (a fresh dict) for `target` given the replica split."""

    def summarise(
        self, upstream: Mapping[str, Any], views: Sequence[aggregate.TargetView], now: str
    ) -> dict[str, Any]:
        """The upstream status from the placed targets' views (only if `reports_status`)."""
        return dict(upstream.get("status") or {})


class ConfigMaps(SyncStrategy):
    def never_synced(self, obj: Mapping[str, Any]) -> bool:
        return bool(obj.get("metadata", {}).get("name") == "kube-root-ca.crt")


class ServiceAccounts(SyncStrategy):
    def never_synced(self, obj: Mapping[str, Any]) -> bool:
        return bool(obj.get("metadata", {}).get("name") == "default")


class Secrets(SyncStrategy):
    def never_synced(self, obj: Mapping[str, Any]) -> bool:
        return bool(obj.get("type") == "kubernetes.io/service-account-token")


class Services(SyncStrategy):
    def shape(self, out: dict[str, Any], target: str, split: Mapping[str, int] | None) -> None:
        """Cluster IPs and node ports are allocated by each cluster; copying them would collide."""
        spec = out.get("spec") or {}
        if spec.get("clusterIP") not in ("None",):
            spec.pop("clusterIP", None)
            spec.pop("clusterIPs", None)
        for key in ("ipFamilies", "ipFamilyPolicy", "healthCheckNodePort"):
            spec.pop(key, None)
        for port in spec.get("ports") or ():
            if isinstance(port, dict):
                port.pop("nodePort", None)


class Deployments(SyncStrategy):
    splits_replicas = True
    reports_status = True

    def shape(self, out: dict[str, Any], target: str, split: Mapping[str, int] | None) -> None:
        if split is not None:
            out.setdefault("spec", {})["replicas"] = split.get(target, 0)

    def summarise(
        self, upstream: Mapping[str, Any], views: Sequence[aggregate.TargetView], now: str
    ) -> dict[str, Any]:
        return aggregate.summarise(upstream, views, now)


class StatefulSets(SyncStrategy):
    splits_replicas = True
    reports_status = True

    def shape(self, out: dict[str, Any], target: str, split: Mapping[str, int] | None) -> None:
        """The target's share of the replicas, and of a rolling update's partition."""
        if split is None:
            return
        spec = out.setdefault("spec", {})
        spec["replicas"] = split.get(target, 0)
        rolling = (spec.get("updateStrategy") or {}).get("rollingUpdate")
        if isinstance(rolling, dict) and aggregate.count(rolling.get("partition")):
            rolling["partition"] = replicas.partition_split(rolling["partition"], split).get(
                target, 0
            )

    def summarise(
        self, upstream: Mapping[str, Any], views: Sequence[aggregate.TargetView], now: str
    ) -> dict[str, Any]:
        return aggregate_workloads.stateful_set(upstream, views, now)


class DaemonSets(SyncStrategy):
    reports_status = True

    def summarise(
        self, upstream: Mapping[str, Any], views: Sequence[aggregate.TargetView], now: str
    ) -> dict[str, Any]:
        return aggregate_workloads.daemon_set(upstream, views, now)


class CronJobs(SyncStrategy):
    reports_status = True

    def summarise(
        self, upstream: Mapping[str, Any], views: Sequence[aggregate.TargetView], now: str
    ) -> dict[str, Any]:
        return aggregate_workloads.cron_job(upstream, views, now)


class PersistentVolumeClaims(SyncStrategy):
    reports_status = True

    def summarise(
        self, upstream: Mapping[str, Any], views: Sequence[aggregate.TargetView], now: str
    ) -> dict[str, Any]:
        return aggregate_workloads.persistent_volume_claim(upstream, views, now)


COPIED = SyncStrategy()

_BY_RESOURCE: dict[str, SyncStrategy] = {
    "configmaps": ConfigMaps(),
    "serviceaccounts": ServiceAccounts(),
    "secrets": Secrets(),
    "services": Services(),
    "deployments.apps": Deployments(),
    "statefulsets.apps": StatefulSets(),
    "daemonsets.apps": DaemonSets(),
    "cronjobs.batch": CronJobs(),
    "persistentvolumeclaims": PersistentVolumeClaims(),
}


def strategy_for(resource: str) -> SyncStrategy:
    """The strategy of `resource.group` (`deployments.apps`, `services`)."""
    return _BY_RESOURCE.get(resource, COPIED)

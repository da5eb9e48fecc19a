"""Who reports Deployment and StatefulSet status: the registry itself, or a controller.

With no controller running pods, the strategies report that nothing runs them (nothing
available, condition Available=False, reason Unschedulable), as kcp does for a namespace no
SyncTarget serves; `kubectl rollout status` waits. Where something else owns that status the
strategies leave it alone, or they would overwrite the real status on every spec change:
everywhere when this process simulates workloads, and in every logical cluster a SyncTarget serves
(its own, or those in `spec.clusters`), where status comes from downstream. The SyncTargets are
read from the store, not from the syncer's memory, so every replica on one etcd agrees whichever
of them runs the target's worker.
"""

from __future__ import annotations

import asyncio
import collections
import logging

import orjson

from minikcp.apis import catalog
from minikcp.registry import keys
from storage import errors as storage_errors
from storage import hub as storage_hub
from storage import interface as storage_interface

logger = logging.getLogger(__name__)

SYNC_TARGET = ("workload.kcp.io", "v1alpha1", "synctargets")


def served_clusters(cluster: str, value: bytes) -> frozenset[str]:
    """The logical clusters a stored SyncTarget serves ("*": all)."""
    try:
        spec = orjson.loads(value).get("spec") or {}
        clusters = frozenset(c for c in spec.get("clusters") or () if isinstance(c, str))
    except (orjson.JSONDecodeError, AttributeError):
        clusters = frozenset()
    return clusters or frozenset({cluster})


class DeploymentStatusOwners:
    """The registry reports workload status itself except where a controller took it over."""

    __slots__ = ("_controller_everywhere", "_served", "_targets")

    def __init__(self) -> None:
        self._controller_everywhere = False
        self._targets: dict[str, frozenset[str]] = {}  # SyncTarget key -> clusters it serves
        self._served: collections.Counter[str] = collections.Counter()

    def hand_over_everywhere(self) -> None:
        """A controller owns workload status in every logical cluster (the simulator)."""
        self._controller_everywhere = True

    def registry_reports(self, cluster: str, namespace: str) -> bool:
        """Whether the workload strategies fill in the unserved status on writes there."""
        if self._controller_everywhere:
            return False
        return not (self._served[cluster] or self._served["*"])

    def observe_target(self, key: str, serves: frozenset[str] | None) -> None:
        """A SyncTarget stored under `key` now serves these clusters (None: it is gone)."""
        before = self._targets.pop(key, frozenset())
        self._served.subtract(before)
        if serves:
            self._targets[key] = serves
            self._served.update(serves)
        self._served = +self._served  # drop the zeros

    async def run(
        self,
        storage: storage_interface.Storage,
        hub: storage_hub.WatchHub,
        rt: catalog.ResourceType,
    ) -> None:
        """Follow the stored SyncTargets: list, then watch from the listed revision."""
        prefix = keys.resource_prefix(rt)
        while True:
            revision = hub.revision
            try:
                listed = await storage.range(prefix, at_revision=revision)
            except storage_errors.StorageError as exc:
                logger.info("sync targets not listed: %s", exc)
                await asyncio.sleep(1.0)
                continue
            self._targets.clear()
            self._served.clear()
            for item in listed.items:
                self.observe_target(
                    item.key, served_clusters(keys.cluster_of(rt, item.key), item.value)
                )
            watcher = hub.watch(prefix, after=revision)
            try:
                async for event in watcher:
                    serves = None
                    if event.value is not None:
                        serves = served_clusters(keys.cluster_of(rt, event.key), event.value)
                    self.observe_target(event.key, serves)
            except (storage_errors.WatcherClosed, storage_errors.Compacted):
                pass
            finally:
                watcher.close()
            await asyncio.sleep(0.1)

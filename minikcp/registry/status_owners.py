"""Who reports Deployment and StatefulSet status: the registry itself, or a controller.

With no controller running pods, the strategies report that nothing runs them (nothing
available, condition Available=False, reason Unschedulable), as kcp does for a namespace no
SyncTarget serves; `kubectl rollout status` waits. Where something else owns that status (the
workload simulator everywhere, the syncer for namespaces placed on sync targets) the strategies
leave it alone, or they would overwrite the real status on every spec change.
"""

from __future__ import annotations


class DeploymentStatusOwners:
    """The registry reports workload status itself except where a controller took it over."""

    __slots__ = ("_controller_everywhere", "_handed_over")

    def __init__(self) -> None:
        self._controller_everywhere = False
        self._handed_over: set[tuple[str, str]] = set()

    def hand_over_everywhere(self) -> None:
        """A controller owns workload status in every logical cluster (the simulator)."""
        self._controller_everywhere = True

    def hand_over(self, cluster: str, namespace: str) -> None:
        """A controller owns workload status in one namespace of one logical cluster."""
        self._handed_over.add((cluster, namespace))

    def take_back(self, cluster: str, namespace: str) -> None:
        """The registry reports workload status in that namespace again (no longer synced)."""
        self._handed_over.discard((cluster, namespace))

    def registry_reports(self, cluster: str, namespace: str) -> bool:
        """Whether the workload strategies fill in the unserved status on writes there."""
        if self._controller_everywhere:
            return False
        return (cluster, namespace) not in self._handed_over

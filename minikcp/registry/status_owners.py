"""Who reports Deployment status: the registry itself, or a controller.

With no controller running pods, the Deployment strategy reports every Deployment rolled out at
once, so `kubectl rollout status` and `kubectl wait --for=condition=Available` behave as on a
real cluster. Where something else owns that status (the workload simulator everywhere, the
syncer for namespaces placed on sync targets) the strategy must leave it alone, or it would
overwrite the real status on every spec change.
"""

from __future__ import annotations


class DeploymentStatusOwners:
    """The registry reports rollouts itself except where a controller took the status over."""

    __slots__ = ("_controller_everywhere", "_handed_over")

    def __init__(self) -> None:
        self._controller_everywhere = False
        self._handed_over: set[tuple[str, str]] = set()

    def hand_over_everywhere(self) -> None:
        """A controller owns Deployment status in every logical cluster (the simulator)."""
        self._controller_everywhere = True

    def hand_over(self, cluster: str, namespace: str) -> None:
        """A controller owns Deployment status in one namespace of one logical cluster."""
        self._handed_over.add((cluster, namespace))

    def take_back(self, cluster: str, namespace: str) -> None:
        """The registry reports rollouts in that namespace again (e.g. no longer synced)."""
        self._handed_over.discard((cluster, namespace))

    def registry_reports(self, cluster: str, namespace: str) -> bool:
        """Whether the Deployment strategy fills in a rolled-out status on writes there."""
        if self._controller_everywhere:
            return False
        return (cluster, namespace) not in self._handed_over

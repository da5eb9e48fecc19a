"""The replication manager: upstream runs the ReplicaSet controller over core/v1
ReplicationControllers (`pkg/controller/replication`), and so does this, one
ReplicationController per pass through `replica_set_pass`.

Pods are `<rc>-<5 random chars>` with the RC as their controller (blockOwnerDeletion); the
status counts replicas, fullyLabeledReplicas, readyReplicas and availableReplicas and records
observedGeneration, with a ReplicaFailure condition while pods cannot be created or deleted;
each pod created or deleted is a SuccessfulCreate or SuccessfulDelete event from
`replication-controller`.
What a deleted ReplicationController owned is the garbage collector's.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from minikcp.machinery import selectors
from minikcp.registry.objects import RequestContext
from minikcp.simulator import replica_set_pass
from minikcp.simulator.kind_controller import KindController
from minikcp.simulator.pass_result import PassResult

KIND = "ReplicationController"
_RESOURCE = "replicationcontrollers"


def _map_selector(rc: Mapping[str, Any]) -> selectors.LabelSelector:
    """A plain label map, as the replication manager converts it (MatchLabels)."""
    labels = rc.get("spec", {}).get("selector") or {}
    return selectors.label_selector_from_dict({"matchLabels": labels})


_OWNER = replica_set_pass.PodOwner(_RESOURCE, "replication-controller", _map_selector)
# A ReplicationController's pods follow their own template's plan: no Deployment above them.
_NO_DEPLOYMENT: dict[str, object] = {}


class ReplicationControllerController(KindController):
    kind = KIND
    group = ""
    resource = _RESOURCE

    async def sync(self, ctx: RequestContext, namespace: str, name: str, now: float) -> PassResult:
        result = PassResult()
        rc = await self._live(ctx, namespace, name)
        if rc is None:
            return result
        outcome = await replica_set_pass.sync_replica_set(
            self._objects,
            self._options,
            ctx,
            rc,
            _NO_DEPLOYMENT,
            now,
            owner=_OWNER,
        )
        result.writes = outcome.writes
        result.due(outcome.next_at)
        return result

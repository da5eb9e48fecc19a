"""Aggregated ClusterRoles: their rules written from the roles they select, per logical cluster.

As kube-controller-manager's clusterrole-aggregation-controller: a ClusterRole with an
`aggregationRule` gets the rules of every ClusterRole of its logical cluster that its selectors
match (the bootstrap roles included, as they exist in every cluster), so `kubectl get clusterrole`
shows what it grants. The authorizer computes the same rules itself (registry/rbac_policy.py), so
nothing waits for this controller. It follows ClusterRole changes from the moment it starts and
looks only at the logical clusters whose ClusterRoles change: no start-up pass over all clusters.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from minikcp.machinery import errors, list_options, rbac
from minikcp.registry import rbac_policy, registry, store, watching
from minikcp.registry.objects import RequestContext, WriteOptions

logger = logging.getLogger(__name__)

FIELD_MANAGER = "clusterrole-aggregation-controller"
_ALL_CLUSTERS = RequestContext("*")


def aggregated_rules(cluster_roles: list[dict[str, Any]]) -> dict[str, tuple[rbac.Rule, ...]]:
    """Name -> rules of each aggregated ClusterRole among `cluster_roles` (one cluster's)."""
    policy = rbac_policy.ClusterPolicy.from_objects(
        cluster_roles=cluster_roles, base=rbac_policy.BOOTSTRAP
    )
    out = {}
    for obj in cluster_roles:
        if obj.get("aggregationRule") is None:
            continue
        name = str(obj["metadata"]["name"])
        out[name] = policy.cluster_role_rules(name) or ()
    return out


class ClusterRoleAggregation:
    def __init__(self, reg: registry.Registry, *, retry_delay: float = 1.0) -> None:
        rt = reg.catalog.by_resource(rbac.GROUP, "v1", "clusterroles")
        assert rt is not None
        self._registry = reg
        self._rt = rt
        self._retry_delay = retry_delay

    @property
    def _store(self) -> store.ResourceStore:
        return self._registry.store(self._rt)

    async def run(self) -> None:
        """Follow ClusterRole changes in every logical cluster; until cancelled."""
        revision = 0
        while True:
            try:
                if not revision:
                    probe = await self._store.list(
                        _ALL_CLUSTERS, "", list_options.ListOptions(limit=1)
                    )
                    revision = probe.revision
                revision = await self._follow(revision)
            except errors.StatusError as exc:
                logger.warning("watching clusterroles failed (%s); resuming", exc)
                revision = (
                    0  # expired: pick up from now (missed clusters catch up on their next change)
                )
                await asyncio.sleep(self._retry_delay)
            except Exception:
                logger.exception("aggregating clusterroles failed; resuming")
                await asyncio.sleep(self._retry_delay)

    async def _follow(self, revision: int) -> int:
        opts = list_options.ListOptions(
            resource_version=str(revision), watch=True, allow_watch_bookmarks=True
        )
        async for event in self._registry.watch(self._rt, _ALL_CLUSTERS, "", opts):
            if event.type == watching.ERROR:
                return 0
            if event.type == watching.BOOKMARK:
                revision = max(revision, event.revision)
                continue
            assert event.object is not None
            revision = max(revision, event.object.revision)
            await self.reconcile(event.object.cluster)
        return revision

    async def reconcile(self, cluster: str) -> None:
        """Write the rules of the cluster's aggregated ClusterRoles where they differ."""
        ctx = RequestContext(cluster=cluster)
        listing = await self._store.list(ctx, "", list_options.ListOptions())
        roles = [item.stored_view() for item in listing.items]
        stored = {str(r["metadata"]["name"]): r for r in roles}
        for name, rules in aggregated_rules(roles).items():
            current = tuple(rbac.Rule.from_dict(r) for r in stored[name].get("rules") or () if r)
            if current == rules:
                continue
            await self._write(ctx, name, [rule.to_dict() for rule in rules])

    async def _write(self, ctx: RequestContext, name: str, rules: list[dict[str, Any]]) -> None:
        def mutate(obj: dict[str, Any] | None) -> dict[str, Any]:
            if obj is None:
                raise errors.not_found("clusterroles", name, group=rbac.GROUP)
            obj["rules"] = rules
            return obj

        try:
            await self._store.guaranteed_update(
                ctx, "", name, mutate, WriteOptions(field_manager=FIELD_MANAGER)
            )
        except errors.StatusError as exc:
            # Deleted meanwhile, or refused: its next change brings it back here.
            logger.info("aggregating clusterrole %s in %s: %s", name, ctx.cluster, exc.message)

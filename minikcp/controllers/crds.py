"""The CRD controller: names, establishment and cleanup of CustomResourceDefinitions.

For each logical cluster whose CRDs changed it does what apiextensions-apiserver's naming,
establishing and finalizer controllers do together: it writes `status.acceptedNames` and the
`NamesAccepted` and `Established` conditions (a CRD whose plural, singular, short names, kind or
list kind another CRD of its group already holds is refused and not served), and when a CRD is
being deleted it removes all its objects with one storage prefix deletion, then its finalizer.
Writes go through the registry in-process, with the same validation as HTTP.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from typing import Any

from minikcp.apis import crds
from minikcp.machinery import errors
from minikcp.registry import registry as registry_module
from minikcp.registry import system_fields
from minikcp.registry.objects import RequestContext, WriteOptions

logger = logging.getLogger(__name__)

_MANAGER = WriteOptions(field_manager="kube-apiserver")
_RETRY_SECONDS = 1.0


class CrdController:
    def __init__(self, reg: registry_module.Registry) -> None:
        self._registry = reg
        crd_type = reg.crds.crd_type
        self._store = reg.store(crd_type)
        self._reserved = crds.served_names(reg.catalog)

    async def run(self) -> None:
        """Runs until cancelled; a failed cluster is retried after a second."""
        pending = set(self._registry.crds.clusters())
        while True:
            await self._delete_orphans()
            failed: set[str] = set()
            for cluster in sorted(pending):
                try:
                    await self.sync(cluster)
                except errors.StatusError as exc:
                    logger.warning("CRDs of %s: %s", cluster, exc.message)
                    failed.add(cluster)
                except Exception:
                    # One cluster's failure must not stop the others' CRDs (nor the server).
                    logger.exception("CRDs of %s", cluster)
                    failed.add(cluster)
            if failed:
                await asyncio.sleep(_RETRY_SECONDS)
                pending = failed | self._registry.crds.take_changed()
                continue
            pending = await self._registry.crds.changed_clusters()

    async def _delete_orphans(self) -> None:
        """Objects of CRDs removed without cleanup (e.g. their logical cluster's prefix deletion)
        are deleted, unless a CRD serving the same resource is back in that cluster."""
        for cluster, crd in self._registry.crds.take_orphans():
            rt = crds.storage_type(crd)
            if rt is None:
                continue
            again = [
                other
                for other in self._registry.crds.crds_in(cluster)
                if (s := crds.storage_type(other)) is not None
                and (s.group, s.plural) == (rt.group, rt.plural)
            ]
            if again:
                continue
            try:
                count = await self._registry.delete_custom_resources(rt, cluster)
            except Exception:
                logger.exception("objects of the removed CRD %s/%s", cluster, rt.plural)
                continue
            if count:
                logger.info(
                    "deleted %d objects of the removed CRD %s in %s", count, rt.plural, cluster
                )

    async def sync(self, cluster: str) -> None:
        ctx = RequestContext(cluster=cluster)
        current = self._registry.crds.crds_in(cluster)
        live = [crd for crd in current if not _meta(crd).get("deletionTimestamp")]
        decisions = crds.name_conditions(live, self._reserved)
        for crd in current:
            name = str(_meta(crd).get("name") or "")
            if _meta(crd).get("deletionTimestamp"):
                await self._clean_up(ctx, crd)
                continue
            decision = decisions.get(name)
            if decision is not None and _needs_status(crd, decision):
                await self._write_status(ctx, name, decision)

    async def _write_status(
        self, ctx: RequestContext, name: str, decision: crds.NameDecision
    ) -> None:
        def mutate(obj: dict[str, Any] | None) -> dict[str, Any]:
            if obj is None:
                raise errors.not_found("customresourcedefinitions", name, group=crds.GROUP)
            status = obj.setdefault("status", {})
            status["acceptedNames"] = dict(decision.accepted_names)
            status["conditions"] = _conditions(status.get("conditions"), decision)
            return obj

        try:
            await self._store.guaranteed_update(
                ctx, "", name, mutate, _MANAGER, subresource="status", decoded=True
            )
        except errors.StatusError as exc:
            if exc.code != 404:
                raise

    async def _clean_up(self, ctx: RequestContext, crd: Mapping[str, Any]) -> None:
        name = str(_meta(crd).get("name") or "")
        if crds.CLEANUP_FINALIZER not in (_meta(crd).get("finalizers") or ()):
            return
        rt = crds.storage_type(crd)
        if rt is not None:
            count = await self._registry.delete_custom_resources(rt, ctx.cluster)
            logger.info("deleted %d objects of %s in %s", count, name, ctx.cluster)

        def mutate(obj: dict[str, Any] | None) -> dict[str, Any]:
            if obj is None:
                raise errors.not_found("customresourcedefinitions", name, group=crds.GROUP)
            meta = obj["metadata"]
            meta["finalizers"] = [
                f for f in meta.get("finalizers") or () if f != crds.CLEANUP_FINALIZER
            ]
            return obj

        try:
            await self._store.guaranteed_update(ctx, "", name, mutate, _MANAGER, decoded=True)
        except errors.StatusError as exc:
            if exc.code != 404:
                raise


def _meta(crd: Mapping[str, Any]) -> Mapping[str, Any]:
    meta = crd.get("metadata")
    return meta if isinstance(meta, Mapping) else {}


def _conditions(existing: Any, decision: crds.NameDecision) -> list[dict[str, Any]]:
    """The conditions with NamesAccepted and Established as decided; a condition keeps its
    lastTransitionTime while its status stays."""
    old = {c.get("type"): c for c in existing or () if isinstance(c, dict)}
    out = [
        c
        for c in existing or ()
        if isinstance(c, dict) and c.get("type") not in ("NamesAccepted", "Established")
    ]
    for kind, (status, reason, message) in (
        ("NamesAccepted", decision.names_accepted),
        ("Established", decision.established),
    ):
        previous = old.get(kind)
        since = (
            previous.get("lastTransitionTime")
            if previous is not None and previous.get("status") == status
            else system_fields.now_rfc3339()
        )
        out.append(
            {
                "type": kind,
                "status": status,
                "lastTransitionTime": since,
                "reason": reason,
                "message": message,
            }
        )
    return out


def _needs_status(crd: Mapping[str, Any], decision: crds.NameDecision) -> bool:
    status = crd.get("status") if isinstance(crd.get("status"), Mapping) else {}
    assert isinstance(status, Mapping)
    if dict(status.get("acceptedNames") or {}) != dict(decision.accepted_names):
        return True
    for kind, wanted in (
        ("NamesAccepted", decision.names_accepted),
        ("Established", decision.established),
    ):
        found = crds.condition(crd, kind)
        if found is None or (found.get("status"), found.get("reason"), found.get("message")) != (
            wanted
        ):
            return True
    return False

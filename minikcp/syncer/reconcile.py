"""Reconciling one upstream object with one sync target (level-triggered, idempotent).

Upstream (the registry, read in-process) is the truth; a downstream object is deleted only when
storage says the upstream object is gone, deleting, or no longer placed on the target; never
because a list failed or a connection dropped. Writes downstream are server-side applies under
one field manager, skipped when the object already holds what we would write.
"""

from __future__ import annotations

import asyncio
import datetime
import logging
import time
from collections.abc import Mapping
from typing import Any, Protocol

from minikcp.machinery import errors
from minikcp.registry import registry as upstream_registry
from minikcp.registry import system_fields
from minikcp.registry.objects import RequestContext, WriteOptions
from minikcp.syncer import (
    aggregate,
    placement,
    proxy_writes,
    replicas,
    resources,
    status_views,
    translate,
)
from minikcp.syncer import client as downstream
from minikcp.syncer.target import ItemKey, TargetWorker

logger = logging.getLogger(__name__)

WRITE = WriteOptions(field_manager=translate.FIELD_MANAGER)
# Seconds after its first list in which a worker confirms with a GET that an object missing
# from its cache is missing downstream too; later the cache answers alone.
_SETTLING = 10.0


class Context(Protocol):
    registry: upstream_registry.Registry

    def candidates(self, cluster: str) -> list[placement.Candidate]: ...

    def worker(self, cluster: str, name: str) -> TargetWorker | None: ...

    def takes(self, cluster: str, target: str, resource: str) -> bool: ...

    def status_soon(self, key: ItemKey) -> None: ...


async def placed_targets(ctx: Context, cluster: str, namespace: str) -> list[str]:
    rctx = RequestContext(cluster=cluster)
    ns = await ctx.registry.namespaces.find(rctx, "", namespace)
    if ns is None or ns.metadata.get("deletionTimestamp"):
        return []
    meta = ns.metadata
    return placement.placed_on(
        namespace, meta.get("labels"), meta.get("annotations"), ctx.candidates(cluster)
    )


async def placed_for(ctx: Context, resource: str, cluster: str, namespace: str) -> list[str]:
    """The targets an object of `resource` goes to: those its namespace is placed on that sync
    the kind and serve it (a replica split and a status summary count these only)."""
    targets = await placed_targets(ctx, cluster, namespace)
    return [name for name in targets if ctx.takes(cluster, name, resource)]


async def reconcile(ctx: Context, w: TargetWorker, key: ItemKey) -> float | None:
    """Bring the target in line with the upstream object; returns seconds to look again, or None."""
    resource, cluster, namespace, name = key
    synced = w.synced.get(resource)
    if synced is None:
        return None
    rstore = ctx.registry.store(synced.rt)
    rctx = RequestContext(cluster=cluster)
    upstream = await rstore.find(rctx, namespace, name)  # a storage error raises: retried
    dns = translate.downstream_namespace(w.ref, cluster, namespace)
    cache = w.informers[resource]
    live = cache.get(dns, name)
    if upstream is None:
        if live is not None and translate.awaits_upstream_write(live, time.time()):
            return 1.0  # a proxy write created it a moment ago; its upstream create follows
        # Gone without waiting for us (its namespace or logical cluster was removed at once).
        w.errors.pop(key, None)
        if live is not None:
            w.require_ready()
            await _delete(w, synced, dns, name, live)
        w.leftovers.discard(key)
        return None
    obj = upstream.view()
    meta = obj["metadata"]
    strategy = synced.strategy
    placed = await placed_for(ctx, resource, cluster, namespace)
    wanted = (
        w.name in placed
        and not meta.get("deletionTimestamp")
        and not w.deleting
        and not strategy.never_synced(obj)
    )
    if live is not None and _upstream_uid(live) not in ("", meta.get("uid")):
        # Left from an earlier object of the same name: it goes before the new one is written.
        w.require_ready()
        await _delete(w, synced, dns, name, live)
        return 1.0
    if not wanted:
        result = await _withdraw(ctx, w, key, synced, obj, live, dns)
        if not w.deleting:
            ctx.status_soon(key)
        return result
    obj = await _prepare_upstream(ctx, w, synced, rctx, obj, placed)
    if not w.health.ready:
        ctx.status_soon(key)  # it shows the target as unreachable
    w.require_ready()
    await _ensure_namespace(w, cluster, namespace, dns)
    split = None
    if strategy.splits_replicas:
        split = (
            replicas.decode(obj["metadata"].get("annotations", {}).get(translate.SPLIT_ANNOTATION))
            or {}
        )
    desired = translate.downstream_object(strategy, obj, w.ref, cluster, split=split)
    path = synced.object_path(dns, name)
    if live is None:
        if not cache.synced.is_set():
            # It answers for every object of the kind only once it has listed them (start-up).
            raise downstream.Unreachable(f"{resource} of {w.name} not listed yet")
        if (
            cache.other(dns, name) is None
            and time.monotonic() - cache.synced_at < _SETTLING
            and not _created_after(meta, w.started_at)
        ):
            # Not in the cache of a worker that just started: ask the target before writing.
            # Right after a takeover the cache has been seen to lack objects the previous owner
            # wrote (a killed owner's last writes can land after the list), and an apply over
            # them would be a second write of the same change. An object created upstream after
            # this worker started was never seen by a previous owner: no GET for it (replicas'
            # clocks that disagree cost at most that second, unchanging apply).
            try:
                live = await w.client.request("GET", path)
            except downstream.DownstreamError as exc:
                if exc.code != 404:
                    raise
                live = None
        if (live is None and cache.other(dns, name) is not None) or (
            live is not None and not translate.is_owned(live, w.ref)
        ):
            # Never overwrite what minikcp did not create; look again now and then.
            w.errors[key] = f"{synced.rt.kind} {dns}/{name} exists downstream and is not ours"
            ctx.status_soon(key)
            return 30.0
    if live is None or translate.needs_apply(desired, live):
        # The informer may not have heard of a proxy write yet, a create's included: the
        # target itself says whether it holds this already.
        args = (ctx.registry, w.client, path, cluster, namespace, live)
        live = await proxy_writes.live_in_proxy_mode(*args)
        if (
            live is not None
            and translate.needs_apply(desired, live)
            and translate.awaits_upstream_write(live, time.time())
        ):
            return 1.0  # a proxy write is ahead of upstream a moment; its upstream write follows
    if translate.needs_apply(desired, live):
        try:
            written = await w.client.request(
                "PATCH",
                path,
                params={"fieldManager": translate.FIELD_MANAGER, "force": "true"},
                body=desired,
                content_type=downstream.APPLY_PATCH,
            )
        except downstream.DownstreamError as exc:
            if exc.code == 404:
                # The namespace is gone (the cluster lost it): create it on the next attempt.
                w.namespaces.cache.pop(("", dns), None)
            raise
        w.sync_latency.written(key)
        if written.get("metadata"):
            cache.remember(written)
    w.errors.pop(key, None)
    ctx.status_soon(key)
    return None


def _created_after(meta: Mapping[str, Any], stamp: float) -> bool:
    """Whether the object was created after `stamp` (seconds since the epoch). Its
    creationTimestamp is cut to the second: one at or after `stamp` was written after it."""
    created = _seconds(meta.get("creationTimestamp"))
    return created is not None and created >= stamp


def _seconds(stamp: Any) -> float | None:
    if not isinstance(stamp, str) or not stamp:
        return None
    try:
        return datetime.datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def _upstream_uid(live: Mapping[str, Any]) -> str:
    annotations = live.get("metadata", {}).get("annotations") or {}
    return str(annotations.get(translate.UPSTREAM_UID_ANNOTATION, ""))


async def _prepare_upstream(
    ctx: Context,
    w: TargetWorker,
    synced: resources.Synced,
    rctx: RequestContext,
    obj: dict[str, Any],
    placed: list[str],
) -> dict[str, Any]:
    """Our finalizer before the first downstream write; for split kinds, the replica split.
    The one write also adds the finalizers of the object's other targets run here, which all
    want theirs at once (a new object): one upstream write instead of one per target."""
    finalizer = w.ref.finalizer
    cluster = rctx.cluster
    finalizers = [finalizer]
    for target in placed:
        other = ctx.worker(cluster, target) if target != w.name else None
        if other is not None and not other.deleting:
            finalizers.append(other.ref.finalizer)
    splits = synced.strategy.splits_replicas

    def split_of(current: Mapping[str, Any]) -> dict[str, int]:
        recorded = replicas.decode(
            (current["metadata"].get("annotations") or {}).get(translate.SPLIT_ANNOTATION)
        )
        total = current.get("spec", {}).get("replicas", 1)
        return replicas.split(total if isinstance(total, int) else 1, placed, recorded)

    def up_to_date(current: Mapping[str, Any]) -> bool:
        meta = current["metadata"]
        if not translate.has_finalizer(meta, finalizer):
            return False
        if splits:
            recorded = (meta.get("annotations") or {}).get(translate.SPLIT_ANNOTATION)
            return bool(recorded == replicas.encode(split_of(current)))
        return True

    if up_to_date(obj):
        return obj

    def mutate(current: dict[str, Any] | None) -> dict[str, Any]:
        if current is None:
            raise errors.not_found(synced.rt.plural, obj["metadata"]["name"])
        meta = current["metadata"]
        if meta.get("deletionTimestamp"):
            return current  # being deleted: no new finalizer; the next pass withdraws
        missing = [f for f in finalizers if not translate.has_finalizer(meta, f)]
        if missing:
            meta["finalizers"] = [*(meta.get("finalizers") or ()), *missing]
        if splits:
            annotations = meta.setdefault("annotations", {})
            annotations[translate.SPLIT_ANNOTATION] = replicas.encode(split_of(current))
        return current

    stored = await ctx.registry.store(synced.rt).guaranteed_update(
        rctx, obj["metadata"].get("namespace", ""), obj["metadata"]["name"], mutate, WRITE
    )
    return stored.view()


async def _ensure_namespace(w: TargetWorker, cluster: str, namespace: str, dns: str) -> None:
    known = w.namespaces.get("", dns)
    if known is not None and not known.get("metadata", {}).get("deletionTimestamp"):
        return
    in_flight = w.namespace_creations.get(dns)
    if in_flight is not None:
        # shield: a waiter cancelled (its worker stopping) must not cancel the creation
        await asyncio.shield(in_flight)
        return
    created: asyncio.Future[None] = asyncio.get_running_loop().create_future()
    w.namespace_creations[dns] = created
    try:
        await _create_namespace(w, cluster, namespace, dns)
    except Exception as exc:
        created.set_exception(exc)
        created.exception()  # the waiters, if any, raise it; none is also fine
        raise
    except BaseException:
        created.set_exception(
            downstream.DownstreamError(
                503, "ServiceUnavailable", f"creating namespace {dns} stopped"
            )
        )
        created.exception()
        raise
    else:
        created.set_result(None)
    finally:
        del w.namespace_creations[dns]


async def _create_namespace(w: TargetWorker, cluster: str, namespace: str, dns: str) -> None:
    body = translate.namespace_object(w.ref, cluster, namespace)
    try:
        held = await w.client.request("POST", "/api/v1/namespaces", body=body)
    except downstream.DownstreamError as exc:
        if exc.code != 409:
            raise
        held = await w.client.request("GET", f"/api/v1/namespaces/{dns}")
        refusal = translate.existing_namespace_refusal(held, (w.ref.uid, cluster, namespace), dns)
        if refusal is not None:
            raise downstream.DownstreamError(409, *refusal) from None
    # Known at once, not when the informer hears of it: a worker that comes to this namespace
    # after the creation ended and before that must not POST it again.
    if held.get("metadata"):
        w.namespaces.remember(held)
    w.locations[dns] = (w.ref.uid, cluster, namespace)


async def _delete(
    w: TargetWorker,
    synced: resources.Synced,
    dns: str,
    name: str,
    live: Mapping[str, Any],
) -> bool:
    """One DELETE guarded by the downstream uid; True when the object is gone now."""
    meta = live.get("metadata", {})
    if meta.get("deletionTimestamp"):
        return False  # already going: wait for it
    body = {
        "kind": "DeleteOptions",
        "apiVersion": "v1",
        "propagationPolicy": "Background",
        "preconditions": {"uid": meta.get("uid")},
    }
    try:
        result = await w.client.request("DELETE", synced.object_path(dns, name), body=body)
    except downstream.DownstreamError as exc:
        if exc.code not in (404, 409):
            raise
        result = {}
    cache = w.informers[synced.name].cache
    cached = cache.get((dns, name))
    # Only the object deleted here leaves the cache: after a 409 the name may already hold a
    # newer object the watch brought in, which must stay.
    if cached is not None and cached.get("metadata", {}).get("uid") == meta.get("uid"):
        del cache[(dns, name)]
    pending = result.get("kind") != "Status" and (result.get("metadata") or {}).get("finalizers")
    return not pending


async def _withdraw(
    ctx: Context,
    w: TargetWorker,
    key: ItemKey,
    synced: resources.Synced,
    obj: dict[str, Any],
    live: dict[str, Any] | None,
    dns: str,
) -> float | None:
    """The object must not be on this target (deleted, unplaced, detaching): remove it from
    there, then our finalizer. A target that stays unreachable holds a deletion only until the
    deletion timeout; the object is then recorded as left over and removed when it answers."""
    meta = obj["metadata"]
    name = meta["name"]
    finalizer = w.ref.finalizer
    if not translate.has_finalizer(meta, finalizer) and live is None:
        w.errors.pop(key, None)
        return None
    if not w.health.ready:
        if _deletion_overdue(meta, w.settings.deletion_timeout):
            w.leftovers.add(key)
            logger.warning(
                "sync target %s unreachable: %s %s/%s left downstream in %s",
                w.name,
                synced.rt.kind,
                meta.get("namespace", ""),
                name,
                dns,
            )
            await _remove_finalizer(ctx, synced, key, finalizer)
            return None
        w.require_ready()
    gone = True
    if live is not None:
        gone = await _delete(w, synced, dns, name, live)
    elif translate.has_finalizer(meta, finalizer):
        # The cache may lag behind our own writes: ask the target before letting go.
        try:
            found = await w.client.request("GET", synced.object_path(dns, name))
        except downstream.DownstreamError as exc:
            if exc.code != 404:
                raise
            found = None
        if found is not None and translate.is_owned(found, w.ref):
            gone = await _delete(w, synced, dns, name, found)
    if not gone:
        return 1.0
    w.leftovers.discard(key)
    w.errors.pop(key, None)
    if translate.has_finalizer(meta, finalizer):
        await _remove_finalizer(ctx, synced, key, finalizer)
    return None


def _deletion_overdue(meta: Mapping[str, Any], timeout: float) -> bool:
    stamp = meta.get("deletionTimestamp")
    if not stamp:
        return False
    started = _seconds(str(stamp))
    return started is None or time.time() - started >= timeout


async def _remove_finalizer(
    ctx: Context, synced: resources.Synced, key: ItemKey, finalizer: str
) -> None:
    _, cluster, namespace, name = key

    def mutate(current: dict[str, Any] | None) -> dict[str, Any]:
        if current is None:
            raise errors.not_found(synced.rt.plural, name)
        current["metadata"]["finalizers"] = translate.finalizers_without(
            current["metadata"], finalizer
        )
        return current

    try:
        await ctx.registry.store(synced.rt).guaranteed_update(
            RequestContext(cluster=cluster), namespace, name, mutate, WRITE
        )
    except errors.StatusError as exc:
        if exc.code != 404:
            raise


async def status_up(ctx: Context, synced: resources.Synced, key: ItemKey) -> int | None:
    """Write the object's summarised status upstream when it differs from what is there (only
    for kinds whose status comes up); the revision of that write, if one was made."""
    strategy = synced.strategy
    if not strategy.reports_status:
        return None
    resource, cluster, namespace, name = key
    rstore = ctx.registry.store(synced.rt)
    rctx = RequestContext(cluster=cluster)
    upstream = await rstore.find(rctx, namespace, name)
    if upstream is None or upstream.metadata.get("deletionTimestamp"):
        return None
    placed = await placed_for(ctx, resource, cluster, namespace)
    if not placed:
        return None
    views: list[aggregate.TargetView] = []
    elsewhere = False
    for target in placed:
        wk = ctx.worker(cluster, target)
        if wk is None:
            elsewhere = True  # run by another replica: its owner publishes its view
            continue
        if not wk.synced_caches:
            return None  # not all targets known yet (start-up): report nothing rather than guess
        views.append(_view_of(wk, resource, key, upstream.metadata.get("uid")))
    if elsewhere:
        return await _status_from_published(ctx, synced, key, upstream.view(), views, placed)
    annotations = upstream.metadata.get("annotations") or {}
    if any(k.startswith(status_views.PREFIX) for k in annotations):
        # All its targets are run here again: the published views are no longer read.
        try:
            await _publish(ctx, synced, key, upstream.view(), (), ())
        except errors.StatusError as exc:
            if exc.code != 404:
                raise
            return None
    summary = strategy.summarise(upstream.view(), views, system_fields.now_rfc3339())
    if summary == upstream.view().get("status"):
        return None

    def mutate(current: dict[str, Any] | None) -> dict[str, Any]:
        if current is None:
            raise errors.not_found(synced.rt.plural, name, group=synced.rt.group)
        current["status"] = strategy.summarise(current, views, system_fields.now_rfc3339())
        return current

    try:
        stored = await rstore.guaranteed_update(
            rctx, namespace, name, mutate, WRITE, subresource="status"
        )
    except errors.StatusError as exc:
        if exc.code != 404:
            raise
        return None
    return stored.revision


def _view_of(wk: TargetWorker, resource: str, key: ItemKey, uid: Any) -> aggregate.TargetView:
    """What the target's informer cache shows of the object (made from upstream `uid`)."""
    _, cluster, namespace, name = key
    dns = translate.downstream_namespace(wk.ref, cluster, namespace)
    live = wk.informers[resource].get(dns, name)
    if live is not None and _upstream_uid(live) != uid:
        live = None
    live_meta = (live or {}).get("metadata", {})
    gen_text = (live_meta.get("annotations") or {}).get(
        translate.UPSTREAM_GENERATION_ANNOTATION, "0"
    )
    return aggregate.TargetView(
        name=wk.name,
        status=(live.get("status") or {}) if live is not None else None,
        generation=int(live_meta.get("generation", 0) or 0),
        upstream_generation=int(gen_text) if str(gen_text).isdigit() else 0,
        stale=not wk.health.ready,
        error=wk.errors.get(key, ""),
        spec=live.get("spec") if live is not None else None,
    )


async def _publish(
    ctx: Context,
    synced: resources.Synced,
    key: ItemKey,
    obj: dict[str, Any],
    views: tuple[aggregate.TargetView, ...] | list[aggregate.TargetView],
    placed: tuple[str, ...] | list[str],
) -> dict[str, Any]:
    """Our targets' views into the object's annotations (others' left as they are), when they
    differ from what is there; returns the object as stored."""
    if not status_views.publish(dict(obj["metadata"].get("annotations") or {}), views, placed):
        return obj
    _, cluster, namespace, name = key

    def mutate(current: dict[str, Any] | None) -> dict[str, Any]:
        if current is None:
            raise errors.not_found(synced.rt.plural, name, group=synced.rt.group)
        annotations = current["metadata"].setdefault("annotations", {})
        status_views.publish(annotations, views, placed)
        if not annotations:
            del current["metadata"]["annotations"]
        return current

    stored = await ctx.registry.store(synced.rt).guaranteed_update(
        RequestContext(cluster=cluster), namespace, name, mutate, WRITE
    )
    return stored.view()


async def _status_from_published(
    ctx: Context,
    synced: resources.Synced,
    key: ItemKey,
    obj: dict[str, Any],
    views: list[aggregate.TargetView],
    placed: list[str],
) -> int | None:
    """The status of an object placed on targets of several replicas: publish ours, then sum
    every placed target's published view in the same compare-and-swap as the status write;
    the revision of that write, if one was made."""
    strategy = synced.strategy
    _, cluster, namespace, name = key
    try:
        obj = await _publish(ctx, synced, key, obj, views, placed)
    except errors.StatusError as exc:
        if exc.code != 404:
            raise
        return None

    def summary(current: dict[str, Any]) -> dict[str, Any] | None:
        found = status_views.published(current["metadata"].get("annotations"), placed)
        if len(found) < len(placed):
            return None  # a target's owner has not reported yet: it writes the sum when it does
        return strategy.summarise(current, found, system_fields.now_rfc3339())

    first = summary(obj)
    if first is None or first == obj.get("status"):
        return None

    def mutate(current: dict[str, Any] | None) -> dict[str, Any]:
        if current is None:
            raise errors.not_found(synced.rt.plural, name, group=synced.rt.group)
        status = summary(current)
        if status is not None:
            current["status"] = status
        return current

    try:
        stored = await ctx.registry.store(synced.rt).guaranteed_update(
            RequestContext(cluster=cluster), namespace, name, mutate, WRITE, subresource="status"
        )
    except errors.StatusError as exc:
        if exc.code != 404:
            raise
        return None
    return stored.revision


async def collect_namespaces(ctx: Context, w: TargetWorker) -> None:
    """Delete our downstream namespaces that hold nothing, ours or anyone else's, and whose
    upstream namespace is gone or no longer placed on this target (its logical cluster or
    namespace was deleted). Deleting a namespace deletes what is in it: an object a user or
    another controller put there keeps it (kcp's syncer also waits for an empty namespace)."""
    held = {
        ns for inf in w.informers.values() for keys in (inf.cache, inf.others) for ns, _ in keys
    }
    for (_, dns), ns_obj in list(w.namespaces.cache.items()):
        meta = ns_obj.get("metadata", {})
        located = translate.parse_locator(meta.get("annotations"))
        if dns in held or meta.get("deletionTimestamp") or located is None:
            continue
        uid, cluster, namespace = located
        if uid != w.ref.uid:
            continue
        if w.serves_cluster(cluster) and w.name in await placed_targets(ctx, cluster, namespace):
            continue
        body = {"kind": "DeleteOptions", "apiVersion": "v1", "preconditions": {"uid": meta["uid"]}}
        try:
            await w.client.request("DELETE", f"/api/v1/namespaces/{dns}", body=body)
        except downstream.DownstreamError as exc:
            if exc.code not in (404, 409):
                raise
        logger.info("sync target %s: removed namespace %s (%s|%s)", w.name, dns, cluster, namespace)

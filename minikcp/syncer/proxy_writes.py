"""Write-through proxy mode: writes in a namespace labelled `workload.minikcp.io/mode=proxy` reach
its sync target before they are stored upstream.

An admission plugin (`ProxyWrites.hook_for`, installed by the composition root, last in the
chain) whose validating phase runs right before the store writes: a create, update, patch or
delete of a synced kind by a user goes to the namespace's one target first, as the object the
syncer would write there (`translate.downstream_object`, server-side applied under the syncer's
field manager), so the syncer finds it in place and does not write it again. The upstream write
goes on only if the downstream one succeeded; the target's refusal (quota, admission,
validation, conflict) is the upstream answer, with its code, reason, message and details. A
target that is not Ready or does not answer within a few seconds is a 503 naming it; nothing is
queued. Writes of in-process components (the syncer, the garbage collector, the namespace
controller) take the asynchronous path, as do reads.

Ordering: downstream first, then upstream. The syncer's informer often hears of the downstream
write before the upstream one is stored: the object carries `translate.PROXY_WRITE_ANNOTATION`,
and for `translate.PROXY_WRITE_GRACE` the syncer does not undo it. If the upstream write then
fails (a lost race), the downstream copy stays ahead only that long: the syncer reconciles the
key from upstream (a created object that never made it upstream is deleted, an update is
overwritten by the upstream state).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from minikcp.apis import catalog
from minikcp.machinery import errors, users
from minikcp.registry import admission
from minikcp.registry import registry as upstream_registry
from minikcp.registry.objects import RequestContext, StoredObject
from minikcp.syncer import client as downstream
from minikcp.syncer import placement, proxy_targets, replicas, resources, translate

MODE_LABEL = "workload.minikcp.io/mode"
PROXY_MODE = "proxy"
_MODE_LABEL_JSON = b'"' + MODE_LABEL.encode() + b'"'
# Connection and answer of one downstream request: long enough for a busy cluster, short enough
# that a hung one fails a user's write fast.
DEFAULT_TIMEOUT = 5.0
# How long a proxy write waits for the SyncTarget index at start-up.
_INDEX_WAIT = 5.0


class ProxyWrites:
    """The proxy's admission plugin and the SyncTarget index it routes by (`run`)."""

    def __init__(
        self,
        reg: upstream_registry.Registry,
        *,
        extra_resources: tuple[str, ...] = (),
        timeout: float = DEFAULT_TIMEOUT,
    ) -> None:
        self.registry = reg
        self.clients = proxy_targets.Clients(reg, timeout=timeout)
        self.targets = proxy_targets.TargetIndex(reg, self.clients)
        # Synced by every target: the defaults and the server's --sync-resources.
        self._always = frozenset((*resources.DEFAULT_RESOURCES, *extra_resources))

    def hook_for(self, rt: catalog.ResourceType) -> admission.Admission | None:
        if not rt.namespaced:
            return None
        return _ProxyHook(self, resources.Synced(rt))

    async def run(self) -> None:
        """Keeps the SyncTarget index; until cancelled."""
        try:
            await self.targets.run()
        finally:
            await self.clients.close_all()

    async def route(
        self, ctx: RequestContext, synced: resources.Synced, obj: Mapping[str, Any]
    ) -> Route | None:
        """Where a user's write of `obj` goes first; None when it takes the asynchronous path."""
        if ctx.user is users.SYSTEM:
            return None
        if synced.name not in self._always and not self.targets.synced_anywhere(synced.name):
            return None
        meta = obj.get("metadata") or {}
        namespace = str(meta.get("namespace") or "")
        rctx = RequestContext(cluster=ctx.cluster)
        ns = await self.registry.namespaces.find(rctx, "", namespace)
        # Most namespaces lack the label: their stored JSON says so without being decoded.
        if ns is None or _MODE_LABEL_JSON not in ns.value:
            return None
        if (ns.metadata.get("labels") or {}).get(MODE_LABEL) != PROXY_MODE:
            return None
        if synced.strategy.never_synced(obj):
            return None
        if not self.targets.synced.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.targets.synced.wait(), _INDEX_WAIT)
            if not self.targets.synced.is_set():
                raise errors.service_unavailable(
                    f"namespace {namespace} is in proxy mode and the sync targets are not "
                    "known yet; try again"
                )
        serving = self.targets.serving(ctx.cluster)
        ns_meta = ns.metadata
        placed = placement.placed_on(
            namespace,
            ns_meta.get("labels"),
            ns_meta.get("annotations"),
            [t.candidate for t in serving],
        )
        name = str(meta.get("name") or meta.get("generateName") or "")
        if len(placed) != 1:
            raise _not_one_target(synced, name, namespace, placed)
        target = next(t for t in serving if t.name == placed[0])
        if synced.name not in self._always and synced.name not in target.resources:
            return None  # the target does not sync this kind: nothing goes there
        if not target.ready:
            raise errors.service_unavailable(
                f"sync target {target.name} is not ready: {target.problem}"
            )
        return Route(self, target, await self.clients.get(target), synced, ctx.cluster)


def _not_one_target(
    synced: resources.Synced, name: str, namespace: str, placed: list[str]
) -> errors.StatusError:
    where = f"on {len(placed)} sync targets ({', '.join(placed)})" if placed else "on none"
    return errors.forbidden(
        synced.rt.plural,
        name,
        f"namespace {namespace} is in proxy mode ({MODE_LABEL}={PROXY_MODE}) and placed {where}; "
        "proxy mode writes through exactly one sync target",
        group=synced.rt.group,
    )


@dataclass(slots=True)
class Route:
    """One write's way through its target."""

    proxy: ProxyWrites
    target: proxy_targets.StoredTarget
    client: proxy_targets.Client
    synced: resources.Synced
    cluster: str

    async def create(self, ctx: RequestContext, obj: Mapping[str, Any], dry_run: bool) -> None:
        meta = obj["metadata"]
        namespace, name = meta.get("namespace", ""), meta["name"]
        # Downstream first would overwrite a namesake's copy: an existing name fails here.
        if await self.proxy.registry.store(self.synced.rt).find(ctx, namespace, name) is not None:
            raise errors.already_exists(self.synced.rt.plural, name, group=self.synced.rt.group)
        desired = self._desired(obj)
        path = self.synced.object_path(desired["metadata"]["namespace"], name)
        with self._answers():
            await self._ensure_namespace(namespace)
            if await self._get(path) is not None:
                raise errors.already_exists(self.synced.rt.plural, name, group=self.synced.rt.group)
            await self._apply(path, namespace, desired, dry_run)

    async def update(self, obj: Mapping[str, Any], old: Mapping[str, Any], dry_run: bool) -> None:
        if obj["metadata"].get("deletionTimestamp") or old["metadata"].get("deletionTimestamp"):
            return  # its deletion went down already; the syncer withdraws what is left
        desired = self._desired(obj)
        if _applied_hash(desired) == _applied_hash(self._desired(old)):
            return  # nothing the target holds changes (finalizers, managedFields)
        namespace, name = obj["metadata"].get("namespace", ""), obj["metadata"]["name"]
        path = self.synced.object_path(desired["metadata"]["namespace"], name)
        with self._answers():
            await self._ensure_namespace(namespace)
            live = await self._get(path)
            if live is not None:
                self._check_ours(live, old, name)
                if not translate.needs_apply(desired, live):
                    return  # held already (a retry of this write after a lost race upstream)
                # The state read is a precondition: a change meanwhile is a 409 from the target.
                desired["metadata"]["resourceVersion"] = live["metadata"].get("resourceVersion")
            await self._apply(path, namespace, desired, dry_run)

    async def delete(self, current: StoredObject, dry_run: bool) -> None:
        meta = current.metadata
        if meta.get("deletionTimestamp"):
            return  # a deletion under way went down when it started
        dns = translate.downstream_namespace(self.target.ref, self.cluster, meta["namespace"])
        path = self.synced.object_path(dns, meta["name"])
        with self._answers():
            live = await self._get(path)
            if live is None or _upstream_uid(live) != meta.get("uid"):
                return  # nothing of this object there
            live_meta = live["metadata"]
            if not translate.is_owned(live, self.target.ref):
                return
            body = {
                "kind": "DeleteOptions",
                "apiVersion": "v1",
                "propagationPolicy": "Background",
                "preconditions": {
                    "uid": live_meta.get("uid"),
                    "resourceVersion": live_meta.get("resourceVersion"),
                },
            }
            try:
                await self.client.api.request("DELETE", path, params=_dry_run(dry_run), body=body)
            except downstream.DownstreamError as exc:
                if exc.code != 404:
                    raise

    # -- the downstream requests ----------------------------------------------------------------

    def _desired(self, obj: Mapping[str, Any]) -> dict[str, Any]:
        strategy = self.synced.strategy
        split = None
        if strategy.splits_replicas:
            # One target holds all replicas: what the syncer's split gives it.
            total = (obj.get("spec") or {}).get("replicas", 1)
            split = replicas.split(total if isinstance(total, int) else 1, [self.target.name], None)
        return translate.downstream_object(
            strategy, obj, self.target.ref, self.cluster, split=split
        )

    async def _get(self, path: str) -> dict[str, Any] | None:
        try:
            return await self.client.api.request("GET", path)
        except downstream.DownstreamError as exc:
            if exc.code == 404:
                return None
            raise

    async def _apply(
        self, path: str, namespace: str, desired: dict[str, Any], dry_run: bool
    ) -> None:
        params = {"fieldManager": translate.FIELD_MANAGER, "force": "true", **_dry_run(dry_run)}
        # Not in the applied hash: the syncer finds what it would write, and waits for upstream.
        annotations = desired["metadata"]["annotations"]
        annotations[translate.PROXY_WRITE_ANNOTATION] = f"{time.time():.3f}"
        for attempt in (0, 1):
            try:
                await self.client.api.request(
                    "PATCH", path, params=params, body=desired, content_type=downstream.APPLY_PATCH
                )
                return
            except downstream.DownstreamError as exc:
                if attempt or not _namespace_missing(exc):
                    raise
                # The target lost the namespace since we made it: make it again, once.
                self.client.namespaces.discard(desired["metadata"]["namespace"])
                await self._ensure_namespace(namespace)

    async def _ensure_namespace(self, namespace: str) -> None:
        """The downstream namespace, made as the syncer makes it (same object, same locator)."""
        ref = self.target.ref
        dns = translate.downstream_namespace(ref, self.cluster, namespace)
        if dns in self.client.namespaces:
            return
        body = translate.namespace_object(ref, self.cluster, namespace)
        try:
            await self.client.api.request("POST", "/api/v1/namespaces", body=body)
        except downstream.DownstreamError as exc:
            if exc.code != 409:
                raise
            existing = await self.client.api.request("GET", f"/api/v1/namespaces/{dns}")
            ours = (ref.uid, self.cluster, namespace)
            refusal = translate.existing_namespace_refusal(existing, ours, dns)
            if refusal is not None:
                raise downstream.DownstreamError(409, *refusal) from None
        self.client.namespaces.add(dns)

    def _check_ours(self, live: Mapping[str, Any], old: Mapping[str, Any], name: str) -> None:
        rt = self.synced.rt
        if not translate.is_owned(live, self.target.ref):
            raise errors.conflict(
                rt.plural,
                name,
                f"it exists on sync target {self.target.name} and was not written by minikcp",
                group=rt.group,
            )
        if _upstream_uid(live) not in ("", old["metadata"].get("uid")):
            raise errors.conflict(
                rt.plural,
                name,
                f"sync target {self.target.name} still holds an earlier object of this name; "
                "try again",
                group=rt.group,
            )

    @contextlib.contextmanager
    def _answers(self) -> Iterator[None]:
        """The target's answers as the upstream answer."""
        try:
            yield
        except downstream.Unreachable as exc:
            raise errors.service_unavailable(
                f"sync target {self.target.name} is unreachable: {exc}"
            ) from None
        except downstream.DownstreamError as exc:
            raise refused(self.target.name, exc) from None


def refused(target: str, exc: downstream.DownstreamError) -> errors.StatusError:
    """The target's refusal as the upstream Status: same code, reason, message and details;
    a server error of the target is a 503 naming it (the upstream server did not fail)."""
    if exc.code >= 500:
        return errors.service_unavailable(
            f"sync target {target} failed the write ({exc.code}): {exc.message}"
        )
    details = exc.details
    causes = [
        errors.Cause(
            str(c.get("reason") or ""), str(c.get("message") or ""), str(c.get("field") or "")
        )
        for c in details.get("causes") or ()
        if isinstance(c, Mapping)
    ]
    retry = details.get("retryAfterSeconds")
    return errors.StatusError(
        exc.code,
        exc.reason,
        exc.message or f"sync target {target} refused the write ({exc.code})",
        name=str(details.get("name") or ""),
        group=str(details.get("group") or ""),
        kind=str(details.get("kind") or ""),
        causes=causes,
        retry_after_seconds=retry if isinstance(retry, int) else 0,
        uid=str(details.get("uid") or ""),
    )


def _applied_hash(desired: Mapping[str, Any]) -> str:
    return str(desired["metadata"]["annotations"].get(translate.APPLIED_HASH_ANNOTATION, ""))


def _upstream_uid(live: Mapping[str, Any]) -> str:
    annotations = live.get("metadata", {}).get("annotations") or {}
    return str(annotations.get(translate.UPSTREAM_UID_ANNOTATION, ""))


def _namespace_missing(exc: downstream.DownstreamError) -> bool:
    return exc.code == 404 and exc.details.get("kind") == "namespaces"


def _dry_run(dry_run: bool) -> dict[str, str]:
    return {"dryRun": "All"} if dry_run else {}


async def live_in_proxy_mode(
    reg: upstream_registry.Registry,
    client: downstream.DownstreamClient,
    path: str,
    cluster: str,
    namespace: str,
    cached: dict[str, Any] | None,
) -> dict[str, Any] | None:
    """The syncer's view of a downstream object it is about to write: in a proxy namespace the
    target as it is now (a proxy write may be ahead of the syncer's informer, and need not be
    written again), elsewhere `cached`."""
    ns = await reg.namespaces.find(RequestContext(cluster=cluster), "", namespace)
    if ns is None or (ns.metadata.get("labels") or {}).get(MODE_LABEL) != PROXY_MODE:
        return cached
    try:
        return await client.request("GET", path)
    except downstream.DownstreamError as exc:
        if exc.code != 404:
            raise
        return None


class _ProxyHook(admission.Admission):
    """The validating phase of one kind's writes: the last hook before the store writes."""

    def __init__(self, proxy: ProxyWrites, synced: resources.Synced) -> None:
        self._proxy = proxy
        self._synced = synced

    async def validate_create(
        self, ctx: RequestContext, obj: dict[str, Any], dry_run: bool
    ) -> None:
        route = await self._proxy.route(ctx, self._synced, obj)
        if route is not None:
            await route.create(ctx, obj, dry_run)

    async def validate_update(
        self, ctx: RequestContext, obj: dict[str, Any], old: Mapping[str, Any], dry_run: bool
    ) -> None:
        route = await self._proxy.route(ctx, self._synced, obj)
        if route is not None:
            await route.update(obj, old, dry_run)

    async def validate_delete(
        self, ctx: RequestContext, current: StoredObject, dry_run: bool
    ) -> None:
        route = await self._proxy.route(ctx, self._synced, current.view())
        if route is not None:
            await route.delete(current, dry_run)

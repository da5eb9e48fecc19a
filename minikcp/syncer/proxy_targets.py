"""The SyncTargets as stored, for proxy writes on any replica: which targets serve a logical
cluster, whether they are Ready, and a downstream client for each.

A replica serving a proxy write need not run the target's worker (among replicas each runs a
shard of the targets), so what it knows comes from the stored SyncTargets: one list and watch
across logical clusters keeps a small index (a few fields per target, nothing per idle logical
cluster). Clients are made from the kubeconfig Secret on first use, cached per target and
dropped when the target changes (uid, Secret reference, deletion) or the Secret does.
"""

from __future__ import annotations

import asyncio
import base64
import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from minikcp.machinery import errors, list_options
from minikcp.registry import registry as upstream_registry
from minikcp.registry import watching
from minikcp.registry.objects import RequestContext, StoredObject
from minikcp.syncer import client as downstream
from minikcp.syncer import kubeconfig, placement, translate

logger = logging.getLogger(__name__)

TargetKey = tuple[str, str]  # (logical cluster of the SyncTarget, its name)
_SECRETS = ("", "v1", "secrets")
# Proxy writes are the users' own requests, not a backlog: a bucket that only stops a runaway.
# Each write is two requests (a read, then the apply): at 200/s eight clients already queued
# here 40 ms per request, and proxy writes ran at a hundred a second whatever the target took.
_QPS = 1000.0
_BURST = 2000


@dataclass(frozen=True, slots=True)
class StoredTarget:
    """What a proxy write needs of one SyncTarget, from its stored object."""

    cluster: str
    name: str
    uid: str
    labels: Mapping[str, str]
    serves: frozenset[str]
    resources: frozenset[str]  # spec.resources: synced beside the defaults
    secret: tuple[str, str, str]  # kubeconfig Secret: namespace, name, data key
    ready: bool
    reached: bool
    deleting: bool
    problem: str  # the Ready condition's message while not Ready

    @property
    def key(self) -> TargetKey:
        return (self.cluster, self.name)

    @property
    def ref(self) -> translate.TargetRef:
        return translate.TargetRef(cluster=self.cluster, name=self.name, uid=self.uid)

    @property
    def candidate(self) -> placement.Candidate:
        return placement.Candidate(
            name=self.name,
            labels=self.labels,
            ready=self.ready,
            reached=self.reached,
            deleting=self.deleting,
        )


def stored_target(obj: StoredObject) -> StoredTarget:
    view = obj.view()
    meta = view.get("metadata") or {}
    spec = view.get("spec") or {}
    status = view.get("status") or {}
    ready: Mapping[str, Any] = next(
        (c for c in status.get("conditions") or () if c.get("type") == "Ready"), {}
    )
    ref = spec.get("kubeconfigSecretRef") or {}
    return StoredTarget(
        cluster=obj.cluster,
        name=str(meta.get("name", "")),
        uid=str(meta.get("uid", "")),
        labels=dict(meta.get("labels") or {}),
        serves=frozenset(spec.get("clusters") or ()) or frozenset({obj.cluster}),
        resources=frozenset(str(r).strip() for r in spec.get("resources") or ()),
        secret=(
            str(ref.get("namespace") or ""),
            str(ref.get("name") or ""),
            str(ref.get("key") or "kubeconfig"),
        ),
        ready=ready.get("status") == "True",
        reached=bool(status.get("lastSyncerHeartbeatTime")),
        deleting=bool(meta.get("deletionTimestamp")),
        problem=str(ready.get("message") or ready.get("reason") or "no Ready condition yet"),
    )


class TargetIndex:
    """Every stored SyncTarget, by the logical clusters it serves (`*`: all of them)."""

    def __init__(self, reg: upstream_registry.Registry, clients: Clients) -> None:
        self._registry = reg
        self._clients = clients
        self._targets: dict[TargetKey, StoredTarget] = {}
        self._by_cluster: dict[str, dict[TargetKey, StoredTarget]] = {}
        # How many targets sync each resource named in spec.resources (beyond the defaults).
        self._extra: dict[str, int] = {}
        self.synced = asyncio.Event()

    def serving(self, cluster: str) -> list[StoredTarget]:
        return [
            *self._by_cluster.get(cluster, {}).values(),
            *self._by_cluster.get("*", {}).values(),
        ]

    def synced_anywhere(self, resource: str) -> bool:
        """Whether some target names `resource` in its spec.resources."""
        return resource in self._extra

    async def run(self) -> None:
        """List and watch SyncTargets in every logical cluster until cancelled."""
        rt = self._registry.catalog.by_resource(*translate.SYNC_TARGET)
        if rt is None:
            self.synced.set()  # nothing is ever placed: proxy writes are refused as unplaced
            await asyncio.Event().wait()
            return
        everywhere = RequestContext(cluster="*")
        while True:
            try:
                listing = await self._registry.store(rt).list(
                    everywhere, "", list_options.ListOptions()
                )
                await self._replace([stored_target(o) for o in listing.items])
                self.synced.set()
                opts = list_options.ListOptions(
                    watch=True, allow_watch_bookmarks=True, resource_version=str(listing.revision)
                )
                async for event in self._registry.watch(rt, everywhere, "", opts):
                    if event.type == watching.ERROR:
                        break  # expired: list again
                    if event.object is None:
                        continue
                    if event.type == watching.DELETED:
                        await self._remove((event.object.cluster, event.object.metadata["name"]))
                    else:
                        await self._put(stored_target(event.object))
            except errors.StatusError as exc:
                logger.warning("proxy writes: watch of sync targets failed: %s", exc.message)
                await asyncio.sleep(1.0)

    async def _replace(self, found: list[StoredTarget]) -> None:
        wanted = {t.key for t in found}
        for key in [k for k in self._targets if k not in wanted]:
            await self._remove(key)
        for target in found:
            await self._put(target)

    async def _put(self, target: StoredTarget) -> None:
        before = self._targets.get(target.key)
        if before is not None:
            self._unindex(before)
            if (before.uid, before.secret, before.deleting) != (
                target.uid,
                target.secret,
                target.deleting,
            ):
                await self._clients.drop(target.key)
        self._targets[target.key] = target
        for cluster in target.serves:
            self._by_cluster.setdefault(cluster, {})[target.key] = target
        for resource in target.resources:
            self._extra[resource] = self._extra.get(resource, 0) + 1

    async def _remove(self, key: TargetKey) -> None:
        before = self._targets.pop(key, None)
        if before is not None:
            self._unindex(before)
        await self._clients.drop(key)

    def _unindex(self, target: StoredTarget) -> None:
        for cluster in target.serves:
            members = self._by_cluster.get(cluster)
            if members is not None:
                members.pop(target.key, None)
                if not members:
                    del self._by_cluster[cluster]
        for resource in target.resources:
            left = self._extra.get(resource, 0) - 1
            if left > 0:
                self._extra[resource] = left
            else:
                self._extra.pop(resource, None)


@dataclass
class Client:
    """A downstream client of one target and the downstream namespaces known to exist there."""

    secret_revision: int
    uid: str
    api: downstream.DownstreamClient
    namespaces: set[str] = field(default_factory=set)


class Clients:
    """One client per target, made from its kubeconfig Secret as stored."""

    def __init__(self, reg: upstream_registry.Registry, *, timeout: float) -> None:
        self._registry = reg
        self._timeout = timeout
        self._clients: dict[TargetKey, Client] = {}

    async def get(self, target: StoredTarget) -> Client:
        """The target's client; a 503 naming the target when its kubeconfig is unusable."""
        secret = await self._secret(target)
        cached = self._clients.get(target.key)
        if cached is not None and (cached.secret_revision, cached.uid) == (
            secret.revision,
            target.uid,
        ):
            return cached
        try:
            text = _kubeconfig_text(secret, target)
            conn = kubeconfig.connection(kubeconfig.load(text))
        except kubeconfig.KubeconfigError as exc:
            raise _no_kubeconfig(target, str(exc)) from None
        made = Client(
            secret_revision=secret.revision,
            uid=target.uid,
            api=downstream.DownstreamClient(conn, qps=_QPS, burst=_BURST, timeout=self._timeout),
        )
        self._clients[target.key] = made
        if cached is not None:
            await cached.api.close()  # the Secret or the target changed
        return made

    async def drop(self, key: TargetKey) -> None:
        found = self._clients.pop(key, None)
        if found is not None:
            await found.api.close()

    async def close_all(self) -> None:
        for key in list(self._clients):
            await self.drop(key)

    async def _secret(self, target: StoredTarget) -> StoredObject:
        namespace, name, _ = target.secret
        if not namespace or not name:
            raise _no_kubeconfig(target, "spec.kubeconfigSecretRef names no Secret")
        rt = self._registry.catalog.by_resource(*_SECRETS)
        assert rt is not None
        found = await self._registry.store(rt).find(
            RequestContext(cluster=target.cluster), namespace, name
        )
        if found is None:
            raise _no_kubeconfig(target, f"Secret {namespace}/{name} not found")
        return found


def _kubeconfig_text(secret: StoredObject, target: StoredTarget) -> str:
    namespace, name, data_key = target.secret
    data: Any = (secret.view().get("data") or {}).get(data_key)
    if not data:
        raise kubeconfig.KubeconfigError(f"Secret {namespace}/{name} has no key {data_key!r}")
    try:
        return base64.b64decode(data).decode()
    except (ValueError, UnicodeDecodeError):
        raise kubeconfig.KubeconfigError(
            f"Secret {namespace}/{name} {data_key!r} is not text"
        ) from None


def _no_kubeconfig(target: StoredTarget, detail: str) -> errors.StatusError:
    return errors.service_unavailable(
        f"sync target {target.name} has no usable kubeconfig: {detail}"
    )

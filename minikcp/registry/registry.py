"""The registry: one store per resource type over one storage, shared by every logical cluster."""

from __future__ import annotations

import asyncio
import collections
import itertools
from collections.abc import AsyncGenerator, AsyncIterator, Iterable
from dataclasses import dataclass
from typing import Any

import orjson

from minikcp.apis import catalog
from minikcp.machinery import errors, list_options, rbac
from minikcp.registry import (
    admission,
    bound_apis,
    custom_catalogs,
    fencing,
    held_objects,
    keys,
    limit_range_admission,
    namespace_defaults,
    namespaces,
    quota_admission,
    rbac_policy,
    reviews,
    service_account_admission,
    status_owners,
    store,
    strategies,
    system_fields,
    token_requests,
    watching,
)
from minikcp.registry import storage_errors as interpreted
from minikcp.registry.objects import RequestContext
from storage import errors as storage_errors
from storage import hub as storage_hub
from storage import interface as storage_interface

_BOOTSTRAP_KEY = "/registry/minikcp.io/bootstrap"
_CUSTOM_STORES = 4096
_SCAN_PAGE = 1000
# Prefix deletions in flight at once: the store commits concurrent writes in groups.
_DELETE_CONCURRENCY = 256


@dataclass(frozen=True, slots=True)
class Change:
    """One change of an object as `Registry.changes` reports it; value None is a deletion."""

    key: keys.ObjectKey
    value: bytes | None
    revision: int
    prev_value: bytes | None = None  # what the object was before; None for a creation


# `Registry.changes` yields this when events may have been lost: re-read what you keep.
RESYNC = Change(keys.ObjectKey("", "", ""), None, 0)


class Registry:
    """Entry point for the server, controllers and the syncer alike (same semantics in-process)."""

    def __init__(
        self,
        storage: storage_interface.Storage,
        hub: storage_hub.WatchHub,
        *,
        bootstrap_time: str,
        types: catalog.Catalog | None = None,
        watch_settings: watching.WatchSettings = watching.DEFAULT_SETTINGS,
        service_account_tokens: token_requests.TokenSettings | None = None,
        root_ca: str = "",
    ) -> None:
        self.service_account_tokens = service_account_tokens
        # Components run under a lease write through the fence (fencing.py); requests never wait.
        storage = fencing.FencedStorage(storage)
        self.storage = storage
        self.hub = hub
        self.catalog = types or catalog.Catalog.builtin()
        self.watch_settings = watch_settings
        self._events = watching.EventObjects()
        # Who reports Deployment status: the registry at once, or a controller (per namespace).
        self.deployment_status = status_owners.DeploymentStatusOwners()
        self._stores: dict[catalog.ResourceType, store.ResourceStore] = {}
        self._custom_stores: collections.OrderedDict[catalog.ResourceType, store.ResourceStore]
        self._custom_stores = collections.OrderedDict()
        self._reviewers: dict[catalog.ResourceType, reviews.ReviewStore | None] = {}
        self._admission: dict[tuple[str, str], list[admission.Admission]] = {}
        ns_type = self.catalog.by_resource("", "v1", "namespaces")
        assert ns_type is not None
        # The objects built for reads from the store's memory, shared by every store (bounded).
        self._held = held_objects.HeldObjects()
        self.namespaces = namespaces.NamespaceStore(
            ns_type,
            strategies.strategy_for(ns_type),
            storage,
            bootstrap_time=bootstrap_time,
            held=self._held,
        )
        self._stores[ns_type] = self.namespaces
        crd_type = self.catalog.by_resource(
            "apiextensions.k8s.io", "v1", "customresourcedefinitions"
        )
        assert crd_type is not None
        # APIBindings and APIResourceSchemas, indexed for the catalogs of binding clusters.
        binding_type = self.catalog.by_resource("apis.kcp.io", "v1alpha1", "apibindings")
        schema_type = self.catalog.by_resource("apis.kcp.io", "v1alpha1", "apiresourceschemas")
        export_type = self.catalog.by_resource("apis.kcp.io", "v1alpha1", "apiexports")
        assert binding_type is not None and schema_type is not None and export_type is not None
        self.bound_apis = bound_apis.BoundAPIs(binding_type, schema_type, export_type)
        for rt in (binding_type, schema_type):
            self._stores[rt] = bound_apis.ObservedStore(
                rt,
                strategies.strategy_for(rt),
                storage,
                namespace_check=self.namespaces.check_writable,
                held=self._held,
                index=self.bound_apis,
            )
        self.crds = custom_catalogs.CustomCatalogs(crd_type, self.catalog, self.bound_apis)
        self._stores[crd_type] = custom_catalogs.CrdStore(
            crd_type,
            strategies.strategy_for(crd_type),
            storage,
            namespace_check=self.namespaces.check_writable,
            held=self._held,
            index=self.crds,
        )
        # Every namespace's default ServiceAccount (and, given the server's CA, kube-root-ca.crt).
        self.root_ca = root_ca
        defaults = [("serviceaccounts", namespace_defaults.SERVICE_ACCOUNT)]
        if root_ca:
            defaults.append(("configmaps", namespace_defaults.root_ca_config_map(root_ca)))
        self.namespace_defaults: list[namespace_defaults.NamespaceDefaultStore] = []
        for plural, default in defaults:
            default_rt = self.catalog.by_resource("", "v1", plural)
            assert default_rt is not None
            found = namespace_defaults.NamespaceDefaultStore(
                default_rt,
                strategies.strategy_for(default_rt),
                storage,
                namespace_check=self.namespaces.check_writable,
                held=self._held,
                default=default,
                bootstrap_time=bootstrap_time,
            )
            self._stores[default_rt] = found
            self.namespace_defaults.append(found)
        # RBAC of every logical cluster over the shared bootstrap policy: the one authorizer.
        self.policy = rbac_policy.PolicyStore(self._rbac_store)
        # Admission plugins of every namespaced kind, in upstream's order: LimitRanger, then
        # ResourceQuota (each with its per-namespace index of LimitRanges or quotas).
        self._plugins: list[admission.PluginFactory] = []
        limit_rt = self.catalog.by_resource("", "v1", "limitranges")
        quota_rt = self.catalog.by_resource("", "v1", "resourcequotas")
        assert limit_rt is not None and quota_rt is not None
        self.limit_ranges = limit_range_admission.LimitRanger(
            limit_range_admission.limit_range_index(limit_rt, storage)
        )
        self.quota = quota_admission.QuotaAdmission(
            quota_admission.quota_index(quota_rt, storage), storage
        )
        self.admit_all(self.limit_ranges.hook_for)
        self.admit_all(self.quota.hook_for)
        # Pods' ServiceAccount admission (a kind's own hooks run before the plugins above).
        self.admit(
            "", "Pod", service_account_admission.ServiceAccountAdmission(self.service_accounts)
        )

    @classmethod
    async def open(
        cls,
        storage: storage_interface.Storage,
        hub: storage_hub.WatchHub,
        **kwargs: object,
    ) -> Registry:
        """Reads (or records, on first start) when this store was created: O(1) per store."""
        created = system_fields.now_rfc3339()
        item = await storage.get(_BOOTSTRAP_KEY)
        if item is None:
            try:
                await storage.create(_BOOTSTRAP_KEY, orjson.dumps({"created": created}))
            except storage_errors.KeyExists:
                item = await storage.get(_BOOTSTRAP_KEY)
        if item is not None:
            created = orjson.loads(item.value)["created"]
        reg = cls(storage, hub, bootstrap_time=created, **kwargs)  # type: ignore[arg-type]
        await reg.crds.load(storage)  # one range read of the CRDs, however many clusters
        await reg.bound_apis.load(storage)  # and of the APIBindings and APIResourceSchemas
        return reg

    async def run(self) -> None:
        """The registry's own background work (cache invalidation); runs until cancelled."""
        async with asyncio.TaskGroup() as tasks:
            tasks.create_task(self.namespaces.run(self.hub), name="namespace-cache")
            tasks.create_task(self.policy.run(self.hub), name="rbac-cache")
            tasks.create_task(self.crds.run(self.storage, self.hub), name="crd-catalogs")
            tasks.create_task(self.limit_ranges.limits.run(self.hub), name="limit-range-cache")
            tasks.create_task(self.quota.quotas.run(self.hub), name="quota-cache")
            tasks.create_task(self.quota.run(), name="quota-admission")
            tasks.create_task(self.bound_apis.run(self.storage, self.hub), name="bound-apis")
            sync_targets = self.catalog.by_resource(*status_owners.SYNC_TARGET)
            if sync_targets is not None:
                tasks.create_task(
                    self.deployment_status.run(self.storage, self.hub, sync_targets),
                    name="deployment-status-owners",
                )

    @property
    def service_accounts(self) -> namespace_defaults.NamespaceDefaultStore:
        return self.namespace_defaults[0]

    def catalog_for(self, cluster: str) -> catalog.Catalog:
        """The kinds served in a logical cluster: the built-ins plus its established CRDs' and
        its APIBindings' (`*`: every CRD kind served in some cluster, for lists and watches)."""
        return self.crds.catalog_for(cluster)

    # -- whole-resource access for controllers and tenancy ---------------------------------------

    async def scan(
        self, rt: catalog.ResourceType, cluster: str | None, namespace: str = ""
    ) -> tuple[list[tuple[keys.ObjectKey, bytes]], int]:
        """The stored objects of rt (in one cluster, or all with None; in one namespace, or all
        with "") and the read revision."""
        prefix = keys.list_prefix(rt, cluster, namespace)
        out: list[tuple[keys.ObjectKey, bytes]] = []
        start_after: str | None = None
        at_revision: int | None = None
        while True:
            try:
                page = await self.storage.range(
                    prefix, limit=_SCAN_PAGE, start_after=start_after, at_revision=at_revision
                )
            except storage_errors.StorageError as exc:
                raise interpreted.interpret(exc, rt) from None
            at_revision = page.revision
            out.extend((keys.parse_key(rt, item.key), item.value) for item in page.items)
            if not page.more or not page.items:
                return out, page.revision
            start_after = page.items[-1].key

    async def pages(self, prefix: str) -> AsyncIterator[list[tuple[str, bytes]]]:
        """Every stored key and value under `prefix`, a page at a time, for a controller that
        looks at everything once (at start-up). Each page is read as it is then: a consumer
        that must be exact follows the watch from a revision taken before the first page."""
        start_after: str | None = None
        while True:
            try:
                page = await self.storage.range(prefix, limit=_SCAN_PAGE, start_after=start_after)
            except storage_errors.StorageError as exc:
                raise errors.service_unavailable(f"storage unavailable: {exc}") from None
            if page.items:
                yield [(item.key, item.value) for item in page.items]
            if not page.more or not page.items:
                return
            start_after = page.items[-1].key

    async def changes(self, rt: catalog.ResourceType, *, after: int) -> AsyncIterator[Change]:
        """Every change of rt's objects in all clusters after revision `after`, for ever.

        When the stream was cut off (a slow consumer) or `after` is too old, yields `RESYNC`
        and goes on from the newest revision: the consumer re-reads what it keeps.
        """
        prefix = keys.resource_prefix(rt)
        while True:
            try:
                watcher = self.hub.watch(prefix, after=after)
            except storage_errors.Compacted:
                after = self.hub.revision
                yield RESYNC
                continue
            try:
                async for event in watcher:
                    after = event.revision
                    yield Change(
                        keys.parse_key(rt, event.key), event.value, event.revision, event.prev_value
                    )
            except (storage_errors.WatcherClosed, storage_errors.Compacted):
                pass
            finally:
                watcher.close()
            after = self.hub.revision
            yield RESYNC
            await asyncio.sleep(0.1)

    def cluster_gone(self, cluster: str) -> None:
        """A logical cluster was deleted (its LogicalCluster's deletion event): the caches that
        keep something per logical cluster drop it, so a deleted tree leaves nothing behind
        that only its own events could have dropped."""
        self.namespaces.cluster_gone(cluster)
        self.policy.cluster_gone(cluster)
        self.quota.quotas.cluster_gone(cluster)
        self.limit_ranges.limits.cluster_gone(cluster)

    def cached_clusters(self) -> set[str]:
        """The logical clusters those caches keep something about."""
        return (
            self.namespaces.cached_clusters()
            | self.policy.cached_clusters()
            | self.quota.quotas.cached_clusters()
            | self.limit_ranges.limits.cached_clusters()
        )

    async def delete_prefixes(self, prefixes: Iterable[str]) -> None:
        """Deletes every key under each prefix (many at once; the store groups the commits).
        The prefixes are taken as they are deleted: a generator never has them all in memory."""
        taken = iter(prefixes)
        while chunk := list(itertools.islice(taken, _DELETE_CONCURRENCY)):
            try:
                await asyncio.gather(*(self.storage.delete_prefix(p) for p in chunk))
            except storage_errors.StorageError as exc:
                raise errors.service_unavailable(f"storage unavailable: {exc}") from None

    async def delete_custom_resources(self, rt: catalog.ResourceType, cluster: str) -> int:
        """Every object of a custom resource in one logical cluster, in one prefix deletion."""
        deleted = await self.storage.delete_prefix(keys.list_prefix(rt, cluster))
        return len(deleted)

    def namespaced_types(self, cluster: str) -> list[catalog.ResourceType]:
        """One served type per storage prefix of namespaced objects in a logical cluster (the
        versions of a resource share their objects)."""
        found: dict[str, catalog.ResourceType] = {}
        for rt in self.catalog_for(cluster).all_types():
            if rt.namespaced and "delete" in rt.verbs:
                found.setdefault(keys.resource_prefix(rt), rt)
        return list(found.values())

    def admit(self, group: str, kind: str, hook: admission.Admission) -> None:
        """Adds `hook` to the writes of a kind, after the kind's hooks added before, in every
        logical cluster."""
        self._admission.setdefault((group, kind), []).append(hook)
        self._readmit()

    def admit_all(self, plugin: admission.PluginFactory) -> None:
        """Adds a plugin that gives a hook to any kind it wants, after those added before."""
        self._plugins.append(plugin)
        self._readmit()

    def _readmit(self) -> None:
        for rt, existing in [*self._stores.items(), *self._custom_stores.items()]:
            existing.admission = self._admission_for(rt)

    def _admission_for(self, rt: catalog.ResourceType) -> admission.Admission | None:
        hooks = [h for plugin in self._plugins if (h := plugin(rt)) is not None]
        own = self._admission.get((rt.group, rt.kind), [])
        return admission.chain([*own, *hooks])

    def _new_store(self, rt: catalog.ResourceType) -> store.ResourceStore:
        found = store.ResourceStore(
            rt,
            strategies.strategy_for(rt, status_owners=self.deployment_status, policy=self.policy),
            self.storage,
            namespace_check=self.namespaces.check_writable,
            held=self._held,
        )
        found.admission = self._admission_for(rt)
        return found

    def _custom_store(self, rt: catalog.ResourceType) -> store.ResourceStore:
        """Stores of CRD kinds, most recently used kept: each schema change of a CRD makes a
        new type, and the old ones must not accumulate."""
        found = self._custom_stores.get(rt)
        if found is None:
            found = self._new_store(rt)
            self._custom_stores[rt] = found
            if len(self._custom_stores) > _CUSTOM_STORES:
                self._custom_stores.popitem(last=False)
        else:
            self._custom_stores.move_to_end(rt)
        return found

    def _rbac_store(self, plural: str) -> store.ResourceStore:
        rt = self.catalog.by_resource(rbac.GROUP, "v1", plural)
        assert rt is not None
        return self.store(rt)

    def store(self, rt: catalog.ResourceType) -> store.ResourceStore:
        if rt.custom is not None:
            return self._custom_store(rt)
        found = self._stores.get(rt)
        if found is None:
            found = self._new_store(rt)
            self._stores[rt] = found
        return found

    async def create_subresource(
        self,
        rt: catalog.ResourceType,
        ctx: RequestContext,
        namespace: str,
        name: str,
        subresource: str,
        body: dict[str, Any],
    ) -> dict[str, Any]:
        """POST to a create-only subresource (serviceaccounts/token); nothing is stored."""
        tokens = self.service_account_tokens
        if (rt.group, rt.kind, subresource) == ("", "ServiceAccount", "token") and tokens:
            return await token_requests.create(self.store(rt), ctx, namespace, name, body, tokens)
        raise errors.method_not_allowed("create", f"{rt.plural}/{subresource}")

    def reviewer(self, rt: catalog.ResourceType) -> reviews.ReviewStore | None:
        """The store of a create-only review kind; None for kinds whose objects are stored."""
        try:
            return self._reviewers[rt]  # one lookup: hashing a ResourceType is not free
        except KeyError:
            strategy = strategies.review_strategy_for(rt, self.policy)
            found = self._reviewers[rt] = reviews.ReviewStore(rt, strategy) if strategy else None
            return found

    def watch(
        self,
        rt: catalog.ResourceType,
        ctx: RequestContext,
        namespace: str,
        opts: list_options.ListOptions,
    ) -> AsyncIterator[watching.WatchEvent]:
        return watching.watch(
            self.store(rt),
            self.hub,
            self._events,
            ctx,
            namespace,
            opts,
            settings=self.watch_settings,
        )

    def watch_batches(
        self,
        rt: catalog.ResourceType,
        ctx: RequestContext,
        namespace: str,
        opts: list_options.ListOptions,
    ) -> AsyncGenerator[list[watching.WatchEvent], None]:
        """`watch`, with the events that are ready together handed out as one list."""
        return watching.watch_batches(
            self.store(rt),
            self.hub,
            self._events,
            ctx,
            namespace,
            opts,
            settings=self.watch_settings,
        )

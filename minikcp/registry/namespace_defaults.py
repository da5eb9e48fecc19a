"""The objects every namespace carries: the `default` ServiceAccount and `kube-root-ca.crt`.

Upstream, kube-controller-manager's serviceaccounts controller and root-ca-cert-publisher write
them into every namespace. The built-in namespaces of a logical cluster (registry/namespaces.py)
are virtual, so their default objects are virtual too: served from nothing, with a uid derived
from (cluster, namespace), until somebody writes one (then it is stored, as the built-in
namespaces are) or deletes one (then the store writes a new one at once, with a new uid, as the
controller would: a token of the deleted account stops working). An idle logical cluster stores
none of them. Namespaces users create get real ones from the namespace defaults controller
(controllers/namespace_defaults.py).
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from minikcp.machinery import errors, list_options
from minikcp.registry import store as generic_store
from minikcp.registry.namespaces import BUILTIN_NAMESPACES, VIRTUAL_REVISION
from minikcp.registry.objects import RequestContext, StoredObject, WriteOptions
from storage import errors as storage_errors

DEFAULT_SERVICE_ACCOUNT: Final = "default"
ROOT_CA_CONFIG_MAP: Final = "kube-root-ca.crt"
ROOT_CA_KEY: Final = "ca.crt"
DESCRIPTION_ANNOTATION: Final = "kubernetes.io/description"
ROOT_CA_DESCRIPTION: Final = (
    "Contains a CA bundle that can be used to verify the kube-apiserver when using internal "
    "endpoints such as the internal service IP or kubernetes.default.svc. No other usage is "
    "guaranteed across distributions of Kubernetes clusters."
)
# The field manager of the default objects' writers, as kube-controller-manager's.
CONTROLLER: Final = "kube-controller-manager"
_UID_NAMESPACE: Final = uuid.UUID("0c0e3f2a-5a47-4f57-9e0a-1d6f4c2b7e31")


@dataclass(frozen=True, slots=True)
class DefaultObject:
    """What one kind's default object of a namespace looks like (without uid and timestamp)."""

    kind: str
    name: str
    fields: Mapping[str, Any]  # top-level fields besides apiVersion, kind and metadata
    annotations: Mapping[str, str] | None = None

    def build(self, namespace: str) -> dict[str, Any]:
        meta: dict[str, Any] = {"name": self.name, "namespace": namespace}
        if self.annotations:
            meta["annotations"] = dict(self.annotations)
        obj: dict[str, Any] = {"apiVersion": "v1", "kind": self.kind, "metadata": meta}
        obj.update({k: dict(v) if isinstance(v, Mapping) else v for k, v in self.fields.items()})
        return obj


SERVICE_ACCOUNT = DefaultObject("ServiceAccount", DEFAULT_SERVICE_ACCOUNT, {})


def root_ca_config_map(ca_bundle: str) -> DefaultObject:
    """root-ca-cert-publisher's ConfigMap, holding the server's CA."""
    return DefaultObject(
        "ConfigMap",
        ROOT_CA_CONFIG_MAP,
        {"data": {ROOT_CA_KEY: ca_bundle}},
        {DESCRIPTION_ANNOTATION: ROOT_CA_DESCRIPTION},
    )


class NamespaceDefaultStore(generic_store.ResourceStore):
    """A resource whose default object is virtual in the built-in namespaces."""

    def __init__(
        self, *args: Any, default: DefaultObject, bootstrap_time: str, **kwargs: Any
    ) -> None:
        super().__init__(*args, **kwargs)
        self.default = default
        self._bootstrap_time = bootstrap_time

    def _is_virtual(self, namespace: str, name: str) -> bool:
        return name == self.default.name and namespace in BUILTIN_NAMESPACES

    def virtual(self, cluster: str, namespace: str) -> StoredObject:
        obj = self.default.build(namespace)
        meta = obj["metadata"]
        meta["uid"] = str(uuid.uuid5(_UID_NAMESPACE, f"{cluster}/{namespace}/{self.default.name}"))
        meta["creationTimestamp"] = self._bootstrap_time
        return StoredObject.from_dict(obj, cluster=cluster, revision=VIRTUAL_REVISION)

    def unstored_virtual(self, cluster: str, namespace: str, stored_names: set[str]) -> list[bytes]:
        """The virtual default of a namespace when nothing is stored in its place (for those
        that count objects without listing them through the store, such as quota)."""
        name = self.default.name
        if not self._is_virtual(namespace, name) or name in stored_names:
            return []
        return [self.virtual(cluster, namespace).value]

    def unstored(self, ctx: RequestContext, namespace: str, name: str) -> StoredObject | None:
        if ctx.cluster != "*" and self._is_virtual(namespace, name):
            return self.virtual(ctx.cluster, namespace)
        return None

    async def list(
        self, ctx: RequestContext, namespace: str, opts: list_options.ListOptions
    ) -> generic_store.ListResult:
        result = await super().list(ctx, namespace, opts)
        if ctx.cluster == "*" or (namespace and namespace not in BUILTIN_NAMESPACES):
            return result
        name = self.default.name
        stored = {(o.metadata.get("namespace"), o.metadata.get("name")) for o in result.items}
        # Continue tokens name the last key after the list prefix: "<namespace>/<name>" when
        # listing every namespace, "<name>" in one.
        low = ""
        if opts.continue_token:
            low = list_options.decode_continue(opts.continue_token).start_key
        high = None
        if result.continue_token:
            high = list_options.decode_continue(result.continue_token).start_key
        extra = []
        for ns in (namespace,) if namespace else BUILTIN_NAMESPACES:
            position = name if namespace else f"{ns}/{name}"
            if (ns, name) in stored or position <= low or (high is not None and position > high):
                continue
            obj = self.virtual(ctx.cluster, ns)
            if not self.matches(obj, opts):
                continue
            # One written already but outside this page is listed there.
            if await self.find_stored(ctx, ns, name) is not None:
                continue
            extra.append(obj)
        if extra:
            result.items = sorted(
                result.items + extra,
                key=lambda o: (o.metadata.get("namespace", ""), o.metadata.get("name", "")),
            )
        return result

    async def create(
        self,
        ctx: RequestContext,
        namespace: str,
        obj: dict[str, Any],
        opts: WriteOptions,
        *,
        prepared: bool = False,
    ) -> StoredObject:
        name = (obj.get("metadata") or {}).get("name") or ""
        ns = (obj.get("metadata") or {}).get("namespace") or namespace
        if isinstance(name, str) and isinstance(ns, str) and self._is_virtual(ns, name):
            raise errors.already_exists(self.rt.plural, name, group=self.rt.group)
        return await super().create(ctx, namespace, obj, opts, prepared=prepared)

    async def guaranteed_update(
        self, ctx: RequestContext, namespace: str, name: str, *args: Any, **kwargs: Any
    ) -> StoredObject:
        await self._materialise(ctx, namespace, name)
        return await super().guaranteed_update(ctx, namespace, name, *args, **kwargs)

    async def delete(
        self,
        ctx: RequestContext,
        namespace: str,
        name: str,
        options: Mapping[str, Any],
        opts: WriteOptions,
    ) -> tuple[StoredObject, bool]:
        if opts.dry_run or not self._is_virtual(namespace, name):
            return await super().delete(ctx, namespace, name, options, opts)
        await self._materialise(ctx, namespace, name)
        deleted, gone = await super().delete(ctx, namespace, name, options, opts)
        if gone:
            await self._recreate(ctx, namespace)
        return deleted, gone

    async def _materialise(self, ctx: RequestContext, namespace: str, name: str) -> None:
        """Store a virtual default object the first time it is written."""
        if not self._is_virtual(namespace, name) or ctx.cluster == "*":
            return
        if await self.find_stored(ctx, namespace, name) is not None:
            return
        try:
            await self.storage.create(
                self.key(ctx.cluster, namespace, name), self.virtual(ctx.cluster, namespace).value
            )
        except storage_errors.KeyExists:
            pass

    async def _recreate(self, ctx: RequestContext, namespace: str) -> None:
        """What the controller does after a deletion: a new object, with a new uid."""
        fresh = self.default.build(namespace)
        try:
            await super().create(ctx, namespace, fresh, WriteOptions(field_manager=CONTROLLER))
        except errors.StatusError as exc:
            if exc.reason != "AlreadyExists":
                raise

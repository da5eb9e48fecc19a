"""The APIExport controller: identities and endpoint slices, as kcp's apiexport and
apiexportendpointslice controllers.

An APIExport without `spec.identity.secretRef` gets a Secret named like it in namespace
`kcp-system` of its logical cluster, holding a random key, and the reference to it; its
`status.identityHash` is the sha256 of that key (`IdentityValid`; a Secret whose hash no longer
matches is `IdentityVerificationFailed`). Unless annotated `apiexports.apis.kcp.io/skip-
endpointslice`, an APIExportEndpointSlice of the same name is created. Every
APIExportEndpointSlice gets the URL of its export's virtual workspace,
`<base>/services/apiexport/<export's logical cluster>/<export name>`, in `status.endpoints`.

Keys on the shared work queue are (kind, cluster, name), turns per logical cluster; exports and
slices are followed through the hub, and an export's change queues the slices that name it.
"""

from __future__ import annotations

import base64
import functools
import logging
import secrets
from collections.abc import Mapping
from typing import Any

from minikcp.apis import api_exports, catalog
from minikcp.apis import kcp_conditions as conds
from minikcp.machinery import errors
from minikcp.registry import registry, system_fields
from minikcp.registry.objects import RequestContext, StoredObject, WriteOptions
from minikcp.runtime.work_queue import WorkQueue, run_worker, run_workers
from minikcp.tenancy.resolver import ClusterResolver

logger = logging.getLogger(__name__)

_WORKERS = 4
_OPTS = WriteOptions(field_manager="minikcp-apiexports")
_EXPORT = "export"
_SLICE = "slice"
Key = tuple[str, str, str]  # (kind, cluster, name)


def _rt(reg: registry.Registry, resource: str) -> catalog.ResourceType:
    found = reg.catalog.by_resource(api_exports.GROUP, api_exports.VERSION, resource)
    assert found is not None
    return found


class APIExportController:
    def __init__(
        self,
        reg: registry.Registry,
        resolver: ClusterResolver,
        base_url: str,
        *,
        workers: int = _WORKERS,
    ) -> None:
        self._registry = reg
        self._resolver = resolver
        self._base_url = base_url.rstrip("/")
        self._exports = reg.store(_rt(reg, api_exports.EXPORTS))
        self._slices = reg.store(_rt(reg, api_exports.ENDPOINT_SLICES))
        secret_type = reg.catalog.by_resource("", "v1", "secrets")
        assert secret_type is not None
        self._secrets = reg.store(secret_type)
        self._workers = workers
        self._queue: WorkQueue[Key] = WorkQueue(
            lambda key: key[1], base_delay=0.05, name="kcp-apiexport"
        )
        # (export cluster, export name) -> slices that reference it, and back.
        self._slices_of: dict[tuple[str, str], set[tuple[str, str]]] = {}
        self._export_of: dict[tuple[str, str], tuple[str, str]] = {}

    async def run(self) -> None:
        await run_workers(
            self._queue,
            self._work,
            workers=self._workers,
            worker_name="apiexport-worker",
            followers={
                "apiexports": functools.partial(self._follow, self._exports.rt, _EXPORT),
                "endpointslices": functools.partial(self._follow, self._slices.rt, _SLICE),
            },
        )

    async def _follow(self, rt: catalog.ResourceType, kind: str) -> None:
        revision = await self._list(rt, kind)
        async for change in self._registry.changes(rt, after=revision):
            if change is registry.RESYNC:
                await self._list(rt, kind)
                continue
            key = (change.key.cluster, change.key.name)
            if change.value is not None:
                self._queue.add((kind, *key))
            if kind == _EXPORT:
                for found in self._slices_of.get(key, ()):
                    self._queue.add((_SLICE, *found))

    async def _list(self, rt: catalog.ResourceType, kind: str) -> int:
        stored, revision = await self._registry.scan(rt, None)
        for key, _ in stored:
            self._queue.add((kind, key.cluster, key.name))
        return revision

    async def _work(self) -> None:
        await run_worker(
            self._queue,
            self._handle,
            describe=lambda key: "{} {}|{}".format(*key),
            logger=logger,
            expected=(errors.StatusError,),
            expected_level=logging.WARNING,
        )

    async def _handle(self, key: Key) -> None:
        if key[0] == _EXPORT:
            await self.reconcile_export(key[1], key[2])
        else:
            await self.reconcile_slice(key[1], key[2])

    # -- exports --------------------------------------------------------------------------

    async def reconcile_export(self, cluster: str, name: str) -> None:
        ctx = RequestContext(cluster=cluster)
        export = await self._exports.find(ctx, "", name)
        if export is None or export.metadata.get("deletionTimestamp"):
            return
        obj = export.view()
        ref = ((obj.get("spec") or {}).get("identity") or {}).get("secretRef")
        if not isinstance(ref, Mapping) or not ref.get("name"):
            await self._create_identity(ctx, name)
            return  # the update of the export queues it again
        if api_exports.SKIP_ENDPOINT_SLICE not in (export.metadata.get("annotations") or {}):
            await self._ensure_slice(ctx, export)
        wanted_hash, condition = await self._identity(ctx, obj, ref)

        def mutate(current: dict[str, Any] | None) -> dict[str, Any]:
            if current is None:
                raise errors.not_found(api_exports.EXPORTS, name, group=api_exports.GROUP)
            status = current.setdefault("status", {})
            if wanted_hash and not status.get("identityHash"):
                status["identityHash"] = wanted_hash
            status["conditions"] = conds.merged(
                status.get("conditions"), [condition], system_fields.now_rfc3339()
            )
            return current

        await self._exports.guaranteed_update(
            ctx, "", name, mutate, _OPTS, subresource="status", decoded=True
        )

    async def _create_identity(self, ctx: RequestContext, name: str) -> None:
        namespace = api_exports.IDENTITY_NAMESPACE
        try:
            await self._registry.namespaces.create(
                ctx,
                "",
                {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}},
                _OPTS,
            )
        except errors.StatusError as exc:
            if exc.code != 409:
                raise
        if await self._secrets.find(ctx, namespace, name) is None:
            key = base64.b64encode(secrets.token_bytes(32)).decode()
            secret = {
                "apiVersion": "v1",
                "kind": "Secret",
                "metadata": {"name": name, "namespace": namespace},
                "stringData": {api_exports.IDENTITY_KEY: key},
            }
            try:
                await self._secrets.create(ctx, namespace, secret, _OPTS)
            except errors.StatusError as exc:
                if exc.code != 409:
                    raise

        def mutate(current: dict[str, Any] | None) -> dict[str, Any]:
            if current is None:
                raise errors.not_found(api_exports.EXPORTS, name, group=api_exports.GROUP)
            spec = current.setdefault("spec", {})
            identity = spec.setdefault("identity", {})
            identity["secretRef"] = {"name": name, "namespace": namespace}
            return current

        await self._exports.guaranteed_update(ctx, "", name, mutate, _OPTS, decoded=True)

    async def _identity(
        self, ctx: RequestContext, export: Mapping[str, Any], ref: Mapping[str, Any]
    ) -> tuple[str, conds.Condition]:
        """The hash of the referenced Secret's key and the IdentityValid condition."""
        secret = await self._secrets.find(ctx, str(ref.get("namespace") or ""), str(ref["name"]))
        failed = api_exports.IDENTITY_VERIFICATION_FAILED
        if secret is None:
            message = f'secrets "{ref["name"]}" not found'
            return "", conds.false(api_exports.IDENTITY_VALID, failed, conds.ERROR, message)
        data = secret.view().get("data") or {}
        encoded = data.get(api_exports.IDENTITY_KEY)
        if not encoded:
            message = f"secret is missing data.{api_exports.IDENTITY_KEY}"
            return "", conds.false(api_exports.IDENTITY_VALID, failed, conds.ERROR, message)
        found = api_exports.identity_hash(base64.b64decode(encoded))
        recorded = (export.get("status") or {}).get("identityHash")
        if recorded and recorded != found:
            message = (
                f'hash mismatch: identity secret hash "{found}" must match '
                f'status.identityHash "{recorded}"'
            )
            return "", conds.false(api_exports.IDENTITY_VALID, failed, conds.ERROR, message)
        return found, conds.true(api_exports.IDENTITY_VALID)

    async def _ensure_slice(self, ctx: RequestContext, export: StoredObject) -> None:
        name = str(export.metadata.get("name") or "")
        if await self._slices.find(ctx, "", name) is not None:
            return
        path = await self._resolver.path_of(ctx.cluster)
        slice_obj = {
            "apiVersion": f"{api_exports.GROUP}/{api_exports.VERSION}",
            "kind": "APIExportEndpointSlice",
            "metadata": {
                "name": name,
                "ownerReferences": [
                    {
                        "apiVersion": f"{api_exports.GROUP}/{api_exports.VERSION}",
                        "kind": "APIExport",
                        "name": name,
                        "uid": export.metadata.get("uid"),
                    }
                ],
            },
            "spec": {"export": {"name": name, "path": path}},
        }
        try:
            await self._slices.create(ctx, "", slice_obj, _OPTS)
        except errors.StatusError as exc:
            if exc.code != 409:
                raise

    # -- endpoint slices ------------------------------------------------------------------

    def _forget_slice(self, key: tuple[str, str]) -> None:
        export = self._export_of.pop(key, None)
        if export is not None:
            refs = self._slices_of.get(export)
            if refs is not None:
                refs.discard(key)
                if not refs:
                    del self._slices_of[export]

    async def reconcile_slice(self, cluster: str, name: str) -> None:
        ctx = RequestContext(cluster=cluster)
        found = await self._slices.find(ctx, "", name)
        self._forget_slice((cluster, name))
        if found is None:
            return
        export = ((found.view().get("spec") or {}).get("export")) or {}
        path, export_name = str(export.get("path") or ""), str(export.get("name") or "")
        try:
            export_cluster = await self._resolver.resolve(path) if path else cluster
        except errors.StatusError:
            export_cluster = ""
        wanted: list[conds.Condition]
        endpoints: list[dict[str, str]] = []
        if export_cluster:
            self._slices_of.setdefault((export_cluster, export_name), set()).add((cluster, name))
            self._export_of[(cluster, name)] = (export_cluster, export_name)
        exists = export_cluster and (
            await self._exports.find(RequestContext(cluster=export_cluster), "", export_name)
        )
        if not exists:
            message = f"Error getting APIExport {path or cluster}|{export_name}"
            wanted = [
                conds.false(
                    api_exports.EXPORT_VALID, api_exports.EXPORT_NOT_FOUND, conds.ERROR, message
                )
            ]
        else:
            url = f"{self._base_url}/services/apiexport/{export_cluster}/{export_name}"
            endpoints = [{"url": url}]
            wanted = [
                conds.true(api_exports.EXPORT_VALID),
                conds.true(api_exports.ENDPOINT_URLS_READY),
            ]

        def mutate(current: dict[str, Any] | None) -> dict[str, Any]:
            if current is None:
                raise errors.not_found(api_exports.ENDPOINT_SLICES, name, group=api_exports.GROUP)
            status = current.setdefault("status", {})
            now = system_fields.now_rfc3339()
            status["conditions"] = conds.merged(status.get("conditions"), wanted, now)
            if endpoints:
                status["endpoints"] = endpoints
            else:
                status.pop("endpoints", None)
            return current

        await self._slices.guaranteed_update(
            ctx, "", name, mutate, _OPTS, subresource="status", decoded=True
        )

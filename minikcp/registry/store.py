"""The generic REST store: the Kubernetes object contract implemented once for every kind.

Per-kind behaviour comes from the kind's strategy; storage errors become Status errors in
`storage_errors`. Reads hand out `StoredObject`s so that responses are built from stored bytes.
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from minikcp.apis import catalog, definitions, validation
from minikcp.machinery import errors, list_options, names, propagation, schemas, server_side_apply
from minikcp.registry import (
    codec,
    decoding,
    graceful_deletion,
    keys,
    label_prefilter,
    noop_writes,
    system_fields,
)
from minikcp.registry import storage_errors as interpreted
from minikcp.registry.admission import Admission
from minikcp.registry.held_objects import HeldObjects
from minikcp.registry.objects import RequestContext, StoredObject, WriteOptions
from minikcp.registry.point_reads import PointReads
from minikcp.registry.strategy import Strategy
from storage import errors as storage_errors
from storage import interface as storage_interface

# How often a write retries after losing a compare-and-swap race it did not ask for.
_MAX_RETRIES = 16
_SYSTEM_METADATA = ("uid", "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds")

# Admission of new content in a namespace; the returned callable is called once the create is
# over (stored or failed), so a namespace deletion can wait for creates it let through.
# Its arguments: the request, the namespace, the resource type and the object's name (or its
# generateName), for the refusal's message.
NamespaceCheck = Callable[
    [RequestContext, str, catalog.ResourceType, str], Awaitable[Callable[[], None]]
]


@dataclass(slots=True)
class ListResult:
    items: list[StoredObject]
    revision: int
    continue_token: str = ""
    remaining: int | None = None


# A mutation of the current object (None when absent) into the desired one; may raise StatusError.
Mutation = Callable[[dict[str, Any] | None], dict[str, Any]]


class ResourceStore(PointReads):
    """Get, list, create, update, patch and delete of one resource type."""

    def __init__(
        self,
        rt: catalog.ResourceType,
        strategy: Strategy,
        store: storage_interface.Storage,
        *,
        namespace_check: NamespaceCheck | None = None,
        held: HeldObjects | None = None,
    ) -> None:
        super().__init__(rt, strategy, store, held=held)
        self._namespace_check = namespace_check
        self.admission: Admission | None = None

    @functools.cached_property
    def schema(self) -> schemas.SchemaNode:
        """The kind's schema, loaded by the first patch or apply rather than at start-up."""
        return definitions.schema_for(self.rt)

    # -- reads (of one object: see point_reads.PointReads) -------------------------------------

    def encode(self, obj: dict[str, Any]) -> bytes:
        """An object of this type as stored (see Strategy.to_storage)."""
        if self.strategy.transforms_reads:
            obj = self.strategy.to_storage(obj)
        return codec.encode_for_storage(obj)

    async def list(
        self, ctx: RequestContext, namespace: str, opts: list_options.ListOptions
    ) -> ListResult:
        cluster = None if ctx.cluster == "*" else ctx.cluster
        prefix = keys.list_prefix(self.rt, cluster, namespace)
        at_revision: int | None = None
        start_after: str | None = None
        if opts.continue_token:
            token = list_options.decode_continue(opts.continue_token)
            at_revision = token.revision
            start_after = prefix + token.start_key
        elif opts.resource_version and opts.resource_version != "0":
            rv = list_options.parse_resource_version(opts.resource_version)
            exact = opts.resource_version_match == "Exact" or (
                not opts.resource_version_match and opts.limit > 0
            )
            if exact:
                at_revision = rv
            else:
                current = await self.storage.current_revision()
                if rv > current:
                    raise errors.too_large_resource_version(rv, current)
        limit = max(opts.limit, 0)  # a negative limit is no limit (as upstream's storage)
        filtered = not (opts.label_selector.empty and opts.field_selector.empty)
        prefilter = label_prefilter.for_selector(opts.label_selector) if filtered else None
        items: list[StoredObject] = []
        revision = 0
        more = False
        last_key = ""
        while True:
            want = limit - len(items) if limit else 0
            try:
                page = await self.storage.range(
                    prefix, limit=want, start_after=start_after, at_revision=at_revision
                )
            except storage_errors.Compacted as exc:
                raise self._expired_continue(exc, opts) from None
            except storage_errors.StorageError as exc:
                raise interpreted.interpret(exc, self.rt) from None
            revision = page.revision
            at_revision = page.revision
            for item in page.items:
                if prefilter is not None and not prefilter.may_match(item.value):
                    continue
                obj = self.stored(
                    item.value,
                    cluster=cluster or keys.cluster_of(self.rt, item.key),
                    revision=item.mod_rev,
                )
                if not filtered or self.matches(obj, opts):
                    items.append(obj)
            more = page.more
            if page.items:
                last_key = page.items[-1].key
                start_after = last_key
            if not more or not limit or len(items) >= limit:
                break
        next_token = ""
        if more and limit:
            next_token = list_options.encode_continue(revision, last_key[len(prefix) :])
        return ListResult(items, revision, next_token)

    def _expired_continue(
        self, exc: storage_errors.Compacted, opts: list_options.ListOptions
    ) -> errors.StatusError:
        if opts.continue_token:
            return errors.expired(
                "The provided continue parameter is too old to display a consistent list result. "
                "You can start a new list without the continue parameter."
            )
        return errors.expired(f"too old resource version: {exc.requested} ({exc.compacted})")

    def matches(self, obj: StoredObject, opts: list_options.ListOptions) -> bool:
        view = obj.stored_view()
        if not opts.label_selector.empty:
            labels = view.get("metadata", {}).get("labels") or {}
            if not opts.label_selector.matches(labels):
                return False
        if not opts.field_selector.empty:
            return opts.field_selector.matches(self.strategy.selectable_fields(view))
        return True

    def check_field_selector(self, opts: list_options.ListOptions) -> None:
        for field in opts.field_selector.fields:
            if not self.strategy.supports_field(field):
                raise errors.bad_request(f"field label not supported: {field}")

    # -- writes ---------------------------------------------------------------------------------

    def check_type(self, obj: Mapping[str, Any]) -> None:
        decoding.check_type(self.rt, obj)

    def _normalise(self, obj: dict[str, Any], namespace: str) -> dict[str, Any]:
        self.check_type(obj)
        obj["apiVersion"] = self.rt.api_version
        obj["kind"] = self.rt.kind
        meta = obj.setdefault("metadata", {})
        if self.rt.namespaced:
            body_ns = meta.get("namespace") or ""
            if namespace and body_ns and body_ns != namespace:
                raise errors.bad_request(
                    "the namespace of the provided object does not match the namespace sent on "
                    "the request"
                )
            meta["namespace"] = body_ns or namespace
        else:
            meta.pop("namespace", None)
        annotations = meta.get("annotations")
        if isinstance(annotations, dict):
            annotations.pop(codec.CLUSTER_ANNOTATION, None)
            if not annotations:
                del meta["annotations"]
        return obj

    def _validate(
        self,
        ctx: RequestContext,
        obj: dict[str, Any],
        old: Mapping[str, Any] | None,
        opts: WriteOptions,
        subresource: str = "",
    ) -> None:
        meta = obj["metadata"]
        causes: list[errors.Cause] = []
        if subresource == "status" and old is not None:
            # The stored metadata stays (prepare_for_status_update): it passed these checks.
            causes = self.strategy.validate_status_update(obj, old)
        else:
            if not validation.has_kind_validator(self.rt):
                # A kind's own validation checks ObjectMeta first, as upstream's do; the others
                # get the generic check here.
                causes = names.validate_object_meta(
                    meta, namespaced=self.rt.namespaced, name_errors=self.strategy.name_validator
                )
            causes += self.strategy.validate(obj, old)
        if causes:
            raise errors.invalid(self.rt.kind, meta.get("name", ""), causes, group=self.rt.group)

    def decode_checks(
        self,
        ctx: RequestContext,
        obj: dict[str, Any],
        opts: WriteOptions,
        *,
        body_errors: Sequence[str] = (),
        patch: Callable[[], str] | None = None,
        touched: Mapping[str, Any] | None = None,
    ) -> None:
        decoding.decode_checks(
            self.rt, ctx, obj, opts, body_errors=body_errors, patch=patch, touched=touched
        )

    def _managed_fields(
        self,
        obj: dict[str, Any],
        old: Mapping[str, Any] | None,
        opts: WriteOptions,
        subresource: str,
    ) -> None:
        if not opts.field_manager:
            return
        entries = server_side_apply.update_managed_fields(
            old,
            obj,
            manager=opts.field_manager,
            api_version=self.rt.api_version,
            schema=self.schema,
            now=system_fields.now_rfc3339(),
            subresource=subresource,
            zero_value_has_spec=self.strategy.zero_value_has_spec,
        )
        if entries:
            obj["metadata"]["managedFields"] = entries
        else:
            # Nobody owns a field: upstream sets nil, which `omitempty` leaves out.
            obj["metadata"].pop("managedFields", None)

    async def create(
        self,
        ctx: RequestContext,
        namespace: str,
        obj: dict[str, Any],
        opts: WriteOptions,
        *,
        prepared: bool = False,
    ) -> StoredObject:
        obj = self._normalise(obj, namespace)
        meta = obj["metadata"]
        namespace = meta.get("namespace", "")
        if self._namespace_check is None:
            return await self._create(ctx, namespace, obj, opts, prepared=prepared)
        # Cluster-scoped creates are checked too ("" namespace): their logical cluster's state.
        release = await self._namespace_check(
            ctx,
            namespace if self.rt.namespaced else "",
            self.rt,
            str(meta.get("name") or meta.get("generateName") or "Unknown"),
        )
        try:
            return await self._create(ctx, namespace, obj, opts, prepared=prepared)
        finally:
            release()

    async def _create(
        self,
        ctx: RequestContext,
        namespace: str,
        obj: dict[str, Any],
        opts: WriteOptions,
        *,
        prepared: bool,
    ) -> StoredObject:
        meta = obj["metadata"]
        generate = not meta.get("name") and meta.get("generateName")
        if generate:
            meta["name"] = names.generate_name(meta["generateName"])
        for key in ("resourceVersion", "deletionTimestamp", "deletionGracePeriodSeconds"):
            meta.pop(key, None)
        meta["uid"] = system_fields.new_uid()
        meta["creationTimestamp"] = system_fields.now_rfc3339()
        if not prepared:
            self.decode_checks(ctx, obj, opts)
            self.strategy.apply_defaults(obj)
            # As upstream, the writer owns what it sent (defaults included), not what the
            # strategy or mutating admission add afterwards.
            self._managed_fields(obj, None, opts, "")
            self.strategy.prepare_for_create(obj)
            if self.admission is not None:
                await self.admission.admit_create(ctx, obj)
            self._validate(ctx, obj, None, opts)
            self.strategy.after_write(obj, None, ctx.cluster)
        await self.strategy.admit(ctx, obj, None)
        if self.admission is not None:
            await self.admission.validate_create(ctx, obj, opts.dry_run)
        if opts.dry_run:
            return StoredObject.from_dict(obj, cluster=ctx.cluster, revision=0)
        try:
            created = await self._store_new(ctx, namespace, obj, generate=bool(generate))
        except BaseException:
            if self.admission is not None:
                self.admission.write_ended(ctx, obj, update=False, stored=False)
            raise
        if self.admission is not None:
            self.admission.write_ended(ctx, obj, update=False, stored=True)
        return created

    async def _store_new(
        self, ctx: RequestContext, namespace: str, obj: dict[str, Any], *, generate: bool
    ) -> StoredObject:
        meta = obj["metadata"]
        for attempt in range(8 if generate else 1):
            if attempt:
                meta["name"] = names.generate_name(meta["generateName"])
            try:
                item = await self.storage.create(
                    self.key(ctx.cluster, namespace, meta["name"]), self.encode(obj)
                )
            except storage_errors.KeyExists:
                continue
            except storage_errors.StorageError as exc:
                raise interpreted.interpret(exc, self.rt, meta["name"]) from None
            return self.stored(item.value, cluster=ctx.cluster, revision=item.mod_rev)
        raise errors.already_exists(self.rt.plural, meta["name"], group=self.rt.group)

    async def update(
        self,
        ctx: RequestContext,
        namespace: str,
        name: str,
        obj: dict[str, Any],
        opts: WriteOptions,
        *,
        subresource: str = "",
    ) -> StoredObject:
        """PUT: replace the object; a resourceVersion in the body is a precondition."""
        obj = self._normalise(obj, namespace)
        self._check_name(obj, name)
        precondition = obj["metadata"].get("resourceVersion") or ""

        def mutate(current: dict[str, Any] | None) -> dict[str, Any]:
            if current is None:
                raise errors.not_found(self.rt.plural, name, group=self.rt.group)
            return obj

        return await self.guaranteed_update(
            ctx,
            namespace,
            name,
            mutate,
            opts,
            subresource=subresource,
            retry=not precondition,
        )

    def _check_name(self, obj: Mapping[str, Any], name: str) -> None:
        body_name = obj.get("metadata", {}).get("name")
        if body_name and body_name != name:
            raise errors.bad_request(
                f"the name of the object ({body_name}) does not match the name on the URL ({name})"
            )

    async def guaranteed_update(
        self,
        ctx: RequestContext,
        namespace: str,
        name: str,
        mutate: Mutation,
        opts: WriteOptions,
        *,
        subresource: str = "",
        retry: bool = True,
        managed: bool = True,
        decoded: bool = False,
    ) -> StoredObject:
        """Read, mutate, validate and compare-and-swap; retry when another write won the race.

        `mutate` receives a private copy of the current client view and returns the desired object
        (with the current resourceVersion unless the caller wants a precondition). `decoded` says
        the mutation already ran the decode checks on what it returns.
        """
        for _ in range(_MAX_RETRIES):
            current = await self.find(ctx, namespace, name)
            current_view = current.copy() if current is not None else None
            desired = mutate(current_view)
            if current is None or current_view is None:
                raise errors.not_found(self.rt.plural, name, group=self.rt.group)
            desired = self._normalise(desired, namespace)
            self._check_name(desired, name)
            if not decoded:
                self.decode_checks(ctx, desired, opts)
            wanted_rv = desired["metadata"].get("resourceVersion")
            if wanted_rv and wanted_rv != str(current.revision):
                raise errors.conflict(
                    self.rt.plural, name, errors.STALE_OBJECT, group=self.rt.group
                )
            old = current.stored_view()  # as stored: no resourceVersion, no cluster annotation
            new = self._prepare_update(desired, old, subresource, ctx.cluster)
            if managed:
                # Before mutating admission, as upstream: its changes are nobody's.
                self._managed_fields(new, old, opts, subresource)
            if not subresource:
                # After the field manager, as upstream's BeginUpdate: what it allocates is nobody's.
                self.strategy.begin_update(new, old)
            self._validate(ctx, new, old, opts, subresource)
            await self.strategy.admit(ctx, new, old)
            if self.admission is not None:
                await self.admission.admit_update(ctx, new, old)
            if noop_writes.unchanged(new, old):
                return current
            # The scale subresource changes the object's spec: validating admission sees it.
            hook = None if subresource not in ("", "scale") else self.admission
            if hook is not None:
                await hook.validate_update(ctx, new, old, opts.dry_run)
            if opts.dry_run:
                return StoredObject.from_dict(new, cluster=ctx.cluster, revision=current.revision)
            key = self.key(ctx.cluster, namespace, name)
            try:
                if old["metadata"].get("deletionTimestamp") and self.strategy.finalized(new):
                    # The last finalizer is gone: the pending deletion completes now.
                    deleted = await self.storage.delete(key, expected_mod_rev=current.revision)
                    written = StoredObject.from_dict(
                        new, cluster=ctx.cluster, revision=deleted.mod_rev
                    )
                else:
                    item = await self.storage.update(
                        key, self.encode(new), expected_mod_rev=current.revision
                    )
                    written = self.stored(item.value, cluster=ctx.cluster, revision=item.mod_rev)
            except BaseException as exc:
                if hook is not None:
                    hook.write_ended(ctx, new, update=True, stored=False)
                if not isinstance(exc, storage_errors.StorageError):
                    raise
                if isinstance(exc, storage_errors.Conflict):
                    if not retry:
                        raise errors.conflict(
                            self.rt.plural, name, errors.STALE_OBJECT, group=self.rt.group
                        ) from None
                    continue
                if isinstance(exc, storage_errors.NotFound):
                    raise errors.not_found(self.rt.plural, name, group=self.rt.group) from None
                raise interpreted.interpret(exc, self.rt, name) from None
            if hook is not None:
                hook.write_ended(ctx, new, update=True, stored=True)
            return written
        raise errors.conflict(self.rt.plural, name, errors.STALE_OBJECT, group=self.rt.group)

    def _prepare_update(
        self, desired: dict[str, Any], old: Mapping[str, Any], subresource: str, cluster: str
    ) -> dict[str, Any]:
        meta = desired["metadata"]
        old_meta = old.get("metadata", {})
        body_uid = meta.get("uid")
        if body_uid and body_uid != old_meta.get("uid"):
            raise errors.conflict(
                self.rt.plural,
                old_meta.get("name", ""),
                f"Precondition failed: UID in precondition: {body_uid}, "
                f"UID in object meta: {old_meta.get('uid')}",
                group=self.rt.group,
            )
        for key in _SYSTEM_METADATA:
            if key in old_meta:
                meta[key] = old_meta[key]
            else:
                meta.pop(key, None)
        meta.pop("resourceVersion", None)
        if "generation" in old_meta:
            meta["generation"] = old_meta["generation"]
        if subresource == "status":
            self.strategy.prepare_for_status_update(desired, old)
        elif subresource == "finalize":
            self.strategy.prepare_for_finalize(desired, old)
        else:
            self.strategy.apply_defaults(desired)
            self.strategy.prepare_for_update(desired, old)
            self.strategy.after_write(desired, old, cluster)
        if old_meta.get("deletionTimestamp"):
            # A terminating object may lose finalizers but never gain new ones.
            added = set(meta.get("finalizers") or ()) - set(old_meta.get("finalizers") or ())
            if added:
                raise errors.forbidden(
                    self.rt.plural,
                    old_meta.get("name", ""),
                    f"no new finalizers can be added if the object is being deleted, found new "
                    f"finalizers {sorted(added)!r}",
                    group=self.rt.group,
                )
        return desired

    async def delete(
        self,
        ctx: RequestContext,
        namespace: str,
        name: str,
        options: Mapping[str, Any],
        opts: WriteOptions,
    ) -> tuple[StoredObject, bool]:
        """Delete, or start a deletion that finalizers hold; returns (object, deleted now)."""
        preconditions = options.get("preconditions") or {}
        for _ in range(_MAX_RETRIES):
            current = await self.get(ctx, namespace, name)
            meta = current.metadata
            want_uid = preconditions.get("uid")
            if want_uid and want_uid != meta.get("uid"):
                raise errors.conflict(
                    self.rt.plural,
                    name,
                    f"Precondition failed: UID in precondition: {want_uid}, "
                    f"UID in object meta: {meta.get('uid', '')}",
                    group=self.rt.group,
                )
            want_rv = preconditions.get("resourceVersion")
            if want_rv and want_rv != str(current.revision):
                raise errors.conflict(
                    self.rt.plural,
                    name,
                    f"Precondition failed: ResourceVersion in precondition: {want_rv}, "
                    f"ResourceVersion in object meta: {current.revision}",
                    group=self.rt.group,
                )
            if self.admission is not None:
                await self.admission.admit_delete(ctx, current)
                await self.admission.validate_delete(ctx, current, opts.dry_run)
            key = self.key(ctx.cluster, namespace, name)
            marks = graceful_deletion.deletion_marks(
                self.strategy, current, options.get("gracePeriodSeconds")
            )
            if marks is graceful_deletion.PENDING:
                return current, False
            period = marks.get("deletionGracePeriodSeconds") if marks else None
            # The garbage collector's finalizers, as the options ask (None: unchanged).
            gc_finalizers = propagation.deletion_finalizers(
                self.strategy.garbage_collection_policy, meta.get("finalizers") or [], options
            )
            finalizers = meta.get("finalizers") if gc_finalizers is None else gc_finalizers
            if finalizers or period:
                if meta.get("deletionTimestamp") and not marks and gc_finalizers is None:
                    return current, False
                pending = current.copy()
                pending_meta = pending["metadata"]
                if gc_finalizers:
                    pending_meta["finalizers"] = gc_finalizers
                elif gc_finalizers is not None:
                    del pending_meta["finalizers"]
                generation = meta.get("generation")
                if not meta.get("deletionTimestamp") and isinstance(generation, int) and generation:
                    pending_meta["generation"] = generation + 1  # markAsDeleting, BeforeDelete
                pending_meta.update(
                    marks
                    or {
                        "deletionTimestamp": system_fields.now_rfc3339(),
                        "deletionGracePeriodSeconds": 0,
                    }
                )
                pending_meta.pop("resourceVersion", None)
                if meta.get("deletionTimestamp") and not period:
                    # markAsDeleting keeps an earlier deletionTimestamp.
                    pending_meta["deletionTimestamp"] = min(
                        meta["deletionTimestamp"], pending_meta["deletionTimestamp"]
                    )
                if opts.dry_run:
                    return StoredObject.from_dict(
                        pending, cluster=ctx.cluster, revision=current.revision
                    ), False
                try:
                    item = await self.storage.update(
                        key, self.encode(pending), expected_mod_rev=current.revision
                    )
                except storage_errors.Conflict:
                    continue
                except storage_errors.StorageError as exc:
                    raise interpreted.interpret(exc, self.rt, name) from None
                return self.stored(item.value, cluster=ctx.cluster, revision=item.mod_rev), False
            last = current
            if marks:
                # A graceful kind deleted with no grace left: its last state says so, as the
                # zero-period update upstream writes before the deletion.
                last_state = current.copy()
                last_state["metadata"].update(marks)
                last = StoredObject.from_dict(
                    last_state, cluster=ctx.cluster, revision=current.revision
                )
            if opts.dry_run:
                return last, True
            try:
                deleted = await self.storage.delete(key, expected_mod_rev=current.revision)
            except storage_errors.Conflict:
                continue
            except storage_errors.NotFound:
                raise errors.not_found(self.rt.plural, name, group=self.rt.group) from None
            except storage_errors.StorageError as exc:
                raise interpreted.interpret(exc, self.rt, name) from None
            return StoredObject(last.value, cluster=ctx.cluster, revision=deleted.mod_rev), True
        raise errors.conflict(self.rt.plural, name, errors.STALE_OBJECT, group=self.rt.group)

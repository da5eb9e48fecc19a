"""The scale subresource: an autoscaling/v1 Scale view over spec.replicas."""

from __future__ import annotations

from typing import Any

from minikcp.apis import definitions
from minikcp.machinery import errors, json_patch, merge_patch, scale_fields, server_side_apply
from minikcp.registry import patching, system_fields
from minikcp.registry import store as generic_store
from minikcp.registry.objects import RequestContext, WriteOptions
from minikcp.registry.strategies import apps


def _scalable(store: generic_store.ResourceStore) -> apps.ScalableStrategy:
    if not isinstance(store.strategy, apps.ScalableStrategy):
        raise errors.StatusError(
            404, "NotFound", "the server could not find the requested resource"
        )
    return store.strategy


async def get_scale(
    store: generic_store.ResourceStore, ctx: RequestContext, namespace: str, name: str
) -> dict[str, Any]:
    strategy = _scalable(store)
    return strategy.scale_of((await store.get(ctx, namespace, name)).view())


async def write_scale(
    store: generic_store.ResourceStore,
    ctx: RequestContext,
    namespace: str,
    name: str,
    *,
    body: bytes,
    patch_type: str | None,
    opts: WriteOptions,
) -> dict[str, Any]:
    """PUT (patch_type None) or PATCH of the Scale; only spec.replicas reaches the object."""
    strategy = _scalable(store)
    document = patching.decode_patch_body(patch_type or patching.MERGE_PATCH, body)
    if patch_type == patching.APPLY_PATCH:
        return await _apply(store, strategy, ctx, namespace, name, document, opts)

    def mutate(current: dict[str, Any] | None) -> dict[str, Any]:
        if current is None:
            raise errors.not_found(store.rt.plural, name, group=store.rt.group)
        scale = strategy.scale_of(current)
        if patch_type is None:
            if not isinstance(document, dict):
                raise errors.bad_request("the body must be an autoscaling/v1 Scale object")
            new_scale = document
        elif patch_type == patching.JSON_PATCH:
            new_scale = json_patch.apply_json_patch(scale, document)
        elif patch_type in (patching.MERGE_PATCH, patching.STRATEGIC_MERGE_PATCH):
            if not isinstance(document, dict):
                raise errors.bad_request("the patch must be an object")
            new_scale = merge_patch.apply_merge_patch(scale, document)
        else:
            raise errors.unsupported_media_type(
                [patching.JSON_PATCH, patching.MERGE_PATCH, patching.STRATEGIC_MERGE_PATCH]
            )
        replicas = _replicas(new_scale, name)
        wanted_rv = (new_scale.get("metadata") or {}).get("resourceVersion")
        current["metadata"]["resourceVersion"] = wanted_rv or current["metadata"].get(
            "resourceVersion"
        )
        strategy.set_replicas(current, replicas)
        return current

    obj = await store.guaranteed_update(ctx, namespace, name, mutate, opts, subresource="scale")
    return strategy.scale_of(obj.view())


def _replicas(scale: dict[str, Any], name: str) -> int:
    replicas = (scale.get("spec") or {}).get("replicas", 0)
    if not isinstance(replicas, int) or isinstance(replicas, bool) or replicas < 0:
        raise errors.invalid(
            "Scale",
            name,
            [
                errors.Cause(
                    "FieldValueInvalid",
                    f"Invalid value: {replicas!r}: must be greater than or equal to 0",
                    "spec.replicas",
                )
            ],
            group="autoscaling",
        )
    return replicas


async def _apply(
    store: generic_store.ResourceStore,
    strategy: apps.ScalableStrategy,
    ctx: RequestContext,
    namespace: str,
    name: str,
    applied: Any,
    opts: WriteOptions,
) -> dict[str, Any]:
    """Server-side apply of a Scale, as the scale REST of upstream's workload stores: the
    parent's managers of its replicas become the Scale's, apply runs on the Scale, and its
    managers go back to the parent (scale_fields)."""
    if not opts.field_manager:
        raise errors.bad_request("PATCH, fieldManager: Required value: is required for apply patch")
    if isinstance(applied, dict):
        meta = applied.get("metadata")
        body_name = meta.get("name") if isinstance(meta, dict) else None
        if body_name and body_name != name:
            raise errors.bad_request(
                f"the name of the object ({body_name}) does not match the name on the URL ({name})"
            )
    replicas_path = scale_fields.replicas_path(strategy.replicas_field())
    unmanaged = WriteOptions(
        dry_run=opts.dry_run, field_manager="", field_validation=opts.field_validation
    )

    def mutate(current: dict[str, Any] | None) -> dict[str, Any]:
        if current is None:
            raise errors.not_found(store.rt.plural, name, group=store.rt.group)
        parent_entries = current["metadata"].get("managedFields")
        scale = strategy.scale_of(current)
        scale["metadata"]["managedFields"] = scale_fields.to_subresource(
            parent_entries, replicas_path
        )
        new_scale = server_side_apply.apply_patch(
            scale,
            applied,
            manager=opts.field_manager,
            api_version=scale_fields.SCALE_API_VERSION,
            force=opts.force,
            schema=definitions.scale_schema(),
            now=system_fields.now_rfc3339(),
            subresource="scale",
        )
        strategy.set_replicas(current, _replicas(new_scale, name))
        entries = scale_fields.to_parent(
            parent_entries,
            new_scale["metadata"].get("managedFields"),
            replicas_path,
            store.rt.api_version,
        )
        if entries:
            current["metadata"]["managedFields"] = entries
        else:
            current["metadata"].pop("managedFields", None)
        return current

    obj = await store.guaranteed_update(
        ctx, namespace, name, mutate, unmanaged, subresource="scale", managed=False
    )
    return strategy.scale_of(obj.view())

"""The scale subresource: an autoscaling/v1 Scale view over spec.replicas."""

from __future__ import annotations

from typing import Any

from minikcp.machinery import errors, json_patch, merge_patch
from minikcp.registry import patching
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
        replicas = (new_scale.get("spec") or {}).get("replicas", 0)
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
        wanted_rv = (new_scale.get("metadata") or {}).get("resourceVersion")
        current["metadata"]["resourceVersion"] = wanted_rv or current["metadata"].get(
            "resourceVersion"
        )
        strategy.set_replicas(current, replicas)
        return current

    obj = await store.guaranteed_update(ctx, namespace, name, mutate, opts, subresource="scale")
    return strategy.scale_of(obj.view())

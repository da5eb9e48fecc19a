"""PATCH: the four patch types, applied to the current object inside the store's update loop."""

from __future__ import annotations

from typing import Any

import orjson

from minikcp.machinery import (
    bodies,
    errors,
    go_text,
    json_patch,
    merge_patch,
    server_side_apply,
    strategic_merge,
    strict_json,
)
from minikcp.machinery import strategic_merge_errors as smp_errors
from minikcp.registry import store as generic_store
from minikcp.registry import system_fields
from minikcp.registry.objects import RequestContext, StoredObject, WriteOptions

JSON_PATCH = "application/json-patch+json"
MERGE_PATCH = "application/merge-patch+json"
STRATEGIC_MERGE_PATCH = "application/strategic-merge-patch+json"
APPLY_PATCH = "application/apply-patch+yaml"

BUILTIN_PATCH_TYPES = (JSON_PATCH, MERGE_PATCH, STRATEGIC_MERGE_PATCH, APPLY_PATCH)
CUSTOM_PATCH_TYPES = (JSON_PATCH, MERGE_PATCH, APPLY_PATCH)
# Creates and deletes by others an apply may meet between its read and its write.
_APPLY_ATTEMPTS = 4


def decode_patch_body(patch_type: str, body: bytes) -> Any:
    if patch_type == APPLY_PATCH:
        try:
            return bodies.check_depth(orjson.loads(body), body)
        except orjson.JSONDecodeError:
            pass
        return bodies.load_yaml(body)
    try:
        return bodies.check_depth(orjson.loads(body), body)
    except orjson.JSONDecodeError as exc:
        raise errors.bad_request(f"error decoding patch: {exc}") from None


async def patch(
    store: generic_store.ResourceStore,
    ctx: RequestContext,
    namespace: str,
    name: str,
    *,
    patch_type: str,
    body: bytes,
    opts: WriteOptions,
    subresource: str = "",
) -> tuple[StoredObject, bool]:
    """Apply a patch; returns (object, created) — only apply patches create."""
    # Strategic merge needs the patch strategies of Go structs: custom resources have none.
    accepted = BUILTIN_PATCH_TYPES if store.rt.builtin else CUSTOM_PATCH_TYPES
    if patch_type not in accepted:
        raise errors.unsupported_media_type(list(accepted))
    document = decode_patch_body(patch_type, body)
    if patch_type == APPLY_PATCH:
        return await _apply(store, ctx, namespace, name, document, opts, subresource)
    if patch_type == JSON_PATCH:
        if not isinstance(document, list):
            raise errors.bad_request(
                "json: cannot unmarshal object into Go value of type jsonpatch.Patch"
            )
    elif not isinstance(document, dict):
        raise errors.bad_request(
            "json: cannot unmarshal array into Go value of type map[string]interface {}"
        )

    body_errors: list[str] = []
    if opts.field_validation in ("Strict", "Warn"):
        if patch_type == JSON_PATCH:
            body_errors = strict_json.json_patch_strict_errors(body)
        else:
            body_errors = strict_json.duplicate_fields(body)

    def mutate(current: dict[str, Any] | None) -> dict[str, Any]:
        if current is None:
            raise errors.not_found(store.rt.plural, name, group=store.rt.group)
        if patch_type == JSON_PATCH:
            patched = json_patch.apply_json_patch(current, document)
        elif patch_type == MERGE_PATCH:
            # `current` is a private copy made for this mutation: no need to copy it again.
            patched = merge_patch.apply_merge_patch_owned(current, document)
        else:
            patched = strategic_merge.apply_strategic_merge(current, document, store.schema)
        if not isinstance(patched, dict):
            raise errors.bad_request("the patch does not produce an object")

        def shown() -> str:
            # apiserver shows the patch map (%+v) for SMP, the patched object's JSON otherwise.
            if patch_type == STRATEGIC_MERGE_PATCH:
                return go_text.go_quote(smp_errors.go_value(document))
            return go_text.go_quote(orjson.dumps(patched).decode())

        # Strict decoding of a patch fails with 422 on "patch" (apiserver's patch handler);
        # this also drops unknown fields before the store checks the object again.
        # A merge patch changes only what it names: the rest is stored content, checked already.
        touched = document if patch_type == MERGE_PATCH else None
        store.decode_checks(
            ctx, patched, opts, body_errors=body_errors, patch=shown, touched=touched
        )
        return patched

    # A patch that names a resourceVersion is a precondition: no silent retries then.
    precondition = isinstance(document, dict) and bool(
        (document.get("metadata") or {}).get("resourceVersion")
        if isinstance(document.get("metadata"), dict)
        else False
    )
    obj = await store.guaranteed_update(
        ctx,
        namespace,
        name,
        mutate,
        opts,
        subresource=subresource,
        retry=not precondition,
        decoded=True,
    )
    return obj, False


async def _apply(
    store: generic_store.ResourceStore,
    ctx: RequestContext,
    namespace: str,
    name: str,
    applied: Any,
    opts: WriteOptions,
    subresource: str,
) -> tuple[StoredObject, bool]:
    if not isinstance(applied, dict):
        raise errors.bad_request("the apply configuration must be an object")
    if not opts.field_manager:
        raise errors.bad_request("PATCH, fieldManager: Required value: is required for apply patch")
    store.check_type(applied)
    if not applied.get("apiVersion") or not applied.get("kind"):
        raise errors.bad_request("apiVersion and kind must be set in an apply configuration")
    meta = applied.get("metadata") or {}
    if meta.get("name") and meta["name"] != name:
        raise errors.bad_request(
            f"the name of the object ({meta['name']}) does not match the name on the URL ({name})"
        )
    unmanaged = WriteOptions(
        dry_run=opts.dry_run, field_manager="", field_validation=opts.field_validation
    )

    def applying(live: dict[str, Any] | None) -> dict[str, Any]:
        return server_side_apply.apply_patch(
            live,
            applied,
            manager=opts.field_manager,
            api_version=store.rt.api_version,
            force=opts.force,
            schema=store.schema,
            now=system_fields.now_rfc3339(),
            subresource=subresource,
        )

    # As upstream's apply (forceAllowCreate), each attempt creates or updates whatever is there
    # then: an object deleted while it was applied to is created, never a 404.
    lost: errors.StatusError | None = None
    for _ in range(_APPLY_ATTEMPTS):
        if await store.find(ctx, namespace, name) is None:
            if subresource:
                raise errors.not_found(store.rt.plural, name, group=store.rt.group)
            created = applying(None)
            created.setdefault("metadata", {})["name"] = name
            try:
                return await store.create(ctx, namespace, created, unmanaged), True
            except errors.StatusError as exc:
                if exc.reason != "AlreadyExists":
                    raise
                lost = exc  # another creator won: apply to what is there now
                continue
        try:
            obj = await store.guaranteed_update(
                ctx, namespace, name, applying, unmanaged, subresource=subresource, managed=False
            )
        except errors.StatusError as exc:
            if exc.reason != "NotFound" or subresource:
                raise
            lost = exc  # deleted since it was read: the next attempt creates it
            continue
        return obj, False
    assert lost is not None
    raise lost

"""The one place where storage errors become Kubernetes Status errors."""

from __future__ import annotations

from minikcp.apis import catalog
from minikcp.machinery import errors
from storage import errors as storage_errors


def interpret(
    exc: storage_errors.StorageError, rt: catalog.ResourceType, name: str = ""
) -> errors.StatusError:
    if isinstance(exc, storage_errors.NotFound):
        return errors.not_found(rt.plural, name, group=rt.group)
    if isinstance(exc, storage_errors.KeyExists):
        return errors.already_exists(rt.plural, name, group=rt.group)
    if isinstance(exc, storage_errors.Conflict):
        return errors.conflict(rt.plural, name, errors.STALE_OBJECT, group=rt.group)
    if isinstance(exc, storage_errors.Compacted):
        return errors.expired(f"too old resource version: {exc.requested} ({exc.compacted})")
    if isinstance(exc, storage_errors.FutureRevision):
        return errors.too_large_resource_version(exc.requested, exc.current)
    if isinstance(exc, storage_errors.ValueTooLarge):
        return errors.request_entity_too_large(3 * 1024 * 1024)
    if isinstance(exc, storage_errors.InvalidKey):
        return errors.bad_request(str(exc))
    return errors.service_unavailable(f"storage unavailable: {exc}")

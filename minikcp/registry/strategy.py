"""The per-kind strategy the generic store calls at fixed points, as kube-apiserver's strategies.

Hooks run in this order on a write: defaults -> prepare_for_create/update -> (on an update, after
the field manager) begin_update -> validate. Hooks may
mutate the object they are given (it is private to the request) but never `old`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from minikcp.apis import catalog, defaults, printers, validation
from minikcp.machinery import errors, names
from minikcp.registry import status_owners as owners
from minikcp.registry.objects import RequestContext


class Strategy:
    """Defaults that suit most kinds; per-kind strategies override what differs."""

    # Bump metadata.generation when anything but metadata and status changes.
    tracks_generation = False
    # Names are DNS-1123 subdomains unless a kind says otherwise.
    name_validator = staticmethod(names.dns1123_subdomain_errors)
    # Field selectors a kind supports beyond metadata.name and metadata.namespace.
    extra_selectable_fields: frozenset[str] = frozenset()
    # Whether stored bytes go through `on_read` before anyone sees them.
    transforms_reads = False
    # Upstream's `ReturnDeletedObject` (the kind's store in pkg/registry): a finished delete
    # answers with the deleted object instead of a Success Status.
    returns_deleted_object = False
    # Upstream's RESTGracefulDeleteStrategy: a delete may set deletionTimestamp in the future
    # and leave the object for somebody else (the kubelet) to delete (see `graceful_period`).
    deletes_gracefully = False
    # Upstream's DefaultGarbageCollectionPolicy (machinery/propagation.py): what a delete that
    # names no propagation does with the object's dependents.
    garbage_collection_policy = ""
    # A built-in kind's Go zero value has its spec struct: upstream's field manager compares a
    # create with that value, so an empty spec is nobody's (a custom resource starts empty).
    zero_value_has_spec = True

    def __init__(
        self,
        rt: catalog.ResourceType,
        *,
        status_owners: owners.DeploymentStatusOwners | None = None,
    ) -> None:
        self.rt = rt
        # Where the registry derives status itself and where a controller owns it.
        self.status_owners = status_owners or owners.DeploymentStatusOwners()
        self.has_status = any(s.name == "status" for s in rt.subresources)
        self.printer = printers.printer_for(rt.group, rt.kind)

    # -- writes ---------------------------------------------------------------------------------

    def apply_defaults(self, obj: dict[str, Any]) -> None:
        defaults.apply_defaults(self.rt, obj)

    def prepare_for_create(self, obj: dict[str, Any]) -> None:
        if self.has_status:
            obj.pop("status", None)
            self.initial_status(obj)
        if self.tracks_generation:
            obj["metadata"]["generation"] = 1

    def initial_status(self, obj: dict[str, Any]) -> None:
        """The status a new object starts with (kinds with a status subresource)."""

    def prepare_for_update(self, obj: dict[str, Any], old: Mapping[str, Any]) -> None:
        if self.has_status:
            if "status" in old:
                obj["status"] = old["status"]
            else:
                obj.pop("status", None)
        if self.tracks_generation:
            gen = old.get("metadata", {}).get("generation", 1)
            obj["metadata"]["generation"] = gen + 1 if self.spec_changed(obj, old) else gen

    def begin_update(self, obj: dict[str, Any], old: Mapping[str, Any]) -> None:
        """What a kind's store does to an update once the field manager ran (upstream's
        BeginUpdate hook): values it sets are nobody's. Raises a StatusError to refuse."""

    def prepare_for_status_update(self, obj: dict[str, Any], old: Mapping[str, Any]) -> None:
        """A status write changes status only: everything else comes from the old object."""
        status = obj.get("status")
        meta = obj.get("metadata", {})
        obj.clear()
        obj.update({k: v for k, v in old.items() if k != "status"})
        obj["metadata"] = dict(old.get("metadata", {}))
        if "managedFields" in meta:
            obj["metadata"]["managedFields"] = meta["managedFields"]
        if status is not None:
            obj["status"] = status

    def prepare_for_finalize(self, obj: dict[str, Any], old: Mapping[str, Any]) -> None:
        """The finalize subresource (namespaces) changes spec.finalizers only."""
        finalizers = obj.get("spec", {}).get("finalizers")
        self.prepare_for_status_update(obj, old)
        obj["status"] = old.get("status")
        if "status" not in old:
            del obj["status"]
        spec = obj["spec"] = dict(old.get("spec") or {})
        if finalizers:
            spec["finalizers"] = finalizers
        else:
            spec.pop("finalizers", None)

    @staticmethod
    def finalized(obj: Mapping[str, Any]) -> bool:
        """Whether an object being deleted may go now: no finalizer holds it."""
        return not obj.get("metadata", {}).get("finalizers")

    def after_write(self, obj: dict[str, Any], old: Mapping[str, Any] | None, cluster: str) -> None:
        """Last adjustments once the object is final (e.g. status derived from spec)."""

    async def admit(
        self, ctx: RequestContext, obj: dict[str, Any], old: Mapping[str, Any] | None
    ) -> None:
        """Checks that depend on who writes (RBAC escalation); after validation, before storage.

        Raises a StatusError to refuse the write; may not mutate `obj`.
        """

    def validate(self, obj: Mapping[str, Any], old: Mapping[str, Any] | None) -> list[errors.Cause]:
        return validation.validate_kind(self.rt, obj, old)

    def validate_status_update(
        self, obj: Mapping[str, Any], old: Mapping[str, Any]
    ) -> list[errors.Cause]:
        """A status write's checks (only status differs from `old`): the whole object's unless
        the kind's upstream status strategy checks less."""
        return self.validate(obj, old)

    @staticmethod
    def spec_changed(obj: Mapping[str, Any], old: Mapping[str, Any]) -> bool:
        keys = (set(obj) | set(old)) - {"metadata", "status", "apiVersion", "kind"}
        return any(obj.get(k) != old.get(k) for k in keys)

    def graceful_period(self, obj: Mapping[str, Any], requested: int | None) -> int:
        """Seconds a first delete leaves the object (CheckGracefulDelete), for kinds that
        `deletes_gracefully`; `requested` is DeleteOptions.gracePeriodSeconds."""
        return 0

    # -- reads ----------------------------------------------------------------------------------

    def on_read(self, value: bytes) -> bytes:
        """Stored bytes as this type serves them (only called when `transforms_reads`)."""
        return value

    def to_storage(self, obj: dict[str, Any]) -> dict[str, Any]:
        """The object as stored, the inverse of `on_read` (only called when `transforms_reads`);
        may return `obj` itself."""
        return obj

    def selectable_fields(self, obj: Mapping[str, Any]) -> dict[str, str]:
        meta = obj.get("metadata", {})
        fields = {"metadata.name": meta.get("name", "")}
        if self.rt.namespaced:
            fields["metadata.namespace"] = meta.get("namespace", "")
        for path in self.extra_selectable_fields:
            fields[path] = _field_value(obj, path)
        return fields

    def supports_field(self, path: str) -> bool:
        return path in ("metadata.name", "metadata.namespace") or (
            path in self.extra_selectable_fields
        )


def _field_value(obj: Mapping[str, Any], path: str) -> str:
    cur: Any = obj
    for part in path.split("."):
        if not isinstance(cur, Mapping):
            return ""
        cur = cur.get(part)
    if cur is None:
        return ""
    if isinstance(cur, bool):
        return "true" if cur else "false"
    return str(cur)

"""Strategies of CustomResourceDefinitions and of the custom resources they serve.

As apiextensions-apiserver's: a new CRD starts with empty conditions, its storage version in
`storedVersions` and the cleanup finalizer (its objects are deleted before it goes away); a custom
resource's generation counts spec changes (any change but metadata, and status when status is a
subresource), its status is written through /status only when that subresource is enabled, and
its scale subresource reads and writes the JSON paths the CRD names.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import orjson

from minikcp.apis import crds, custom_resources, printers
from minikcp.machinery import errors
from minikcp.registry import strategy
from minikcp.registry.strategies import apps


class CrdStrategy(strategy.Strategy):
    tracks_generation = True

    def prepare_for_create(self, obj: dict[str, Any]) -> None:
        super().prepare_for_create(obj)
        meta = obj["metadata"]
        finalizers = list(meta.get("finalizers") or ())
        if crds.CLEANUP_FINALIZER not in finalizers:
            meta["finalizers"] = [*finalizers, crds.CLEANUP_FINALIZER]

    def prepare_for_update(self, obj: dict[str, Any], old: Mapping[str, Any]) -> None:
        super().prepare_for_update(obj, old)
        # A new storage version joins storedVersions (objects may now be stored in it).
        status = obj.get("status")
        storage = _storage_version(obj)
        if isinstance(status, dict) and storage:
            stored = [v for v in status.get("storedVersions") or () if isinstance(v, str)]
            if storage not in stored:
                status["storedVersions"] = [*stored, storage]

    def initial_status(self, obj: dict[str, Any]) -> None:
        versions = (obj.get("spec") or {}).get("versions") or []
        storage = [v.get("name") for v in versions if isinstance(v, dict) and v.get("storage")]
        obj["status"] = {
            "acceptedNames": {"kind": "", "plural": ""},
            "conditions": [],
            "storedVersions": storage[:1],
        }


def _storage_version(crd: Mapping[str, Any]) -> str:
    for version in (crd.get("spec") or {}).get("versions") or ():
        if isinstance(version, dict) and version.get("storage") is True:
            return str(version.get("name") or "")
    return ""


def _path_parts(path: str) -> list[str]:
    """`.spec.replicas` -> ["spec", "replicas"] (the simple JSON paths scale allows)."""
    return [p for p in path.strip().lstrip(".").split(".") if p]


def _get(obj: Mapping[str, Any], path: str) -> Any:
    cur: Any = obj
    for part in _path_parts(path):
        if not isinstance(cur, Mapping):
            return None
        cur = cur.get(part)
    return cur


class CustomResourceStrategy(apps.ScalableStrategy):
    """A kind served from a CRD version (rt.custom)."""

    zero_value_has_spec = False

    def __init__(self, rt: Any) -> None:
        super().__init__(rt)
        assert rt.custom is not None
        columns = orjson.loads(rt.custom.printer_columns)
        self.printer = printers.crd_printer(columns if isinstance(columns, list) else [])
        self._scale_paths = rt.custom.scale_paths
        self._api_version = orjson.dumps(rt.api_version)
        self._has_defaults = custom_resources.compiled(rt).has_defaults

    # Objects are read as the requested version (conversion None: only apiVersion changes) and
    # with the schema's defaults, also for objects stored before a default was added.
    transforms_reads = True

    def on_read(self, value: bytes) -> bytes:
        if not self._has_defaults and b'"apiVersion":' + self._api_version in value:
            return value
        obj = orjson.loads(value)
        changed = obj.get("apiVersion") != self.rt.api_version
        obj["apiVersion"] = self.rt.api_version
        changed = custom_resources.apply_defaults(self.rt, obj) or changed
        return orjson.dumps(obj) if changed else value

    def spec_changed(self, obj: Mapping[str, Any], old: Mapping[str, Any]) -> bool:  # type: ignore[override]
        skipped = {"metadata", "apiVersion", "kind"} | ({"status"} if self.has_status else set())
        keys = (set(obj) | set(old)) - skipped
        return any(obj.get(k) != old.get(k) for k in keys)

    # -- scale ----------------------------------------------------------------------------

    def scale_of(self, obj: Mapping[str, Any]) -> dict[str, Any]:
        if self._scale_paths is None:
            raise errors.StatusError(
                404, "NotFound", "the server could not find the requested resource"
            )
        spec_path, status_path, selector_path = self._scale_paths
        meta = obj.get("metadata", {})
        scale_meta = {
            k: meta[k]
            for k in ("name", "namespace", "uid", "resourceVersion", "creationTimestamp")
            if k in meta
        }
        replicas = _get(obj, spec_path)
        status_replicas = _get(obj, status_path) if status_path else None
        selector = _get(obj, selector_path) if selector_path else None
        return {
            "kind": "Scale",
            "apiVersion": "autoscaling/v1",
            "metadata": scale_meta,
            "spec": {"replicas": replicas if isinstance(replicas, int) else 0},
            "status": {
                "replicas": status_replicas if isinstance(status_replicas, int) else 0,
                "selector": selector if isinstance(selector, str) else "",
            },
        }

    def replicas_field(self) -> tuple[str, ...]:
        if self._scale_paths is None:
            raise errors.StatusError(
                404, "NotFound", "the server could not find the requested resource"
            )
        return tuple(_path_parts(self._scale_paths[0]))

    def set_replicas(self, obj: dict[str, Any], replicas: int) -> None:  # type: ignore[override]
        assert self._scale_paths is not None
        parts = _path_parts(self._scale_paths[0])
        cur = obj
        for part in parts[:-1]:
            nxt = cur.get(part)
            if not isinstance(nxt, dict):
                nxt = {}
                cur[part] = nxt
            cur = nxt
        cur[parts[-1]] = replicas

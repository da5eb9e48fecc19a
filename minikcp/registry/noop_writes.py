"""Whether a write changes anything: one that changes nothing but managedFields timestamps is
not written, as upstream's update handler decides."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from minikcp.registry import codec


def unchanged(new: Mapping[str, Any], old: Mapping[str, Any]) -> bool:
    """A write that changes nothing but managedFields timestamps is not written (as upstream)."""
    if new.keys() != old.keys():
        return False
    for k, v in new.items():
        if k == "metadata":
            continue
        if old.get(k) != v:
            return False
    new_meta, old_meta = dict(new["metadata"]), dict(old.get("metadata", {}))
    for meta in (new_meta, old_meta):
        meta.pop("resourceVersion", None)
        meta.pop("managedFields", None)
        annotations = meta.get("annotations")
        if isinstance(annotations, dict) and codec.CLUSTER_ANNOTATION in annotations:
            rest = {k: v for k, v in annotations.items() if k != codec.CLUSTER_ANNOTATION}
            if rest:
                meta["annotations"] = rest
            else:
                del meta["annotations"]
    if new_meta != old_meta:
        return False
    return _same_managers(new.get("metadata", {}), old.get("metadata", {}))


def _same_managers(new_meta: Mapping[str, Any], old_meta: Mapping[str, Any]) -> bool:
    def owners(meta: Mapping[str, Any]) -> list[Any]:
        return [
            (m.get("manager"), m.get("operation"), m.get("fieldsV1"))
            for m in meta.get("managedFields") or ()
        ]

    return owners(new_meta) == owners(old_meta)

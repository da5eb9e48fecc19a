"""Each target's view of an upstream object, published on that object for the other owners (pure).

When an object is placed on targets run by different replicas, the owner of each target writes
what its target reports (the fields of `aggregate.TargetView`) into the annotation
`status.workload.minikcp.io/<target>` of the upstream object, as kcp's syncers write
`experimental.status.workload.kcp.io/<syncTargetKey>`; the upstream status is then summarised
from the annotations of the targets the object is placed on, inside the compare-and-swap write
of the status, so whichever owner writes last writes the sum of every owner's latest view.
Annotations of targets the object is no longer placed on are ignored and removed.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from typing import Any

import orjson

from minikcp.syncer import translate
from minikcp.syncer.aggregate import TargetView

PREFIX = translate.STATUS_VIEW_PREFIX
_NAME_MAX = 63  # the name part of an annotation key
# What the summaries read of a downstream spec (a StatefulSet's share and partition).
_SPEC_FIELDS = ("replicas", "updateStrategy")


def key_of(target: str) -> str:
    """The annotation holding `target`'s view (a long name is shortened with a hash)."""
    if len(target) <= _NAME_MAX:
        return PREFIX + target
    digest = hashlib.sha256(target.encode()).hexdigest()[:10]
    return f"{PREFIX}{target[: _NAME_MAX - 11].rstrip('.-')}-{digest}"


def encode(view: TargetView) -> str:
    body: dict[str, Any] = {"name": view.name}
    if view.status is not None:
        body["status"] = view.status
    if view.spec is not None:
        body["spec"] = {k: view.spec[k] for k in _SPEC_FIELDS if k in view.spec}
    for field in ("generation", "upstream_generation", "stale", "error"):
        value = getattr(view, field)
        if value:
            body[field] = value
    return orjson.dumps(body, option=orjson.OPT_SORT_KEYS).decode()


def decode(text: str | None) -> TargetView | None:
    """The published view; None when absent or unreadable (counted as not reported yet)."""
    if not text:
        return None
    try:
        body = orjson.loads(text)
    except orjson.JSONDecodeError:
        return None
    if not isinstance(body, dict) or not isinstance(body.get("name"), str):
        return None
    status, spec = body.get("status"), body.get("spec")
    generation, upstream_generation = body.get("generation", 0), body.get("upstream_generation", 0)
    if not all(isinstance(v, int) for v in (generation, upstream_generation)):
        return None
    return TargetView(
        name=body["name"],
        status=status if isinstance(status, dict) else None,
        generation=generation,
        upstream_generation=upstream_generation,
        stale=body.get("stale") is True,
        error=str(body.get("error") or ""),
        spec=spec if isinstance(spec, dict) else None,
    )


def published(annotations: Mapping[str, str] | None, placed: Iterable[str]) -> list[TargetView]:
    """The published views of the `placed` targets, by name; shorter when one is missing."""
    annotations = annotations or {}
    out = []
    for target in placed:
        view = decode(annotations.get(key_of(target)))
        if view is not None and view.name == target:
            out.append(view)
    return out


def publish(
    annotations: dict[str, str], views: Iterable[TargetView], placed: Iterable[str]
) -> bool:
    """Write `views` into `annotations` and drop those of targets not `placed`; True if changed."""
    keep = {key_of(t) for t in placed}
    changed = False
    for key in [k for k in annotations if k.startswith(PREFIX) and k not in keep]:
        del annotations[key]
        changed = True
    for view in views:
        key, text = key_of(view.name), encode(view)
        if annotations.get(key) != text:
            annotations[key] = text
            changed = True
    return changed


def clear(annotations: dict[str, str]) -> bool:
    """Drop every published view (all targets are run by one replica again); True if any."""
    return publish(annotations, (), ())


def content_mark(obj: Mapping[str, Any]) -> int:
    """What the object's downstream copies are made of: all but its status, the published views
    and what every write changes."""
    meta = obj.get("metadata") or {}
    rest = {
        k: v
        for k, v in meta.items()
        if k not in ("resourceVersion", "managedFields", "annotations")
    }
    rest["annotations"] = {
        k: v for k, v in (meta.get("annotations") or {}).items() if not k.startswith(PREFIX)
    }
    body = {k: v for k, v in obj.items() if k not in ("metadata", "status")}
    body["metadata"] = rest
    return hash(orjson.dumps(body, option=orjson.OPT_SORT_KEYS))


def status_mark(obj: Mapping[str, Any]) -> int:
    """The object's status (what a summary writes)."""
    return hash(orjson.dumps(obj.get("status"), option=orjson.OPT_SORT_KEYS))

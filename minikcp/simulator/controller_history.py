"""ControllerRevisions as pure functions (pkg/controller/history): the snapshots of a pod
template that StatefulSets and DaemonSets roll out between.

A revision's data is the strategic merge patch that replaces the owner's template
(`{"spec": {"template": {..., "$patch": "replace"}}}`); its name is `<owner>-<hash>`, the hash
being FNV-1 (32 bit) of that data and the collision count, safely encoded; its number counts up
from 1, and a template that comes back reuses its old revision under the next number.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import orjson

from minikcp.simulator import rollout

HASH_LABEL = "controller.kubernetes.io/hash"


def fnv32(data: bytes) -> int:
    """Go's hash/fnv New32 (FNV-1: multiply, then xor)."""
    value = 0x811C9DC5
    for byte in data:
        value = ((value * 0x01000193) & 0xFFFFFFFF) ^ byte
    return value


def template_patch(owner: Mapping[str, Any]) -> dict[str, Any]:
    """getPatch: the owner's template, to be replaced whole when the revision is applied."""
    template = dict(owner.get("spec", {}).get("template") or {})
    template["$patch"] = "replace"
    return {"spec": {"template": template}}


def revision_hash(data: Mapping[str, Any], collision_count: int | None) -> str:
    """HashControllerRevision over the data's JSON (Go's encoding sorts map keys)."""
    raw = orjson.dumps(data, option=orjson.OPT_SORT_KEYS)
    if collision_count is not None:
        raw += str(collision_count).encode()
    return rollout.safe_encode(str(fnv32(raw)))


def revision_name(owner_name: str, hash_: str) -> str:
    return f"{owner_name[:223]}-{hash_}"


def new_revision(
    owner: Mapping[str, Any], number: int, collision_count: int | None
) -> dict[str, Any]:
    """NewControllerRevision for the owner's current template."""
    meta = owner["metadata"]
    data = template_patch(owner)
    hash_ = revision_hash(data, collision_count)
    labels = dict(
        (owner.get("spec", {}).get("template") or {}).get("metadata", {}).get("labels") or {}
    )
    labels[HASH_LABEL] = hash_
    return {
        "apiVersion": "apps/v1",
        "kind": "ControllerRevision",
        "metadata": {
            "name": revision_name(meta["name"], hash_),
            "namespace": meta.get("namespace", ""),
            "labels": labels,
            "ownerReferences": [rollout.controller_ref(owner)],
        },
        "data": data,
        "revision": number,
    }


def number(revision: Mapping[str, Any]) -> int:
    value = revision.get("revision", 0)
    return value if isinstance(value, int) else 0


def by_number(revisions: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """SortControllerRevisions: by number, then creation, then name."""
    return sorted(
        revisions,
        key=lambda r: (
            number(r),
            r["metadata"].get("creationTimestamp", ""),
            r["metadata"].get("name", ""),
        ),
    )


def find_equal(
    revisions: Sequence[Mapping[str, Any]], wanted: Mapping[str, Any]
) -> list[Mapping[str, Any]]:
    """FindEqualRevisions: those holding the same data, in the given order."""
    data = wanted.get("data")
    return [revision for revision in revisions if revision.get("data") == data]


def template_of(revision: Mapping[str, Any]) -> dict[str, Any]:
    """The pod template a revision holds (ApplyRevision of a template-replacing patch)."""
    template = dict((revision.get("data") or {}).get("spec", {}).get("template") or {})
    template.pop("$patch", None)
    return template


def surplus(
    revisions: Sequence[Mapping[str, Any]], live: set[str], limit: int
) -> list[Mapping[str, Any]]:
    """truncateHistory: revisions no pod uses and not current or update, oldest first, beyond
    revisionHistoryLimit."""
    historic = [r for r in by_number(revisions) if r["metadata"]["name"] not in live]
    extra = len(historic) - max(limit, 0)
    return historic[:extra] if extra > 0 else []

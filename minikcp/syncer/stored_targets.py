"""Every SyncTarget as stored, by the logical clusters it serves: what a replica knows of the
targets other replicas run (their placement and the kinds they take), read from their status.

The owner of a target records its health in the SyncTarget's status (Ready, the last heartbeat,
the synced resources and whether each is accepted); a replica that does not run the target places
objects on it by that record, as the owner does by its live worker.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from minikcp.registry.objects import StoredObject
from minikcp.syncer import placement

TargetKey = tuple[str, str]  # (logical cluster, name)


def serves(obj: Mapping[str, Any], cluster: str) -> frozenset[str]:
    """The logical clusters a SyncTarget (stored in `cluster`) takes namespaces from."""
    clusters = (obj.get("spec") or {}).get("clusters") or ()
    return frozenset(c for c in clusters if isinstance(c, str)) or frozenset({cluster})


def candidate(obj: Mapping[str, Any]) -> placement.Candidate:
    meta = obj.get("metadata") or {}
    status = obj.get("status") or {}
    ready = any(
        c.get("type") == "Ready" and c.get("status") == "True"
        for c in status.get("conditions") or ()
        if isinstance(c, Mapping)
    )
    return placement.Candidate(
        name=str(meta.get("name", "")),
        labels=dict(meta.get("labels") or {}),
        ready=ready,
        reached=bool(status.get("lastSyncerHeartbeatTime")),
        deleting=bool(meta.get("deletionTimestamp")),
    )


def accepted(obj: Mapping[str, Any]) -> frozenset[str]:
    """The kinds (`resource.group`) the target syncs and found compatible downstream."""
    out = set()
    for entry in (obj.get("status") or {}).get("syncedResources") or ():
        if isinstance(entry, Mapping) and entry.get("state") == "Accepted":
            resource, group = entry.get("resource"), entry.get("group")
            out.add(f"{resource}.{group}" if group else str(resource))
    return frozenset(out)


def mark(obj: Mapping[str, Any], cluster: str) -> tuple[Any, ...]:
    """What placing objects on the target depends on: a change re-examines its clusters."""
    c = candidate(obj)
    usable = not c.deleting and (c.ready or c.reached)
    return (serves(obj, cluster), tuple(sorted(c.labels.items())), usable, accepted(obj))


@dataclass(frozen=True, slots=True)
class Stored:
    """One stored SyncTarget as placement reads it (read from the object once per event)."""

    candidate: placement.Candidate
    accepted: frozenset[str]
    serves: frozenset[str]
    mark: tuple[Any, ...]


class StoredTargets:
    """The stored SyncTargets, indexed by the logical clusters they serve."""

    def __init__(self) -> None:
        self._objects: dict[TargetKey, Stored] = {}
        self._serving: dict[str, set[TargetKey]] = {}

    def put(self, obj: StoredObject) -> tuple[Any, ...] | None:
        """Record the target; returns its mark before (None when new)."""
        key = (obj.cluster, obj.metadata.get("name", ""))
        view = obj.view()
        before = self.remove(key)
        stored = Stored(
            candidate(view), accepted(view), serves(view, obj.cluster), mark(view, obj.cluster)
        )
        self._objects[key] = stored
        for c in stored.serves:
            self._serving.setdefault(c, set()).add(key)
        return before

    def remove(self, key: TargetKey) -> tuple[Any, ...] | None:
        """Forget the target; returns its mark (None when unknown)."""
        found = self._objects.pop(key, None)
        if found is None:
            return None
        for c in found.serves:
            keys = self._serving.get(c)
            if keys is not None:
                keys.discard(key)
                if not keys:
                    del self._serving[c]
        return found.mark

    def mark_of(self, key: TargetKey) -> tuple[Any, ...] | None:
        found = self._objects.get(key)
        return None if found is None else found.mark

    def serving(self, cluster: str) -> list[Stored]:
        """The stored targets that take namespaces from `cluster`."""
        keys = [*self._serving.get(cluster, ()), *self._serving.get("*", ())]
        return [self._objects[k] for k in keys]

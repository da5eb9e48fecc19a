"""The garbage collector's dependency graph: pure data, no I/O.

As upstream's GraphBuilder (`pkg/controller/garbagecollector/graph_builder.go`), but it keeps
only what collection needs, so memory follows the objects that have owners, not all objects:

- a node per object that has ownerReferences (a dependent), and per object being deleted with
  one of the collector's finalizers (`foregroundDeletion`, `orphan`);
- the links from each owner uid to the dependents naming it, derived from the dependents alone,
  so an owner that is neither a dependent nor being deleted costs no node;
- the names owners are referenced by, so that the event stream can tell from a key alone
  whether an event may concern an owner (and only then decode it);
- what lookups of owners found: owners known absent (a bounded LRU, as upstream's
  absentOwnerCache) and owners known present, which spares a lookup per new dependent.

Ids are (logical cluster, uid): an object never owns anything in another logical cluster.
`observe` and `observe_deleted` apply one event and return the work it causes: `DELETE` is
upstream's attemptToDelete queue, `ORPHAN` its attemptToOrphan queue.
"""

from __future__ import annotations

import collections
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from minikcp.machinery import propagation

NodeId = tuple[str, str]  # (logical cluster, uid)
# Where an owner reference points: (cluster, apiVersion, kind, namespace, name, uid), the
# namespace "" for a cluster-scoped owner (upstream's objectReference).
Coordinates = tuple[str, str, str, str, str, str]

DELETE = "delete"
ORPHAN = "orphan"
_ABSENT_CACHE = 1024


class Work(NamedTuple):
    action: str  # DELETE or ORPHAN
    cluster: str
    uid: str


@dataclass(frozen=True, slots=True)
class OwnerRef:
    api_version: str
    kind: str
    name: str
    uid: str
    block_owner_deletion: bool = False

    @classmethod
    def parse(cls, ref: Mapping[str, Any]) -> OwnerRef:
        # Interned: the dependents of one owner share its strings.
        return cls(
            sys.intern(str(ref.get("apiVersion") or "")),
            sys.intern(str(ref.get("kind") or "")),
            sys.intern(str(ref.get("name") or "")),
            sys.intern(str(ref.get("uid") or "")),
            ref.get("blockOwnerDeletion") is True,
        )


@dataclass(frozen=True, slots=True)
class ObjectState:
    """What the collector needs of one stored object."""

    key: str
    cluster: str
    namespace: str
    name: str
    uid: str
    api_version: str
    kind: str
    owners: tuple[OwnerRef, ...]
    being_deleted: bool
    finalizers: frozenset[str]

    @classmethod
    def of(cls, key: str, cluster: str, obj: Mapping[str, Any]) -> ObjectState | None:
        """The state of a decoded object; None for something that is not an object."""
        meta = obj.get("metadata")
        if not isinstance(meta, Mapping) or not isinstance(meta.get("uid"), str):
            return None
        by_uid: dict[str, OwnerRef] = {}
        for raw in meta.get("ownerReferences") or ():
            if isinstance(raw, Mapping):
                ref = OwnerRef.parse(raw)
                if ref.uid:
                    by_uid.setdefault(ref.uid, ref)  # one per uid: the first
        owners = tuple(by_uid.values())
        finalizers = meta.get("finalizers") or ()
        return cls(
            key=key,
            cluster=sys.intern(cluster),
            namespace=sys.intern(str(meta.get("namespace") or "")),
            name=str(meta.get("name") or ""),
            uid=meta["uid"],
            api_version=str(obj.get("apiVersion") or ""),
            kind=str(obj.get("kind") or ""),
            owners=owners,
            being_deleted=bool(meta.get("deletionTimestamp")),
            finalizers=frozenset(f for f in finalizers if isinstance(f, str)),
        )

    @property
    def deleting_dependents(self) -> bool:
        return self.being_deleted and propagation.FOREGROUND in self.finalizers

    @property
    def orphaning(self) -> bool:
        return self.being_deleted and propagation.ORPHAN in self.finalizers

    @property
    def tracked(self) -> bool:
        """Whether the graph keeps a node for this object."""
        return bool(self.owners) or self.deleting_dependents or self.orphaning

    @property
    def coordinates(self) -> Coordinates:
        return (self.cluster, self.api_version, self.kind, self.namespace, self.name, self.uid)


@dataclass(slots=True)
class Node:
    cluster: str
    uid: str
    key: str
    namespace: str
    owners: tuple[OwnerRef, ...]
    being_deleted: bool
    deleting_dependents: bool
    orphaning: bool

    @property
    def id(self) -> NodeId:
        return (self.cluster, self.uid)

    @property
    def name(self) -> str:
        return self.key[self.key.rfind("/") + 1 :]  # not kept twice: memory is per dependent


class RefPair(NamedTuple):
    old: OwnerRef
    new: OwnerRef


def references_diff(
    old: Sequence[OwnerRef], new: Sequence[OwnerRef]
) -> tuple[list[OwnerRef], list[OwnerRef], list[RefPair]]:
    """(added, removed, changed) owner references by uid, as upstream's referencesDiffs."""
    old_by_uid = {ref.uid: ref for ref in old}
    added: list[OwnerRef] = []
    changed: list[RefPair] = []
    for ref in new:
        before = old_by_uid.pop(ref.uid, None)
        if before is None:
            added.append(ref)
        elif before != ref:
            changed.append(RefPair(before, ref))
    return added, list(old_by_uid.values()), changed


def owner_matches(
    known: tuple[str, str, str, str], ref: OwnerRef, dependent_namespace: str
) -> bool:
    """Whether `ref` of a dependent in `dependent_namespace` names the owner found at `known`
    (apiVersion, kind, namespace, name): same coordinates, and a namespaced owner in the
    dependent's own namespace."""
    api_version, kind, namespace, name = known
    return (api_version, kind, name) == (ref.api_version, ref.kind, ref.name) and namespace in (
        "",
        dependent_namespace,
    )


class Graph:
    def __init__(self) -> None:
        self._nodes: dict[NodeId, Node] = {}
        self._by_key: dict[str, NodeId] = {}
        self._dependents: dict[NodeId, set[str]] = {}
        self._ref_names: dict[tuple[str, str], int] = {}
        self._absent: collections.OrderedDict[Coordinates, None] = collections.OrderedDict()
        self._present: dict[NodeId, tuple[str, str, str, str]] = {}
        # Bumped by every event that may make a present owner absent or waiting, so a lookup
        # that raced with one does not record a stale "present".
        self.epoch = 0

    def __len__(self) -> int:
        return len(self._nodes)

    # -- questions ------------------------------------------------------------------------------

    def node(self, node_id: NodeId) -> Node | None:
        return self._nodes.get(node_id)

    def tracks(self, key: str) -> bool:
        return key in self._by_key

    def may_own(self, cluster: str, name: str) -> bool:
        """Whether some owner reference (or remembered owner) in `cluster` names `name`."""
        return (cluster, name) in self._ref_names

    def dependents_of(self, node_id: NodeId) -> list[Node]:
        cluster = node_id[0]
        found = (self._nodes.get((cluster, uid)) for uid in self._dependents.get(node_id, ()))
        return [node for node in found if node is not None]

    def has_dependents(self, node_id: NodeId) -> bool:
        return bool(self._dependents.get(node_id))

    def blocking_dependents(self, node_id: NodeId) -> list[Node]:
        """Dependents whose reference to the owner has blockOwnerDeletion (graph.go)."""
        uid = node_id[1]
        return [
            dep
            for dep in self.dependents_of(node_id)
            if any(ref.uid == uid and ref.block_owner_deletion for ref in dep.owners)
        ]

    def known_absent(self, coordinates: Coordinates) -> bool:
        if coordinates in self._absent:
            self._absent.move_to_end(coordinates)
            return True
        return False

    def known_present(self, cluster: str, namespace: str, ref: OwnerRef) -> bool:
        known = self._present.get((cluster, ref.uid))
        return known is not None and owner_matches(known, ref, namespace)

    # -- what lookups found ---------------------------------------------------------------------

    def remember_absent(self, coordinates: Coordinates) -> None:
        self._absent[coordinates] = None
        self._absent.move_to_end(coordinates)
        if len(self._absent) > _ABSENT_CACHE:
            self._absent.popitem(last=False)

    def remember_present(
        self, cluster: str, uid: str, where: tuple[str, str, str, str], *, epoch: int
    ) -> None:
        """A lookup found the owner `uid` at `where` (apiVersion, kind, namespace, name), not
        waiting for its dependents. Kept while it has dependents and unless an event since the
        lookup began could have changed that; its name then counts as referenced, so that its
        deletion is seen and forgets it."""
        owner_id = (cluster, uid)
        if epoch != self.epoch or not self._dependents.get(owner_id):
            return
        self._forget_present(owner_id)
        self._present[owner_id] = where
        self._count_name(cluster, where[3], 1)

    def _forget_present(self, owner_id: NodeId) -> None:
        known = self._present.pop(owner_id, None)
        if known is not None:
            self._count_name(owner_id[0], known[3], -1)

    # -- events ---------------------------------------------------------------------------------

    def observe(self, state: ObjectState) -> list[Work]:
        """An object was created or changed."""
        work: list[Work] = []
        node_id = (state.cluster, state.uid)
        prior = self._by_key.get(state.key)
        if prior is not None and prior != node_id:
            # The key holds a new object: the one we knew is gone.
            work += self._drop(prior)
            work += self._owner_gone(prior, None)
        if state.deleting_dependents or state.orphaning:
            self._forget_present(node_id)
            self.epoch += 1
        node = self._nodes.get(node_id)
        if node is None:
            if not state.tracked:
                return work
            node = Node(
                state.cluster,
                state.uid,
                state.key,
                state.namespace,
                (),
                state.being_deleted,
                deleting_dependents=False,
                orphaning=False,
            )
            self._nodes[node_id] = node
            self._by_key[state.key] = node_id
        added, removed, changed = references_diff(node.owners, state.owners)
        work += self._unblocked_owners(node, removed, changed)
        self._unlink(node, removed)
        node.owners = state.owners
        self._link(node, added)
        if any(not self.known_present(node.cluster, node.namespace, ref) for ref in added):
            work.append(Work(DELETE, *node_id))
        node.being_deleted = state.being_deleted
        if state.orphaning and not node.orphaning:
            work.append(Work(ORPHAN, *node_id))
        elif state.deleting_dependents and not node.deleting_dependents:
            work += (Work(DELETE, *dep.id) for dep in self.dependents_of(node_id))
            work.append(Work(DELETE, *node_id))
        node.orphaning = state.orphaning
        node.deleting_dependents = state.deleting_dependents
        if not state.tracked:
            work += self._drop(node_id)
        return work

    def observe_deleted(self, key: str, state: ObjectState | None) -> list[Work]:
        """The object at `key` was deleted; `state` is its last state, when it was decoded."""
        work: list[Work] = []
        node_id = self._by_key.get(key)
        if node_id is not None:
            work += self._drop(node_id)
        if state is not None:
            work += self._owner_gone((state.cluster, state.uid), state.coordinates)
        elif node_id is not None:
            work += self._owner_gone(node_id, None)
        return work

    # -- internals ------------------------------------------------------------------------------

    def _drop(self, node_id: NodeId) -> list[Work]:
        """The object is no longer tracked (deleted, or neither a dependent nor deleting)."""
        node = self._nodes.pop(node_id)
        if self._by_key.get(node.key) == node_id:
            del self._by_key[node.key]
        # Owners waiting for their dependents look again (the deleted one, or one that no
        # longer names them, blocks them no more).
        work = [
            Work(DELETE, node.cluster, ref.uid)
            for ref in node.owners
            if self._waiting(node.cluster, ref.uid)
        ]
        self._unlink(node, node.owners)
        node.owners = ()
        return work

    def _owner_gone(self, owner_id: NodeId, coordinates: Coordinates | None) -> list[Work]:
        """An object was deleted: what named it as owner looks again."""
        self._forget_present(owner_id)
        dependents = self._dependents.get(owner_id)
        if not dependents:
            return []
        self.epoch += 1
        if coordinates is not None:
            self.remember_absent(coordinates)
        return [Work(DELETE, owner_id[0], uid) for uid in dependents]

    def _unblocked_owners(
        self, node: Node, removed: Iterable[OwnerRef], changed: Iterable[RefPair]
    ) -> list[Work]:
        """Owners a dependent blocked until now (addUnblockedOwnersToDeleteQueue)."""
        unblocked = [ref.uid for ref in removed if ref.block_owner_deletion]
        unblocked += [
            pair.new.uid
            for pair in changed
            if pair.old.block_owner_deletion and not pair.new.block_owner_deletion
        ]
        return [
            Work(DELETE, node.cluster, uid) for uid in unblocked if self._waiting(node.cluster, uid)
        ]

    def _waiting(self, cluster: str, uid: str) -> bool:
        owner = self._nodes.get((cluster, uid))
        return owner is not None and owner.deleting_dependents

    def _link(self, node: Node, refs: Iterable[OwnerRef]) -> None:
        for ref in refs:
            self._dependents.setdefault((node.cluster, ref.uid), set()).add(node.uid)
            self._count_name(node.cluster, ref.name, 1)

    def _unlink(self, node: Node, refs: Iterable[OwnerRef]) -> None:
        for ref in refs:
            owner_id = (node.cluster, ref.uid)
            dependents = self._dependents.get(owner_id)
            if dependents is not None:
                dependents.discard(node.uid)
                if not dependents:
                    del self._dependents[owner_id]
                    self._forget_present(owner_id)
            self._count_name(node.cluster, ref.name, -1)

    def _count_name(self, cluster: str, name: str, delta: int) -> None:
        key = (cluster, name)
        count = self._ref_names.get(key, 0) + delta
        if count > 0:
            self._ref_names[key] = count
        else:
            self._ref_names.pop(key, None)

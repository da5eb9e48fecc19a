"""Leases of the in-process components, stored as coordination.k8s.io/v1 Leases.

Every lease lives in namespace `kube-system` of the logical cluster `system:admin`:
`minikcp-controllers` for the singleton controllers, `synctarget-<logical cluster>.<name>` for
the worker of each SyncTarget (syncer/shards.py), and
`minikcp-replica-<identity>` for each live replica (held by itself: it announces the replica, so
the sharded components know how many share the work). Names a Lease cannot have (colons,
underscores) are replaced and a hash of the original added.

The lock reads and writes through the registry in-process, like any client (validation, the
resourceVersion precondition for compare-and-swap), so `kubectl get leases -A` shows them.
"""

from __future__ import annotations

import asyncio
import datetime
import hashlib
import logging
import re
import time
from collections.abc import Mapping
from typing import Any

from minikcp.machinery import errors, list_options, names
from minikcp.registry import registry as registry_module
from minikcp.registry import watching
from minikcp.registry.objects import RequestContext, StoredObject, WriteOptions
from minikcp.runtime import leader_election

logger = logging.getLogger(__name__)

CLUSTER = "system:admin"
NAMESPACE = "kube-system"
CONTROLLERS_LEASE = "minikcp-controllers"
REPLICA_PREFIX = "minikcp-replica-"
NONCE_ANNOTATION = "minikcp.io/replica-nonce"
# On a replica's own lease: the sharded components it runs (comma-separated), so each counts
# only the replicas that share its work.
SHARDED_ANNOTATION = "minikcp.io/sharded-components"
FIELD_MANAGER = "minikcp-leader-election"
LEASE = ("coordination.k8s.io", "v1", "leases")
_CONTEXT = RequestContext(cluster=CLUSTER)
_SWEEP_SECONDS = 5.0
_NOT_NAME = re.compile(r"[^a-z0-9-]+")


def object_name(wanted: str) -> str:
    """A valid Lease name for `wanted`: itself, or with invalid characters replaced and a hash
    of the original added (logical cluster paths have colons, identities underscores)."""
    if len(wanted) <= 253 and not names.dns1123_subdomain_errors(wanted):
        return wanted
    digest = hashlib.sha256(wanted.encode()).hexdigest()[:10]
    readable = _NOT_NAME.sub("-", wanted.lower()).strip(".-")[:200]
    return f"{readable}-{digest}" if readable else digest


def replica_lease(identity: str) -> str:
    return object_name(REPLICA_PREFIX + identity)


def _micro_time(value: datetime.datetime | None) -> str | None:
    if value is None:
        return None
    return value.astimezone(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _parse_micro_time(value: Any) -> datetime.datetime | None:
    if not isinstance(value, str) or not value:
        return None
    try:
        return datetime.datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None


def record_of(obj: StoredObject) -> leader_election.Record:
    view = obj.view()
    spec = view.get("spec") or {}
    annotations = view["metadata"].get("annotations") or {}
    return leader_election.Record(
        holder=spec.get("holderIdentity") or "",
        lease_duration_seconds=int(spec.get("leaseDurationSeconds") or 0),
        acquire_time=_parse_micro_time(spec.get("acquireTime")),
        renew_time=_parse_micro_time(spec.get("renewTime")),
        transitions=int(spec.get("leaseTransitions") or 0),
        nonce=annotations.get(NONCE_ANNOTATION, ""),
    )


def lease_body(
    name: str,
    record: leader_election.Record,
    version: str = "",
    annotations: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "holderIdentity": record.holder,
        "leaseDurationSeconds": record.lease_duration_seconds,
        "acquireTime": _micro_time(record.acquire_time),
        "renewTime": _micro_time(record.renew_time),
        "leaseTransitions": record.transitions,
    }
    metadata: dict[str, Any] = {"name": name, "namespace": NAMESPACE}
    marks = dict(annotations or {})
    if record.nonce:
        marks[NONCE_ANNOTATION] = record.nonce
    if marks:
        metadata["annotations"] = marks
    if version:
        metadata["resourceVersion"] = version
    return {
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": metadata,
        "spec": {k: v for k, v in spec.items() if v is not None},
    }


class RegistryLeaseLock:
    """client-go's LeaseLock over the registry (resourcelock/leaselock.go)."""

    def __init__(
        self,
        reg: registry_module.Registry,
        name: str,
        *,
        annotations: Mapping[str, str] | None = None,
        watch: LeaseWatch | None = None,
    ) -> None:
        self._annotations = annotations
        self._watch = watch
        # What this lock wrote last: newer than the watch until its event arrives.
        self._written: tuple[leader_election.Record, int] | None = None
        rt = reg.catalog.by_resource(*LEASE)
        assert rt is not None, "coordination.k8s.io/v1 leases are always served"
        self._store = reg.store(rt)
        self.name = object_name(name)
        self.description = f"lease {CLUSTER}|{NAMESPACE}/{self.name}"

    async def get(self, *, fresh: bool = False) -> tuple[leader_election.Record, str] | None:
        """From the watch when it is following (no request per retry period), else (and when
        `fresh`) the store."""
        if not fresh and self._watch is not None and self._watch.synced:
            found = self._watch.leases.get(self.name)
            written = self._written
            if written is not None and (found is None or found.revision < written[1]):
                return written[0], str(written[1])
        else:
            found = await self._store.find(_CONTEXT, NAMESPACE, self.name)
        if found is None:
            return None
        return record_of(found), str(found.revision)

    def seen_at(self, version: str) -> float | None:
        """When this process's watch delivered `version` of the lease (monotonic), if it did."""
        if self._watch is None:
            return None
        return self._watch.seen_at(self.name, version)

    async def create(self, record: leader_election.Record) -> str:
        try:
            created = await self._store.create(
                _CONTEXT,
                NAMESPACE,
                lease_body(self.name, record, annotations=self._annotations),
                WriteOptions(field_manager=FIELD_MANAGER),
            )
        except errors.StatusError as exc:
            if exc.code == 409:
                raise leader_election.LockConflict(exc.message) from None
            raise
        self._written = (record, created.revision)
        return str(created.revision)

    async def update(self, record: leader_election.Record, version: str) -> str:
        try:
            updated = await self._store.update(
                _CONTEXT,
                NAMESPACE,
                self.name,
                lease_body(self.name, record, version, self._annotations),
                WriteOptions(field_manager=FIELD_MANAGER),
            )
        except errors.StatusError as exc:
            if exc.code in (404, 409):
                raise leader_election.LockConflict(exc.message) from None
            raise
        self._written = (record, updated.revision)
        return str(updated.revision)

    async def delete_released(self, *, timeout: float) -> None:
        """Delete the lease if it has no holder (released); bounded, as the store may be gone."""
        try:
            async with asyncio.timeout(timeout):
                found = await self._store.find(_CONTEXT, NAMESPACE, self.name)
                if found is None or record_of(found).holder:
                    return
                preconditions = {"resourceVersion": str(found.revision)}
                await self._store.delete(
                    _CONTEXT,
                    NAMESPACE,
                    self.name,
                    {"preconditions": preconditions},
                    WriteOptions(field_manager=FIELD_MANAGER),
                )
        except (errors.StatusError, TimeoutError) as exc:
            logger.info("%s not deleted: %s", self.description, exc)


class LeaseWatch:
    """Every lease of the namespace, followed by one in-process watch: the records the locks
    read, and how many replicas hold their own `minikcp-replica-*` lease.

    A lock reads its record here rather than from the store every retry period (a stale record
    only makes its compare-and-swap fail). A replica counts as live while its lease has a holder
    and changed less than its duration ago on this process's clock, as leader election judges a
    holder. The lease of a replica that died without releasing it (kill -9) is deleted once it
    has not changed for twice its duration, with a resourceVersion precondition (a replica that
    comes back simply creates it again).
    """

    def __init__(self, reg: registry_module.Registry) -> None:
        self._registry = reg
        self.leases: dict[str, StoredObject] = {}
        # name -> (resourceVersion, when it arrived): a follower counts a lease's duration from
        # when this process first saw the record change, not from its next retry.
        self._arrived: dict[str, tuple[str, float]] = {}
        self.synced = False  # listed, and the watch from there is open
        # name -> (observed at, duration s, resourceVersion, sharded components it runs)
        self._seen: dict[str, tuple[float, int, str, frozenset[str]]] = {}

    def count(self, component: str) -> int:
        """Live replicas running the sharded `component` (at least one: this one)."""
        now = time.monotonic()
        live = sum(
            1
            for at, duration, _, runs in self._seen.values()
            if now - at < duration and component in runs
        )
        return max(1, live)

    def seen_at(self, name: str, version: str) -> float | None:
        found = self._arrived.get(name)
        return found[1] if found is not None and found[0] == version else None

    async def run(self) -> None:
        async with asyncio.TaskGroup() as tasks:
            tasks.create_task(self._follow(), name="replica-leases-watch")
            tasks.create_task(self._sweep(), name="replica-leases-sweep")

    async def _sweep(self) -> None:
        rt = self._registry.catalog.by_resource(*LEASE)
        assert rt is not None
        while True:
            await asyncio.sleep(_SWEEP_SECONDS)
            now = time.monotonic()
            for name, (at, duration, version, _) in list(self._seen.items()):
                if now - at < 2 * duration:
                    continue
                try:
                    await self._registry.store(rt).delete(
                        _CONTEXT,
                        NAMESPACE,
                        name,
                        {"preconditions": {"resourceVersion": version}},
                        WriteOptions(field_manager=FIELD_MANAGER),
                    )
                    logger.info("lease %s of a replica gone for %ss deleted", name, 2 * duration)
                except errors.StatusError as exc:
                    logger.debug("lease %s not deleted: %s", name, exc.message)

    def _observe(self, kind: str, obj: StoredObject) -> None:
        name = obj.metadata.get("name", "")
        if kind == watching.DELETED:
            self.leases.pop(name, None)
            self._arrived.pop(name, None)
        else:
            self.leases[name] = obj
            self._arrived[name] = (str(obj.revision), time.monotonic())
        if not name.startswith(REPLICA_PREFIX):
            return
        record = record_of(obj)
        if kind == watching.DELETED or not record.holder:
            self._seen.pop(name, None)
        else:
            duration = record.lease_duration_seconds
            marks = obj.metadata.get("annotations") or {}
            runs = frozenset(filter(None, marks.get(SHARDED_ANNOTATION, "").split(",")))
            self._seen[name] = (time.monotonic(), duration, str(obj.revision), runs)

    async def _follow(self) -> None:
        rt = self._registry.catalog.by_resource(*LEASE)
        assert rt is not None
        rv = ""
        while True:
            opts = list_options.ListOptions(watch=True, resource_version=rv)
            try:
                if not rv:
                    listing = await self._registry.store(rt).list(
                        _CONTEXT, NAMESPACE, list_options.ListOptions()
                    )
                    self._seen.clear()
                    self.leases.clear()
                    self._arrived.clear()
                    for item in listing.items:
                        self._observe(watching.ADDED, item)
                    rv = str(listing.revision)
                    self.synced = True
                    opts = list_options.ListOptions(watch=True, resource_version=rv)
                async for event in self._registry.watch(rt, _CONTEXT, NAMESPACE, opts):
                    if event.type == watching.ERROR:
                        rv = ""
                        self.synced = False
                        break
                    if event.object is not None:
                        rv = str(event.object.revision)
                        self._observe(event.type, event.object)
            except errors.StatusError as exc:
                logger.info("replica leases not watched: %s", exc.message)
                self.synced = False
                rv = ""
                await asyncio.sleep(1.0)

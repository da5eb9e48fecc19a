"""API negotiation: per logical cluster and synced kind, the schema every target accepts.

The replica running a target imports its schemas (`api_imports.py`) on the probe cadence and
stores them as APIResourceImports (`stored_imports.py`). Whenever what a (logical cluster, kind)
depends on changes (the cluster's own schema, a stored import, a target's API policy, the set of
targets), the owner of a target taking part negotiates the kind again from the stored imports of
every target, wherever they run: each is compared with the logical cluster's schema, the schema
every receiving target accepts is written as a NegotiatedAPIResource, and the existing objects
that use fields a receiving target lacks are reported there (nothing is deleted). Owners of
different targets of one logical cluster compute the same object from the same stored state; the
write is a no-op when nothing changed, so computing it twice is harmless.

A target's policy for a kind (`spec.apiPolicies` of its SyncTarget) says what a narrower schema
means: `first` (today's behaviour) sends objects anyway and the target drops what it does not know;
`lcd` refuses writes in the logical cluster that use fields the target lacks (422, naming it), by an
admission hook in the registry's write path that reads the stored imports, so every replica
refuses them, whether it runs the target or not; `pinned` keeps the logical cluster's schema and
sends the target nothing of the kind (its SyncTarget shows the kind Incompatible and says which
fields), as its owner decides from the target's stored import.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import orjson

from minikcp.apis import catalog, openapi
from minikcp.machinery import errors, list_options
from minikcp.machinery import schema_intersection as si
from minikcp.registry import admission, fencing, system_fields
from minikcp.registry import registry as upstream_registry
from minikcp.registry.objects import RequestContext, StoredObject, WriteOptions
from minikcp.runtime import work_queue
from minikcp.syncer import api_imports, resources, stored_imports
from minikcp.syncer import client as downstream
from minikcp.syncer.target import Settings, TargetWorker

logger = logging.getLogger(__name__)

NEGOTIATED = ("apiresource.minikcp.io", "v1alpha1", "negotiatedapiresources")
POLICIES = ("first", "lcd", "pinned")
CONDITION = "APIsCompatible"
REPORTED_OBJECTS = 20  # non-conforming objects listed by name; all are counted
WRITE = WriteOptions(field_manager="minikcp-api-negotiation")
_FIRST_LIST_WAIT = 10.0  # seconds a write waits for a starting replica's first read of imports
_OWN_SCHEMAS = 256  # the logical clusters' own kind schemas kept, by document hash

COMPATIBLE, NARROWER, INCOMPATIBLE = "Compatible", "Narrower", "Incompatible"
# The lcd targets a kind's writes are checked against: (target name, the schema it accepts).
_Enforced = tuple[tuple[str, Mapping[str, Any]], ...]


def policy_for(policies: Mapping[str, str], resource: str) -> str:
    """A target's policy for `resource.group`: its own entry, else "*", else first."""
    return policies.get(resource) or policies.get("*") or "first"


class Context(Protocol):
    registry: upstream_registry.Registry
    settings: Settings

    async def enqueue_all(self, workers: list[TargetWorker]) -> None: ...


@dataclass
class _Target:
    """The negotiation state of one running target."""

    worker: TargetWorker
    imports: api_imports.Imports
    policies: dict[str, str] = field(default_factory=dict)
    discovered: dict[str, bool] | None = None  # what discovery said, before pinning
    problems: dict[str, str] = field(default_factory=dict)  # resource -> why it is pinned off
    holding: fencing.Holding | None = None  # the fence of the target's lease


@dataclass(frozen=True, slots=True)
class _Outcome:
    state: str
    policy: str
    lacks: tuple[si.Difference, ...] = ()
    schema: Mapping[str, Any] | None = None  # own schema ∩ the target's
    message: str = ""


class Negotiation:
    def __init__(self, ctx: Context) -> None:
        self._ctx = ctx
        self._targets: dict[tuple[str, str], _Target] = {}  # the targets this replica runs
        self.imports = stored_imports.StoredImports(ctx.registry)
        self._inputs: dict[tuple[str, str], tuple[Any, ...]] = {}  # (cluster, resource) -> deps
        # (cluster, resource) -> (deps, the lcd targets' schemas writes are checked against).
        self._enforced: dict[tuple[str, str], tuple[tuple[Any, ...], _Enforced]] = {}
        self._own: dict[tuple[str, str], dict[str, Any]] = {}
        # (cluster, resource) with a Narrower target -> when its objects are looked at again.
        self._narrowed: dict[tuple[str, str], float] = {}
        # Targets whose schemas are to be imported and negotiated (deduplicated).
        self._queue: work_queue.WorkQueue[tuple[str, str]] = work_queue.WorkQueue(
            lambda key: key[0], name="syncer-api-negotiation"
        )
        ctx.registry.admit_all(self._hook_for)

    def _hook_for(self, rt: catalog.ResourceType) -> admission.Admission | None:
        if not rt.namespaced:
            return None
        return LcdAdmission(self, rt)

    # -- per probe ------------------------------------------------------------------------------

    def on_health(self, worker: TargetWorker, target: StoredObject) -> tuple[dict[str, str], ...]:
        """After a probe of `worker`: its import and negotiation are queued (they run in their
        own task, so a slow target never holds up probes); the conditions for its SyncTarget."""
        key = (worker.ref.cluster, worker.name)
        state = self._targets.get(key)
        if state is None or state.worker is not worker:
            # A new worker (restarted with a new kubeconfig or resources) imports afresh.
            state = _Target(worker, api_imports.Imports())
            self._targets[key] = state
        spec = target.view().get("spec") or {}
        policies = spec.get("apiPolicies") or {}
        state.policies = {str(k): str(v) for k, v in policies.items() if v in POLICIES}
        # Probes run in the target's task: its imports are written under the same fence.
        state.holding = fencing.current()
        if worker.health.ready and worker.health.compatible:
            if state.discovered is None:
                state.discovered = {
                    name: worker.health.compatible.get(name, False) for name in worker.synced
                }
            self._queue.add(key)
        return _conditions(state)

    async def run(self) -> None:
        """Import and negotiate for the targets probed, one at a time, until cancelled."""
        try:
            async with asyncio.TaskGroup() as tasks:
                tasks.create_task(self.imports.run(), name="syncer-api-imports")
                await work_queue.run_worker(
                    self._queue,
                    self._refresh,
                    describe=lambda key: f"API negotiation of sync target {key[0]}|{key[1]}",
                    logger=logger,
                    expected=(errors.StatusError, fencing.LeaseLost),
                    expected_level=logging.INFO,
                )
        finally:
            self._queue.close()

    async def _refresh(self, key: tuple[str, str]) -> None:
        state = self._targets.get(key)
        if state is None:
            return
        with fencing.fenced(state.holding or _unfenced):
            worker = state.worker
            try:
                await api_imports.refresh(
                    worker.client,
                    worker.synced.values(),
                    state.imports,
                    timeout=worker.settings.probe_timeout,
                )
            except (downstream.Unreachable, downstream.DownstreamError) as exc:
                logger.debug("importing the schemas of %s: %s", worker.name, exc)
            if self._targets.get(key) is not state:
                return  # stopped or withdrawn meanwhile
            await self._store(state)
            for cluster in _negotiated_clusters(worker):
                for resource in worker.synced:
                    await self.negotiate(cluster, resource)

    async def _store(self, state: _Target) -> None:
        """The target's imports as APIResourceImports (written only when they changed)."""
        worker = state.worker
        key = (worker.ref.cluster, worker.name)
        for resource in self.imports.index.of_target(key):
            if resource not in worker.synced:
                await self.imports.delete(key[0], key[1], resource)
        if state.discovered is None:
            return
        clusters = _negotiated_clusters(worker)
        for resource, synced in worker.synced.items():
            schema = state.imports.schemas.get(resource)
            if schema is None:
                continue  # not imported yet
            spec = stored_imports.spec_of(
                target=worker.name,
                uid=worker.ref.uid,
                clusters=clusters,
                group=synced.rt.group,
                version=synced.rt.version,
                kind=synced.rt.kind,
                plural=synced.rt.plural,
                policy=policy_for(state.policies, resource),
                served=bool(state.discovered.get(resource)),
                schema=schema,
            )
            await self.imports.put(key[0], key[1], resource, spec)

    def forget(self, cluster: str, name: str) -> None:
        """This replica no longer runs the target (its stored imports stay)."""
        self._targets.pop((cluster, name), None)

    async def withdraw(self, cluster: str, name: str) -> None:
        """The target goes: its imports are deleted and the kinds negotiated without it."""
        self._targets.pop((cluster, name), None)
        gone = self.imports.index.of_target((cluster, name))
        for resource in gone:
            await self.imports.delete(cluster, name, resource)
        for resource, imported in sorted(gone.items()):
            for negotiated in imported.clusters:
                await self.negotiate(negotiated, resource)

    # -- negotiating ----------------------------------------------------------------------------

    async def negotiate(self, cluster: str, resource: str) -> None:
        """Negotiate `resource` in `cluster` again if anything it depends on changed."""
        imports = sorted(self.imports.index.of_kind(cluster, resource), key=lambda i: i.target)
        if not imports:
            return
        found = self._own_kind(cluster, imports[0])
        if found is None:
            return  # not served here (a custom resource of another logical cluster)
        rt, document = found
        local = [(i, self._targets.get(i.target_key)) for i in imports]
        deps = (
            document.hash,
            tuple(i.inputs for i in imports),
            # A restarted worker of ours is pinned (or not) afresh.
            tuple(id(state.worker) for _, state in local if state is not None),
        )
        now = time.monotonic()
        if self._inputs.get((cluster, resource)) == deps:
            # Objects written since (under first) are looked at again on the patrol's cadence.
            due = self._narrowed.get((cluster, resource))
            if due is None or now < due:
                return
        own = self._own_schema(document, rt)
        outcomes = {i.target: _outcome(i, own) for i in imports}
        negotiated, _ = si.negotiate(
            own,
            {
                name: o.schema
                for name, o in outcomes.items()
                if o.state in (COMPATIBLE, NARROWER) and o.schema is not None
            },
        )
        for imported, state in local:
            if state is not None:
                await self._apply_pinning(state, resource, outcomes[imported.target])
        nonconforming = await self._nonconforming(cluster, rt, outcomes)
        await self._write(cluster, resource, rt, own, negotiated, outcomes, nonconforming)
        self._inputs[(cluster, resource)] = deps
        if any(o.state == NARROWER for o in outcomes.values()):
            self._narrowed[(cluster, resource)] = now + self._ctx.settings.patrol_interval
        else:
            self._narrowed.pop((cluster, resource), None)

    def _own_kind(
        self, cluster: str, imported: stored_imports.Import
    ) -> tuple[catalog.ResourceType, openapi.OpenAPIDocument] | None:
        """The kind as the logical cluster serves it, and its group/version's OpenAPI."""
        types = self._ctx.registry.catalog_for(cluster)
        rt = types.by_resource(imported.group, imported.version, imported.plural)
        if rt is None:
            return None
        document = openapi.openapi_v3_document(
            types, f"{rt.group}/{rt.version}" if rt.group else rt.version
        )
        return None if document is None else (rt, document)

    def _own_schema(
        self, document: openapi.OpenAPIDocument, rt: catalog.ResourceType
    ) -> dict[str, Any]:
        key = (document.hash, rt.kind)
        found = self._own.get(key)
        if found is None:
            if len(self._own) >= _OWN_SCHEMAS:
                self._own.clear()
            found = si.kind_schema(orjson.loads(document.body), rt.group, rt.version, rt.kind)
            self._own[key] = found
        return found

    def enforced(self, cluster: str, resource: str) -> _Enforced:
        """The lcd targets of `resource` in `cluster` that lack fields, with their schemas (the
        logical cluster's own ∩ theirs), from the stored imports; cached until those change."""
        imports = [
            i
            for i in self.imports.index.of_kind(cluster, resource)
            if i.policy == "lcd" and i.served and i.schema
        ]
        if not imports:
            self._enforced.pop((cluster, resource), None)
            return ()
        imports.sort(key=lambda i: i.target)
        found = self._own_kind(cluster, imports[0])
        if found is None:
            return ()
        rt, document = found
        deps = (document.hash, tuple(i.inputs for i in imports))
        cached = self._enforced.get((cluster, resource))
        if cached is not None and cached[0] == deps:
            return cached[1]
        own = self._own_schema(document, rt)
        enforced: list[tuple[str, Mapping[str, Any]]] = []
        for i in imports:
            schema, lacks = si.intersect(own, i.schema)
            if lacks:
                enforced.append((i.target, schema or {}))
        self._enforced[(cluster, resource)] = (deps, tuple(enforced))
        return tuple(enforced)

    async def _apply_pinning(self, state: _Target, resource: str, outcome: _Outcome) -> None:
        """A pinned target lacking fields receives nothing of the kind (placement skips it)."""
        if state.discovered is None:
            return
        pinned_off = outcome.policy == "pinned" and outcome.state == INCOMPATIBLE and outcome.lacks
        if pinned_off:
            state.problems[resource] = outcome.message
        else:
            state.problems.pop(resource, None)
        w = state.worker
        accepted = bool(state.discovered.get(resource)) and not pinned_off
        if w.health.compatible.get(resource) != accepted:
            w.health.compatible[resource] = accepted
            await self._ctx.enqueue_all([w])

    async def _nonconforming(
        self, cluster: str, rt: catalog.ResourceType, outcomes: Mapping[str, _Outcome]
    ) -> tuple[int, list[dict[str, Any]]]:
        """The objects using fields some receiving target lacks (they stay as they are)."""
        narrower = [(n, o.schema) for n, o in sorted(outcomes.items()) if o.state == NARROWER]
        if not narrower:
            return 0, []
        listing = await self._ctx.registry.store(rt).list(
            RequestContext(cluster=cluster), "", list_options.ListOptions()
        )
        count, listed = 0, list[dict[str, Any]]()
        for item in listing.items:
            obj = item.view()
            fields: dict[str, list[str]] = {}
            for name, schema in narrower:
                for v in si.violations(obj, schema or {}):
                    fields.setdefault(v.field, []).append(name)
            if not fields:
                continue
            count += 1
            if len(listed) < REPORTED_OBJECTS:
                meta = obj["metadata"]
                listed.append(
                    {
                        "namespace": meta.get("namespace", ""),
                        "name": meta.get("name", ""),
                        "fields": sorted(fields),
                        "targets": sorted({t for ts in fields.values() for t in ts}),
                    }
                )
        return count, listed

    async def _write(
        self,
        cluster: str,
        resource: str,
        rt: catalog.ResourceType,
        own: Mapping[str, Any],
        negotiated: Mapping[str, Any],
        outcomes: Mapping[str, _Outcome],
        nonconforming: tuple[int, list[dict[str, Any]]],
    ) -> None:
        nar_rt = self._ctx.registry.catalog.by_resource(*NEGOTIATED)
        if nar_rt is None:
            return
        spec: dict[str, Any] = {
            "group": rt.group,
            "version": rt.version,
            "kind": rt.kind,
            "resource": rt.plural,
        }
        if negotiated != own:
            spec["schema"] = negotiated
        narrowed = [n for n, o in sorted(outcomes.items()) if o.state == NARROWER]
        count, listed = nonconforming
        status: dict[str, Any] = {
            "targets": [
                {
                    "name": name,
                    "policy": o.policy,
                    "state": o.state,
                    "missingFields": [d.path for d in o.lacks],
                    **({"message": o.message} if o.message else {}),
                }
                for name, o in sorted(outcomes.items())
            ],
            "nonConformingCount": count,
        }
        if listed:
            status["nonConforming"] = listed
        condition = (
            {
                "type": "Narrowed",
                "status": "True",
                "reason": "TargetsLackFields",
                "message": "targets receiving the kind lack fields: " + ", ".join(narrowed),
            }
            if narrowed
            else {"type": "Narrowed", "status": "False", "reason": "AllFieldsAccepted"}
        )
        store = self._ctx.registry.store(nar_rt)
        ctx = RequestContext(cluster=cluster)
        now = system_fields.now_rfc3339()

        def content(current: dict[str, Any]) -> None:
            before = {
                c.get("type"): c for c in (current.get("status") or {}).get("conditions") or ()
            }
            old = before.get("Narrowed") or {}
            stamp = (
                old.get("lastTransitionTime") if old.get("status") == condition["status"] else None
            )
            current["spec"] = spec
            current["status"] = {
                **status,
                "conditions": [{**condition, "lastTransitionTime": stamp or now}],
            }

        found = await store.find(ctx, "", resource)
        if found is not None:
            view = found.view()
            unchanged = {"spec": view.get("spec"), "status": view.get("status")}
            content(unchanged)
            if unchanged == {"spec": view.get("spec"), "status": view.get("status")}:
                return
        else:
            obj: dict[str, Any] = {
                "apiVersion": f"{nar_rt.group}/{nar_rt.version}",
                "kind": nar_rt.kind,
                "metadata": {"name": resource},
            }
            content(obj)
            try:
                await store.create(ctx, "", obj, WRITE)
                return
            except errors.StatusError as exc:
                if exc.code != 409:
                    raise

        def mutate(current: dict[str, Any] | None) -> dict[str, Any]:
            if current is None:
                raise errors.not_found(nar_rt.plural, resource, group=nar_rt.group)
            content(current)
            return current

        await store.guaranteed_update(ctx, "", resource, mutate, WRITE)


def _outcome(imported: stored_imports.Import, own: Mapping[str, Any]) -> _Outcome:
    """How one target's stored import compares with the logical cluster's schema."""
    policy = imported.policy
    if not imported.served or not imported.schema:
        return _Outcome(INCOMPATIBLE, policy, message="the target does not serve the resource")
    schema, lacks = si.intersect(own, imported.schema)
    if not lacks:
        return _Outcome(COMPATIBLE, policy, (), schema)
    text = "; ".join(d.describe() for d in lacks)
    if policy == "pinned":
        return _Outcome(
            INCOMPATIBLE, policy, tuple(lacks), schema, f"pinned: the target lacks {text}"
        )
    return _Outcome(NARROWER, policy, tuple(lacks), schema, f"the target lacks {text}")


def _unfenced() -> bool:
    return True


def _negotiated_clusters(worker: TargetWorker) -> list[str]:
    """The logical clusters whose negotiation a target takes part in (and which hold the
    NegotiatedAPIResources): those it names; a target for all clusters negotiates in its own."""
    named = sorted(c for c in worker.serves if c != "*")
    if "*" in worker.serves and worker.ref.cluster not in named:
        named.append(worker.ref.cluster)
    return named


def _conditions(state: _Target) -> tuple[dict[str, str], ...]:
    if state.discovered is None or not state.imports.schemas:
        return ()
    if not state.problems:
        return ({"type": CONDITION, "status": "True", "reason": "SchemasAccepted"},)
    message = "; ".join(f"{res}: {why}" for res, why in sorted(state.problems.items()))
    return (
        {
            "type": CONDITION,
            "status": "False",
            "reason": "IncompatibleSchema",
            "message": message,
            "severity": "Warning",
        },
    )


# -- lcd: writes checked against the narrower targets' schemas ----------------------------------


class LcdAdmission(admission.Admission):
    """Refuses a write that uses fields (or enum values) an lcd target of the kind lacks."""

    def __init__(self, negotiation: Negotiation, rt: catalog.ResourceType) -> None:
        self._negotiation = negotiation
        self._rt = rt
        self._resource = resources.Synced(rt).name

    async def validate_create(
        self, ctx: RequestContext, obj: dict[str, Any], dry_run: bool
    ) -> None:
        await self._check(ctx, obj, None)

    async def validate_update(
        self, ctx: RequestContext, obj: dict[str, Any], old: Mapping[str, Any], dry_run: bool
    ) -> None:
        await self._check(ctx, obj, old)

    async def _check(
        self, ctx: RequestContext, obj: dict[str, Any], old: Mapping[str, Any] | None
    ) -> None:
        imports = self._negotiation.imports
        if imports.started and not imports.index.synced.is_set():
            # Just started: the stored imports are being read (a bounded wait).
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(imports.index.synced.wait(), _FIRST_LIST_WAIT)
        if not imports.index.has_kind(ctx.cluster, self._resource):
            return
        found: dict[str, tuple[si.Violation, list[str]]] = {}
        for target, schema in self._negotiation.enforced(ctx.cluster, self._resource):
            for v in si.new_violations(obj, old, schema):
                found.setdefault(v.field, (v, []))[1].append(target)
        if not found:
            return
        causes = [_cause(v, targets) for v, targets in found.values()]
        name = obj.get("metadata", {}).get("name", "")
        raise errors.invalid(self._rt.kind, name, causes, group=self._rt.group)


def _cause(v: si.Violation, targets: Sequence[str]) -> errors.Cause:
    named = ", ".join(f'"{t}"' for t in targets)
    whose = f"sync target{'s' if len(targets) > 1 else ''} {named} (api policy lcd)"
    if v.allowed:
        supported = ", ".join(f'"{a}"' if isinstance(a, str) else str(a) for a in v.allowed)
        shown = f'"{v.value}"' if isinstance(v.value, str) else str(v.value)
        return errors.Cause(
            "FieldValueNotSupported",
            f"Unsupported value: {shown}: supported values: {supported} by {whose}",
            v.field,
        )
    return errors.Cause(
        "FieldValueForbidden",
        f"Forbidden: field not in the schema of {whose}",
        v.field,
    )

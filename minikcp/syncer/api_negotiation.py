"""API negotiation: per logical cluster and synced kind, the schema every target accepts.

Each target's schemas are imported (`api_imports.py`) on the probe cadence. Whenever what a
(logical cluster, kind) depends on changes (the cluster's own schema, a target's import, a target's
API policy, the set of targets), the kind is negotiated again: each target is compared with the
logical cluster's schema, the schema every receiving target accepts is written as a
NegotiatedAPIResource, and the existing objects that use fields a receiving target lacks are
reported there (nothing is deleted).

A target's policy for a kind (`spec.apiPolicies` of its SyncTarget) says what a narrower schema
means: `first` (today's behaviour) sends objects anyway and the target drops what it does not know;
`lcd` refuses writes in the logical cluster that use fields the target lacks (422, naming it), by an
admission hook in the registry's write path; `pinned` keeps the logical cluster's schema and sends
the target nothing of the kind (its SyncTarget shows the kind Incompatible and says which fields).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import orjson

from minikcp.apis import catalog, openapi
from minikcp.machinery import errors, list_options
from minikcp.machinery import schema_intersection as si
from minikcp.registry import admission
from minikcp.registry import registry as upstream_registry
from minikcp.registry import store as upstream_store
from minikcp.registry.objects import RequestContext, StoredObject, WriteOptions
from minikcp.runtime import work_queue
from minikcp.syncer import api_imports, resources
from minikcp.syncer import client as downstream
from minikcp.syncer.target import TargetWorker

logger = logging.getLogger(__name__)

NEGOTIATED = ("apiresource.minikcp.io", "v1alpha1", "negotiatedapiresources")
POLICIES = ("first", "lcd", "pinned")
CONDITION = "APIsCompatible"
REPORTED_OBJECTS = 20  # non-conforming objects listed by name; all are counted
WRITE = WriteOptions(field_manager="minikcp-api-negotiation")
_OWN_SCHEMAS = 256  # the logical clusters' own kind schemas kept, by document hash

COMPATIBLE, NARROWER, INCOMPATIBLE, PENDING = "Compatible", "Narrower", "Incompatible", "Pending"


def policy_for(policies: Mapping[str, str], resource: str) -> str:
    """A target's policy for `resource.group`: its own entry, else "*", else first."""
    return policies.get(resource) or policies.get("*") or "first"


class Context(Protocol):
    registry: upstream_registry.Registry

    def workers_for(self, cluster: str) -> list[TargetWorker]: ...

    async def enqueue_all(self, workers: list[TargetWorker]) -> None: ...


@dataclass
class _Target:
    """The negotiation state of one running target."""

    worker: TargetWorker
    imports: api_imports.Imports
    policies: dict[str, str] = field(default_factory=dict)
    discovered: dict[str, bool] | None = None  # what discovery said, before pinning
    problems: dict[str, str] = field(default_factory=dict)  # resource -> why it is pinned off


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
        self._targets: dict[tuple[str, str], _Target] = {}
        self._inputs: dict[tuple[str, str], tuple[Any, ...]] = {}  # (cluster, resource) -> deps
        # (cluster, resource) -> the lcd targets' schemas writes are checked against.
        self.enforced: dict[tuple[str, str], tuple[tuple[str, Mapping[str, Any]], ...]] = {}
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
            await work_queue.run_worker(
                self._queue,
                self._refresh,
                describe=lambda key: f"API negotiation of sync target {key[0]}|{key[1]}",
                logger=logger,
                expected=(errors.StatusError,),
                expected_level=logging.INFO,
            )
        finally:
            self._queue.close()

    async def _refresh(self, key: tuple[str, str]) -> None:
        state = self._targets.get(key)
        if state is None:
            return
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
        for cluster in _negotiated_clusters(worker):
            for resource in worker.synced:
                await self.negotiate(cluster, resource)

    def workers_for(self, cluster: str) -> list[TargetWorker]:
        return self._ctx.workers_for(cluster)

    def forget(self, cluster: str, name: str) -> None:
        self._targets.pop((cluster, name), None)

    # -- negotiating ----------------------------------------------------------------------------

    async def negotiate(self, cluster: str, resource: str) -> None:
        """Negotiate `resource` in `cluster` again if anything it depends on changed."""
        workers = [w for w in self._ctx.workers_for(cluster) if resource in w.synced]
        if not workers:
            return
        synced = workers[0].synced[resource]
        types = self._ctx.registry.catalog_for(cluster)
        rt = types.by_resource(synced.rt.group, synced.rt.version, synced.rt.plural)
        if rt is None:
            return  # not served here (a custom resource of another logical cluster)
        document = openapi.openapi_v3_document(
            types, f"{rt.group}/{rt.version}" if rt.group else rt.version
        )
        if document is None:
            return
        deps = (
            document.hash,
            tuple(
                (w.name, w.ref.uid, *self._deps_of(w, resource))
                for w in sorted(workers, key=lambda w: w.name)
            ),
        )
        now = time.monotonic()
        if self._inputs.get((cluster, resource)) == deps:
            # Objects written since (under first) are looked at again on the patrol's cadence.
            due = self._narrowed.get((cluster, resource))
            if due is None or now < due:
                return
        own = self._own_schema(document, rt)
        outcomes = {w.name: self._outcome(w, resource, own) for w in workers}
        negotiated, _ = si.negotiate(
            own,
            {
                name: o.schema
                for name, o in outcomes.items()
                if o.state in (COMPATIBLE, NARROWER) and o.schema is not None
            },
        )
        self.enforced[(cluster, resource)] = tuple(
            (name, o.schema)
            for name, o in sorted(outcomes.items())
            if o.policy == "lcd" and o.state == NARROWER and o.schema is not None
        )
        for w in workers:
            await self._apply_pinning(w, resource, outcomes[w.name])
        nonconforming = await self._nonconforming(cluster, rt, outcomes)
        await self._write(cluster, resource, rt, own, negotiated, outcomes, nonconforming)
        self._inputs[(cluster, resource)] = deps
        if any(o.state == NARROWER for o in outcomes.values()):
            self._narrowed[(cluster, resource)] = now + workers[0].settings.patrol_interval
        else:
            self._narrowed.pop((cluster, resource), None)

    def _deps_of(self, w: TargetWorker, resource: str) -> tuple[Any, ...]:
        state = self._targets.get((w.ref.cluster, w.name))
        if state is None:
            return ()
        return (
            id(state.worker),
            state.imports.generation,
            policy_for(state.policies, resource),
            None if state.discovered is None else state.discovered.get(resource),
        )

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

    def _outcome(self, w: TargetWorker, resource: str, own: Mapping[str, Any]) -> _Outcome:
        state = self._targets.get((w.ref.cluster, w.name))
        policy = policy_for(state.policies if state else {}, resource)
        if state is None or state.discovered is None or resource not in state.imports.schemas:
            return _Outcome(PENDING, policy, message="no schema imported yet")
        imported = state.imports.schemas[resource]
        if not state.discovered.get(resource) or not imported:
            return _Outcome(INCOMPATIBLE, policy, message="the target does not serve the resource")
        schema, lacks = si.intersect(own, imported)
        if not lacks:
            return _Outcome(COMPATIBLE, policy, (), schema)
        text = "; ".join(d.describe() for d in lacks)
        if policy == "pinned":
            return _Outcome(
                INCOMPATIBLE, policy, tuple(lacks), schema, f"pinned: the target lacks {text}"
            )
        return _Outcome(NARROWER, policy, tuple(lacks), schema, f"the target lacks {text}")

    async def _apply_pinning(self, w: TargetWorker, resource: str, outcome: _Outcome) -> None:
        """A pinned target lacking fields receives nothing of the kind (placement skips it)."""
        state = self._targets.get((w.ref.cluster, w.name))
        if state is None or state.discovered is None:
            return
        pinned_off = outcome.policy == "pinned" and outcome.state == INCOMPATIBLE and outcome.lacks
        if pinned_off:
            state.problems[resource] = outcome.message
        else:
            state.problems.pop(resource, None)
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
        now = upstream_store.now_rfc3339()

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
        self._check(ctx, obj, None)

    async def validate_update(
        self, ctx: RequestContext, obj: dict[str, Any], old: Mapping[str, Any], dry_run: bool
    ) -> None:
        self._check(ctx, obj, old)

    def _check(
        self, ctx: RequestContext, obj: dict[str, Any], old: Mapping[str, Any] | None
    ) -> None:
        enforced = self._negotiation.enforced.get((ctx.cluster, self._resource))
        if not enforced:
            return
        # Only targets still running count: a detached target narrows nothing.
        running = {w.name for w in self._negotiation.workers_for(ctx.cluster)}
        found: dict[str, tuple[si.Violation, list[str]]] = {}
        for target, schema in enforced:
            if target not in running:
                continue
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

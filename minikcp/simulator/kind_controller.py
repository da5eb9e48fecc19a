"""What every simulated controller of one workload kind shares: it watches its kind, queues a
pass over each object that changed, and leaves an object being deleted to the collector."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from minikcp.registry.objects import RequestContext, StoredObject
from minikcp.simulator import pod_lifecycle
from minikcp.simulator.pass_result import Enqueue, PassResult
from minikcp.simulator.workload_objects import WorkloadObjects


class KindPass:
    """One pass of a controller over one object of its kind (`obj`, as stored when the pass
    began): what it reads and writes with, and what it reports in `result`."""

    kind: ClassVar[str]

    def __init__(
        self,
        objects: WorkloadObjects,
        options: pod_lifecycle.SimulatorOptions,
        ctx: RequestContext,
        obj: Mapping[str, Any],
        now: float,
        result: PassResult,
    ) -> None:
        self.objects = objects
        self.options = options
        self.ctx = ctx
        self.obj = obj
        self.now = now
        self.result = result
        meta = obj["metadata"]
        self.namespace: str = meta.get("namespace", "")
        self.name: str = meta["name"]

    async def run(self) -> None:
        raise NotImplementedError

    def controlled(self, plural: str) -> list[Mapping[str, Any]]:
        """The children of `plural` whose controller is this very object."""
        return self.objects.controlled(plural, self.ctx.cluster, self.kind, self.obj)


class KindController:
    """Subclasses name their kind and its resource; `owner_kind` indexes the objects by the
    kind of their controller (for a controller that finds them by their owner). `sync` runs the
    kind's `pass_type` over a live object; a kind with no pass class has a `sync` of its own."""

    kind: str
    group: ClassVar[str]
    resource: ClassVar[str]
    owner_kind: ClassVar[str] = ""
    pass_type: ClassVar[type[KindPass]]

    def __init__(
        self, objects: WorkloadObjects, options: pod_lifecycle.SimulatorOptions, enqueue: Enqueue
    ) -> None:
        self._objects = objects
        self._options = options
        self._enqueue = enqueue
        objects.watch(
            self.group, self.resource, owner_kind=self.owner_kind, on_change=self._changed
        )

    def _changed(self, new: StoredObject | None, old: StoredObject | None) -> None:
        obj = new or old
        assert obj is not None
        self._enqueue(self.kind, obj)

    async def _live(
        self, ctx: RequestContext, namespace: str, name: str
    ) -> Mapping[str, Any] | None:
        """The object as stored now; None when it is gone or being deleted (what it owned is
        then the garbage collector's)."""
        found = await self._objects.find(self.resource, ctx, namespace, name)
        if found is None or found.metadata.get("deletionTimestamp"):
            return None
        return found.view()

    async def sync(self, ctx: RequestContext, namespace: str, name: str, now: float) -> PassResult:
        result = PassResult()
        obj = await self._live(ctx, namespace, name)
        if obj is not None:
            await self.pass_type(self._objects, self._options, ctx, obj, now, result).run()
        return result

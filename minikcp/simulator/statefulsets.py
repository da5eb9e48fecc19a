"""The StatefulSet controller and its pods' kubelets, one StatefulSet per pass.

A pass finds or creates the ControllerRevision of the current template (the update revision;
the current one is the status's, until the rollout completes), takes the steps
`statefulset_pods.next_steps` gives (claims from the volumeClaimTemplates created and bound
before a pod), runs the pods (`pod_lifecycle`), drops revisions beyond revisionHistoryLimit and
writes the status when it changed. What a deleted set owned (pods, revisions, and the claims
`whenDeleted: Delete` puts its controller reference on) is the garbage collector's; under
`whenScaled: Delete` a condemned pod becomes its claims' controller before it is deleted, so
they go with it (as `updateClaimOwnerRefForSetAndPod`).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

from minikcp.machinery import errors
from minikcp.registry.objects import StoredObject
from minikcp.simulator import (
    controller_history,
    pod_lifecycle,
    replica_set_pass,
    rollout,
)
from minikcp.simulator import statefulset_pods as sts_pods
from minikcp.simulator.kind_controller import KindController, KindPass
from minikcp.simulator.pass_result import Enqueue
from minikcp.simulator.workload_objects import WorkloadObjects

KIND = "StatefulSet"
# Seconds the kubelet takes to stop a deleted pod's containers before the name is free again.
STOP_CONTAINERS = 0.5
_COMPONENT = "statefulset-controller"


class _StatefulSetPass(KindPass):
    kind = KIND

    async def run(self) -> None:
        status = self.obj.get("status") or {}
        collisions = status.get("collisionCount") or 0
        revisions = controller_history.by_number(self.controlled("controllerrevisions"))
        update, collisions = await self._update_revision(revisions, collisions)
        revisions = controller_history.by_number(self.controlled("controllerrevisions"))
        current = next(
            (r for r in revisions if r["metadata"]["name"] == status.get("currentRevision")),
            update,
        )
        current_name = current["metadata"]["name"]
        update_name = update["metadata"]["name"]
        pods = await self._pods()
        steps = sts_pods.next_steps(self.obj, pods, current_name, update_name, self.now)
        templates = {
            current_name: controller_history.template_of(current),
            update_name: controller_history.template_of(update),
        }
        for doomed in steps.delete:
            ordinal = sts_pods.ordinal(self.name, doomed)
            pod = pods.pop(ordinal) if ordinal is not None else None
            if pod is not None:
                if ordinal is not None and self._condemned(ordinal):
                    await self._scaled_down_claims(ordinal, pod)
                await self.objects.delete("pods", self.ctx, pod)
                self.result.writes += 1
                await self._event("SuccessfulDelete", f"delete Pod {doomed} in StatefulSet")
        for ordinal, revision in steps.create:
            await self._create_claims(ordinal)
            body = sts_pods.new_pod(
                self.obj,
                templates[revision],
                revision,
                ordinal,
                self.objects.nodes[ordinal % len(self.objects.nodes)],
            )
            pods[ordinal] = (await self.objects.create("pods", self.ctx, body)).view()
            self.result.writes += 1
            pod_name = body["metadata"]["name"]
            await self._event("SuccessfulCreate", f"create Pod {pod_name} in StatefulSet")
        if steps.create or steps.delete:
            self.result.again = True
        views = await self._run_pods(list(pods.values()))
        live = {current_name, update_name} | {sts_pods.revision_of(p) for p in views}
        limit = self.obj.get("spec", {}).get("revisionHistoryLimit", 10)
        for old in controller_history.surplus(revisions, live, limit):
            await self.objects.delete("controllerrevisions", self.ctx, old)
            self.result.writes += 1
        new_status = sts_pods.set_status(
            self.obj, views, current_name, update_name, collisions, self.now
        )
        if new_status != status:
            await self.objects.write_status("statefulsets", self.ctx, self.obj, new_status)
            self.result.writes += 1

    def _condemned(self, ordinal: int) -> bool:
        start = sts_pods.start_ordinal(self.obj)
        return not start <= ordinal < start + rollout.replicas(self.obj)

    async def _scaled_down_claims(self, ordinal: int, pod: Mapping[str, Any]) -> None:
        """whenScaled: Delete: the condemned pod becomes its claims' controller before it is
        deleted, so the garbage collector deletes them after it."""
        if sts_pods.retention(self.obj)[1] != "Delete":
            return
        for claim in sts_pods.claims_for(self.obj, ordinal):
            found = await self.objects.find(
                "persistentvolumeclaims", self.ctx, self.namespace, claim["metadata"]["name"]
            )
            if found is None:
                continue
            refs = sts_pods.condemned_claim_refs(found.view(), self.obj, pod)
            if refs == found.metadata.get("ownerReferences"):
                continue
            await self.objects.update(
                "persistentvolumeclaims",
                self.ctx,
                found.view(),
                functools.partial(_set_owner_references, refs),
            )
            self.result.writes += 1

    async def _event(self, reason: str, what: str) -> None:
        """recordPodEvent / recordClaimEvent: `<what> <set> successful`."""
        ending = "success" if what.startswith("create Claim") else "successful"
        message = f"{what} {self.name} {ending}"
        await self.objects.record_event(self.ctx, self.obj, reason, message, _COMPONENT)

    async def _update_revision(
        self, revisions: list[Mapping[str, Any]], collisions: int
    ) -> tuple[Mapping[str, Any], int]:
        """getStatefulSetRevisions: the revision of the current template, found, renumbered
        (a template that came back) or created (a taken name counts a collision)."""
        next_number = (controller_history.number(revisions[-1]) if revisions else 0) + 1
        while True:
            wanted = controller_history.new_revision(self.obj, next_number, collisions)
            equal = controller_history.find_equal(revisions, wanted)
            if equal and equal[-1] is revisions[-1]:
                return equal[-1], collisions
            if equal:
                renumbered = await self.objects.update(
                    "controllerrevisions",
                    self.ctx,
                    equal[-1],
                    lambda current: current.__setitem__("revision", next_number),
                )
                self.result.writes += 1
                return renumbered.view(), collisions
            try:
                created = await self.objects.create("controllerrevisions", self.ctx, wanted)
            except errors.StatusError as exc:
                if exc.reason != "AlreadyExists":
                    raise
                taken = await self.objects.find(
                    "controllerrevisions", self.ctx, self.namespace, wanted["metadata"]["name"]
                )
                if taken is not None and taken.view().get("data") == wanted["data"]:
                    return taken.view(), collisions
                collisions += 1
                continue
            self.result.writes += 1
            return created.view(), collisions

    async def _pods(self) -> dict[int, Mapping[str, Any]]:
        """The set's pods by ordinal; pods that finished terminating are removed."""
        pods: dict[int, Mapping[str, Any]] = {}
        for pod in self.controlled("pods"):
            ordinal = sts_pods.ordinal(self.name, pod["metadata"]["name"])
            if ordinal is None:
                continue
            if replica_set_pass.finishes_termination(pod):
                ends = self.objects.terminating_since(pod, self.now) + STOP_CONTAINERS
                if self.now < ends:
                    # Still stopping: the name is not free yet (a client that saw the pod
                    # terminating finds it so, not already replaced).
                    self.result.due(ends)
                else:
                    await self.objects.delete("pods", self.ctx, pod)
                    self.result.writes += 1
                    self.result.again = True
                    continue
            pods[ordinal] = pod
        return pods

    async def _create_claims(self, ordinal: int) -> None:
        """createPersistentVolumeClaims: the pod's claims unless they exist; bound at once."""
        for claim in sts_pods.claims_for(self.obj, ordinal):
            try:
                created = await self.objects.create("persistentvolumeclaims", self.ctx, claim)
            except errors.StatusError as exc:
                if exc.reason == "AlreadyExists":
                    continue  # kept from an earlier pod of this ordinal
                raise
            # The volume binder: a volume of the requested size, bound to the claim.
            volume = f"pvc-{created.metadata.get('uid', '')}"
            bound = await self.objects.update(
                "persistentvolumeclaims",
                self.ctx,
                created.view(),
                functools.partial(_bind_volume, volume),
            )
            claim_name = claim["metadata"]["name"]
            pod_name = sts_pods.pod_name(self.name, ordinal)
            await self._event(
                "SuccessfulCreate", f"create Claim {claim_name} Pod {pod_name} in StatefulSet"
            )
            status = sts_pods.bound_claim_status(bound.view())
            await self.objects.write_status(
                "persistentvolumeclaims", self.ctx, bound.view(), status
            )
            self.result.writes += 3

    async def _run_pods(self, pods: list[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
        min_ready = sts_pods.min_ready_seconds(self.obj)
        return await replica_set_pass.advance_pods(
            self.objects, self.options, self.ctx, pods, self.obj, min_ready, self.now, self.result
        )


def _set_owner_references(refs: list[dict[str, Any]], claim: dict[str, Any]) -> None:
    claim["metadata"]["ownerReferences"] = refs


def _bind_volume(volume: str, claim: dict[str, Any]) -> None:
    claim["spec"]["volumeName"] = volume


class StatefulSetController(KindController):
    kind = KIND
    group = "apps"
    resource = "statefulsets"
    pass_type = _StatefulSetPass

    def __init__(
        self, objects: WorkloadObjects, options: pod_lifecycle.SimulatorOptions, enqueue: Enqueue
    ) -> None:
        super().__init__(objects, options, enqueue)
        objects.writes_to("", "persistentvolumeclaims")
        objects.watch(
            "apps",
            "controllerrevisions",
            owner_kind=("StatefulSet", "DaemonSet"),
            on_change=self._revision_changed,
        )

    def _revision_changed(self, new: StoredObject | None, old: StoredObject | None) -> None:
        # Only deletions by someone else matter: the owner re-creates what it needs.
        if new is None and old is not None:
            self._enqueue("", old)

"""The DaemonSet controller and its pods' kubelets, one DaemonSet per pass.

A pass keeps the ControllerRevision of the current template (named `<ds>-<hash>`, the hash
labelled `controller-revision-hash`, renumbered when an old template comes back), takes the
steps `daemonset_pods.next_steps` gives over the simulated nodes, runs the pods
(`pod_lifecycle`), drops revisions beyond revisionHistoryLimit and writes the status when it
changed. What a deleted DaemonSet owned (pods, revisions) is the garbage collector's.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from minikcp.machinery import errors
from minikcp.simulator import (
    controller_history,
    replica_set_pass,
)
from minikcp.simulator import daemonset_pods as ds_pods
from minikcp.simulator.kind_controller import KindController, KindPass

KIND = "DaemonSet"
_COMPONENT = "daemonset-controller"


class _DaemonSetPass(KindPass):
    kind = KIND

    async def run(self) -> None:
        hash_ = ds_pods.template_hash(self.obj)
        revisions = controller_history.by_number(self.controlled("controllerrevisions"))
        current = await self._current_revision(revisions, hash_)
        by_node = await self._pods_by_node()
        node_names = self.objects.nodes
        steps = ds_pods.next_steps(self.obj, node_names, by_node, hash_, self.now)
        doomed = set(steps.delete)
        for pods in by_node.values():
            for pod in [p for p in pods if p["metadata"]["name"] in doomed]:
                await self.objects.delete("pods", self.ctx, pod)
                pods.remove(pod)
                self.result.writes += 1
                await self._event("SuccessfulDelete", f"Deleted pod: {pod['metadata']['name']}")
        for node in steps.create:
            body = ds_pods.new_pod(self.obj, hash_, node)
            created = await self.objects.create("pods", self.ctx, body)
            by_node.setdefault(node, []).append(created.view())
            self.result.writes += 1
            await self._event("SuccessfulCreate", f"Created pod: {created.metadata['name']}")
        if steps.create or steps.delete:
            self.result.again = True
        for node, pods in by_node.items():
            by_node[node] = await self._run_pods(pods)
        live = {current} | {
            controller_history.revision_name(self.name, ds_pods.hash_of(p))
            for pods in by_node.values()
            for p in pods
        }
        limit = self.obj.get("spec", {}).get("revisionHistoryLimit", 10)
        for old in controller_history.surplus(revisions, live, limit):
            await self.objects.delete("controllerrevisions", self.ctx, old)
            self.result.writes += 1
        status = ds_pods.daemon_status(self.obj, node_names, by_node, hash_, self.now)
        if status != (self.obj.get("status") or {}):
            await self.objects.write_status("daemonsets", self.ctx, self.obj, status)
            self.result.writes += 1

    async def _event(self, reason: str, message: str) -> None:
        await self.objects.record_event(self.ctx, self.obj, reason, message, _COMPONENT)

    async def _current_revision(self, revisions: list[Mapping[str, Any]], hash_: str) -> str:
        """constructHistory: the revision of the current template, created or renumbered."""
        next_number = (controller_history.number(revisions[-1]) if revisions else 0) + 1
        name = controller_history.revision_name(self.name, hash_)
        existing = next((r for r in revisions if r["metadata"]["name"] == name), None)
        if existing is None:
            body = controller_history.new_revision(self.obj, next_number, None)
            body["metadata"]["name"] = name
            body["metadata"]["labels"] = {
                **(body["metadata"]["labels"] or {}),
                ds_pods.HASH_LABEL: hash_,
            }
            del body["metadata"]["labels"][controller_history.HASH_LABEL]
            if self.obj["metadata"].get("annotations"):
                body["metadata"]["annotations"] = dict(self.obj["metadata"]["annotations"])
            try:
                await self.objects.create("controllerrevisions", self.ctx, body)
            except errors.StatusError as exc:
                if exc.reason != "AlreadyExists":
                    raise
                await self._collided()
                raise
            self.result.writes += 1
        elif existing is not revisions[-1]:
            await self.objects.update(
                "controllerrevisions",
                self.ctx,
                existing,
                lambda current: current.__setitem__("revision", next_number),
            )
            self.result.writes += 1
        return name

    async def _collided(self) -> None:
        """A revision of that name not ours: count a collision, which changes the hash."""
        status = dict(self.obj.get("status") or {})
        status["collisionCount"] = status.get("collisionCount", 0) + 1
        await self.objects.write_status("daemonsets", self.ctx, self.obj, status)

    async def _pods_by_node(self) -> dict[str, list[Mapping[str, Any]]]:
        """The DaemonSet's live pods by node; pods that finished terminating are removed."""
        by_node: dict[str, list[Mapping[str, Any]]] = {}
        for pod in self.controlled("pods"):
            if pod["metadata"].get("deletionTimestamp"):
                if replica_set_pass.finishes_termination(pod):
                    await self.objects.delete("pods", self.ctx, pod)
                    self.result.writes += 1
                    self.result.again = True
                continue
            by_node.setdefault(pod.get("spec", {}).get("nodeName", ""), []).append(pod)
        return by_node

    async def _run_pods(self, pods: list[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
        min_ready = ds_pods.min_ready_seconds(self.obj)
        return await replica_set_pass.advance_pods(
            self.objects, self.options, self.ctx, pods, self.obj, min_ready, self.now, self.result
        )


class DaemonSetController(KindController):
    kind = KIND
    group = "apps"
    resource = "daemonsets"
    pass_type = _DaemonSetPass

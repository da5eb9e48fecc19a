"""One reconciliation of one Deployment, as the deployment controller does it.

The new ReplicaSet (the one of the current template) is found or created, its revision and
annotations kept in line; ReplicaSets are scaled by the rolling-update, Recreate or paused
arithmetic (`rollout`); each ReplicaSet's pods are synced (`replica_set_pass`); surplus old
ReplicaSets beyond revisionHistoryLimit go; the Deployment's status is written when it differs
(`deployment_conditions`). The pass notes how many writes it made and when it is next due.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from minikcp.machinery import errors
from minikcp.registry.objects import RequestContext, StoredObject
from minikcp.simulator import deployment_conditions, pod_lifecycle, replica_set_pass, rollout
from minikcp.simulator.workload_objects import WorkloadObjects


class DeploymentPass:
    """One reconciliation of one Deployment: ReplicaSets, their pods, then the statuses."""

    def __init__(
        self,
        objects: WorkloadObjects,
        options: pod_lifecycle.SimulatorOptions,
        ctx: RequestContext,
        found: StoredObject,
        owned: list[Mapping[str, Any]],
        now: float,
    ) -> None:
        self.objects = objects
        self.options = options
        self.ctx = ctx
        self.deployment: Mapping[str, Any] = found.view()
        self.owned = owned
        self.now = now
        self.writes = 0
        self.next_at: float | None = None
        self.new_rs: Mapping[str, Any] | None = None
        self.old_rss: list[Mapping[str, Any]] = []
        # The revision annotation the Deployment is to get (None: it has it).
        self.revision: str | None = None

    def _due(self, at: float | None) -> None:
        if at is not None and (self.next_at is None or at < self.next_at):
            self.next_at = at

    async def run(self) -> None:
        deployment = self.deployment
        spec = deployment.get("spec", {})
        status = deployment.get("status") or {}
        template_hash = rollout.pod_template_hash(
            spec.get("template", {}), status.get("collisionCount")
        )
        new_rs = rollout.find_new(deployment, self.owned, template_hash)
        old_rss = [rs for rs in self.owned if rs is not new_rs]
        created = False
        if new_rs is None and not spec.get("paused"):
            size = rollout.new_rs_replicas(deployment, {"spec": {"replicas": 0}}, old_rss)
            body = rollout.new_replica_set(
                deployment, template_hash, rollout.max_revision(old_rss) + 1, size
            )
            try:
                new_rs = (await self.objects.create_replica_set(self.ctx, body)).view()
                if size:
                    await self._scaled(new_rs, 0, size)
            except errors.StatusError as exc:
                if exc.reason == "AlreadyExists":
                    await self._collided(body["metadata"]["name"])
                else:
                    await self._create_failed(body["metadata"]["name"], exc)
                raise
            created = True
            self.writes += 1
        elif new_rs is not None:
            new_rs = await self._update_new(new_rs, old_rss)
        if new_rs is not None and deployment["metadata"].get("annotations", {}).get(
            rollout.REVISION
        ) != str(rollout.revision(new_rs)):
            # Written with the status at the end of the pass, as the controller does.
            self.revision = str(rollout.revision(new_rs))
        resized: dict[str, int] = {}
        if spec.get("paused"):
            resized = rollout.paused_replicas(deployment, new_rs, old_rss)
            if new_rs is not None and new_rs["metadata"]["name"] in resized:
                size = resized.pop(new_rs["metadata"]["name"])
                new_rs = await self._scale(new_rs, size, {})
        if new_rs is not None:
            # The new pods first: old ones may go in this same pass as soon as new ones are
            # available, as the controller's next sync after the ReplicaSet's status would.
            new_rs = await self._sync_pods(new_rs)
        if not spec.get("paused"):
            resized = rollout.old_rs_replicas(deployment, new_rs, old_rss)
        scaled_old: list[Mapping[str, Any]] = []
        for rs in old_rss:
            new_size = resized.get(rs["metadata"]["name"])
            if new_size is not None:
                rs = await self._scale(rs, new_size, {})
            scaled_old.append(await self._sync_pods(rs))
        self.new_rs = new_rs
        self.old_rss = scaled_old
        await self._cleanup_history()
        await self._write_deployment_status(created)

    async def _create_failed(self, name: str, exc: errors.StatusError) -> None:
        """As the controller: a rollout whose ReplicaSet cannot be created is not progressing."""
        if not deployment_conditions.has_progress_deadline(self.deployment):
            return
        status = dict(self.deployment.get("status") or {})
        deployment_conditions.set_condition(
            status,
            deployment_conditions.new_condition(
                "Progressing",
                "False",
                deployment_conditions.RS_CREATE_ERROR,
                f'Failed to create new replica set "{name}": {exc.message}',
                self.now,
            ),
        )
        if status != self.deployment.get("status"):
            await self.objects.write_status("deployments", self.ctx, self.deployment, status)

    async def _collided(self, name: str) -> None:
        """The new ReplicaSet's name is taken by one this Deployment does not own: count a
        collision, which changes the hash and so the name (as the controller does)."""
        taken = await self.objects.find_replica_set(
            self.ctx, self.deployment["metadata"]["namespace"], name
        )
        ref = rollout.controller_of(taken) if taken is not None else None
        if ref is not None and ref.get("uid") == self.deployment["metadata"].get("uid"):
            return  # ours after all: the next pass finds it
        status = dict(self.deployment.get("status") or {})
        status["collisionCount"] = status.get("collisionCount", 0) + 1
        await self.objects.write_status("deployments", self.ctx, self.deployment, status)

    async def _update_new(
        self, new_rs: Mapping[str, Any], old_rss: list[Mapping[str, Any]]
    ) -> Mapping[str, Any]:
        deployment = self.deployment
        own_revision = rollout.revision(new_rs)
        newest_old = rollout.max_revision(old_rss)
        wanted_revision = own_revision if own_revision > newest_old else newest_old + 1
        annotations = rollout.rs_annotations(deployment, wanted_revision)
        current = new_rs["metadata"].get("annotations") or {}
        size = (
            rollout.replicas(new_rs)
            if deployment.get("spec", {}).get("paused")
            else rollout.new_rs_replicas(deployment, new_rs, old_rss)
        )
        if size == rollout.replicas(new_rs) and all(
            current.get(k) == v for k, v in annotations.items()
        ):
            return new_rs
        return await self._scale(new_rs, size, annotations)

    async def _scale(
        self, rs: Mapping[str, Any], size: int, annotations: Mapping[str, str]
    ) -> Mapping[str, Any]:
        before = rollout.replicas(rs)
        updated = (await self.objects.update_replica_set(self.ctx, rs, size, annotations)).view()
        self.writes += 1
        if size != before:
            await self._scaled(updated, before, size)
        return updated

    async def _scaled(self, rs: Mapping[str, Any], before: int, after: int) -> None:
        direction = "up" if after > before else "down"
        await self.objects.record_event(
            self.ctx,
            self.deployment,
            "ScalingReplicaSet",
            f"Scaled {direction} replica set {rs['metadata']['name']} from {before} to {after}",
            "deployment-controller",
        )

    async def _sync_pods(self, rs: Mapping[str, Any]) -> Mapping[str, Any]:
        outcome = await replica_set_pass.sync_replica_set(
            self.objects, self.options, self.ctx, rs, self.deployment, self.now
        )
        self.writes += outcome.writes
        self._due(outcome.next_at)
        return outcome.obj

    async def _cleanup_history(self) -> None:
        """Old ReplicaSets scaled to nothing beyond revisionHistoryLimit go, oldest first."""
        limit = self.deployment.get("spec", {}).get("revisionHistoryLimit")
        if not isinstance(limit, int):
            return
        cleanable = [
            rs
            for rs in self.old_rss
            if rollout.replicas(rs) == 0 and not (rs.get("status") or {}).get("replicas")
        ]
        surplus = len(cleanable) - limit
        if surplus <= 0:
            return
        doomed = sorted(cleanable, key=rollout.revision)[:surplus]
        for rs in doomed:
            await self.objects.delete_replica_set(self.ctx, rs)
            self.writes += 1
        self.old_rss = [rs for rs in self.old_rss if all(rs is not d for d in doomed)]

    async def _write_deployment_status(self, created: bool) -> None:
        deployment = self.deployment
        everything = ([self.new_rs] if self.new_rs is not None else []) + self.old_rss
        status = deployment_conditions.deployment_status(
            deployment, everything, self.new_rs, self.now, created_new_rs=created
        )
        annotations = {rollout.REVISION: self.revision} if self.revision is not None else {}
        if annotations or status != (deployment.get("status") or {}):
            written = await self.objects.write_status(
                "deployments", self.ctx, deployment, status, annotations
            )
            self.deployment = written.view()
            self.writes += 1
        self._due(deployment_conditions.next_progress_check(self.deployment, status, self.now))

    def wants_more(self) -> bool:
        """Whether the rollout can take another step now (e.g. new pods allow old ones to go)."""
        if self.deployment.get("spec", {}).get("paused"):
            return False
        if self.new_rs is None:
            return bool(rollout.old_rs_replicas(self.deployment, None, self.old_rss))
        return bool(
            rollout.old_rs_replicas(self.deployment, self.new_rs, self.old_rss)
        ) or rollout.new_rs_replicas(self.deployment, self.new_rs, self.old_rss) != (
            rollout.replicas(self.new_rs)
        )

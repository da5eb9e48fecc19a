"""Pods up: the downstream pods of synced workloads shown in their upstream namespace.

As kcp's upsyncer (`pkg/syncer/upsync`): a downstream pod in a namespace the syncer placed is
copied up under its own name, read-only, labelled with the target's key and annotated with the
target's name and the downstream namespace; its status follows the downstream pod; it is deleted
when the downstream pod goes. Nothing is written back down from it. Only in-process components
(the syncer) may create or change such a pod; users may read it, and their `pods/log`, `exec`,
`attach` and `portforward` requests are proxied to the target (`pod_proxy.py`).

A name another target (or a user) already holds upstream is left out and logged: downstream
names are unique per target (random suffixes; StatefulSets split their ordinals).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from minikcp.machinery import errors, list_options, selectors, users
from minikcp.registry import admission, registry
from minikcp.registry.objects import RequestContext, StoredObject, WriteOptions
from minikcp.registry.store import ResourceStore
from minikcp.syncer import translate

logger = logging.getLogger(__name__)

# Upstream pods: the key of the sync target the pod runs on (selectable), its name, and the
# downstream namespace the pod lives in.
UPSYNC_LABEL = "workload.minikcp.io/upsynced-from"
TARGET_ANNOTATION = "workload.minikcp.io/sync-target"
DOWNSTREAM_NAMESPACE_ANNOTATION = "workload.minikcp.io/downstream-namespace"
WRITE = WriteOptions(field_manager=translate.FIELD_MANAGER)
_DELETE_NOW = {"gracePeriodSeconds": 0}
# Metadata the downstream server owns; the upstream copy gets its own.
_KEPT_METADATA = ("labels", "annotations")


def upstream_pod(
    down: Mapping[str, Any], target: translate.TargetRef, namespace: str
) -> dict[str, Any]:
    """The upstream copy of downstream pod `down` (status included)."""
    meta = down.get("metadata") or {}
    labels = {**(meta.get("labels") or {}), UPSYNC_LABEL: target.key}
    annotations = {
        k: v
        for k, v in (meta.get("annotations") or {}).items()
        if k != translate.CLUSTER_ANNOTATION
    }
    annotations[TARGET_ANNOTATION] = target.name
    annotations[DOWNSTREAM_NAMESPACE_ANNOTATION] = str(meta.get("namespace", ""))
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": meta.get("name", ""),
            "namespace": namespace,
            "labels": labels,
            "annotations": annotations,
        },
        "spec": dict(down.get("spec") or {}),
        "status": dict(down.get("status") or {}),
    }


def upsynced_from(pod: Mapping[str, Any]) -> str:
    """The key of the target a pod was upsynced from; "" for other pods."""
    return str(((pod.get("metadata") or {}).get("labels") or {}).get(UPSYNC_LABEL, ""))


def downstream_location(pod: Mapping[str, Any]) -> tuple[str, str]:
    """(downstream namespace, name) of an upsynced pod."""
    meta = pod.get("metadata") or {}
    namespace = (meta.get("annotations") or {}).get(DOWNSTREAM_NAMESPACE_ANNOTATION, "")
    return str(namespace), str(meta.get("name", ""))


class UpsyncedPods(admission.Admission):
    """Upsynced pods are read-only for everyone but in-process components (the syncer)."""

    async def admit_create(self, ctx: RequestContext, obj: dict[str, Any]) -> None:
        if upsynced_from(obj) and ctx.user is not users.SYSTEM:
            raise _read_only(obj, "may not be created")

    async def admit_update(
        self, ctx: RequestContext, obj: dict[str, Any], old: Mapping[str, Any]
    ) -> None:
        if ctx.user is users.SYSTEM:
            return
        if upsynced_from(old) or upsynced_from(obj):
            raise _read_only(old, "may not be changed")

    async def admit_delete(self, ctx: RequestContext, current: StoredObject) -> None:
        if upsynced_from(current.view()) and ctx.user is not users.SYSTEM:
            raise _read_only(current.view(), "may not be deleted")


def _read_only(pod: Mapping[str, Any], what: str) -> errors.StatusError:
    meta = pod.get("metadata") or {}
    target = (meta.get("annotations") or {}).get(TARGET_ANNOTATION) or upsynced_from(pod)
    return errors.forbidden(
        "pods",
        str(meta.get("name", "")),
        f"the pod runs on sync target {target} and is shown here read-only: it {what} "
        "upstream (change its workload instead)",
    )


async def sync_pod(
    reg: registry.Registry,
    target: translate.TargetRef,
    cluster: str,
    namespace: str,
    down: Mapping[str, Any] | None,
    name: str,
) -> None:
    """Make the upstream copy of one downstream pod match it (`down` None: it is gone)."""
    pods = _pod_store(reg)
    ctx = RequestContext(cluster=cluster)
    current = await pods.find(ctx, namespace, name)
    if current is not None and upsynced_from(current.view()) != target.key:
        if down is not None:
            logger.info(
                "pod %s|%s/%s of sync target %s not shown upstream: the name is taken",
                cluster,
                namespace,
                name,
                target.name,
            )
        return
    if down is None:
        if current is not None:
            await _delete(pods, ctx, namespace, name, current)
        return
    wanted = upstream_pod(down, target, namespace)
    if current is None:
        try:
            current = await pods.create(ctx, namespace, _without_status(wanted), WRITE)
        except errors.StatusError as exc:
            if exc.reason == "AlreadyExists":
                return  # the next event looks again
            raise
    view = current.view()
    if any(view["metadata"].get(k) != wanted["metadata"][k] for k in _KEPT_METADATA):

        def relabel(obj: dict[str, Any] | None) -> dict[str, Any]:
            if obj is None:
                raise errors.not_found("pods", name)
            for k in _KEPT_METADATA:
                obj["metadata"][k] = wanted["metadata"][k]
            return obj

        current = await pods.guaranteed_update(ctx, namespace, name, relabel, WRITE)
        view = current.view()
    if view.get("status") != wanted["status"]:

        def restate(obj: dict[str, Any] | None) -> dict[str, Any]:
            if obj is None:
                raise errors.not_found("pods", name)
            obj["status"] = wanted["status"]
            return obj

        await pods.guaranteed_update(ctx, namespace, name, restate, WRITE, subresource="status")


async def orphans(
    reg: registry.Registry, target: translate.TargetRef, cluster: str, namespace: str
) -> list[str]:
    """Names of the pods upsynced from `target` in one upstream namespace (the patrol checks
    them against the downstream cache: a pod gone while the syncer was away goes too)."""
    pods = _pod_store(reg)
    selector = selectors.parse_label_selector(f"{UPSYNC_LABEL}={target.key}")
    opts = list_options.ListOptions(label_selector=selector)
    found = await pods.list(RequestContext(cluster=cluster), namespace, opts)
    return [item.metadata.get("name", "") for item in found.items]


async def forget_target(
    reg: registry.Registry, target: translate.TargetRef, clusters: frozenset[str]
) -> int:
    """Delete every pod upsynced from a target that is gone; how many there were."""
    pods = _pod_store(reg)
    selector = selectors.parse_label_selector(f"{UPSYNC_LABEL}={target.key}")
    opts = list_options.ListOptions(label_selector=selector)
    removed = 0
    for cluster in ("*",) if "*" in clusters else sorted(clusters):
        for item in (await pods.list(RequestContext(cluster=cluster), "", opts)).items:
            ctx = RequestContext(cluster=item.cluster)
            meta = item.metadata
            await _delete(pods, ctx, meta.get("namespace", ""), meta.get("name", ""), item)
            removed += 1
    return removed


async def _delete(
    pods: ResourceStore, ctx: RequestContext, namespace: str, name: str, current: StoredObject
) -> None:
    options = {**_DELETE_NOW, "preconditions": {"uid": current.metadata.get("uid")}}
    try:
        await pods.delete(ctx, namespace, name, options, WRITE)
    except errors.StatusError as exc:
        if exc.reason not in ("NotFound", "Conflict"):
            raise


def _pod_store(reg: registry.Registry) -> ResourceStore:
    rt = reg.catalog.by_resource("", "v1", "pods")
    assert rt is not None
    return reg.store(rt)


def _without_status(pod: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in pod.items() if k != "status"}

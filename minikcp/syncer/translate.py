"""Translation of upstream objects into their downstream form, as pure functions.

kcp's rules (`pkg/syncer/spec/spec_process.go`, `pkg/syncer/shared/namespace.go`): one downstream
namespace per (sync target, logical cluster, namespace) named `kcp-<hash of the locator>`, object
names unchanged, fields the downstream server owns stripped, ownership marked with labels.
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import orjson

from minikcp.syncer import kinds

FIELD_MANAGER = "minikcp-syncer"
SYNC_TARGET = ("workload.kcp.io", "v1alpha1", "synctargets")
# On SyncTargets: held until what was synced to the target is removed (or the timeout passes).
CLEANUP_FINALIZER = "workload.minikcp.io/cleanup"
# On downstream namespaces and objects: which sync target wrote them (informers select on it).
TARGET_LABEL = "workload.minikcp.io/target"
# On downstream namespaces: the (sync target, logical cluster, namespace) they hold.
LOCATOR_ANNOTATION = "kcp.io/namespace-locator"
# On downstream objects: the upstream object they were made from.
UPSTREAM_UID_ANNOTATION = "workload.minikcp.io/upstream-uid"
UPSTREAM_GENERATION_ANNOTATION = "workload.minikcp.io/upstream-generation"
# On downstream objects: hash of what the syncer applied, so an unchanged object costs no write.
APPLIED_HASH_ANNOTATION = "workload.minikcp.io/applied-hash"
# On downstream objects a proxy write wrote: when (unix seconds), since the upstream write
# follows the downstream one (`proxy_writes`). Not part of the applied hash.
PROXY_WRITE_ANNOTATION = "workload.minikcp.io/proxy-write"
# How long a proxy write's downstream state waits for its upstream write before the syncer
# takes it for one that failed there (the upstream write is the very next step).
PROXY_WRITE_GRACE = 5.0
# Upstream: one finalizer per sync target holds a deletion until downstream is clean.
FINALIZER_PREFIX = "workload.kcp.io/syncer-"
# Upstream Deployments and StatefulSets: the replicas each target runs, so a scale moves only
# the difference.
SPLIT_ANNOTATION = "workload.minikcp.io/replica-split"
# Each target's view of an upstream object, published for the other replicas (status_views.py).
STATUS_VIEW_PREFIX = "status.workload.minikcp.io/"
CLUSTER_ANNOTATION = "kcp.io/cluster"

# Metadata the downstream server owns or that only makes sense upstream.
_STRIPPED_METADATA = (
    "uid",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "managedFields",
    "ownerReferences",
    "finalizers",
    "selfLink",
    "generateName",
)
_STRIPPED_ANNOTATIONS = frozenset(
    {
        CLUSTER_ANNOTATION,
        SPLIT_ANNOTATION,
        "kubectl.kubernetes.io/last-applied-configuration",
        "deployment.kubernetes.io/revision",
        "deployment.kubernetes.io/revision-history",
    }
)
_B36 = "0123456789abcdefghijklmnopqrstuvwxyz"


@dataclass(frozen=True, slots=True)
class TargetRef:
    """A sync target as the locators name it: its logical cluster, name and uid."""

    cluster: str
    name: str
    uid: str

    @property
    def key(self) -> str:
        """Short stable id of the target (kcp: hash of `<cluster>:<name>`), used in labels."""
        return _target_key(self.cluster, self.name)

    @property
    def finalizer(self) -> str:
        return FINALIZER_PREFIX + self.key


# Both hashes are asked for on every event and reconcile; each costs tens of microseconds.
@functools.lru_cache(maxsize=1024)
def _target_key(cluster: str, name: str) -> str:
    return _base36(hashlib.sha224(f"{cluster}:{name}".encode()).digest())[:16]


def _base36(digest: bytes) -> str:
    value = int.from_bytes(digest, "big")
    out = []
    while value:
        value, rem = divmod(value, 36)
        out.append(_B36[rem])
    return "".join(reversed(out)) or "0"


def locator(target: TargetRef, cluster: str, namespace: str) -> dict[str, Any]:
    return {
        "syncTarget": {"cluster": target.cluster, "name": target.name, "uid": target.uid},
        "cluster": cluster,
        "namespace": namespace,
    }


def locator_json(target: TargetRef, cluster: str, namespace: str) -> str:
    return orjson.dumps(locator(target, cluster, namespace)).decode()


@functools.lru_cache(maxsize=65536)
def downstream_namespace(target: TargetRef, cluster: str, namespace: str) -> str:
    """`kcp-` and 12 base36 characters of sha224 of the locator JSON: deterministic, 16 chars."""
    digest = hashlib.sha224(locator_json(target, cluster, namespace).encode()).digest()
    return "kcp-" + _base36(digest)[:12]


def is_downstream_namespace(name: str) -> bool:
    """Whether a downstream namespace name has the form `downstream_namespace` gives (some
    target's, not necessarily this one's)."""
    return len(name) == 16 and name.startswith("kcp-")


def parse_locator(annotations: Mapping[str, str] | None) -> tuple[str, str, str] | None:
    """(target uid, logical cluster, namespace) from a downstream namespace's annotation."""
    raw = (annotations or {}).get(LOCATOR_ANNOTATION)
    if not raw:
        return None
    try:
        loc = orjson.loads(raw)
        return str(loc["syncTarget"]["uid"]), str(loc["cluster"]), str(loc["namespace"])
    except (orjson.JSONDecodeError, KeyError, TypeError):
        return None


def existing_namespace_refusal(
    existing: Mapping[str, Any], ours: tuple[str, str, str], name: str
) -> tuple[str, str] | None:
    """Why a downstream namespace found already there (a create answered 409) cannot take our
    objects, as a 409's (reason, message); None when it is ours and not terminating. `ours` is
    (target uid, logical cluster, namespace) as its locator records them."""
    meta = existing.get("metadata") or {}
    if parse_locator(meta.get("annotations")) != ours:
        return "AlreadyExists", f"namespace {name} exists downstream and is not ours"
    if meta.get("deletionTimestamp"):
        return "Conflict", f"namespace {name} is terminating downstream"
    return None


def namespace_object(target: TargetRef, cluster: str, namespace: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {
            "name": downstream_namespace(target, cluster, namespace),
            "labels": {TARGET_LABEL: target.key},
            "annotations": {LOCATOR_ANNOTATION: locator_json(target, cluster, namespace)},
        },
    }


def is_owned(obj: Mapping[str, Any], target: TargetRef) -> bool:
    """Whether a downstream object was written by this target's syncer."""
    labels = obj.get("metadata", {}).get("labels") or {}
    return bool(labels.get(TARGET_LABEL) == target.key)


def downstream_object(
    strategy: kinds.SyncStrategy,
    obj: Mapping[str, Any],
    target: TargetRef,
    cluster: str,
    *,
    split: Mapping[str, int] | None = None,
) -> dict[str, Any]:
    """The object to server-side apply downstream: a fresh dict, `obj` is left untouched.
    `split` is the recorded replica split of a kind whose replicas are split."""
    meta = obj.get("metadata", {})
    out_meta: dict[str, Any] = {
        k: _copy(v) for k, v in meta.items() if k not in _STRIPPED_METADATA and k != "namespace"
    }
    out_meta["namespace"] = downstream_namespace(target, cluster, meta.get("namespace", ""))
    labels = dict(meta.get("labels") or {})
    labels[TARGET_LABEL] = target.key
    out_meta["labels"] = labels
    annotations = {
        k: v
        for k, v in (meta.get("annotations") or {}).items()
        if k not in _STRIPPED_ANNOTATIONS and not k.startswith(STATUS_VIEW_PREFIX)
    }
    annotations[UPSTREAM_UID_ANNOTATION] = meta.get("uid", "")
    if "generation" in meta:
        annotations[UPSTREAM_GENERATION_ANNOTATION] = str(meta["generation"])
    out_meta["annotations"] = annotations
    out: dict[str, Any] = {"apiVersion": obj.get("apiVersion"), "kind": obj.get("kind")}
    out["metadata"] = out_meta
    for key, value in obj.items():
        if key not in ("apiVersion", "kind", "metadata", "status"):
            out[key] = _copy(value)
    strategy.shape(out, target.name, split)
    annotations[APPLIED_HASH_ANNOTATION] = hashlib.sha256(
        orjson.dumps(out, option=orjson.OPT_SORT_KEYS)
    ).hexdigest()[:20]
    return out


def needs_apply(desired: Mapping[str, Any], live: Mapping[str, Any] | None) -> bool:
    """Whether the downstream object must be (re)applied: missing, another hash, or drifted."""
    if live is None:
        return True
    want = desired.get("metadata", {}).get("annotations", {}).get(APPLIED_HASH_ANNOTATION)
    have = (live.get("metadata", {}).get("annotations") or {}).get(APPLIED_HASH_ANNOTATION)
    return want != have or drifted(desired, live)


def drifted(desired: Any, live: Any) -> bool:
    """Whether `live` no longer holds every field of `desired` (extra fields do not count).

    Downstream defaulting and controllers add fields and status; only a change to a field the
    syncer sets is drift. Lists must keep their length and each item must hold its counterpart.
    """
    if isinstance(desired, Mapping):
        if not isinstance(live, Mapping):
            return True
        return any(drifted(v, live[k]) if k in live else not _empty(v) for k, v in desired.items())
    if isinstance(desired, list):
        if not isinstance(live, list) or len(live) != len(desired):
            return True
        return any(drifted(d, x) for d, x in zip(desired, live, strict=True))
    if isinstance(desired, bool) or isinstance(live, bool):
        return desired is not live
    return bool(desired != live)


def _empty(value: Any) -> bool:
    """Values a Kubernetes server drops on output (`omitempty`, e.g. `creationTimestamp: null`
    in a pod template): their absence downstream is not drift."""
    return value is None or value == {} or value == []


def _copy(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _copy(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_copy(v) for v in value]
    return value


def awaits_upstream_write(live: Mapping[str, Any], now: float) -> bool:
    """Whether `live` was written by a proxy write whose upstream write may still be on its way
    (so an upstream state that differs, or is missing, may not be the last word yet)."""
    stamp = (live.get("metadata", {}).get("annotations") or {}).get(PROXY_WRITE_ANNOTATION)
    try:
        written = float(stamp) if stamp else None
    except ValueError:
        return False
    # A second of skew between replicas' clocks is allowed for; a stamp further ahead is not.
    return written is not None and -1.0 <= now - written < PROXY_WRITE_GRACE


def finalizers_without(meta: Mapping[str, Any], finalizer: str) -> list[str]:
    return [f for f in meta.get("finalizers") or () if f != finalizer]


def has_finalizer(meta: Mapping[str, Any], finalizer: str) -> bool:
    return finalizer in (meta.get("finalizers") or ())


def strip_empty(items: Sequence[str]) -> list[str]:
    return [i.strip() for i in items if i.strip()]

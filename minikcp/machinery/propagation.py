"""Which of the garbage collector's finalizers a delete leaves on an object.

A port of kube-apiserver's generic store (`shouldOrphanDependents`, `shouldDeleteDependents`,
`deletionFinalizersForGarbageCollection`): the delete options decide first (the deprecated
`orphanDependents`, then `propagationPolicy`), then the finalizers the object already carries,
then the kind's default policy (`DefaultGarbageCollectionPolicy`). A kind whose policy is
`Unsupported` (Events) never gets either finalizer.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from minikcp.machinery import names

ORPHAN = names.FINALIZER_ORPHAN_DEPENDENTS
FOREGROUND = names.FINALIZER_DELETE_DEPENDENTS

# rest.GarbageCollectionPolicy; "" is a kind that declares none (its dependents are deleted in
# the background unless the options say otherwise).
DELETE_DEPENDENTS = "DeleteDependents"
ORPHAN_DEPENDENTS = "OrphanDependents"
UNSUPPORTED = "Unsupported"

BACKGROUND_POLICY = "Background"
FOREGROUND_POLICY = "Foreground"
ORPHAN_POLICY = "Orphan"


def should_orphan(default: str, finalizers: Sequence[str], options: Mapping[str, Any]) -> bool:
    if default == UNSUPPORTED:
        return False
    orphan = options.get("orphanDependents")
    if isinstance(orphan, bool):
        return orphan
    policy = options.get("propagationPolicy")
    if policy == ORPHAN_POLICY:
        return True
    if policy in (BACKGROUND_POLICY, FOREGROUND_POLICY):
        return False
    for finalizer in finalizers:
        if finalizer == ORPHAN:
            return True
        if finalizer == FOREGROUND:
            return False
    return default == ORPHAN_DEPENDENTS


def should_delete_dependents(
    default: str, finalizers: Sequence[str], options: Mapping[str, Any]
) -> bool:
    if default == UNSUPPORTED:
        return False
    if isinstance(options.get("orphanDependents"), bool):
        return False
    policy = options.get("propagationPolicy")
    if policy == FOREGROUND_POLICY:
        return True
    if policy in (BACKGROUND_POLICY, ORPHAN_POLICY):
        return False
    for finalizer in finalizers:
        if finalizer == FOREGROUND:
            return True
        if finalizer == ORPHAN:
            return False
    return False


def deletion_finalizers(
    default: str, finalizers: Sequence[str], options: Mapping[str, Any]
) -> list[str] | None:
    """The finalizers a delete with `options` leaves on an object that has `finalizers`, or
    None when they stay as they are (the same set)."""
    kept = [f for f in finalizers if f not in (ORPHAN, FOREGROUND)]
    if should_orphan(default, finalizers, options):
        kept.append(ORPHAN)
    if should_delete_dependents(default, finalizers, options):
        kept.append(FOREGROUND)
    if set(kept) == set(finalizers):
        return None
    return kept


def namespace_deletion_finalizers(
    finalizers: Sequence[str], options: Mapping[str, Any]
) -> list[str] | None:
    """The collector's finalizers a namespace's first delete leaves on it, or None when they stay
    as they are. Upstream's namespace storage decides them its own way
    (`shouldHaveOrphanFinalizer`, `shouldHaveDeleteDependentsFinalizer`): `orphanDependents:
    false` asks for the foreground, and without options nothing changes."""
    orphan = options.get("orphanDependents")
    policy = options.get("propagationPolicy")
    if isinstance(orphan, bool):
        wanted = {ORPHAN: orphan, FOREGROUND: not orphan}
    elif policy is not None:
        wanted = {ORPHAN: policy == ORPHAN_POLICY, FOREGROUND: policy == FOREGROUND_POLICY}
    else:
        return None
    kept = [f for f in finalizers if wanted.get(f, True)]
    kept += [f for f, want in wanted.items() if want and f not in kept]
    return None if kept == list(finalizers) else kept

"""Admission: checks and mutations that higher layers add to a kind's writes.

Like kube-apiserver's admission plugins, they run inside the registry's write path (so HTTP
requests and in-process controllers get the same answers): `admit_create` (mutating) after
defaulting and before validation, `admit_update` after validation of an update,
`validate_create` and `validate_update` (validating) after validation, right before the object
is stored, `admit_delete` before a deletion starts and `validate_delete` right after it, knowing
whether it is a dry run. Each may raise a StatusError; a validating hook that refuses a write
ends it (`write_ended`, not stored) for the hooks before it in the chain.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from minikcp.apis import catalog
from minikcp.registry.objects import RequestContext, StoredObject


class Admission:
    """Admits everything; subclasses override what they check."""

    async def admit_create(self, ctx: RequestContext, obj: dict[str, Any]) -> None:
        """May change `obj` (private to the request) or refuse it."""

    async def admit_update(
        self, ctx: RequestContext, obj: dict[str, Any], old: Mapping[str, Any]
    ) -> None:
        """May refuse to replace `old` by `obj` (may not change `obj`)."""

    async def validate_create(
        self, ctx: RequestContext, obj: dict[str, Any], dry_run: bool
    ) -> None:
        """May refuse `obj`, no longer change it; what it charges (quota) is not charged for a
        dry run."""

    async def admit_delete(self, ctx: RequestContext, current: StoredObject) -> None:
        """May refuse to delete `current`."""

    async def validate_delete(
        self, ctx: RequestContext, current: StoredObject, dry_run: bool
    ) -> None:
        """May refuse to delete `current`; the last hook before the deletion is stored."""

    async def validate_update(
        self, ctx: RequestContext, obj: dict[str, Any], old: Mapping[str, Any], dry_run: bool
    ) -> None:
        """May refuse an update of `old` (as stored) to `obj`; right before it is stored."""

    def write_ended(
        self, ctx: RequestContext, obj: dict[str, Any], *, update: bool, stored: bool
    ) -> None:
        """The store's write of what `validate_*` let through is over: stored, or not after
        all."""


# Plugins that apply to many kinds give the hook for one resource type (None: not this one).
PluginFactory = Callable[[catalog.ResourceType], Admission | None]


class Chain(Admission):
    """Several plugins in order, as kube-apiserver runs its admission chain."""

    def __init__(self, hooks: Sequence[Admission]) -> None:
        self.hooks = tuple(hooks)

    async def admit_create(self, ctx: RequestContext, obj: dict[str, Any]) -> None:
        for hook in self.hooks:
            await hook.admit_create(ctx, obj)

    async def admit_update(
        self, ctx: RequestContext, obj: dict[str, Any], old: Mapping[str, Any]
    ) -> None:
        for hook in self.hooks:
            await hook.admit_update(ctx, obj, old)

    async def validate_create(
        self, ctx: RequestContext, obj: dict[str, Any], dry_run: bool
    ) -> None:
        for i, hook in enumerate(self.hooks):
            try:
                await hook.validate_create(ctx, obj, dry_run)
            except BaseException:
                self._refused(i, ctx, obj, update=False)
                raise

    async def admit_delete(self, ctx: RequestContext, current: StoredObject) -> None:
        for hook in self.hooks:
            await hook.admit_delete(ctx, current)

    async def validate_update(
        self, ctx: RequestContext, obj: dict[str, Any], old: Mapping[str, Any], dry_run: bool
    ) -> None:
        for i, hook in enumerate(self.hooks):
            try:
                await hook.validate_update(ctx, obj, old, dry_run)
            except BaseException:
                self._refused(i, ctx, obj, update=True)
                raise

    async def validate_delete(
        self, ctx: RequestContext, current: StoredObject, dry_run: bool
    ) -> None:
        for hook in self.hooks:
            await hook.validate_delete(ctx, current, dry_run)

    def _refused(
        self, index: int, ctx: RequestContext, obj: dict[str, Any], *, update: bool
    ) -> None:
        """Hook `index` refused: what the hooks before it let through (a quota charge) is over."""
        for hook in self.hooks[:index]:
            hook.write_ended(ctx, obj, update=update, stored=False)

    def write_ended(
        self, ctx: RequestContext, obj: dict[str, Any], *, update: bool, stored: bool
    ) -> None:
        for hook in self.hooks:
            hook.write_ended(ctx, obj, update=update, stored=stored)


def chain(hooks: Sequence[Admission]) -> Admission | None:
    if not hooks:
        return None
    return hooks[0] if len(hooks) == 1 else Chain(hooks)

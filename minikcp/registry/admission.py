"""Admission: checks and mutations that higher layers add to a kind's writes.

Like kube-apiserver's admission plugins, they run inside the registry's write path (so HTTP
requests and in-process controllers get the same answers): `admit_create` after defaulting and
before validation, `admit_update` after validation of an update, `admit_delete` before a
deletion starts. Each may raise a StatusError.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from minikcp.registry.objects import RequestContext, StoredObject


class Admission:
    """Admits everything; subclasses override what they check."""

    async def admit_create(self, ctx: RequestContext, obj: dict[str, Any]) -> None:
        """May change `obj` (private to the request) or refuse it."""

    async def admit_update(
        self, ctx: RequestContext, obj: dict[str, Any], old: Mapping[str, Any]
    ) -> None:
        """May refuse to replace `old` by `obj` (may not change `obj`)."""

    async def admit_delete(self, ctx: RequestContext, current: StoredObject) -> None:
        """May refuse to delete `current`."""

"""The admission chain over a real registry: a validating hook after quota that refuses a create
ends the quota's charge (recounted), so the refused object is not counted against the next."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from minikcp.apis import catalog
from minikcp.controllers import resource_quotas
from minikcp.machinery import errors
from minikcp.registry import admission, registry
from minikcp.registry.objects import RequestContext, WriteOptions
from tests import in_process

CTX = RequestContext("c1")


class RefuseNamed(admission.Admission):
    """Refuses creates and updates of objects named `refused*`, as a last validating hook."""

    async def validate_create(
        self, ctx: RequestContext, obj: dict[str, Any], dry_run: bool
    ) -> None:
        if obj["metadata"]["name"].startswith("refused"):
            raise errors.forbidden("configmaps", obj["metadata"]["name"], "not here")


@pytest.fixture
async def reg(tmp_path: Path) -> AsyncIterator[registry.Registry]:
    async with in_process.open_registry(tmp_path, registry.Registry.run) as opened:
        yield opened


async def test_a_later_refusal_ends_the_quota_charge(reg: registry.Registry) -> None:
    quota_rt = reg.catalog.by_resource("", "v1", "resourcequotas")
    cm_rt = reg.catalog.by_resource("", "v1", "configmaps")
    assert quota_rt is not None and cm_rt is not None

    def refuse_configmaps(rt: catalog.ResourceType) -> admission.Admission | None:
        return RefuseNamed() if rt.plural == "configmaps" else None

    reg.admit_all(refuse_configmaps)  # after quota, as proxy writes are
    controller = resource_quotas.ResourceQuotaController(reg)
    overcharged: list[tuple[str, str]] = []
    reg.quota.on_overcharge = overcharged.append
    body = {"metadata": {"name": "q"}, "spec": {"hard": {"configmaps": "1"}}}
    await reg.store(quota_rt).create(CTX, "default", body, WriteOptions())
    await controller.reconcile("c1", "default")

    configmaps = reg.store(cm_rt)
    with pytest.raises(errors.StatusError) as refused:
        await configmaps.create(CTX, "default", {"metadata": {"name": "refused"}}, WriteOptions())
    assert refused.value.message == 'configmaps "refused" is forbidden: not here'
    assert overcharged == [("c1", "default")]
    await reg.quota.settled("c1", "default", timeout=1.0)
    await controller.reconcile("c1", "default")
    await configmaps.create(CTX, "default", {"metadata": {"name": "ok"}}, WriteOptions())

"""Fields the server sets after the field manager ran (upstream's job strategy and service REST)
are nobody's: the writer of a create owns what it sent and the scheme defaults, later updates and
applies keep these fields without taking them (the real registry over SQLite, in-process)."""

from __future__ import annotations

import copy
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from minikcp.machinery import errors
from minikcp.registry import patching, registry
from minikcp.registry import store as generic_store
from minikcp.registry.objects import RequestContext, WriteOptions
from minikcp.registry.strategies import service_allocation
from tests import in_process

CTX = RequestContext("owned")
CREATOR = WriteOptions(field_manager="creator")
UPDATER = WriteOptions(field_manager="updater")
APPLIER = WriteOptions(field_manager="applier")
NOBODYS_SERVICE_FIELDS = ("f:clusterIP", "f:clusterIPs", "f:ipFamilies", "f:ipFamilyPolicy")


@pytest.mark.parametrize(
    ("spec", "old_spec", "expected"),
    [
        ({}, None, {"ipFamilyPolicy": "SingleStack", "ipFamilies": ["IPv4"]}),
        ({"type": "ExternalName"}, None, {"type": "ExternalName"}),
        (
            {"clusterIP": "None", "clusterIPs": ["None"], "selector": {"app": "web"}},
            None,
            {"ipFamilyPolicy": "SingleStack", "ipFamilies": ["IPv4"]},
        ),
        # Headless without selector: RequireDualStack, both families even on a single stack.
        (
            {"clusterIP": "None", "clusterIPs": ["None"]},
            None,
            {"ipFamilyPolicy": "RequireDualStack", "ipFamilies": ["IPv4", "IPv6"]},
        ),
        (
            {"clusterIP": "None", "clusterIPs": ["None"], "ipFamilyPolicy": "SingleStack"},
            None,
            {"ipFamilyPolicy": "SingleStack", "ipFamilies": ["IPv4"]},
        ),
        (
            {"ipFamilies": ["IPv4"], "ipFamilyPolicy": "PreferDualStack"},
            None,
            {"ipFamilyPolicy": "PreferDualStack", "ipFamilies": ["IPv4"]},
        ),
        # An update that names no policy keeps the old one.
        (
            {"clusterIP": "10.96.0.10", "clusterIPs": ["10.96.0.10"]},
            {"ipFamilyPolicy": "PreferDualStack"},
            {"ipFamilyPolicy": "PreferDualStack", "ipFamilies": ["IPv4"]},
        ),
    ],
)
def test_init_ip_families(
    spec: dict[str, Any], old_spec: dict[str, Any] | None, expected: dict[str, Any]
) -> None:
    initialised = copy.deepcopy(spec)
    assert service_allocation.init_ip_families(initialised, old_spec) == []
    kept = {k: v for k, v in spec.items() if k not in expected}
    assert initialised == {**kept, **expected}


@pytest.fixture
async def reg(tmp_path: Path) -> AsyncIterator[registry.Registry]:
    async with in_process.open_registry(tmp_path, registry.Registry.run) as opened:
        yield opened


def _store(reg: registry.Registry, group: str, plural: str) -> generic_store.ResourceStore:
    rt = reg.catalog.by_resource(group, "v1", plural)
    assert rt is not None
    return reg.store(rt)


def _fields(obj: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {e["manager"]: e["fieldsV1"] for e in obj["metadata"].get("managedFields", [])}


def _service() -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "web"},
        "spec": {"ports": [{"port": 80}], "selector": {"app": "web"}},
    }


async def test_service_allocations_are_nobodys_through_updates(reg: registry.Registry) -> None:
    services = _store(reg, "", "services")
    created = (await services.create(CTX, "default", _service(), CREATOR)).view()
    spec = created["spec"]
    assert spec["ipFamilies"] == ["IPv4"] and spec["ipFamilyPolicy"] == "SingleStack"
    assert spec["clusterIPs"] == [spec["clusterIP"]]
    owned = _fields(created)["creator"]["f:spec"]
    assert {"f:type", "f:sessionAffinity", "f:internalTrafficPolicy"} <= set(owned)
    assert not set(NOBODYS_SERVICE_FIELDS) & set(owned)

    # A PUT of what the client first sent (no IPs, no families) keeps them and takes none.
    sent = _service()
    sent["metadata"].update(labels={"tier": "front"})
    updated = (await services.update(CTX, "default", "web", sent, UPDATER)).view()
    assert {k: updated["spec"][k] for k in ("clusterIP", "clusterIPs", "ipFamilies")} == {
        k: spec[k] for k in ("clusterIP", "clusterIPs", "ipFamilies")
    }
    assert updated["spec"]["ipFamilyPolicy"] == "SingleStack"
    managers = _fields(updated)
    assert managers["updater"] == {"f:metadata": {"f:labels": {".": {}, "f:tier": {}}}}
    assert not set(NOBODYS_SERVICE_FIELDS) & set(managers["creator"]["f:spec"])

    # Neither does a server-side apply of the same configuration.
    applied = _service()
    applied["spec"]["ports"][0]["name"] = "http"
    body = orjson.dumps(applied)
    result, created_now = await patching.patch(
        services, CTX, "default", "web", patch_type=patching.APPLY_PATCH, body=body, opts=APPLIER
    )
    assert not created_now
    after = result.view()
    assert after["spec"]["clusterIP"] == spec["clusterIP"]
    assert after["spec"]["ipFamilies"] == ["IPv4"]
    for fields in _fields(after).values():
        assert not set(NOBODYS_SERVICE_FIELDS) & set(fields.get("f:spec", {}))


async def test_node_ports_allocated_by_an_update_are_nobodys(reg: registry.Registry) -> None:
    services = _store(reg, "", "services")
    await services.create(CTX, "default", _service(), CREATOR)
    result, _ = await patching.patch(
        services,
        CTX,
        "default",
        "web",
        patch_type=patching.MERGE_PATCH,
        body=b'{"spec":{"type":"NodePort"}}',
        opts=UPDATER,
    )
    patched = result.view()
    assert patched["spec"]["ports"][0]["nodePort"]
    # The updater owns what it sent and its defaults, as upstream's field manager sees them.
    assert _fields(patched)["updater"] == {"f:spec": {"f:externalTrafficPolicy": {}, "f:type": {}}}


async def test_applied_service_owns_its_configuration_only(reg: registry.Registry) -> None:
    services = _store(reg, "", "services")
    body = orjson.dumps(_service())
    result, created = await patching.patch(
        services, CTX, "default", "web", patch_type=patching.APPLY_PATCH, body=body, opts=APPLIER
    )
    assert created
    shown = result.view()
    assert shown["spec"]["ipFamilies"] == ["IPv4"] and shown["spec"]["clusterIP"]
    assert set(_fields(shown)["applier"]["f:spec"]) == {"f:ports", "f:selector"}


def _job(**meta: Any) -> dict[str, Any]:
    template = {
        "metadata": {"labels": {"app": "pi"}},
        "spec": {"containers": [{"name": "c", "image": "busybox"}], "restartPolicy": "Never"},
    }
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "pi", **meta},
        "spec": {"template": template},
    }


GENERATED = ("controller-uid", "batch.kubernetes.io/controller-uid", "job-name")


async def test_job_generated_selector_and_labels_are_nobodys(reg: registry.Registry) -> None:
    jobs = _store(reg, "batch", "jobs")
    created = (await jobs.create(CTX, "default", _job(), CREATOR)).view()
    uid = created["metadata"]["uid"]
    spec = created["spec"]
    assert spec["selector"] == {"matchLabels": {"batch.kubernetes.io/controller-uid": uid}}
    template_labels = spec["template"]["metadata"]["labels"]
    assert template_labels["controller-uid"] == uid and template_labels["job-name"] == "pi"
    # The Job shares its template's labels (it has none of its own), the generated ones too.
    assert created["metadata"]["labels"] == template_labels
    owned = _fields(created)["creator"]
    assert owned["f:metadata"] == {"f:labels": {".": {}, "f:app": {}}}
    assert "f:selector" not in owned["f:spec"]
    assert owned["f:spec"]["f:template"]["f:metadata"] == {"f:labels": {".": {}, "f:app": {}}}
    assert {"f:manualSelector", "f:completionMode", "f:suspend"} <= set(owned["f:spec"])

    # An update that sends them back unchanged takes none of them.
    sent = copy.deepcopy(created)
    sent["metadata"].pop("managedFields")
    sent["spec"]["backoffLimit"] = 3
    updated = (await jobs.update(CTX, "default", "pi", sent, UPDATER)).view()
    assert updated["spec"]["selector"] == spec["selector"]
    assert _fields(updated)["updater"] == {"f:spec": {"f:backoffLimit": {}}}


async def test_job_own_labels_stay_its_own(reg: registry.Registry) -> None:
    jobs = _store(reg, "batch", "jobs")
    created = (await jobs.create(CTX, "default", _job(labels={"app": "pi"}), CREATOR)).view()
    assert created["metadata"]["labels"] == {"app": "pi"}
    assert set(GENERATED) <= set(created["spec"]["template"]["metadata"]["labels"])


async def test_job_put_without_selector_is_invalid_as_upstream(reg: registry.Registry) -> None:
    """Upstream generates the selector on create only: a replace that drops it is refused."""
    jobs = _store(reg, "batch", "jobs")
    created = await jobs.create(CTX, "default", _job(), CREATOR)
    with pytest.raises(errors.StatusError) as refused:
        await jobs.update(CTX, "default", "pi", _job(), UPDATER)
    assert refused.value.code == 422 and refused.value.reason == "Invalid"
    fields = [(c.field, c.message) for c in refused.value.causes]
    assert ("spec.selector", "Required value") in fields
    stored = await jobs.get(CTX, "default", "pi")
    assert stored.revision == created.revision


async def test_manual_selector_job_gets_nothing_generated(reg: registry.Registry) -> None:
    jobs = _store(reg, "batch", "jobs")
    job = _job()
    job["spec"].update(manualSelector=True, selector={"matchLabels": {"app": "pi"}})
    created = (await jobs.create(CTX, "default", job, CREATOR)).view()
    assert created["spec"]["selector"] == {"matchLabels": {"app": "pi"}}
    assert created["spec"]["template"]["metadata"]["labels"] == {"app": "pi"}
    assert created["metadata"]["labels"] == {"app": "pi"}
    assert "f:selector" in _fields(created)["creator"]["f:spec"]

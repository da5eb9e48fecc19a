"""core/v1 and events.k8s.io/v1 Events are one store seen through two APIs, as upstream."""

from __future__ import annotations

from typing import Any

import pytest

from minikcp.apis import event_versions
from minikcp.machinery import errors, list_options
from minikcp.registry import objects, registry, store

CORE_EVENT = {
    "apiVersion": "v1",
    "kind": "Event",
    "metadata": {"name": "web.1", "namespace": "default"},
    "involvedObject": {"kind": "Pod", "namespace": "default", "name": "web", "uid": "u1"},
    "reason": "Started",
    "message": "Started container",
    "source": {"component": "kubelet", "host": "node-1"},
    "firstTimestamp": "2026-01-01T00:00:00Z",
    "lastTimestamp": "2026-01-01T00:01:00Z",
    "count": 2,
    "type": "Normal",
}
EVENTS_EVENT = {
    "apiVersion": "events.k8s.io/v1",
    "kind": "Event",
    "metadata": {"name": "web.2", "namespace": "default"},
    "eventTime": "2026-01-01T00:00:00.000000Z",
    "series": {"count": 3, "lastObservedTime": "2026-01-01T00:02:00.000000Z"},
    "reportingController": "example.com/operator",
    "reportingInstance": "operator-1",
    "action": "Scale",
    "reason": "Scaled",
    "regarding": {"kind": "Deployment", "namespace": "default", "name": "web"},
    "related": {"kind": "ReplicaSet", "namespace": "default", "name": "web-1"},
    "note": "scaled up",
    "type": "Warning",
}


@pytest.mark.parametrize(
    ("event", "want"),
    [
        (
            CORE_EVENT,
            {
                "apiVersion": "events.k8s.io/v1",
                "kind": "Event",
                "metadata": CORE_EVENT["metadata"],
                "eventTime": None,
                "reason": "Started",
                "regarding": CORE_EVENT["involvedObject"],
                "note": "Started container",
                "type": "Normal",
                "deprecatedSource": {"component": "kubelet", "host": "node-1"},
                "deprecatedFirstTimestamp": "2026-01-01T00:00:00Z",
                "deprecatedLastTimestamp": "2026-01-01T00:01:00Z",
                "deprecatedCount": 2,
            },
        ),
        (
            {"kind": "Event", "metadata": {"name": "bare"}},
            {
                "apiVersion": "events.k8s.io/v1",
                "kind": "Event",
                "metadata": {"name": "bare"},
                "eventTime": None,
                "regarding": {},
                "deprecatedSource": {},
                "deprecatedFirstTimestamp": None,
                "deprecatedLastTimestamp": None,
            },
        ),
    ],
)
def test_core_events_as_events_k8s_io(event: dict[str, Any], want: dict[str, Any]) -> None:
    got = event_versions.to_events(event)
    assert got == want
    assert list(got) == list(want)  # Go's field order


def test_events_k8s_io_events_as_stored() -> None:
    got = event_versions.to_core(EVENTS_EVENT)
    assert got == {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": EVENTS_EVENT["metadata"],
        "involvedObject": EVENTS_EVENT["regarding"],
        "reason": "Scaled",
        "message": "scaled up",
        "source": {},
        "firstTimestamp": None,
        "lastTimestamp": None,
        "type": "Warning",
        "eventTime": "2026-01-01T00:00:00.000000Z",
        "series": EVENTS_EVENT["series"],
        "action": "Scale",
        "related": EVENTS_EVENT["related"],
        "reportingComponent": "example.com/operator",
        "reportingInstance": "operator-1",
    }
    # And back: nothing is lost on the way.
    assert event_versions.to_events(got) == {
        **EVENTS_EVENT,
        "deprecatedSource": {},
        "deprecatedFirstTimestamp": None,
        "deprecatedLastTimestamp": None,
    }


def _stores(reg: registry.Registry) -> tuple[store.ResourceStore, store.ResourceStore]:
    core = reg.catalog.by_resource("", "v1", "events")
    new = reg.catalog.by_resource("events.k8s.io", "v1", "events")
    assert core is not None and new is not None
    return reg.store(core), reg.store(new)


def _selector(text: str) -> list_options.ListOptions:
    return list_options.parse_list_options({"fieldSelector": text})


async def test_one_store_two_apis(reg: registry.Registry) -> None:
    core, new = _stores(reg)
    ctx = objects.RequestContext("root")
    opts = objects.WriteOptions(field_manager="test")
    await core.create(ctx, "default", dict(CORE_EVENT, metadata={"name": "web.1"}), opts)
    created = (await new.create(ctx, "default", dict(EVENTS_EVENT), opts)).view()
    assert created["apiVersion"] == "events.k8s.io/v1"
    assert created["note"] == "scaled up"

    seen = (await new.get(ctx, "default", "web.1")).view()
    assert seen["regarding"]["name"] == "web" and seen["note"] == "Started container"
    assert seen["deprecatedCount"] == 2
    assert seen["deprecatedSource"] == {"component": "kubelet", "host": "node-1"}
    as_core = (await core.get(ctx, "default", "web.2")).view()
    assert as_core["apiVersion"] == "v1"
    assert as_core["involvedObject"]["kind"] == "Deployment"
    assert as_core["message"] == "scaled up"
    assert as_core["reportingComponent"] == "example.com/operator"
    assert as_core["metadata"]["uid"] == created["metadata"]["uid"]
    assert as_core["metadata"]["resourceVersion"] == created["metadata"]["resourceVersion"]

    names = [o.metadata["name"] for o in (await new.list(ctx, "default", _selector(""))).items]
    assert names == ["web.1", "web.2"]
    for selector, want in [
        ("regarding.name=web,regarding.kind=Deployment", ["web.2"]),
        ("reportingController=example.com/operator", ["web.2"]),
        ("source=kubelet", ["web.1"]),
        ("source=example.com/operator", ["web.2"]),
    ]:
        found = await new.list(ctx, "default", _selector(selector))
        assert [o.metadata["name"] for o in found.items] == want, selector
    for selector, want in [
        ("involvedObject.kind=Deployment", ["web.2"]),
        ("reportingComponent=example.com/operator", ["web.2"]),
        ("source=example.com/operator", ["web.2"]),
    ]:
        found = await core.list(ctx, "default", _selector(selector))
        assert [o.metadata["name"] for o in found.items] == want, selector
    with pytest.raises(errors.StatusError) as refused:
        core.check_field_selector(_selector("regarding.name=web"))
    assert refused.value.code == 400
    with pytest.raises(errors.StatusError) as refused:
        new.check_field_selector(_selector("involvedObject.name=web"))
    assert refused.value.message == "field label not supported: involvedObject.name"

    # Updates through either API change the one object.
    def noted(current: dict[str, Any] | None) -> dict[str, Any]:
        assert current is not None
        current["note"] = "scaled again"
        return current

    await new.guaranteed_update(ctx, "default", "web.2", noted, opts)
    assert (await core.get(ctx, "default", "web.2")).view()["message"] == "scaled again"
    deleted, _ = await new.delete(ctx, "default", "web.1", {}, opts)
    assert deleted.view()["note"] == "Started container"
    assert await core.find(ctx, "default", "web.1") is None


@pytest.mark.parametrize(
    ("sent", "want"),
    [
        (
            {"eventTime": "2026-01-01T01:00:00+01:00", "firstTimestamp": "2026-01-01T00:00:00.5Z"},
            {"eventTime": "2026-01-01T00:00:00.000000Z", "firstTimestamp": "2026-01-01T00:00:00Z"},
        ),
        (
            {"series": {"count": 2, "lastObservedTime": "2026-01-01T00:00:00.123+00:00"}},
            {"series": {"count": 2, "lastObservedTime": "2026-01-01T00:00:00.123000Z"}},
        ),
        ({"deprecatedLastTimestamp": "yesterday"}, {"deprecatedLastTimestamp": "yesterday"}),
        ({"lastTimestamp": None}, {"lastTimestamp": None}),
    ],
)
def test_timestamps_are_written_as_go_writes_them(sent: dict[str, Any], want: Any) -> None:
    event_versions.normalise_times(sent)
    assert sent == want
